"""numba kernels of the k-hop extractor (SPEC §4): each target's scope, hop by hop, with at
most ``budget`` neighbours drawn per expanded node.

Execution model: a call handles B targets; ``prange`` runs ``nw`` workers, worker ``w`` takes
targets ``w, w+nw, ...`` with its own scratch (hash tables of ``_hash_table_kernels``). Target
``i`` reseeds numba's (per-thread) generator with ``seeds[i]`` before its first draw, so its
scope does not depend on the worker or thread count.
"""

import numba as nb
import numpy as np

from scalegnn.sampling._random_kernels import _randint
from scalegnn.shadow._hash_table_kernels import _clear, _fits, _new_table, _regrow, _slot

_JIT = dict(nogil=True, cache=True)
_SMALL_PICK = 64       # Floyd's draws checked by linear scan up to this budget, else by hash


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
