"""Exact communication accounting of a row partition (SPEC §6).

For a node -> part map Π of ``A`` (rows of Â and H owned by their part), part q needs row j of
H in every layer iff j is owned elsewhere and some row i of q has ``A_ij != 0``; each such row
is sent once per layer (forward; its gradient row once back in backward). The K x K matrix

    V[r, q] = |{ j : Π(j) = r != q,  ∃ i : Π(i) = q, A_ij != 0 }|      rows r sends q per layer

gives everything: rows sent by r = Σ_q V[r, q], received by q = Σ_r V[r, q], messages sent by r
= |{q : V[r, q] > 0}|; Σ V = the KM1 cut of the column-net hypergraph (the volume HP
minimizes); the graph model's edge cut overestimates it. Compute load of a part = Σ nnz of its
rows of ``A + I`` (:func:`scalegnn.dist.hypergraph.vertex_weights`); imbalance = max / mean.

A plan written by :func:`scalegnn.dist.partition.write_plan` sends exactly ``V[r, q]`` rows from
r to q per layer (its boundary = the needed rows, each once), so with every boundary row kept
(p = 1) one epoch moves, per rank r and graph layer, ``sent_r`` rows forward and the gradients
of its ``recv_r`` boundary rows backward (:func:`epoch_bytes`).
"""

from __future__ import annotations

import numpy as np

from scalegnn.dist.graphs import row_entries
from scalegnn.dist.hypergraph import vertex_weights


def volume_matrix(graph, assignment: np.ndarray, parts: int | None = None) -> np.ndarray:
    """``V[r, q]`` (int64, K x K) above: one pass over each part's rows, O(nnz + K·N)."""
    a = np.asarray(assignment, dtype=np.int64)
    k = int(a.max()) + 1 if parts is None else int(parts)
    order = np.argsort(a, kind="stable")
    bounds = np.zeros(k + 1, dtype=np.int64)
    np.cumsum(np.bincount(a, minlength=k), out=bounds[1:])
    need = np.zeros(graph.num_nodes, dtype=bool)
    out = np.zeros((k, k), dtype=np.int64)
    for q in range(k):
        rows = order[bounds[q]:bounds[q + 1]]
        pos, _ = row_entries(graph.indptr, rows)
        need[graph.indices[pos]] = True
        need[rows] = False                       # a part never sends to itself
        cols = np.flatnonzero(need)
        out[:, q] = np.bincount(a[cols], minlength=k)
        need[cols] = False
    return out


def _avg_max(x) -> dict:
    x = np.asarray(x, dtype=np.float64)
    return {"avg": float(x.mean()), "max": float(x.max())}


def comm_report(graph, assignment: np.ndarray, parts: int | None = None) -> dict:
    """Per-rank volume (rows per layer), messages (per layer, one direction) and compute load of
    a partition, with their avg/max; ``volume_total`` = KM1 = rows sent per layer by all ranks."""
    a = np.asarray(assignment)
    v = volume_matrix(graph, a, parts)
    k = v.shape[0]
    w = np.bincount(a, weights=vertex_weights(graph), minlength=k)
    nodes = np.bincount(a, minlength=k)
    sent, recv = v.sum(1), v.sum(0)
    msgs = (v > 0).sum(1)
    return {
        "parts": k, "num_nodes": int(graph.num_nodes),
        "volume_total": int(v.sum()),
        "volume_avg": float(sent.mean()), "volume_max": int(sent.max()),
        "recv_volume_max": int(recv.max()),
        "messages_avg": float(msgs.mean()), "messages_max": int(msgs.max()),
        "compute_imbalance": float(w.max() / w.mean()) if w.mean() > 0 else 1.0,
        "node_imbalance": float(nodes.max() / nodes.mean()),
        "sent": sent.tolist(), "recv": recv.tolist(), "messages": msgs.tolist(),
        "compute_load": w.astype(np.int64).tolist(),
    }


def exchanged_layers(model, overlap: bool = True) -> list[tuple[int, bool]]:
    """``(width, backward)`` of the rows each graph layer of a GraphSAINTNet exchanges: the
    narrower of its input and output in the overlapped forward (:mod:`scalegnn.dist.forward`),
    its input through the model's exchange hook. ``backward``: gradient rows go back to the
    owners, unless the exchanged rows are the raw input features (layer 0 exchanging its input),
    which need no gradient."""
    out = []
    for i, layer in enumerate(model.layers):
        if layer.order > 0:
            narrow = overlap and layer.out_dim < layer.in_dim
            out.append((layer.out_dim if narrow else layer.in_dim, i > 0 or narrow))
    return out


def epoch_bytes(sent_rows, recv_rows, layers, itemsize: int) -> np.ndarray:
    """Bytes each rank sends in one p = 1 epoch: its ``sent_rows`` in every graph layer forward,
    and back the gradients of the ``recv_rows`` it received in every layer with a backward
    (``layers`` from :func:`exchanged_layers`)."""
    fwd = sum(w for w, _ in layers)
    bwd = sum(w for w, back in layers if back)
    return (np.asarray(sent_rows, dtype=np.int64) * fwd
            + np.asarray(recv_rows, dtype=np.int64) * bwd) * int(itemsize)
