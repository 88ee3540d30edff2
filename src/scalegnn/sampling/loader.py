"""GraphSAINT minibatch loader: sampler + normalization + prefetching pool -> Batch stream.

Inductive (default): sample ``dataset.train_graph`` (global ids, train-train edges only) over
``dataset.train_idx``. Transductive: sample ``dataset.graph`` over all nodes; loss only on
``dataset.train_idx``. Each Batch carries

  adj.data[e] = Â_s[v, u] = multiplier[e] / deg(v)   (deg in the sampled-from graph; SPEC §1.2)

plus ``edge_ids``, ``adj_t_perm`` (data_T = data[adj_t_perm]), ``x`` (float32 features of
``nodes``, gathered by the feature store: a tensor, or CSR rows for CSR features),
``y`` (int64 classes or float32 0/1 matrix) and ``loss_weight`` (minibatch loss =
sum_i loss_weight[i] * L_i). Batches form one stream: the K pre-sampled subgraphs kept (stream
indices 0..K-1 of the N counted) first, then fresh ones N, N+1, ...; the pool's producer thread
assembles both (and pins them when the model is on a GPU: ``PooledLoader.pin_dtype``). An
epoch is the next ``len(loader)`` = ceil(|V_train| / expected |V_s|) batches of that stream.
With a ``shard`` (rank r of W, data-parallel training), the loader yields the stream's
positions r, r + W, r + 2W, ... (and pre-samples only its share of the N), so the W ranks
together see exactly the single-process stream.
"""

from __future__ import annotations

import time

import numpy as np
import torch

from scalegnn.batch import Batch
from scalegnn.sampling.normalization import Normalization
from scalegnn.sampling.pool import PooledLoader
from scalegnn.sampling.sampler_base import Subgraph, check_int
from scalegnn.sampling.samplers import make_sampler
from scalegnn.shard import SINGLE, Shard
from scalegnn.threads import trim_heap


class GraphSAINTLoader(PooledLoader):
    """Iterable of :class:`~scalegnn.batch.Batch` (see module docstring).

    ``num_threads``: sampler threads (None: numba's default); ``pool_depth``: ready batches
    kept ahead (0: no background thread, batches are made on demand); ``clip_multiple``: make
    |V_s| a multiple of it by random node dropping (0: off). Pre-sampled subgraphs are kept
    for reuse up to PRESAMPLE_KEEP_BYTES (the rest are only counted; fresh ones continue the
    stream after all N).
    """

    PRESAMPLE_KEEP_BYTES = 2 << 30

    def __init__(self, dataset, sampler: str, params: dict, *, transductive: bool = False,
                 coverage: float = 50, normalize: bool = True, seed: int = 0,
                 num_threads: int | None = None, pool_depth: int = 4, clip_multiple: int = 0,
                 shard: Shard = SINGLE):
        self.dataset = dataset
        self.shard = shard
        self.transductive = bool(transductive)
        self.seed = int(seed)
        self.pool_depth = check_int("pool_depth", pool_depth, 0)
        self.clip_multiple = check_int("clip_multiple", clip_multiple, 0)
        if num_threads is not None:
            check_int("num_threads", num_threads, 1)
        self.num_threads = num_threads
        train_idx = np.asarray(dataset.train_idx, dtype=np.int64)
        if self.transductive:
            graph, nodes = dataset.graph, np.arange(dataset.num_nodes, dtype=np.int64)
        else:
            graph, nodes = dataset.train_graph, train_idx
        self.sampler = make_sampler(sampler, graph, nodes, params)
        self.norm, presampled = Normalization.estimate(
            self.sampler, train_idx, dataset.num_nodes, coverage, self.seed, normalize,
            num_threads=num_threads, clip_multiple=self.clip_multiple,
            keep=self.PRESAMPLE_KEEP_BYTES, shard=shard)
        self.presample_seconds = self.norm.presample_seconds
        self._graph = graph
        self._presampled: list[Subgraph | None] = presampled
        self._next_presampled = 0   # this rank's k-th batch is stream position r + k W:
        self._next_fresh = len(presampled)  # pre-sampled for k < len(presampled), else fresh
        self._len = self.sampler.batches_per_epoch(train_idx.size)
        self._chunk = max(4 * (num_threads or 2), self.pool_depth, 1)
        self._pool = None
        self._closed = False
        self.stats = {"presample_seconds": self.presample_seconds, "presampled": len(presampled),
                      "presample_subgraphs": self.norm.num_subgraphs,
                      "sample_seconds": 0.0, "gather_seconds": 0.0, "wait_seconds": 0.0,
                      "batches": 0}
        trim_heap()  # the setup's freed degree tables and node sets (threads.trim_heap)

    # -------------------------------------------------------------- iteration
    def next_batch(self) -> Batch:
        """The next batch of the stream (pre-sampled ones first)."""
        self._check_open()
        batch = self._next_produced()
        self.stats["batches"] += 1
        return batch

    def seek(self, position: int):
        """Continue the stream after ``position`` consumed batches, exactly as if they had been
        taken (exact resume); only before the first batch is taken."""
        if self.stats["batches"] or self._pool is not None:
            raise RuntimeError("GraphSAINTLoader.seek: only before the first batch")
        position = check_int("position", position, 0)
        skip = min(position, len(self._presampled))
        for i in range(skip):
            self._presampled[i] = None
        self._next_presampled = skip
        self._next_fresh = max(position, len(self._presampled))
        self.stats["batches"] = position

    # -------------------------------------------------------------- production
    def _produce(self) -> list[Batch]:
        """The stream's next batches; runs in the pool thread (or inline): the next kept
        pre-sampled subgraph's batch while there is one (assembled here, off the training
        thread), else one multi-threaded sampler call."""
        k = self._next_presampled
        if k < len(self._presampled):
            sub, self._presampled[k] = self._presampled[k], None   # free as we go
            self._next_presampled = k + 1
            return [self._make_batch(sub, self.stream_index(k))]
        count = 1 if self.pool_depth == 0 else self._chunk
        start = self.stream_index(self._next_fresh)
        self._next_fresh += count
        step = self.shard.world
        t0 = time.perf_counter()
        subs = self.sampler.sample(count, self.seed, self.num_threads, start=start, step=step,
                                   clip_multiple=self.clip_multiple,
                                   edge_values=self.norm.edge_multiplier,
                                   row_scale="inverse_degree")
        self.stats["sample_seconds"] += time.perf_counter() - t0
        return [self._make_batch(s, start + i * step) for i, s in enumerate(subs)]

    def stream_index(self, k: int) -> int:
        """The stream index of this rank's ``k``-th batch: stream position ``p = r + k W`` is
        pre-sampled subgraph ``p`` while ``p < K`` (kept), else fresh subgraph ``N + p - K``."""
        p = self.shard.rank + k * self.shard.world
        return p if p < self.norm.num_kept else self.norm.num_subgraphs + p - self.norm.num_kept

    def _make_batch(self, sub: Subgraph, stream_index: int) -> Batch:
        t0 = time.perf_counter()
        adj = sub.graph
        if adj.data is None:  # pre-sampled: multipliers were not known when it was drawn
            indptr = self._graph.indptr   # 1/deg(v) in the sampled-from graph, as the kernel
            inv = (1.0 / np.maximum(indptr[sub.nodes + 1] - indptr[sub.nodes], 1)) \
                .astype(np.float32)
            adj = adj.with_data(self.norm.edge_multipliers(sub) * np.repeat(inv, adj.degrees()))
        x = self.dataset.features.gather(sub.nodes)   # CSR rows stay CSR
        y = torch.from_numpy(np.ascontiguousarray(self.dataset.labels[sub.nodes]))
        lw = torch.from_numpy(np.ascontiguousarray(self.norm.loss_weights(sub), np.float32))
        self.stats["gather_seconds"] += time.perf_counter() - t0
        return Batch(nodes=sub.nodes, adj=adj, edge_ids=sub.edge_ids,
                     adj_t_perm=sub.transpose_perm, x=x, y=y, loss_weight=lw,
                     meta={"stream_index": stream_index})
