"""shaDow-GNN extractors (SPEC §4): each target's node-induced subgraph, stacked block-diagonally.

``extractor.extract(targets, seed)`` -> :class:`TargetSubgraphs` (contract in
``scalegnn.shadow``): block k is G[S_k], the subgraph induced by the scope S_k of targets[k],
its rows the nodes of S_k in ascending parent id; ``center[k]`` is the stack row of targets[k].
``extract_pairs(src, dst, seed)`` (link prediction): S_k = S(src[k]) ∪ S(dst[k]), ``center`` /
``center2`` the rows of src[k] / dst[k].

This module holds the contract, the checks and block assembly every extractor shares
(``_Extractor``) and the k-hop extractor; the PPR extractor lives in :mod:`scalegnn.shadow.ppr`.

* :class:`KHopExtractor` ``(graph, depth=2, budget=20)``: hop 0 = {t}; hop h+1 = for each node
  of hop h, at most ``budget`` of its neighbours uniform without replacement (all when budget
  < 0), those not yet in the scope (scope nodes are not re-expanded). Target t draws from the
  stream of (seed, t): its scope is the same in any batch and at any thread count.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass

import numba
import numpy as np

from scalegnn.errors import ConfigError, GraphError
from scalegnn.graph import Graph
from scalegnn.ops._simd import VECTOR_FILL, W
from scalegnn.shadow._block_kernels import (block_bounds, block_rows, compact_blocks, induced,
                                            induced_marked, union_blocks)
from scalegnn.shadow._khop_kernels import khop_scopes

_KEY_SAMPLE = 1 << 22       # entries of indptr / indices hashed by graph_key (strided)
_BUF_ENTRIES = 1 << 23      # k-hop: one-pass scope buffer up to this many int64 entries
_MARK_NODES = 1 << 21       # induction: one pass with a |V|-long map a worker up to this |V| ...
_MARK_ENTRIES = 1 << 23     # ... and a scratch of this many entries (else count, then fill)


@dataclass
class TargetSubgraphs:
    """B node-induced subgraphs stacked block-diagonally (field contract: scalegnn.shadow)."""

    targets: np.ndarray
    offsets: np.ndarray
    nodes: np.ndarray
    center: np.ndarray
    center2: np.ndarray | None
    indptr: np.ndarray
    indices: np.ndarray

    @property
    def num_targets(self) -> int:
        return int(self.targets.shape[0])

    @property
    def num_nodes(self) -> int:
        return int(self.nodes.shape[0])

    @property
    def num_edges(self) -> int:
        return int(self.indices.shape[0])

    def block(self, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Block k alone: (parent ids, local indptr, local indices)."""
        a, b = int(self.offsets[k]), int(self.offsets[k + 1])
        ip = self.indptr[a:b + 1]
        return self.nodes[a:b], ip - ip[0], self.indices[ip[0]:ip[-1]] - a


def graph_key(graph: Graph) -> str:
    """Hex identity of a graph: blake2b of its sizes and a strided sample (at most 4M entries
    each) of indptr and indices; any change of sizes or of a sampled entry changes it."""
    h = hashlib.blake2b(digest_size=10)
    h.update(np.array([graph.num_nodes, graph.num_cols, graph.num_edges], np.int64).tobytes())
    for arr in (graph.indptr, graph.indices):
        step = max(1, arr.shape[0] // _KEY_SAMPLE)
        h.update(np.ascontiguousarray(arr[::step], dtype=np.int64).tobytes())
    return h.hexdigest()


def target_seeds(seed: int, targets: np.ndarray) -> np.ndarray:
    """32-bit seed of each target's stream: splitmix64 of the pair (seed, target id)."""
    with np.errstate(over="ignore"):
        z = np.uint64(int(seed) % (1 << 64)) * np.uint64(0x9E3779B97F4A7C15) \
            + targets.astype(np.uint64) * np.uint64(0xD1B54A32D192ED03) \
            + np.uint64(0x632BE59BD9B4E019)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(32)).astype(np.int64)


def _int(name: str, value, minimum=None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer, float, np.floating)) \
            or not float(value).is_integer() or (minimum is not None and value < minimum):
        rule = f" >= {minimum}" if minimum is not None else ""
        raise ConfigError(f"{name} must be an integer{rule}, got {value!r}")
    return int(value)


def _real(name: str, value, lo: float, hi: float, lo_open: bool, hi_open: bool) -> float:
    ok = not isinstance(value, bool) and isinstance(value, (int, float, np.integer, np.floating))
    v = float(value) if ok else float("nan")
    ok = ok and (v > lo if lo_open else v >= lo) and (v < hi if hi_open else v <= hi)
    if not ok:
        rng = f"{'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"
        raise ConfigError(f"{name} must be a number in {rng}, got {value!r}")
    return v


def _cumsum0(a: np.ndarray) -> np.ndarray:
    out = np.zeros(a.shape[0] + 1, dtype=np.int64)
    np.cumsum(a, out=out[1:])
    return out


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenation of arange(starts[i], starts[i] + lengths[i])."""
    tot = int(lengths.sum())
    return np.repeat(starts - _cumsum0(lengths)[:-1], lengths) + np.arange(tot, dtype=np.int64)


class _Extractor:
    """Shared checks and block assembly; subclasses give each end's scope as segments."""

    vector_fill = VECTOR_FILL   # AVX-512 blocks in the one-pass induction (False: scalar)

    def __init__(self, graph: Graph):
        if not isinstance(graph, Graph):
            raise GraphError(f"{type(self).__name__}: graph must be a scalegnn Graph")
        if graph.num_cols != graph.num_nodes:
            raise GraphError(f"{type(self).__name__}: graph must be square, got {graph.shape}")
        self.graph = graph if graph.is_sorted() else graph.sort_indices()
        self._marks = np.empty((0, 0), dtype=np.int32)   # induced_marked's maps, kept (all -1)
        self._marks_lock = threading.Lock()

    def _mark_scratch(self, workers: int) -> np.ndarray:
        """``workers`` |V|-long int32 maps, all -1: allocated once per extractor (the kernel
        restores them), not filled on every call (8 MB a worker at 2^21 nodes)."""
        if self._marks.shape[0] < workers:
            self._marks = np.full((workers, self.graph.num_nodes), -1, dtype=np.int32)
        return self._marks[:workers]

    def _ids(self, ids, name: str) -> np.ndarray:
        arr = np.asarray(ids)
        if arr.ndim != 1 or (arr.size and not np.issubdtype(arr.dtype, np.integer)):
            raise ConfigError(f"{name} must be a 1-D array of integer node ids")
        arr = arr.astype(np.int64, copy=False)
        n = self.graph.num_nodes
        if arr.size and (arr.min() < 0 or arr.max() >= n):
            bad = int(arr.min()) if arr.min() < 0 else int(arr.max())
            raise ConfigError(f"{name}: node id {bad} out of range [0, {n})")
        return np.ascontiguousarray(arr)

    @staticmethod
    def _workers(count: int) -> int:
        return max(1, min(numba.get_num_threads(), count))

    def _segments(self, ends: np.ndarray, seed: int):
        """(src, start, length, sorted): end i's scope is src[start[i]:start[i]+length[i]]."""
        raise NotImplementedError

    def extract(self, targets, seed: int = 0) -> TargetSubgraphs:
        """Induced subgraph of each target's scope (block k <-> targets[k])."""
        t = self._ids(targets, "targets")
        offsets, nodes = self._blocks(t, seed, pair=False)
        return self._assemble(t, offsets, nodes, t, None)

    def extract_pairs(self, src, dst, seed: int = 0) -> TargetSubgraphs:
        """Block k = subgraph induced by the union of the scopes of src[k] and dst[k]."""
        s, d = self._ids(src, "src"), self._ids(dst, "dst")
        if s.shape != d.shape:
            raise ConfigError(f"src and dst must have the same length, got {s.size} and {d.size}")
        offsets, nodes = self._blocks(np.concatenate([s, d]), seed, pair=True)
        return self._assemble(s, offsets, nodes, s, d)

    def _blocks(self, ends, seed, pair):
        """(offsets, nodes int64) of the blocks: each end's scope, or pairwise unions."""
        src, start, length, is_sorted = self._segments(ends, seed)
        nblk = ends.shape[0] // 2 if pair else ends.shape[0]
        if not pair and is_sorted:
            buf, buf_off, sizes = src, start, length
        else:
            a_s, a_l = start[:nblk], length[:nblk]
            b_s, b_l = (start[nblk:], length[nblk:]) if pair else (a_s, np.zeros_like(a_l))
            buf_off = _cumsum0(a_l + b_l)
            buf = np.empty(int(buf_off[-1]), dtype=np.int64)
            sizes = np.empty(nblk, dtype=np.int64)
            union_blocks(src, a_s, a_l, b_s, b_l, buf, buf_off, sizes, self._workers(nblk))
            if sizes.sum() == buf.shape[0]:     # nothing repeated: the blocks are back to back
                return buf_off, buf
        return _cumsum0(sizes), buf[_ranges(buf_off[:nblk], sizes)].astype(np.int64, copy=False)

    def _assemble(self, targets, offsets, nodes, first, second) -> TargetSubgraphs:
        nw = self._workers(offsets.shape[0] - 1)
        g = self.graph
        rowlen = np.empty(nodes.shape[0], dtype=np.int64)
        bound = None
        if g.num_nodes <= _MARK_NODES:     # one pass into a scratch of the blocks' degree sums
            bound = block_bounds(g.indptr, nodes, offsets, W)
        if bound is not None and bound[-1] <= _MARK_ENTRIES:
            tmp = np.empty(int(bound[-1]), dtype=np.int32)
            with self._marks_lock:      # one caller at a time on the shared maps
                induced_marked(g.indptr, g.indices, offsets, nodes, bound, tmp, rowlen,
                               self._mark_scratch(nw), nw, self.vector_fill)
            indptr, indices = compact_blocks(tmp, bound, rowlen, offsets)
        else:
            induced(g.indptr, g.indices, offsets, nodes, rowlen, rowlen, rowlen, nw)
            indptr = _cumsum0(rowlen)
            indices = np.empty(int(indptr[-1]), dtype=np.int64)
            if indices.size:
                induced(g.indptr, g.indices, offsets, nodes, indices[:0], indptr, indices, nw)
        center = block_rows(nodes, offsets, first)
        center2 = None if second is None else block_rows(nodes, offsets, second)
        return TargetSubgraphs(targets, offsets, nodes, center, center2, indptr, indices)


class KHopExtractor(_Extractor):
    """L-hop scope with a per-node fan-out budget (module docstring)."""

    def __init__(self, graph: Graph, depth: int = 2, budget: int = 20):
        super().__init__(graph)
        self.depth = _int("depth", depth, 1)
        self.budget = _int("budget", budget)
        n = self.graph.num_nodes
        b = int(self.graph.degrees().max(initial=0))
        if self.budget >= 0:
            b = min(b, self.budget)
        bound, level = 1, 1       # 1 + b + ... + b^depth, capped at n
        for _ in range(self.depth):
            level = min(level * b, n)
            bound = min(bound + level, n)
        self.max_scope = max(bound, 1)

    def __repr__(self):
        return f"KHopExtractor(depth={self.depth}, budget={self.budget})"

    def _segments(self, ends, seed):
        g = self.graph
        seeds = target_seeds(seed, ends)
        cnt = ends.shape[0]
        nw = self._workers(cnt)
        sizes = np.empty(cnt, dtype=np.int64)
        if cnt * self.max_scope <= _BUF_ENTRIES:   # one pass into fixed-size slots
            off = np.arange(cnt, dtype=np.int64) * self.max_scope
            out = np.empty(cnt * self.max_scope, dtype=np.int64)
        else:   # count, then fill: the seeded streams make the second pass repeat the first
            khop_scopes(g.indptr, g.indices, ends, seeds, self.depth, self.budget,
                        np.empty(0, np.int64), np.zeros(cnt, np.int64), sizes, nw)
            off = _cumsum0(sizes)[:-1]
            out = np.empty(int(sizes.sum()), dtype=np.int64)
        khop_scopes(g.indptr, g.indices, ends, seeds, self.depth, self.budget, out, off,
                    sizes, nw)
        return out, off, sizes, True
