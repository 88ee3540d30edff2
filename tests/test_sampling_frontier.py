"""Dashboard frontier sampler vs the frontier definition and the simple O(m) reference."""

import math
from collections import Counter

import numpy as np
import pytest
from scipy import stats

from scalegnn.graph import Graph
from scalegnn.sampling import make_sampler
from scalegnn.sampling import reference as R
from scalegnn.sampling._frontier_kernels import frontier_trace


def skewed_graph(n=120, m=500, seed=0):
    """Random graph with a heavy-tailed degree distribution (preferential-ish endpoints)."""
    rng = np.random.default_rng(seed)
    w = 1.0 / np.arange(1, n + 1) ** 0.8
    w /= w.sum()
    return Graph.from_edges(rng.choice(n, m, p=w), rng.integers(0, n, m), n)


def torus(k):
    ids = np.arange(k * k).reshape(k, k)
    src = np.concatenate([ids.ravel(), ids.ravel()])
    dst = np.concatenate([np.roll(ids, 1, axis=0).ravel(), np.roll(ids, 1, axis=1).ravel()])
    return Graph.from_edges(src, dst, k * k)


def pit_values(g, entries, pops, m, max_deg, rng):
    """Probability integral transform of each pop under P(u) ∝ pins(u) over the current frontier
    (a multiset); uniform on [0, 1) iff the pops follow the frontier rule. Also checks that the
    popped node is in the frontier and the added node is one of its neighbours."""
    deg = g.degrees()
    pins = np.minimum(deg, max_deg) if max_deg else deg
    fs = Counter(entries[:m].tolist())
    out = []
    for t, u in enumerate(pops.tolist()):
        assert fs[u] > 0, "popped a node that is not in the frontier"
        keys = sorted(fs)
        w = np.array([fs[v] * pins[v] for v in keys], dtype=float)
        cum = np.concatenate([[0.0], np.cumsum(w)])
        j = keys.index(u)
        out.append((cum[j] + rng.random() * w[j]) / cum[-1])
        new = int(entries[m + t])
        assert new in g.indices[g.indptr[u]:g.indptr[u + 1]]
        fs[u] -= 1
        if fs[u] == 0:
            del fs[u]
        fs[new] += 1
    return np.array(out)


@pytest.mark.parametrize("max_deg", [0, 4])
def test_dashboard_pops_follow_degree_at_every_step(max_deg):
    g = skewed_graph()
    params = {"size_subgraph": 300, "size_frontier": 15}
    if max_deg:
        params["max_deg"] = max_deg
    s = make_sampler("mrw", g, np.arange(g.num_nodes), params)
    rng = np.random.default_rng(0)
    u = np.concatenate([pit_values(g, *s.trace(seed), 15, max_deg, rng) for seed in range(40)])
    assert u.size == 40 * 285
    assert stats.kstest(u, "uniform").pvalue > 1e-3


def test_dashboard_cleanup_path_keeps_the_distribution():
    """eta close to 1 forces a CLEANUP every few steps (torus: every node has 4 pins)."""
    g = torus(12)
    s = make_sampler("mrw", g, np.arange(g.num_nodes), {"size_subgraph": 400,
                                                         "size_frontier": 30})
    s.eta = 1.05
    s.db_size = int(math.ceil(s.eta * 30 * 4))
    rng = np.random.default_rng(1)
    u = np.concatenate([pit_values(g, *s.trace(seed), 30, 0, rng) for seed in range(30)])
    assert stats.kstest(u, "uniform").pvalue > 1e-3


def test_dashboard_pop_frequencies_match_simple_reference():
    g = skewed_graph(n=40, m=90, seed=3)
    nodes = np.arange(g.num_nodes)
    m, n, runs = 6, 30, 1500
    s = make_sampler("mrw", g, nodes, {"size_subgraph": n, "size_frontier": m})
    fast = np.zeros(g.num_nodes)
    for seed in range(runs):
        _, pops = s.trace(seed)
        fast += np.bincount(pops, minlength=g.num_nodes)
    rng = np.random.default_rng(0)
    slow = np.zeros(g.num_nodes)
    for _ in range(runs):
        _, pops = R.frontier_sample(g, nodes, m, n, rng)
        slow += np.bincount(pops, minlength=g.num_nodes)
    keep = (fast + slow) > 0
    table = np.vstack([fast[keep], slow[keep]])
    assert stats.chi2_contingency(table).pvalue > 1e-4


def test_subgraph_nodes_are_frontier_union_added():
    g = skewed_graph()
    s = make_sampler("mrw", g, np.arange(0, 120, 3), {"size_subgraph": 200, "size_frontier": 25})
    entries, pops = s.trace(7)
    (sub,) = s.sample(1, seed=7)
    np.testing.assert_array_equal(sub.nodes, np.unique(entries))
    assert len(set(entries[:25].tolist())) == 25  # initial frontier without replacement
    assert np.all(np.isin(entries[:25], np.arange(0, 120, 3)))
    assert entries.size == 200 and pops.size == 175


def test_isolated_frontier_stops_early():
    g = Graph.from_edges(np.array([0, 1]), np.array([1, 2]), 8)  # nodes 3..7 isolated
    s = make_sampler("mrw", g, np.arange(3, 8), {"size_subgraph": 50, "size_frontier": 3})
    entries, pops = s.trace(0)
    assert entries.size == 3 and pops.size == 0
    # a mixed frontier never pops an isolated node
    s = make_sampler("mrw", g, np.arange(8), {"size_subgraph": 60, "size_frontier": 6})
    for seed in range(20):
        entries, pops = s.trace(seed)
        assert np.all(g.degrees()[pops] > 0)


def test_huge_degree_node_gets_remaining_slots():
    """A hub with more pins than DB holds: sampling still completes with valid pops."""
    hub = 0
    leaves = np.arange(1, 400)
    g = Graph.from_edges(np.full(leaves.size, hub), leaves, 400)
    s = make_sampler("mrw", g, np.arange(400), {"size_subgraph": 300, "size_frontier": 10})
    for seed in range(20):
        entries, pops = s.trace(seed)
        assert entries.size == 300
        for t, u in enumerate(pops):
            assert entries[10 + t] in g.indices[g.indptr[u]:g.indptr[u + 1]]


def test_int16_and_int32_dashboard_give_the_same_run():
    """The DB dtype (int16 tile ids when size_frontier < 2^15, else int32) changes no draw."""
    g = skewed_graph()
    s = make_sampler("mrw", g, np.arange(g.num_nodes), {"size_subgraph": 90, "size_frontier": 30})
    assert s._db_proto.dtype == np.int16
    mark = np.full(g.num_nodes, -1, dtype=np.int32)
    runs = [frontier_trace(g.indptr, g.indices, s.nodes, s.m, s.n, 0, s.eta, s.db_size, 7,
                           mark, np.empty(0, dt)) for dt in (np.int16, np.int32)]
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    np.testing.assert_array_equal(runs[0][1], runs[1][1])
