"""Single-file .npz datasets, read with ``allow_pickle=False`` (object arrays are refused).

Two layouts are recognised by their keys:

* **gnn-benchmark** (shchur/gnn-benchmark, e.g. citeseer.npz): ``adj_data/adj_indices/
  adj_indptr/adj_shape`` (CSR adjacency), features either sparse ``attr_data/attr_indices/
  attr_indptr/attr_shape`` or dense ``attr_matrix``, ``labels`` (N,) class ids (or sparse
  ``labels_data/labels_indices/labels_indptr/labels_shape`` -> multi-label). No split in the
  file: a seeded 50/25/25 split. The adjacency is symmetrized, deduplicated and stripped of
  self-loops (citeseer.npz stores 4,715 directed entries incl. 124 self-loops -> 4,536
  undirected edges). The older files (g2g, nettack: cora_ml.npz, pubmed.npz...) spell the
  CSR parts with dots, ``adj_matrix.data/.indices/.indptr/.shape``, ``attr_matrix.*``,
  ``labels.*``: they are read as ``adj_*``, ``attr_*``, ``labels_*``; their object entries
  (``idx_to_node``, ``idx_to_class``...) are never read.
* **heterophilous-graphs** (yandex-research, e.g. tolokers.npz): ``node_features``,
  ``node_labels``, ``edges`` (E x 2, each undirected edge once), ``train_masks/val_masks/
  test_masks`` (S x N, N x S or N); ``split`` (``--split``) picks one of the S splits, default
  0: with several splits and none chosen, ``meta["split_note"]`` says "using split 0 of S
  (--split I picks another)" (the CLI prints it). The split used is ``meta["split_index"]``.
  Metric ``roc_auc`` for 2 classes (tolokers, questions, minesweeper), else ``accuracy``.

Only the entries named above are read, so an unrelated pickled entry (some gnn-benchmark
files carry ``idx_to_node`` dicts) does not block a load; a *needed* object array is refused.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from scalegnn.data import _common as C
from scalegnn.data import _stream as S
from scalegnn.data.dataset import Dataset
from scalegnn.errors import DataError
from scalegnn.features import csr_features
from scalegnn.memory import require_memory

GNN_BENCHMARK_KEYS = ["adj_data", "adj_indices", "adj_indptr", "adj_shape", "attr_data",
                      "attr_indices", "attr_indptr", "attr_shape", "attr_matrix", "labels",
                      "labels_data", "labels_indices", "labels_indptr", "labels_shape",
                      "class_names"]
HETERO_KEYS = ["node_features", "node_labels", "edges", "train_masks", "val_masks",
               "test_masks"]


_DOTTED = {"adj_matrix.": "adj_", "attr_matrix.": "attr_", "labels.": "labels_"}


def canonical_names(stored) -> dict:
    """{canonical key: stored key}: ``adj_matrix.data`` -> ``adj_data`` (older gnn-benchmark
    files), every other key as it is."""
    out = {}
    for key in stored:
        new = key
        for old_prefix, new_prefix in _DOTTED.items():
            if key.startswith(old_prefix):
                new = new_prefix + key[len(old_prefix):]
        out.setdefault(new, key)
    return out


def npz_layout(path) -> str | None:
    """'gnn-benchmark', 'heterophilous' or None (unknown), from the archive's key names."""
    try:
        with np.load(path, allow_pickle=False) as z:
            keys = set(canonical_names(z.files))
    except Exception:
        return None
    if {"adj_indptr", "adj_indices", "adj_shape"} <= keys:
        return "gnn-benchmark"
    if {"node_features", "node_labels", "edges"} <= keys:
        return "heterophilous"
    return None


def load_npz(path, *, split: int | None = None, seed: int = 0,
             name: str | None = None) -> Dataset:
    path = C.require_file(path, ".npz file")
    layout = npz_layout(path)
    if layout == "gnn-benchmark":
        return load_gnn_benchmark(path, seed=seed, name=name)
    if layout == "heterophilous":
        return load_heterophilous(path, split=split, name=name)
    C.npz_arrays(path, [])  # raises the precise error if the file is not a readable archive
    raise DataError(f"{path}: unknown .npz layout (expected gnn-benchmark adj_*/attr_*/labels "
                    "or heterophilous node_features/node_labels/edges)")


def _sparse_dense(z, prefix, path, n_rows):
    """Dense float32 matrix from ``<prefix>_data/indices/indptr/shape`` CSR arrays."""
    indptr, indices, data, shape = _csr_arrays(z, prefix, path, n_rows)
    require_memory(f"{path}: {prefix} matrix of shape {shape}", 4.0 * shape[0] * shape[1])
    out = np.zeros(shape, dtype=np.float32)
    rows = np.repeat(np.arange(shape[0]), np.diff(indptr))
    np.add.at(out, (rows, indices), data)
    return out


def _csr_arrays(z, prefix, path, n_rows):
    """Checked ``(indptr, indices, data, shape)`` of the ``<prefix>_*`` CSR arrays."""
    for part in ("data", "indices", "indptr", "shape"):
        if f"{prefix}_{part}" not in z:
            raise DataError(f"{path}: missing array '{prefix}_{part}'")
    shape = C.shape_2d(z[f"{prefix}_shape"], path, f"{prefix} matrix")
    if shape[0] != n_rows:
        raise DataError(f"{path}: {prefix} matrix has {shape[0]} rows, the graph has "
                        f"{n_rows} nodes")
    indptr = C.check_int_array(z[f"{prefix}_indptr"], path, f"{prefix}_indptr").ravel()
    indices = C.check_int_array(z[f"{prefix}_indices"], path, f"{prefix}_indices").ravel()
    data = C.finite_float32(np.asarray(z[f"{prefix}_data"]).reshape(-1, 1), path,
                            f"{prefix}_data").ravel()
    if indptr.shape[0] != shape[0] + 1 or indices.shape != data.shape \
            or indptr[0] != 0 or indptr[-1] != indices.shape[0] or (np.diff(indptr) < 0).any():
        raise DataError(f"{path}: {prefix}_* arrays have inconsistent lengths")
    if indices.size and (indices.min() < 0 or indices.max() >= shape[1]):
        raise DataError(f"{path}: {prefix}_indices out of range for {shape[1]} columns")
    return indptr, indices, data, shape


def load_gnn_benchmark(path, *, seed: int = 0, name: str | None = None) -> Dataset:
    with np.load(path, allow_pickle=False) as archive:  # names only; entries are read below
        names = canonical_names(archive.files)
    stored = {names[k]: k for k in GNN_BENCHMARK_KEYS if k in names}
    z = {stored[k]: v for k, v in C.npz_arrays(path, list(stored)).items()}
    graph, changes = C.clean_csr(z["adj_indptr"], z["adj_indices"], z["adj_shape"], path)
    n = graph.num_nodes
    if "attr_matrix" in z:
        x = C.finite_float32(z["attr_matrix"], path)
    elif "attr_indptr" in z:
        x = csr_features(*_csr_arrays(z, "attr", path, n), path)  # stays CSR (duplicates summed)
    else:
        raise DataError(f"{path}: no features (expected attr_matrix or attr_data/attr_indices/"
                        "attr_indptr/attr_shape)")
    C.check_features_rows(x, n, path)
    if "labels" in z:
        labels = C.class_labels(z["labels"], path, n)
        names = z.get("class_names")
        if names is not None and labels.size and labels.max() >= names.size:
            raise DataError(f"{path}: label id {labels.max()} is out of range for the "
                            f"{names.size} classes in class_names")
    elif "labels_indptr" in z:
        labels = _sparse_dense(z, "labels", path, n)
        if not np.isin(labels, (0, 1)).all():
            raise DataError(f"{path}: sparse labels must be 0/1")
    else:
        raise DataError(f"{path}: no labels array")
    tr, va, te = C.seeded_split(n, seed)
    ds = Dataset(graph, x, labels, tr, va, te, name=name or Path(path).stem, source=str(path),
                 metric=C.metric_for(labels),
                 meta={"format": "gnn-benchmark", "adj_cleanup": changes,
                       "split": f"seeded 50/25/25 (seed={seed})"})
    return C.finish(ds)


def load_heterophilous(path, *, split: int | None = None, name: str | None = None) -> Dataset:
    z = C.npz_arrays(path, [k for k in HETERO_KEYS if k != "edges"])
    x = C.finite_float32(z["node_features"], path, "node_features")
    n = x.shape[0]
    labels = C.class_labels(z["node_labels"], path, n)
    graph = S.npz_edges_graph(path, "edges", n)  # streamed: the edge array is never whole
    if graph is None:  # float ids, Fortran order...: read whole and checked
        edges = C.check_int_array(C.npz_arrays(path, ["edges"])["edges"], path, "edges")
        if edges.ndim != 2 or edges.shape[1] != 2:
            raise DataError(f"{path}: edges must have shape (E, 2), got {tuple(edges.shape)}")
        graph = C.graph_from_edges(edges[:, 0], edges[:, 1], n, path)
        del edges
    masks = []
    chosen = 0 if split is None else split
    for key in ("train_masks", "val_masks", "test_masks"):
        if key not in z:
            raise DataError(f"{path}: missing array {key!r}")
        m = z[key]
        m = m[None, :] if m.ndim == 1 else m
        if m.ndim == 2 and m.shape[0] == n and m.shape[1] != n:
            m = m.T  # (N, S): one column per split
        if m.ndim != 2 or m.shape[1] != n:
            raise DataError(f"{path}: {key} has shape {tuple(z[key].shape)}, expected (S, {n})")
        if not 0 <= chosen < m.shape[0]:
            raise DataError(f"{path}: split {chosen} out of range, the file has "
                            f"{m.shape[0]} splits (0..{m.shape[0] - 1})")
        masks.append(m[chosen])
        count = m.shape[0]
    tr, va, te = C.mask_split(*masks, path)
    num_classes = int(labels.max()) + 1 if labels.size else 0
    ds = Dataset(graph, x, labels, tr, va, te, name=name or Path(path).stem, source=str(path),
                 metric="roc_auc" if num_classes == 2 else "accuracy",
                 meta={"format": "heterophilous", "split": f"given split {chosen} of {count}",
                       "split_index": chosen})
    if split is None and count > 1:
        ds.meta["split_note"] = f"using split 0 of {count} (--split I picks another)"
    return C.finish(ds)
