"""Between PyG and scalegnn: :func:`from_data` (``torch_geometric.data.Data`` -> ``Dataset``)
and :func:`to_data` (a scalegnn ``Batch`` or ``Dataset`` -> ``Data``)."""

from __future__ import annotations

import numpy as np
import torch
from torch_geometric.data import Data

from scalegnn.batch import Batch
from scalegnn.data.dataset import Dataset
from scalegnn.errors import ConfigError, DataError
from scalegnn.nn.pyg import edge_index
from scalegnn.pyg._common import check_data
from scalegnn.sampling.sampler_base import check_int


def _mask(data: Data, key: str, split: int, who: str):
    m = getattr(data, key, None)
    if m is None or not isinstance(m, torch.Tensor) or m.dim() != 2:
        return m
    if split >= m.shape[1]:
        raise DataError(f"{who}: split={split} but data.{key} has {m.shape[1]} columns")
    return m[:, split]


def from_data(data, *, name: str = "pyg", split: int = 0, seed: int = 0,
              metric: str | None = None, features_source: str | None = None) -> Dataset:
    """A validated scalegnn :class:`~scalegnn.data.Dataset` of a ``Data``: the graph of
    ``edge_index`` made undirected, deduplicated and free of self-loops (one CSR built
    straight from the edge list's numpy view: the edge list is not copied first), ``y`` as
    labels ((N,) classes or an (N, C) 0/1 matrix), ``x`` as features (None: structural, or
    ``features_source``), ``train_mask``/``val_mask``/``test_mask`` as splits (column
    ``split`` of 2-D masks; none of them: a 50/25/25 split seeded by ``seed``)."""
    who = f"from_data({name})"
    check_data(data, who)
    split = check_int(f"{who}: split", split, 0)
    if getattr(data, "y", None) is None:
        raise DataError(f"{who}: data has no labels (data.y)")
    masks = [_mask(data, f"{s}_mask", split, who) for s in ("train", "val", "test")]
    if any(m is None for m in masks):
        masks = [None, None, None]
    train, val, test = masks
    return Dataset.from_edge_index(data.edge_index, data.y, getattr(data, "x", None),
                                   num_nodes=int(data.num_nodes), train=train, val=val,
                                   test=test, seed=seed, name=name, metric=metric,
                                   features_source=features_source)


def _tensor(x):
    if x is None or isinstance(x, torch.Tensor):
        return x
    if hasattr(x, "to_dense"):   # CSR feature rows
        return torch.from_numpy(np.ascontiguousarray(x.to_dense()))
    return torch.as_tensor(np.asarray(x))


def _dataset_data(ds: Dataset) -> Data:
    n = ds.num_nodes
    out = Data(x=torch.from_numpy(np.ascontiguousarray(ds.features.to_dense())),
               y=torch.from_numpy(np.ascontiguousarray(ds.labels)),
               edge_index=edge_index(ds.graph))
    for name, idx in (("train", ds.train_idx), ("val", ds.val_idx), ("test", ds.test_idx)):
        mask = torch.zeros(n, dtype=torch.bool)
        mask[torch.from_numpy(idx)] = True
        out[f"{name}_mask"] = mask
    return out


def to_data(batch) -> Data:
    """A ``Data`` of a scalegnn :class:`~scalegnn.data.Dataset` (``x`` dense, ``y``,
    ``edge_index`` of the full graph, ``train_mask``/``val_mask``/``test_mask``) or of a
    :class:`~scalegnn.batch.Batch`: ``x``, ``y``, ``edge_index``
    (source = column u, target = row v of the batch's adjacency: v aggregates u),
    ``edge_weight`` (the adjacency's values: Â_s[v, u], normalization included), ``n_id``
    (parent node ids), ``e_id`` (parent edge ids, when known), ``node_norm`` (the loss
    weights, when set), and for shaDow-GNN batches ``batch`` (each row's subgraph) and
    ``root_n_id`` (each subgraph's target row), as PyG's ``ShaDowKHopSampler``."""
    if isinstance(batch, Dataset):
        return _dataset_data(batch)
    if not isinstance(batch, Batch):
        raise ConfigError(f"to_data: expected a scalegnn Batch or Dataset, got "
                          f"{type(batch).__name__}")
    adj = batch.adj
    if adj.num_cols != adj.num_nodes:
        raise ConfigError("to_data: batches with a rectangular adjacency (distributed "
                          "partitions) are not supported")
    out = Data(x=_tensor(batch.x), y=_tensor(batch.y), edge_index=edge_index(adj))
    out.num_nodes = batch.num_nodes
    out.n_id = torch.from_numpy(np.asarray(batch.nodes, dtype=np.int64))
    if adj.data is not None:
        out.edge_weight = torch.from_numpy(np.ascontiguousarray(adj.data))
    if batch.edge_ids is not None:
        out.e_id = torch.from_numpy(np.asarray(batch.edge_ids, dtype=np.int64))
    if batch.loss_weight is not None:
        out.node_norm = _tensor(batch.loss_weight)
    if batch.segment is not None:
        out.batch = torch.from_numpy(np.asarray(batch.segment, dtype=np.int64))
    if batch.targets is not None:
        out.root_n_id = torch.from_numpy(np.asarray(batch.targets, dtype=np.int64))
    return out
