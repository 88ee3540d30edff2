"""GraphSAINT samplers (SPEC §1.1): node, edge, rw, mrw (frontier, Dashboard), full; and
cluster (ClusterGCN's METIS parts, :mod:`scalegnn.sampling.cluster`).

A sampler holds one graph (symmetric pattern, sorted rows) and the node set to sample from.
``sample(count, seed)`` returns ``count`` node-induced subgraphs; subgraph ``start + i`` of a
seed always uses the random stream derived from ``(seed, start + i)``, so results are identical
whatever ``num_threads`` is, and consecutive calls with ``start`` advanced continue the stream.
What the samplers share (``Subgraph``, the streams' seeds, the ``Sampler`` base class) lives in
``sampler_base.py``; the numba kernels live in the ``_*_kernels.py`` modules; slow references
for tests in ``reference.py``.
"""

from __future__ import annotations

import math

import numpy as np

from scalegnn.errors import ConfigError, GraphError
from scalegnn.graph import Graph
from scalegnn.sampling._frontier_kernels import frontier_trace
from scalegnn.sampling._random_kernels import build_alias
from scalegnn.sampling._sample_kernels import (sample_edge, sample_frontier, sample_full,
                                               sample_node, sample_rw)
from scalegnn.sampling.cluster import ClusterSampler
from scalegnn.sampling.sampler_base import Sampler, _positive_int, stream_seeds

# GraphSAINT `phase` keys that are not budgets; accepted and ignored by make_sampler
PHASE_KEYS = ("sampler", "end", "eval_val_every", "sample_coverage")


class NodeSampler(Sampler):
    """n draws with replacement, P(v) ∝ deg(v) (the reference code's choice; SPEC §1.1 gives
    ‖Â_{:,v}‖² as the variance-optimal one); V_s = unique draws."""

    name = "node"
    required = ("size_subgraph",)

    def _setup(self):
        self.n = _positive_int(self.name, "size_subgraph", self.budget["size_subgraph"])
        deg = self.graph.degrees()[self.nodes].astype(np.float64)
        if deg.sum() <= 0:
            raise GraphError("sampler 'node': every node to sample from has degree 0")
        self.prob, self.alias = build_alias(deg)
        p = deg / deg.sum()
        self.expected_size = float(np.sum(-np.expm1(self.n * np.log1p(-np.minimum(p, 1 - 1e-16)))))
        self.cap = self.n
        self.size_budget = float(self.n)

    def _run(self, seeds, clip, bits, mark, nodes_buf, nv):
        sample_node(self.graph.indptr, self.graph.indices, self.nodes, self.prob,
                    self.alias, self.n, seeds, clip, bits, mark, nodes_buf, nv)


class EdgeSampler(Sampler):
    """m undirected edges (u < v, both ends in ``nodes``) with replacement,
    P(u, v) ∝ 1/deg(u) + 1/deg(v) by an alias table; V_s = endpoints."""

    name = "edge"
    required = ("size_subg_edge",)

    def _setup(self):
        self.m = _positive_int(self.name, "size_subg_edge", self.budget["size_subg_edge"])
        g = self.graph
        src, dst = g.edge_index()
        inset = np.zeros(g.num_nodes, dtype=bool)
        inset[self.nodes] = True
        keep = (src < dst) & inset[src] & inset[dst]
        self.eu = np.ascontiguousarray(src[keep], dtype=np.int64)
        self.ev = np.ascontiguousarray(dst[keep], dtype=np.int64)
        if self.eu.size == 0:
            raise GraphError("sampler 'edge': the node set to sample from has no edges")
        inv = 1.0 / np.maximum(g.degrees(), 1).astype(np.float64)
        w = inv[self.eu] + inv[self.ev]
        self.prob, self.alias = build_alias(w)
        p = w / w.sum()
        q = np.bincount(self.eu, p, g.num_nodes) + np.bincount(self.ev, p, g.num_nodes)
        q = q[q > 0]
        self.expected_size = float(np.sum(-np.expm1(self.m * np.log1p(-np.minimum(q, 1 - 1e-16)))))
        self.cap = 2 * self.m
        self.size_budget = float(2 * self.m)

    def _run(self, seeds, clip, bits, mark, nodes_buf, nv):
        sample_edge(self.graph.indptr, self.graph.indices, self.eu, self.ev,
                    self.prob, self.alias, self.m, seeds, clip, bits, mark, nodes_buf, nv)


class RandomWalkSampler(Sampler):
    """r roots uniform from ``nodes`` (with replacement), h uniform-neighbour steps each;
    V_s = visited nodes. expected_size is the rough r*(h+1) (capped at |V|)."""

    name = "rw"
    required = ("num_root", "depth")

    def _setup(self):
        self.r = _positive_int(self.name, "num_root", self.budget["num_root"])
        self.h = _positive_int(self.name, "depth", self.budget["depth"], minimum=0)
        self.cap = self.r * (self.h + 1)
        self.size_budget = float(self.r * max(self.h, 1))
        self.expected_size = float(min(self.cap, self.graph.num_nodes))

    def _run(self, seeds, clip, bits, mark, nodes_buf, nv):
        sample_rw(self.graph.indptr, self.graph.indices, self.nodes, self.r,
                  self.h, seeds, clip, bits, mark, nodes_buf, nv)


class FrontierSampler(Sampler):
    """Multi-dimensional random walk (frontier) with the Dashboard (SPEC §1.1, §2.1).

    size_subgraph n (node budget, counting repeats), size_frontier m <= n and <= |nodes|,
    optional max_deg clipping the degree used for the pop probability, eta = 2 (DB holds
    eta*m*d pins, d from ``_frontier_degree``). expected_size is the rough n (capped at |V|).
    """

    name = "mrw"
    required = ("size_subgraph", "size_frontier")
    optional = ("max_deg",)
    eta = 2.0

    def _setup(self):
        self.n = _positive_int(self.name, "size_subgraph", self.budget["size_subgraph"])
        self.m = _positive_int(self.name, "size_frontier", self.budget["size_frontier"])
        self.max_deg = _positive_int(self.name, "max_deg", self.budget.get("max_deg", 0), 0)
        if self.m > self.n:
            raise ConfigError(f"sampler 'mrw': size_frontier ({self.m}) must not exceed "
                              f"size_subgraph ({self.n})")
        if self.m > self.nodes.size:
            raise ConfigError(f"sampler 'mrw': size_frontier ({self.m}) exceeds the "
                              f"{self.nodes.size} nodes to sample from")
        self.db_size = int(math.ceil(self.eta * self.m * max(self._frontier_degree(), 1.0)))
        self.cap = self.n
        self.size_budget = float(self.n)
        self.expected_size = float(min(self.n, self.graph.num_nodes))

    def _frontier_degree(self) -> float:
        """d of the DB size eta*m*d: the mean pins of a frontier node (journal Table 1).

        The frontier drifts to the walk's stationary law P(v) ∝ deg(v), so d is taken as
        sum_v deg(v) pins(v) / sum_v deg(v) (= the average degree on regular graphs). The
        paper's approximation by the average degree makes DB overflow at nearly every step on
        skewed graphs (R-MAT: 15 vs 561), which costs a CLEANUP per step and, through the
        "all remaining slots" rule, distorts the pop distribution.
        """
        deg = self.graph.degrees().astype(np.float64)
        pins = np.minimum(deg, self.max_deg) if self.max_deg else deg
        return float((deg * pins).sum() / max(deg.sum(), 1.0))

    def _run(self, seeds, clip, bits, mark, nodes_buf, nv):
        sample_frontier(self.graph.indptr, self.graph.indices, self.nodes, self.m,
                        self.n, self.max_deg, self.eta, self.db_size, seeds, clip, bits, mark,
                        nodes_buf, nv)

    def trace(self, seed: int):
        """(V_s entries in order: m frontier nodes then each added one, popped nodes) of one
        run with ``seed`` — for tests of the pop distribution."""
        with self._lock:
            mark = self._scratch(1)[1][0]
            return frontier_trace(self.graph.indptr, self.graph.indices, self.nodes, self.m,
                                  self.n, self.max_deg, self.eta, self.db_size,
                                  int(stream_seeds(seed, 0, 1)[0]), mark)


class FullSampler(Sampler):
    """The whole node set as one subgraph (full batch)."""

    name = "full"
    deterministic = True

    def _setup(self):
        self.cap = self.nodes.size
        self.size_budget = float(self.nodes.size)
        self.expected_size = float(self.nodes.size)

    def _run(self, seeds, clip, bits, mark, nodes_buf, nv):
        sample_full(self.graph.indptr, self.graph.indices, self.nodes, seeds, clip,
                    bits, mark, nodes_buf, nv)


SAMPLERS = {cls.name: cls for cls in (NodeSampler, EdgeSampler, RandomWalkSampler,
                                      FrontierSampler, FullSampler, ClusterSampler)}


def make_sampler(name: str, graph: Graph, nodes, params: dict | None = None) -> Sampler:
    """Sampler ``name`` with budget keys from a GraphSAINT ``phase`` entry (non-budget phase
    keys such as ``end`` or ``sampler`` are ignored)."""
    if name not in SAMPLERS:
        raise ConfigError(f"sampler: unknown sampler {name!r} (allowed: {', '.join(SAMPLERS)})")
    params = dict(params or {})
    budget = {k: v for k, v in params.items() if k not in PHASE_KEYS}
    return SAMPLERS[name](graph, nodes, **budget)
