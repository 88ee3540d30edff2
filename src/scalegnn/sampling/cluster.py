"""ClusterGCN (Chiang et al., KDD 2019) as a sampler of the GraphSAINT engine, and the METIS
partition it cuts the graph with (also :class:`scalegnn.pyg.ClusterData`'s).

:class:`ClusterSampler` partitions the graph it samples from, restricted to its node set (the
training graph over the training nodes, or the whole graph when transductive), into ``num_parts``
P METIS parts once, at setup. Each subgraph is the node-induced subgraph on the union of
``parts_per_batch`` q distinct parts drawn uniformly without replacement from the subgraph's
own random stream, so the edges between the chosen parts are kept (the paper's "stochastic
multiple partitions"; q = 1 is vanilla Cluster-GCN). An epoch is ceil(P / q) subgraphs.
"""

from __future__ import annotations

import time

import numpy as np

from scalegnn.errors import ConfigError
from scalegnn.graph import Graph
from scalegnn.sampling._sample_kernels import sample_cluster
from scalegnn.sampling.sampler_base import Sampler, _positive_int

EXTRA = "pip install 'scalegnn[partition]'"


def metis_parts(graph: Graph, num_parts: int, seed: int, recursive: bool = False,
                who: str = "METIS") -> np.ndarray:
    """Part (int32) of each node of ``graph`` (square CSR) by METIS on its symmetrized,
    self-loop-free pattern; the same parts for the same seed. ``who`` names the caller in the
    error when pymetis is missing."""
    n = graph.num_nodes
    if num_parts == 1 or n == 0:   # nothing to cut: no METIS (nor pymetis) needed
        return np.zeros(n, dtype=np.int32)
    try:
        import pymetis
    except ImportError:
        raise ConfigError(f"{who} needs pymetis ({EXTRA})") from None
    g = graph.symmetrize().remove_self_loops()
    dt = pymetis.zero_copy_dtype() if hasattr(pymetis, "zero_copy_dtype") else np.int64
    xadj = np.ascontiguousarray(g.indptr, dtype=dt)
    adjncy = np.ascontiguousarray(g.indices, dtype=dt)
    del g
    opts = pymetis.Options(seed=int(seed) % (2**31))
    if hasattr(pymetis, "CSRAdjacency"):
        res = pymetis.part_graph(num_parts, pymetis.CSRAdjacency(xadj, adjncy), options=opts,
                                 recursive=recursive)
    else:
        res = pymetis.part_graph(num_parts, xadj=xadj, adjncy=adjncy, options=opts,
                                 recursive=recursive)
    return np.asarray(res.vertex_part, dtype=np.int32)


class ClusterSampler(Sampler):
    """ClusterGCN: the subgraph induced by q of P METIS parts (see module docstring).

    ``part[j]`` is the part of ``nodes[j]``; ``part_nodes[partptr[c]:partptr[c + 1]]`` the
    (ascending) nodes of part c; ``setup_seconds`` the partition's time. METIS is seeded with
    ``METIS_SEED``: the same parts for every run on the same graph and node set.
    """

    name = "cluster"
    required = ("num_parts",)
    optional = ("parts_per_batch",)
    METIS_SEED = 0

    def _setup(self):
        who = f"sampler '{self.name}'"
        self.num_parts = _positive_int(self.name, "num_parts", self.budget["num_parts"])
        self.q = _positive_int(self.name, "parts_per_batch", self.budget.get("parts_per_batch", 1))
        n = int(self.nodes.size)
        if self.num_parts > n:
            raise ConfigError(f"{who}: num_parts ({self.num_parts}) exceeds the {n} nodes to "
                              f"sample from")
        if self.q > self.num_parts:
            raise ConfigError(f"{who}: parts_per_batch ({self.q}) must not exceed num_parts "
                              f"({self.num_parts})")
        t0 = time.perf_counter()
        sub = self.graph if n == self.graph.num_nodes else \
            self.graph.induced_subgraph(self.nodes)[0]
        self.part = metis_parts(sub, self.num_parts, self.METIS_SEED, who=who)
        del sub
        self.setup_seconds = time.perf_counter() - t0
        order = np.argsort(self.part, kind="stable")   # ascending nodes within each part
        self.part_nodes = self.nodes[order].astype(np.int64)
        sizes = np.bincount(self.part, minlength=self.num_parts)
        self.partptr = np.zeros(self.num_parts + 1, dtype=np.int64)
        np.cumsum(sizes, out=self.partptr[1:])
        self.cap = int(np.sort(sizes)[-self.q:].sum())
        self.size_budget = n * self.q / self.num_parts
        self.expected_size = self.size_budget

    def batches_per_epoch(self, num_train: int) -> int:
        """ClusterGCN's epoch: ceil(P / q) subgraphs, whatever the training nodes."""
        return -(-self.num_parts // self.q)

    def _run(self, seeds, clip, bits, mark, nodes_buf, nv):
        sample_cluster(self.graph.indptr, self.graph.indices, self.part_nodes, self.partptr,
                       self.q, seeds, clip, bits, mark, nodes_buf, nv)
