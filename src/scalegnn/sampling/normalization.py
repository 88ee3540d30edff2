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

MAX_MULTIPLIER = 1e4
NAN_MULTIPLIER = 0.1
NEVER_SAMPLED_COUNT = 0.1


class Normalization:
    """Per-parent-edge multipliers and per-node loss weights (see module docstring)."""

    def __init__(self, loss_mask: np.ndarray, *, normalize: bool = True,
                 node_counts: np.ndarray | None = None, edge_counts: np.ndarray | None = None,
                 edge_multiplier: np.ndarray | None = None, loss_weight: np.ndarray | None = None,
                 num_subgraphs: int = 0, presample_seconds: float = 0.0):
        self.loss_mask = loss_mask
        self.normalize = normalize
        self.node_counts = node_counts
        self.edge_counts = edge_counts
        self.edge_multiplier = edge_multiplier
        """float32 per parent edge (None when normalize=False)."""
        self.loss_weight = loss_weight
        """float32 per parent node (None when normalize=False)."""
        self.num_subgraphs = num_subgraphs
        self.presample_seconds = presample_seconds

    @classmethod
    def estimate(cls, sampler: Sampler, loss_nodes, num_nodes: int, coverage: float = 50,
                 seed: int = 0, normalize: bool = True, *, num_threads: int | None = None,
                 clip_multiple: int = 0, keep: bool | int = True
                 ) -> tuple["Normalization", list[Subgraph]]:
        """Pre-sample with ``sampler`` (stream indices 0..N-1 of ``seed``) and count.

        Returns the normalization and the N pre-sampled subgraphs (to be reused, in order, as
        the first minibatches; the next fresh subgraph has stream index N). ``keep=False``
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
        subs, count, kept_bytes = [], 0, 0
        for s in _presample(sampler, coverage * sampler.nodes.size, seed, num_threads,
                            clip_multiple):
            add_counts(cv, s.nodes)
            add_counts(ce, s.edge_ids)
            count += 1
            crash_point("presample")
            if len(subs) == count - 1 and kept_bytes + s.nbytes <= budget:
                subs.append(s)  # only an unbroken prefix: the stream order stays 0, 1, ...
                kept_bytes += s.nbytes
        norm = cls.from_counts(cv, ce, count, sampler.graph, mask)
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


def _presample(sampler: Sampler, target: float, seed: int, num_threads, clip_multiple):
    """Yield subgraphs 0..N-1 of the stream, N the first count with sum |V_s| >= target.

    Drawn in chunks sized from the running mean |V_s|; the overshoot of the last chunk is
    dropped so N does not depend on the chunk sizes.
    """
    if sampler.deterministic:
        yield from sampler.sample(1, seed, num_threads, clip_multiple=clip_multiple)
        return
    total, done = 0, 0
    mean = max(sampler.expected_size, 1.0)
    while total < target:
        want = int(math.ceil((target - total) / mean))
        want = min(max(want, 1), 32)  # bounded memory per chunk
        chunk = sampler.sample(want, seed, num_threads, start=done, clip_multiple=clip_multiple)
        for s in chunk:
            done += 1
            total += s.num_nodes
            yield s
            if total >= target:
                return
        mean = max(total / done, 1.0)
