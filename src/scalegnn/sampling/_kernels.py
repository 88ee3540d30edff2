"""numba kernels of the GraphSAINT samplers (SPEC §1.1, §2). The only numba code in sampling/.

Execution model (inter-sampler parallelism, SPEC §2.2): a call samples ``count`` independent
subgraphs; ``prange`` runs ``nworkers`` workers, worker ``w`` takes subgraphs ``w, w+W, ...``.
Subgraph ``i`` reseeds numba's (per-thread) generator with ``seeds[i]`` before its first draw,
so its random stream, hence its content, does not depend on the worker or thread count.

Per-worker scratch: ``bits[w]`` a |V|-bit membership bitmap (0 between uses) and ``mark[w]``
a |V|-long int32 map (-1 between uses); every kernel resets exactly the entries it touched,
so no subgraph pays O(|V|) work (the one full read of the bitmap, in ``_unique_sort_clip``,
happens only when its |V|/64 words are fewer than the subgraph's draws).

Each sampler kernel writes the sorted unique node set of subgraph ``i`` into ``nodes_buf[i]``
(``nv[i]`` entries), its induced row lengths into ``rowcnt[i]`` and the number of induced edges
into ``ne[i]``; ``fill_induced`` then builds all CSRs, parent edge ids, transpose permutations
and edge values in one pass.
"""

import numba as nb
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

from scalegnn.ops._kernels import _prefetch  # llvm.prefetch of &arr[idx]


@intrinsic
def _cttz(typingctx, x):
    """Trailing zero bits of a nonzero uint64 (``llvm.cttz``: one tzcnt)."""
    sig = types.uint64(types.uint64)

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        fn = builder.module.declare_intrinsic(
            "llvm.cttz", [i64], ir.FunctionType(i64, [i64, ir.IntType(1)]))
        return builder.call(fn, [args[0], ir.Constant(ir.IntType(1), 1)])

    return sig, codegen


_JIT = dict(nogil=True, cache=True)


# ------------------------------------------------------------------ random helpers
@nb.njit(**_JIT)
def _randint(n):
    """Uniform integer in [0, n) from the calling thread's numba generator."""
    j = np.int64(np.random.random() * n)
    return j if j < n else n - 1


@nb.njit(**_JIT)
def build_alias(weights):
    """Vose alias table for P(j) ∝ weights[j] (sum > 0). Returns (prob float64, alias int64).

    Draw: j uniform in [0, k); keep j with probability prob[j], else take alias[j]. O(1).
    """
    k = weights.shape[0]
    scaled = weights.astype(np.float64) * (k / weights.sum())
    prob = np.ones(k, dtype=np.float64)
    alias = np.arange(k).astype(np.int64)
    small = np.empty(k, dtype=np.int64)
    large = np.empty(k, dtype=np.int64)
    ns = 0
    nl = 0
    for j in range(k):
        if scaled[j] < 1.0:
            small[ns] = j
            ns += 1
        else:
            large[nl] = j
            nl += 1
    while ns > 0 and nl > 0:
        ns -= 1
        s = small[ns]
        l = large[nl - 1]
        prob[s] = scaled[s]
        alias[s] = l
        scaled[l] = (scaled[l] + scaled[s]) - 1.0
        if scaled[l] < 1.0:
            nl -= 1
            small[ns] = l
            ns += 1
    # leftovers are 1 up to rounding: prob stays 1, alias stays itself
    return prob, alias


@nb.njit(**_JIT)
def _alias_draw(prob, alias):
    j = _randint(prob.shape[0])
    if np.random.random() < prob[j]:
        return j
    return alias[j]


_AHEAD = 16   # draws in flight in _alias_draws_into


@nb.njit(**_JIT)
def _alias_draws_into(prob, alias, count, out, o0, rj, ru):
    """``out[o0:o0+count]`` = ``count`` alias draws, the same numbers as ``count`` calls of
    :func:`_alias_draw` (same random stream, same order). The table is larger than the caches
    (an edge table on 2^17 nodes is 16 MB) and each draw is a dependent miss: the uniforms are
    drawn ``_AHEAD`` draws early (ring ``rj``/``ru``) and their table slots prefetched, so the
    misses overlap (edge sampler draws 5x faster, measured)."""
    nt = prob.shape[0]
    for t in range(min(_AHEAD, count)):
        j = _randint(nt)
        rj[t] = j
        ru[t] = np.random.random()
        _prefetch(prob, j)
        _prefetch(alias, j)
    for t in range(count):
        r = t % _AHEAD
        j = rj[r]
        out[o0 + t] = j if ru[r] < prob[j] else alias[j]
        if t + _AHEAD < count:
            j = _randint(nt)
            rj[r] = j
            ru[r] = np.random.random()
            _prefetch(prob, j)
            _prefetch(alias, j)


@nb.njit(**_JIT)
def _gather_ahead(src, buf, i0, count):
    """``buf[i0+t] -> src[buf[i0+t]]`` for t < count, prefetching ``_AHEAD`` entries ahead."""
    for t in range(min(_AHEAD, count)):
        _prefetch(src, buf[i0 + t])
    for t in range(count):
        if t + _AHEAD < count:
            _prefetch(src, buf[i0 + t + _AHEAD])
        buf[i0 + t] = src[buf[i0 + t]]


@nb.njit(**_JIT)
def alias_draws(prob, alias, count, seed):
    """``count`` draws from an alias table with a fixed seed (used by tests)."""
    np.random.seed(seed)
    out = np.empty(count, dtype=np.int64)
    for t in range(count):
        out[t] = _alias_draw(prob, alias)
    return out


# ------------------------------------------------------------------ shared per-subgraph steps
@nb.njit(**_JIT)
def _unique_sort_clip(buf, k, clip, mark, bits):
    """Sort-unique ``buf[:k]`` in place; if ``clip`` > 0 keep a uniform random subset of
    floor(u/clip)*clip nodes (SPEC §2.2 (a), drop before induction). Returns the new length.

    Without clipping, and when the |V|-bit map has at most ``k`` words, the draws are set in
    the bitmap and read back in order (k bit sets + |V|/64 word reads, no sort: 4-5x faster
    than sorting the 6-9k draws of the PPI budgets on a 2^17-node graph); the words read are
    cleared as they go. The work stays O(k) either way."""
    if clip <= 0 and bits.shape[0] <= k:
        _mark_bits(buf, k, bits, np.uint64(1))
        u = 0
        for w in range(bits.shape[0]):
            word = bits[w]
            if word == 0:
                continue
            bits[w] = np.uint64(0)
            base = np.int64(w) * 64
            while word != 0:
                buf[u] = base + np.int64(_cttz(word))
                u += 1
                word &= word - np.uint64(1)
        return u
    u = 0
    for j in range(k):
        v = buf[j]
        if mark[v] < 0:
            mark[v] = 0
            buf[u] = v
            u += 1
    for j in range(u):
        mark[buf[j]] = -1
    if clip > 0 and u >= clip:
        keep = (u // clip) * clip
        if keep < u:
            for j in range(keep):  # partial Fisher-Yates: buf[:keep] is a uniform subset
                t = j + _randint(u - j)
                tmp = buf[j]
                buf[j] = buf[t]
                buf[t] = tmp
            u = keep
    buf[:u].sort()
    return u


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
def _prefetch_row(indptr, indices, vs, k, j):
    """Scans visit k scattered parent rows, each starting with two dependent cache misses
    (indptr[u], then indices[indptr[u]]): prefetch the row bounds 16 rows ahead and the row
    start 8 rows ahead so the misses of different rows overlap."""
    if j + _PF < k:
        _prefetch(indptr, vs[j + _PF])
    if j + _PF // 2 < k:
        _prefetch(indices, indptr[vs[j + _PF // 2]])


_PF = 16


@nb.njit(**_JIT)
def _count_induced(indptr, indices, vs, k, bits, rowcnt):
    """Row lengths (rowcnt[:k]) and edge count of the subgraph induced by vs[:k] (sorted).

    Scans whole parent rows and adds the membership bit without a branch (a third of the
    scanned entries hit, so a branch would mispredict often)."""
    _mark_bits(vs, k, bits, np.uint64(1))
    tot = 0
    for j in range(k):
        u = vs[j]
        _prefetch_row(indptr, indices, vs, k, j)
        c = np.uint64(0)
        for e in _scan_range(indptr[u], indptr[u + 1]):
            c += _member(bits, np.uint32(indices[e]))
        rowcnt[j] = c
        tot += rowcnt[j]
    _mark_bits(vs, k, bits, np.uint64(0))
    return tot


@nb.njit(**_JIT)
def _finish(indptr, indices, buf, k, clip, bits, mark, rowcnt, nv, ne, i):
    u = _unique_sort_clip(buf, k, clip, mark, bits)
    nv[i] = u
    ne[i] = _count_induced(indptr, indices, buf, u, bits, rowcnt)


# ------------------------------------------------------------------ samplers
@nb.njit(parallel=True, **_JIT)
def sample_node(indptr, indices, nodes, prob, alias, n, seeds, clip, bits, mark,
                nodes_buf, rowcnt, nv, ne):
    """Node sampler: n draws with replacement from ``nodes`` by the alias table (P ∝ deg)."""
    count = seeds.shape[0]
    nw = mark.shape[0]
    for w in nb.prange(nw):
        rj = np.empty(_AHEAD, dtype=np.int64)
        ru = np.empty(_AHEAD, dtype=np.float64)
        for i in range(w, count, nw):
            np.random.seed(seeds[i])
            buf = nodes_buf[i]
            _alias_draws_into(prob, alias, n, buf, 0, rj, ru)
            _gather_ahead(nodes, buf, 0, n)
            _finish(indptr, indices, buf, n, clip, bits[w], mark[w], rowcnt[i], nv,
                    ne, i)


@nb.njit(parallel=True, **_JIT)
def sample_edge(indptr, indices, eu, ev, prob, alias, m, seeds, clip, bits, mark,
                nodes_buf, rowcnt, nv, ne):
    """Edge sampler: m undirected edges (eu[j], ev[j]) drawn with P ∝ prob table; V_s = ends."""
    count = seeds.shape[0]
    nw = mark.shape[0]
    for w in nb.prange(nw):
        rj = np.empty(_AHEAD, dtype=np.int64)
        ru = np.empty(_AHEAD, dtype=np.float64)
        for i in range(w, count, nw):
            np.random.seed(seeds[i])
            buf = nodes_buf[i]
            _alias_draws_into(prob, alias, m, buf, m, rj, ru)    # edge ids in buf[m:2m]
            for t in range(min(_AHEAD, m)):
                _prefetch(eu, buf[m + t])
                _prefetch(ev, buf[m + t])
            for t in range(m):       # buf[2t], buf[2t+1] <- ends; 2t+1 < m+t' for all t' > t
                j = buf[m + t]
                if t + _AHEAD < m:
                    _prefetch(eu, buf[m + t + _AHEAD])
                    _prefetch(ev, buf[m + t + _AHEAD])
                buf[2 * t] = eu[j]
                buf[2 * t + 1] = ev[j]
            _finish(indptr, indices, buf, 2 * m, clip, bits[w], mark[w], rowcnt[i], nv,
                    ne, i)


@nb.njit(parallel=True, **_JIT)
def sample_rw(indptr, indices, nodes, r, h, seeds, clip, bits, mark, nodes_buf, rowcnt,
              nv, ne):
    """RW sampler: r uniform roots from ``nodes``, h uniform-neighbour steps each (a node with no
    neighbours stays put); V_s = every visited node.

    The r walks advance in lockstep (all roots, then step 1 of every walk, ...): the r row
    lookups of one step are independent, so their cache misses overlap, where walk-by-walk
    each step waited on the previous one's miss. buf[s*r + t] = walk t after s steps."""
    count = seeds.shape[0]
    nw = mark.shape[0]
    nn = nodes.shape[0]
    for w in nb.prange(nw):
        for i in range(w, count, nw):
            np.random.seed(seeds[i])
            buf = nodes_buf[i]
            for t in range(r):
                buf[t] = nodes[_randint(nn)]
            for s in range(h):
                for t in range(s * r, (s + 1) * r):
                    v = buf[t]
                    d = indptr[v + 1] - indptr[v]
                    if d > 0:
                        v = indices[indptr[v] + _randint(d)]
                    buf[t + r] = v
            k = r * (h + 1)
            _finish(indptr, indices, buf, k, clip, bits[w], mark[w], rowcnt[i], nv,
                    ne, i)


@nb.njit(parallel=True, **_JIT)
def sample_full(indptr, indices, nodes, seeds, clip, bits, mark, nodes_buf, rowcnt,
                nv, ne):
    """Full 'sampler': V_s = ``nodes`` (clipping, if asked, still applies)."""
    count = seeds.shape[0]
    nw = mark.shape[0]
    for w in nb.prange(nw):
        for i in range(w, count, nw):
            np.random.seed(seeds[i])
            buf = nodes_buf[i]
            buf[:nodes.shape[0]] = nodes
            _finish(indptr, indices, buf, nodes.shape[0], clip, bits[w], mark[w],
                    rowcnt[i], nv, ne, i)


@nb.njit(parallel=True, **_JIT)
def sample_frontier(indptr, indices, nodes, m, n, max_deg, eta, db_size, seeds, clip,
                    bits, mark, nodes_buf, rowcnt, nv, ne, db_proto):
    """MRW/frontier sampler, Dashboard implementation (``frontier_dashboard``) per subgraph."""
    count = seeds.shape[0]
    nw = mark.shape[0]
    for w in nb.prange(nw):
        state = frontier_state(m, n, db_size, db_proto)  # reused by this worker's subgraphs
        for i in range(w, count, nw):
            np.random.seed(seeds[i])
            buf = nodes_buf[i]
            k = frontier_dashboard(indptr, indices, nodes, m, n, max_deg, eta, db_size, buf,
                                   mark[w], state)
            _finish(indptr, indices, buf, k, clip, bits[w], mark[w], rowcnt[i], nv,
                    ne, i)


@nb.njit(**_JIT)
def _pins(indptr, v, max_deg):
    d = indptr[v + 1] - indptr[v]
    if max_deg > 0 and d > max_deg:
        return max_deg
    return d


@nb.njit(**_JIT)
def _uniform_subset(nodes, m, buf, mark):
    """m distinct entries of ``nodes`` (unique ids) uniformly, into buf[:m]."""
    nn = nodes.shape[0]
    if 2 * m <= nn:  # rejection on the mark map: O(m) expected, no O(|V|) work
        k = 0
        while k < m:
            v = nodes[_randint(nn)]
            if mark[v] < 0:
                mark[v] = 0
                buf[k] = v
                k += 1
        for j in range(m):
            mark[buf[j]] = -1
    else:  # dense case: partial Fisher-Yates over a copy of the positions
        perm = np.arange(nn)
        for j in range(m):
            t = j + _randint(nn - j)
            tmp = perm[j]
            perm[j] = perm[t]
            perm[t] = tmp
            buf[j] = nodes[perm[j]]


@nb.njit(**_JIT)
def frontier_state(m, n, db_size, db_proto):
    """Dashboard arrays: DB, DB for cleanup, IA (start, alive), tiles (node, start, end, IA
    index), pop trace. Need no clearing between runs: a run only reads what it wrote.

    DB holds tile ids in [-1, m) with the dtype of ``db_proto`` (int16 when m < 2^15: DB is
    eta*m*d entries, ~11 MB as int32 for the PPI budget on R-MAT, and every pop/add writes a
    node's pins, so halving it halves the Dashboard's memory traffic)."""
    steps = max(n - m, 0)
    return (np.empty(db_size, dtype=db_proto.dtype), np.empty(db_size, dtype=db_proto.dtype),
            np.empty(n + 2, dtype=np.int64), np.empty(n + 2, dtype=np.bool_),
            np.empty(m, dtype=np.int64), np.empty(m, dtype=np.int64), np.empty(m, dtype=np.int64),
            np.empty(m, dtype=np.int64), np.empty(steps, dtype=np.int64))


@nb.njit(**_JIT)
def frontier_dashboard(indptr, indices, nodes, m, n, max_deg, eta, db_size, buf, mark, state):
    """Frontier sampling with the pin/tile Dashboard (journal Alg. 3/4, SPEC §2.1).

    FS: m nodes uniform without replacement from ``nodes`` -> buf[:m]. Then n-m times: pop
    u ∈ FS with P ∝ pins(u) = min(deg(u), max_deg) by probing DB uniformly until a live pin is
    hit, replace u by a uniform neighbour u' (appended to buf; popped node to state[-1]).
    DB[k] = tile id (-1 = NULL); tile t = (node, pin start, pin end, IA index); IA = (start,
    alive) per appended node, ``ia_start[cnt]`` = used DB entries. When u' does not fit, or
    when fewer than 1/eta of the used entries would be live, CLEANUP compacts live pins into a
    fresh DB (masked prefix sum over IA); if u' still does not fit, it gets all remaining
    slots. A node with 0 pins has no IA entry and is never popped; if no
    live pin is left the walk stops early. Returns the number of entries written to ``buf``.
    """
    _uniform_subset(nodes, m, buf, mark)
    init = 0
    for i in range(m):
        init += _pins(indptr, buf[i], max_deg)
    db, db_new, ia_start, ia_alive, t_node, t_start, t_end, t_ia, pops = state
    size = max(db_size, np.int64(eta * init) + 1)  # DB must hold the initial frontier
    if db.shape[0] < size:
        db = np.empty(size, dtype=db.dtype)
        db_new = np.empty(size, dtype=db.dtype)
    used = 0
    cnt = 0
    for t in range(m):
        v = buf[t]
        p = _pins(indptr, v, max_deg)
        t_node[t] = v
        t_start[t] = 0
        t_end[t] = 0
        t_ia[t] = -1
        if p > 0:
            ia_start[cnt] = used
            ia_alive[cnt] = True
            t_start[t] = used
            t_end[t] = used + p
            t_ia[t] = cnt
            db[used:used + p] = t
            used += p
            cnt += 1
    ia_start[cnt] = used
    live = used
    k = m
    for step in range(n - m):
        if live == 0:
            break
        # POP: uniform probes over the used part of DB until a live pin is hit
        while True:
            t = db[_randint(used)]
            if t >= 0:
                break
        vpop = t_node[t]
        db[t_start[t]:t_end[t]] = -1
        ia_alive[t_ia[t]] = False
        live -= t_end[t] - t_start[t]
        pops[step] = vpop
        d = indptr[vpop + 1] - indptr[vpop]
        vnew = indices[indptr[vpop] + _randint(d)]
        buf[k] = vnew
        k += 1
        p = _pins(indptr, vnew, max_deg)
        # CLEANUP when DB is full, or when live pins would fall below 1/eta of the used part
        # (the paper's average valid ratio, which bounds the expected probes per pop by eta)
        if used + p > size or used + p > eta * (live + p):
            # CLEANUP: new offsets = prefix sum of pin counts masked by the alive flags
            nu = 0
            nc = 0
            for j in range(cnt):
                if ia_alive[j]:
                    a = ia_start[j]
                    b = ia_start[j + 1]
                    tt = db[a]
                    db_new[nu:nu + b - a] = tt
                    t_start[tt] = nu
                    t_end[tt] = nu + b - a
                    t_ia[tt] = nc
                    ia_start[nc] = nu  # nc <= j: entries j, j+1 were read already
                    nu += b - a
                    nc += 1
            ia_alive[:nc] = True
            ia_alive[nc:cnt + 1] = False
            ia_start[nc] = nu
            tmp = db
            db = db_new
            db_new = tmp
            used = nu
            cnt = nc
            if used + p > size:
                p = size - used  # "more pins than DB holds": all remaining slots
        # ADD: reuse the popped tile for vnew
        t_node[t] = vnew
        t_ia[t] = -1
        if p > 0:
            t_start[t] = used
            t_end[t] = used + p
            t_ia[t] = cnt
            ia_alive[cnt] = True
            db[used:used + p] = t
            used += p
            live += p
            cnt += 1
            ia_start[cnt] = used
    return k


@nb.njit(**_JIT)
def frontier_trace(indptr, indices, nodes, m, n, max_deg, eta, db_size, seed, mark, db_proto):
    """One Dashboard frontier run with its trace, for tests: (buf[:k], pops[:k-m])."""
    np.random.seed(seed)
    buf = np.empty(n, dtype=np.int64)
    state = frontier_state(m, n, db_size, db_proto)
    k = frontier_dashboard(indptr, indices, nodes, m, n, max_deg, eta, db_size, buf, mark, state)
    return buf[:k].copy(), state[-1][:k - m].copy()


# ------------------------------------------------------------------ induction
@nb.njit(parallel=True, **_JIT)
def fill_induced(indptr, indices, nodes_buf, rowcnt, nv, node_off, edge_off, bits, mark,
                 edge_values, row_scale, inv_degree, out_nodes, out_indptr, out_indices,
                 out_eids, out_perm, out_data):
    """Induced CSRs of all subgraphs, into flat arrays, with only sequential output writes.

    Subgraph i: nodes at out_nodes[node_off[i]:], indptr (k+1 entries) at
    out_indptr[node_off[i]+i:], edges at edge_off[i], followed by one padding slot. Each local
    row is the parent row of vs[j] filtered by membership (the |V|-bit map, which stays in
    cache), written branch-free: every scanned entry is stored at the row's cursor, which
    advances only on a hit (the stray store after a row's last hit lands on the next row's
    first slot, rewritten next, or on the padding slot). The local id is read from the
    |V|-entry map at v for a hit and at 0 for a miss: reading it at v for every entry cost a
    cache miss each once the map outgrew the cache (64 MiB at 2^24 nodes, where ~96% of a
    frontier subgraph's scanned hub entries miss: 152 vs 45 ms per subgraph on 2 threads),
    and a branch instead mispredicts on the ~1/3 hit rate of smaller graphs (rw 2x slower on
    kronecker:17:8). Rows come out sorted since parent rows are. Parent edge id = scan position. If out_data is
    non-empty, value = edge_values[parent id] (1 if empty) * row_scale[row] (1 if empty, or
    1/deg(row) in the parent graph if ``inv_degree``: no |V|-float table), the row scale
    gathered once per row. Then the transpose permutation by journal Alg. 6 for a
    symmetric pattern: rows in order, entry (j, l) -> next free slot of row l.
    Parent edge ids and the permutation may be int32 (fewer bytes written).
    """
    count = nv.shape[0]
    nw = mark.shape[0]
    has_val = edge_values.shape[0] > 0
    has_scale = row_scale.shape[0] > 0
    has_data = out_data.shape[0] > 0
    for w in nb.prange(nw):
        mk = mark[w]
        bt = bits[w]
        cursor = np.empty(nodes_buf.shape[1], dtype=np.int64)
        for i in range(w, count, nw):
            k = nv[i]
            vs = nodes_buf[i]
            rc = rowcnt[i]
            no = node_off[i]
            eo = edge_off[i]
            ip = out_indptr[no + i:no + i + k + 1]
            ip[0] = 0
            for j in range(k):
                v = vs[j]
                out_nodes[no + j] = v
                ip[j + 1] = ip[j] + rc[j]
                mk[v] = j
                cursor[j] = ip[j]
            _mark_bits(vs, k, bt, np.uint64(1))
            for j in range(k):
                u = vs[j]
                _prefetch_row(indptr, indices, vs, k, j)
                su = np.float32(1.0)
                if has_scale:
                    su = row_scale[u]
                elif inv_degree and indptr[u + 1] > indptr[u]:
                    su = np.float32(1.0 / (indptr[u + 1] - indptr[u]))
                p = np.uint64(eo + ip[j])
                for e in _scan_range(indptr[u], indptr[u + 1]):
                    v = np.uint32(indices[e])
                    hit = _member(bt, v)
                    out_indices[p] = mk[v * hit]   # a miss reads mk[0]: always in cache
                    out_eids[p] = e
                    if has_data:
                        out_data[p] = (edge_values[e] if has_val else np.float32(1.0)) * su
                    p += hit
            _mark_bits(vs, k, bt, np.uint64(0))
            for j in range(k):
                mk[vs[j]] = -1
            for p in _scan_range(eo, eo + ip[k]):
                loc = np.uint32(out_indices[p])
                out_perm[p] = cursor[loc]
                cursor[loc] += 1


# ------------------------------------------------------------------ normalization counters
@nb.njit(**_JIT)
def add_counts(counts, ids):
    """counts[ids[j]] += 1 for every j (C_v / C_e accumulation, SPEC §1.2)."""
    for j in range(ids.shape[0]):
        counts[ids[j]] += 1
