"""numba kernels of the GraphSAINT samplers (SPEC §1.1, §2): node, edge, rw, full, frontier and
cluster, each drawing the node sets of many subgraphs at once.

Execution model (inter-sampler parallelism, SPEC §2.2): a call samples ``count`` independent
subgraphs; ``prange`` runs ``nworkers`` workers, worker ``w`` takes subgraphs ``w, w+W, ...``.
Subgraph ``i`` reseeds numba's (per-thread) generator with ``seeds[i]`` before its first draw,
so its random stream, hence its content, does not depend on the worker or thread count.

Per-worker scratch: ``bits[w]`` a |V|-bit membership bitmap (0 between uses) and ``mark[w]``
a |V|-long int32 map (-1 between uses); every kernel resets exactly the entries it touched,
so no subgraph pays O(|V|) work (the one full read of the bitmap, in ``_unique_sort_clip``,
happens only when its |V|/64 words are fewer than the subgraph's draws).

Each sampler kernel writes the sorted unique node set of subgraph ``i`` into ``nodes_buf[i]``
(``nv[i]`` entries); ``fill_induced`` (``_induce_kernels``) then builds all CSRs, parent edge ids,
transpose permutations and edge values in one pass. The draws come from ``_random_kernels``,
the frontier sampler's Dashboard from ``_frontier_kernels``.
"""

import numba as nb
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

from scalegnn.ops._kernels import _prefetch  # llvm.prefetch of &arr[idx]
from scalegnn.sampling._frontier_kernels import frontier_dashboard, frontier_state
from scalegnn.sampling._induce_kernels import _mark_bits
from scalegnn.sampling._random_kernels import _AHEAD, _alias_draws_into, _randint

_JIT = dict(nogil=True, cache=True)


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


@nb.njit(**_JIT)
def _gather_ahead_prefetch(src, ids, i0, count):
    """Prefetch ``src[ids[i0+t]]`` for the first ``_AHEAD`` t (negative ids: entry 0)."""
    for t in range(min(_AHEAD, count)):
        _prefetch(src, max(ids[i0 + t], 0))


@nb.njit(**_JIT)
def _gather_ahead(src, buf, i0, count):
    """``buf[i0+t] -> src[buf[i0+t]]`` for t < count, prefetching ``_AHEAD`` entries ahead."""
    _gather_ahead_prefetch(src, buf, i0, count)
    for t in range(count):
        if t + _AHEAD < count:
            _prefetch(src, buf[i0 + t + _AHEAD])
        buf[i0 + t] = src[buf[i0 + t]]


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
def _finish(buf, k, clip, bits, mark, nv, i):
    nv[i] = _unique_sort_clip(buf, k, clip, mark, bits)


# ------------------------------------------------------------------ samplers
@nb.njit(parallel=True, **_JIT)
def sample_node(indptr, indices, nodes, prob, alias, n, seeds, clip, bits, mark,
                nodes_buf, nv):
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
            _finish(buf, n, clip, bits[w], mark[w], nv, i)


@nb.njit(parallel=True, **_JIT)
def sample_edge(indptr, indices, eu, ev, prob, alias, m, seeds, clip, bits, mark,
                nodes_buf, nv):
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
            _finish(buf, 2 * m, clip, bits[w], mark[w], nv, i)


@nb.njit(parallel=True, **_JIT)
def sample_rw(indptr, indices, nodes, r, h, seeds, clip, bits, mark, nodes_buf, nv):
    """RW sampler: r uniform roots from ``nodes``, h uniform-neighbour steps each (a node with no
    neighbours stays put); V_s = every visited node.

    The r walks advance in lockstep (all roots, then step 1 of every walk, ...): the r row
    lookups of one step are independent, so their cache misses overlap, where walk-by-walk
    each step waited on the previous one's miss. buf[s*r + t] = walk t after s steps. A step
    is two passes: the row bounds (prefetched ``_AHEAD`` walks ahead) and the draw give each
    walk's position in ``indices`` (``pos``; -1 for a node without neighbours), then those
    entries are read, prefetched ahead too (draw CPU -15% at the PPI budgets on
    kronecker:17:8; the draws, hence the subgraphs, are the same numbers in the same order).
    The roots are drawn as positions in ``nodes`` first and then read, prefetched ahead the
    same way (the walk kernel 0.90-0.92x its CPU, Zen 5; the same numbers again)."""
    count = seeds.shape[0]
    nw = mark.shape[0]
    nn = nodes.shape[0]
    for w in nb.prange(nw):
        pos = np.empty(r, dtype=np.int64)
        for i in range(w, count, nw):
            np.random.seed(seeds[i])
            buf = nodes_buf[i]
            for t in range(r):   # root positions, then the roots, prefetched ahead
                buf[t] = _randint(nn)
            _gather_ahead(nodes, buf, 0, r)
            for s in range(h):
                b0 = s * r
                _gather_ahead_prefetch(indptr, buf, b0, r)
                for t in range(r):
                    if t + _AHEAD < r:
                        _prefetch(indptr, buf[b0 + t + _AHEAD])
                    a = indptr[buf[b0 + t]]
                    d = indptr[buf[b0 + t] + 1] - a
                    pos[t] = a + _randint(d) if d > 0 else -1
                _gather_ahead_prefetch(indices, pos, 0, r)
                for t in range(r):
                    if t + _AHEAD < r:
                        _prefetch(indices, max(pos[t + _AHEAD], 0))
                    buf[b0 + r + t] = indices[pos[t]] if pos[t] >= 0 else buf[b0 + t]
            k = r * (h + 1)
            _finish(buf, k, clip, bits[w], mark[w], nv, i)


@nb.njit(parallel=True, **_JIT)
def sample_full(indptr, indices, nodes, seeds, clip, bits, mark, nodes_buf, nv):
    """Full 'sampler': V_s = ``nodes`` (clipping, if asked, still applies)."""
    count = seeds.shape[0]
    nw = mark.shape[0]
    for w in nb.prange(nw):
        for i in range(w, count, nw):
            np.random.seed(seeds[i])
            buf = nodes_buf[i]
            buf[:nodes.shape[0]] = nodes
            _finish(buf, nodes.shape[0], clip, bits[w], mark[w], nv, i)


@nb.njit(parallel=True, **_JIT)
def sample_frontier(indptr, indices, nodes, m, n, max_deg, eta, db_size, seeds, clip,
                    bits, mark, nodes_buf, nv):
    """MRW/frontier sampler, Dashboard implementation (``frontier_dashboard``) per subgraph."""
    count = seeds.shape[0]
    nw = mark.shape[0]
    for w in nb.prange(nw):
        state = frontier_state(m, n)  # reused by this worker's subgraphs
        for i in range(w, count, nw):
            np.random.seed(seeds[i])
            buf = nodes_buf[i]
            k = frontier_dashboard(indptr, indices, nodes, m, n, max_deg, eta, db_size, buf,
                                   mark[w], state)
            _finish(buf, k, clip, bits[w], mark[w], nv, i)


@nb.njit(parallel=True, **_JIT)
def sample_cluster(indptr, indices, part_nodes, partptr, q, seeds, clip, bits, mark,
                   nodes_buf, nv):
    """ClusterGCN sampler: q distinct parts drawn uniformly by a partial Fisher-Yates over the
    part ids; V_s = the nodes of those parts (``part_nodes[partptr[c]:partptr[c + 1]]``).

    Each worker keeps one array of part ids and undoes a subgraph's q swaps after it, so
    every subgraph shuffles the identity (O(q), and the same draw at any thread count)."""
    count = seeds.shape[0]
    nw = mark.shape[0]
    p = partptr.shape[0] - 1
    for w in nb.prange(nw):
        ids = np.arange(p)
        swap = np.empty(q, dtype=np.int64)
        for i in range(w, count, nw):
            np.random.seed(seeds[i])
            buf = nodes_buf[i]
            k = 0
            for j in range(q):
                t = j + _randint(p - j)
                swap[j] = t
                c = ids[t]
                ids[t] = ids[j]
                ids[j] = c
                a, b = partptr[c], partptr[c + 1]
                buf[k:k + b - a] = part_nodes[a:b]
                k += b - a
            for j in range(q - 1, -1, -1):
                t = swap[j]
                c = ids[t]
                ids[t] = ids[j]
                ids[j] = c
            _finish(buf, k, clip, bits[w], mark[w], nv, i)
