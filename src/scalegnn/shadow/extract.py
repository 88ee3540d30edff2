"""shaDow-GNN extractors (SPEC §4): each target's node-induced subgraph, stacked block-diagonally.

``extractor.extract(targets, seed)`` -> :class:`TargetSubgraphs` (contract in
``scalegnn.shadow``): block k is G[S_k], the subgraph induced by the scope S_k of targets[k],
its rows the nodes of S_k in ascending parent id; ``center[k]`` is the stack row of targets[k].
``extract_pairs(src, dst, seed)`` (link prediction): S_k = S(src[k]) ∪ S(dst[k]), ``center`` /
``center2`` the rows of src[k] / dst[k].

* :class:`KHopExtractor` ``(graph, depth=2, budget=20)``: hop 0 = {t}; hop h+1 = for each node
  of hop h, at most ``budget`` of its neighbours uniform without replacement (all when budget
  < 0), those not yet in the scope (scope nodes are not re-expanded). Target t draws from the
  stream of (seed, t): its scope is the same in any batch and at any thread count.
* :class:`PPRExtractor` ``(graph, alpha=0.15, eps=1e-6, k=200, threshold=0.0, cache_dir=None)``:
  push-based approximate personalized PageRank from t (alpha = teleport probability; push u
  while r(u) > eps·deg(u)); S = t plus the k-1 best other nodes by (score desc, id asc), and with
  threshold > 0 only those with score >= threshold · (best non-target score). On a symmetric
  graph 0 <= p_exact(v) - p(v) <= eps·deg(v) (see ``reference.ppr_exact``). The lists are
  computed once per target (:meth:`PPRExtractor.precompute`, timed in ``precompute_seconds``),
  kept in memory and, with ``cache_dir``, on disk under a name made of :func:`graph_key` and
  the parameters.
"""

from __future__ import annotations

import hashlib
import threading
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numba
import numpy as np

from scalegnn.errors import ConfigError, DataError, GraphError
from scalegnn.graph import Graph
from scalegnn.io import atomic_save_npz
from scalegnn.shadow._block_kernels import block_rows, induced, union_blocks
from scalegnn.shadow._khop_kernels import khop_scopes
from scalegnn.shadow._ppr_kernels import ppr_topk

_KEY_SAMPLE = 1 << 22       # entries of indptr / indices hashed by graph_key (strided)
_BUF_ENTRIES = 1 << 23      # k-hop: one-pass scope buffer up to this many int64 entries
_PPR_ENTRIES = 1 << 22      # PPR: targets per kernel call = this // k


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

    def __init__(self, graph: Graph):
        if not isinstance(graph, Graph):
            raise GraphError(f"{type(self).__name__}: graph must be a scalegnn Graph")
        if graph.num_cols != graph.num_nodes:
            raise GraphError(f"{type(self).__name__}: graph must be square, got {graph.shape}")
        self.graph = graph if graph.is_sorted() else graph.sort_indices()

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
        if src.dtype != np.int64:   # gather the lists: union_blocks compiled for int64 only
            src, start = src[_ranges(start, length)].astype(np.int64), _cumsum0(length)[:-1]
        nblk = ends.shape[0] // 2 if pair else ends.shape[0]
        nw = self._workers(nblk)
        if not pair and is_sorted:
            buf, buf_off, sizes = src, start, length
        else:
            a_s, a_l = start[:nblk], length[:nblk]
            b_s, b_l = (start[nblk:], length[nblk:]) if pair else (a_s, np.zeros_like(a_l))
            buf_off = _cumsum0(a_l + b_l)
            buf = np.empty(int(buf_off[-1]), dtype=src.dtype)
            sizes = np.empty(nblk, dtype=np.int64)
            union_blocks(src, a_s, a_l, b_s, b_l, buf, buf_off, sizes, nw)
        return _cumsum0(sizes), buf[_ranges(buf_off[:nblk], sizes)].astype(np.int64)

    def _assemble(self, targets, offsets, nodes, first, second) -> TargetSubgraphs:
        nw = self._workers(offsets.shape[0] - 1)
        g = self.graph
        rowlen = np.empty(nodes.shape[0], dtype=np.int64)
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


class PPRExtractor(_Extractor):
    """Top-k approximate-PPR scope (module docstring); lists cached in memory and on disk.

    Lists live in chunks (sorted targets, ptr, nodes, scores), each list in rank order: the
    target, then by score desc. A new chunk is merged with the previous one while that one is
    at most twice its size, so lookups touch O(log) chunks and merging costs O(log) per entry.
    """

    def __init__(self, graph: Graph, alpha: float = 0.15, eps: float = 1e-6, k: int = 200,
                 threshold: float = 0.0, cache_dir=None):
        super().__init__(graph)
        self.alpha = _real("alpha", alpha, 0.0, 1.0, True, True)
        self.eps = _real("eps", eps, 0.0, float("inf"), True, True)
        self.k = _int("k", k, 1)
        self.threshold = _real("threshold", threshold, 0.0, 1.0, False, False)
        self.precompute_seconds = 0.0
        self.num_computed = 0        # lists computed by this object (not read from disk)
        self._dtype = self.graph.indices.dtype
        self._chunks: list[tuple] = []
        self._lock = threading.Lock()
        self.cache_path = None
        self.cache_hit = False
        if cache_dir is not None:
            params = repr((self.alpha, self.eps, self.k, self.threshold)).encode()
            pkey = hashlib.blake2b(params, digest_size=6).hexdigest()
            self._key = f"{graph_key(self.graph)}-{pkey}"
            self.cache_path = Path(cache_dir) / f"ppr-{self._key}.npz"
            self.cache_hit = self._load()

    def __repr__(self):
        return (f"PPRExtractor(alpha={self.alpha}, eps={self.eps}, k={self.k}, "
                f"threshold={self.threshold})")

    @property
    def num_cached(self) -> int:
        return sum(c[0].shape[0] for c in self._chunks)

    # -------------------------------------------------------------- list store
    @staticmethod
    def _lookup(chunks, ends):
        """(chunk id, row) of each end; chunk id -1 where no list is held."""
        cid = np.full(ends.shape[0], -1, dtype=np.int64)
        row = np.zeros(ends.shape[0], dtype=np.int64)
        for c, (tg, *_rest) in enumerate(chunks):
            pos = np.minimum(np.searchsorted(tg, ends), tg.shape[0] - 1)
            hit = tg[pos] == ends
            cid[hit], row[hit] = c, pos[hit]
        return cid, row

    def _add_chunk(self, chunk):
        chunks = self._chunks + [chunk]     # a new list: readers hold a consistent snapshot
        while len(chunks) >= 2 and chunks[-2][0].shape[0] <= 2 * chunks[-1][0].shape[0]:
            chunks = chunks[:-2] + [self._merge(chunks[-2:])]
        self._chunks = chunks

    @staticmethod
    def _merge(chunks):
        tg = np.concatenate([c[0] for c in chunks])
        starts = np.concatenate([c[1][:-1] + off for c, off in
                                 zip(chunks, np.cumsum([0] + [c[2].shape[0] for c in chunks]))])
        lens = np.concatenate([np.diff(c[1]) for c in chunks])
        order = np.argsort(tg, kind="stable")
        idx = _ranges(starts[order], lens[order])
        nodes = np.concatenate([c[2] for c in chunks])[idx]
        scores = np.concatenate([c[3] for c in chunks])[idx]
        return tg[order], _cumsum0(lens[order]), nodes, scores

    def lists(self, targets):
        """(ptr, nodes, scores) of the targets' PPR lists in rank order (computing missing
        ones in memory): list i is nodes[ptr[i]:ptr[i+1]], float32 scores."""
        t = self._ids(targets, "targets")
        self._compute(np.unique(t))
        out = []
        for field in (2, 3):
            src, start, length = self._gather(t, field)
            out.append(src[_ranges(start, length)])
        return _cumsum0(length), out[0].astype(np.int64), out[1]

    def _segments(self, ends, seed):
        self._compute(np.unique(ends))
        return (*self._gather(ends, 2), False)

    def _gather(self, ends, field):
        """(src, start, length): the list of ends[i] (node ids for field 2, scores for 3) is
        src[start[i]:][:length[i]]; no copy when all lists sit in one chunk."""
        chunks = self._chunks
        cid, row = self._lookup(chunks, ends)
        if len(chunks) == 1:     # the usual case after precompute
            ptr = chunks[0][1]
            return chunks[0][field], ptr[row], ptr[row + 1] - ptr[row]
        length = np.empty(ends.shape[0], dtype=np.int64)
        for c, chunk in enumerate(chunks):
            m = cid == c
            length[m] = chunk[1][row[m] + 1] - chunk[1][row[m]]
        start = _cumsum0(length)[:-1]
        src = np.empty(int(length.sum()), dtype=chunks[0][field].dtype)
        for c, chunk in enumerate(chunks):
            m = np.flatnonzero(cid == c)
            src[_ranges(start[m], length[m])] = chunk[field][_ranges(chunk[1][row[m]], length[m])]
        return src, start, length

    # -------------------------------------------------------------- computing
    def _compute(self, uniq) -> int:
        """Compute the lists of the sorted unique ``uniq`` not held yet; returns how many."""
        if (self._lookup(self._chunks, uniq)[0] >= 0).all():
            return 0
        with self._lock:    # one computation at a time (a background batch thread may ask)
            return self._compute_locked(uniq)

    def _compute_locked(self, uniq) -> int:
        miss = uniq[self._lookup(self._chunks, uniq)[0] < 0]
        if miss.size == 0:
            return 0
        t0 = time.perf_counter()
        g, k = self.graph, self.k
        step = max(1, _PPR_ENTRIES // k)
        nodes, scores, counts = [], [], []
        for a in range(0, miss.size, step):
            part = miss[a:a + step]
            out_n = np.empty((part.size, k), dtype=np.int64)
            out_s = np.empty((part.size, k), dtype=np.float64)
            cnt = np.empty(part.size, dtype=np.int64)
            ppr_topk(g.indptr, g.indices, part, self.alpha, self.eps, k, self.threshold,
                     out_n, out_s, cnt, self._workers(part.size))
            keep = np.arange(k) < cnt[:, None]
            nodes.append(out_n[keep].astype(self._dtype))
            scores.append(out_s[keep].astype(np.float32))
            counts.append(cnt)
        self._add_chunk((miss, _cumsum0(np.concatenate(counts)), np.concatenate(nodes),
                         np.concatenate(scores)))
        self.precompute_seconds += time.perf_counter() - t0
        self.num_computed += int(miss.size)
        return int(miss.size)

    def precompute(self, targets) -> int:
        """Compute (in parallel over targets) the lists not held yet, then write the cache
        file when ``cache_dir`` was given. Returns the number of lists computed."""
        done = self._compute(np.unique(self._ids(targets, "targets")))
        if done and self.cache_path is not None:
            self.save()
        return done

    # -------------------------------------------------------------- disk cache
    def save(self) -> None:
        """Write every held list to ``cache_path`` (atomic npz)."""
        if self.cache_path is None:
            raise ConfigError("PPRExtractor.save: no cache_dir was given")
        with self._lock:
            if len(self._chunks) > 1:
                self._chunks = [self._merge(self._chunks)]
        tg, ptr, nodes, scores = self._chunks[0] if self._chunks else (
            np.empty(0, np.int64), np.zeros(1, np.int64), np.empty(0, self._dtype),
            np.empty(0, np.float32))
        try:
            self.cache_path.parent.mkdir(parents=True, exist_ok=True)
            atomic_save_npz(self.cache_path, key=np.array(self._key), targets=tg, ptr=ptr,
                            nodes=nodes, scores=scores)
        except OSError as e:
            raise DataError(f"{self.cache_path}: cannot write the PPR cache "
                            f"({e.strerror or e})") from None

    def _load(self) -> bool:
        if not self.cache_path.is_file():
            return False
        try:
            with np.load(self.cache_path, allow_pickle=False) as z:
                if str(z["key"]) != self._key:
                    return False
                tg, ptr = z["targets"].astype(np.int64), z["ptr"].astype(np.int64)
                nodes, scores = z["nodes"].astype(self._dtype), z["scores"].astype(np.float32)
        except (OSError, ValueError, KeyError, zipfile.BadZipFile) as e:
            raise DataError(f"{self.cache_path}: unreadable PPR cache ({e}); delete it to "
                            f"recompute") from None
        n = self.graph.num_nodes
        if ptr.shape != (tg.size + 1,) or ptr[0] != 0 or ptr[-1] != nodes.size or \
                scores.shape != nodes.shape or np.any(np.diff(ptr) < 1) or \
                np.any(np.diff(tg) <= 0) or (nodes.size and (nodes.min() < 0 or nodes.max() >= n)):
            raise DataError(f"{self.cache_path}: damaged PPR cache; delete it to recompute")
        if tg.size:
            self._chunks = [(tg, ptr, nodes, scores)]
        return True
