"""Build a CSR from an edge stream that is never held in memory whole.

:func:`csr_from_edge_chunks` makes two passes over a *re-playable* chunk generator (same chunk
index -> same edges): pass 1 counts degrees, pass 2 scatters into the final ``indices`` array,
then rows are sorted/deduplicated in place and the array is shrunk without a copy. Peak memory
is therefore ``indices`` (before dedup) + three (n+1)-long int64 arrays + one chunk, instead of
edge list + CSR.

Kernels are pure numba functions over arrays with explicit dtypes.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from scalegnn import _graph_kernels as K
from scalegnn._graph_kernels import add_degree_counts, scatter_with_cursor
from scalegnn.graph import Graph, index_dtype

_JIT = dict(nogil=True, cache=True)


@nb.njit(**_JIT)
def count_self_loops(indptr, indices):
    """Number of entries (u, u)."""
    c = 0
    for u in range(indptr.shape[0] - 1):
        for e in range(indptr[u], indptr[u + 1]):
            if indices[e] == u:
                c += 1
    return c


def shrink(arr: np.ndarray, length: int) -> np.ndarray:
    """``arr[:length]`` as an owning array, reallocated in place when possible (no copy)."""
    if arr.shape[0] == length:
        return arr
    if arr.flags.owndata and arr.flags.c_contiguous and arr.base is None:
        try:
            arr.resize(length, refcheck=False)  # realloc: shrinking keeps the data in place
            return arr
        except (ValueError, SystemError):
            pass
    return arr[:length].copy()


def csr_from_edge_chunks(make_chunk, num_chunks: int, num_nodes: int, *,
                         symmetrize: bool = True, deduplicate: bool = True,
                         remove_self_loops: bool = True) -> Graph:
    """Graph from ``make_chunk(i) -> (src, dst)`` for i in range(num_chunks), in two passes.

    ``make_chunk`` must return the same edges for the same ``i`` (it is called twice per i).
    The result equals ``Graph.from_edges(concat(src), concat(dst), num_nodes, ...)``.
    """
    counts = np.zeros(num_nodes + 1, dtype=np.int64)
    for i in range(num_chunks):
        src, dst = make_chunk(i)
        add_degree_counts(src, dst, counts, symmetrize)
    np.cumsum(counts, out=counts)
    indptr = counts
    indices = np.empty(int(indptr[-1]), dtype=index_dtype(num_nodes))
    cursor = indptr[:-1].copy()
    for i in range(num_chunks):
        src, dst = make_chunk(i)
        scatter_with_cursor(src, dst, cursor, indices, symmetrize)
    del cursor
    if deduplicate or remove_self_loops:
        lengths = K.sort_dedupe_rows(indptr, indices, deduplicate, remove_self_loops)
        indptr = K.compact_rows(indptr, indices, lengths)
        del lengths
        indices = shrink(indices, int(indptr[-1]))
    else:
        K.sort_dedupe_rows(indptr, indices, False, False)
    return Graph(indptr, indices, num_nodes, validate=False)
