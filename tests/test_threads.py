"""Runtime knobs: glibc malloc tuning is idempotent, can be switched off, and is harmless."""

import numpy as np

from scalegnn import threads


def test_keep_freed_memory_idempotent(monkeypatch):
    monkeypatch.setattr(threads, "_malloc_tuned", None)
    first = threads.keep_freed_memory()
    assert threads.keep_freed_memory() is first
    # large blocks still allocate, free and compute correctly afterwards
    a = np.ones(10 << 20, dtype=np.uint8)
    assert int(a.sum()) == 10 << 20


def test_keep_freed_memory_opt_out(monkeypatch):
    monkeypatch.setattr(threads, "_malloc_tuned", None)
    monkeypatch.setenv("SCALEGNN_KEEP_FREED_MEMORY", "0")
    assert threads.keep_freed_memory() is False


def test_release_freed_memory_wins_over_keep(monkeypatch):
    """A rank that asked for its memory back is not switched to keeping it later."""
    monkeypatch.setattr(threads, "_malloc_tuned", None)
    threads.release_freed_memory()
    assert threads.keep_freed_memory() is False
    a = np.ones(4 << 20, dtype=np.uint8)
    assert int(a.sum()) == 4 << 20
    monkeypatch.setattr(threads, "_malloc_tuned", None)
    threads.keep_freed_memory()  # restore this test process's setting
