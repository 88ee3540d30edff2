"""Benchmarks behind `scalegnn bench` (JSON lines on stdout)."""
