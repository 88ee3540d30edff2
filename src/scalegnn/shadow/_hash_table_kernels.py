"""numba hash tables of node ids, the scratch memory of the shaDow-GNN extractor kernels
(``_khop_kernels``, ``_ppr_kernels``, ``_block_kernels``).

Scratch memory is O(touched nodes), never O(|V|) per block: membership uses open-addressing
tables of node ids (``-1`` = empty slot), Fibonacci-hashed with linear probing, grown by
doubling at half load; once a table would reach |V| entries (or |V| <= ``DENSE``) it becomes
a direct map (slot = node id, no probing). A table is cleared by looking its keys up again in
REVERSE insertion order: removing the last-inserted key restores the table to its state before
that insertion, so no probe chain of an earlier key is broken.
"""

import numba as nb
import numpy as np

_JIT = dict(nogil=True, cache=True)
_GOLD = np.uint64(0x9E3779B97F4A7C15)
DENSE = 1 << 16        # graphs up to this many nodes get direct-map tables from the start


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
