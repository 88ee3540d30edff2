"""numba kernels of :mod:`scalegnn.pyg`: the CSR of a PyG ``edge_index`` by target node.

Row v of the CSR lists the sources u of the edges u -> v, ascending (ties in edge order), and
``perm[p]`` is the position in ``edge_index`` of CSR entry p. Built by one counting sort (count
the targets, prefix sum, scatter in edge order) and a per-row sort where a row is not already
sorted; the edge list itself is read, never copied. The slow reference is a stable
``np.lexsort`` (in the tests).
"""

import numba as nb
import numpy as np

_JIT = {"nogil": True, "cache": True}


@nb.njit(**_JIT)
def count_targets(dst, counts):
    """counts[v + 1] += 1 for every target v."""
    for e in range(dst.shape[0]):
        counts[dst[e] + 1] += 1


@nb.njit(**_JIT)
def scatter_sources(src, dst, cursor, indices, perm):
    """Entry cursor[v]++ of row v = (source, edge id) of each edge u -> v, in edge order."""
    for e in range(src.shape[0]):
        v = dst[e]
        p = cursor[v]
        cursor[v] = p + 1
        indices[p] = src[e]
        perm[p] = e


@nb.njit(parallel=True, **_JIT)
def sort_rows(indptr, indices, perm):
    """Sort each row by source, stably (ties keep edge order); perm moves along."""
    for v in nb.prange(indptr.shape[0] - 1):
        a = indptr[v]
        b = indptr[v + 1]
        done = True
        for p in range(a + 1, b):
            if indices[p] < indices[p - 1]:
                done = False
                break
        if done:
            continue
        if b - a <= 32:   # insertion sort (stable)
            for q in range(a + 1, b):
                x = indices[q]
                y = perm[q]
                p = q - 1
                while p >= a and indices[p] > x:
                    indices[p + 1] = indices[p]
                    perm[p + 1] = perm[p]
                    p -= 1
                indices[p + 1] = x
                perm[p + 1] = y
        else:
            order = np.argsort(indices[a:b], kind="mergesort")
            row = indices[a:b][order]
            ids = perm[a:b][order]
            indices[a:b] = row
            perm[a:b] = ids
