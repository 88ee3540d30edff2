"""GraphSAINT folder format (PPI, Flickr, Reddit, Yelp, Amazon as published; Cora in ../shared).

Layout::

    adj_full.npz    scipy.sparse.save_npz CSR (keys indptr, indices, data, shape, format)
    adj_train.npz   same, only train-train edges (the inductive training graph)
    role.json       {"tr": [ids], "va": [ids], "te": [ids]}
    class_map.json  {"<node id>": class id | [0/1, ...]}   (list -> multi-label)
    feats.npy       (N, F) features
    scalegnn.json   optional, written by :func:`save_graphsaint`: {"name", "metric"}

The .npz arrays are read with ``np.load(allow_pickle=False)`` and the CSR is built here (no
scipy.sparse.load_npz). Both adjacencies are cleaned the same way: entries sorted, duplicates
and self-loops dropped, symmetrized if the stored pattern is not symmetric; what changed is
recorded in ``Dataset.meta["adj_full_cleanup"]``. Edge values are ignored (pattern only).
Features are returned unchanged (no standardization); with ``mmap=True`` a float32 feats.npy is
memory-mapped read-only.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from scalegnn.data import _common as C
from scalegnn.data.dataset import Dataset
from scalegnn.errors import DataError
from scalegnn.graph import Graph
from scalegnn.io import atomic_folder, atomic_save_npy, atomic_save_npz, atomic_write_json

FILES = ("adj_full.npz", "adj_train.npz", "role.json", "class_map.json", "feats.npy")


def is_graphsaint_folder(path) -> bool:
    p = Path(path)
    return p.is_dir() and (p / "adj_full.npz").exists()


def load_adj(path, n_expected: int | None = None) -> tuple[Graph, dict]:
    """Graph from a scipy-format CSR .npz (pattern only), cleaned as described above."""
    z = C.npz_arrays(path, ["indptr", "indices", "shape", "format"])
    for k in ("indptr", "indices", "shape"):
        if k not in z:
            raise DataError(f"{path}: missing array {k!r} (expected scipy.sparse.save_npz CSR)")
    fmt = z.get("format")
    if fmt is not None:
        fmt = fmt.item() if fmt.size == 1 else fmt.tolist()
        fmt = fmt.decode(errors="replace") if isinstance(fmt, bytes) else str(fmt)
        if fmt != "csr":
            raise DataError(f"{path}: sparse format {fmt!r} is not supported, expected 'csr'")
    g, changes = C.clean_csr(z["indptr"], z["indices"], z["shape"], path)
    if n_expected is not None and g.num_nodes != n_expected:
        raise DataError(f"{path}: has {g.num_nodes} nodes, adj_full.npz has {n_expected}")
    return g, changes


def _load_json(path):
    path = C.require_file(path)
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise DataError(f"{path}: invalid JSON ({C._short(e)})") from None
    except RecursionError:
        raise DataError(f"{path}: invalid JSON (nested too deeply)") from None


def _labels_from_class_map(path, n: int) -> np.ndarray:
    cmap = _load_json(path)
    if not isinstance(cmap, dict):
        raise DataError(f"{path}: expected a JSON object {{node id: label}}")
    if len(cmap) != n:
        raise DataError(f"{path}: has labels for {len(cmap)} nodes, the graph has {n}")
    ids = C.parse_int_keys(cmap, path)
    if ids.size and (ids.min() < 0 or ids.max() >= n):
        bad = ids.min() if ids.min() < 0 else ids.max()
        raise DataError(f"{path}: node id {bad} is out of range for {n} nodes")
    values = list(cmap.values())
    if values and isinstance(values[0], list):
        rows = _multilabel_rows(values, path)
    elif any(isinstance(v, list) for v in values):
        raise DataError(f"{path}: labels must all be integers or all be lists of 0/1")
    else:
        rows = C.int_values(values, path, "labels") if values else np.zeros(0, np.int64)
        if rows.ndim != 1:
            raise DataError(f"{path}: labels must all be integers or all be lists of 0/1")
        if rows.size and rows.min() < 0:
            raise DataError(f"{path}: label id {rows.min()} is negative")
    labels = np.zeros_like(rows)
    labels[ids] = rows
    return labels


def _multilabel_rows(values, path) -> np.ndarray:
    """(n, C) float32 0/1 rows from equal-length JSON lists (still in the file's key order)."""
    if len({len(v) if isinstance(v, list) else -1 for v in values}) != 1:
        raise DataError(f"{path}: multi-label lists must all have the same length")
    if not values[0]:
        raise DataError(f"{path}: multi-label lists are empty")
    try:
        vals = np.array(values, dtype=np.float64)
    except (ValueError, TypeError):
        raise DataError(f"{path}: multi-label lists must contain only 0 and 1") from None
    if vals.ndim != 2 or not np.isin(vals, (0, 1)).all():
        raise DataError(f"{path}: multi-label lists must contain only 0 and 1")
    return vals.astype(np.float32)


def _roles(path, n: int):
    role = _load_json(path)
    out = []
    for key in ("tr", "va", "te"):
        if not isinstance(role, dict) or key not in role:
            raise DataError(f"{path}: missing key {key!r} (expected 'tr', 'va', 'te')")
        if not isinstance(role[key], list):
            raise DataError(f"{path}: {key!r} must be a list of integer node ids")
        idx = C.int_values(role[key], path, f"{key!r} node ids").ravel() if role[key] \
            else np.zeros(0, np.int64)
        if idx.size and (idx.min() < 0 or idx.max() >= n):
            bad = idx.min() if idx.min() < 0 else idx.max()
            raise DataError(f"{path}: node id {bad} in {key!r} is out of range for {n} nodes")
        out.append(idx)
    return out


def load_features(path, n: int, mmap: bool = False) -> np.ndarray:
    """(n, F) float32 features from .npy; memory-mapped read-only when ``mmap`` and float32."""
    x = C.load_npy(path, "features", mmap=mmap)
    if x.ndim != 2:
        raise DataError(f"{path}: features must be 2-D, got shape {tuple(x.shape)}")
    C.check_features_rows(x, n, path)
    if x.dtype != np.float32:
        if x.dtype.kind not in "fiub":
            raise DataError(f"{path}: features must be numeric, got dtype {x.dtype}")
        x = np.asarray(x, dtype=np.float32)
    if not _finite_chunks(x):
        raise DataError(f"{path}: features contain NaN or inf")
    return x


def _finite_chunks(x, chunk: int = 1 << 16) -> bool:
    return all(np.isfinite(x[s:s + chunk]).all() for s in range(0, x.shape[0], chunk))


def load_graphsaint(folder, *, mmap: bool = False, name: str | None = None) -> Dataset:
    """Load a GraphSAINT folder into a validated Dataset (``train_graph`` = adj_train)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise DataError(f"{folder}: missing GraphSAINT folder")
    for f in FILES:
        C.require_file(folder / f, "GraphSAINT file")
    graph, changes = load_adj(folder / "adj_full.npz")
    n = graph.num_nodes
    train_graph, _ = load_adj(folder / "adj_train.npz", n)
    features = load_features(folder / "feats.npy", n, mmap)
    labels = _labels_from_class_map(folder / "class_map.json", n)
    tr, va, te = _roles(folder / "role.json", n)
    extra = {}
    if (folder / "scalegnn.json").exists():
        extra = _load_json(folder / "scalegnn.json")
        if not isinstance(extra, dict) or not all(isinstance(extra.get(k, ""), str)
                                                  for k in ("name", "metric")):
            raise DataError(f"{folder / 'scalegnn.json'}: expected {{\"name\": str, "
                            f"\"metric\": str}}")
    ds = Dataset(graph, features, labels, tr, va, te,
                 name=name or extra.get("name") or folder.name, source=str(folder),
                 metric=extra.get("metric") or C.metric_for(labels),
                 meta={"format": "graphsaint", "adj_full_cleanup": changes})
    ds.train_graph = train_graph
    return C.finish(ds)


def save_graphsaint(ds: Dataset, folder, *, overwrite: bool = False) -> Path:
    """Write ``ds`` as a GraphSAINT folder, atomically (the folder appears complete or not at all).

    adj_*.npz are uncompressed scipy-compatible CSR files (float32 ones as values), loadable by
    both :func:`load_graphsaint` and ``scipy.sparse.load_npz``.
    """
    folder = Path(folder)
    if folder.exists() and not overwrite:
        raise DataError(f"{folder}: already exists (pass overwrite to replace it)")
    try:
        with atomic_folder(folder, overwrite=True) as tmp:
            _write_files(ds, tmp)
    except OSError as e:  # read-only or full disk, --out inside a file...
        raise DataError(f"{folder}: cannot write the dataset ({e.strerror or e})") from None
    return folder


def _write_files(ds: Dataset, tmp: Path) -> None:
    n = ds.num_nodes
    for fname, g in (("adj_full.npz", ds.graph), ("adj_train.npz", ds.train_graph)):
        atomic_save_npz(tmp / fname, indices=g.indices, indptr=g.indptr,
                        format=np.array(b"csr"), shape=np.array([n, n], dtype=np.int64),
                        data=np.ones(g.num_edges, dtype=np.float32))
    atomic_write_json(tmp / "role.json", {"tr": ds.train_idx.tolist(), "va": ds.val_idx.tolist(),
                                          "te": ds.test_idx.tolist()}, sort_keys=False)
    labels = ds.labels.astype(np.int64).tolist()
    atomic_write_json(tmp / "class_map.json", {str(i): v for i, v in enumerate(labels)},
                      sort_keys=False)
    atomic_save_npy(tmp / "feats.npy", np.asarray(ds.features, dtype=np.float32))
    atomic_write_json(tmp / "scalegnn.json", {"name": ds.name, "metric": ds.metric})
