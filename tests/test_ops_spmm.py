"""SpMM kernels and autograd vs dense/slow references (both kernels, both dtypes)."""

import importlib

import numpy as np
import pytest
import torch

from scalegnn.errors import ConfigError, GraphError
from scalegnn.graph import Graph
from scalegnn.ops import _kernels as K
from scalegnn.ops import costmodel
from scalegnn.ops.adj import SparseAdj
from scalegnn.ops.spmm import num_threads, spmm, spmm_forward

DTYPES = [torch.float32, torch.float64]
TOL = {torch.float32: dict(rtol=1e-5, atol=1e-5), torch.float64: dict(rtol=1e-12, atol=1e-12)}


def _plans(f, p=2):
    """Every code path: untiled/tiled/prefetching rows, several feature-block splits."""
    yield costmodel.Plan("rows", f, 16, p, p, {}, 0)
    yield costmodel.Plan("rows", 16, 16, p, p, {}, 8)
    yield costmodel.Plan("rows", 3, 16, p, p, {}, 1)
    for width, q_f in [(max(f, 1), p), (16, 2 * p), (8, 4 * p), (1, 64)]:
        yield costmodel.Plan("features", f, width, q_f, p, {}, 0)
        yield costmodel.Plan("features", f, width, q_f, p, {}, 0, blocked=True)


def _random_adj(n_rows, n_cols, nnz, seed, dtype=np.float64, empty_rows=()):
    rng = np.random.default_rng(seed)
    rows = rng.integers(0, n_rows, nnz)
    keep = ~np.isin(rows, list(empty_rows))
    g = Graph.from_edges(rows[keep], rng.integers(0, n_cols, keep.sum()),
                         max(n_rows, n_cols), symmetrize=False)
    # make it rectangular: keep n_rows rows and n_cols columns
    indptr = g.indptr[: n_rows + 1]
    indices = g.indices[: indptr[-1]]
    data = rng.standard_normal(indices.shape[0]).astype(dtype)
    return SparseAdj(indptr, indices, data, n_cols)


def _dense(adj, dtype):
    d = np.zeros(adj.shape)
    for i in range(adj.num_rows):
        for e in range(adj.indptr[i], adj.indptr[i + 1]):
            d[i, adj.indices[e]] += adj.data[e]
    return torch.from_numpy(d).to(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(40, 40, 300), (30, 70, 400), (1, 5, 3), (50, 50, 9)])
@pytest.mark.parametrize("f", [1, 17, 64])
def test_kernels_match_dense(dtype, shape, f):
    n_rows, n_cols, nnz = shape
    adj = _random_adj(n_rows, n_cols, nnz, seed=n_rows + f, empty_rows=(0, n_rows // 2))
    assert adj.indptr[1] == adj.indptr[0]          # row 0 really is empty
    x = torch.randn(n_cols, f, dtype=dtype, generator=torch.Generator().manual_seed(f))
    ref = _dense(adj, dtype) @ x
    for plan in _plans(f):
        got = spmm_forward(adj, x, plan=plan)
        assert got.dtype == dtype and got.shape == (n_rows, f)
        torch.testing.assert_close(got, ref, **TOL[dtype], msg=str(plan))
    for kernel in ("auto", "rows", "features", "torch"):
        torch.testing.assert_close(spmm(adj, x, kernel=kernel), ref, **TOL[dtype])


def test_matches_slow_reference_and_overwrites_garbage():
    adj = _random_adj(60, 80, 700, seed=3, dtype=np.float32, empty_rows=(5, 6, 59))
    x = np.random.default_rng(1).standard_normal((80, 37)).astype(np.float32)
    ref = K.spmm_reference(adj.indptr, adj.indices, adj.data, x)
    for plan in _plans(37):
        out = np.full((60, 37), np.nan, dtype=np.float32)   # kernels must write every element
        if plan.kernel == "rows":
            K.spmm_rows(adj.indptr, adj.indices, adj.data, x, out,
                        K.balanced_row_bounds(adj.indptr, 2, 2), plan.tile, plan.prefetch)
        else:
            buf = np.full((plan.threads, 80, min(plan.width, 37)) if plan.blocked else (0, 0, 0),
                          np.nan, dtype=np.float32)
            K.spmm_feature_blocks(adj.indptr, adj.indices, adj.data, x, out, plan.width,
                                  plan.q_f, plan.threads, buf)
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
    out = np.full((60, 37), np.nan, dtype=np.float32)    # the benchmark's calibration loop
    K.spmm_plain(adj.indptr, adj.indices, adj.data, x, out)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kernel", ["rows", "features"])
def test_zero_edge_graph_and_empty_shapes(kernel):
    adj = SparseAdj(np.zeros(6, dtype=np.int64), np.zeros(0, dtype=np.int32),
                    np.zeros(0, dtype=np.float32), 9)
    x = torch.randn(9, 20)
    assert torch.equal(spmm(adj, x, kernel=kernel), torch.zeros(5, 20))
    assert spmm(adj, torch.randn(9, 0), kernel=kernel).shape == (5, 0)


def test_nan_propagates():  # fastmath flags must keep IEEE NaN semantics
    adj = _random_adj(10, 10, 40, seed=0, dtype=np.float32)
    x = torch.randn(10, 8)
    x[3, 2] = float("nan")
    for kernel in ("rows", "features"):
        got = spmm(adj, x, kernel=kernel)
        ref = torch.sparse.mm(adj.torch_csr(), x)
        assert torch.equal(torch.isnan(got), torch.isnan(ref))


@pytest.mark.parametrize("kernel", ["rows", "features"])
def test_gradcheck_rectangular(kernel):
    adj = _random_adj(7, 11, 30, seed=5, empty_rows=(2,))
    x = torch.randn(11, 5, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: spmm(adj, t, kernel=kernel), (x,))


def test_backward_uses_shared_pattern_transpose():
    """Sampled subgraph: Âᵀ shares indptr/indices and permutes data (Alg. 6)."""
    rng = np.random.default_rng(2)
    g = Graph.from_edges(rng.integers(0, 50, 200), rng.integers(0, 50, 200), 50)
    g = g.with_data(rng.random(g.num_edges))          # non-symmetric values
    adj = SparseAdj.from_graph(g, g.transpose_permutation(), dtype=np.float64)
    assert adj.t().indices is adj.indices
    dense = _dense(adj, torch.float64)
    torch.testing.assert_close(_dense(adj.t(), torch.float64), dense.T)
    x = torch.randn(50, 6, dtype=torch.float64, requires_grad=True)
    gout = torch.randn(50, 6, dtype=torch.float64)
    for kernel in ("auto", "rows", "features"):
        x.grad = None
        spmm(adj, x, kernel=kernel).backward(gout)
        torch.testing.assert_close(x.grad, dense.T @ gout)
    torch.autograd.gradcheck(lambda t: spmm(adj, t), (x,))



def test_adjacency_and_transpose_are_freed_without_the_cycle_collector():
    """A matrix and its transpose form no reference cycle: a training step's adjacency (and the
    sampler arrays it views) goes at once, not at the next cyclic collection."""
    import gc
    import weakref
    rng = np.random.default_rng(3)
    g = Graph.from_edges(rng.integers(0, 40, 150), rng.integers(0, 40, 150), 40)
    g = g.with_data(rng.random(g.num_edges))
    gc.disable()
    try:
        for perm in (g.transpose_permutation(), None):   # shared pattern, or built by t()
            adj = SparseAdj.from_graph(g, perm, dtype=np.float64)
            t = adj.t()
            assert t.t() is adj                     # the back-reference while adj lives
            refs = weakref.ref(adj), weakref.ref(t)
            del adj, t
            assert refs[0]() is None and refs[1]() is None
        adj = SparseAdj.from_graph(g, g.transpose_permutation(), dtype=np.float64)
        t = adj.t()
        dense = _dense(adj, torch.float64)
        del adj                                     # t outlives adj: its .t() is rebuilt
        torch.testing.assert_close(_dense(t.t(), torch.float64), dense)
    finally:
        gc.enable()

@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_large_outputs_in_huge_page_mappings(monkeypatch, dtype):
    """Outputs from HUGE_OUTPUT_BYTES up live in their own 2 MiB-aligned mapping: same values,
    ordinary tensors for autograd and in-place ops afterwards."""
    monkeypatch.setattr(importlib.import_module("scalegnn.ops.spmm"), "HUGE_OUTPUT_BYTES", 1)
    adj = _random_adj(40, 30, 200, seed=4, dtype=np.float64)
    x = torch.randn(30, 9, dtype=dtype, requires_grad=True)
    y = spmm(adj, x)
    assert y.shape == (40, 9) and y.dtype == dtype and y.data_ptr() % (2 << 20) == 0
    torch.testing.assert_close(y, _dense(adj, dtype) @ x)
    y.relu().sum().backward()
    torch.testing.assert_close(x.grad, _dense(adj, dtype).T @ (y > 0).to(dtype))
    z = y.detach().clone()
    y.detach().mul_(2)                                   # writable
    torch.testing.assert_close(y.detach(), 2 * z)


def test_float32_data_with_float64_features():
    adj = _random_adj(20, 20, 80, seed=9, dtype=np.float32)
    x = torch.randn(20, 4, dtype=torch.float64)
    got = spmm(adj, x)
    assert got.dtype == torch.float64
    torch.testing.assert_close(got, _dense(adj, torch.float64) @ x)


def test_thread_count_follows_torch_and_numba():
    old = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        assert num_threads() == 1
        assert costmodel.plan_spmm(100, 100, 500, 64, 4, num_threads()).threads == 1
    finally:
        torch.set_num_threads(old)


def test_deterministic_across_thread_counts():
    adj = _random_adj(200, 200, 3000, seed=4, dtype=np.float32)
    x = torch.randn(200, 96)
    outs = [spmm_forward(adj, x, plan=costmodel.Plan("rows", 96, 32, p, p, {}, 0))
            for p in (1, 2, 3)]
    assert all(torch.equal(outs[0], o) for o in outs[1:])


def test_user_errors():
    adj = _random_adj(4, 6, 10, seed=0)
    with pytest.raises(GraphError, match="6 columns"):
        spmm(adj, torch.randn(4, 3, dtype=torch.float64))
    with pytest.raises(ConfigError, match="kernel must be one of"):
        spmm(adj, torch.randn(6, 3, dtype=torch.float64), kernel="fast")


def test_balanced_row_bounds():
    indptr = np.array([0, 10, 10, 10, 12, 13, 40], dtype=np.int64)
    b = K.balanced_row_bounds(indptr, 2, 0)
    assert b[0] == 0 and b[-1] == 6 and np.all(np.diff(b) >= 0)
    assert K.balanced_row_bounds(indptr, 8, 2).shape == (9,)


def _symmetric_adj(n, seed, dtype=np.float32):
    """A subgraph-like matrix: symmetric pattern, sorted rows, values not symmetric, its
    transpose by permutation (Alg. 6), as every sampled batch has."""
    rng = np.random.default_rng(seed)
    g = Graph.from_edges(rng.integers(0, n, 4 * n), rng.integers(0, n, 4 * n), n)
    g = Graph(g.indptr, g.indices, n, rng.random(g.num_edges).astype(dtype))
    return SparseAdj.from_graph(g, g.transpose_permutation(), dtype=dtype)


def test_torch_csr_int32_indices_shared_with_the_transpose():
    """The torch operand (what a GPU gets) has int32 indices where they fit, and a transpose
    by permutation reuses the matrix's index tensors: only its values are new."""
    adj = _symmetric_adj(40, seed=2)
    a, at = adj.torch_csr(), adj.t().torch_csr()
    assert a.crow_indices().dtype == a.col_indices().dtype == torch.int32
    assert at.col_indices().data_ptr() == a.col_indices().data_ptr()
    assert at.crow_indices().data_ptr() == a.crow_indices().data_ptr()
    assert at.values().data_ptr() != a.values().data_ptr()
    dense = _dense(adj, torch.float32)
    torch.testing.assert_close(a.to_dense(), dense)
    torch.testing.assert_close(at.to_dense(), dense.T)
    x = torch.randn(40, 5)
    torch.testing.assert_close(torch.sparse.mm(at, x), dense.T @ x)
    assert adj.torch_csr(dtype=torch.float64).col_indices().data_ptr() == \
        a.col_indices().data_ptr()                       # another dtype: the same pattern
    other = _random_adj(30, 20, 80, seed=3)              # a built transpose: its own pattern
    assert other.t().torch_csr().col_indices().data_ptr() != \
        other.torch_csr().col_indices().data_ptr()
    torch.testing.assert_close(other.t().torch_csr().to_dense(),
                               _dense(other, torch.float64).T)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_uses_torch_kernels():
    adj = _random_adj(30, 30, 100, seed=1, dtype=np.float32)
    x = torch.randn(30, 8, device="cuda", requires_grad=True)
    y = spmm(adj, x)
    assert y.device.type == "cuda"
    torch.testing.assert_close(y.cpu(), _dense(adj, torch.float32) @ x.detach().cpu())
    y.sum().backward()
    torch.testing.assert_close(x.grad.cpu(), _dense(adj, torch.float32).T @ torch.ones(30, 8))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_moves_both_operands_with_the_forward():
    """On a GPU the forward moves the transpose's values too (a pageable copy mid-backward
    would wait for the queued kernels), over the shared int32 pattern."""
    adj = _symmetric_adj(50, seed=4)
    x = torch.randn(50, 8, device="cuda", requires_grad=True)
    y = spmm(adj, x)
    key = ("cuda:0", torch.float32)
    a, at = adj._torch[key], adj.t()._torch[key]
    assert a.col_indices().dtype == torch.int32
    assert at.col_indices().data_ptr() == a.col_indices().data_ptr()
    y.square().sum().backward()
    dense = _dense(adj, torch.float32)
    torch.testing.assert_close(y.detach().cpu(), dense @ x.detach().cpu())
    torch.testing.assert_close(x.grad.cpu(), dense.T @ (2 * y.detach().cpu()))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_pinned_operands():
    """After ``pin`` (a loader's thread) the operands on the GPU are the same matrices, moved
    from page-locked memory, the pattern pinned once for both directions."""
    adj = _symmetric_adj(60, seed=5)
    adj.pin(torch.float32)
    crow, col, values = adj._pinned[torch.float32]
    assert crow.is_pinned() and col.is_pinned() and values.is_pinned()
    assert adj.t()._pinned[torch.float32][1].data_ptr() == col.data_ptr()
    x = torch.randn(60, 8, device="cuda", requires_grad=True)
    y = spmm(adj, x)
    y.square().sum().backward()
    dense = _dense(adj, torch.float32)
    torch.testing.assert_close(y.detach().cpu(), dense @ x.detach().cpu())
    torch.testing.assert_close(x.grad.cpu(), dense.T @ (2 * y.detach().cpu()))
