"""numba kernels that induce the sampled subgraphs, and the normalization counters.

The membership bitmap helpers (also used by the sampler kernels of ``_sample_kernels``),
``fill_induced`` (the induced CSRs of a group of subgraphs, parent edge ids, transpose
permutations and edge values, in one scan of the parent rows) and ``add_counts`` (the C_v /
C_e counts of SPEC §1.2).

Per-worker scratch, as in ``_sample_kernels``: ``bits[w]`` a |V|-bit membership bitmap (0
between uses; the fill clears exactly the words it set).
"""

import numba as nb
import numpy as np

from scalegnn.ops._kernels import _prefetch  # llvm.prefetch of &arr[idx]
from scalegnn.ops._simd import W, compress_block, popcount32

_JIT = dict(nogil=True, cache=True)


@nb.njit(**_JIT)
def _mark_bits(vs, k, bits, on):
    """Set (on=1) or clear (on=0) the membership bits of vs[:k]. The |V|-bit map fits in
    L1/L2, so the neighbour scans' lookups stay cheap; clearing whole words is exact since
    every bit set in them belongs to vs."""
    for j in range(k):
        v = vs[j]
        if on:
            bits[v >> 6] |= np.uint64(1) << np.uint64(v & 63)
        else:
            bits[v >> 6] = np.uint64(0)


@nb.njit(**_JIT)
def _member(bits, v):
    """Bit v of the bitmap, for an unsigned v (see ``_scan_range``)."""
    return (bits[v >> np.uint32(6)] >> np.uint64(v & np.uint32(63))) & np.uint64(1)


@nb.njit(inline="always", **_JIT)
def _scan_range(a, b):
    """range(a, b) over unsigned positions. numba wraps every signed index for negative
    values (a compare and select per access); unsigned loop variables and ids skip that and
    make the neighbour scans ~1.6x faster. Keep arithmetic on the result unsigned: numba
    turns uint64 (+) int64 into float64."""
    return range(np.uint64(a), np.uint64(b))


@nb.njit(inline="always", **_JIT)
def _prefetch_row(indptr, indices, vs, k, j, values):
    """Scans visit k scattered parent rows, each starting with two dependent cache misses
    (indptr[u], then indices[indptr[u]]): prefetch the row bounds 16 rows ahead and the row's
    first ``_PF_LINES`` cache lines 8 rows ahead so the misses of different rows overlap; of
    the row's edge values too when ``values`` is non-empty. A row is ~8 lines long on average
    (PPI budgets, kronecker:17:8), too short for the hardware's stream prefetcher to learn
    before it ends: 4 lines instead of the first one took the fill to 0.76-0.80x its CPU for
    the four samplers (AMD EPYC Zen 5; 2 lines 0.89-0.95x), 6 lines a further 0.92-0.95x (8
    lines 1.01-1.08x of 6); the first line alone had given 0.96-0.98x on Zen 4."""
    if j + _PF < k:
        _prefetch(indptr, vs[j + _PF])
    if j + _PF // 2 < k:
        u = vs[j + _PF // 2]
        a, end = indptr[u], indptr[u + 1]
        step = 64 // indices.itemsize   # entries a line
        for q in range(a, min(end, a + _PF_LINES * step), step):
            _prefetch(indices, q)
        if values.shape[0] > 0:
            for q in range(a, min(end, a + _PF_LINES * 16), 16):   # (float32)
                _prefetch(values, q)


_PF = 16
_PF_LINES = 6
NARROW_NODES = 1 << 16   # subgraphs below this many nodes: 16-bit bitmap words, int32 ranks


@nb.njit(**_JIT)
def _rank_words(bits, rank_words):
    """rank_words[w] = (members in the bitmap words before word w, a prefix sum of popcounts)
    << B | bitmap word w, B the width of ``bits``' words: a member test and a local id from
    one load. 32-bit words into int64 ones, or, for subgraphs of < 2^16 nodes, 16-bit words
    into int32 ones (16-bit counts), so that a 16-entry block takes one 16-lane gather instead
    of two 8-lane ones (0.87-0.91x the fill's CPU for the four samplers on Zen 4)."""
    width = np.int64(8 * bits.itemsize)
    acc = np.int64(0)
    for w in range(bits.shape[0]):
        b = np.uint32(bits[w])
        rank_words[w] = (acc << width) | np.int64(b)
        acc += np.int64(popcount32(b))


@nb.njit(inline="always", **_JIT)
def _local_id(rank_words, v):
    """The local id of member v: members before v's word + set bits below v in it."""
    r = rank_words[v >> np.uint32(5)]
    below = (np.uint32(1) << (v & np.uint32(31))) - np.uint32(1)
    return (np.int32(r >> np.int64(32))
            + np.int32(popcount32(np.uint32(r & np.int64(0xFFFFFFFF)) & below)))


@nb.njit(inline="always", **_JIT)
def _row_blocks(indices, e0, end, rank_words, out_indices, out_eids, out_data, edge_values, su,
                p, room, mode, limit):
    """Parent entries [e0, end) of one row through ``_simd.compress_block`` (``mode`` an int
    literal), in chunks of <= 16, each with room checked first; a row's last < 16 read with
    one plain load where 16 entries from there lie below ``limit`` (the arrays' length),
    else masked. Long rows are prefetched 6 blocks ahead of the scan, past the lines
    :func:`_prefetch_row` fetched (0.91-0.94x the fill's CPU, Zen 5). Returns (p, e0): e0 < end
    when the room ran out."""
    while e0 < end and p <= room:
        n = min(end - e0, np.uint64(W))
        if e0 + np.uint64(_PF_LINES * W) < end:
            _prefetch(indices, e0 + np.uint64(_PF_LINES * W))
            if mode == 2:
                _prefetch(edge_values, e0 + np.uint64(_PF_LINES * W))
        if e0 + np.uint64(W) <= limit:
            p += np.uint64(compress_block(indices, e0, np.int64(n), rank_words, out_indices,
                                          out_eids, out_data, edge_values, su, p, mode, 1))
        else:
            p += np.uint64(compress_block(indices, e0, np.int64(n), rank_words, out_indices,
                                          out_eids, out_data, edge_values, su, p, mode, 0))
        e0 += n
    return p, e0


@nb.njit(inline="always", **_JIT)
def _vector_row(indices, e0, end, rank_words, out_indices, out_eids, out_data, edge_values, su,
                p, room, has_data, has_val, limit):
    """:func:`_row_blocks` with the values written picked once per row (a block's mode is a
    compile-time literal; picked per block, the choice cost two loads and two branches in every
    block)."""
    if has_data and has_val:
        return _row_blocks(indices, e0, end, rank_words, out_indices, out_eids, out_data,
                           edge_values, su, p, room, 2, limit)
    if has_data:
        return _row_blocks(indices, e0, end, rank_words, out_indices, out_eids, out_data,
                           edge_values, su, p, room, 1, limit)
    return _row_blocks(indices, e0, end, rank_words, out_indices, out_eids, out_data,
                       edge_values, su, p, room, 0, limit)


@nb.njit(parallel=True, **_JIT)
def fill_induced(indptr, indices, nodes_buf, nv, node_off, seg_start, seg_end, bits,
                 edge_values, row_scale, inv_degree, out_nodes, out_indptr, out_indices,
                 out_eids, out_perm, out_data, edge_off, ne, overflow, vector):
    """Induced CSRs of a group of subgraphs, into flat arrays, in one scan of each sampled
    node's parent row (no counting pass: the rows' lengths come out of the scan).

    Worker w takes subgraphs w, w + W, ... and writes their edges one after another, each
    followed by one padding slot, into its own segment ``[seg_start[w], seg_end[w])`` of the
    edge arrays; ``edge_off[i]`` / ``ne[i]`` record where subgraph i's edges went and how many.
    Rows are scanned in chunks of 16 entries, each checked first for room (17 slots: a chunk
    keeps at most 16 entries, plus one stray store); a worker out of room stops, sets
    ``overflow[w]`` to the slots it had filled + 1 (never 0) and leaves its scratch maps
    clean, so the caller can grow the segment and run the group again. (Checking for a whole
    parent row instead would ask a hub's degree in room: at 2^24 nodes a frontier subgraph
    scans ~25x more entries than it keeps.) Nodes (``out_nodes[node_off[i]:]``) and row
    pointers (k + 1 entries at
    ``out_indptr[node_off[i] + i:]``) have exact offsets, known from ``nv``.

    Each local row is the parent row of vs[j] filtered by membership (the |V|-bit map): with
    ``vector`` 16 entries at a time by AVX-512 compressed stores (``_simd.compress_block``; a
    row's last short chunk with its tail lanes masked off), without it by a branch-free loop
    that stores every scanned entry at the row's cursor and advances it only on a hit (the
    stray store after a row's last hit lands on the next row's first slot, rewritten next, or
    on the padding slot). A kept entry's local id is its rank among the members: the members
    in the bitmap words before v's (a prefix count made per subgraph) + the set bits below v
    in its word. Both halves sit in one int64 per word, ``rank_words[v >> 5]`` (prefix count
    << 32 | bitmap word: |V|/32 words, 32 KiB at 2^17 nodes), so a block's membership test
    and local ids take one gather (with ``vector``, for groups whose subgraphs have < 2^16
    nodes, 16-bit words and counts in one int32, ``_rank_words``: one 16-lane gather instead
    of two 8-lane ones). A |V|-entry id map did this before: 512 KiB at 2^17
    nodes, 64 MiB at 2^24 (a cache miss per kept entry there), written and reset per
    subgraph. Rows come out sorted since parent rows
    are. Parent edge id = scan position. If out_data is non-empty, value =
    edge_values[parent id] (1 if empty) * row_scale[row] (1 if empty, or 1/deg(row) in the
    parent graph if ``inv_degree``: no |V|-float table), the row scale gathered once per row.
    Then the transpose permutation by journal Alg. 6 for a symmetric pattern: rows in order,
    entry (j, l) -> next free slot of row l (a scalar loop; see ``_simd`` for the vector one
    dropped). Parent edge ids and the permutation may be int32.
    """
    count = nv.shape[0]
    nw = bits.shape[0]
    has_val = edge_values.shape[0] > 0
    has_scale = row_scale.shape[0] > 0
    has_data = out_data.shape[0] > 0
    narrow = vector and nodes_buf.shape[1] < NARROW_NODES   # every subgraph of the group
    limit = np.uint64(indices.shape[0])   # plain 16-entry loads below it (_row_blocks)
    if has_val and has_data:
        limit = min(limit, np.uint64(edge_values.shape[0]))
    for w in nb.prange(nw):
        bt = bits[w]
        bt32 = bt.view(np.uint32)
        bt16 = bt.view(np.uint16)
        rank_words = np.empty(0 if narrow else bt32.shape[0], dtype=np.int64)
        rank16 = np.empty(bt16.shape[0] if narrow else 0, dtype=np.int32)
        cursor = np.empty(nodes_buf.shape[1], dtype=out_perm.dtype)
        eo = seg_start[w]
        end_w = seg_end[w]
        overflow[w] = 0
        for i in range(w, count, nw):
            k = nv[i]
            vs = nodes_buf[i]
            no = node_off[i]
            ip = out_indptr[no + i:no + i + k + 1]
            ip[0] = 0
            out_nodes[no:no + k] = vs[:k]   # (an index loop here became a vector scatter)
            _mark_bits(vs, k, bt, np.uint64(1))
            if narrow:
                _rank_words(bt16, rank16)
            else:
                _rank_words(bt32, rank_words)
            p = np.uint64(eo)
            room = np.uint64(end_w) - np.uint64(W + 1)   # a chunk writes <= 16 + 1 stray
            for j in range(k):
                u = vs[j]
                _prefetch_row(indptr, indices, vs, k, j, edge_values)
                su = np.float32(1.0)
                if has_scale:
                    su = row_scale[u]
                elif inv_degree and indptr[u + 1] > indptr[u]:
                    su = np.float32(1.0 / (indptr[u + 1] - indptr[u]))
                e0 = np.uint64(indptr[u])
                end = np.uint64(indptr[u + 1])
                if vector:   # compressed (_simd), in chunks of <= 16 with room checked first
                    if narrow:
                        p, e0 = _vector_row(indices, e0, end, rank16, out_indices, out_eids,
                                            out_data, edge_values, su, p, room, has_data,
                                            has_val, limit)
                    else:
                        p, e0 = _vector_row(indices, e0, end, rank_words, out_indices,
                                            out_eids, out_data, edge_values, su, p, room,
                                            has_data, has_val, limit)
                    if e0 < end:
                        overflow[w] = 1
                else:   # chunks of <= 16 entries, each with room checked first
                    while e0 < end:
                        if p > room:
                            overflow[w] = 1
                            break
                        e1 = min(e0 + np.uint64(W), end)
                        for e in _scan_range(e0, e1):
                            v = np.uint32(indices[e])
                            hit = _member(bt, v)
                            out_indices[p] = _local_id(rank_words, v)   # junk on a miss
                            out_eids[p] = e
                            if has_data:
                                out_data[p] = (edge_values[e] if has_val else np.float32(1.0)) * su
                            p += hit
                        e0 = e1
                if overflow[w]:
                    break
                ip[j + 1] = np.int64(p) - eo
            _mark_bits(vs, k, bt, np.uint64(0))
            if overflow[w]:
                overflow[w] = np.int64(p) - seg_start[w] + 1   # > 0: slots used, + 1
                break
            edge_off[i] = eo
            ne[i] = ip[k]
            for j in range(k):
                cursor[j] = ip[j]
            for q in _scan_range(eo, eo + ip[k]):   # the transpose (Alg. 6)
                loc = np.uint32(out_indices[q])
                out_perm[q] = cursor[loc]
                cursor[loc] += 1
            eo += ip[k] + 1


# ------------------------------------------------------------------ normalization counters
@nb.njit(**_JIT)
def add_counts(counts, ids):
    """counts[ids[j]] += 1 for every j (C_v / C_e accumulation, SPEC §1.2)."""
    for j in range(ids.shape[0]):
        counts[ids[j]] += 1
