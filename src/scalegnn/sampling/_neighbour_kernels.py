"""numba kernels of the neighbour sampler (GraphSAGE fanout, PyG's ``NeighborLoader``).

One hop expands a *frontier* (consecutive entries of the batch's node list): frontier node i
draws ``min(deg, k)`` of its CSR row's entries without replacement (all of them for k < 0; k
with replacement when ``replace``, none for a node without neighbours). The draws run in
parallel over the frontier (``prange``); node i's draws come from its own counter-based stream
(splitmix64 seeded from the hop's key and i), so the sample is the same at any thread count.
The new nodes are then numbered in a sequential pass (the first time a node is seen it gets
the next local id), which makes the node order, hence every later hop, deterministic.

The slow reference is ``neighbour_reference`` in the tests.
"""

import numba as nb
import numpy as np

_JIT = {"nogil": True, "cache": True}
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_FLOYD_MAX = 32   # up to this k: Floyd's algorithm with a linear membership scan, O(k^2)


@nb.njit(inline="always", **_JIT)
def _mix(z):
    """splitmix64 finalizer: a bijective scramble of a uint64."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@nb.njit(inline="always", **_JIT)
def _below(state, n):
    """(new state, uniform integer in [0, n)) from a splitmix64 stream."""
    state = state + _GOLDEN
    j = np.int64(np.float64(_mix(state) >> np.uint64(11)) * (1.0 / 9007199254740992.0) * n)
    return state, (j if j < n else n - 1)


@nb.njit(**_JIT)
def hop_key(batch_seed, hop):
    """The key of one hop of one batch (``batch_seed`` from ``stream_seeds``)."""
    return _mix(np.uint64(batch_seed) * _GOLDEN + np.uint64(hop + 1))


@nb.njit(**_JIT)
def fanout_offsets(indptr, nodes, lo, hi, k, replace, offsets):
    """offsets[i + 1] - offsets[i] = draws of frontier node nodes[lo + i] (see the module
    docstring); offsets[0] = 0. Returns the total."""
    offsets[0] = 0
    for i in range(hi - lo):
        v = nodes[lo + i]
        d = indptr[v + 1] - indptr[v]
        if k < 0:
            c = d
        elif replace:
            c = k if d > 0 else 0
        else:
            c = min(d, k)
        offsets[i + 1] = offsets[i] + c
    return offsets[hi - lo]


@nb.njit(**_JIT)
def _floyd(state, a, d, c, out, o):
    """c distinct positions of [a, a + d) into out[o:o + c], sorted (Floyd's algorithm)."""
    for j in range(d - c, d):
        state, t = _below(state, j + 1)
        hit = False
        for q in range(o, o + j - (d - c)):
            if out[q] == a + t:
                hit = True
                break
        out[o + j - (d - c)] = a + (j if hit else t)
    for q in range(o + 1, o + c):   # insertion sort: c <= _FLOYD_MAX
        x = out[q]
        p = q - 1
        while p >= o and out[p] > x:
            out[p + 1] = out[p]
            p -= 1
        out[p + 1] = x
    return state


@nb.njit(**_JIT)
def _floyd_hashed(state, a, d, c, out, o):
    """As ``_floyd`` for large c: membership in an open-addressing table of >= 2c slots."""
    size = 1
    while size < 2 * c:
        size *= 2
    table = np.full(size, -1, dtype=np.int64)
    mask = np.uint64(size - 1)
    for j in range(d - c, d):
        state, t = _below(state, j + 1)
        for v in (t, j):   # insert t; if already drawn, insert j (never drawn before)
            h = np.int64(_mix(np.uint64(v)) & mask)
            while table[h] >= 0 and table[h] != v:
                h = (h + 1) & (size - 1)
            if table[h] < 0:
                table[h] = v
                break
    q = o
    for h in range(size):
        if table[h] >= 0:
            out[q] = table[h]
            q += 1
    out[o:o + c].sort()
    for q in range(o, o + c):
        out[q] += a


def _fanout_sample(indptr, nodes, lo, k, key, replace, offsets, out_pos):
    """CSR positions of the draws of frontier node nodes[lo + i] into
    out_pos[offsets[i]:offsets[i + 1]] (ascending, unless drawn with replacement)."""
    for i in nb.prange(offsets.shape[0] - 1):
        v = nodes[lo + i]
        a = indptr[v]
        d = indptr[v + 1] - a
        o = offsets[i]
        c = offsets[i + 1] - o
        if c == 0:
            continue
        state = _mix(key + _mix(np.uint64(i) * _GOLDEN + np.uint64(1)))
        if replace and k >= 0:
            for t in range(c):
                state, j = _below(state, d)
                out_pos[o + t] = a + j
        elif c == d:
            for t in range(c):
                out_pos[o + t] = a + t
        elif c <= _FLOYD_MAX:
            _floyd(state, a, d, c, out_pos, o)
        elif d <= 4 * c:   # partial Fisher-Yates over the row's offsets: O(d) = O(c)
            perm = np.arange(d)
            for t in range(c):
                state, j = _below(state, d - t)
                j += t
                x = perm[t]
                perm[t] = perm[j]
                perm[j] = x
            sel = np.sort(perm[:c])
            for t in range(c):
                out_pos[o + t] = a + sel[t]
        else:   # a hub: Floyd's algorithm with a hash set, O(c) whatever d is
            _floyd_hashed(state, a, d, c, out_pos, o)


fanout_sample = nb.njit(parallel=True, **_JIT)(_fanout_sample)
fanout_sample_serial = nb.njit(**_JIT)(_fanout_sample)   # small hops: no thread launch


@nb.njit(**_JIT)
def number_new(indices, lo, offsets, out_pos, mark, nodes, n, src, dst):
    """Local ids of the drawn neighbours: a node met for the first time is appended to
    nodes[n:] (mark[v] = its local id; -1 means unseen). Edge j of frontier node i runs from
    src[j] (the neighbour) to dst[j] = lo + i. Returns the new node count."""
    for i in range(offsets.shape[0] - 1):
        for j in range(offsets[i], offsets[i + 1]):
            u = indices[out_pos[j]]
            m = mark[u]
            if m < 0:
                m = n
                mark[u] = n
                nodes[n] = u
                n += 1
            src[j] = m
            dst[j] = lo + i
    return n


@nb.njit(**_JIT)
def mark_seeds(seeds, mark, nodes):
    """nodes[:len(seeds)] = seeds; mark[s] = the first slot of seed s."""
    for t in range(seeds.shape[0]):
        s = seeds[t]
        nodes[t] = s
        if mark[s] < 0:
            mark[s] = t


@nb.njit(**_JIT)
def unmark(nodes, n, mark):
    for t in range(n):
        mark[nodes[t]] = -1
