"""numba kernels behind :mod:`scalegnn.graph`.

Pure functions over arrays with explicit dtypes; no Python objects. Each has a slow, obviously
correct counterpart in the tests (scipy.sparse) that it is checked against.
"""

import numba as nb
import numpy as np

_JIT = dict(nogil=True, cache=True)


@nb.njit(**_JIT)
def add_degree_counts(src, dst, counts, symmetrize):
    """counts[u + 1] += 1 for each (u, v) [and counts[v + 1] += 1 when symmetrizing].

    Called once per edge chunk, so a CSR can be built from a stream of chunks; a prefix sum
    of ``counts`` then gives the row pointers.
    """
    for e in range(src.shape[0]):
        counts[src[e] + 1] += 1
        if symmetrize:
            counts[dst[e] + 1] += 1


@nb.njit(**_JIT)
def scatter_with_cursor(src, dst, cursor, indices, symmetrize):
    """Counting-sort scatter; ``cursor[u]`` is the next free slot of row u (advanced here)."""
    for e in range(src.shape[0]):
        u = src[e]
        v = dst[e]
        indices[cursor[u]] = v
        cursor[u] += 1
        if symmetrize:
            indices[cursor[v]] = u
            cursor[v] += 1


@nb.njit(parallel=True, **_JIT)
def sort_dedupe_rows(indptr, indices, dedupe, drop_self_loops):
    """Sort each row in place; optionally drop duplicates / self loops. Returns new row lengths."""
    n = indptr.shape[0] - 1
    lengths = np.zeros(n, dtype=np.int64)
    for u in nb.prange(n):
        a = indptr[u]
        b = indptr[u + 1]
        row = indices[a:b]
        row.sort()
        k = 0
        for j in range(b - a):
            v = row[j]
            if drop_self_loops and v == u:
                continue
            if dedupe and k > 0 and row[k - 1] == v:
                continue
            row[k] = v
            k += 1
        lengths[u] = k
    return lengths


@nb.njit(**_JIT)
def compact_rows(indptr, indices, lengths):
    """Shift rows left in place so they are contiguous again; returns the new indptr.

    Safe in place because each row's new start is never after its old start.
    """
    n = indptr.shape[0] - 1
    new_indptr = np.empty(n + 1, dtype=np.int64)
    new_indptr[0] = 0
    for u in range(n):
        a = indptr[u]
        t = new_indptr[u]
        for j in range(lengths[u]):
            indices[t + j] = indices[a + j]
        new_indptr[u + 1] = t + lengths[u]
    return new_indptr


@nb.njit(**_JIT)
def check_csr(indptr, indices, num_cols):
    """Returns (code, position): 0 ok, 1 indptr not monotone, 2 id < 0, 3 id >= num_cols."""
    for u in range(indptr.shape[0] - 1):
        if indptr[u + 1] < indptr[u]:
            return 1, u
    for e in range(indices.shape[0]):
        v = indices[e]
        if v < 0:
            return 2, e
        if v >= num_cols:
            return 3, e
    return 0, 0


@nb.njit(**_JIT)
def rows_sorted(indptr, indices):
    for u in range(indptr.shape[0] - 1):
        for e in range(indptr[u] + 1, indptr[u + 1]):
            if indices[e] < indices[e - 1]:
                return False
    return True


@nb.njit(**_JIT)
def rows_strictly_sorted(indptr, indices):
    """True if every row is strictly increasing (sorted, no duplicates: scipy's canonical)."""
    for u in range(indptr.shape[0] - 1):
        for e in range(indptr[u] + 1, indptr[u + 1]):
            if indices[e] <= indices[e - 1]:
                return False
    return True


@nb.njit(**_JIT)
def _bsearch(arr, lo, hi, x):
    """Index of x in the sorted slice arr[lo:hi], or -1."""
    end = hi
    while lo < hi:
        mid = (lo + hi) >> 1
        if arr[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    if lo < end and arr[lo] == x:
        return lo
    return -1


@nb.njit(parallel=True, **_JIT)
def induced_subgraph(indptr, indices, nodes):
    """Node-induced subgraph of a CSR graph on the sorted, unique ``nodes``.

    Local ids follow the order of ``nodes``. Membership is tested by binary search in ``nodes``,
    so no |V|-long array is touched: cost O(sum of degrees of ``nodes`` * log |nodes|).
    Returns (indptr_s, indices_s (int32, local ids), edge_ids (int64, positions in the parent)).
    """
    k = nodes.shape[0]
    counts = np.zeros(k + 1, dtype=np.int64)
    for i in nb.prange(k):
        u = nodes[i]
        c = 0
        for e in range(indptr[u], indptr[u + 1]):
            if _bsearch(nodes, 0, k, indices[e]) >= 0:
                c += 1
        counts[i + 1] = c
    for i in range(k):
        counts[i + 1] += counts[i]
    sub_indices = np.empty(counts[k], dtype=np.int32)
    edge_ids = np.empty(counts[k], dtype=np.int64)
    for i in nb.prange(k):
        u = nodes[i]
        t = counts[i]
        for e in range(indptr[u], indptr[u + 1]):
            j = _bsearch(nodes, 0, k, indices[e])
            if j >= 0:
                sub_indices[t] = j
                edge_ids[t] = e
                t += 1
    return counts, sub_indices, edge_ids


@nb.njit(**_JIT)
def symmetric_transpose_perm(indptr, indices):
    """Permutation ``perm`` with data_T = data[perm] for a symmetric pattern with sorted rows.

    Journal paper Alg. 6: scanning rows u in increasing order, the entries (u, v) are met in the
    order in which row v of the transpose lists its column u, so a per-row cursor places each
    one. O(|V| + |E|).
    """
    n = indptr.shape[0] - 1
    cursor = indptr[:n].copy()
    perm = np.empty(indices.shape[0], dtype=np.int64)
    for u in range(n):
        for e in range(indptr[u], indptr[u + 1]):
            v = indices[e]
            perm[cursor[v]] = e
            cursor[v] += 1
    return perm


@nb.njit(**_JIT)
def general_transpose(indptr, indices, num_cols):
    """CSR of the transpose of an (n x num_cols) pattern plus the permutation of its data.

    Returns (indptr_t, indices_t, perm) with data_T = data[perm]; rows of the result are sorted.
    """
    n = indptr.shape[0] - 1
    counts = np.zeros(num_cols + 1, dtype=np.int64)
    for e in range(indices.shape[0]):
        counts[indices[e] + 1] += 1
    for j in range(num_cols):
        counts[j + 1] += counts[j]
    cursor = counts[:num_cols].copy()
    indices_t = np.empty(indices.shape[0], dtype=np.int64)
    perm = np.empty(indices.shape[0], dtype=np.int64)
    for u in range(n):
        for e in range(indptr[u], indptr[u + 1]):
            v = indices[e]
            indices_t[cursor[v]] = u
            perm[cursor[v]] = e
            cursor[v] += 1
    return counts, indices_t, perm


@nb.njit(**_JIT)
def is_symmetric_pattern(indptr, indices):
    """True if (u, v) in E implies (v, u) in E; rows must be sorted (duplicates allowed).

    One pass in the spirit of Alg. 6: scanning rows u in increasing order, the distinct
    entries (u, v) must meet row v's distinct entries in order, tracked by a cursor per row;
    the pattern is symmetric iff every check matches and every cursor reaches its row's end.
    O(|V| + |E|) with one random access per entry (a binary search per entry was ~5x slower
    on R-MAT graphs).
    """
    n = indptr.shape[0] - 1
    cursor = indptr[:n].copy()
    for u in range(n):
        prev = -1
        for e in range(indptr[u], indptr[u + 1]):
            v = indices[e]
            if v == prev:
                continue
            prev = v
            if v >= n:
                return False
            c = cursor[v]
            end = indptr[v + 1]
            if c >= end or indices[c] != u:
                return False
            c += 1
            while c < end and indices[c] == u:
                c += 1
            cursor[v] = c
    for v in range(n):
        if cursor[v] != indptr[v + 1]:
            return False
    return True
