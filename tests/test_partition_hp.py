"""Column-net hypergraph partitioning (--method hp, Mt-KaHyPar): the hMETIS file is the
column-net model, the partition is seeded/deterministic, balanced to ε and its volume is far
below random rows; the streamed writer's text equals a plain reference."""

from __future__ import annotations

import numpy as np
import pytest

from scalegnn.dist.accounting import comm_report
from scalegnn.dist.hypergraph import (format_ints, iter_nets, vertex_weights, write_hmetis)
from scalegnn.dist.partition import assign, partition_dataset
from scalegnn.errors import ConfigError
from scalegnn.graph import Graph
from test_dist_correctness import tiny_dataset
from test_partition_accounting import directed_graph, slow_km1


def test_format_ints():
    rng = np.random.default_rng(0)
    v = np.concatenate([[0, 1, 9, 10, 99, 100, 10**12], rng.integers(0, 10**9, 200)])
    ends = rng.random(v.size) < 0.3
    ref = "".join(f"{x}{chr(10) if e else ' '}" for x, e in zip(v, ends)).encode()
    assert format_ints(v, ends) == ref
    assert format_ints(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=bool)) == b""


@pytest.mark.parametrize("symmetric", [True, False])
def test_hmetis_file_is_column_net_model(tmp_path, symmetric):
    g = tiny_dataset(n=200, seed=1).graph if symmetric else directed_graph(n=50, seed=2)
    if symmetric:                                        # a self-loop must not be counted twice
        src, dst = g.edge_index()
        g = Graph.from_edges(np.append(src, 5), np.append(dst, 5), g.num_nodes, symmetrize=False)
    w = vertex_weights(g)
    count = write_hmetis(tmp_path / "h.hgr", iter_nets(g, block=7), g.num_nodes, w)
    lines = (tmp_path / "h.hgr").read_text().splitlines()
    assert lines[0] == f"{count} {g.num_nodes} 10"
    nets = [sorted(int(x) - 1 for x in ln.split()) for ln in lines[1:1 + count]]
    ref = []
    for j in range(g.num_nodes):                         # net j = column j of A, plus j
        pins = {i for i in range(g.num_nodes)
                if j in g.indices[g.indptr[i]:g.indptr[i + 1]]} | {j}
        if len(pins) > 1:
            ref.append(sorted(pins))
    assert nets == ref
    rows = [set(g.indices[g.indptr[i]:g.indptr[i + 1]].tolist()) | {i} for i in range(g.num_nodes)]
    np.testing.assert_array_equal(w, [len(r) for r in rows])       # nnz(row of A + I)
    assert [int(x) for x in lines[1 + count:]] == w.tolist()


def test_hp_partition():
    pytest.importorskip("mtkahypar")
    ds = tiny_dataset(n=300, seed=3)
    g = ds.graph
    a = assign(g, 4, "hp", seed=5)
    assert a.dtype == np.int32 and a.shape == (g.num_nodes,)
    np.testing.assert_array_equal(a, assign(g, 4, "hp", seed=5))   # deterministic preset
    rep = comm_report(g, a, 4)
    assert rep["compute_imbalance"] <= 1.01 + 4 / vertex_weights(g).sum() * 4
    assert rep["volume_total"] == slow_km1(g, a)
    rp = comm_report(g, assign(g, 4, "rp", seed=5), 4)
    assert rep["volume_total"] < 0.5 * rp["volume_total"]
    gp = comm_report(g, assign(g, 4, "gp", seed=5), 4)
    assert rep["volume_total"] <= 1.15 * gp["volume_total"]
    np.testing.assert_array_equal(assign(g, 1, "hp"), np.zeros(g.num_nodes, dtype=np.int32))


def test_hp_plan_and_errors(tmp_path):
    pytest.importorskip("mtkahypar")
    ds = tiny_dataset(n=200, seed=4)
    plan = partition_dataset(ds, 3, tmp_path / "p", method="hp", seed=0)
    assert plan.meta["method"] == "hp/deterministic"
    assert plan.meta["totals"]["comm_volume"] == comm_report(ds.graph, plan.assignment())[
        "volume_total"]
    with pytest.raises(ConfigError, match="--preset"):
        assign(ds.graph, 2, "hp", preset="fastest")
    with pytest.raises(ConfigError, match="--imbalance"):
        assign(ds.graph, 2, "hp", imbalance=0.0)
    with pytest.raises(ConfigError, match="--method"):
        assign(ds.graph, 2, "kahip")
