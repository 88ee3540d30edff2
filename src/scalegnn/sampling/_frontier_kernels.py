"""numba kernels of the frontier (MRW) sampler's Dashboard (journal Alg. 3/4, SPEC §2.1).

``frontier_state`` allocates one worker's Dashboard arrays, ``frontier_dashboard`` runs one
frontier walk into a subgraph's node buffer (called per subgraph by
``_sample_kernels.sample_frontier``), ``frontier_trace`` runs one walk with its pop trace for
the tests.
"""

import numba as nb
import numpy as np

from scalegnn.sampling._random_kernels import _randint

_JIT = dict(nogil=True, cache=True)


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
def frontier_state(m, n):
    """Dashboard arrays: IA (start, alive, node) per appended node, pop trace. Need no
    clearing between runs: a run only reads what it wrote."""
    return (np.empty(n + 2, dtype=np.int64), np.empty(n + 2, dtype=np.bool_),
            np.empty(n + 2, dtype=np.int64), np.empty(max(n - m, 0), dtype=np.int64))


@nb.njit(inline="always", **_JIT)
def _entry_at(ia_start, cnt, r):
    """The IA entry j whose pin range [ia_start[j], ia_start[j + 1]) holds DB slot r (the
    starts strictly increase: a node with no pins has no entry)."""
    lo = 0
    hi = cnt - 1
    while lo < hi:
        mid = (lo + hi + 1) >> 1
        if ia_start[mid] <= r:
            lo = mid
        else:
            hi = mid - 1
    return lo


@nb.njit(**_JIT)
def frontier_dashboard(indptr, indices, nodes, m, n, max_deg, eta, db_size, buf, mark, state):
    """Frontier sampling with the pin Dashboard (journal Alg. 3/4, SPEC §2.1).

    FS: m nodes uniform without replacement from ``nodes`` -> buf[:m]. Then n-m times: pop
    u ∈ FS with P ∝ pins(u) = min(deg(u), max_deg) by probing DB uniformly until a live pin is
    hit, replace u by a uniform neighbour u' (appended to buf; popped node to state[-1]).
    IA = (start, alive, node) per appended node, its pins the DB slots [start, next start);
    ``ia_start[cnt]`` = used DB slots. When u' does not fit, or when fewer than 1/eta of the
    used slots would be live, CLEANUP compacts the live pin ranges (masked prefix sum over
    IA); if u' still does not fit, it gets all remaining slots. A node with 0 pins has no IA
    entry and is never popped; if no live pin is left the walk stops early. Returns the
    number of entries written to ``buf``.

    The DB itself is implicit: IA's pin ranges tile [0, used) in order, so slot r belongs to
    the entry found by binary search over ``ia_start`` (log2 of the appended nodes, in cache)
    instead of ``DB[r]``. The journal's DB stores a tile id (node, pin range, IA index) in
    each of a node's pins: every add and every CLEANUP wrote as many entries as the node's
    pins, i.e. its degree, so a subgraph's cost grew with the graph's hubs (kronecker:17:8,
    PPI budget, one walk: 3.7 ms with the pins written, 2.2 ms without); with no DB to point
    into the tiles, an IA entry holds its node itself. The probes, the pops, CLEANUP's timing
    and the compacted layout are the journal's, slot for slot: the same seed gives the same
    run.
    """
    _uniform_subset(nodes, m, buf, mark)
    init = 0
    for i in range(m):
        init += _pins(indptr, buf[i], max_deg)
    ia_start, ia_alive, ia_node, pops = state
    size = max(db_size, np.int64(eta * init) + 1)  # DB must hold the initial frontier
    used = 0
    cnt = 0
    for t in range(m):
        p = _pins(indptr, buf[t], max_deg)
        if p > 0:
            ia_start[cnt] = used
            ia_alive[cnt] = True
            ia_node[cnt] = buf[t]
            used += p
            cnt += 1
    ia_start[cnt] = used
    live = used
    k = m
    for step in range(n - m):
        if live == 0:
            break
        # POP: uniform probes over the used slots until a live pin is hit (a popped node's
        # entry stays, dead, until the next CLEANUP)
        while True:
            j = _entry_at(ia_start, cnt, _randint(used))
            if ia_alive[j]:
                break
        vpop = ia_node[j]
        ia_alive[j] = False
        live -= ia_start[j + 1] - ia_start[j]
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
            for jj in range(cnt):
                if ia_alive[jj]:
                    w = ia_start[jj + 1] - ia_start[jj]
                    ia_node[nc] = ia_node[jj]
                    ia_start[nc] = nu  # nc <= jj: entries jj, jj+1 were read already
                    nu += w
                    nc += 1
            ia_alive[:nc] = True
            ia_alive[nc:cnt + 1] = False
            ia_start[nc] = nu
            used = nu
            cnt = nc
            if used + p > size:
                p = size - used  # "more pins than DB holds": all remaining slots
        # ADD: vnew's pins after the used slots (no entry if it has no pins)
        if p > 0:
            ia_alive[cnt] = True
            ia_node[cnt] = vnew
            used += p
            live += p
            cnt += 1
            ia_start[cnt] = used
    return k


@nb.njit(**_JIT)
def frontier_trace(indptr, indices, nodes, m, n, max_deg, eta, db_size, seed, mark):
    """One Dashboard frontier run with its trace, for tests: (buf[:k], pops[:k-m])."""
    np.random.seed(seed)
    buf = np.empty(n, dtype=np.int64)
    state = frontier_state(m, n)
    k = frontier_dashboard(indptr, indices, nodes, m, n, max_deg, eta, db_size, buf, mark, state)
    return buf[:k].copy(), state[-1][:k - m].copy()
