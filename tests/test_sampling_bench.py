"""``scalegnn bench sample``: one JSON line per (sampler, threads) with consistent numbers."""

import importlib.util
import json
import time
from pathlib import Path

import numba
import numpy as np
import pytest

from bench_helpers import assert_cost
from scalegnn.bench import roofline
from scalegnn.cli import main
from scalegnn.data import load_dataset
from scalegnn.ops._simd import VECTOR_FILL
from scalegnn.ops.membw import read_probe
from scalegnn.sampling import Normalization, make_sampler


def test_bench_sample_json_lines(capsys):
    rc = main(["bench", "sample", "--graph", "kronecker:9:4", "--threads", "1,2",
               "--samplers", "rw,mrw", "--count", "3", "--repeats", "1", "--coverage", "2",
               "--budget", "rw.num_root=40", "--budget", "mrw.size_subgraph=60",
               "--budget", "mrw.size_frontier=20"])
    assert rc == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.strip()]
    assert [(r["sampler"], r["threads"]) for r in lines] == [("rw", 1), ("rw", 2), ("mrw", 1),
                                                              ("mrw", 2)]
    g = load_dataset("kronecker:9:4").graph
    for r in lines:
        assert r["subgraphs_per_s"] > 0 and r["presample_seconds"] >= 0
        assert_cost(r, "subgraph")
        assert r["subgraphs_timed"] == 3 and r["presample_cpu_s"] >= 0
        assert r["load_avg_1min"] == r["load_avg"][0]
        assert r["graph_nodes"] == g.num_nodes and r["graph_edges"] == g.num_edges
        s = make_sampler(r["sampler"], g, np.arange(g.num_nodes), r["budget"])
        subs = s.sample(3, seed=1)  # the timed call: seed + 1, stream indices 0..2
        assert r["nodes_per_subgraph"] == pytest.approx(np.mean([x.num_nodes for x in subs]),
                                                        abs=0.05)
        assert r["edges_per_subgraph"] == pytest.approx(np.mean([x.num_edges for x in subs]),
                                                        abs=0.05)
        norm, _ = Normalization.estimate(s, np.arange(g.num_nodes), g.num_nodes, 2, keep=False)
        assert r["presample_subgraphs"] == norm.num_subgraphs
        roof = r["roofline"]   # the traffic of the timed subgraphs, at the probe's rates
        scanned = np.mean([roofline.scanned_entries(g.indptr, x.nodes) for x in subs])
        t = roofline.sampler_traffic(r["sampler"], r["budget"], r["nodes_per_subgraph"],
                                     scanned, r["edges_per_subgraph"], g.num_nodes)
        assert roof["stream_MB"] == pytest.approx(t["stream_bytes"] / 1e6, abs=1e-3)
        assert roof["random_lines"] == int(t["random_lines"])
        assert 0 < roof["min_bound_cpu_ms"] <= roof["bound_cpu_ms"]
        assert roof["cpu_over_bound"] == pytest.approx(
            r["cpu_ms_per_subgraph"] / roof["bound_cpu_ms"], rel=0.02)
        assert roof["probe"]["probe_threads"] == min(r["threads"], numba.config.NUMBA_NUM_THREADS)
        # the phases split the bound (draws: their random lines) and the best call's CPU
        ns = roof["probe"]["random_ns_per_line"]
        assert roof["draw_bound_cpu_ms"] == pytest.approx(
            t["draw_random_lines"] * ns * 1e-6, rel=1e-3, abs=1e-6)
        assert roof["draw_bound_cpu_ms"] + roof["induce_bound_cpu_ms"] == pytest.approx(
            roof["bound_cpu_ms"], abs=1e-5)
        assert roof["draw_cpu_ms"] > 0 and roof["induce_cpu_ms"] > 0
        assert roof["draw_cpu_ms"] + roof["induce_cpu_ms"] <= r["cpu_ms_per_subgraph"] * 1.001
    assert "speedup_vs_first" in lines[1]


def test_bench_sample_coverage_zero_skips_presampling(capsys):
    assert main(["bench", "sample", "--graph", "kronecker:8:4", "--threads", "1",
                 "--samplers", "node", "--count", "2", "--repeats", "1", "--coverage", "0",
                 "--budget", "node.size_subgraph=30"]) == 0
    r = json.loads(capsys.readouterr().out.splitlines()[0])
    assert "presample_seconds" not in r and r["roofline"]["bound_cpu_ms"] > 0


def test_sampler_traffic_counts_by_hand():
    """rw, 10 roots x 2 steps; 50 nodes, 400 scanned entries, 120 kept edges."""
    t = roofline.sampler_traffic("rw", {"num_root": 10, "depth": 2}, 50, 400, 120, 1024)
    assert t["random_lines"] == 10 + 2 * 10 * 2 + 2 * 50        # roots, steps, 2 per row
    assert t["stream_bytes"] == 4 * 400 + 4 * 400 + 16 * 120 + 16 * 50 + 4 * 120
    assert t["min_random_lines"] == 10 + 40 + 2 * 50
    assert t["min_stream_bytes"] == 4 * 400 + 4 * 120 + 16 * 120 + 16 * 50
    assert t["state_bytes"] == 1024 // 8 + 4 * 1024
    assert roofline.sample_lines("node", {"size_subgraph": 7}) == 21
    assert roofline.sample_lines("edge", {"size_subg_edge": 5}) == 20
    assert roofline.sample_lines("mrw", {"size_subgraph": 9, "size_frontier": 3}) == 6 + 24
    b = roofline.bound(t, {"stream_GBps_per_thread": 1.0, "random_ns_per_line": 10.0}, 1e-3,
                       {"draw": 2e-4, "induce": 7e-4})
    assert b["bound_cpu_ms"] == pytest.approx(1e3 * (t["stream_bytes"] / 1e9
                                                     + t["random_lines"] * 1e-8), rel=1e-3)
    assert b["draw_bound_cpu_ms"] == pytest.approx(1e3 * 50 * 1e-8)   # 10 roots + 40 steps
    assert b["draw_over_bound"] == pytest.approx(2e-4 / 5e-7, rel=1e-3)
    assert b["induce_over_bound"] == pytest.approx(7e-4 / (b["bound_cpu_ms"] * 1e-3 - 5e-7),
                                                   rel=1e-3)


def test_sampler_phase_cpu_covers_the_call():
    """phase_cpu_s: the last call's draws and inductions, reset per call, within its CPU."""
    g = load_dataset("kronecker:10:4").graph
    s = make_sampler("rw", g, np.arange(g.num_nodes), {"num_root": 200, "depth": 2})
    assert s.phase_cpu_s == {"draw": 0.0, "induce": 0.0}
    for count in (20, 3):
        c0 = time.process_time()
        s.sample(count, seed=count, num_threads=1)
        used = time.process_time() - c0
        assert s.phase_cpu_s["draw"] > 0 and s.phase_cpu_s["induce"] > 0
        assert sum(s.phase_cpu_s.values()) <= used + 1e-6


def test_read_probe_rates_are_positive():
    p = read_probe(1 << 20, 1, repeat=1, accesses=1 << 14)
    assert p["probe_MiB"] == 1.0 and p["probe_threads"] == 1
    assert p["stream_GBps_per_thread"] > 0 and p["random_ns_per_line"] > 0


@pytest.mark.parametrize("argv,msg", [(["--threads", "0"], "--threads"),
                                      (["--samplers", "tree"], "--samplers"),
                                      (["--budget", "rw=3"], "--budget")])
def test_bench_sample_bad_arguments(argv, msg, capsys):
    assert main(["bench", "sample", "--graph", "kronecker:6:2", *argv]) == 2
    assert msg in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.skipif(not VECTOR_FILL, reason="the parts are the AVX-512 path's")
def test_induce_parts_variants_still_apply(capsys):
    """benchmarks/induce_parts.py edits the kernel's source text: a changed kernel must fail
    there (not time something else), and the parts add up to the full kernel's CPU."""
    spec = importlib.util.spec_from_file_location(
        "induce_parts", Path(__file__).resolve().parents[1] / "benchmarks" / "induce_parts.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main(["--graph", "kronecker:10:4", "--count", "2", "--rounds", "1",
                     "--calls", "1"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    sm = lines[-1]
    assert sm["summary"] and len(lines) == 2
    assert set(sm["part_cpu_ms"]) == {"values", "transpose", "local_ids", "edge_ids",
                                      "row_tails", "core"}
    assert sum(sm["part_cpu_ms"].values()) == pytest.approx(sm["full_cpu_ms"], abs=1e-3)
    g = load_dataset("kronecker:10:4").graph
    deg = np.diff(g.indptr)
    assert 0 < sm["edges"] <= sm["scanned"] and sm["blocks"] >= sm["scanned"] / 16
    assert sm["blocks"] <= sm["scanned"] / 16 + sm["nodes"]
    assert sm["scanned"] <= deg.sum()
