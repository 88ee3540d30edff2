"""numba kernels of the PPR extractor (SPEC §4): approximate personalized PageRank of each
target by pushes, and the selection of its top-k nodes.

Push order: FIFO from the target while the queue is short; once at least ``SWEEP_MIN`` nodes
are touched and more than 1/``SWEEP_FRAC`` of them wait in the queue, sweeps instead: the
touched nodes in increasing id order, each pushed if r(u) > eps*deg(u) (a node touched ahead of
the sweep is visited in the same sweep), until a sweep pushes fewer than ``SWEEP_TAIL`` nodes;
then FIFO again from the nodes left above their threshold, queued in id order (the few last
pushes no longer pay a scan of every touched id per sweep). Any push order ends
with every r(u) <= eps*deg(u), so the error bound is the same; the sweeps read the CSR and the
per-node state in address order instead of queue order (~2.5x less CPU per target on
Facebook at eps 1e-6, where a target touches 14k of 22k nodes, ~21 sweeps, ~0.5M neighbour
updates). Sweeps run on graphs of at most ``DENSE`` nodes (direct-mapped tables: a sweep is a
plain loop over ids); larger graphs keep FIFO (sweeps over hashed tables cost more than they
saved: 1.45x more CPU per target on kronecker:17:8 at eps 1e-5). The rules depend on counts,
the order of the ids and |V| <= DENSE only: a component relabelled by an increasing map within
that bound gets the same lists.

Execution model: a call handles B targets; ``prange`` runs ``nw`` workers, worker ``w`` takes
targets ``w, w+nw, ...`` with its own scratch (hash tables of ``_hash_table_kernels``, grown
between pushes). Pushes draw nothing: the lists are deterministic.
"""

import numba as nb
import numpy as np

from scalegnn.shadow._hash_table_kernels import DENSE, _clear, _fits, _new_table, _regrow, _slot

_JIT = {"nogil": True, "cache": True}
SWEEP_MIN = 1024      # sweeps only once this many nodes are touched ...
SWEEP_FRAC = 8        # ... and more than 1/SWEEP_FRAC of them are queued;
SWEEP_TAIL = 256      # back to FIFO after a sweep that pushed fewer nodes than this
@nb.njit(**_JIT)
def _push_all(indptr, indices, alpha, eps, keys, shift, pv, rv, inq, tl, cnt, q, qh, qn,
              sweep, stats, thr):
    """Run FIFO pushes until the queue (ring q[qh:qh+qn], node ids) is empty, until the sweep
    rule holds (with ``sweep``; qn > 0 on return) or until the next push might overfill a
    hashed table: returns (cnt, qh, qn, needed capacity or 0). Counts pushes and neighbour
    updates into stats[0], stats[1]. ``thr[u]`` = eps*deg(u) when ``sweep`` (else empty)."""
    ring = q.shape[0]
    while qn > 0:
        if sweep and cnt >= SWEEP_MIN and qn * SWEEP_FRAC > cnt:
            return cnt, qh, qn, 0
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
        stats[0] += 1
        stats[1] += b - a
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
            if not inq[s] and rv[s] > (thr[v] if sweep else
                                       eps * (indptr[v + 1] - indptr[v])):
                inq[s] = True
                j = qh + qn
                q[j if j < ring else j - ring] = v
                qn += 1
    return cnt, qh, qn, 0


@nb.njit(**_JIT)
def _sweeps_direct(indptr, indices, alpha, eps, pv, rv, stats, thr):
    """Sweeps (module docstring) over a direct-mapped table whose untouched slots hold
    p = r = 0: every id is visited (untouched ones have r = 0 and are not pushed), with no
    per-neighbour bookkeeping (plain loops over ids: 1.5x faster than tracking the touched
    range; ``thr[x]`` = eps*deg(x)). Returns the pushes of the
    last sweep (< SWEEP_TAIL). Counts pushes, neighbour updates and ids visited into
    stats[0], stats[1], stats[2]."""
    n = indptr.shape[0] - 1
    while True:
        pushed = 0
        stats[2] += n
        for x in range(n):
            ru = rv[x]
            if ru > thr[x]:
                a = indptr[x]
                b = indptr[x + 1]
                pushed += 1
                stats[0] += 1
                stats[1] += b - a
                rv[x] = 0.0
                pv[x] += alpha * ru
                if b > a:
                    share = (1.0 - alpha) * ru / (b - a)
                    for e in range(a, b):
                        rv[indices[e]] += share
        if pushed < SWEEP_TAIL:
            return pushed


@nb.njit(**_JIT)
def _requeue(thr, keys, rv, inq, q):
    """After the sweeps (direct-mapped table): queue the touched nodes with r(u) > thr[u] =
    eps*deg(u) in id order (the order a sweep would visit them) for the FIFO tail; returns
    the queue length."""
    qn = 0
    for u in range(keys.shape[0]):
        if keys[u] == u:
            inq[u] = rv[u] > thr[u]
            if inq[u]:
                q[qn] = u
                qn += 1
    return qn


@nb.njit(**_JIT)
def _relist(keys, pv, rv, tl, cnt, n):
    """Direct-mapped table after :func:`_sweeps_direct`: add the nodes it touched (p or r >
    0, not yet keys) to the table and to tl; returns the new count."""
    for v in range(n):
        if keys[v] != v and (pv[v] != 0.0 or rv[v] != 0.0):
            keys[v] = v
            tl[cnt] = v
            cnt += 1
    return cnt


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
def _select(keys, shift, pv, rv, alpha, tl, cnt, k, threshold, hs, hv):
    """hs/hv[:m] = the k-1 best touched non-target nodes (tl[1:cnt]) with score > 0 by (score
    desc, id asc), best first, cut to score >= threshold * best if threshold > 0; returns m.
    The score is p + alpha*r: what pushing the residual once more would add to p, still a
    lower bound of the exact PPR. A heap of the k-1 best so far (plain loops: numpy's sorts
    cost seconds of compiling)."""
    m = 0
    for j in range(1, cnt):
        v = tl[j]
        s = _slot(keys, v, shift)
        p = pv[s] + alpha * rv[s]
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
                out_cnt, work, w, nw, thr):
    n = indptr.shape[0] - 1
    keys, shift = _new_table(64, n)
    cap = keys.shape[0]
    pv = np.zeros(cap, dtype=np.float64)      # zeros: untouched direct-mapped slots stay 0
    rv = np.zeros(cap, dtype=np.float64)
    inq = np.empty(cap, dtype=np.bool_)
    tl = np.empty(cap, dtype=np.int64)        # touched node ids, insertion order
    q = np.empty(cap, dtype=np.int64)         # FIFO ring of node ids
    sweep = n <= DENSE                        # direct-mapped from the start: sweeps allowed
    hs = np.empty(max(k - 1, 1), dtype=np.float64)
    hv = np.empty(max(k - 1, 1), dtype=np.int64)
    stats = np.zeros(3, dtype=np.int64)
    for i in range(w, targets.shape[0], nw):
        stats[:] = 0
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
            cnt, qh, qn, need = _push_all(indptr, indices, alpha, eps, keys, shift, pv, rv, inq,
                                          tl, cnt, q, qh, qn, sweep, stats, thr)
            if need == 0 and qn > 0:        # the sweep rule held (direct-mapped table)
                pushed = _sweeps_direct(indptr, indices, alpha, eps, pv, rv, stats, thr)
                cnt = _relist(keys, pv, rv, tl, cnt, n)
                if pushed == 0:
                    break
                qn, qh = _requeue(thr, keys, rv, inq, q), 0
                continue
            if need == 0:
                break
            nk, nsh, tl, moved = _regrow(keys, shift, tl, cnt, need, n)
            npv = np.zeros(nk.shape[0], dtype=np.float64)
            nrv = np.zeros(nk.shape[0], dtype=np.float64)
            niq = np.empty(nk.shape[0], dtype=np.bool_)
            for j in range(cnt):
                npv[moved[j, 1]] = pv[moved[j, 0]]
                nrv[moved[j, 1]] = rv[moved[j, 0]]
                niq[moved[j, 1]] = inq[moved[j, 0]]
            nq = np.empty(nk.shape[0], dtype=np.int64)
            for j in range(qn):
                nq[j] = q[(qh + j) % q.shape[0]]
            keys, shift, pv, rv, inq, q, qh = nk, nsh, npv, nrv, niq, nq, 0
        m = _select(keys, shift, pv, rv, alpha, tl, cnt, k, threshold, hs, hv)
        s = _slot(keys, t, shift)
        out_nodes[i, 0] = t
        out_scores[i, 0] = pv[s] + alpha * rv[s]
        out_nodes[i, 1:m + 1] = hv[:m]
        out_scores[i, 1:m + 1] = hs[:m]
        out_cnt[i] = m + 1
        work[i, 0] = stats[0]
        work[i, 1] = stats[1]
        work[i, 2] = stats[2]
        work[i, 3] = cnt
        if shift < 0:
            for j in range(cnt):
                pv[tl[j]] = 0.0
                rv[tl[j]] = 0.0
        _clear(keys, shift, tl, cnt)


@nb.njit(parallel=True, **_JIT)
def ppr_topk(indptr, indices, targets, alpha, eps, k, threshold, out_nodes, out_scores,
             out_cnt, work, nw):
    """Approximate PPR of each target by the push algorithm (Andersen-Chung-Lang; push order
    in the module docstring): r = e_t, p = 0; while some u has r(u) > eps*deg(u): p(u) +=
    alpha*r(u), each neighbour v gets r(v) += (1-alpha)*r(u)/deg(u), r(u) = 0 (the target is
    pushed first in any case). Score = p + alpha*r. Row i of out_nodes/out_scores: the target,
    then the k-1 best other nodes with score > 0 by (score desc, id asc), cut to score >=
    threshold * (best non-target score) when threshold > 0; out_cnt[i] entries are used.
    work[i] = (pushes, neighbour updates, ids visited by sweeps, nodes touched): the work the
    target cost, for ``bench extract``'s roofline."""
    # the push thresholds eps*deg(u) of a direct-mapped graph (|V| <= DENSE: at most 512 KiB,
    # made once a call and shared by the workers), read by the sweeps and the FIFO pushes
    # instead of two row bounds and a multiply per id (0.89-0.94x the CPU per target on
    # Facebook, the same lists)
    n = indptr.shape[0] - 1
    thr = np.empty(n if n <= DENSE else 0, dtype=np.float64)
    for x in range(thr.shape[0]):
        thr[x] = eps * (indptr[x + 1] - indptr[x])
    for w in nb.prange(nw):
        _ppr_worker(indptr, indices, targets, alpha, eps, k, threshold, out_nodes, out_scores,
                    out_cnt, work, w, nw, thr)
