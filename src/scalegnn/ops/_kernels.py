"""numba kernels behind :mod:`scalegnn.ops` (SpMM ``out = Â·X`` over CSR, STREAM triad).

Pure functions over arrays; every kernel writes every element of ``out`` (so callers allocate
with ``empty``, never a separate zero pass). Deterministic: each output element is produced by
one thread, summing its row's edges in CSR order, whatever the thread count.

Two parallel SpMM kernels (the cost model in :mod:`scalegnn.ops.costmodel` picks per call):

* :func:`spmm_rows` - row-parallel: rows are split into nnz-balanced chunks (one per thread);
  each chunk is swept once per column tile ``[c0, c0+tile)`` so that X's column tile can stay
  in the shared cache when the whole X does not. :func:`spmm_rows_full` is its untiled,
  prefetch-free case (X in cache: every call during training), compiled on its own.
* :func:`spmm_feature_blocks` - the seeds' feature partitioning (SPEC §3): the f columns are
  cut into ``q_f`` blocks; thread ``t`` handles block ``r + t·q_f/p`` in round ``r`` (adjacent
  blocks never run at the same time, so threads never write the same cache line); each block
  sweeps the whole CSR, so X's column block stays in the thread's private cache.

Both accumulate one output row (slice) with the edges unrolled by four (:func:`_row_tile`,
:func:`_row_full`): the output is loaded/stored once per four neighbour rows instead of per
neighbour, and four independent X rows are streamed at once (more memory-level parallelism).
When X lives in DRAM (``npf > 0``) the first ``npf`` cache lines of the next four neighbour
rows are software-prefetched: the gathers are latency-bound, the hardware prefetcher only
follows a row after its first misses. The slow reference is :func:`spmm_reference`;
:func:`spmm_plain` is the plain row loop that ``bench spmm`` times as a calibration baseline.
"""

import numba as nb
import numpy as np
from llvmlite import ir
from llvmlite.binding import llvm_version_info
from numba.core import cgutils, types
from numba.extending import intrinsic

# Only flags that keep IEEE semantics for NaN/inf: 'contract' lets LLVM fuse a*x+y into FMA.
_FM = {"contract", "nsz"}
_JIT = dict(nogil=True, cache=True, fastmath=_FM, boundscheck=False)


# the intrinsic is overloaded on the pointer type: "p0" once LLVM pointers are opaque (17+)
_PREFETCH = "llvm.prefetch.p0" if tuple(llvm_version_info) >= (17,) else "llvm.prefetch.p0i8"


@intrinsic
def _prefetch(typingctx, arr, idx):
    """``llvm.prefetch`` (read, keep in all levels) of the address of ``arr[idx]``."""
    sig = types.void(arr, idx)

    def codegen(context, builder, signature, args):
        aty = signature.args[0]
        ary = context.make_array(aty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aty, ary, [args[1]], wraparound=False)
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, _PREFETCH)
        builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return sig, codegen


@nb.njit(inline="always", **_JIT)
def _prefetch_rows(indices, x, e0, e1, c0, c1, npf):
    """Prefetch the first ``npf`` lines of ``x[indices[e], c0:c1]`` for e in [e0, e1)."""
    step = max(64 // x.itemsize, 1)
    stop = min(npf * step, c1 - c0)
    for e in range(e0, e1):
        xr = x[indices[e], c0:c1]
        for c in range(0, stop, step):
            _prefetch(xr, c)


@nb.njit(inline="always", **_JIT)
def _row_tile(indptr, indices, data, x, s0, out, i, c0, c1, npf):
    """``out[i, c0:c1] = Σ_e data[e] · x[indices[e], s0:s0+(c1-c0)]`` over row i's edges
    (4-unrolled); ``s0`` is the slice's first column in ``x`` (c0, or 0 for a copied block).

    Elements are addressed by 2-D index, not through row-slice views: a numba slice costs a
    bounds normalisation per edge, which made 32-256-column rows 1.2-2x slower (measured
    n=8000, degree 15/45, 2 threads) - and narrow rows are the common case in training
    (hidden widths, raw features). With ``npf > 0`` also prefetches the neighbour rows of the
    next 4 edges (and, at the end of the row, the first 4 edges of row i+1)."""
    # unsigned column offsets: numba wraps every signed index for negative values (a select
    # per element that also blocks vectorisation); keep this arithmetic all-uint64 (numba turns
    # uint64 (+) int64 into float64)
    w = np.uint64(c1 - c0)
    o0 = np.uint64(c0)
    x0 = np.uint64(s0)
    a = indptr[i]
    b = indptr[i + 1]
    for c in range(w):
        out[i, o0 + c] = 0
    e = a
    while e + 4 <= b:
        if npf > 0:
            _prefetch_rows(indices, x, e + 4, min(e + 8, b), s0, s0 + (c1 - c0), npf)
        j0 = np.uint64(indices[e])
        j1 = np.uint64(indices[e + 1])
        j2 = np.uint64(indices[e + 2])
        j3 = np.uint64(indices[e + 3])
        v0 = data[e]
        v1 = data[e + 1]
        v2 = data[e + 2]
        v3 = data[e + 3]
        for c in range(w):
            out[i, o0 + c] += ((v0 * x[j0, x0 + c] + v1 * x[j1, x0 + c])
                               + (v2 * x[j2, x0 + c] + v3 * x[j3, x0 + c]))
        e += 4
    if npf > 0 and i + 1 < indptr.shape[0] - 1:
        _prefetch_rows(indices, x, b, min(b + 4, indptr[i + 2]), s0, s0 + (c1 - c0), npf)
    while e < b:
        j0 = np.uint64(indices[e])
        v0 = data[e]
        for c in range(w):
            out[i, o0 + c] += v0 * x[j0, x0 + c]
        e += 1


@nb.njit(inline="always", **_JIT)
def _row_full(indptr, indices, data, x, out, i):
    """``out[i] = Σ_e data[e] · x[indices[e]]``: :func:`_row_tile` for whole rows with no
    prefetch; all column indices run from 0, which LLVM proves non-negative (no wrap select)."""
    f = x.shape[1]
    a = indptr[i]
    b = indptr[i + 1]
    for c in range(f):
        out[i, c] = 0
    e = a
    while e + 4 <= b:
        j0 = indices[e]
        j1 = indices[e + 1]
        j2 = indices[e + 2]
        j3 = indices[e + 3]
        v0 = data[e]
        v1 = data[e + 1]
        v2 = data[e + 2]
        v3 = data[e + 3]
        for c in range(f):
            out[i, c] += (v0 * x[j0, c] + v1 * x[j1, c]) + (v2 * x[j2, c] + v3 * x[j3, c])
        e += 4
    while e < b:
        j0 = indices[e]
        v0 = data[e]
        for c in range(f):
            out[i, c] += v0 * x[j0, c]
        e += 1


@nb.njit(parallel=True, **_JIT)
def spmm_rows(indptr, indices, data, x, out, bounds, tile, npf):
    """Row-parallel ``out = A·x``: chunk k covers rows ``bounds[k]:bounds[k+1]``; columns are
    processed in tiles of width ``tile`` (``tile >= f`` means untiled); ``npf`` lines of each
    upcoming neighbour row are prefetched (0: none)."""
    f = x.shape[1]
    tile = max(tile, 1)
    for k in nb.prange(bounds.shape[0] - 1):
        for c0 in range(0, f, tile):
            c1 = min(c0 + tile, f)
            for i in range(bounds[k], bounds[k + 1]):
                _row_tile(indptr, indices, data, x, c0, out, i, c0, c1, npf)


@nb.njit(parallel=True, **_JIT)
def spmm_rows_full(indptr, indices, data, x, out, bounds):
    """:func:`spmm_rows` for an untiled call without prefetch (the common case: X in cache):
    a kernel of its own, since sharing one with the tiled path cost 10-20% (measured)."""
    for k in nb.prange(bounds.shape[0] - 1):
        for i in range(bounds[k], bounds[k + 1]):
            _row_full(indptr, indices, data, x, out, i)


@nb.njit(parallel=True, **_JIT)
def spmm_feature_blocks(indptr, indices, data, x, out, width, q_f, p, buf):
    """Feature-partitioned ``out = A·x``: ``q_f`` column blocks of ``width`` columns
    (``q_f`` a multiple of ``p``); thread t runs block ``r + t·(q_f/p)`` in round r.

    With ``buf`` of shape (p, n_cols, width) each thread first copies its block of X into
    ``buf[t]`` (the seeds' column-blocked layout: the block is contiguous, so every fetched
    line is used); with an empty ``buf`` (shape (0, 0, 0)) it gathers from X in place."""
    n = indptr.shape[0] - 1
    f = x.shape[1]
    per = q_f // p
    blocked = buf.shape[0] >= p
    for t in nb.prange(p):
        for r in range(per):
            c0 = (r + t * per) * width
            c1 = min(c0 + width, f)
            if c0 >= c1:
                continue
            if blocked:
                src = buf[t]
                for j in range(x.shape[0]):
                    for c in range(c1 - c0):
                        src[j, c] = x[j, c0 + c]
                for i in range(n):
                    _row_tile(indptr, indices, data, src, 0, out, i, c0, c1, 0)
            else:
                for i in range(n):
                    _row_tile(indptr, indices, data, x, c0, out, i, c0, c1, 0)


@nb.njit(cache=True, nogil=True)
def balanced_row_bounds(indptr, parts, row_cost):
    """Split rows into ``parts`` contiguous chunks of about equal ``nnz + row_cost·rows``.

    Returns int64 ``bounds`` of length parts+1 (chunks may be empty on tiny matrices).
    """
    n = indptr.shape[0] - 1
    bounds = np.empty(parts + 1, dtype=np.int64)
    bounds[0] = 0
    total = indptr[n] + row_cost * n
    i = 0
    for k in range(1, parts):
        target = total * k / parts
        while i < n and indptr[i] + row_cost * i < target:
            i += 1
        bounds[k] = i
    bounds[parts] = n
    return bounds


@nb.njit(parallel=True, cache=True, nogil=True, boundscheck=False)
def triad(a, b, c, s):
    """STREAM triad ``a = b + s·c`` (parallel), for the memory-bandwidth measurement."""
    for i in nb.prange(a.shape[0]):
        a[i] = b[i] + s * c[i]


@nb.njit(parallel=True, **_JIT)
def spmm_plain(indptr, indices, data, x, out):
    """The plain row-parallel loop (prange over rows, one edge at a time, no unrolling, tiling
    or prefetch): the baseline issue targets are calibrated against, so ``bench spmm`` times it
    beside torch to show what a ratio vs torch means on the machine at hand."""
    for i in nb.prange(indptr.shape[0] - 1):
        for c in range(x.shape[1]):
            out[i, c] = 0
        for e in range(indptr[i], indptr[i + 1]):
            j = indices[e]
            v = data[e]
            for c in range(x.shape[1]):
                out[i, c] += v * x[j, c]


def spmm_reference(indptr, indices, data, x):
    """Slow, obviously correct ``A·x`` (float64 accumulation, one edge at a time); tests only."""
    n = len(indptr) - 1
    out = np.zeros((n, x.shape[1]), dtype=np.float64)
    for i in range(n):
        for e in range(indptr[i], indptr[i + 1]):
            out[i] += float(data[e]) * x[indices[e]].astype(np.float64)
    return out.astype(x.dtype)


# --------------------------------------------------------------------------- fused Adam update
# torch.optim.Adam's update of one parameter as one pass (torch: ~6 elementwise ops, each its
# own pass and, above torch's grain size, its own OpenMP region). Arithmetic in float64 (the
# scalars'), stored in the arrays' dtype: float64 parameters get torch's numbers to rounding,
# float32 ones a correctly rounded update (and no float32 denormal arithmetic in sqrt/div).

@nb.njit(**_JIT)
def _adam_range(p, g, m, v, lo, hi, step_size, b1, b2, bc2_sqrt, eps, wd):
    for i in range(lo, hi):
        gi = g[i] + wd * p[i] if wd != 0.0 else np.float64(g[i])
        mi = m[i] + (1.0 - b1) * (gi - m[i])
        vi = v[i] * b2 + (1.0 - b2) * gi * gi
        m[i] = mi
        v[i] = vi
        p[i] = p[i] - step_size * (m[i] / (np.sqrt(v[i]) / bc2_sqrt + eps))


@nb.njit(**_JIT)
def adam_update_serial(p, g, m, v, step_size, b1, b2, bc2_sqrt, eps, wd):
    """One Adam step on flat contiguous ``p`` with gradient ``g`` and moments ``m``, ``v``."""
    _adam_range(p, g, m, v, 0, p.shape[0], step_size, b1, b2, bc2_sqrt, eps, wd)


@nb.njit(parallel=True, **_JIT)
def adam_update(p, g, m, v, chunks, step_size, b1, b2, bc2_sqrt, eps, wd):
    """:func:`adam_update_serial` with element range ``[chunks[k], chunks[k+1])`` per task."""
    for k in nb.prange(chunks.shape[0] - 1):
        _adam_range(p, g, m, v, chunks[k], chunks[k + 1], step_size, b1, b2, bc2_sqrt, eps, wd)
