"""Link prediction (thesis Table 5.6, ogbl-collab style): edge split, negatives, heuristics.

* :func:`split_edges` holds out a seeded share of the undirected edges as validation and test
  positives, builds the training graph from the rest, and draws one fixed set of negative pairs
  for validation and one for test, shared by every positive of that split (ogbl-collab: each
  positive is ranked against all shared negatives, see :mod:`scalegnn.engine.metrics`).
* :func:`sample_negatives` draws uniform non-edges (also the per-epoch training negatives:
  sample them against ``split.train_graph``, as usual; held-out positives may then appear as
  training negatives, which leaks nothing).
* :func:`common_neighbours_scores` / :func:`adamic_adar_scores` are the heuristic baselines and
  :func:`heuristic_baseline` scores one of them on the seeded split.

Pairs are stored as ``(2, k)`` int64 arrays (row 0: source ends, row 1: destination ends, the
``edge_index`` convention), with ``src < dst`` for every positive and negative.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba as nb
import numpy as np

from scalegnn import _graph_kernels as K
from scalegnn._graph_kernels import _bsearch
from scalegnn.data import load_dataset
from scalegnn.engine.metrics import link_metrics
from scalegnn.errors import ConfigError, GraphError
from scalegnn.graph import Graph

DEFAULT_FRACTIONS = (0.85, 0.05, 0.10)
# ogbl-collab's count of shared negatives per evaluation split.
DEFAULT_NUM_NEGATIVES = 100_000


@dataclass
class EdgeSplit:
    """A held-out split of a graph's undirected edges.

    ``train_graph``: the symmetric CSR with only the training edges, same node ids (a node whose
    edges were all held out is isolated there). ``train_pos`` / ``val_pos`` / ``test_pos``: the
    positive pairs, (2, k) int64, ``src < dst``, sorted, pairwise disjoint. ``val_neg`` /
    ``test_neg``: shared negative pairs, distinct within each set, none an edge of the full graph
    nor a self loop (the two sets are drawn independently and may overlap).
    """

    train_graph: Graph
    train_pos: np.ndarray
    val_pos: np.ndarray
    test_pos: np.ndarray
    val_neg: np.ndarray
    test_neg: np.ndarray
    fractions: tuple
    seed: int

    @property
    def num_nodes(self) -> int:
        return self.train_graph.num_nodes

    def pairs(self, which: str) -> tuple[np.ndarray, np.ndarray]:
        """(positives, negatives) of ``"val"`` or ``"test"``."""
        if which not in ("val", "test"):
            raise ConfigError(f"EdgeSplit.pairs: which must be 'val' or 'test', got {which!r}")
        return getattr(self, f"{which}_pos"), getattr(self, f"{which}_neg")


# ---------------------------------------------------------------------- kernels
@nb.njit(cache=True, nogil=True)
def _has_edge(indptr, indices, src, dst):
    """out[i] = (src[i], dst[i]) or (dst[i], src[i]) is stored; rows must be sorted."""
    out = np.zeros(src.shape[0], dtype=np.bool_)
    for i in range(src.shape[0]):
        u, v = src[i], dst[i]
        if _bsearch(indices, indptr[u], indptr[u + 1], v) >= 0 or \
                _bsearch(indices, indptr[v], indptr[v + 1], u) >= 0:
            out[i] = True
    return out


@nb.njit(cache=True, nogil=True)
def _pair_scores(indptr, indices, src, dst, weight, use_weight):
    """sum over w in N(u) & N(v) of weight[w] (or 1) by a sorted merge of the two rows."""
    out = np.zeros(src.shape[0], dtype=np.float64)
    for i in range(src.shape[0]):
        a, a_end = indptr[src[i]], indptr[src[i] + 1]
        b, b_end = indptr[dst[i]], indptr[dst[i] + 1]
        s = 0.0
        while a < a_end and b < b_end:
            x, y = indices[a], indices[b]
            if x < y:
                a += 1
            elif y < x:
                b += 1
            else:
                s += weight[x] if use_weight else 1.0
                a += 1
                b += 1
        out[i] = s
    return out


# ---------------------------------------------------------------------- helpers
def _sorted(graph: Graph) -> Graph:
    return graph if graph.is_sorted() else graph.sort_indices()


def _canonical(graph: Graph) -> Graph:
    """Rows strictly increasing (sorted, no duplicate neighbour), as the merge needs."""
    return graph if K.rows_strictly_sorted(graph.indptr, graph.indices) else graph.deduplicate()


def _undirected_pairs(graph: Graph) -> np.ndarray:
    """Sorted unique keys u * n + v (u < v) of every non-loop edge, in either direction."""
    src, dst = graph.edge_index()
    src, dst = src.astype(np.int64), dst.astype(np.int64)
    keep = src != dst
    lo, hi = np.minimum(src[keep], dst[keep]), np.maximum(src[keep], dst[keep])
    return np.unique(lo * graph.num_nodes + hi)


def _check_pairs(src, dst, n: int, what: str) -> tuple[np.ndarray, np.ndarray]:
    src = np.ascontiguousarray(src, dtype=np.int64).reshape(-1)
    dst = np.ascontiguousarray(dst, dtype=np.int64).reshape(-1)
    if src.shape != dst.shape:
        raise GraphError(f"{what}: {src.size} source ends but {dst.size} destination ends")
    if src.size and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= n):
        raise GraphError(f"{what}: node ids must lie in [0, {n})")
    return src, dst


def _check_fractions(fractions) -> tuple[float, float, float]:
    try:
        f = tuple(float(x) for x in fractions)
    except (TypeError, ValueError):
        f = ()
    if len(f) != 3 or not all(np.isfinite(x) and x > 0 for x in f) or abs(sum(f) - 1) > 1e-6:
        raise ConfigError(f"split_edges: fractions must be three positive numbers (train, val, "
                          f"test) summing to 1, got {fractions!r}")
    return f


# ---------------------------------------------------------------------- public API
def sample_negatives(num: int, num_nodes: int, forbid: Graph, seed) -> tuple[np.ndarray,
                                                                              np.ndarray]:
    """``num`` distinct uniform random node pairs that are neither edges of ``forbid`` (in either
    direction) nor self loops, as ``(src, dst)`` int64 with ``src < dst``.

    Uniform over the unordered non-edge pairs: endpoints are drawn independently and uniformly,
    pairs that are loops, edges (binary search in ``forbid``'s sorted rows) or repeats are
    rejected, and the survivors keep their draw order. ``seed``: an int or a
    ``numpy.random.Generator``.
    """
    num, n = int(num), int(num_nodes)
    if num < 0:
        raise ConfigError(f"sample_negatives: num must be >= 0, got {num}")
    if forbid.num_nodes != n or forbid.num_cols != n:
        raise GraphError(f"sample_negatives: forbid has shape {forbid.shape}, expected "
                         f"({n}, {n})")
    available = n * (n - 1) // 2 - _undirected_pairs(forbid).size
    if num > available:
        raise ConfigError(f"sample_negatives: asked for {num} negative pairs but the graph has "
                          f"only {available} non-edge pairs")
    rng = np.random.default_rng(seed)
    g = _sorted(forbid)
    keys = np.empty(0, dtype=np.int64)
    accept = 2 * available / max(n * n, 1)  # share of raw (ordered) draws that are valid
    while keys.size < num:
        want = num - keys.size
        draw = int(min(1.2 * want / accept + 64, 1 << 24))
        u = rng.integers(0, n, draw, dtype=np.int64)
        v = rng.integers(0, n, draw, dtype=np.int64)
        ok = u != v
        u, v = u[ok], v[ok]
        u, v = np.minimum(u, v), np.maximum(u, v)
        ok = ~_has_edge(g.indptr, g.indices, u, v)
        cand = np.concatenate([keys, u[ok] * n + v[ok]])
        _, first = np.unique(cand, return_index=True)  # drop repeats, keep first draws
        keys = cand[np.sort(first)][:num]
    return keys // n, keys % n


def split_edges(graph: Graph, fractions=DEFAULT_FRACTIONS, seed: int = 0, *,
                num_negatives: int = DEFAULT_NUM_NEGATIVES) -> EdgeSplit:
    """Seeded train/val/test split of ``graph``'s undirected edges (ogbl-collab style).

    Each undirected edge counts once as ``(u, v)`` with ``u < v`` (an edge stored in one
    direction only counts too; self loops are ignored). A seeded permutation gives
    ``round(f_val * E)`` validation and ``round(f_test * E)`` test positives; the rest train.
    ``train_graph`` = ``Graph.from_edges(train src, train dst, n, symmetrize=True)``. Nodes are
    NOT guaranteed to keep a training edge: a node whose edges were all held out is isolated
    in ``train_graph`` (as in a random OGB-style split). ``num_negatives`` shared negatives are
    drawn for val and for test with :func:`sample_negatives` against the FULL graph, so no held-out
    positive is ever a negative. Same graph + seed -> same split.
    """
    f = _check_fractions(fractions)
    n = graph.num_nodes
    if graph.num_cols != n:
        raise GraphError(f"split_edges: needs a square graph, got shape {graph.shape}")
    keys = _undirected_pairs(graph)
    e = keys.size
    n_val, n_test = int(round(f[1] * e)), int(round(f[2] * e))
    if min(n_val, n_test, e - n_val - n_test) < 1:
        raise GraphError(f"split_edges: {e} undirected edges are too few for fractions {f}")
    s_perm, s_val, s_test = np.random.SeedSequence(seed).spawn(3)
    perm = np.random.default_rng(s_perm).permutation(e)

    def pairs(sel):
        k = np.sort(keys[sel])
        return np.stack([k // n, k % n])

    val = pairs(perm[:n_val])
    test = pairs(perm[n_val:n_val + n_test])
    train = pairs(perm[n_val + n_test:])
    train_graph = Graph.from_edges(train[0], train[1], n, symmetrize=True, name="train edges")
    val_neg = np.stack(sample_negatives(num_negatives, n, graph, np.random.default_rng(s_val)))
    test_neg = np.stack(sample_negatives(num_negatives, n, graph, np.random.default_rng(s_test)))
    return EdgeSplit(train_graph, train, val, test, val_neg, test_neg, f, seed)


def common_neighbours_scores(graph: Graph, src, dst) -> np.ndarray:
    """``|N(u) & N(v)|`` for each pair (u, v) in ``graph`` (pass the TRAIN graph), float64.

    Neighbour sets are the stored rows (a symmetric graph's neighbours); self loops, if stored,
    count as neighbours of their node.
    """
    g = _canonical(graph)
    src, dst = _check_pairs(src, dst, g.num_nodes, "common_neighbours_scores")
    return _pair_scores(g.indptr, g.indices, src, dst, np.zeros(1), False)


def adamic_adar_scores(graph: Graph, src, dst) -> np.ndarray:
    """Adamic-Adar: sum over w in N(u) & N(v) of ``1 / log(deg w)`` (degree in ``graph``).

    A common neighbour of two distinct nodes has degree >= 2 in a loop-free graph; a degree-1
    ``w`` (possible only through self loops) contributes 0 instead of dividing by log 1 = 0.
    """
    g = _canonical(graph)
    src, dst = _check_pairs(src, dst, g.num_nodes, "adamic_adar_scores")
    deg = g.degrees().astype(np.float64)
    w = np.zeros(g.num_nodes, dtype=np.float64)
    w[deg > 1] = 1.0 / np.log(deg[deg > 1])
    return _pair_scores(g.indptr, g.indices, src, dst, w, True)


HEURISTICS = {"common_neighbours": common_neighbours_scores, "adamic_adar": adamic_adar_scores}


def heuristic_baseline(dataset_or_graph, seed: int = 0, *, score: str = "common_neighbours",
                       fractions=DEFAULT_FRACTIONS,
                       num_negatives: int = DEFAULT_NUM_NEGATIVES, ks=(20, 50, 100)) -> dict:
    """Score the seeded :func:`split_edges` split with a heuristic on its train graph.

    ``dataset_or_graph``: a :class:`~scalegnn.data.Dataset`, a :class:`Graph`, or a dataset
    spec/path for :func:`scalegnn.data.load_dataset`. Returns a flat, JSON-ready dict:
    ``{"score", "seed", "num_nodes", "num_edges", "num_negatives", "val_hits@50", "val_mrr",
    "test_hits@20", ...}`` (every key of :func:`~scalegnn.engine.metrics.link_metrics`, for
    val and test).
    """
    if score not in HEURISTICS:
        raise ConfigError(f"heuristic_baseline: score must be one of {', '.join(HEURISTICS)}, "
                          f"got {score!r}")
    graph = dataset_or_graph
    if not isinstance(graph, Graph):
        if not hasattr(graph, "graph"):
            graph = load_dataset(graph)
        graph = graph.graph
    split = split_edges(graph, fractions, seed, num_negatives=num_negatives)
    fn = HEURISTICS[score]
    out = {"score": score, "seed": seed, "num_nodes": split.num_nodes,
           "num_edges": int(split.train_pos.shape[1] + split.val_pos.shape[1]
                            + split.test_pos.shape[1]),
           "num_negatives": int(num_negatives)}
    for which in ("val", "test"):
        pos, neg = split.pairs(which)
        metrics = link_metrics(fn(split.train_graph, *pos), fn(split.train_graph, *neg), ks)
        out.update({f"{which}_{k}": v for k, v in metrics.items()})
    return out
