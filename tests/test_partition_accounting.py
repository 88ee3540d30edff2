"""Exact communication accounting (scalegnn.dist.accounting) against slow set-based references,
and against the plan the writer produces (its boundary IS the volume)."""

from __future__ import annotations

import numpy as np
import pytest

from scalegnn.dist.accounting import comm_report, epoch_bytes, volume_matrix
from scalegnn.dist.partition import assign_random, partition_dataset
from scalegnn.graph import Graph
from test_dist_correctness import tiny_dataset


def slow_volume(graph, a, k):
    """V[r, q] from the definition: column j owned by r is needed by q != r if a row of q uses it."""
    need = [set() for _ in range(k)]
    for i in range(graph.num_nodes):
        for j in graph.indices[graph.indptr[i]:graph.indptr[i + 1]]:
            if a[j] != a[i]:
                need[a[i]].add(int(j))
    v = np.zeros((k, k), dtype=np.int64)
    for q in range(k):
        for j in need[q]:
            v[a[j], q] += 1
    return v


def slow_km1(graph, a):
    """Σ_j (λ(n_j) − 1), net j = {i : A_ij != 0} ∪ {j}: the column-net hypergraph cut."""
    cols = {j: {a[j]} for j in range(graph.num_nodes)}
    for i in range(graph.num_nodes):
        for j in graph.indices[graph.indptr[i]:graph.indptr[i + 1]]:
            cols[int(j)].add(a[i])
    return sum(len(s) - 1 for s in cols.values())


def directed_graph(n=80, seed=0):
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, n, 4 * n), rng.integers(0, n, 4 * n)
    return Graph.from_edges(src, dst, n, symmetrize=False).deduplicate()


@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize("k", [1, 3, 5])
def test_volume_matrix_matches_definition(symmetric, k):
    g = tiny_dataset(n=200, seed=k).graph if symmetric else directed_graph(seed=k)
    a = assign_random(g.num_nodes, k, seed=k)
    v = volume_matrix(g, a, k)
    np.testing.assert_array_equal(v, slow_volume(g, a, k))
    assert v.sum() == slow_km1(g, a)                       # volume = KM1 of the column nets
    assert np.all(np.diag(v) == 0)


def test_report_equals_plan(tmp_path):
    ds = tiny_dataset(n=200, seed=2)
    plan = partition_dataset(ds, 4, tmp_path / "p", method="gp", seed=1)
    rep = comm_report(ds.graph, plan.assignment(), 4)
    st = plan.meta["stats"]
    assert rep["recv"] == [s["comm_volume"] for s in st]          # boundary rows per rank
    assert rep["sent"] == [s["send_volume"] for s in st]
    assert rep["messages"] == [s["send_messages"] for s in st]
    assert rep["volume_total"] == plan.meta["totals"]["comm_volume"]
    assert rep["volume_max"] == max(rep["sent"]) and rep["volume_avg"] == np.mean(rep["sent"])
    w = ds.graph.degrees() + 1                                    # no self-loops in the graph
    loads = np.bincount(plan.assignment(), weights=w, minlength=4)
    assert rep["compute_imbalance"] == pytest.approx(loads.max() / loads.mean())


def test_epoch_bytes():
    layers = [(6, False), (8, True)]
    np.testing.assert_array_equal(epoch_bytes([3, 0], [1, 2], layers, 4),
                                  [(3 * 14 + 1 * 8) * 4, 2 * 8 * 4])
