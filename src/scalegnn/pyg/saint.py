"""GraphSAINT loaders with PyG's names and batch fields on scalegnn's samplers
(:mod:`scalegnn.sampling.samplers`) and normalization (:class:`~scalegnn.sampling.Normalization`).

Each batch is a ``Data`` of one node-induced subgraph: node attributes at ``n_id`` (sorted),
edge attributes at ``e_id``, ``edge_index`` in local ids, and with ``sample_coverage > 0``

* ``node_norm[v] = N / C_v / |V|`` (N pre-sampled subgraphs, C_v of them holding v, 0.1 for a
  node never sampled; PyG's definition, SPEC §1.2 with every node a loss node), so that
  ``(loss * node_norm).sum()`` over a batch estimates the mean loss over all nodes without bias;
* ``edge_norm[e] = C_v / C_e`` for the edge e = u -> v (clipped to [0, 1e4], 0/0 -> 0.1): the
  aggregator multiplier of SPEC §1.2 for the target v, which aggregates the message.

PyG's own version multiplies by C_u (the source's count) and, before 2.0.4, miscounted N
(pyg#2130); its edge sampler draws with P ∝ deg(u) + deg(v), here P ∝ 1/deg(u) + 1/deg(v)
(SPEC §1.1), with replacement, as GraphSAINT's reference code. The graph must be undirected
(every edge in both directions), as for the GraphSAINT samplers.

The batches form one stream per seed: the pre-sampled subgraphs kept (``Normalization``) come
first, then fresh subgraphs N, N + 1, ...; each epoch takes the next ``num_steps`` of them.
"""

from __future__ import annotations

import math
from collections import deque
from pathlib import Path

import numpy as np
import torch

from scalegnn.errors import ConfigError, DataError
from scalegnn.io import atomic_save_npz, write_error
from scalegnn.pyg._common import (batch_data, check_data, check_kwargs, seed_of, target_csr,
                                  threads_of)
from scalegnn.sampling.normalization import Normalization
from scalegnn.sampling.sampler_base import check_int
from scalegnn.sampling.samplers import make_sampler


class GraphSAINTSampler:
    """Base class (PyG's arguments: ``data``, ``batch_size``, ``num_steps``,
    ``sample_coverage``, ``save_dir``, ``log``; added: ``seed``, None draws one from torch's
    generator, and ``num_threads``). ``save_dir`` keeps the pre-sampling counts in an ``.npz``
    named after the sampler, its budget, the coverage and the seed, read back next time."""

    sampler_name = ""
    PRESAMPLE_KEEP_BYTES = 512 << 20

    def __init__(self, data, batch_size: int, num_steps: int = 1, sample_coverage: float = 0,
                 save_dir=None, log: bool = True, seed: int | None = None,
                 num_threads: int | None = None, **kwargs):
        who = type(self).__name__
        check_kwargs(kwargs, who)
        self.data = check_data(data, who)
        for key in ("node_norm", "edge_norm"):
            if key in data:
                raise DataError(f"{who}: data already has an attribute {key!r}")
        self.batch_size = check_int(f"{who}: batch_size", batch_size)
        self.num_steps = check_int(f"{who}: num_steps", num_steps)
        if isinstance(sample_coverage, bool) or not isinstance(sample_coverage, (int, float)) \
                or not math.isfinite(sample_coverage) or sample_coverage < 0:
            raise ConfigError(f"{who}: sample_coverage must be a number >= 0, got "
                              f"{sample_coverage!r}"[:300])
        self.sample_coverage = sample_coverage
        self.seed = seed_of(seed, who)
        self.num_threads = threads_of(num_threads, who)
        self.csr = target_csr(data, who)
        graph = self.csr.graph
        if not graph.is_symmetric():
            raise DataError(f"{who}: the GraphSAINT samplers need an undirected graph (every "
                            f"edge in both directions): apply torch_geometric.transforms."
                            f"ToUndirected() first")
        self.N, self.E = graph.num_nodes, graph.num_edges
        self.sampler = make_sampler(self.sampler_name, graph,
                                    np.arange(self.N, dtype=np.int64), self._budget())
        self.norm, kept = (None, []) if sample_coverage == 0 else self._normalization(save_dir)
        self._kept = kept
        self._pos = 0          # stream positions taken
        self._fresh = deque()  # drawn ahead: (stream index, subgraph)
        self._next_index = self._stream_index(len(kept))

    def _budget(self) -> dict:
        raise NotImplementedError

    def _name(self) -> str:
        vals = "_".join(str(v) for v in self._budget().values())
        return f"{type(self).__name__.lower()}_{vals}_{self.sample_coverage}_{self.seed}.npz"

    def _normalization(self, save_dir):
        loss = np.arange(self.N, dtype=np.int64)
        if save_dir is None:
            return Normalization.estimate(self.sampler, loss, self.N, self.sample_coverage,
                                          self.seed, num_threads=self.num_threads,
                                          keep=self.PRESAMPLE_KEEP_BYTES)
        path = Path(save_dir) / self._name()
        if path.is_file():
            return self._read_counts(path), []
        norm, kept = Normalization.estimate(self.sampler, loss, self.N, self.sample_coverage,
                                            self.seed, num_threads=self.num_threads, keep=False)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise write_error(path, e) from None
        atomic_save_npz(path, node_counts=norm.node_counts, edge_counts=norm.edge_counts,
                        num_subgraphs=np.int64(norm.num_subgraphs))
        return norm, kept

    def _read_counts(self, path: Path) -> Normalization:
        try:
            with np.load(path, allow_pickle=False) as z:
                cv, ce, n = z["node_counts"], z["edge_counts"], int(z["num_subgraphs"])
        except (OSError, ValueError, KeyError) as e:
            raise DataError(f"{path}: not a normalization file of this loader "
                            f"({type(e).__name__})") from None
        if cv.shape != (self.N,) or ce.shape != (self.E,) or n < 1:
            raise DataError(f"{path}: counts for another graph ({cv.shape[0]} nodes, "
                            f"{ce.shape[0]} edges; this one has {self.N} and {self.E})")
        return Normalization.from_counts(cv, ce, n, self.csr.graph, np.ones(self.N, bool))

    def _stream_index(self, p: int) -> int:
        """Stream index of position p: kept pre-sampled subgraph p, else fresh N + p - K."""
        if self.norm is None:
            return p
        k = self.norm.num_kept
        return p if p < k else self.norm.num_subgraphs + p - k

    # -------------------------------------------------------------- iteration
    def __len__(self) -> int:
        return self.num_steps

    def __repr__(self) -> str:
        return f"{type(self).__name__}(batch_size={self.batch_size}, num_steps={self.num_steps})"

    def __iter__(self):
        for _ in range(self.num_steps):
            yield self.next_batch()

    def next_batch(self):
        """The next batch of the stream."""
        p = self._pos
        self._pos += 1
        if p < len(self._kept):
            sub, self._kept[p] = self._kept[p], None   # free as we go
        else:
            if not self._fresh:
                chunk = max(4, 2 * (self.num_threads or 2))
                subs = self.sampler.sample(chunk, self.seed, self.num_threads,
                                           start=self._next_index)
                self._fresh.extend(subs)
                self._next_index += chunk
            sub = self._fresh.popleft()
        return self._data(sub)

    def _data(self, sub):
        g = sub.graph
        rows = np.repeat(np.arange(g.num_nodes, dtype=np.int64), np.diff(g.indptr))
        edge_index = torch.stack([torch.from_numpy(g.indices.astype(np.int64)),
                                  torch.from_numpy(rows)])
        extra = {}
        if self.norm is not None:
            extra["node_norm"] = torch.from_numpy(self.norm.loss_weight[sub.nodes])
            extra["edge_norm"] = torch.from_numpy(self.norm.edge_multiplier[sub.edge_ids])
        return batch_data(self.data, torch.from_numpy(sub.nodes), self.csr.edge_ids(sub.edge_ids),
                          edge_index, **extra)


class GraphSAINTNodeSampler(GraphSAINTSampler):
    """``batch_size`` nodes drawn with replacement, P(v) ∝ deg(v); the induced subgraph."""

    sampler_name = "node"

    def _budget(self) -> dict:
        return {"size_subgraph": self.batch_size}


class GraphSAINTEdgeSampler(GraphSAINTSampler):
    """``batch_size`` edges drawn with replacement, P(u, v) ∝ 1/deg(u) + 1/deg(v); the
    subgraph induced by their ends."""

    sampler_name = "edge"

    def _budget(self) -> dict:
        return {"size_subg_edge": self.batch_size}


class GraphSAINTRandomWalkSampler(GraphSAINTSampler):
    """``batch_size`` uniform roots, ``walk_length`` uniform steps each; the subgraph induced
    by the visited nodes."""

    sampler_name = "rw"

    def __init__(self, data, batch_size: int, walk_length: int, num_steps: int = 1,
                 sample_coverage: float = 0, save_dir=None, log: bool = True,
                 seed: int | None = None, num_threads: int | None = None, **kwargs):
        self.walk_length = check_int(f"{type(self).__name__}: walk_length", walk_length, 0)
        super().__init__(data, batch_size, num_steps, sample_coverage, save_dir, log, seed,
                         num_threads, **kwargs)

    def _budget(self) -> dict:
        return {"num_root": self.batch_size, "depth": self.walk_length}
