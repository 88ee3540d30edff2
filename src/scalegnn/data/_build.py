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


@nb.njit(**_JIT)
def _count_kept(indptr, indices, mask, counts):
    for u in range(indptr.shape[0] - 1):
        if mask[u]:
            c = 0
            for e in range(indptr[u], indptr[u + 1]):
                if mask[indices[e]]:
                    c += 1
            counts[u + 1] = c


@nb.njit(**_JIT)
def _fill_kept(indptr, indices, mask, out_indptr, out_indices):
    for u in range(indptr.shape[0] - 1):
        if mask[u]:
            k = out_indptr[u]
            for e in range(indptr[u], indptr[u + 1]):
                v = indices[e]
                if mask[v]:
                    out_indices[k] = v
                    k += 1


def restrict_to_nodes(graph: Graph, nodes) -> Graph:
    """The entries of ``graph`` whose both endpoints are in ``nodes``, global ids kept (the
    GraphSAINT ``adj_train``); rows keep their order. Two passes over the CSR: memory is the
    result only (no edge list)."""
    mask = np.zeros(graph.num_nodes, dtype=np.bool_)
    mask[np.asarray(nodes, dtype=np.int64)] = True
    counts = np.zeros(graph.num_nodes + 1, dtype=np.int64)
    _count_kept(graph.indptr, graph.indices, mask, counts)
    np.cumsum(counts, out=counts)
    indices = np.empty(int(counts[-1]), dtype=graph.indices.dtype)
    _fill_kept(graph.indptr, graph.indices, mask, counts, indices)
    return Graph(counts, indices, graph.num_cols, validate=False)


@nb.njit(parallel=True, **_JIT)
def neighbour_mean(indptr, indices, values, out):
    """``out[v] = (Σ_{u ∈ N(v)} values[u]) / |N(v)|`` (0 for isolated v): ``D⁻¹A values``,
    summed in float64 per row; no per-edge array is formed."""
    k = values.shape[1]
    for v in nb.prange(indptr.shape[0] - 1):
        a, b = indptr[v], indptr[v + 1]
        acc = np.zeros(k, dtype=np.float64)
        for e in range(a, b):
            u = indices[e]
            for j in range(k):
                acc[j] += values[u, j]
        for j in range(k):
            out[v, j] = acc[j] / (b - a) if b > a else 0.0


@nb.njit(**_JIT)
def kept_in_rows(indptr, indices, mask, start, stop, out):
    """Write the entries ``v`` with ``mask[u] and mask[v]`` of rows ``start:stop`` to ``out``
    (large enough: at most ``indptr[stop] - indptr[start]``); returns how many."""
    k = 0
    for u in range(start, stop):
        if mask[u]:
            for e in range(indptr[u], indptr[u + 1]):
                v = indices[e]
                if mask[v]:
                    out[k] = v
                    k += 1
    return k


def restricted_pieces(graph: Graph, nodes, entries: int = 1 << 22):
    """:func:`restrict_to_nodes` without building it: ``(indptr, pieces)`` where ``pieces()``
    yields its ``indices`` in consecutive row blocks of about ``entries`` parent entries, into
    one reused buffer (for writing the result to a file without holding it)."""
    mask = np.zeros(graph.num_nodes, dtype=np.bool_)
    mask[np.asarray(nodes, dtype=np.int64)] = True
    counts = np.zeros(graph.num_nodes + 1, dtype=np.int64)
    _count_kept(graph.indptr, graph.indices, mask, counts)
    np.cumsum(counts, out=counts)
    stops = np.searchsorted(graph.indptr, np.arange(entries, graph.num_edges + entries, entries),
                            side="right") - 1

    def pieces():
        buf = np.empty(min(entries, graph.num_edges) or 1, dtype=graph.indices.dtype)
        start = 0
        for stop in np.unique(np.append(np.maximum(stops, 1), graph.num_nodes)):
            stop = int(min(stop, graph.num_nodes))
            if stop <= start:
                continue
            span = int(graph.indptr[stop] - graph.indptr[start])
            out = buf if span <= buf.shape[0] else np.empty(span, dtype=buf.dtype)  # one huge row
            k = kept_in_rows(graph.indptr, graph.indices, mask, start, stop, out)
            yield out[:k]
            start = stop

    return counts, pieces
