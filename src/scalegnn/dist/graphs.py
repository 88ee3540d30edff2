"""CSR helpers of the partitioners: the sparsified graph METIS and Mt-KaHyPar are given when the
full one would not fit their memory, and the entry positions of a set of rows (what a rank's
local matrix and the communication accounting read)."""

from __future__ import annotations

import numpy as np

from scalegnn.graph import Graph


def sparsify_for_partitioning(graph, max_entries: int, seed: int = 0):
    """A subgraph with at most ~``max_entries`` stored entries for METIS to partition.

    METIS needs ~100 bytes per stored entry on power-law graphs (measured: 0.8 GB for a
    2^18-node Kronecker graph with 7.6M entries), so a 2^22-node graph (128M entries) would
    need ~13 GB. Each undirected edge (u, v) is kept with probability
    ``min(1, k / min(deg u, deg v))``, ``k = max_entries / (2 n)``: every node of degree
    <= k keeps all its edges (its placement stays exact), hubs keep a sample; the expected
    number of kept edges is at most ``n k``. Rows are processed in blocks (bounded temporaries).
    """
    n = graph.num_nodes
    if graph.num_edges <= max_entries:
        return graph
    k = max(max_entries / (2.0 * n), 1.0)
    deg = graph.degrees()
    rng = np.random.default_rng([int(seed), 0x5eed])
    kept_u, kept_v = [], []
    block = 1 << 18
    for s in range(0, n, block):
        e = min(n, s + block)
        lo, hi = graph.indptr[s], graph.indptr[e]
        u = np.repeat(np.arange(s, e, dtype=np.int64), deg[s:e])
        v = graph.indices[lo:hi].astype(np.int64)
        m = u < v                                   # decide each undirected edge once
        u, v = u[m], v[m]
        prob = np.minimum(1.0, k / np.minimum(deg[u], deg[v]))
        keep = rng.random(u.shape[0]) < prob
        kept_u.append(u[keep].astype(graph.indices.dtype))
        kept_v.append(v[keep].astype(graph.indices.dtype))
    u, v = np.concatenate(kept_u), np.concatenate(kept_v)
    del kept_u, kept_v
    return Graph.from_edges(u, v, n, symmetrize=True)


def row_entries(indptr: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Positions in ``indices`` of the entries of ``rows`` (row-major), and the new indptr."""
    starts = indptr[rows]
    lens = indptr[rows + 1] - starts
    local_ptr = np.zeros(rows.shape[0] + 1, dtype=np.int64)
    np.cumsum(lens, out=local_ptr[1:])
    pos = np.arange(local_ptr[-1], dtype=np.int64)
    pos += np.repeat(starts - local_ptr[:-1], lens)
    return pos, local_ptr
