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
memory-mapped read-only. class_map.json and role.json are parsed in blocks straight into arrays
(:mod:`scalegnn.data._json_stream`); a file outside that plain-JSON fast path goes through
``json.load``, which accepts or refuses it.
"""

from __future__ import annotations

import contextlib
import functools
import json
import zipfile
from pathlib import Path

import numpy as np

from scalegnn.data import _common as C
from scalegnn.data._build import restricted_pieces
from scalegnn.data._json_stream import read_class_map, read_roles
from scalegnn.data.dataset import Dataset
from scalegnn.errors import DataError
from scalegnn.features import block_rows
from scalegnn.graph import Graph
from scalegnn.io import atomic_folder, atomic_open, atomic_write_json, write_npy_blocks

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
    labels = read_class_map(path, n)  # streamed; None: the json path below decides
    if labels is not None:
        return labels
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
    fast = read_roles(path, n)  # streamed; None: the json path below decides
    if fast is not None:
        return fast
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


def load_graphsaint(folder, *, mmap: bool = False, name: str | None = None) -> Dataset:
    """Load a GraphSAINT folder into a validated Dataset (``train_graph`` = adj_train)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise DataError(f"{folder}: missing GraphSAINT folder")
    for f in FILES:
        C.require_file(folder / f, "GraphSAINT file")
    graph, changes = load_adj(folder / "adj_full.npz")
    n = graph.num_nodes
    features = C.load_features(folder / "feats.npy", n, mmap)
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
    # adj_train.npz is read when an inductive run first asks for it (a transductive one never
    # does); its errors then name the file as they would have here
    ds._train_graph_loader = functools.partial(_load_train_adj, folder / "adj_train.npz", n)
    return C.finish(ds)


def _load_train_adj(path: Path, n: int) -> Graph:
    return load_adj(path, n)[0]


def save_graphsaint(ds: Dataset, folder, *, overwrite: bool = False) -> Path:
    """Write ``ds`` as a GraphSAINT folder, atomically (the folder appears complete or not at all).

    adj_*.npz are uncompressed scipy-compatible CSR files (float32 ones as values), loadable by
    both :func:`load_graphsaint` and ``scipy.sparse.load_npz``. Every file is streamed: feats.npy
    in row blocks (from an in-memory, memory-mapped or CSR matrix, never a second dense copy),
    the JSON files in slices of ids, so the writer adds only small buffers to ``ds``.
    """
    with writing_folder(folder, overwrite) as tmp:
        write_adj(tmp / "adj_full.npz", ds.graph)
        if ds.has_train_graph:
            write_adj(tmp / "adj_train.npz", ds.train_graph)
        else:  # the same entries, restricted while they are written (never held)
            write_adj(tmp / "adj_train.npz", ds.graph, ds.train_idx)
        write_roles(tmp / "role.json", ds.train_idx, ds.val_idx, ds.test_idx)
        write_class_map(tmp / "class_map.json", ds.labels)
        write_features(tmp / "feats.npy", ds.features)
        write_meta(tmp, ds.name, ds.metric)
    return Path(folder)


@contextlib.contextmanager
def writing_folder(folder, overwrite: bool = False):
    """A temporary sibling folder to fill; it becomes ``folder`` on success (``io.atomic_folder``).
    DataError when ``folder`` exists without ``overwrite`` or cannot be written."""
    folder = Path(folder)
    if folder.exists() and not overwrite:
        raise DataError(f"{folder}: already exists (pass overwrite to replace it)")
    try:
        with atomic_folder(folder, overwrite=True) as tmp:
            yield tmp
    except OSError as e:  # read-only or full disk, --out inside a file...
        raise DataError(f"{folder}: cannot write the dataset ({e.strerror or e})") from None


def write_adj(path, graph, nodes=None) -> None:
    """scipy ``save_npz`` layout of ``graph``'s pattern, or with ``nodes`` of its restriction to
    them (``adj_train``: :func:`scalegnn.data._build.restricted_pieces`), streamed into the
    archive: no (nnz,) array beyond ``graph`` itself is allocated (the all-ones ``data`` and a
    restriction's ``indices`` are written in pieces)."""
    n, step = graph.num_nodes, 1 << 22
    if nodes is None:
        indptr, nnz = graph.indptr, graph.num_edges
        pieces = (graph.indices[s:s + step] for s in range(0, nnz, step))
    else:
        indptr, make = restricted_pieces(graph, nodes, entries=step)
        nnz, pieces = int(indptr[-1]), make()
    ones = np.ones(min(step, nnz), dtype=np.float32)
    write_npz_streamed(path, [
        ("indices", graph.indices.dtype, (nnz,), pieces),
        ("indptr", indptr.dtype, indptr.shape, [indptr]),
        ("format", np.dtype("S3"), (), [np.array(b"csr")]),
        ("shape", np.dtype(np.int64), (2,), [np.array([n, graph.num_cols], dtype=np.int64)]),
        ("data", np.dtype(np.float32), (nnz,),
         (ones[:min(step, nnz - s)] for s in range(0, nnz, step))),
    ])


def write_npz_streamed(path, entries) -> None:
    """An uncompressed .npz (what ``np.savez`` writes) of ``(name, dtype, shape, pieces)``
    entries, each written from consecutive C-order ``pieces`` (an iterable of arrays)."""
    with atomic_open(path, "wb") as out, \
            zipfile.ZipFile(out, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        for name, dtype, shape, pieces in entries:
            with zf.open(f"{name}.npy", "w", force_zip64=True) as f:
                np.lib.format.write_array_header_1_0(f, {
                    "descr": np.lib.format.dtype_to_descr(np.dtype(dtype)),
                    "fortran_order": False, "shape": tuple(shape)})
                count = 0
                for piece in pieces:
                    piece = np.ascontiguousarray(piece, dtype=dtype)
                    f.write(memoryview(piece).cast("B") if piece.ndim else piece.tobytes())
                    count += piece.size
                if count != int(np.prod(shape, dtype=np.int64)):
                    raise ValueError(f"write_npz_streamed: {name}: {count} values written, "
                                     f"shape {tuple(shape)}")


def _write_id_lists(f, arr, fmt, step: int = 1 << 16) -> None:
    for s in range(0, arr.shape[0], step):
        if s:
            f.write(", ")
        f.write(", ".join(map(fmt, arr[s:s + step].tolist())))


def write_roles(path, tr, va, te) -> None:
    """role.json, written in slices (``json.dumps`` of 10^8 ids would need gigabytes)."""
    with atomic_open(path, "w") as f:
        f.write("{")
        for i, (key, idx) in enumerate((("tr", tr), ("va", va), ("te", te))):
            f.write(f'{", " if i else ""}"{key}": [')
            _write_id_lists(f, np.asarray(idx, dtype=np.int64), str)
            f.write("]")
        f.write("}\n")


def write_class_map(path, labels, step: int = 1 << 16) -> None:
    """class_map.json ``{"<id>": class | [0/1, ...]}`` in node order, written in slices."""
    labels = np.asarray(labels)
    with atomic_open(path, "w") as f:
        f.write("{")
        for s in range(0, labels.shape[0], step):
            rows = labels[s:s + step].astype(np.int64).tolist()
            if labels.ndim == 2:
                rows = ["[" + ", ".join(map(str, r)) + "]" for r in rows]
            f.write((", " if s else "") + ", ".join(
                f'"{i}": {v}' for i, v in enumerate(rows, start=s)))
        f.write("}\n")


def write_features(path, x) -> None:
    """(n, F) float32 feats.npy of a feature store's ``X_eff``, written in row blocks of about
    64 MiB (:meth:`~scalegnn.features.FeatureStore.row_blocks`): never a whole dense copy in
    memory, and a memory-mapped source file is read with plain file reads."""
    n, f = x.shape
    write_npy_blocks(path, (n, f), (b for _, b in x.row_blocks(block_rows(f))))


def write_meta(folder, name: str, metric: str) -> None:
    atomic_write_json(Path(folder) / "scalegnn.json", {"name": name, "metric": metric})


def feature_file_bytes(path) -> int | None:
    """Bytes of a GraphSAINT folder's feats.npy from its header (nothing read), else None."""
    if not is_graphsaint_folder(path) or not (Path(path) / "feats.npy").is_file():
        return None
    try:
        x = np.load(Path(path) / "feats.npy", mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError, EOFError):
        return None
    return int(x.nbytes) if isinstance(x, np.ndarray) else None
