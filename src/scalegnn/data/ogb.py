"""OGB node-property folder (ogbn-arxiv, ogbn-products, ...) as the ``ogb`` package lays it out.

Read without importing ``ogb``::

    <root>/raw/edge.csv.gz            E lines "src,dst" (no header)
    <root>/raw/node-feat.csv.gz       N lines of F floats        (optional -> structural)
    <root>/raw/node-label.csv.gz      N lines: one class id, or L 0/1 values (multi-label);
                                      "nan" = unlabelled (allowed only outside the splits)
    <root>/raw/num-node-list.csv.gz   optional: one line with N
    <root>/split/<name>/{train,valid,test}.csv.gz   one node id per line

``root`` may also be the folder that contains a single dataset folder (e.g. ``dataset/`` with
``ogbn_arxiv/`` inside). Edges are treated as undirected (symmetrized, deduplicated, self-loops
dropped), as is standard practice for ogbn-arxiv/products. With several split folders the
first in sorted order is used unless ``split_name`` is given. Unlabelled nodes get class 0
(they carry no loss since they are in no split); their count is in ``meta["unlabelled"]``.

Every file is streamed (:mod:`scalegnn.data._stream`: inflated in a second thread, parsed by
numba kernels, floats exact to ``np.float32(float(token))``): peak memory is about twice the
final CSR + features, and a gzip'd CSV loads at tens of MB/s.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from scalegnn.data import _common as C
from scalegnn.data import _stream as S
from scalegnn.data._byte_stream import first_line
from scalegnn.data.dataset import Dataset
from scalegnn.data.structural import structural_features
from scalegnn.errors import DataError


def find_ogb_root(path) -> Path | None:
    """The folder holding raw/edge.csv.gz: ``path`` itself or its only child that has one."""
    p = Path(path)
    if (p / "raw" / "edge.csv.gz").is_file():
        return p
    if p.is_dir():
        hits = [c for c in sorted(p.iterdir()) if (c / "raw" / "edge.csv.gz").is_file()]
        if len(hits) == 1:
            return hits[0]
    return None


def _read(path, dtype, what: str, rows: int | None = None) -> np.ndarray:
    """(rows, cols) table of numbers, streamed and parsed exactly (see data._stream)."""
    return S.read_table(C.require_file(path, what), what, dtype, rows=rows)


def _read_split(path, n: int) -> np.ndarray:
    idx = _read(path, np.float64, "split file").ravel()
    idx = C.check_int_array(idx, path, "split node ids").astype(np.int64)
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        bad = idx.min() if idx.min() < 0 else idx.max()
        raise DataError(f"{path}: node id {bad} is out of range for {n} nodes")
    return idx


def load_ogb(path, *, split_name: str | None = None, seed: int = 0,
             name: str | None = None) -> Dataset:
    root = find_ogb_root(path)
    if root is None:
        raise DataError(f"{path}: missing raw/edge.csv.gz (not an OGB dataset folder)")
    raw = root / "raw"
    edge_path = C.require_file(raw / "edge.csv.gz", "edge list")
    first = first_line(edge_path, "edge list")
    if first and len(first.split(",")) != 2:
        raise DataError(f"{edge_path}: expected 2 columns, got {len(first.split(','))}")
    keys, stats = S.read_edges(edge_path, "edge list", extra_ok=False)
    label_path = raw / "node-label.csv.gz"
    y = _read(label_path, np.float64, "node labels")
    n = y.shape[0]
    if (raw / "num-node-list.csv.gz").is_file():
        counts = C.check_int_array(_read(raw / "num-node-list.csv.gz", np.float64,
                                         "node count").ravel(), raw / "num-node-list.csv.gz",
                                   "node count")
        n_file = int(counts[0]) if counts.size else None
        if n_file != n:
            raise DataError(f"{label_path}: has {n} rows, num-node-list.csv.gz says {n_file}")
    graph = S.edge_list_graph(keys, stats, n, edge_path)
    del keys
    feat_path = raw / "node-feat.csv.gz"
    if feat_path.is_file():
        x = C.finite_float32(_read(feat_path, np.float32, "node features", n), feat_path)
        C.check_features_rows(x, n, feat_path)
    else:
        x = structural_features(graph, seed=seed)
    splits_dir = root / "split"
    names = sorted(p.name for p in splits_dir.iterdir() if p.is_dir()) \
        if splits_dir.is_dir() else []
    if not names:
        raise DataError(f"{splits_dir}: missing split folder (expected split/<name>/train.csv.gz)")
    chosen = split_name or names[0]
    if chosen not in names:
        raise DataError(f"{splits_dir}: no split {chosen!r}; available: {', '.join(names)}")
    tr, va, te = (_read_split(splits_dir / chosen / f"{s}.csv.gz", n)
                  for s in ("train", "valid", "test"))
    unlabelled = np.isnan(y).any(axis=1)
    used = np.concatenate([tr, va, te])
    if unlabelled[used].any():
        raise DataError(f"{label_path}: node {used[unlabelled[used]][0]} is in a split but "
                        "has no label (nan)")
    y = np.where(np.isnan(y), 0, y)
    if y.shape[1] == 1:
        labels = C.class_labels(y[:, 0], label_path, n)
    else:
        if not np.isin(y, (0, 1)).all():
            raise DataError(f"{label_path}: multi-label rows must contain only 0 and 1")
        labels = y.astype(np.float32)
    ds = Dataset(graph, x, labels, tr, va, te, name=name or root.name, source=str(root),
                 metric=C.metric_for(labels),
                 meta={"format": "ogb", "split": chosen, "unlabelled": int(unlabelled.sum())})
    return C.finish(ds)
