"""Samplers vs exact distributions and slow references; induction, determinism, config errors
(the fill pass's vector blocks: test_sampling_fill.py)."""

import numpy as np
import pytest
from scipy import stats

from scalegnn.errors import ConfigError, GraphError
from scalegnn.graph import Graph
from scalegnn.sampling import SAMPLERS, Sampler, make_sampler
from scalegnn.sampling import reference as R
from scalegnn.sampling._induce_kernels import add_counts
from scalegnn.sampling._random_kernels import alias_draws, build_alias

BUDGETS = {"node": {"size_subgraph": 60}, "edge": {"size_subg_edge": 40},
           "rw": {"num_root": 20, "depth": 2}, "mrw": {"size_subgraph": 80, "size_frontier": 20},
           "full": {}, "cluster": {"num_parts": 12, "parts_per_batch": 3}}


def random_graph(n=300, m=1500, seed=0):
    rng = np.random.default_rng(seed)
    return Graph.from_edges(rng.integers(0, n, m), rng.integers(0, n, m), n)


def grid(rows, cols):
    ids = np.arange(rows * cols).reshape(rows, cols)
    src = np.concatenate([ids[:, :-1].ravel(), ids[:-1, :].ravel()])
    dst = np.concatenate([ids[:, 1:].ravel(), ids[1:, :].ravel()])
    return Graph.from_edges(src, dst, rows * cols)


def star_plus(n_leaves=6):
    """Star 0-(1..k), a path k+1 - k+2 - k+3 attached to leaf 1, and an isolated node."""
    k = n_leaves
    src = [0] * k + [1, k + 1, k + 2]
    dst = list(range(1, k + 1)) + [k + 1, k + 2, k + 3]
    return Graph.from_edges(np.array(src), np.array(dst), k + 5)


def inclusion(subs, n):
    c = np.zeros(n)
    for s in subs:
        c[s.nodes] += 1
    return c / len(subs)


def assert_binomial_close(freq, p, trials, z=5.0):
    """Empirical frequencies within z binomial standard deviations (plus a tiny floor)."""
    sd = np.sqrt(p * (1 - p) / trials)
    assert np.all(np.abs(freq - p) <= z * sd + 1e-9), np.max(np.abs(freq - p) / (sd + 1e-12))


# ------------------------------------------------------------------ structure of the output
@pytest.mark.parametrize("name", list(SAMPLERS))
def test_induced_csr_matches_graph_reference(name):
    g = random_graph()
    s = make_sampler(name, g, np.arange(g.num_nodes), BUDGETS[name])
    for sub in s.sample(4, seed=3, num_threads=2):
        assert sub.nodes.dtype == np.int64 and np.all(np.diff(sub.nodes) > 0)
        ref, eids = g.induced_subgraph(sub.nodes)
        np.testing.assert_array_equal(sub.graph.indptr, ref.indptr)
        np.testing.assert_array_equal(sub.graph.indices, ref.indices)
        np.testing.assert_array_equal(sub.edge_ids, eids)
        np.testing.assert_array_equal(g.indices[sub.edge_ids], sub.nodes[sub.graph.indices])
        np.testing.assert_array_equal(sub.transpose_perm, ref.transpose_permutation())
        dense = sub.graph.with_data(np.arange(sub.num_edges, dtype=np.float32)).to_scipy()
        dense_t = sub.graph.with_data(np.arange(sub.num_edges, dtype=np.float32)[
            sub.transpose_perm]).to_scipy()
        assert (dense.T != dense_t).nnz == 0


def test_ids_are_int32_and_usable_by_consumers():
    """Parent edge ids / transpose perm are written as int32 (half the bytes); gathering by
    them (edge multipliers, data[perm]) gives the same as int64 ids."""
    g = random_graph()
    s = make_sampler("rw", g, np.arange(g.num_nodes), BUDGETS["rw"])
    vals = np.random.default_rng(1).random(g.num_edges).astype(np.float32)
    for sub in s.sample(3, seed=4, edge_values=vals):
        assert sub.edge_ids.dtype == np.int32 and sub.transpose_perm.dtype == np.int32
        d = sub.graph.data
        np.testing.assert_array_equal(d[sub.transpose_perm],
                                      d[sub.transpose_perm.astype(np.int64)])
        np.testing.assert_array_equal(vals[sub.edge_ids], vals[sub.edge_ids.astype(np.int64)])
        counts = np.zeros(g.num_edges, dtype=np.int64)
        add_counts(counts, sub.edge_ids)
        np.testing.assert_array_equal(counts, np.bincount(sub.edge_ids, minlength=g.num_edges))


def test_edge_values_and_row_scale_in_the_same_pass():
    g = random_graph()
    s = make_sampler("rw", g, np.arange(g.num_nodes), BUDGETS["rw"])
    vals = np.random.default_rng(1).random(g.num_edges).astype(np.float32)
    scale = np.random.default_rng(2).random(g.num_nodes).astype(np.float32)
    plain = s.sample(3, seed=5)
    with_data = s.sample(3, seed=5, edge_values=vals, row_scale=scale)
    for a, b in zip(plain, with_data):
        rows = np.repeat(a.nodes, a.graph.degrees())
        np.testing.assert_allclose(b.graph.data, vals[a.edge_ids] * scale[rows], rtol=1e-6)
    # "inverse_degree": 1/deg(parent row) from the CSR, bit-equal to a float32 table of it
    inv = (1.0 / np.maximum(g.degrees(), 1)).astype(np.float32)
    by_table = s.sample(3, seed=5, edge_values=vals, row_scale=inv)
    by_name = s.sample(3, seed=5, edge_values=vals, row_scale="inverse_degree")
    for a, b in zip(by_table, by_name):
        np.testing.assert_array_equal(a.graph.data, b.graph.data)
    with pytest.raises(ConfigError, match="row_scale"):
        s.sample(1, seed=5, row_scale="degree")


@pytest.mark.parametrize("name", list(SAMPLERS))
def test_deterministic_across_threads_and_chunks(name, monkeypatch):
    monkeypatch.setattr(Sampler, "MIN_WORK", 1)  # really use 2 workers on this small graph
    g = random_graph(seed=4)
    s = make_sampler(name, g, np.arange(0, g.num_nodes, 2), BUDGETS[name])
    a = s.sample(6, seed=11, num_threads=1)
    b = s.sample(6, seed=11, num_threads=2)
    c = s.sample(4, seed=11, num_threads=2) + s.sample(2, seed=11, num_threads=1, start=4)
    d = s.sample(6, seed=12, num_threads=2)
    for x, y, z in zip(a, b, c):
        for other in (y, z):
            np.testing.assert_array_equal(x.nodes, other.nodes)
            np.testing.assert_array_equal(x.graph.indices, other.graph.indices)
            np.testing.assert_array_equal(x.edge_ids, other.edge_ids)
    if name != "full":
        assert any(not np.array_equal(x.nodes, y.nodes) for x, y in zip(a, d))


@pytest.mark.parametrize("name", ["node", "edge", "rw", "mrw"])
def test_clip_multiple_drops_a_subset(name):
    g = random_graph()
    s = make_sampler(name, g, np.arange(g.num_nodes), BUDGETS[name])
    full = s.sample(5, seed=2)
    clipped = s.sample(5, seed=2, clip_multiple=16)
    for f, c in zip(full, clipped):
        assert c.num_nodes == (f.num_nodes // 16) * 16
        assert np.all(np.isin(c.nodes, f.nodes))
        ref, _ = g.induced_subgraph(c.nodes)
        np.testing.assert_array_equal(c.graph.indices, ref.indices)


def test_full_sampler_is_the_node_set():
    g = grid(5, 6)
    nodes = np.array([3, 1, 7, 8, 9, 14, 1])
    (sub,) = make_sampler("full", g, nodes, {}).sample(1, seed=0)
    np.testing.assert_array_equal(sub.nodes, np.unique(nodes))


# ------------------------------------------------------------------ distributions
def test_alias_table_draw_frequencies():
    w = np.array([5.0, 0.0, 1.0, 3.0, 0.5, 10.0])
    prob, alias = build_alias(w)
    draws = alias_draws(prob, alias, 200_000, 7)
    counts = np.bincount(draws, minlength=w.size)
    assert counts[1] == 0
    keep = w > 0
    assert stats.chisquare(counts[keep], w[keep] / w.sum() * draws.size).pvalue > 1e-4


def test_node_sampler_inclusion_matches_formula():
    g = star_plus(8)
    nodes = np.arange(g.num_nodes)
    n, trials = 3, 20_000
    subs = make_sampler("node", g, nodes, {"size_subgraph": n}).sample(trials, seed=1)
    deg = g.degrees().astype(float)
    p = deg / deg.sum()
    assert_binomial_close(inclusion(subs, g.num_nodes), 1 - (1 - p) ** n, trials)
    # one draw: frequencies of the single node are exactly ∝ deg (chi-square)
    one = make_sampler("node", g, nodes, {"size_subgraph": 1}).sample(trials, seed=2)
    counts = np.bincount([s.nodes[0] for s in one], minlength=g.num_nodes)
    keep = deg > 0
    assert counts[~keep].sum() == 0
    assert stats.chisquare(counts[keep], p[keep] * trials).pvalue > 1e-4
    ref = make_sampler("node", g, nodes, {"size_subgraph": n})
    assert ref.expected_size == pytest.approx(np.sum(1 - (1 - p) ** n))


def test_edge_sampler_edge_frequencies_inverse_degree():
    g = star_plus(6)
    nodes = np.arange(g.num_nodes)
    trials = 30_000
    subs = make_sampler("edge", g, nodes, {"size_subg_edge": 1}).sample(trials, seed=3)
    u, v, p = R.edge_probabilities(g, nodes)
    index = {(a, b): j for j, (a, b) in enumerate(zip(u, v))}
    counts = np.zeros(u.size)
    for s in subs:
        assert s.num_nodes == 2
        counts[index[(s.nodes[0], s.nodes[1])]] += 1
    assert stats.chisquare(counts, p * trials).pvalue > 1e-4
    # star edges (leaf degree 1) are more likely than the path's inner edge (degrees 2, 2)
    assert p[index[(0, 2)]] > p[index[(7, 8)]]


def test_edge_sampler_restricted_to_node_set():
    g = grid(4, 4)
    nodes = np.array([0, 1, 2, 4, 5])
    subs = make_sampler("edge", g, nodes, {"size_subg_edge": 3}).sample(200, seed=0)
    assert all(np.all(np.isin(s.nodes, nodes)) for s in subs)


@pytest.mark.parametrize("r,h", [(1, 2), (3, 2), (2, 3)])
def test_rw_visit_frequencies_match_matrix_powers(r, h):
    g = star_plus(5)
    nodes = np.array([0, 2, 3, 6, 7, 9])  # includes the isolated node 9 (walk stays put)
    trials = 20_000
    subs = make_sampler("rw", g, nodes, {"num_root": r, "depth": h}).sample(trials, seed=r * h)
    exact = R.rw_visit_probability(g, nodes, r, h)
    assert_binomial_close(inclusion(subs, g.num_nodes), exact, trials)


def test_rw_against_slow_reference_on_grid():
    g = grid(4, 5)
    nodes = np.arange(g.num_nodes)
    rng = np.random.default_rng(0)
    trials = 4000
    ref = np.zeros(g.num_nodes)
    for _ in range(trials):
        ref[R.rw_sample(g, nodes, 2, 2, rng)] += 1
    fast = inclusion(make_sampler("rw", g, nodes, {"num_root": 2, "depth": 2}).sample(trials, 9),
                     g.num_nodes)
    exact = R.rw_visit_probability(g, nodes, 2, 2)
    assert_binomial_close(ref / trials, exact, trials)
    assert_binomial_close(fast, exact, trials)


# ------------------------------------------------------------------ configuration errors
def test_unknown_sampler_lists_allowed():
    with pytest.raises(ConfigError, match="allowed: node, edge, rw, mrw, full"):
        make_sampler("forest", grid(2, 2), np.arange(4), {})


@pytest.mark.parametrize("name,params,key", [
    ("node", {}, "size_subgraph"),
    ("node", {"size_subgraph": 0}, "size_subgraph"),
    ("node", {"size_subgraph": 2.5}, "size_subgraph"),
    ("edge", {"size_subg_edge": "many"}, "size_subg_edge"),
    ("rw", {"num_root": 10}, "depth"),
    ("rw", {"num_root": True, "depth": 2}, "num_root"),
    ("mrw", {"size_subgraph": 10}, "size_frontier"),
    ("mrw", {"size_subgraph": 10, "size_frontier": 20}, "size_frontier"),
    ("mrw", {"size_subgraph": 10, "size_frontier": 2, "max_deg": -1}, "max_deg"),
    ("rw", {"num_root": 10, "depth": 2, "num_roots": 3}, "num_roots"),
])
def test_bad_budget_names_the_key(name, params, key):
    with pytest.raises(ConfigError, match=key):
        make_sampler(name, grid(3, 3), np.arange(9), params)


def test_phase_keys_are_ignored_and_graph_checked():
    s = make_sampler("rw", grid(3, 3), np.arange(9),
                     {"sampler": "rw", "end": 30, "num_root": 2, "depth": 1})
    assert s.r == 2
    directed = Graph.from_edges(np.array([0, 1]), np.array([1, 2]), 3, symmetrize=False)
    with pytest.raises(GraphError, match="symmetric"):
        make_sampler("rw", directed, np.arange(3), {"num_root": 1, "depth": 1})
    with pytest.raises(GraphError, match="node ids"):
        make_sampler("rw", grid(2, 2), np.array([0, 9]), {"num_root": 1, "depth": 1})


@pytest.mark.parametrize("name", ["rw", "node", "full"])
def test_induction_with_self_loops(name):
    rng = np.random.default_rng(8)
    src, dst = rng.integers(0, 60, 300), rng.integers(0, 60, 300)
    src[:20] = dst[:20]  # self loops
    g = Graph.from_edges(src, dst, 60, remove_self_loops=False)
    assert np.any(g.indices == np.repeat(np.arange(60), g.degrees()))
    params = {"rw": {"num_root": 10, "depth": 2}, "node": {"size_subgraph": 20}, "full": {}}
    for sub in make_sampler(name, g, np.arange(60), params[name]).sample(5, seed=1):
        ref, eids = g.induced_subgraph(sub.nodes)
        np.testing.assert_array_equal(sub.graph.indptr, ref.indptr)
        np.testing.assert_array_equal(sub.graph.indices, ref.indices)
        np.testing.assert_array_equal(sub.edge_ids, eids)
        np.testing.assert_array_equal(sub.transpose_perm, ref.transpose_permutation())
