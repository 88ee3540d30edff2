"""GraphSAINT samplers (SPEC §1.1): node, edge, rw, mrw (frontier, Dashboard), full.

A sampler holds one graph (symmetric pattern, sorted rows) and the node set to sample from.
``sample(count, seed)`` returns ``count`` node-induced subgraphs; subgraph ``start + i`` of a
seed always uses the random stream derived from ``(seed, start + i)``, so results are identical
whatever ``num_threads`` is, and consecutive calls with ``start`` advanced continue the stream.
The numba kernels live in the ``_*_kernels.py`` modules; slow references for tests in
``reference.py``.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass

import numba
import numpy as np

from scalegnn.errors import ConfigError, GraphError
from scalegnn.graph import Graph, index_dtype
from scalegnn.sampling._frontier_kernels import frontier_trace
from scalegnn.sampling._induce_kernels import fill_induced
from scalegnn.sampling._random_kernels import build_alias
from scalegnn.sampling._sample_kernels import (sample_edge, sample_frontier, sample_full,
                                               sample_node, sample_rw)

# GraphSAINT `phase` keys that are not budgets; accepted and ignored by make_sampler
PHASE_KEYS = ("sampler", "end", "eval_val_every", "sample_coverage")


@dataclass
class Subgraph:
    nodes: np.ndarray
    """int64, sorted, unique parent node ids."""
    graph: Graph
    """Local CSR on len(nodes) nodes: sorted rows, symmetric pattern (data: edge values if asked)."""
    edge_ids: np.ndarray
    """Parent edge id (position in the sampled-from graph) of each local edge; int32 when the
    parent has < 2^31 edges (fewer bytes to write and to gather by), else int64."""
    transpose_perm: np.ndarray
    """data_T = data[transpose_perm] (journal Alg. 6); int32 (int64 past 2^31 local edges)."""

    @property
    def num_nodes(self) -> int:
        return int(self.nodes.shape[0])

    @property
    def num_edges(self) -> int:
        return int(self.edge_ids.shape[0])

    @property
    def nbytes(self) -> int:
        return int(self.nodes.nbytes + self.graph.nbytes + self.edge_ids.nbytes
                   + self.transpose_perm.nbytes)


def stream_seeds(seed: int, start: int, count: int) -> np.ndarray:
    """32-bit seed of subgraph ``start + i`` (splitmix64 of the pair (seed, index))."""
    with np.errstate(over="ignore"):
        idx = np.arange(start, start + count, dtype=np.uint64)
        z = np.uint64(int(seed) % (1 << 64)) * np.uint64(0x9E3779B97F4A7C15) + idx \
            * np.uint64(0xD1B54A32D192ED03) + np.uint64(0x632BE59BD9B4E019)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(32)).astype(np.int64)


def check_int(what: str, value, minimum: int = 1) -> int:
    """``value`` as an int >= ``minimum`` (integral floats from YAML accepted), else a
    ConfigError naming ``what``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer, float)) or \
            (isinstance(value, float) and not value.is_integer()) or value < minimum:
        raise ConfigError(f"{what} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _positive_int(sampler: str, key: str, value, minimum: int = 1) -> int:
    return check_int(f"sampler '{sampler}': {key}", value, minimum)


class Sampler:
    """Base class; subclasses set ``name``, ``required``, ``optional`` and the kernel call."""

    name = ""
    required: tuple = ()
    optional: tuple = ()
    deterministic = False  # True: every call returns the same subgraph (full batch)

    def __init__(self, graph: Graph, nodes: np.ndarray, **budget):
        if not isinstance(graph, Graph):
            raise GraphError(f"sampler '{self.name}': graph must be a scalegnn Graph")
        if graph.num_cols != graph.num_nodes or not graph.is_sorted() or not graph.is_symmetric():
            raise GraphError(f"sampler '{self.name}': graph must be square, symmetric and have "
                             f"sorted rows")
        nodes = np.asarray(nodes, dtype=np.int64)
        if nodes.ndim != 1 or not bool(np.all(nodes[1:] > nodes[:-1])):
            nodes = np.unique(nodes)  # already sorted and unique (all nodes): kept, not copied
        if nodes.size == 0:
            raise ConfigError(f"sampler '{self.name}': the node set to sample from is empty")
        if nodes[0] < 0 or nodes[-1] >= graph.num_nodes:
            raise GraphError(f"sampler '{self.name}': node ids must lie in [0, {graph.num_nodes})")
        # held for the sampler's life: in the graph's id dtype (int32 below 2^31 nodes: a
        # transductive run's every node is 64 instead of 128 MiB at 2^24)
        nodes = nodes.astype(index_dtype(graph.num_nodes), copy=False)
        for key in budget:
            if key not in self.required + self.optional:
                allowed = ", ".join(self.required + self.optional) or "none"
                raise ConfigError(f"sampler '{self.name}': unknown budget key '{key}' "
                                  f"(allowed: {allowed})")
        for key in self.required:
            if key not in budget:
                raise ConfigError(f"sampler '{self.name}': missing budget key '{key}'")
        self.graph = graph
        self.nodes = nodes
        self.budget = dict(budget)
        self._lock = threading.Lock()
        self._bits = self._marks = self._values_cache = None
        self._mean_edges = 0.0  # running mean of |E_s|, sizes the output groups
        small = graph.num_edges <= np.iinfo(np.int32).max
        self._id_dtype = np.int32 if small else np.int64
        self._setup()

    # -------------------------------------------------------------- to override
    def _setup(self):
        """Validate the budget, precompute tables, set ``expected_size``, ``cap`` and
        ``size_budget`` (GraphSAINT's ``size_subg_budget``: node/mrw n, edge 2m, rw r·h, which
        sets the epoch length ceil(|V_train| / size_budget) exactly as the reference does)."""
        raise NotImplementedError

    def _run(self, seeds, clip, bits, mark, nodes_buf, rowcnt, nv, ne):
        raise NotImplementedError

    # -------------------------------------------------------------- public
    def __repr__(self):
        b = ", ".join(f"{k}={v}" for k, v in self.budget.items())
        return f"{type(self).__name__}({b}; |nodes|={self.nodes.size})"

    def sample(self, count: int, seed: int, num_threads: int | None = None, *, start: int = 0,
               clip_multiple: int = 0, edge_values: np.ndarray | None = None,
               row_scale: np.ndarray | None = None) -> list[Subgraph]:
        """``count`` subgraphs; subgraph i uses the stream of ``(seed, start + i)``.

        ``clip_multiple`` > 0 randomly drops nodes (before induction) so that |V_s| is a
        multiple of it (SPEC §2.2 (a); subgraphs smaller than it are kept whole). If
        ``edge_values`` (per parent edge) or ``row_scale`` (per parent node, or
        ``"inverse_degree"``: 1/deg(parent row), computed from the CSR) is given, each
        subgraph's ``graph.data[e] = edge_values[parent e] * row_scale[parent row]`` (float32).
        """
        count = int(count)
        if count <= 0:
            return []
        threads = numba.config.NUMBA_NUM_THREADS if num_threads is None else \
            check_int("num_threads", num_threads)
        clip = _positive_int(self.name, "clip_multiple", clip_multiple, minimum=0)
        seeds = stream_seeds(seed, start, count)
        with_data = edge_values is not None or row_scale is not None
        vals = self._edge_values(edge_values)
        inv_degree = isinstance(row_scale, str)
        if inv_degree and row_scale != "inverse_degree":
            raise ConfigError(f"row_scale: expected an array or 'inverse_degree', got "
                              f"{row_scale!r}")
        scale = np.empty(0, np.float32) if row_scale is None or inv_degree else \
            np.ascontiguousarray(row_scale, dtype=np.float32)
        if scale.size and scale.shape != (self.graph.num_nodes,):
            raise ConfigError(f"row_scale has shape {scale.shape}, expected "
                              f"({self.graph.num_nodes},)")
        # a parallel launch costs far more than a tiny subgraph (and much more on a loaded
        # machine): give each worker at least MIN_WORK (~node + edge entries) or run serially.
        # Results do not depend on the worker count.
        work = count * (self.cap + self._mean_edges)
        workers = int(min(threads, count, max(1, work // self.MIN_WORK)))
        # groups whose output arrays stay small enough (GROUP_BYTES, from the running mean
        # subgraph size) for malloc to recycle them: large fresh mmaps cost a page fault per
        # 4 KiB; but not so small that the per-group kernel launches dominate (groups of 6
        # instead of 8 cost mrw 15% of its rate on kronecker:17:8). A group's subgraphs share
        # its arrays, which live until the last of them is freed, so subgraphs too large for
        # a group of one per worker (frontier ones at 2^24 nodes: ~24 MB each) go one per
        # worker: groups of 8 kept up to 3 extra subgraphs resident in the loader's pool.
        per_sub = (4.0 + 2 * self._id_dtype().itemsize + 4.0) * self._mean_edges \
            + 16.0 * self.cap + 1.0
        floor = workers if per_sub * workers > self.GROUP_BYTES else max(4 * workers, 4)
        group = max(int(self.GROUP_BYTES / per_sub), floor)
        subs: list[Subgraph] = []
        with self._lock:  # the per-worker scratch maps are shared state
            prev = numba.get_num_threads()
            numba.set_num_threads(min(workers, numba.config.NUMBA_NUM_THREADS))
            try:
                bits, mark = self._scratch(workers)
                for g0 in range(0, count, group):
                    subs += self._sample_group(seeds[g0:g0 + group], clip, bits, mark, vals,
                                               scale, inv_degree, with_data)
            finally:
                numba.set_num_threads(prev)
        return subs

    GROUP_BYTES = 32 << 20
    MIN_WORK = 100_000

    def _sample_group(self, seeds, clip, bits, mark, vals, scale, inv_degree, with_data):
        count = seeds.shape[0]
        nodes_buf = np.empty((count, self.cap), dtype=np.int64)
        rowcnt = np.empty((count, self.cap), dtype=np.int64)
        nv = np.zeros(count, dtype=np.int64)
        ne = np.zeros(count, dtype=np.int64)
        self._run(seeds, clip, bits, mark, nodes_buf, rowcnt, nv, ne)
        self._mean_edges = 0.5 * self._mean_edges + 0.5 * float(ne.mean())
        node_off = np.zeros(count + 1, dtype=np.int64)
        np.cumsum(nv, out=node_off[1:])
        edge_off = np.zeros(count + 1, dtype=np.int64)  # + 1 padding slot per subgraph
        np.cumsum(ne + 1, out=edge_off[1:])
        tot_v, tot_e = int(node_off[-1]), int(edge_off[-1])
        out_nodes = np.empty(tot_v, dtype=np.int64)
        out_indptr = np.empty(tot_v + count, dtype=np.int64)
        out_indices = np.empty(tot_e, dtype=np.int32)
        out_eids = np.empty(tot_e, dtype=self._id_dtype)
        perm_dtype = np.int32 if int(ne.max()) <= np.iinfo(np.int32).max else np.int64
        out_perm = np.empty(tot_e, dtype=perm_dtype)
        out_data = np.empty(tot_e if with_data else 0, dtype=np.float32)
        fill_induced(self.graph.indptr, self.graph.indices, nodes_buf, rowcnt, nv, node_off,
                     edge_off, bits, mark, vals, scale, inv_degree, out_nodes, out_indptr,
                     out_indices, out_eids, out_perm, out_data)
        subs = []
        for i in range(count):
            a, b = int(node_off[i]), int(node_off[i + 1])
            ea, eb = int(edge_off[i]), int(edge_off[i + 1]) - 1
            g = Graph(out_indptr[a + i:b + i + 1], out_indices[ea:eb], b - a,
                      out_data[ea:eb] if with_data else None, validate=False)
            subs.append(Subgraph(out_nodes[a:b], g, out_eids[ea:eb], out_perm[ea:eb]))
        return subs

    def _edge_values(self, edge_values):
        """``edge_values`` as contiguous float32 (empty if None). Cached for the last array
        passed (the loader passes the same multiplier table every time)."""
        if edge_values is None:
            return np.empty(0, np.float32)
        if self._values_cache is not None and self._values_cache[0] is edge_values:
            return self._values_cache[1]
        vals = np.ascontiguousarray(edge_values, dtype=np.float32)
        if vals.shape != (self.graph.num_edges,):
            raise ConfigError(f"edge_values has shape {vals.shape}, expected "
                              f"({self.graph.num_edges},)")
        self._values_cache = (edge_values, vals)
        return vals

    def _scratch(self, workers: int):
        """Per worker a |V|-bit bitmap (all 0) and a |V| int32 map (all -1); allocated once,
        the kernels restore them."""
        if self._marks is None or self._marks.shape[0] < workers:
            n = self.graph.num_nodes
            self._bits = np.zeros((workers, n // 64 + 1), dtype=np.uint64)
            self._marks = np.full((workers, n), -1, dtype=np.int32)
        return self._bits[:workers], self._marks[:workers]


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

    def _run(self, seeds, clip, bits, mark, nodes_buf, rowcnt, nv, ne):
        sample_node(self.graph.indptr, self.graph.indices, self.nodes, self.prob,
                    self.alias, self.n, seeds, clip, bits, mark, nodes_buf, rowcnt, nv, ne)


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

    def _run(self, seeds, clip, bits, mark, nodes_buf, rowcnt, nv, ne):
        sample_edge(self.graph.indptr, self.graph.indices, self.eu, self.ev,
                    self.prob, self.alias, self.m, seeds, clip, bits, mark, nodes_buf, rowcnt,
                    nv, ne)


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

    def _run(self, seeds, clip, bits, mark, nodes_buf, rowcnt, nv, ne):
        sample_rw(self.graph.indptr, self.graph.indices, self.nodes, self.r,
                  self.h, seeds, clip, bits, mark, nodes_buf, rowcnt, nv, ne)


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
        # Dashboard DB entries are tile ids in [-1, m): int16 where they fit (half the traffic)
        self._db_proto = np.empty(0, np.int16 if self.m <= np.iinfo(np.int16).max else np.int32)

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

    def _run(self, seeds, clip, bits, mark, nodes_buf, rowcnt, nv, ne):
        sample_frontier(self.graph.indptr, self.graph.indices, self.nodes, self.m,
                        self.n, self.max_deg, self.eta, self.db_size, seeds, clip, bits, mark,
                        nodes_buf, rowcnt, nv, ne, self._db_proto)

    def trace(self, seed: int):
        """(V_s entries in order: m frontier nodes then each added one, popped nodes) of one
        run with ``seed`` — for tests of the pop distribution."""
        with self._lock:
            mark = self._scratch(1)[1][0]
            return frontier_trace(self.graph.indptr, self.graph.indices, self.nodes, self.m,
                                  self.n, self.max_deg, self.eta, self.db_size,
                                  int(stream_seeds(seed, 0, 1)[0]), mark, self._db_proto)


class FullSampler(Sampler):
    """The whole node set as one subgraph (full batch)."""

    name = "full"
    deterministic = True

    def _setup(self):
        self.cap = self.nodes.size
        self.size_budget = float(self.nodes.size)
        self.expected_size = float(self.nodes.size)

    def _run(self, seeds, clip, bits, mark, nodes_buf, rowcnt, nv, ne):
        sample_full(self.graph.indptr, self.graph.indices, self.nodes, seeds, clip,
                    bits, mark, nodes_buf, rowcnt, nv, ne)


SAMPLERS = {cls.name: cls for cls in (NodeSampler, EdgeSampler, RandomWalkSampler,
                                      FrontierSampler, FullSampler)}


def make_sampler(name: str, graph: Graph, nodes, params: dict | None = None) -> Sampler:
    """Sampler ``name`` with budget keys from a GraphSAINT ``phase`` entry (non-budget phase
    keys such as ``end`` or ``sampler`` are ignored)."""
    if name not in SAMPLERS:
        raise ConfigError(f"sampler: unknown sampler {name!r} (allowed: {', '.join(SAMPLERS)})")
    params = dict(params or {})
    budget = {k: v for k, v in params.items() if k not in PHASE_KEYS}
    return SAMPLERS[name](graph, nodes, **budget)
