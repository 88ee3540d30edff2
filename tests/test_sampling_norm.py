"""Normalization counters, multipliers and loss weights vs brute force and hand computation."""

import numpy as np
import pytest

from scalegnn.errors import ConfigError
from scalegnn.graph import Graph
from scalegnn.sampling import Normalization, make_sampler
from scalegnn.sampling import reference as R


def random_graph(n=200, m=800, seed=0):
    rng = np.random.default_rng(seed)
    return Graph.from_edges(rng.integers(0, n, m), rng.integers(0, n, m), n)


@pytest.mark.parametrize("name,params", [("rw", {"num_root": 10, "depth": 2}),
                                         ("edge", {"size_subg_edge": 15}),
                                         ("mrw", {"size_subgraph": 40, "size_frontier": 10})])
def test_counters_match_brute_force(name, params):
    g = random_graph()
    nodes = np.arange(0, 200, 2)
    loss = nodes[:60]
    s = make_sampler(name, g, nodes, params)
    norm, subs = Normalization.estimate(s, loss, g.num_nodes, coverage=5, seed=4)
    sizes = np.array([x.num_nodes for x in subs])
    target = 5 * nodes.size
    assert sizes.sum() >= target and sizes[:-1].sum() < target  # N = first count reaching it
    cv, ce = R.count_brute_force(subs, g.num_nodes, g.num_edges)
    np.testing.assert_array_equal(norm.node_counts, cv)
    np.testing.assert_array_equal(norm.edge_counts, ce)
    assert norm.num_subgraphs == len(subs)
    # pre-sampled subgraphs are stream indices 0..N-1 of the seed
    again = s.sample(len(subs), seed=4)
    assert all(np.array_equal(a.nodes, b.nodes) for a, b in zip(subs, again))
    # per edge: multiplier = clip(C_v / C_e), v the row; NaN -> 0.1
    for sub in subs[:5]:
        rows = np.repeat(sub.nodes, sub.graph.degrees())
        want = np.clip(cv[rows] / ce[sub.edge_ids], 0, 1e4)
        np.testing.assert_allclose(norm.edge_multipliers(sub), want, rtol=1e-6)
        w = norm.loss_weights(sub)
        is_loss = np.isin(sub.nodes, loss)
        np.testing.assert_allclose(w[is_loss], len(subs) / cv[sub.nodes[is_loss]] / loss.size,
                                   rtol=1e-6)
        assert np.all(w[~is_loss] == 0)


def test_hand_computed_multipliers_and_weights():
    # path 0 - 1 - 2, node 3 isolated; CSR entries: (0,1) (1,0) (1,2) (2,1)
    g = Graph.from_edges(np.array([0, 1]), np.array([1, 2]), 4)
    cv = np.array([4, 8, 0, 2])
    ce = np.array([2, 2, 0, 0])
    mask = np.array([True, True, True, False])
    norm = Normalization.from_counts(cv, ce, 10, g, mask)
    # row 0: 4/2; row 1: 8/2 and 8/0 -> clip 1e4; row 2: 0/0 -> NaN -> 0.1
    np.testing.assert_allclose(norm.edge_multiplier, [2.0, 4.0, 1e4, 0.1])
    # loss nodes 0, 1, 2 (2 never sampled -> C = 0.1); N = 10, |V_loss| = 3; node 3 not a loss node
    np.testing.assert_allclose(norm.loss_weight, [10 / 4 / 3, 10 / 8 / 3, 10 / 0.1 / 3, 0],
                               rtol=1e-6)


def test_weighted_presampled_loss_is_the_full_mean():
    """Over the pre-sampled set, (1/N) sum_i sum_{v in V_i} w_v L_v = mean over loss nodes of L_v
    whenever every loss node was sampled: the loss estimator is unbiased on its own samples."""
    g = random_graph(seed=2)
    nodes = np.arange(g.num_nodes)
    loss = nodes[::3]
    s = make_sampler("rw", g, nodes, {"num_root": 20, "depth": 2})
    norm, subs = Normalization.estimate(s, loss, g.num_nodes, coverage=30, seed=1)
    assert np.all(norm.node_counts[loss] > 0)
    L = np.random.default_rng(0).random(g.num_nodes)
    est = np.mean([np.sum(norm.loss_weights(x) * L[x.nodes]) for x in subs])
    assert est == pytest.approx(L[loss].mean(), rel=1e-5)


def test_unnormalized_mode_is_a_plain_mean():
    g = random_graph()
    s = make_sampler("node", g, np.arange(g.num_nodes), {"size_subgraph": 30})
    loss = np.arange(0, 200, 4)
    norm, subs = Normalization.estimate(s, loss, g.num_nodes, normalize=False)
    assert subs == []
    for sub in s.sample(3, seed=0):
        np.testing.assert_array_equal(norm.edge_multipliers(sub), np.ones(sub.num_edges))
        w = norm.loss_weights(sub)
        k = np.isin(sub.nodes, loss).sum()
        np.testing.assert_allclose(w, np.isin(sub.nodes, loss) / k)
        assert w.dtype == np.float32


def test_full_sampler_presamples_once():
    g = random_graph()
    s = make_sampler("full", g, np.arange(g.num_nodes), {})
    norm, subs = Normalization.estimate(s, np.arange(50), g.num_nodes)
    assert len(subs) == 1 and norm.num_subgraphs == 1
    touched = norm.edge_counts > 0
    assert np.all(norm.edge_multiplier[touched] == 1.0)
    np.testing.assert_allclose(norm.loss_weights(subs[0])[:50], 1 / 50)


def test_bad_arguments():
    g = random_graph()
    s = make_sampler("node", g, np.arange(g.num_nodes), {"size_subgraph": 30})
    with pytest.raises(ConfigError, match="sample_coverage"):
        Normalization.estimate(s, np.arange(5), g.num_nodes, coverage=0)
    with pytest.raises(ConfigError, match="loss"):
        Normalization.estimate(s, np.array([], dtype=np.int64), g.num_nodes)
    with pytest.raises(ConfigError, match="num_nodes"):
        Normalization.estimate(s, np.arange(5), g.num_nodes + 1)


def test_keep_budget_keeps_a_prefix():
    g = random_graph()
    s = make_sampler("rw", g, np.arange(g.num_nodes), {"num_root": 10, "depth": 2})
    full, subs = Normalization.estimate(s, np.arange(100), g.num_nodes, coverage=5, seed=2)
    budget = sum(x.nbytes for x in subs[:3])
    part, kept = Normalization.estimate(s, np.arange(100), g.num_nodes, coverage=5, seed=2,
                                        keep=budget)
    none, empty = Normalization.estimate(s, np.arange(100), g.num_nodes, coverage=5, seed=2,
                                         keep=False)
    assert len(kept) == 3 and empty == []
    assert all(np.array_equal(a.nodes, b.nodes) for a, b in zip(kept, subs))
    for other in (part, none):
        assert other.num_subgraphs == full.num_subgraphs
        np.testing.assert_array_equal(other.node_counts, full.node_counts)
        np.testing.assert_array_equal(other.edge_multiplier, full.edge_multiplier)
