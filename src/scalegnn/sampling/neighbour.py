"""Neighbour sampling (GraphSAGE's fanout; the sampler behind ``scalegnn.pyg.NeighborLoader``).

A batch of seed nodes is expanded hop by hop: at hop l every node first reached at hop l - 1
(the seeds at hop 0) draws ``min(deg, k_l)`` of its neighbours without replacement (row
entries of the CSR: for a graph stored by target, the in-neighbours, which is what a
message-passing layer aggregates), all of them for ``k_l = -1``. A node is numbered the first
time it is drawn and expanded once, at the next hop. The result lists the nodes (seeds first,
then each hop's new nodes in order), the sampled edges as local (source, target) pairs and
their parent edge ids (CSR positions).

Randomness: batch ``index`` of ``seed`` uses the stream ``stream_seeds(seed, index)`` (as the
GraphSAINT samplers); each hop and frontier node derive their own counter-based streams from
it, so a batch is identical at any thread count. The kernels live in ``_neighbour_kernels``.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numba
import numpy as np

from scalegnn.errors import ConfigError, GraphError
from scalegnn.graph import Graph
from scalegnn.sampling._neighbour_kernels import (fanout_offsets, fanout_sample,
                                                  fanout_sample_serial, hop_key, mark_seeds,
                                                  number_new, unmark)
from scalegnn.sampling.sampler_base import check_int, stream_seeds


@dataclass
class NeighbourSample:
    nodes: np.ndarray
    """int64 parent ids: the seeds (in the order given), then each hop's new nodes."""
    src: np.ndarray
    """int64 local id of each sampled edge's neighbour (the message's source)."""
    dst: np.ndarray
    """int64 local id of each sampled edge's expanded node (the message's target)."""
    edge_ids: np.ndarray
    """int64 parent edge id (CSR position in the sampled graph) of each sampled edge."""
    num_sampled_nodes: list
    """Nodes added per hop, the seeds first (``len(num_neighbors) + 1`` entries)."""
    num_sampled_edges: list
    """Edges sampled per hop."""

    @property
    def num_seeds(self) -> int:
        return int(self.num_sampled_nodes[0])


def check_fanouts(num_neighbors, what: str = "num_neighbors") -> list[int]:
    """``num_neighbors`` as a list of ints >= -1 (-1: every neighbour), else ConfigError."""
    if isinstance(num_neighbors, (str, bytes, dict)) or not hasattr(num_neighbors, "__iter__"):
        raise ConfigError(f"{what} must be a list of integers (one per hop, -1 for all), got "
                          f"{num_neighbors!r}"[:300])
    out = [check_int(f"{what}[{i}]", k, -1) for i, k in enumerate(num_neighbors)]
    if not out:
        raise ConfigError(f"{what} must list at least one hop")
    return out


class NeighbourSampler:
    """Multi-hop neighbour sampler over the rows of ``graph`` (square CSR; rows need not be
    sorted or symmetric). ``num_neighbors``: draws per node per hop (-1: all); ``replace``:
    draw k with replacement (then nodes with neighbours get exactly k edges)."""

    def __init__(self, graph: Graph, num_neighbors, replace: bool = False):
        if not isinstance(graph, Graph):
            raise GraphError("neighbour sampler: graph must be a scalegnn Graph")
        if graph.num_cols != graph.num_nodes:
            raise GraphError(f"neighbour sampler: graph must be square, got shape {graph.shape}")
        self.graph = graph
        self.fanouts = check_fanouts(num_neighbors)
        self.replace = bool(replace)
        dt = np.int32 if graph.num_nodes < np.iinfo(np.int32).max else np.int64
        self._mark = np.full(graph.num_nodes, -1, dtype=dt)  # local id of a node, -1: unseen
        self._lock = threading.Lock()

    MIN_PARALLEL = 20_000
    """Draws below which a hop runs on one thread: a parallel launch costs more than it saves
    (and much more on a loaded machine). The sample does not depend on it."""

    def __repr__(self):
        return f"NeighbourSampler(num_neighbors={self.fanouts}, replace={self.replace})"

    def sample(self, seeds, seed: int, index: int = 0, num_threads: int | None = None
               ) -> NeighbourSample:
        """The sample of ``seeds`` (parent ids) for batch ``index`` of ``seed``."""
        seeds = np.ascontiguousarray(seeds, dtype=np.int64)
        if seeds.ndim != 1:
            raise ConfigError(f"neighbour sampler: seeds must be 1-D, got shape {seeds.shape}")
        n = self.graph.num_nodes
        if seeds.size and (int(seeds.min()) < 0 or int(seeds.max()) >= n):
            raise ConfigError(f"neighbour sampler: seed node ids must lie in [0, {n})")
        threads = numba.config.NUMBA_NUM_THREADS if num_threads is None else \
            min(check_int("num_threads", num_threads), numba.config.NUMBA_NUM_THREADS)
        batch_seed = int(stream_seeds(seed, int(index), 1)[0])
        indptr, indices = self.graph.indptr, self.graph.indices
        with self._lock:
            prev = numba.get_num_threads()
            numba.set_num_threads(threads)
            try:
                nodes = np.empty(seeds.size, dtype=np.int64)
                mark_seeds(seeds, self._mark, nodes)
                count = seeds.size
                lo, hi = 0, count
                added, sampled = [count], []
                srcs, dsts, poss = [], [], []
                try:
                    for hop, k in enumerate(self.fanouts):
                        offsets = np.empty(hi - lo + 1, dtype=np.int64)
                        m = fanout_offsets(indptr, nodes, lo, hi, k, self.replace, offsets)
                        pos = np.empty(m, dtype=np.int64)
                        key = np.uint64(hop_key(batch_seed, hop))
                        run = fanout_sample if threads > 1 and m >= self.MIN_PARALLEL \
                            else fanout_sample_serial
                        run(indptr, nodes, lo, k, key, self.replace, offsets, pos)
                        if nodes.shape[0] < count + m:
                            nodes = np.concatenate([nodes[:count],
                                                    np.empty(m, dtype=np.int64)])
                        src = np.empty(m, dtype=np.int64)
                        dst = np.empty(m, dtype=np.int64)
                        new = number_new(indices, lo, offsets, pos, self._mark, nodes, count,
                                         src, dst)
                        added.append(new - count)
                        sampled.append(m)
                        srcs.append(src)
                        dsts.append(dst)
                        poss.append(pos)
                        lo, hi, count = count, new, new
                finally:
                    unmark(nodes, count, self._mark)
            finally:
                numba.set_num_threads(prev)
        return NeighbourSample(nodes[:count], _cat(srcs), _cat(dsts), _cat(poss), added, sampled)


def _cat(parts: list) -> np.ndarray:
    return parts[0] if len(parts) == 1 else np.concatenate(parts)
