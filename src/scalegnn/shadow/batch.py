"""Per-target subgraphs -> :class:`~scalegnn.batch.Batch`, and a prefetching batch stream.

:func:`branch_batch` turns one extractor's :class:`~scalegnn.shadow.extract.TargetSubgraphs`
into a block-diagonal Batch: ``adj`` is the stacked induced CSR with ``data[e] = 1 / deg_block(v)``
(mean aggregation inside each target's subgraph, row v of edge e; or GCN's symmetric operator,
``shadow.adj_norm: sym``), ``x`` the features of the
rows (nodes duplicated per target, as in the reference shaDow code), ``segment`` the block of
each row and ``targets`` the center row of each block. :func:`ensemble_batch` stacks one branch
per extractor for the same targets and puts labels and loss weights (one entry per target) on
the returned Batch, whose ``meta["branches"]`` lists the branches (branch 0 is the Batch
itself when there is one extractor).

:func:`prefetch` runs a producer function over a list of jobs in a background thread, at most
``depth`` ahead, yielding results in job order (numba extraction releases the GIL, so
extraction overlaps training).
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses

import numpy as np

from scalegnn.batch import Batch
from scalegnn.errors import ConfigError
from scalegnn.features import as_feature_store
from scalegnn.graph import Graph, index_dtype
from scalegnn.nn.gcn import gcn_norm


def drop_pair_edges(subs):
    """``subs`` without the edges between each pair's two ends (link prediction: a training
    positive must not be told its own answer by the edge it is about, which held-out and
    negative pairs never have)."""
    if subs.center2 is None:
        return subs
    n = subs.nodes.shape[0]
    deg = np.diff(subs.indptr)
    rows = np.repeat(np.arange(n, dtype=np.int64), deg)
    seg = np.repeat(np.arange(subs.offsets.shape[0] - 1, dtype=np.int64), np.diff(subs.offsets))
    c1, c2 = np.asarray(subs.center)[seg[rows]], np.asarray(subs.center2)[seg[rows]]
    cols = np.asarray(subs.indices)
    drop = ((rows == c1) & (cols == c2)) | ((rows == c2) & (cols == c1))
    if not drop.any():
        return subs
    keep = ~drop
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows[keep], minlength=n), out=indptr[1:])
    return dataclasses.replace(subs, indptr=indptr, indices=cols[keep])


ADJ_NORMS = ("mean", "sym")


def branch_batch(subs, features, norm: str = "mean", unique: bool = False) -> Batch:
    """One extractor's block-diagonal subgraphs with the rows of ``features`` (a feature
    store or an array) gathered. ``norm``:
    ``mean`` -> ``adj = D⁻¹A`` of the stack (mean aggregation); ``sym`` -> GCN's
    ``(D+I)^{-1/2}(A+I)(D+I)^{-1/2}`` (:func:`scalegnn.nn.gcn.gcn_norm`; the weights then carry
    each node's degree inside its subgraph, which the mean discards).

    ``unique``: ``x`` holds each distinct node of the stack once (ascending id) and
    ``meta["inverse"]`` the row of ``x`` of every stack row (``x[inverse]`` is the usual
    ``x``): scopes overlap, so the first layer's ``X W`` then runs once per node, not once per
    appearance (:func:`scalegnn.shadow.model.unique_first_layer`)."""
    if norm not in ADJ_NORMS:
        raise ConfigError(f"shadow.adj_norm: {norm!r} is not one of {list(ADJ_NORMS)}")
    n = int(subs.nodes.shape[0])
    deg = np.diff(subs.indptr)
    indices = np.asarray(subs.indices).astype(index_dtype(n), copy=False)
    if norm == "sym":
        adj = gcn_norm(Graph(np.asarray(subs.indptr, dtype=np.int64), indices, num_cols=n,
                             validate=False))
    else:
        inv = np.zeros(n, dtype=np.float32)
        inv[deg > 0] = 1.0 / deg[deg > 0]
        adj = Graph(np.asarray(subs.indptr, dtype=np.int64), indices, num_cols=n,
                    data=np.repeat(inv, deg), validate=False)
    meta = {"center2": None if subs.center2 is None else np.asarray(subs.center2, np.int64)}
    rows = subs.nodes
    if unique:
        rows, inverse = np.unique(subs.nodes, return_inverse=True)
        meta["inverse"] = inverse.astype(np.int64, copy=False)
    x = as_feature_store(features).gather(rows)   # CSR features stay CSR
    segment = np.repeat(np.arange(subs.offsets.shape[0] - 1, dtype=np.int64),
                        np.diff(subs.offsets))
    return Batch(nodes=np.asarray(subs.nodes, dtype=np.int64), adj=adj, x=x, segment=segment,
                 targets=np.asarray(subs.center, dtype=np.int64), meta=meta)


def ensemble_batch(branches: list[Batch], y, loss_weight, target_ids) -> Batch:
    """The training/inference Batch of one set of targets: branch 0's fields, every branch in
    ``meta["branches"]``, one label and one loss weight per target."""
    top = branches[0]
    out = Batch(nodes=top.nodes, adj=top.adj, x=top.x, segment=top.segment,
                targets=top.targets, y=y, loss_weight=loss_weight,
                meta={"branches": branches, "target_ids": np.asarray(target_ids, np.int64),
                      "center2": top.meta.get("center2")})
    return out


def prefetch(produce, jobs, depth: int = 2):
    """Yield ``produce(job)`` for each job in order, computing up to ``depth`` ahead in one
    background thread (an exception is re-raised at the job it belongs to)."""
    jobs = list(jobs)
    if depth <= 0 or len(jobs) <= 1:
        for job in jobs:
            yield produce(job)
        return
    with cf.ThreadPoolExecutor(max_workers=1, thread_name_prefix="scalegnn-shadow") as ex:
        futures = [ex.submit(produce, job) for job in jobs[:depth]]
        nxt = len(futures)
        try:
            for i in range(len(jobs)):
                result = futures[i].result()
                futures[i] = None
                if nxt < len(jobs):
                    futures.append(ex.submit(produce, jobs[nxt]))
                    nxt += 1
                yield result
        finally:
            for f in futures:
                if f is not None:
                    f.cancel()
