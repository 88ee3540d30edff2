"""Slow, obviously correct shaDow extractors, for the tests (small graphs only).

* :func:`khop_ball`: the nodes within ``depth`` hops of a target (plain BFS); what
  ``KHopExtractor(budget=-1)`` must return exactly.
* :func:`ppr_exact`: personalized PageRank by power iteration,
  ``p = alpha e_t + (1 - alpha) p P`` with ``P = D^-1 A`` (rows of isolated nodes are zero).
  Error bound of the push estimate (``ppr.PPRExtractor``), for a symmetric graph:
  ``0 <= p_exact(v) - p_push(v) <= eps * deg(v)``. Proof: push keeps the invariant
  ``p_exact = p + sum_u r(u) pi_u`` (``pi_u`` = PPR from u) and stops with
  ``r(u) <= eps * deg(u)``; on an undirected graph ``deg(u) pi_u(v) = deg(v) pi_v(u)``, so
  ``sum_u r(u) pi_u(v) <= eps * deg(v) * sum_u pi_v(u) <= eps * deg(v)``.
* :func:`ppr_topk_exact`: the extractor's selection rule applied to exact scores.
* :func:`induced_blocks`: block-diagonal induced subgraph by scipy slicing.
"""

from __future__ import annotations

from collections import deque

import numpy as np
import scipy.sparse as sp

from scalegnn.graph import Graph


def khop_ball(graph: Graph, target: int, depth: int) -> np.ndarray:
    """Sorted ids of the nodes at distance <= depth from ``target``."""
    dist = {int(target): 0}
    todo = deque([int(target)])
    while todo:
        u = todo.popleft()
        if dist[u] == depth:
            continue
        for v in graph.indices[graph.indptr[u]:graph.indptr[u + 1]]:
            if int(v) not in dist:
                dist[int(v)] = dist[u] + 1
                todo.append(int(v))
    return np.array(sorted(dist), dtype=np.int64)


def ppr_exact(graph: Graph, target: int, alpha: float, iters: int = 0) -> np.ndarray:
    """PPR vector from ``target`` by power iteration (to float64 precision by default)."""
    n = graph.num_nodes
    a = graph.to_scipy(np.float64).toarray()
    deg = a.sum(axis=1)
    p_mat = np.divide(a, deg[:, None], out=np.zeros_like(a), where=deg[:, None] > 0)
    e = np.zeros(n)
    e[target] = 1.0
    p = alpha * e
    steps = iters or int(np.ceil(np.log(1e-18) / np.log(1.0 - alpha)))
    for _ in range(steps):
        p = alpha * e + (1.0 - alpha) * (p @ p_mat)
    return p


def ppr_topk_exact(scores: np.ndarray, target: int, k: int, threshold: float = 0.0):
    """The extractor's rule on given scores: the target, then the k-1 best other nodes with
    score > 0 by (score desc, id asc), cut to score >= threshold * best other score."""
    others = [v for v in np.flatnonzero(scores > 0) if v != target]
    others.sort(key=lambda v: (-scores[v], v))
    others = others[:k - 1]
    if threshold > 0 and others:
        best = scores[others[0]]
        others = [v for v in others if scores[v] >= threshold * best]
    return np.array([target] + others, dtype=np.int64)


def induced_blocks(graph: Graph, blocks) -> tuple[np.ndarray, np.ndarray]:
    """(indptr, indices) of the block-diagonal stack of graph[nodes][:, nodes] for each
    sorted node array in ``blocks`` (stack rows, sorted within each row)."""
    a = graph.to_scipy(np.float64)
    parts = [a[np.asarray(b)][:, np.asarray(b)] for b in blocks]
    if not parts:
        return np.zeros(1, np.int64), np.zeros(0, np.int64)
    m = sp.block_diag(parts, format="csr")
    m.sort_indices()
    return m.indptr.astype(np.int64), m.indices.astype(np.int64)
