"""Structural node labels for link prediction: each node's distances to the two ends of its pair.

A message-passing GNN with mean aggregation cannot count the common neighbours of u and v, nor
tell which nodes of the pair's subgraph lie near which end (SEAL, Zhang & Chen 2018: labels
relative to the target pair are what lets a subgraph GNN beat the heuristics). For block k of
a pair batch (after :func:`~scalegnn.shadow.batch.drop_pair_edges`, so the edge (u, v) itself
gives no distance) and each row i of the block::

    d_u(i) = shortest-path hops from u = center[k] to i inside block k
    d_v(i) = the same from v = center2[k]
    a = min(d_u, d_v, D + 1),  b = min(max(d_u, d_v), D + 1)      (D = ``cap``; unreachable = D + 1)
    label(i) = index of the unordered pair {a, b} in row-major order of the upper triangle
             = a * (D + 2) - a * (a - 1) / 2 + (b - a)

Unordered, because a pair (u, v) and (v, u) are the same candidate edge. There are
``(D + 2)(D + 3) / 2`` labels; :func:`label_onehot` turns them into float32 columns that
:meth:`LinkMode <scalegnn.shadow.mode.LinkMode>` appends to the node features (label {1, 1} are
the common neighbours, so a sum readout of the label columns counts them).
"""

from __future__ import annotations

import numba as nb
import numpy as np
import torch

from scalegnn.errors import ConfigError

MAX_CAP = 16


def num_labels(cap: int) -> int:
    """Number of distinct labels for distance cap D = ``cap`` (0 when labels are off)."""
    cap = int(cap)
    return 0 if cap <= 0 else (cap + 2) * (cap + 3) // 2


@nb.njit(cache=True, nogil=True)
def _bfs(indptr, indices, lo, hi, src, cap, dist, queue):
    """dist[lo:hi] = hops from src inside rows [lo, hi) (cap + 1 when farther or unreachable)."""
    for i in range(lo, hi):
        dist[i] = cap + 1
    dist[src] = 0
    head, tail = 0, 1
    queue[0] = src
    while head < tail:
        x = queue[head]
        head += 1
        if dist[x] >= cap:
            continue
        for e in range(indptr[x], indptr[x + 1]):
            y = indices[e]
            if y >= lo and y < hi and dist[y] > dist[x] + 1:
                dist[y] = dist[x] + 1
                queue[tail] = y
                tail += 1


@nb.njit(cache=True, nogil=True)
def _pair_labels(indptr, indices, offsets, center, center2, cap, out):
    n = out.shape[0]
    du = np.empty(n, dtype=np.int64)
    dv = np.empty(n, dtype=np.int64)
    queue = np.empty(n, dtype=np.int64)
    width = cap + 2
    for k in range(offsets.shape[0] - 1):
        lo, hi = offsets[k], offsets[k + 1]
        _bfs(indptr, indices, lo, hi, center[k], cap, du, queue)
        _bfs(indptr, indices, lo, hi, center2[k], cap, dv, queue)
        for i in range(lo, hi):
            a, b = min(du[i], dv[i]), max(du[i], dv[i])
            out[i] = a * width - a * (a - 1) // 2 + (b - a)


def pair_labels(subs, cap: int) -> np.ndarray:
    """int64 label of every row of a pair batch ``subs`` (TargetSubgraphs with ``center2``),
    distances capped at ``cap`` (formula in the module docstring)."""
    cap = int(cap)
    if not 1 <= cap <= MAX_CAP:
        raise ConfigError(f"shadow.pair_labels: distance cap must be in [1, {MAX_CAP}], got {cap}")
    if subs.center2 is None:
        raise ConfigError("shadow.pair_labels: structural labels need pair subgraphs "
                          "(shadow.task: link)")
    out = np.zeros(int(subs.nodes.shape[0]), dtype=np.int64)
    if out.size:
        _pair_labels(np.asarray(subs.indptr, np.int64), np.asarray(subs.indices, np.int64),
                     np.asarray(subs.offsets, np.int64), np.asarray(subs.center, np.int64),
                     np.asarray(subs.center2, np.int64), cap, out)
    return out


def label_onehot(labels: np.ndarray, cap: int) -> torch.Tensor:
    """(n, num_labels(cap)) float32 one-hot rows of ``labels``."""
    out = torch.zeros(labels.shape[0], num_labels(cap), dtype=torch.float32)
    out[torch.arange(labels.shape[0]), torch.from_numpy(labels)] = 1.0
    return out
