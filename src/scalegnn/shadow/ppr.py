"""The PPR extractor of shaDow-GNN (SPEC §4): each target's scope is the top of an approximate
personalized PageRank from it (contract and block assembly in :mod:`scalegnn.shadow.extract`).

* :class:`PPRExtractor` ``(graph, alpha=0.15, eps=1e-6, k=200, threshold=0.0, cache_dir=None)``:
  push-based approximate personalized PageRank from t (alpha = teleport probability; push u
  while r(u) > eps·deg(u); FIFO, then on graphs up to 2^16 nodes sweeps in id order once a
  target's pushes spread: see ``_ppr_kernels``); score = p + alpha·r (the residual's own
  share, still a lower bound);
  S = t plus the k-1 best other nodes by (score desc, id asc), and with threshold > 0 only
  those with score >= threshold · (best non-target score). On a symmetric graph
  0 <= p_exact(v) - score(v) <= eps·deg(v) (see ``reference.ppr_exact``). The lists are
  computed once per target (:meth:`PPRExtractor.precompute`, timed in ``precompute_seconds``),
  kept in memory and, with ``cache_dir``, on disk under a name made of
  :func:`~scalegnn.shadow.extract.graph_key` and the parameters.
"""

from __future__ import annotations

import hashlib
import threading
import time
import zipfile
from pathlib import Path

import numpy as np

from scalegnn.errors import ConfigError, DataError
from scalegnn.graph import Graph
from scalegnn.io import atomic_save_npz
from scalegnn.shadow._ppr_kernels import ppr_topk
from scalegnn.shadow.extract import _cumsum0, _Extractor, _int, _ranges, _real, graph_key

_PPR_ENTRIES = 1 << 22      # PPR: targets per kernel call = this // k
_LISTS_VERSION = 2          # in the cache key: 2 = sweeps and p + alpha*r scores (1: FIFO, p)


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
        # over those lists: pushes, neighbour updates, ids visited by sweeps, nodes touched
        self.push_work = np.zeros(4, dtype=np.int64)
        self._dtype = self.graph.indices.dtype
        self._chunks: list[tuple] = []
        self._lock = threading.Lock()
        self.cache_path = None
        self.cache_hit = False
        if cache_dir is not None:
            params = repr((self.alpha, self.eps, self.k, self.threshold,
                           _LISTS_VERSION)).encode()
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
            work = np.empty((part.size, 4), dtype=np.int64)
            ppr_topk(g.indptr, g.indices, part, self.alpha, self.eps, k, self.threshold,
                     out_n, out_s, cnt, work, self._workers(part.size))
            self.push_work += work.sum(axis=0)
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
