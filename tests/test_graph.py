"""scalegnn.graph.Graph against scipy.sparse references."""

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from scalegnn.errors import GraphError
from scalegnn.graph import Graph


def scipy_pattern(src, dst, n, symmetrize=True, dedupe=True, drop_loops=True):
    """(indptr, indices) of the reference CSR pattern built with scipy."""
    a = sp.coo_matrix((np.ones(len(src)), (src, dst)), shape=(n, n)).tocsr()
    if symmetrize:
        a = a + a.T
    if drop_loops:
        a = a.tolil()
        a.setdiag(0)
        a = a.tocsr()
        a.eliminate_zeros()
    a.sort_indices()
    if dedupe:
        return a.indptr, a.indices
    # without dedupe each entry appears with its multiplicity
    counts = a.data.astype(np.int64)
    rows = np.repeat(np.arange(n), np.diff(a.indptr))
    rows, cols = np.repeat(rows, counts), np.repeat(a.indices, counts)
    return np.r_[0, np.cumsum(np.bincount(rows, minlength=n))], cols


def random_edges(n=60, m=400, seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(0, n, m), rng.integers(0, n, m)


def assert_pattern(g, indptr, indices):
    np.testing.assert_array_equal(g.indptr, indptr)
    np.testing.assert_array_equal(g.indices, indices)


@pytest.mark.parametrize("sym", [True, False])
@pytest.mark.parametrize("dedupe", [True, False])
@pytest.mark.parametrize("loops", [True, False])
def test_from_edges_matches_scipy(sym, dedupe, loops):
    src, dst = random_edges()
    src[:5] = dst[:5]  # some self-loops
    g = Graph.from_edges(src, dst, 60, symmetrize=sym, deduplicate=dedupe,
                         remove_self_loops=loops)
    if sym and not dedupe and not loops:
        # a symmetrized self-loop (u, u) is stored twice, as A + A^T has 2 on the diagonal
        pass
    assert_pattern(g, *scipy_pattern(src, dst, 60, sym, dedupe, loops))
    assert g.is_sorted() and g.indptr.dtype == np.int64 and g.indices.dtype == np.int32


def test_from_edges_num_nodes_and_dtypes():
    g = Graph.from_edges(np.array([0, 1]), np.array([1, 2]))
    assert g.num_nodes == 3 and g.num_edges == 4 and g.is_symmetric()
    g = Graph.from_edges(np.array([0.0, 1.0]), np.array([1.0, 2.0]), 5)
    assert g.num_nodes == 5 and g.degrees().tolist() == [1, 2, 1, 0, 0]
    e = Graph.from_edges(np.array([], np.int64), np.array([], np.int64), 4)
    assert e.num_nodes == 4 and e.num_edges == 0


def test_from_edges_validation_errors():
    with pytest.raises(GraphError, match="negative node id -1"):
        Graph.from_edges(np.array([0, -1]), np.array([1, 2]))
    with pytest.raises(GraphError, match="out of range"):
        Graph.from_edges(np.array([0, 1]), np.array([1, 5]), 3)
    with pytest.raises(GraphError, match="integers"):
        Graph.from_edges(np.array([0.5]), np.array([1.0]))
    with pytest.raises(GraphError, match="equal length"):
        Graph.from_edges(np.array([0, 1]), np.array([1]))


def test_constructor_validation_errors():
    with pytest.raises(GraphError, match="start at 0"):
        Graph(np.array([1, 2]), np.array([0, 0]), 2)
    with pytest.raises(GraphError, match="ends at"):
        Graph(np.array([0, 3]), np.array([0]), 2)
    with pytest.raises(GraphError, match="not monotone"):
        Graph(np.array([0, 2, 1, 3]), np.array([0, 1, 2]), 3)
    with pytest.raises(GraphError, match="negative node id"):
        Graph(np.array([0, 1]), np.array([-1]), 2)
    with pytest.raises(GraphError, match="out of range"):
        Graph(np.array([0, 1]), np.array([7]), 2)
    with pytest.raises(GraphError, match="integers"):
        Graph(np.array([0, 1]), np.array([0.5]), 2)
    with pytest.raises(GraphError, match="data has shape"):
        Graph(np.array([0, 1]), np.array([0]), 2, data=np.ones(3))


def test_constructor_rejects_ids_that_would_wrap_in_int32():
    """int64 ids beyond int32 must not wrap into range when narrowed to int32."""
    with pytest.raises(GraphError, match="out of range"):
        Graph(np.array([0, 1]), np.array([2 ** 32 + 1], dtype=np.int64), 5)


def test_induced_subgraph_and_edge_ids():
    src, dst = random_edges(80, 600, seed=1)
    g = Graph.from_edges(src, dst, 80)
    g = g.with_data(np.arange(g.num_edges, dtype=np.float32))
    nodes = np.array([5, 3, 70, 3, 11, 40, 41, 42, 0, 79])
    sub, eids = g.induced_subgraph(nodes)
    u = np.unique(nodes)
    ref = g.to_scipy()[u][:, u]
    ref.sort_indices()
    np.testing.assert_array_equal(sub.indptr, ref.indptr)
    np.testing.assert_array_equal(sub.indices, ref.indices)
    np.testing.assert_array_equal(g.indices[eids], u[sub.indices])
    np.testing.assert_array_equal(sub.data, ref.data)  # data carried = parent ids here
    np.testing.assert_array_equal(sub.data, eids.astype(np.float32))
    sub_rows = np.repeat(u, np.diff(sub.indptr))
    src_of_eid = np.searchsorted(g.indptr, eids, side="right") - 1
    np.testing.assert_array_equal(src_of_eid, sub_rows)
    empty, e = g.induced_subgraph(np.array([], np.int64))
    assert empty.num_nodes == 0 and e.size == 0
    with pytest.raises(GraphError, match="node ids must lie"):
        g.induced_subgraph(np.array([80]))


def test_transpose_permutation_matches_scipy_transpose():
    src, dst = random_edges(50, 300, seed=2)
    g = Graph.from_edges(src, dst, 50)
    data = np.random.default_rng(0).random(g.num_edges).astype(np.float32)
    a = sp.csr_matrix((data, g.indices, g.indptr), shape=g.shape)
    at = a.T.tocsr()
    at.sort_indices()
    perm = g.transpose_permutation()
    np.testing.assert_array_equal(at.indptr, g.indptr)  # symmetric: same pattern
    np.testing.assert_array_equal(at.indices, g.indices)
    np.testing.assert_array_equal(at.data, data[perm])
    assert np.array_equal(np.sort(perm), np.arange(g.num_edges))


def test_transpose_general_rectangular():
    rng = np.random.default_rng(3)
    a = sp.random(30, 45, density=0.1, format="csr", random_state=4, dtype=np.float32)
    a.sort_indices()
    g = Graph(a.indptr, a.indices, 45, a.data)
    t = g.transpose()
    ref = a.T.tocsr()
    ref.sort_indices()
    assert t.shape == (45, 30)
    np.testing.assert_array_equal(t.indptr, ref.indptr)
    np.testing.assert_array_equal(t.indices, ref.indices)
    np.testing.assert_array_equal(t.data, ref.data)
    tt = t.transpose()
    np.testing.assert_array_equal(tt.indices, g.indices)
    np.testing.assert_array_equal(tt.data, g.data)
    assert rng is not None


def test_self_loops_symmetrize_dedupe():
    src, dst = random_edges(40, 200, seed=5)
    g = Graph.from_edges(src, dst, 40, symmetrize=False, deduplicate=False,
                         remove_self_loops=False)
    with_loops = g.add_self_loops()
    ref = (g.to_scipy() + sp.eye(40)).tocsr()
    ref.sort_indices()
    np.testing.assert_array_equal(with_loops.indptr, ref.indptr)
    np.testing.assert_array_equal(with_loops.indices, ref.indices)
    assert np.all(with_loops.to_scipy().diagonal() == 1)
    no_loops = with_loops.remove_self_loops()
    assert np.all(no_loops.to_scipy().diagonal() == 0)
    assert_pattern(no_loops, *scipy_pattern(src, dst, 40, False, True, True))
    assert_pattern(g.symmetrize(), *scipy_pattern(src, dst, 40, True, True, False))
    assert_pattern(g.deduplicate(), *scipy_pattern(src, dst, 40, False, True, False))
    s = g.sort_indices()
    assert s.is_sorted() and s.num_edges == g.num_edges
    assert g.symmetrize().is_symmetric()
    assert not Graph.from_edges(np.array([0]), np.array([1]), 2, symmetrize=False).is_symmetric()


def test_degrees_and_row_normalized():
    src, dst = random_edges(30, 100, seed=6)
    g = Graph.from_edges(src, dst, 30)
    a = g.to_scipy()
    np.testing.assert_array_equal(g.degrees(), np.asarray(a.sum(1)).ravel())
    rn = g.row_normalized().to_scipy()
    sums = np.asarray(rn.sum(1)).ravel()
    np.testing.assert_allclose(sums[g.degrees() > 0], 1.0, rtol=1e-6)


def test_scipy_roundtrip_and_from_scipy_options():
    a = sp.random(20, 20, density=0.2, format="csr", random_state=1, dtype=np.float64)
    g = Graph.from_scipy(a)
    assert g.data is None
    b = g.to_scipy()
    assert (abs((b != 0).astype(int) - (a != 0).astype(int))).nnz == 0
    gd = Graph.from_scipy(sp.coo_matrix(a), keep_data=True)
    np.testing.assert_allclose(gd.to_scipy().toarray(), a.toarray())
    rect = Graph.from_scipy(sp.random(5, 9, density=0.3, format="csr", random_state=2))
    assert rect.shape == (5, 9)
    with pytest.raises(GraphError, match="scipy.sparse"):
        Graph.from_scipy(np.eye(3))


def test_from_scipy_does_not_modify_input():
    a = sp.csr_matrix((np.ones(3), np.array([2, 0, 1]), np.array([0, 3, 3, 3])), shape=(3, 3))
    before = a.indices.copy()
    Graph.from_scipy(a)
    np.testing.assert_array_equal(a.indices, before)


def test_torch_roundtrip():
    src, dst = random_edges(25, 90, seed=7)
    g = Graph.from_edges(src, dst, 25)
    t = g.to_torch()
    assert t.layout == torch.sparse_csr
    np.testing.assert_allclose(t.to_dense().numpy(), g.to_scipy().toarray())
    back = Graph.from_torch(t)
    assert_pattern(back, g.indptr, g.indices)
    coo = t.to_sparse_coo()
    assert_pattern(Graph.from_torch(coo), g.indptr, g.indices)
    ei = torch.from_numpy(np.stack([src, dst]))
    assert_pattern(Graph.from_torch(ei, 25), g.indptr, g.indices)
    with pytest.raises(GraphError, match="shape"):
        Graph.from_torch(torch.zeros(3, 4, dtype=torch.long))
    gd = g.with_data(np.arange(g.num_edges, dtype=np.float32))
    back = Graph.from_torch(gd.to_torch(), keep_data=True)
    np.testing.assert_array_equal(back.data, gd.data)


def test_to_scipy_never_corrupts_a_graph_with_duplicates():
    g = Graph.from_edges(np.array([0, 0, 2, 1]), np.array([1, 1, 1, 0]), 3, symmetrize=False,
                         deduplicate=False)
    before = (g.indptr.copy(), g.indices.copy())
    a = g.to_scipy()
    a.sum_duplicates()  # scipy canonicalizes in place
    np.testing.assert_array_equal(g.indptr, before[0])
    np.testing.assert_array_equal(g.indices, before[1])
    assert a.toarray().tolist() == [[0, 2, 0], [1, 0, 0], [0, 1, 0]]


def test_edge_index_and_repr():
    g = Graph.from_edges(np.array([0, 2]), np.array([1, 1]), 3)
    s, d = g.edge_index()
    assert list(zip(s.tolist(), d.tolist())) == [(0, 1), (1, 0), (1, 2), (2, 1)]
    assert repr(g) == "Graph(num_nodes=3, num_edges=4)"
    assert g.nbytes == g.indptr.nbytes + g.indices.nbytes


def test_from_torch_edge_index_ignores_keep_data():
    ei = torch.tensor([[0, 1], [1, 2]])
    g = Graph.from_torch(ei, 3, keep_data=True)
    assert g.num_edges == 4


@pytest.mark.parametrize("seed", range(6))
def test_is_symmetric_matches_scipy(seed):
    """Set semantics: duplicates and self-loops allowed; compared with (A>0) == (A>0)^T."""
    rng = np.random.default_rng(seed)
    n = 12
    src, dst = rng.integers(0, n, 30), rng.integers(0, n, 30)
    for sym in (True, False):
        g = Graph.from_edges(src, dst, n, symmetrize=sym, deduplicate=bool(seed % 2),
                             remove_self_loops=False)
        if seed >= 4 and sym:  # drop one direction of one edge
            a = g.to_scipy().tolil()
            r, c = a.nonzero()
            k = np.flatnonzero(r != c)[0]
            a[r[k], c[k]] = 0
            a = a.tocsr()
            a.eliminate_zeros()
            g = Graph.from_scipy(a)
        a = (g.to_scipy() > 0).astype(np.int8)
        assert g.is_symmetric() == ((a != a.T).nnz == 0)
    # duplicates on one side only still count as symmetric (set semantics)
    g = Graph(np.array([0, 2, 3]), np.array([1, 1, 0]), 2)
    assert g.is_symmetric()
    assert not Graph(np.array([0, 1, 1]), np.array([1]), 2).is_symmetric()
    assert not Graph(np.array([0, 1, 1]), np.array([1]), 3).is_symmetric()  # rectangular
