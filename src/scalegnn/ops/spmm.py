"""Sparse-dense product ``Â·X`` with autograd: forward ``Â·X``, backward ``Âᵀ·G``.

The backward runs the same kernel on ``adj.t()``; for sampled subgraphs that transpose shares
``indptr``/``indices`` and only permutes ``data`` (journal Alg. 6), so no CSR is rebuilt.

Host tensors (float32/float64) go to the numba kernels of :mod:`scalegnn.ops._kernels`,
picked per call by :mod:`scalegnn.ops.costmodel`; CUDA tensors (and other dtypes) go to
torch's sparse CSR kernels (``adj.torch_csr(device, dtype)``: int32 indices, shared with the
transpose, moved once per matrix with the forward's). The thread count is
``min(torch.get_num_threads(), numba.get_num_threads())``.
"""

from __future__ import annotations

import contextlib
import mmap
import sys
import time

import numba
import numpy as np
import torch

from scalegnn.errors import ConfigError, GraphError
from scalegnn.ops import _kernels as K
from scalegnn.ops import costmodel
from scalegnn.ops.adj import SparseAdj
from scalegnn.ops.route import on_host

KERNELS = ("auto", "rows", "features", "torch")
_NUMBA_DTYPES = (torch.float32, torch.float64)
_TIMER = None   # a dict while spmm_timer() is active (benchmarks split time into SpMM/GEMM/other)


@contextlib.contextmanager
def spmm_timer():
    """Accumulate wall time and calls of every SpMM (forward and backward) inside the block:
    yields a dict ``{"seconds": float, "calls": int}``."""
    global _TIMER
    prev, _TIMER = _TIMER, {"seconds": 0.0, "calls": 0}
    try:
        yield _TIMER
    finally:
        _TIMER = prev


def num_threads() -> int:
    """Threads the kernels use: the smaller of torch's and numba's settings."""
    return max(1, min(torch.get_num_threads(), numba.get_num_threads()))


def plan_for(adj: SparseAdj, f: int, dtype: torch.dtype, kernel: str = "auto"):
    """The cost model's :class:`~scalegnn.ops.costmodel.Plan` for ``adj @ x`` (x: n x f)."""
    itemsize = torch.empty((), dtype=dtype).element_size()
    force = None if kernel == "auto" else kernel
    return costmodel.plan_spmm(adj.num_rows, adj.num_cols, adj.nnz, f, itemsize,
                               num_threads(), force=force)


_HUGE = 2 << 20          # bytes per transparent huge page
HUGE_OUTPUT_BYTES = 32 << 20


def _empty_output(n: int, f: int, like: torch.Tensor) -> torch.Tensor:
    """An uninitialised (n, f) host output of ``like``'s dtype; from HUGE_OUTPUT_BYTES up in a
    2 MiB-aligned anonymous mapping advised MADV_HUGEPAGE (freed with the tensor).

    Outputs that large are fresh mmaps anyway (glibc's mmap threshold is at most 32 MiB), and
    the kernel's two threads faulting in 4 KiB pages cost more than the SpMM itself: n=8000,
    f=2048 (64 MB) took 60-65 ms per call with torch.empty vs ~30 ms into a reused buffer;
    allocating plus writing 64 MB measured 15 ms with torch.empty, 4.5 ms huge-page-backed.
    Where THP is off ('never') the advice is ignored and this costs what torch.empty does."""
    nbytes = n * f * like.element_size()
    if nbytes < HUGE_OUTPUT_BYTES or not hasattr(mmap, "MADV_HUGEPAGE"):
        return torch.empty((n, f), dtype=like.dtype)
    mm = mmap.mmap(-1, nbytes + _HUGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    try:
        mm.madvise(mmap.MADV_HUGEPAGE)
    except OSError:
        pass
    raw = np.frombuffer(mm, dtype=np.uint8)
    off = -raw.ctypes.data % _HUGE
    return torch.from_numpy(raw[off:off + nbytes].view(like.numpy().dtype).reshape(n, f))


@contextlib.contextmanager
def outputs_from_torch():
    """SpMM outputs from torch's allocator at every size while the block runs (the large ones
    are otherwise the private mappings of :func:`_empty_output`, which torch's profiler does
    not see): same bytes, for ``bench``'s tensor high-water mark."""
    global HUGE_OUTPUT_BYTES
    saved, HUGE_OUTPUT_BYTES = HUGE_OUTPUT_BYTES, sys.maxsize
    try:
        yield
    finally:
        HUGE_OUTPUT_BYTES = saved


def _row_bounds(adj: SparseAdj, p: int) -> np.ndarray:
    if p not in adj._bounds:
        # a row costs about as much as 2 edges (slice setup + store) - balance on both
        adj._bounds[p] = K.balanced_row_bounds(adj.indptr, p, 2)
    return adj._bounds[p]


def spmm_forward(adj: SparseAdj, x: torch.Tensor, kernel: str = "auto", plan=None) -> torch.Tensor:
    """``adj @ x`` without autograd; ``kernel`` in :data:`KERNELS` (tests and benchmarks
    force one; ``plan`` overrides the cost model's parameters)."""
    if _TIMER is None:
        return _forward(adj, x, kernel, plan)
    t0 = time.perf_counter()
    out = _forward(adj, x, kernel, plan)
    _TIMER["seconds"] += time.perf_counter() - t0
    _TIMER["calls"] += 1
    return out


def _forward(adj: SparseAdj, x: torch.Tensor, kernel: str, plan) -> torch.Tensor:
    if not on_host(x) or x.dtype not in _NUMBA_DTYPES or kernel == "torch":
        return torch.sparse.mm(adj.torch_csr(x.device, x.dtype), x)
    n, f = adj.num_rows, x.shape[1]
    if n == 0 or f == 0:
        return x.new_zeros((n, f))
    x = x.contiguous()
    out = _empty_output(n, f, x)                       # every element is written by the kernel
    xn, on = x.numpy(), out.numpy()
    data = adj.data_as(xn.dtype)
    plan = plan or plan_for(adj, f, x.dtype, kernel)
    if plan.kernel == "features":
        buf = (np.empty((plan.threads, xn.shape[0], min(plan.width, f)), dtype=xn.dtype)
               if plan.blocked else np.empty((0, 0, 0), dtype=xn.dtype))
        K.spmm_feature_blocks(adj.indptr, adj.indices, data, xn, on, plan.width, plan.q_f,
                              plan.threads, buf)
    elif plan.tile >= f and plan.prefetch == 0:
        K.spmm_rows_full(adj.indptr, adj.indices, data, xn, on, _row_bounds(adj, plan.threads))
    else:
        K.spmm_rows(adj.indptr, adj.indices, data, xn, on, _row_bounds(adj, plan.threads),
                    plan.tile, plan.prefetch)
    return out


class _SpMM(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, adj, kernel):
        ctx.adj = adj
        ctx.kernel = kernel
        return spmm_forward(adj, x, kernel)

    @staticmethod
    def backward(ctx, grad):
        if not ctx.needs_input_grad[0]:
            return None, None, None
        return spmm_forward(ctx.adj.t(), grad.contiguous(), ctx.kernel), None, None


def spmm(adj: SparseAdj, x: torch.Tensor, *, kernel: str = "auto") -> torch.Tensor:
    """``adj @ x`` for a (rows x cols) SparseAdj and a dense (cols x f) tensor, differentiable
    in ``x`` (backward: ``adj.t() @ grad``). ``kernel``: auto (cost model), rows, features,
    torch."""
    if kernel not in KERNELS:
        raise ConfigError(f"spmm: kernel must be one of {', '.join(KERNELS)}, got {kernel!r}")
    if x.dim() != 2 or x.shape[0] != adj.num_cols:
        raise GraphError(f"spmm: x has shape {tuple(x.shape)}, adjacency has {adj.num_cols} "
                         f"columns (x must be {adj.num_cols} x f)")
    if x.device.type != "cpu" and x.requires_grad and torch.is_grad_enabled():
        # the backward's operand moves now, with the forward's: a copy from pageable memory
        # first waits for every kernel queued on the device, and mid-backward that is the step
        adj.torch_csr(x.device, x.dtype)
        adj.t().torch_csr(x.device, x.dtype)
    return _SpMM.apply(x.contiguous(), adj, kernel)
