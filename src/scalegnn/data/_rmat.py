"""R-MAT / Kronecker edge kernels: counter-based, so any chunk can be regenerated alone.

Edge ``e`` descends ``scale`` levels of the 2x2 initiator [[a, b], [c, d]]; at level ``l`` it
uses the uniform 32-bit number ``u(e, l)`` — half of ``splitmix64(key + (e*H + l//2 + 1)*φ)``
with ``H = ceil(scale/2)``, ``key = splitmix64(seed)`` and φ the 64-bit golden ratio — and picks
quadrant (0,0) if u < a·2^32, (0,1) if u < (a+b)·2^32, (1,0) if u < (a+b+c)·2^32, else (1,1);
the row bit and column bit are appended (most significant first). Ids are then relabelled by a
seeded permutation (as Graph500 does) so that hubs are not all near id 0.

Because every number depends only on (seed, e, l), the output is the same for any chunking
and any thread count. :func:`rmat_edges_reference` is the slow, obviously-correct version.
"""

from __future__ import annotations

import numba as nb
import numpy as np

_M64 = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15
_C1 = 0xBF58476D1CE4E5B9
_C2 = 0x94D049BB133111EB


def splitmix64_py(x: int) -> int:
    z = x & _M64
    z = ((z ^ (z >> 30)) * _C1) & _M64
    z = ((z ^ (z >> 27)) * _C2) & _M64
    return z ^ (z >> 31)


def thresholds(a: float, b: float, c: float) -> tuple[int, int, int]:
    """Integer cut points on [0, 2^32) for the quadrant choice."""
    s = float(1 << 32)
    return int(a * s), int((a + b) * s), int((a + b + c) * s)


@nb.njit(inline="always")
def _mix(z):
    z = (z ^ (z >> np.uint64(30))) * np.uint64(_C1)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(_C2)
    return z ^ (z >> np.uint64(31))


@nb.njit(parallel=True, nogil=True, cache=True)
def rmat_edges(key, start, count, scale, ta, tab, tabc, perm, src, dst):
    """Fill src[:count], dst[:count] with edges start..start+count-1 (see module docstring)."""
    half = (scale + 1) // 2
    g = np.uint64(_GOLDEN)
    k = np.uint64(key)
    ta = np.uint64(ta)
    tab = np.uint64(tab)
    tabc = np.uint64(tabc)
    lo_mask = np.uint64(0xFFFFFFFF)
    for i in nb.prange(count):
        e = np.uint64(start + i)
        u = np.int64(0)
        v = np.int64(0)
        h = np.uint64(0)
        for lev in range(scale):
            if lev % 2 == 0:
                ctr = e * np.uint64(half) + np.uint64(lev // 2 + 1)
                h = _mix(k + ctr * g)
                r = h & lo_mask
            else:
                r = h >> np.uint64(32)
            bu = 0
            bv = 0
            if r < ta:
                pass
            elif r < tab:
                bv = 1
            elif r < tabc:
                bu = 1
            else:
                bu = 1
                bv = 1
            u = (u << 1) | bu
            v = (v << 1) | bv
        src[i] = perm[u]
        dst[i] = perm[v]


def rmat_edges_reference(seed: int, start: int, count: int, scale: int, a: float, b: float,
                         c: float, perm) -> tuple[np.ndarray, np.ndarray]:
    """Pure-Python twin of :func:`rmat_edges` (slow; for tests)."""
    key = splitmix64_py(seed)
    ta, tab, tabc = thresholds(a, b, c)
    half = (scale + 1) // 2
    src, dst = [], []
    for e in range(start, start + count):
        u = v = 0
        h = 0
        for lev in range(scale):
            if lev % 2 == 0:
                h = splitmix64_py(key + (e * half + lev // 2 + 1) * _GOLDEN)
                r = h & 0xFFFFFFFF
            else:
                r = h >> 32
            bu, bv = (0, 0) if r < ta else (0, 1) if r < tab else (1, 0) if r < tabc else (1, 1)
            u = (u << 1) | bu
            v = (v << 1) | bv
        src.append(perm[u])
        dst.append(perm[v])
    return np.array(src, dtype=np.int64), np.array(dst, dtype=np.int64)
