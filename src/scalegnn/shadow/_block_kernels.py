"""numba kernels that assemble the extractors' scopes into a block-diagonal batch: pairwise
unions of scopes (link prediction), each block's induced CSR, and stack rows of given nodes.

Execution model: a call handles B blocks; ``prange`` runs ``nw`` workers, worker ``w`` takes
blocks ``w, w+nw, ...`` with its own scratch (a hash table of ``_hash_table_kernels`` holding
the block's node ids, cleared after each block). On graphs up to 2^21 nodes the induction is
one pass with a |V|-long map of stack rows a worker instead (``induced_marked``: no hashing and
no count pass; 2.5x less CPU per PPR top-32 block on Facebook), its rows scanned 16 entries at a
time with AVX-512 (``_simd.mark_block``) where the host has it.
"""

import numba as nb
import numpy as np

from scalegnn.ops._kernels import _prefetch
from scalegnn.ops._simd import W, mark_block
from scalegnn.shadow._hash_table_kernels import _slot

_JIT = {"nogil": True, "cache": True}


@nb.njit(parallel=True, **_JIT)
def union_blocks(src, a_start, a_len, b_start, b_len, out, out_off, sizes, nw):
    """Block i = sorted unique union of src[a_start[i]:][:a_len[i]] and src[b_start[i]:]
    [:b_len[i]] (either may be unsorted), into out[out_off[i]:]; its size into sizes[i].
    Both parts are copied into place, sorted there and deduplicated there (no array made per
    block: ``np.unique`` of a concatenation cost 2.6x the CPU on PPR top-32 scopes)."""
    for w in nb.prange(nw):
        for i in range(w, a_len.shape[0], nw):
            o = out_off[i]
            la = a_len[i]
            out[o:o + la] = src[a_start[i]:a_start[i] + la]
            out[o + la:o + la + b_len[i]] = src[b_start[i]:b_start[i] + b_len[i]]
            seg = out[o:o + la + b_len[i]]
            seg.sort()
            m = 0
            for x in range(seg.shape[0]):
                if m == 0 or seg[x] != seg[m - 1]:
                    seg[m] = seg[x]
                    m += 1
            sizes[i] = m


@nb.njit(**_JIT)
def block_bounds(indptr, nodes, offsets, pad):
    """bound[i] = the degrees of the nodes of blocks 0..i-1 plus ``pad`` slots a block
    (bound[0] = 0): block i's slice of :func:`induced_marked`'s scratch."""
    bound = np.empty(offsets.shape[0], dtype=np.int64)
    bound[0] = 0
    acc = 0
    for i in range(offsets.shape[0] - 1):
        for j in range(offsets[i], offsets[i + 1]):
            acc += indptr[nodes[j] + 1] - indptr[nodes[j]]
        acc += pad
        bound[i + 1] = acc
    return bound


@nb.njit(**_JIT)
def compact_blocks(tmp, bound, rowlen, offsets):
    """(indptr, indices int64) of the rows :func:`induced_marked` left in tmp[bound[i]:],
    block by block: indptr = cumulative ``rowlen``, the blocks' rows moved back to back."""
    n = rowlen.shape[0]
    indptr = np.empty(n + 1, dtype=np.int64)
    indptr[0] = 0
    for j in range(n):
        indptr[j + 1] = indptr[j] + rowlen[j]
    indices = np.empty(indptr[n], dtype=np.int64)
    for i in range(offsets.shape[0] - 1):
        a = indptr[offsets[i]]
        b = indptr[offsets[i + 1]]
        indices[a:b] = tmp[bound[i]:bound[i] + b - a]
    return indptr, indices


@nb.njit(**_JIT)
def block_rows(nodes, offsets, keys):
    """Stack row of keys[i] inside block i (binary search; -1 when absent)."""
    out = np.empty(keys.shape[0], dtype=np.int64)
    for i in range(keys.shape[0]):
        a = offsets[i]
        j = a + np.searchsorted(nodes[a:offsets[i + 1]], keys[i])
        out[i] = j if j < offsets[i + 1] and nodes[j] == keys[i] else -1
    return out


@nb.njit(inline="always", **_JIT)
def _prefetch_ahead(indptr, indices, nodes, j, stop):
    """Rows of scattered parent nodes: prefetch indptr 16 rows ahead, row starts 8 ahead."""
    if j + 16 < stop:
        _prefetch(indptr, nodes[j + 16])
    if j + 8 < stop:
        _prefetch(indices, indptr[nodes[j + 8]])


@nb.njit(**_JIT)
def _hub_row(indices, e0, e1, nodes, a, sz, out, p, write):
    """Row much longer than the block: binary-search each block node in the sorted row."""
    row = indices[e0:e1]
    for x in range(sz):
        e = np.searchsorted(row, nodes[a + x])
        if e < e1 - e0 and row[e] == nodes[a + x]:
            if write:
                out[p] = a + x
            p += 1
    return p


@nb.njit(**_JIT)
def _block(indptr, indices, nodes, a, sz, keys, vals, shift, rowlen, out_indptr, out_indices):
    """Count (rowlen non-empty) or fill the rows of the block nodes[a:a+sz], whose ids are
    in the table keys/vals (vals = stack row). Misses are counted and written branch-free:
    every scanned entry is stored at the row's cursor, which advances only on a hit; the
    stray stores land on later rows of the same block (rewritten when those are filled), so
    a row whose end is the block's end takes the branchy loop."""
    fill = rowlen.shape[0] == 0
    stop = a + sz
    for j in range(a, stop):
        _prefetch_ahead(indptr, indices, nodes, j, stop)
        e0 = indptr[nodes[j]]
        e1 = indptr[nodes[j] + 1]
        p = out_indptr[j] if fill else 0
        if e1 - e0 > 64 * sz:    # binary searches beat scanning such a row
            p = _hub_row(indices, e0, e1, nodes, a, sz, out_indices, p, fill)
        elif not fill:
            for e in range(e0, e1):
                v = indices[e]
                p += keys[_slot(keys, v, shift)] == v
        elif out_indptr[j + 1] < out_indptr[stop]:
            for e in range(e0, e1):
                v = indices[e]
                s = _slot(keys, v, shift)
                out_indices[p] = vals[s]
                p += keys[s] == v
        else:
            for e in range(e0, e1):
                v = indices[e]
                s = _slot(keys, v, shift)
                if keys[s] == v:
                    out_indices[p] = vals[s]
                    p += 1
        if not fill:
            rowlen[j] = p


@nb.njit(inline="always", **_JIT)
def _block_cap(sz):
    """(slots, shift) of a block's table: 16x its size up to 1024 nodes (then 4x), so that
    nearly every probe ends at its first slot (measured: 2x faster than 4x on PPR blocks)."""
    c = 32
    shift = 59
    while c < (16 if sz <= 1024 else 4) * sz:
        c *= 2
        shift -= 1
    return c, shift


@nb.njit(**_JIT)
def _induced_worker(indptr, indices, offsets, nodes, rowlen, out_indptr, out_indices, w, nw):
    """Count or fill one worker's blocks; a block's ids go into a table (keys of the
    parent's id dtype, values = stack rows) cleared after the block."""
    nblk = offsets.shape[0] - 1
    big = 8
    for i in range(w, nblk, nw):
        big = max(big, offsets[i + 1] - offsets[i])
    cap, _ = _block_cap(big)
    keys_all = np.full(cap, -1, dtype=indices.dtype)
    vals_all = np.empty(cap, dtype=np.int64)
    for i in range(w, nblk, nw):
        a = offsets[i]
        sz = offsets[i + 1] - a
        c, shift = _block_cap(sz)
        for j in range(sz):
            s = _slot(keys_all[:c], nodes[a + j], shift)
            keys_all[s] = nodes[a + j]
            vals_all[s] = a + j
        _block(indptr, indices, nodes, a, sz, keys_all[:c], vals_all, shift, rowlen,
               out_indptr, out_indices)
        keys_all[:c] = -1


@nb.njit(parallel=True, **_JIT)
def induced(indptr, indices, offsets, nodes, rowlen, out_indptr, out_indices, nw):
    """Block-diagonal CSR of the subgraphs induced by each block's node list (sorted per
    block; parent rows sorted). Count call (``rowlen`` non-empty, the others unused):
    rowlen[r] = in-block degree of row r. Fill call (``rowlen`` empty): row r of
    out_indptr/out_indices = stack rows of its in-block neighbours, ascending. One kernel
    for both: each parallel kernel costs seconds of compilation."""
    for w in nb.prange(nw):
        _induced_worker(indptr, indices, offsets, nodes, rowlen, out_indptr, out_indices, w, nw)


@nb.njit(**_JIT)
def _marked_worker(indptr, indices, offsets, nodes, bound, tmp, rowlen, mark, w, nw, vector):
    """One pass over one worker's blocks with a direct map of the graph's nodes (mark[v] =
    stack row of v in the current block, -1 outside it; all -1 on entry and restored on exit,
    so the caller keeps it between calls): row j's in-block neighbours go to tmp[bound[i]:]
    block by block (misses stored and overwritten, as in :func:`_block`; ``vector``: 16
    entries at a time, :func:`mark_block`), rowlen[j] = their count. Hub rows (> 64x the
    block) binary-search the block instead."""
    for i in range(w, offsets.shape[0] - 1, nw):
        a = offsets[i]
        stop = offsets[i + 1]
        for j in range(a, stop):
            mark[nodes[j]] = j
        p = bound[i]
        for j in range(a, stop):
            _prefetch_ahead(indptr, indices, nodes, j, stop)
            e0 = indptr[nodes[j]]
            e1 = indptr[nodes[j] + 1]
            p0 = p
            if e1 - e0 > 64 * (stop - a):
                p = _hub_row(indices, e0, e1, nodes, a, stop - a, tmp, p, True)
            elif vector:
                for e in range(e0, e1, W):
                    p += mark_block(indices, e, min(W, e1 - e), mark, tmp, p)
            else:
                for e in range(e0, e1):
                    r = mark[indices[e]]
                    tmp[p] = r
                    p += r >= 0
            rowlen[j] = p - p0
        for j in range(a, stop):
            mark[nodes[j]] = -1


@nb.njit(parallel=True, **_JIT)
def induced_marked(indptr, indices, offsets, nodes, bound, tmp, rowlen, marks, nw, vector):
    """Block-diagonal induced CSR in one pass (:func:`_marked_worker`; scratch: ``marks``, one
    |V|-long int32 map a worker, all -1, left all -1): block i's rows fill
    tmp[bound[i]:bound[i+1]] (int32; bound: cumulative degree sums of the blocks' nodes plus
    ``W`` slots per block, the room of the last 16-lane store), rows back to back; rowlen as
    the count call of :func:`induced` gives it. ``vector``: ``_simd.VECTOR_FILL``, an argument
    so that tests run both paths."""
    for w in nb.prange(nw):
        _marked_worker(indptr, indices, offsets, nodes, bound, tmp, rowlen, marks[w], w, nw,
                       vector)
