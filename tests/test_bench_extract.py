"""``scalegnn bench extract``: distinct targets, one JSON line per extractor with its cost."""

import numpy as np

from bench_helpers import assert_cost, lines
from scalegnn.bench.extract import draw_targets
from scalegnn.cli import main
from scalegnn.graph import Graph
from scalegnn.shadow.ppr import PPRExtractor

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
    work, roof = recs[0]["precompute_work"], recs[0]["precompute_roofline"]
    assert work["pushes"] >= 1 and work["touched"] >= 1                # the target, at least
    assert work["neighbour_updates"] >= work["pushes"] - 1 and work["swept_ids"] >= 0
    assert 0 < roof["min_bound_cpu_ms"] <= roof["bound_cpu_ms"] and roof["cpu_over_bound"] > 0


def test_ppr_push_work_counts_by_hand():
    """A path 0-1-2 from target 0, alpha 0.5, eps 0.2: pushes 0 (r 1 -> r1 = 0.5), then 1
    (0.5 > 0.2*2: r0, r2 = 0.125 each), nothing else is above eps*deg: 2 pushes, 1 + 2
    neighbour updates, 3 nodes touched."""
    g = Graph.from_edges(np.array([0, 1]), np.array([1, 2]), 3)
    ex = PPRExtractor(g, alpha=0.5, eps=0.2, k=3)
    ex.precompute(np.array([0]))
    assert ex.num_computed == 1
    assert ex.push_work.tolist()[:2] == [2, 3] and ex.push_work[3] == 3


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
