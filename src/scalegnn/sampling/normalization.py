"""GraphSAINT normalization: unbiased minibatch aggregation and loss (SPEC §1.2).

Pre-sample N subgraphs until sum |V_s| >= coverage * |nodes sampled from|, counting
C_v (subgraphs containing node v) and C_e (subgraphs containing parent edge e). Then, exactly as
GraphSAINT's ``minibatch.py``:

* aggregator multiplier on Â[v, u] (row v, parent edge e = (v, u)):
  ``clip(C_v / C_e, 0, 1e4)``, with 0/0 (NaN) -> 0.1 (and x/0 -> 1e4 by the clip);
* loss weight of a loss node v: ``N / C_v / |V_loss|``, where never-sampled nodes first get
  C_v = 0.1; every other node 0. Minibatch loss = sum_v weight_v * L_v.

``normalize=False``: multipliers 1 and loss weight 1/|V_s ∩ V_loss| on the batch's loss nodes
(a plain mean); nothing is pre-sampled.
"""

from __future__ import annotations

import math
import time

import numpy as np

from scalegnn.errors import ConfigError
from scalegnn.faults import crash_point
from scalegnn.sampling._induce_kernels import add_counts
from scalegnn.sampling.sampler_base import Sampler, Subgraph
from scalegnn.shard import SINGLE, Shard

MAX_MULTIPLIER = 1e4
NAN_MULTIPLIER = 0.1
NEVER_SAMPLED_COUNT = 0.1


class Normalization:
    """Per-parent-edge multipliers and per-node loss weights (see module docstring)."""

    def __init__(self, loss_mask: np.ndarray, *, normalize: bool = True,
                 node_counts: np.ndarray | None = None, edge_counts: np.ndarray | None = None,
                 edge_multiplier: np.ndarray | None = None, loss_weight: np.ndarray | None = None,
                 num_subgraphs: int = 0, presample_seconds: float = 0.0, num_kept: int = 0):
        self.loss_mask = loss_mask
        self.normalize = normalize
        self.node_counts = node_counts
        self.edge_counts = edge_counts
        self.edge_multiplier = edge_multiplier
        """float32 per parent edge (None when normalize=False)."""
        self.loss_weight = loss_weight
        """float32 per parent node (None when normalize=False)."""
        self.num_subgraphs = num_subgraphs
        """N: the pre-sampled subgraphs counted (stream indices 0..N-1)."""
        self.num_kept = num_kept
        """The leading pre-sampled subgraphs kept for reuse as the first minibatches."""
        self.presample_seconds = presample_seconds

    @classmethod
    def estimate(cls, sampler: Sampler, loss_nodes, num_nodes: int, coverage: float = 50,
                 seed: int = 0, normalize: bool = True, *, num_threads: int | None = None,
                 clip_multiple: int = 0, keep: bool | int = True, shard: Shard = SINGLE
                 ) -> tuple["Normalization", list[Subgraph]]:
        """Pre-sample with ``sampler`` (stream indices 0..N-1 of ``seed``) and count.

        Returns the normalization and the pre-sampled subgraphs kept (to be reused, in order,
        as the first minibatches; ``num_kept`` of them, the next fresh subgraph has stream
        index N). With a ``shard`` of W ranks, rank r draws and returns the indices
        ``≡ r (mod W)`` only and the counts are summed over the ranks: every rank gets the
        single-process normalization for 1/W of the sampling work. ``keep=False``
        counts each chunk and drops it (returns no subgraphs; bounded memory); an integer
        keeps the leading subgraphs up to that many bytes (``Subgraph.nbytes``).
        """
        t0 = time.perf_counter()
        num_nodes = int(num_nodes)
        if sampler.graph.num_nodes != num_nodes:
            raise ConfigError(f"normalization: sampler graph has {sampler.graph.num_nodes} nodes, "
                              f"expected num_nodes={num_nodes}")
        loss_nodes = np.unique(np.asarray(loss_nodes, dtype=np.int64))
        if loss_nodes.size == 0:
            raise ConfigError("normalization: the set of loss (training) nodes is empty")
        if loss_nodes[0] < 0 or loss_nodes[-1] >= num_nodes:
            raise ConfigError(f"normalization: loss node ids must lie in [0, {num_nodes})")
        mask = np.zeros(num_nodes, dtype=bool)
        mask[loss_nodes] = True
        if not normalize:
            return cls(mask, normalize=False), []
        if isinstance(coverage, bool) or not isinstance(coverage, (int, float, np.number)) \
                or not math.isfinite(coverage) or coverage <= 0:
            raise ConfigError(f"sample_coverage must be a positive number, got {coverage!r}")
        cv = np.zeros(num_nodes, dtype=np.int64)
        ce = np.zeros(sampler.graph.num_edges, dtype=np.int64)
        budget = np.inf if keep is True else (0 if keep is False else int(keep))
        draws = _Presample(sampler, coverage * sampler.nodes.size, seed, num_threads,
                           clip_multiple, budget, shard)
        subs = []
        for index, s in draws:
            add_counts(cv, s.nodes)
            add_counts(ce, s.edge_ids)
            crash_point("presample")
            if index < draws.kept:
                subs.append(s)  # an unbroken prefix of this rank's share: indices r, r+W, ...
        if shard.world > 1:  # every rank: the counts of all N subgraphs (integers: exact)
            cv, ce = shard.all_reduce_sum(cv), shard.all_reduce_sum(ce)
        norm = cls.from_counts(cv, ce, draws.count, sampler.graph, mask)
        norm.num_kept = draws.kept
        norm.presample_seconds = time.perf_counter() - t0
        return norm, subs

    @classmethod
    def from_counts(cls, node_counts, edge_counts, num_subgraphs: int, graph, loss_mask):
        """Multipliers and loss weights from the counters (GraphSAINT ``_set_norm``)."""
        cv = np.asarray(node_counts, dtype=np.float64)
        ce = np.asarray(edge_counts, dtype=np.float64)
        rows = np.repeat(np.arange(graph.num_nodes), graph.degrees())
        with np.errstate(divide="ignore", invalid="ignore"):
            mult = np.clip(cv[rows] / ce, 0.0, MAX_MULTIPLIER)
        mult[np.isnan(mult)] = NAN_MULTIPLIER
        c = cv.copy()
        c[c == 0] = NEVER_SAMPLED_COUNT
        w = np.zeros(cv.shape[0], dtype=np.float64)
        n_loss = int(loss_mask.sum())
        w[loss_mask] = num_subgraphs / c[loss_mask] / n_loss
        return cls(loss_mask, normalize=True, node_counts=np.asarray(node_counts),
                   edge_counts=np.asarray(edge_counts), edge_multiplier=mult.astype(np.float32),
                   loss_weight=w.astype(np.float32), num_subgraphs=num_subgraphs)

    def edge_multipliers(self, sub: Subgraph) -> np.ndarray:
        """float32 multiplier per local edge of ``sub``."""
        if not self.normalize:
            return np.ones(sub.edge_ids.shape[0], dtype=np.float32)
        return self.edge_multiplier[sub.edge_ids]

    def loss_weights(self, sub: Subgraph) -> np.ndarray:
        """float32 loss weight per local node of ``sub`` (0 on non-loss nodes)."""
        if self.normalize:
            return self.loss_weight[sub.nodes]
        m = self.loss_mask[sub.nodes]
        k = int(m.sum())
        return m.astype(np.float32) / np.float32(k) if k else np.zeros(m.shape[0], np.float32)


class _Presample:
    """Iterates this shard's pre-sampled subgraphs ``(index, subgraph)``, index order.

    The pre-sample is subgraphs 0..N-1 of the stream, N the first count with
    sum |V_s| >= ``target`` (one subgraph for a deterministic sampler). They are drawn in
    rounds sized from the running mean |V_s|; rank r of W draws the indices ``≡ r (mod W)`` of
    each round and the ranks exchange the sizes, so every rank finds the same N, the same
    number ``kept`` of leading subgraphs that fit ``budget`` bytes, and the same single-process
    counts once the ranks' own counts are summed. The overshoot of the last round is dropped,
    so N does not depend on the round sizes or on W. After the loop: ``count`` = N."""

    def __init__(self, sampler, target, seed, num_threads, clip_multiple, budget, shard):
        self.sampler, self.target, self.seed = sampler, float(target), seed
        self.num_threads, self.clip_multiple = num_threads, clip_multiple
        self.budget, self.shard = budget, shard
        self.count = 0      # N once the iteration ends
        self.kept = 0       # leading subgraphs kept (global); final once the prefix broke
        self._kept_bytes = 0
        self._open = True   # the kept prefix is still unbroken

    def __iter__(self):
        w, r = self.shard.world, self.shard.rank
        total, done = 0.0, 0
        mean = max(self.sampler.expected_size, 1.0)
        while True:
            want = 1 if self.sampler.deterministic else \
                min(max(int(math.ceil((self.target - total) / mean)), 1), 32)
            per_rank = int(math.ceil(want / w))
            mine = self.sampler.sample(per_rank, self.seed, self.num_threads, start=done + r,
                                       step=w, clip_multiple=self.clip_multiple)
            sizes = np.array([[s.num_nodes, s.nbytes] for s in mine], np.int64).reshape(-1, 2)
            block = np.empty((per_rank * w, 2), np.int64)  # global index order
            for q, part in enumerate(self.shard.all_gather(sizes)):
                block[q::w] = part
            cum = total + np.cumsum(block[:, 0])
            hit = np.flatnonzero(cum >= self.target)
            stop = 1 if self.sampler.deterministic else \
                (int(hit[0]) + 1 if hit.size else block.shape[0])
            for j in range(stop):  # the kept prefix, in global order (the same on every rank)
                if self._open and self._kept_bytes + block[j, 1] <= self.budget:
                    self._kept_bytes += int(block[j, 1])
                    self.kept += 1
                else:
                    self._open = False
            for i, s in enumerate(mine):
                if w * i + r < stop:
                    yield done + w * i + r, s
            if self.sampler.deterministic or hit.size:
                self.count = done + stop
                return
            total, done = float(cum[-1]), done + block.shape[0]
            mean = max(total / done, 1.0)
