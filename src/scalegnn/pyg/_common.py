"""What the PyG loaders share: argument checks, the CSR by target of a ``Data`` (built once per
``edge_index`` and cached), seeds, and the batch ``Data`` (node and edge attributes sliced)."""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass

import numpy as np
import torch
from torch_geometric.data import Data

from scalegnn.errors import ConfigError, DataError
from scalegnn.graph import Graph, index_dtype
from scalegnn.pyg._kernels import count_targets, scatter_sources, sort_rows
from scalegnn.sampling.sampler_base import check_int

# torch.utils.data.DataLoader arguments a PyG script may pass: accepted, and ignored (the
# samplers run in numba threads in this process, not in worker processes)
IGNORED = frozenset({"num_workers", "pin_memory", "persistent_workers", "prefetch_factor",
                     "timeout", "worker_init_fn", "multiprocessing_context", "generator",
                     "pin_memory_device", "filter_per_worker", "in_order", "log",
                     "is_sorted"})


def check_kwargs(kwargs: dict, who: str) -> None:
    """ConfigError naming the first argument that is neither used nor a DataLoader one."""
    unknown = sorted(k for k in kwargs if k not in IGNORED)
    if unknown:
        more = f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""
        raise ConfigError(f"{who}: unknown argument {unknown[0][:80]!r}{more}")


def check_data(data, who: str) -> Data:
    if not isinstance(data, Data):
        raise DataError(f"{who}: data must be a torch_geometric.data.Data (homogeneous graph), "
                        f"got {type(data).__name__}")
    if getattr(data, "edge_index", None) is None:
        raise DataError(f"{who}: data has no edge_index")
    if data.num_nodes is None:
        raise DataError(f"{who}: data has no node attributes and no num_nodes")
    return data


def seed_of(seed, who: str) -> int:
    """``seed`` as an int; None draws one from torch's global generator (so
    ``torch.manual_seed`` makes a run repeatable, as with PyG's loaders)."""
    if seed is None:
        return int(torch.randint(0, 2**62, (1,)).item())
    return check_int(f"{who}: seed", seed, 0)


def threads_of(num_threads, who: str):
    return None if num_threads is None else check_int(f"{who}: num_threads", num_threads)


@dataclass
class TargetCSR:
    graph: Graph
    """Row v: the sources u of the edges u -> v, ascending (square, ``num_nodes`` rows)."""
    perm: np.ndarray
    """Position in ``edge_index`` of each CSR entry (int32 below 2^31 edges, else int64)."""

    def edge_ids(self, pos) -> torch.Tensor:
        """``e_id`` (int64 tensor) of CSR positions ``pos``."""
        return torch.from_numpy(self.perm[pos].astype(np.int64, copy=False))

    def rows(self) -> np.ndarray:
        """The target of every CSR entry (int64; a full-size temporary)."""
        return np.repeat(np.arange(self.graph.num_nodes, dtype=np.int64), self.graph.degrees())


# id(edge_index) -> (weak reference, (version, num_nodes), TargetCSR); an entry leaves with its
# tensor (tensors compare elementwise, so they cannot key a WeakKeyDictionary)
_CACHE: dict = {}
_CACHE_LOCK = threading.Lock()


def target_csr(data: Data, who: str) -> TargetCSR:
    """The CSR by target of ``data.edge_index`` (see :mod:`scalegnn.pyg._kernels`), built once
    per edge_index tensor (and rebuilt if it was modified in place) and shared by every
    loader over it: the edge list is copied once, into the CSR."""
    ei = data.edge_index
    if not isinstance(ei, torch.Tensor):
        raise DataError(f"{who}: data.edge_index must be a tensor, got {type(ei).__name__}")
    n = int(data.num_nodes)
    with _CACHE_LOCK:
        hit = _CACHE.get(id(ei))
        if hit is not None and hit[0]() is ei and hit[1] == (ei._version, n):
            return hit[2]
        csr = _build(ei, n, who)
        if hit is None or hit[0]() is not ei:
            weakref.finalize(ei, _CACHE.pop, id(ei), None)
        _CACHE[id(ei)] = (weakref.ref(ei), (ei._version, n), csr)
        return csr


def _build(ei: torch.Tensor, n: int, who: str) -> TargetCSR:
    if ei.dim() != 2 or ei.shape[0] != 2:
        raise DataError(f"{who}: data.edge_index must have shape (2, E), got {tuple(ei.shape)}")
    if ei.dtype.is_floating_point or ei.dtype.is_complex or ei.dtype == torch.bool:
        raise DataError(f"{who}: data.edge_index must hold integers, got {ei.dtype}")
    arr = ei.detach().cpu().numpy()      # a view of a CPU tensor
    src, dst = arr[0], arr[1]
    if arr.shape[1]:
        lo, hi = int(min(src.min(), dst.min())), int(max(src.max(), dst.max()))
        if lo < 0:
            raise DataError(f"{who}: data.edge_index has a negative node id {lo}")
        if hi >= n:
            raise DataError(f"{who}: data.edge_index has node id {hi}, out of range for "
                            f"data.num_nodes={n}")
    indptr = np.zeros(n + 1, dtype=np.int64)
    count_targets(dst, indptr)
    np.cumsum(indptr, out=indptr)
    e = arr.shape[1]
    indices = np.empty(e, dtype=index_dtype(n))
    perm = np.empty(e, dtype=np.int32 if e <= np.iinfo(np.int32).max else np.int64)
    scatter_sources(src, dst, indptr[:-1].copy(), indices, perm)
    sort_rows(indptr, indices, perm)
    return TargetCSR(Graph(indptr, indices, n, validate=False), perm)


def batch_data(data: Data, n_id, e_id, edge_index: torch.Tensor, **extra) -> Data:
    """A ``Data`` of the same class as ``data`` with its node attributes at ``n_id``, its edge
    attributes at ``e_id`` (int64 tensors), other attributes as they are, ``edge_index``
    (local ids), ``n_id``, ``e_id`` and ``extra``."""
    out = data.__class__()
    for key, value in data.items():
        if key in ("edge_index", "num_nodes"):
            continue
        if isinstance(value, torch.Tensor) and data.is_node_attr(key):
            out[key] = value.index_select(data.__cat_dim__(key, value), n_id)
        elif isinstance(value, torch.Tensor) and data.is_edge_attr(key):
            out[key] = value.index_select(data.__cat_dim__(key, value), e_id)
        else:
            out[key] = value
    out.edge_index = edge_index
    out.num_nodes = int(n_id.shape[0])
    out.n_id = n_id
    out.e_id = e_id
    for key, value in extra.items():
        out[key] = value
    return out


def epoch_order(count: int, shuffle: bool, seed: int, epoch: int) -> np.ndarray:
    """The order of ``count`` items in ``epoch``: a permutation drawn from (seed, epoch) when
    shuffling, else 0..count-1."""
    if not shuffle:
        return np.arange(count, dtype=np.int64)
    return np.random.default_rng([seed, epoch]).permutation(count)


def num_batches(count: int, batch_size: int, drop_last: bool) -> int:
    return count // batch_size if drop_last else -(-count // batch_size)


def check_flag(value, what: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise ConfigError(f"{what} must be True or False, got {value!r}"[:300])
    return bool(value)
