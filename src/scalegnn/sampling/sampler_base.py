"""What every GraphSAINT sampler shares: the :class:`Subgraph` it returns, the per-subgraph
random streams (:func:`stream_seeds`), budget checks, and the :class:`Sampler` base class.

``Sampler.sample(count, seed)`` validates its arguments once, splits the ``count`` subgraphs
into groups whose output arrays stay small, runs the subclass's sampler kernel on each group
(the node sets) and then ``fill_induced`` (their induced CSRs). Subgraph ``start + i`` of a seed
always uses the random stream derived from ``(seed, start + i)``, so results are identical
whatever ``num_threads`` is. The samplers themselves live in :mod:`scalegnn.sampling.samplers`.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass

import numba
import numpy as np

from scalegnn.errors import ConfigError, GraphError
from scalegnn.graph import Graph, index_dtype
from scalegnn.ops._simd import VECTOR_FILL, W
from scalegnn.sampling._induce_kernels import fill_induced
from scalegnn.threads import keep_freed_memory


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


def stream_seeds(seed: int, start: int, count: int, step: int = 1) -> np.ndarray:
    """32-bit seed of subgraph ``start + i * step`` (splitmix64 of the pair (seed, index))."""
    with np.errstate(over="ignore"):
        idx = np.arange(start, start + count * step, step, dtype=np.uint64)
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
    vector_fill = VECTOR_FILL  # AVX-512 compress in the fill pass (False: the scalar loop)

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
        self.phase_cpu_s = {"draw": 0.0, "induce": 0.0}
        """Process CPU seconds (every thread of the process) of the last ``sample`` call's
        node-set draws and inductions (``fill_induced``): ``bench sample`` reports the split."""
        small = graph.num_edges <= np.iinfo(np.int32).max
        self._id_dtype = np.int32 if small else np.int64
        # each call's output arrays (MBs per group) then come from freed heap blocks, not
        # fresh mappings: without it, used on its own (no CLI or Trainer to set it), 85-180
        # page faults a subgraph were 20-55% of its CPU (kronecker:17:8, PPI budgets, Zen 5)
        keep_freed_memory()
        self._setup()

    # -------------------------------------------------------------- to override
    def _setup(self):
        """Validate the budget, precompute tables, set ``expected_size``, ``cap`` and
        ``size_budget`` (GraphSAINT's ``size_subg_budget``: node/mrw n, edge 2m, rw r·h, which
        sets the epoch length ceil(|V_train| / size_budget) exactly as the reference does)."""
        raise NotImplementedError

    def _run(self, seeds, clip, bits, mark, nodes_buf, nv):
        """Draw the node sets of the group's subgraphs (seeds[i]'s stream) into
        ``nodes_buf[i, :nv[i]]``, sorted and unique."""
        raise NotImplementedError

    def batches_per_epoch(self, num_train: int) -> int:
        """Subgraphs per epoch: GraphSAINT's ceil(|V_train| / size_budget) (at least 1)."""
        return max(1, math.ceil(int(num_train) / max(self.size_budget, 1.0)))

    # -------------------------------------------------------------- public
    def __repr__(self):
        b = ", ".join(f"{k}={v}" for k, v in self.budget.items())
        return f"{type(self).__name__}({b}; |nodes|={self.nodes.size})"

    def sample(self, count: int, seed: int, num_threads: int | None = None, *, start: int = 0,
               step: int = 1, clip_multiple: int = 0, edge_values: np.ndarray | None = None,
               row_scale: np.ndarray | None = None) -> list[Subgraph]:
        """``count`` subgraphs; subgraph i is the one of stream index ``start + i * step``
        (drawn from ``(seed, index)``: a data-parallel rank takes every ``step``-th one).

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
        seeds = stream_seeds(seed, start, count, check_int("step", step))
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
        # A group is a multiple of the worker count: worker w takes subgraphs w, w + workers,
        # ... of it, and in a group of 7 on 2 workers one of them sat idle through a whole
        # subgraph (wall time; CPU too where OMP_WAIT_POLICY is active).
        per_sub = (4.0 + 2 * self._id_dtype().itemsize + 4.0) * self._mean_edges \
            + 16.0 * self.cap + 1.0
        floor = workers if per_sub * workers > self.GROUP_BYTES else max(4 * workers, 4)
        group = max(int(self.GROUP_BYTES / per_sub), floor)
        group -= group % workers
        subs: list[Subgraph] = []
        with self._lock:  # the per-worker scratch maps are shared state
            self.phase_cpu_s = {"draw": 0.0, "induce": 0.0}
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
        workers = mark.shape[0]
        nodes_buf = np.empty((count, self.cap), dtype=np.int64)
        nv = np.zeros(count, dtype=np.int64)
        c0 = time.process_time()
        self._run(seeds, clip, bits, mark, nodes_buf, nv)
        c1 = time.process_time()
        self.phase_cpu_s["draw"] += c1 - c0
        node_off = np.zeros(count + 1, dtype=np.int64)
        np.cumsum(nv, out=node_off[1:])
        tot_v = int(node_off[-1])
        out_nodes = np.empty(tot_v, dtype=np.int64)
        out_indptr = np.empty(tot_v + count, dtype=np.int64)
        # each worker writes its subgraphs' edges into a segment of its own, sized from the
        # running mean (+ 25%; until there is one, 16 edges per node); a worker that runs out
        # reports how far it got, its segment doubles (at least) and the group's fill reruns
        per = np.bincount(np.arange(count) % workers, minlength=workers)
        mean = self._mean_edges if self._mean_edges > 0 else 16.0 * float(nv.mean())
        room = ((1.25 * mean + 2 * W + 2) * per).astype(np.int64)
        edge_off = np.zeros(count, dtype=np.int64)
        ne = np.zeros(count, dtype=np.int64)
        overflow = np.zeros(workers, dtype=np.int64)
        while True:
            seg_end = np.cumsum(room)
            seg_start = seg_end - room
            tot_e = int(seg_end[-1])
            out_indices = np.empty(tot_e, dtype=np.int32)
            out_eids = np.empty(tot_e, dtype=self._id_dtype)
            out_perm = np.empty(tot_e, dtype=np.int32 if tot_e <= np.iinfo(np.int32).max
                                else np.int64)
            out_data = np.empty(tot_e if with_data else 0, dtype=np.float32)
            fill_induced(self.graph.indptr, self.graph.indices, nodes_buf, nv, node_off,
                         seg_start, seg_end, bits, vals, scale, inv_degree, out_nodes,
                         out_indptr, out_indices, out_eids, out_perm, out_data, edge_off, ne,
                         overflow, self.vector_fill)
            if not overflow.any():
                break
            room = np.where(overflow > 0, 2 * np.maximum(overflow, room), room)
        self.phase_cpu_s["induce"] += time.process_time() - c1
        self._mean_edges = 0.5 * self._mean_edges + 0.5 * float(ne.mean()) \
            if self._mean_edges > 0 else float(ne.mean())
        subs = []
        for i in range(count):
            a, b = int(node_off[i]), int(node_off[i + 1])
            ea, eb = int(edge_off[i]), int(edge_off[i] + ne[i])
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
