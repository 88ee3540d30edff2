"""numba kernels of the shaDow-GNN extractors (SPEC §4). The only numba code in shadow/.

Execution model: a call handles B targets (or blocks); ``prange`` runs ``nw`` workers, worker
``w`` takes items ``w, w+nw, ...`` with its own scratch. Target ``i`` reseeds numba's
(per-thread) generator with ``seeds[i]`` before its first draw, so its content does not depend
on the worker or thread count; PPR pushes draw nothing and are deterministic.

Scratch memory is O(touched nodes), never O(|V|) per block: membership uses open-addressing
tables of node ids (``-1`` = empty slot), Fibonacci-hashed with linear probing, grown by
doubling at half load; once a table would reach |V| entries (or |V| <= ``DENSE``) it becomes
a direct map (slot = node id, no probing). A table is cleared by looking its keys up again in
REVERSE insertion order: removing the last-inserted key restores the table to its state before
that insertion, so no probe chain of an earlier key is broken.
"""

import numba as nb
import numpy as np

from scalegnn.ops._kernels import _prefetch
from scalegnn.sampling._random_kernels import _randint

_JIT = dict(nogil=True, cache=True)
_GOLD = np.uint64(0x9E3779B97F4A7C15)
DENSE = 1 << 16        # graphs up to this many nodes get direct-map tables from the start
_SMALL_PICK = 64       # Floyd's draws checked by linear scan up to this budget, else by hash


# ------------------------------------------------------------------ hash tables
@nb.njit(inline="always", **_JIT)
def _slot(keys, v, shift):
    """Slot holding key ``v`` or the empty slot where it goes. ``shift < 0``: direct map.
    The loop test is one bitwise condition: short-circuit ``or`` compiled to a branch on
    hit-or-not, mispredicted on every third scanned neighbour (1.6x slower induction)."""
    if shift < 0:
        return v
    mask = keys.shape[0] - 1
    h = np.int64((np.uint64(v) * _GOLD) >> np.uint64(shift))
    while (keys[h] != v) & (keys[h] != -1):
        h = (h + 1) & mask
    return h


@nb.njit(**_JIT)
def _new_table(count, n):
    """Empty table for ``count`` keys among ``n`` nodes: (keys, shift)."""
    cap = 256
    bits = 8
    while cap < 2 * count:
        cap *= 2
        bits += 1
    if cap >= n or n <= DENSE:
        return np.full(n, -1, dtype=np.int64), -1
    return np.full(cap, -1, dtype=np.int64), 64 - bits


@nb.njit(inline="always", **_JIT)
def _fits(keys, shift, count):
    """True when a table can hold ``count`` keys (hashed tables stay at most half full; the
    callers keep the list and queue arrays as long as the table, so they never overflow)."""
    return shift < 0 or 2 * count <= keys.shape[0]


@nb.njit(**_JIT)
def _regrow(keys, shift, lst, count, need, n):
    """A table for ``need`` keys holding ``lst[:count]``, a list array as long as it, and
    ``moved[j]`` = (old slot, new slot) of lst[j]."""
    nk, ns = _new_table(need, n)
    nl = np.empty(nk.shape[0], dtype=np.int64)
    nl[:count] = lst[:count]
    moved = np.empty((count, 2), dtype=np.int64)
    for j in range(count):
        s = _slot(nk, lst[j], ns)
        nk[s] = lst[j]
        moved[j, 0] = _slot(keys, lst[j], shift)
        moved[j, 1] = s
    return nk, ns, nl, moved


@nb.njit(**_JIT)
def _clear(keys, shift, lst, count):
    for j in range(count - 1, -1, -1):
        keys[_slot(keys, lst[j], shift)] = -1


# The hot loops (_expand, _push_all) get their arrays as arguments and never reassign them:
# an array variable reassigned inside a loop (to grow it) made numba's code 4-10x slower
# (reference counting and reloads of the array structs on every iteration; measured on PPR).
# Tables therefore grow only between calls, sized for the work the next call can do.


# ------------------------------------------------------------------ k-hop scopes
@nb.njit(**_JIT)
def _pick(d, b, pick, pkeys):
    """b distinct positions uniform in [0, d) into pick[:b] (Floyd's algorithm: for j in
    d-b..d-1 draw t in [0, j]; take t, or j if t was taken). Draws checked by linear scan
    for small b, else in the table pkeys (2b <= len, power of two)."""
    if b <= _SMALL_PICK:
        for m in range(b):
            j = d - b + m
            t = _randint(j + 1)
            for q in range(m):
                if pick[q] == t:
                    t = j
                    break
            pick[m] = t
        return
    shift = 64
    c = pkeys.shape[0]
    while c > 1:
        c //= 2
        shift -= 1
    for m in range(b):
        j = d - b + m
        t = _randint(j + 1)
        if pkeys[_slot(pkeys, t, shift)] == t:
            t = j
        pkeys[_slot(pkeys, t, shift)] = t
        pick[m] = t
    _clear(pkeys, shift, pick, b)


@nb.njit(**_JIT)
def _expand(indices, a, d, take, pick, keys, shift, lst, cnt):
    """Add row u = indices[a:a+d]'s drawn neighbours (all if take == d) not yet in the
    table to it and to lst; returns the new count."""
    for m in range(take):
        v = indices[a + (m if take == d else pick[m])]
        s = _slot(keys, v, shift)
        if keys[s] != v:
            keys[s] = v
            lst[cnt] = v
            cnt += 1
    return cnt


@nb.njit(**_JIT)
def _khop_worker(indptr, indices, targets, seeds, depth, budget, out, off, sizes, w, nw):
    n = indptr.shape[0] - 1
    keys, shift = _new_table(64, n)
    lst = np.empty(keys.shape[0], dtype=np.int64)
    bb = max(budget, 1)
    pick = np.empty(bb, dtype=np.int64)
    pc = 1
    while pc < 2 * bb:
        pc *= 2
    pkeys = np.full(pc if budget > _SMALL_PICK else 1, -1, dtype=np.int64)
    for i in range(w, targets.shape[0], nw):
        np.random.seed(seeds[i])
        t = targets[i]
        keys[_slot(keys, t, shift)] = t
        lst[0] = t
        cnt = 1
        f0 = 0
        f1 = 1
        for _h in range(depth):
            for j in range(f0, f1):
                u = lst[j]
                a = indptr[u]
                d = indptr[u + 1] - a
                take = d if budget < 0 or d <= budget else budget
                if take < d:
                    _pick(d, take, pick, pkeys)
                if not _fits(keys, shift, cnt + take):
                    keys, shift, lst, _ = _regrow(keys, shift, lst, cnt, cnt + take, n)
                cnt = _expand(indices, a, d, take, pick, keys, shift, lst, cnt)
            f0 = f1
            f1 = cnt
            if f0 == f1:
                break
        _clear(keys, shift, lst, cnt)
        sizes[i] = cnt
        if out.shape[0] > 0:
            seg = out[off[i]:off[i] + cnt]
            seg[:] = lst[:cnt]
            seg.sort()


@nb.njit(parallel=True, **_JIT)
def khop_scopes(indptr, indices, targets, seeds, depth, budget, out, off, sizes, nw):
    """Scope of each target: hop 0 = {t}; hop h+1 = for each node u of hop h (in discovery
    order) min(budget, deg u) of its neighbours uniform without replacement (all if budget
    < 0), those not yet in the scope. sizes[i] = |scope|; if ``out`` is non-empty the sorted
    scope goes to out[off[i]:off[i]+sizes[i]] (a second call with the same seeds reproduces
    the first exactly, so a count call can size the fill call)."""
    for w in nb.prange(nw):
        _khop_worker(indptr, indices, targets, seeds, depth, budget, out, off, sizes, w, nw)


# ------------------------------------------------------------------ PPR push
@nb.njit(**_JIT)
def _push_all(indptr, indices, alpha, eps, keys, shift, pv, rv, inq, tl, cnt, q, qh, qn):
    """Run FIFO pushes until the queue (ring q[qh:qh+qn], node ids) is empty, or until the
    next push might overfill a hashed table: returns (cnt, qh, qn, needed capacity or 0)."""
    ring = q.shape[0]
    while qn > 0:
        u = q[qh]
        a = indptr[u]
        b = indptr[u + 1]
        if not _fits(keys, shift, cnt + b - a):
            return cnt, qh, qn, cnt + b - a
        qh = qh + 1 if qh + 1 < ring else 0
        qn -= 1
        s = _slot(keys, u, shift)
        inq[s] = False
        ru = rv[s]
        rv[s] = 0.0
        pv[s] += alpha * ru
        if b == a:
            continue
        share = (1.0 - alpha) * ru / (b - a)
        for e in range(a, b):
            v = indices[e]
            s = _slot(keys, v, shift)
            if keys[s] != v:
                keys[s] = v
                pv[s] = 0.0
                rv[s] = 0.0
                inq[s] = False
                tl[cnt] = v
                cnt += 1
            rv[s] += share
            if not inq[s] and rv[s] > eps * (indptr[v + 1] - indptr[v]):
                inq[s] = True
                j = qh + qn
                q[j if j < ring else j - ring] = v
                qn += 1
    return cnt, qh, qn, 0


@nb.njit(inline="always", **_JIT)
def _worse(s1, v1, s2, v2):
    """(s1, v1) ranks below (s2, v2) in the order (score desc, id asc)."""
    return s1 < s2 or (s1 == s2 and v1 > v2)


@nb.njit(**_JIT)
def _sift(hs, hv, i, m):
    """Restore the heap hs/hv[:m] below i; the root holds the WORST kept entry."""
    while 2 * i + 1 < m:
        c = 2 * i + 1
        if c + 1 < m and _worse(hs[c + 1], hv[c + 1], hs[c], hv[c]):
            c += 1
        if not _worse(hs[c], hv[c], hs[i], hv[i]):
            return
        hs[i], hs[c] = hs[c], hs[i]
        hv[i], hv[c] = hv[c], hv[i]
        i = c


@nb.njit(**_JIT)
def _heapify(hs, hv, m):
    for i in range(m // 2 - 1, -1, -1):
        _sift(hs, hv, i, m)


@nb.njit(**_JIT)
def _select(keys, shift, pv, tl, cnt, k, threshold, hs, hv):
    """hs/hv[:m] = the k-1 best touched non-target nodes (tl[1:cnt]) with p > 0 by (score
    desc, id asc), best first, cut to score >= threshold * best if threshold > 0; returns m.
    A heap of the k-1 best so far (plain loops: numpy's sorts cost seconds of compiling)."""
    m = 0
    for j in range(1, cnt):
        v = tl[j]
        p = pv[_slot(keys, v, shift)]
        if p <= 0.0 or k < 2:
            continue
        if m < k - 1:        # fill up, then heapify once
            hs[m], hv[m] = p, v
            m += 1
            if m == k - 1:
                _heapify(hs, hv, m)
        elif _worse(hs[0], hv[0], p, v):
            hs[0], hv[0] = p, v
            _sift(hs, hv, 0, m)
    if m < k - 1:
        _heapify(hs, hv, m)
    for end in range(m - 1, 0, -1):    # heap sort: the worst goes last
        hs[0], hs[end] = hs[end], hs[0]
        hv[0], hv[end] = hv[end], hv[0]
        _sift(hs, hv, 0, end)
    if threshold > 0.0 and m > 0:
        keep = 0
        while keep < m and hs[keep] >= threshold * hs[0]:
            keep += 1
        m = keep
    return m


@nb.njit(**_JIT)
def _ppr_worker(indptr, indices, targets, alpha, eps, k, threshold, out_nodes, out_scores,
                out_cnt, w, nw):
    n = indptr.shape[0] - 1
    keys, shift = _new_table(64, n)
    cap = keys.shape[0]
    pv = np.empty(cap, dtype=np.float64)
    rv = np.empty(cap, dtype=np.float64)
    inq = np.empty(cap, dtype=np.bool_)
    tl = np.empty(cap, dtype=np.int64)        # touched node ids, insertion order
    q = np.empty(cap, dtype=np.int64)         # FIFO ring of node ids
    hs = np.empty(max(k - 1, 1), dtype=np.float64)
    hv = np.empty(max(k - 1, 1), dtype=np.int64)
    for i in range(w, targets.shape[0], nw):
        t = targets[i]
        s = _slot(keys, t, shift)
        keys[s] = t
        pv[s] = 0.0
        rv[s] = 1.0
        inq[s] = True
        tl[0] = t
        cnt = 1
        q[0] = t
        qh = 0
        qn = 1
        while True:
            cnt, qh, qn, need = _push_all(indptr, indices, alpha, eps, keys, shift, pv, rv,
                                          inq, tl, cnt, q, qh, qn)
            if need == 0:
                break
            nk, nsh, tl, moved = _regrow(keys, shift, tl, cnt, need, n)
            npv = np.empty(nk.shape[0], dtype=np.float64)
            nrv = np.empty(nk.shape[0], dtype=np.float64)
            niq = np.empty(nk.shape[0], dtype=np.bool_)
            for j in range(cnt):
                npv[moved[j, 1]] = pv[moved[j, 0]]
                nrv[moved[j, 1]] = rv[moved[j, 0]]
                niq[moved[j, 1]] = inq[moved[j, 0]]
            nq = np.empty(nk.shape[0], dtype=np.int64)
            for j in range(qn):
                nq[j] = q[(qh + j) % q.shape[0]]
            keys, shift, pv, rv, inq, q, qh = nk, nsh, npv, nrv, niq, nq, 0
        m = _select(keys, shift, pv, tl, cnt, k, threshold, hs, hv)
        out_nodes[i, 0] = t
        out_scores[i, 0] = pv[_slot(keys, t, shift)]
        out_nodes[i, 1:m + 1] = hv[:m]
        out_scores[i, 1:m + 1] = hs[:m]
        out_cnt[i] = m + 1
        _clear(keys, shift, tl, cnt)


@nb.njit(parallel=True, **_JIT)
def ppr_topk(indptr, indices, targets, alpha, eps, k, threshold, out_nodes, out_scores,
             out_cnt, nw):
    """Approximate PPR of each target by the push algorithm (Andersen-Chung-Lang, FIFO):
    r = e_t, p = 0; while some u has r(u) > eps*deg(u): p(u) += alpha*r(u), each neighbour
    v gets r(v) += (1-alpha)*r(u)/deg(u), r(u) = 0 (the target is pushed first in any case).
    Row i of out_nodes/out_scores: the target, then the k-1 best other nodes with p > 0 by
    (p desc, id asc), cut to p >= threshold * (best non-target p) when threshold > 0;
    out_cnt[i] entries are used."""
    for w in nb.prange(nw):
        _ppr_worker(indptr, indices, targets, alpha, eps, k, threshold, out_nodes, out_scores,
                    out_cnt, w, nw)


# ------------------------------------------------------------------ block assembly
@nb.njit(parallel=True, **_JIT)
def union_blocks(src, a_start, a_len, b_start, b_len, out, out_off, sizes, nw):
    """Block i = sorted unique union of src[a_start[i]:][:a_len[i]] and src[b_start[i]:]
    [:b_len[i]] (either may be unsorted), into out[out_off[i]:]; its size into sizes[i]."""
    for w in nb.prange(nw):
        for i in range(w, a_len.shape[0], nw):
            u = np.unique(np.concatenate((src[a_start[i]:a_start[i] + a_len[i]],
                                          src[b_start[i]:b_start[i] + b_len[i]])))
            out[out_off[i]:out_off[i] + u.shape[0]] = u
            sizes[i] = u.shape[0]


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
