"""GraphSAGE-style neighbour-sampling minibatches (``sampler: neighbour``) for the one trainer.

Each batch is ``batch_size`` seed nodes (training nodes; an epoch is a fresh permutation of
them drawn from ``(seed, epoch)``, cut into ``len(loader)`` = ceil(|V_train| / batch_size)
batches, the last one shorter) expanded hop by hop by :class:`NeighbourSampler` with
``fanouts`` (``fanouts[0]`` neighbours of each seed, ``fanouts[1]`` of each node first reached
at hop 1, ...; -1: all). Inductive (default): sample ``dataset.train_graph``; transductive:
``dataset.graph``. The :class:`~scalegnn.batch.Batch`:

* ``nodes``: the seeds first (``meta["num_seeds"]`` of them), then each hop's new nodes;
* ``adj``: the message-flow blocks as one square CSR, row v = the nodes sampled for v,

      adj[v, u] = 1 / (number of neighbours sampled for v)     (GraphSAGE's mean over the sample)

  rows of the last hop's nodes are empty. One matrix serves every propagation layer: a node is
  expanded once, so a seed's L-hop output only reads rows that were sampled for it. The
  pattern is not symmetric: ``adj_t`` (the transpose, for the backward pass) is built with
  the batch, in the pool thread;
* ``loss_weight``: 1/(seeds of the batch) on the seed rows, 0 elsewhere (the plain mean loss
  over the seeds, as GraphSAINT's un-normalized loss: :meth:`Normalization.loss_weights`).

The model computes every row of the batch, although only the seeds' outputs carry loss (the
last layer needs only the seed rows, the one before the seeds and hop-1 rows): PyG's
NeighborLoader training does the same. Batches form one stream like GraphSAINTLoader's: batch
``p`` of the stream is batch ``p % len`` of epoch ``p // len``, sampled with stream index
``p``, so a batch is the same at any thread count and ``seek`` resumes exactly; with a
``shard`` (rank r of W) the loader yields stream positions r, r + W, r + 2W, ...
"""

from __future__ import annotations

import math
import time

import numpy as np
import torch

from scalegnn.batch import Batch
from scalegnn.errors import ConfigError
from scalegnn.graph import Graph, index_dtype
from scalegnn.sampling.neighbour import NeighbourSample, NeighbourSampler
from scalegnn.sampling.pool import PooledLoader
from scalegnn.sampling.sampler_base import check_int
from scalegnn.shard import SINGLE, Shard


def check_fanouts(fanouts, what: str = "phase.fanouts") -> list[int]:
    """``fanouts`` as a non-empty list of ints >= 1 or -1 (all); else one ConfigError line."""
    bad = ConfigError(f"{what}: expected a list of positive integers or -1 (all neighbours), "
                      f"one per propagation layer, got {fanouts!r}"[:300])
    if not isinstance(fanouts, (list, tuple)) or not fanouts:
        raise bad
    out = []
    for k in fanouts:
        if isinstance(k, bool) or not isinstance(k, (int, np.integer, float)) or \
                (isinstance(k, float) and not k.is_integer()) or not (k >= 1 or k == -1):
            raise bad
        out.append(int(k))
    return out


def neighbour_block(sample: NeighbourSample) -> Graph:
    """The sample's edges as one CSR: row = the node a neighbour was sampled for, weight =
    1 / (neighbours sampled for that row)."""
    n = sample.nodes.shape[0]
    dst = sample.dst
    if dst.size > 1 and np.any(dst[1:] < dst[:-1]):  # the sampler emits rows in order; keep safe
        order = np.argsort(dst, kind="stable")
        dst, src = dst[order], sample.src[order]
    else:
        src = sample.src
    counts = np.bincount(dst, minlength=n)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    data = np.repeat((1.0 / np.maximum(counts, 1)).astype(np.float32), counts)
    return Graph(indptr, src.astype(index_dtype(n)), n, data, validate=False)


class NeighbourLoader(PooledLoader):
    """Iterable of :class:`~scalegnn.batch.Batch` (see module docstring), with
    GraphSAINTLoader's interface (``len``, ``next_batch``, ``position``, ``seek``, ``close``,
    ``stats``). ``params``: the phase's ``fanouts`` and ``batch_size``; ``num_threads``:
    sampler threads (None: numba's default); ``pool_depth``: batches made ahead in the
    background pool (0: made on demand)."""

    name = "neighbour"
    pool_name = "scalegnn-neighbour"
    required = ("fanouts", "batch_size")
    optional = ()
    presample_seconds = 0.0

    def __init__(self, dataset, params: dict, *, transductive: bool = False, seed: int = 0,
                 num_threads: int | None = None, pool_depth: int = 4, shard: Shard = SINGLE):
        missing = [k for k in self.required if k not in params]
        if missing:
            raise ConfigError(f"phase.{missing[0]}: missing (sampler neighbour needs "
                              f"{', '.join(self.required)})")
        self.fanouts = check_fanouts(params["fanouts"])
        self.batch_size = check_int("phase.batch_size", params["batch_size"], 1)
        self.dataset, self.shard, self.seed = dataset, shard, int(seed)
        self.transductive = bool(transductive)
        self.pool_depth = check_int("pool_depth", pool_depth, 0)
        if num_threads is not None:
            check_int("num_threads", num_threads, 1)
        self.num_threads = num_threads
        self.train_idx = np.asarray(dataset.train_idx, dtype=np.int64)
        if self.train_idx.size == 0:
            raise ConfigError("sampler neighbour: the dataset has no training nodes to seed "
                              "batches with")
        graph = dataset.graph if self.transductive else dataset.train_graph
        self.sampler = NeighbourSampler(graph, self.fanouts)
        self._len = math.ceil(self.train_idx.size / self.batch_size)
        self._next = 0            # this rank's next batch to make (k: stream position r + kW)
        self._order = (-1, None)  # (epoch, its permutation of train_idx), made in the producer
        self._pool = None
        self._closed = False
        self.stats = {"presample_seconds": 0.0, "presampled": 0, "presample_subgraphs": 0,
                      "sample_seconds": 0.0, "gather_seconds": 0.0, "wait_seconds": 0.0,
                      "batches": 0}

    # -------------------------------------------------------------- iteration
    def next_batch(self) -> Batch:
        self._check_open()
        batch = self._next_produced()
        self.stats["batches"] += 1
        return batch

    def seek(self, position: int):
        """Continue after ``position`` consumed batches (exact resume); only before the first."""
        if self.stats["batches"] or self._pool is not None:
            raise RuntimeError("NeighbourLoader.seek: only before the first batch")
        self._next = self.stats["batches"] = check_int("position", position, 0)

    def stream_index(self, k: int) -> int:
        """The stream position of this rank's ``k``-th batch."""
        return self.shard.rank + k * self.shard.world

    def seeds_of(self, p: int) -> np.ndarray:
        """The seed nodes of stream position ``p``: batch ``p % len`` of epoch ``p // len``."""
        epoch, b = divmod(p, self._len)
        if self._order[0] != epoch:
            self._order = (epoch, np.random.default_rng([self.seed, epoch])
                           .permutation(self.train_idx.size))
        return self.train_idx[self._order[1][b * self.batch_size:(b + 1) * self.batch_size]]

    # -------------------------------------------------------------- production
    def _produce(self) -> list[Batch]:
        """One batch; runs in the pool thread (or inline)."""
        p = self.stream_index(self._next)
        self._next += 1
        t0 = time.perf_counter()
        sample = self.sampler.sample(self.seeds_of(p), self.seed, p, self.num_threads)
        adj = neighbour_block(sample)
        adj_t = adj.transpose()
        t1 = time.perf_counter()
        self.stats["sample_seconds"] += t1 - t0
        nodes, k = sample.nodes, sample.num_seeds
        lw = np.zeros(nodes.shape[0], dtype=np.float32)
        lw[:k] = np.float32(1.0 / k)
        x = self.dataset.features.gather(nodes)
        y = torch.from_numpy(np.ascontiguousarray(self.dataset.labels[nodes]))
        self.stats["gather_seconds"] += time.perf_counter() - t1
        return [Batch(nodes=nodes, adj=adj, edge_ids=sample.edge_ids, adj_t=adj_t, x=x, y=y,
                      loss_weight=torch.from_numpy(lw),
                      meta={"stream_index": p, "num_seeds": k})]
