"""``scalegnn bench sample``: one JSON line per (sampler, threads) with consistent numbers."""

import json

import numpy as np
import pytest

from bench_helpers import assert_cost
from scalegnn.cli import main
from scalegnn.data import load_dataset
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
    assert "speedup_vs_first" in lines[1]


@pytest.mark.parametrize("argv,msg", [(["--threads", "0"], "--threads"),
                                      (["--samplers", "tree"], "--samplers"),
                                      (["--budget", "rw=3"], "--budget")])
def test_bench_sample_bad_arguments(argv, msg, capsys):
    assert main(["bench", "sample", "--graph", "kronecker:6:2", *argv]) == 2
    assert msg in capsys.readouterr().err
