"""``scalegnn bench extract``: distinct targets, one JSON line per extractor with its cost."""

import numpy as np

from bench_helpers import assert_cost, lines
from scalegnn.bench.extract import draw_targets
from scalegnn.cli import main

ARGS = ["bench", "extract", "--data", "kronecker:8:4", "--batch", "16"]


def test_bench_extract_json_lines(capsys):
    assert main(ARGS + ["--targets", "40", "--repeats", "2", "--threads", "1,2",
                        "--param", "ppr.k=20", "--param", "khop.budget=5"]) == 0
    recs = lines(capsys)
    assert [r["extractor"] for r in recs] == ["ppr", "khop"]
    for r in recs:
        assert r["targets"] == r["targets_requested"] == 40
        assert_cost(r, "target")
        assert r["targets_timed"] == 40 * 2 * 2                  # repeats x thread counts
        for th in ("1", "2"):
            assert_cost(r["threads"][th], "target")
            assert r["threads"][th]["targets_timed"] == 80
            assert r["threads"][th]["load_avg_1min"] == r["threads"][th]["load_avg"][0]
    assert recs[0]["precompute_cpu_s"] >= 0


def test_bench_extract_targets_are_distinct_and_capped(capsys):
    t = draw_targets(256, 200, seed=3)
    assert t.size == 200 and np.unique(t).size == 200 and t.max() < 256
    assert np.array_equal(t, draw_targets(256, 200, seed=3))    # seeded
    assert np.array_equal(np.sort(draw_targets(256, 256, seed=0)), np.arange(256))
    assert main(ARGS + ["--targets", "1000", "--extractors", "khop", "--threads", "1",
                        "--repeats", "1"]) == 0
    out = capsys.readouterr()
    rec = [line for line in out.out.splitlines() if line.strip()]
    assert len(rec) == 1 and '"targets": 256' in rec[0] and '"targets_requested": 1000' in rec[0]
    assert out.err.startswith("scalegnn: warning: --targets 1000") and out.err.count("\n") == 1
