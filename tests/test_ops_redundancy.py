"""Redundancy reduction: exact rewrite, matching rules, γ rates (thesis §4.3)."""

import numpy as np
import pytest
import torch

from scalegnn.errors import ConfigError
from scalegnn.graph import Graph
from scalegnn.ops.adj import SparseAdj
from scalegnn.ops.redundancy import aggregation_pairs, num_adds, num_reads, reduce_redundancy


def _dense(adj):
    d = np.zeros(adj.shape)
    for i in range(adj.num_rows):
        for e in range(adj.indptr[i], adj.indptr[i + 1]):
            d[i, adj.indices[e]] += adj.data[e]
    return d


def _clustered(n=120, groups=6, p_in=0.6, seed=0, normalize=False):
    """Dense communities: many rows share many neighbour pairs."""
    rng = np.random.default_rng(seed)
    src, dst = [], []
    size = n // groups
    for gidx in range(groups):
        nodes = np.arange(gidx * size, (gidx + 1) * size)
        mask = rng.random((size, size)) < p_in
        s, d = np.nonzero(mask)
        src.append(nodes[s])
        dst.append(nodes[d])
    g = Graph.from_edges(np.concatenate(src), np.concatenate(dst), n)
    if normalize:
        g = g.row_normalized(dtype=np.float64)
        return SparseAdj.from_graph(g, dtype=np.float64)
    return SparseAdj.from_graph(g, dtype=np.float64)


def test_thesis_example_figure_4_2():
    """Fig. 4.2: 0:{1,2,3}, 1:{0,2}, 2:{0,1,3}, 3:{0,2}; pairs (0,2) and (1,3) have weight 2."""
    g = Graph.from_edges(np.array([0, 0, 0, 1, 2]), np.array([1, 2, 3, 2, 3]), 4)
    adj = SparseAdj.from_graph(g, dtype=np.float64)
    red = reduce_redundancy(adj, theta=1, rounds=1)
    assert sorted(map(tuple, red.pairs[0])) == [(0, 2), (1, 3)]
    # rows 1 and 3 read only x0+x2, rows 0 and 2 read x1+x3 plus one original
    assert num_reads(red.adj.indptr) == 6 and red.num_virtual == 2
    assert red.gamma_read == pytest.approx((6 + 4) / 10)
    assert red.gamma_add == pytest.approx((2 + 2) / 6)
    x = torch.arange(12, dtype=torch.float64).reshape(4, 3)
    assert torch.equal(red.apply(x), torch.from_numpy(_dense(adj)) @ x)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_unit_weights_exact(seed):
    adj = _clustered(seed=seed)
    red = reduce_redundancy(adj, theta=2, rounds=5)
    assert red.num_virtual > 0 and red.gamma_read < 0.8 and red.gamma_add < 0.8
    x = torch.from_numpy(np.random.default_rng(seed).integers(-5, 6, (120, 7))).double()
    assert torch.equal(red.apply(x), torch.from_numpy(_dense(adj)) @ x)     # exact
    # construction matrix: V = C·X, and Â = Â_red · [I; C]
    c = _dense(red.construction)
    assert set(np.unique(c)) <= {0.0, 1.0}
    ext = np.vstack([np.eye(120), c])
    np.testing.assert_array_equal(_dense(red.adj) @ ext, _dense(adj))
    # γ from the definitions
    m = sum(red.matched_per_round)
    assert red.gamma_read == pytest.approx((num_reads(red.adj.indptr) + 2 * m) / adj.nnz)


def test_row_normalized_uniform_weights_and_gradients():
    adj = _clustered(normalize=True, seed=3)
    red = reduce_redundancy(adj)
    assert red.num_virtual > 0
    x = torch.randn(120, 5, dtype=torch.float64, requires_grad=True)
    y = red.apply(x)
    ref = torch.from_numpy(_dense(adj)) @ x
    torch.testing.assert_close(y, ref)
    g = torch.randn(120, 5, dtype=torch.float64)
    (gx,) = torch.autograd.grad(y, x, g)
    torch.testing.assert_close(gx, torch.from_numpy(_dense(adj)).T @ g)


def test_pairs_merge_only_where_values_equal():
    # rows 0..3 hold columns 4 and 5; in rows 2, 3 their values differ
    indptr = np.array([0, 2, 4, 6, 8, 8, 8], dtype=np.int64)
    indices = np.array([4, 5, 4, 5, 4, 5, 4, 5], dtype=np.int32)
    data = np.array([1, 1, 2, 2, 1, 3, 0.5, 0.25])
    adj = SparseAdj(indptr, indices, data, 6)
    assert reduce_redundancy(adj, theta=2).num_virtual == 0    # weight 2 is not > θ=2
    red = reduce_redundancy(adj, theta=1)
    assert red.num_virtual == 1
    assert list(np.diff(red.adj.indptr)) == [1, 1, 2, 2, 0, 0]
    x = torch.randn(6, 3, dtype=torch.float64)
    torch.testing.assert_close(red.apply(x), torch.from_numpy(_dense(adj)) @ x)


def test_matching_is_disjoint_and_above_threshold():
    adj = _clustered(seed=5)
    red = reduce_redundancy(adj, theta=2, rounds=1)
    pairs = red.pairs[0]
    assert len(np.unique(pairs)) == pairs.size            # each node in at most one pair
    d = _dense(adj) != 0
    for u, w in pairs:
        assert (d[:, u] & d[:, w]).sum() > 2


def test_no_redundancy_and_errors():
    adj = SparseAdj(np.array([0, 1, 2], dtype=np.int64), np.array([0, 1], dtype=np.int32),
                    np.ones(2), 2)
    red = reduce_redundancy(adj)
    assert red.num_virtual == 0 and red.gamma_read == 1.0 and red.gamma_add == 1.0
    assert num_adds(adj.indptr) == 0
    with pytest.raises(ConfigError, match="rounds"):
        reduce_redundancy(adj, rounds=-1)


def _brute_force_pairs(adj, theta):
    """Alg. 3 literally: a dict over all neighbour pairs of every row (equal values only)."""
    weights = {}
    for v in range(adj.num_rows):
        a, b = adj.indptr[v], adj.indptr[v + 1]
        for p in range(a, b):
            for q in range(a, b):
                u, w = int(adj.indices[p]), int(adj.indices[q])
                if u < w and adj.data[p] == adj.data[q]:
                    weights[(u, w)] = weights.get((u, w), 0) + 1
    return {k: c for k, c in weights.items() if c > theta}


@pytest.mark.parametrize("theta", [0, 1, 2])
def test_aggregation_pairs_match_brute_force(theta):
    adj = _clustered(n=60, groups=3, seed=7)
    adj.data[::7] = 2.0                                   # some unequal values
    u, w, wt = aggregation_pairs(adj.indptr, adj.indices.astype(np.int64), adj.data,
                                 adj.num_cols, theta)
    got = {(int(a), int(b)): int(c) for a, b, c in zip(u, w, wt)}
    assert got == _brute_force_pairs(adj, theta)
