"""Datasets built in Python from arrays: the fields of :meth:`Dataset.from_arrays` /
:meth:`Dataset.from_edge_index` (which construct and validate the Dataset).

Inputs may be numpy arrays, scipy sparse matrices or torch tensors (dense or sparse; moved
to the CPU). The graph is made what every loader makes it: symmetric, deduplicated, without
self-loops. Contract:

* ``adjacency``: (N x N), nonzeros are edges; or ``edge_index``: (2 x E) integer node ids
  (PyG's layout), with ``num_nodes`` (default: the labels' length).
* ``labels``: (N,) integer class ids -> single-label (metric accuracy), or an (N x C) 0/1
  matrix -> multi-label (f1_micro); ``metric`` overrides (``roc_auc`` for binary tasks).
* ``features``: (N x F) numbers (a scipy sparse matrix stays sparse when the feature
  representation in use keeps CSR); None -> structural features, or ``features_source``
  (``structural`` | ``onehot`` | a ``.npy`` path) as for files.
* splits: ``train``/``val``/``test`` each an index array or a boolean mask of length N; all
  three or none (a seeded 50/25/25 split by ``seed``).

Every problem is a one-line :class:`~scalegnn.errors.DataError` naming the argument.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch

from scalegnn.data import _common as C
from scalegnn.data.options import check_options, featureless_features
from scalegnn.errors import DataError
from scalegnn.features import as_feature_store, csr_features


def _numpy(value, what: str):
    """A numpy array or scipy sparse matrix from numpy / scipy / torch input."""
    if sp.issparse(value):
        return value
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu()
        if value.is_sparse or value.layout in (torch.sparse_csr, torch.sparse_csc):
            coo = value.to_sparse_coo().coalesce()
            idx = coo.indices().numpy()
            return sp.coo_matrix((coo.values().numpy(), (idx[0], idx[1])), shape=tuple(coo.shape))
        return value.numpy()
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError):
        raise DataError(f"{what}: expected an array (numpy, scipy or torch), got "
                        f"{type(value).__name__}") from None
    if arr.dtype == object:
        raise DataError(f"{what}: expected a numeric array, got {type(value).__name__} of "
                        f"mixed objects")
    return arr


def _graph_from_adjacency(adjacency, where: str):
    a = _numpy(adjacency, f"{where}: adjacency")
    if not sp.issparse(a):
        if a.ndim != 2 or a.dtype.kind not in "fiub":
            raise DataError(f"{where}: adjacency must be a 2-D numeric matrix, got shape "
                            f"{tuple(a.shape)} and dtype {a.dtype}")
    a = sp.csr_matrix(a)
    a.eliminate_zeros()
    graph, _ = C.clean_csr(a.indptr, a.indices.astype(np.int64), a.shape, f"{where}: adjacency")
    return graph


def _graph_from_edge_index(edge_index, num_nodes, where: str):
    e = _numpy(edge_index, f"{where}: edge_index")
    if sp.issparse(e) or e.ndim != 2 or e.shape[0] != 2:
        raise DataError(f"{where}: edge_index must have shape (2, E), got "
                        f"{tuple(e.shape)}")
    e = C.check_int_array(e, f"{where}: edge_index", "node ids")
    return C.graph_from_edges(e[0], e[1], int(num_nodes), f"{where}: edge_index")


def _labels(labels, where: str) -> np.ndarray:
    y = _numpy(labels, f"{where}: labels")
    if sp.issparse(y):
        y = y.toarray()
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim == 1:
        y = C.check_int_array(y, f"{where}: labels", "class ids").astype(np.int64)
        if y.size and y.min() < 0:
            raise DataError(f"{where}: labels: class id {y.min()} is negative")
        return y
    if y.ndim != 2 or y.dtype.kind not in "fiub" or not np.isin(y, (0, 1)).all():
        raise DataError(f"{where}: labels must be (N,) class ids or an (N, C) 0/1 matrix, got "
                        f"shape {tuple(y.shape)}")
    return y.astype(np.float32)


def _features(features, n: int, where: str):
    x = _numpy(features, f"{where}: features")
    if sp.issparse(x):
        x = sp.csr_matrix(x)
        if x.shape[0] != n:
            raise DataError(f"{where}: features have {x.shape[0]} rows for {n} nodes")
        return csr_features(x.indptr, x.indices, x.data, x.shape, f"{where}: features")
    x = C.finite_float32(x, f"{where}: features")
    if x.shape[0] != n:
        raise DataError(f"{where}: features have {x.shape[0]} rows for {n} nodes")
    return as_feature_store(x)


def _split(splits, n: int, seed: int, where: str):
    given = [s is not None for s in splits]
    if not any(given):
        return C.seeded_split(n, seed), f"seeded 50/25/25 (seed={seed})"
    if not all(given):
        raise DataError(f"{where}: give all three of train, val, test (indices or boolean "
                        f"masks), or none for a seeded 50/25/25 split")
    out = []
    for name, s in zip(("train", "val", "test"), splits):
        a = _numpy(s, f"{where}: {name}")
        if sp.issparse(a) or a.ndim != 1:
            raise DataError(f"{where}: {name} must be a 1-D index array or boolean mask")
        if a.dtype == bool:
            if a.shape[0] != n:
                raise DataError(f"{where}: {name} mask has length {a.shape[0]}, expected {n}")
            a = np.flatnonzero(a)
        out.append(C.check_int_array(a, f"{where}: {name}", "node ids").astype(np.int64))
    return tuple(out), "given"


def fields_from_graph(graph, labels, features, splits, *, seed: int, name: str, metric,
                      features_source, where: str) -> dict:
    """The Dataset fields of an already-built graph (shared by both constructors)."""
    n = graph.num_nodes
    y = _labels(labels, where)
    if y.shape[0] != n:
        raise DataError(f"{where}: {y.shape[0]} labels for {n} nodes")
    opts = check_options({"features_source": features_source}, where)
    meta = {"format": "arrays"}
    if features is None:
        x, extra = featureless_features(graph, seed, opts, where)
        meta.update(extra)
    elif features_source is not None:
        raise DataError(f"{where}: give features or features_source, not both")
    else:
        x = _features(features, n, where)
        meta["features"] = "given"
    (tr, va, te), meta["split"] = _split(splits, n, seed, where)
    return dict(graph=graph, features=x, labels=y, train_idx=tr, val_idx=va, test_idx=te,
                name=name, source=where, metric=metric or C.metric_for(y), meta=meta)


def arrays_fields(adjacency, labels, features=None, *, train=None, val=None, test=None,
                  seed: int = 0, name: str = "dataset", metric: str | None = None,
                  features_source: str | None = None) -> dict:
    """The fields of :meth:`scalegnn.data.Dataset.from_arrays`."""
    where = f"Dataset.from_arrays({name})"
    graph = _graph_from_adjacency(adjacency, where)
    return fields_from_graph(graph, labels, features, (train, val, test), seed=seed,
                             name=name, metric=metric, features_source=features_source,
                             where=where)


def edge_index_fields(edge_index, labels, features=None, *, num_nodes: int | None = None,
                      train=None, val=None, test=None, seed: int = 0, name: str = "dataset",
                      metric: str | None = None, features_source: str | None = None) -> dict:
    """The fields of :meth:`scalegnn.data.Dataset.from_edge_index`."""
    where = f"Dataset.from_edge_index({name})"
    if num_nodes is None:
        y = _numpy(labels, f"{where}: labels")
        num_nodes = y.shape[0] if y.ndim else 0
    elif isinstance(num_nodes, bool) or not isinstance(num_nodes, (int, np.integer)) \
            or num_nodes < 0:
        raise DataError(f"{where}: num_nodes must be a non-negative int, got {num_nodes!r}")
    graph = _graph_from_edge_index(edge_index, num_nodes, where)
    return fields_from_graph(graph, labels, features, (train, val, test), seed=seed,
                             name=name, metric=metric, features_source=features_source,
                             where=where)
