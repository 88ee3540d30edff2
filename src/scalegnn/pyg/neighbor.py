"""``NeighborLoader``: PyG's neighbour-sampling loader on scalegnn's numba sampler
(:class:`scalegnn.sampling.neighbour.NeighbourSampler`), without pyg-lib or torch-sparse.

Same arguments and batch fields as ``torch_geometric.loader.NeighborLoader`` for a
homogeneous ``Data``: each batch holds the seeds first (``n_id[:batch_size]``), node
attributes at ``n_id``, edge attributes at ``e_id``, ``edge_index`` in local ids (source =
the sampled neighbour, target = the node it was sampled for), ``batch_size``, ``input_id``,
``num_sampled_nodes`` and ``num_sampled_edges``. Per node and hop exactly ``min(deg, k)``
in-neighbours are drawn without replacement (k = -1: all). Unlike PyG's, a loader with a
``seed`` gives the same batches in every process and at any thread count.
"""

from __future__ import annotations

import numpy as np
import torch

from scalegnn.errors import ConfigError
from scalegnn.pyg._common import (batch_data, check_data, check_flag, check_kwargs, epoch_order,
                                  num_batches, seed_of, target_csr, threads_of)
from scalegnn.sampling.neighbour import NeighbourSampler
from scalegnn.sampling.sampler_base import check_int

WHO = "NeighborLoader"


def input_node_ids(input_nodes, num_nodes: int, who: str = WHO) -> np.ndarray:
    """``input_nodes`` (None: all nodes; an index tensor/array; a boolean mask) as int64 ids."""
    if input_nodes is None:
        return np.arange(num_nodes, dtype=np.int64)
    if isinstance(input_nodes, (tuple, str)):
        raise ConfigError(f"{who}: input_nodes names a node type; only homogeneous Data is "
                          f"supported")
    t = input_nodes.detach().cpu() if isinstance(input_nodes, torch.Tensor) else \
        torch.as_tensor(np.asarray(input_nodes))
    if t.dim() != 1:
        raise ConfigError(f"{who}: input_nodes must be 1-D, got shape {tuple(t.shape)}")
    if t.dtype == torch.bool:
        if t.shape[0] != num_nodes:
            raise ConfigError(f"{who}: input_nodes mask has length {t.shape[0]}, expected "
                              f"{num_nodes}")
        return torch.nonzero(t).view(-1).numpy().astype(np.int64)
    if t.dtype.is_floating_point or t.dtype.is_complex:
        raise ConfigError(f"{who}: input_nodes must be node ids or a boolean mask, got "
                          f"{t.dtype}")
    ids = t.numpy().astype(np.int64)
    if ids.size and (ids.min() < 0 or ids.max() >= num_nodes):
        raise ConfigError(f"{who}: input_nodes has an id outside [0, {num_nodes})")
    return ids


class NeighborLoader:
    """Minibatches of sampled neighbourhoods (see the module docstring).

    Arguments as PyG's: ``data``, ``num_neighbors`` (one int per hop, -1: all),
    ``input_nodes`` (None, ids or a mask), ``replace``, ``batch_size``, ``shuffle``,
    ``drop_last``, ``transform`` (called on each batch); ``directed=False`` /
    ``subgraph_type='induced'`` and ``disjoint=True`` are not supported. Added: ``seed``
    (None: drawn from torch's generator) and ``num_threads`` (sampler threads; None: numba's
    default). DataLoader arguments such as ``num_workers`` are accepted and ignored.
    Epoch e shuffles by (seed, e); batch b of epoch e is the sampler's batch index
    ``e * len(loader) + b``.
    """

    def __init__(self, data, num_neighbors, input_nodes=None, replace: bool = False,
                 batch_size: int = 1, shuffle: bool = False, drop_last: bool = False,
                 seed: int | None = None, num_threads: int | None = None, transform=None,
                 directed: bool = True, subgraph_type: str = "directional",
                 disjoint: bool = False, **kwargs):
        check_kwargs(kwargs, WHO)
        self.data = check_data(data, WHO)
        if not check_flag(directed, f"{WHO}: directed") or subgraph_type not in \
                ("directional", "directed"):
            raise ConfigError(f"{WHO}: only directional sampling is supported (directed=True, "
                              f"subgraph_type='directional'), got {subgraph_type!r}")
        if check_flag(disjoint, f"{WHO}: disjoint"):
            raise ConfigError(f"{WHO}: disjoint=True is not supported")
        if transform is not None and not callable(transform):
            raise ConfigError(f"{WHO}: transform must be callable")
        self.batch_size = check_int(f"{WHO}: batch_size", batch_size)
        self.shuffle = check_flag(shuffle, f"{WHO}: shuffle")
        self.drop_last = check_flag(drop_last, f"{WHO}: drop_last")
        self.seed = seed_of(seed, WHO)
        self.num_threads = threads_of(num_threads, WHO)
        self.transform = transform
        self.csr = target_csr(data, WHO)
        self.sampler = NeighbourSampler(self.csr.graph, num_neighbors,
                                        check_flag(replace, f"{WHO}: replace"))
        self.num_neighbors = self.sampler.fanouts
        self.input_nodes = input_node_ids(input_nodes, self.csr.graph.num_nodes)
        self.epoch = 0

    def __len__(self) -> int:
        return num_batches(self.input_nodes.size, self.batch_size, self.drop_last)

    def __repr__(self) -> str:
        return f"{WHO}(num_neighbors={self.num_neighbors}, batch_size={self.batch_size})"

    def __iter__(self):
        epoch, self.epoch = self.epoch, self.epoch + 1
        order = epoch_order(self.input_nodes.size, self.shuffle, self.seed, epoch)
        count = len(self)
        for b in range(count):
            ids = order[b * self.batch_size:(b + 1) * self.batch_size]
            yield self.batch(ids, epoch * count + b)

    def batch(self, input_id, index: int):
        """The batch of ``input_nodes[input_id]`` as batch ``index`` of the seed."""
        input_id = np.asarray(input_id, dtype=np.int64)
        s = self.sampler.sample(self.input_nodes[input_id], self.seed, index, self.num_threads)
        n_id = torch.from_numpy(s.nodes)
        edge_index = torch.stack([torch.from_numpy(s.src), torch.from_numpy(s.dst)])
        out = batch_data(self.data, n_id, self.csr.edge_ids(s.edge_ids), edge_index,
                         input_id=torch.from_numpy(input_id), batch_size=s.num_seeds,
                         num_sampled_nodes=list(s.num_sampled_nodes),
                         num_sampled_edges=list(s.num_sampled_edges))
        return out if self.transform is None else self.transform(out)
