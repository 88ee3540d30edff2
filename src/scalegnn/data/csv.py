"""Edge-list datasets: a plain edge list file (SNAP, Network Repository) or a folder of CSV
files (MUSAE Facebook page-page in ../shared/data/facebook, Twitch, GitHub, Deezer).

What is read:

* **given a file** (the edge list): that file, plus the files named by the options, nothing
  else: the labels file of ``labels`` (``--labels``, required: an edge list carries no labels)
  and the features file of ``features`` (``--features``; without it structural features, said
  aloud). Other files beside it are never opened.
* **given a folder**: its one edge list (``*edges*.csv``, ``*edge*.csv``, ``*.edges``,
  ``*.tsv``, ``*.ungraph[.txt]``, ``*edges*.txt``, ``*.edgelist``, each also ``.gz``), its one
  labels file (``*target*.csv``, ``*label*.csv``, ``*class*.csv``, ``*.cmty[.txt]``) unless
  ``--labels`` names one, and its one features file (``*.npy``, ``*.json``) unless
  ``--features`` names one (none: structural features). Where several files match a role, the
  loader stops with one line listing them and naming the flag that picks one.

* edges: two integer columns, ``,``/tab/``;``/space separated; a first line with a
  non-integer token is a header (``id_1,id_2``, ``source,target``...); lines starting with
  ``#`` or ``%`` are comments, extra columns (weights) ignored. Edges are undirected:
  symmetrized, deduplicated, self-loops dropped (facebook_edges.csv has 171,002 rows incl. 179
  self-loops -> 170,823). It is streamed (:mod:`scalegnn.data._stream`): peak memory is about
  twice the final CSR, whatever the file's size.
* features: ``.npy`` (N x F), or ``.json`` either ``{"node": [active feature ids]}`` or
  ``[[active ids of node 0], [..node 1], ...]`` -> 0/1 float32 CSR with F = max id + 1.
* labels: a class table or a SNAP community file, see :mod:`scalegnn.data.labels`. A class
  column with as many classes as labelled nodes (an id, a count) is refused: nothing could be
  learned or tested from it.

N = number of labelled rows, or max id + 1 with an id column; for a community file, the
largest node id in the edges or the communities + 1. Split: seeded 50/25/25 (of the nodes in
some community, for a community file).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from scalegnn.data import _common as C
from scalegnn.data import _stream as S
from scalegnn.data import labels as L
from scalegnn.data import options as O
from scalegnn.data._byte_stream import first_line
from scalegnn.data.dataset import Dataset
from scalegnn.data.options import check_class_column, featureless_features, flag
from scalegnn.errors import DataError
from scalegnn.features import SparseFeatures

_EDGE_PATTERNS = ("*edges*.csv", "*edge*.csv", "*.edges", "*edges*.tsv", "*.tsv",
                  "*.ungraph.txt", "*.ungraph", "*edges*.txt", "*.edgelist")
_EDGE_PATTERNS += tuple(p + ".gz" for p in _EDGE_PATTERNS)  # gzip'd, inflated while parsed
_LABEL_PATTERNS = ("*target*.csv", "*label*.csv", "*class*.csv", "*.cmty", "*.cmty.txt")
_FEATURE_PATTERNS = ("*.npy", "*.json")


def _matches(folder: Path, patterns, exclude=()) -> list[Path]:
    """The files of ``folder`` matching any of ``patterns``, in pattern then name order."""
    hits = []
    for pat in patterns:
        for p in sorted(folder.glob(pat)):
            if p.is_file() and p not in exclude and p not in hits:
                hits.append(p)
    return hits


def edge_files(folder) -> list[Path]:
    """The edge-list candidates of a folder (a labels file that also matches is left out when
    another candidate remains: ``edge_labels.csv`` beside ``edges.csv``)."""
    hits = _matches(Path(folder), _EDGE_PATTERNS)
    labels = set(_matches(Path(folder), _LABEL_PATTERNS))
    return [p for p in hits if p not in labels] or hits


def _one(hits: list[Path], folder: Path, what: str, how: str) -> Path | None:
    if len(hits) > 1:
        raise DataError(f"{folder}: {len(hits)} {what} files could be meant: "
                        f"{O.listing(h.name for h in hits)}; {how}")
    return hits[0] if hits else None


def find_csv_files(path, options: dict | None = None) -> dict | None:
    """{'edges', 'features', 'labels'} paths (None: absent) for a folder or an edge list file,
    as the module docstring says; None when a folder holds no edge list."""
    options = options or {}
    path = Path(path)
    named = {k: C.require_file(options[k], f"{k} file ({flag(k)})")
             for k in ("labels", "features") if k in options}
    if path.is_file():
        return {"edges": path, "labels": named.get("labels"), "features": named.get("features")}
    edges = _one(edge_files(path), path, "edge list",
                 "give the one to load as the path (with --labels FILE)")
    if edges is None:
        return None
    labels = named.get("labels") or _one(
        _matches(path, _LABEL_PATTERNS, exclude=(edges,)), path, "labels",
        f"name one with {flag('labels')}")
    feats = named.get("features") or _one(
        _matches(path, _FEATURE_PATTERNS), path, "features",
        f"name one with {flag('features')} (or --features-source)")
    return {"edges": edges, "features": feats, "labels": labels}


def read_edge_csv(path) -> tuple[np.ndarray, np.ndarray]:
    """(sorted distinct canonical keys, stats) of a two-column edge list with optional header
    (see :func:`scalegnn.data._stream.read_edges`), streamed: plain or ``.gz``, never held as
    text or as int64 columns."""
    path = C.require_file(path, "edge list")
    first = first_line(path, "edge list")  # after leading comments (SNAP '# Nodes: ...')
    if not first:
        return np.zeros(0, np.uint64), np.array([0, -1, 0, 0], np.int64)
    delim = next((d for d in (",", "\t", ";") if d in first), None)
    toks = [t.strip().strip('"') for t in (first.split(delim) if delim else first.split())]
    if len(toks) < 2:
        raise DataError(f"{path}: expected two columns (source, target), line 1 is {first!r:.80}")
    header = not (L.is_number(toks[0]) and L.is_number(toks[1]))  # '1.5' is data, refused below
    return S.read_edges(path, "edge list", ord(delim) if delim else 0, header,
                        ", node ids must be integers")


def read_json_features(path, n: int) -> SparseFeatures:
    """0/1 float32 (n, F) CSR from {node: [active ids]} or [[active ids], ...] (never dense:
    facebook's 22,470 x 4,714 would be 404 MiB dense, 1.5 MiB as CSR)."""
    path = C.require_file(path, "features JSON")
    try:
        with open(path, encoding="utf-8") as f:
            obj = json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise DataError(f"{path}: invalid JSON ({C._short(e)})") from None
    except RecursionError:
        raise DataError(f"{path}: invalid JSON (nested too deeply)") from None
    if isinstance(obj, dict):
        keys = C.parse_int_keys(obj, path)
        items = list(zip(keys.tolist(), obj.values()))
    elif isinstance(obj, list):
        items = list(enumerate(obj))
    else:
        raise DataError(f"{path}: expected {{node: [feature ids]}} or a list of lists")
    if not items:
        raise DataError(f"{path}: no features")
    nodes = np.array([k for k, _ in items], dtype=np.int64)
    if nodes.min() < 0 or nodes.max() >= n:
        bad = nodes.min() if nodes.min() < 0 else nodes.max()
        raise DataError(f"{path}: node id {bad} is out of range for {n} nodes")
    if not all(isinstance(v, list) for _, v in items):
        raise DataError(f"{path}: each node must map to a list of integer feature ids")
    lens = np.array([len(v) for _, v in items], dtype=np.int64)
    flat = [c for _, v in items for c in v]
    cols = C.int_values(flat, path, "feature ids") if flat else np.zeros(0, np.int64)
    if cols.ndim != 1:
        raise DataError(f"{path}: each node must map to a flat list of integer feature ids")
    if cols.size and cols.min() < 0:
        raise DataError(f"{path}: negative feature id {cols.min()}")
    width = int(cols.max()) + 1 if cols.size else 1
    if width > 2**31 - 1:  # the first layer's weight has a row per feature id
        raise DataError(f"{path}: feature id {width - 1} is absurd (more than 2^31 columns)")
    x = sp.csr_matrix((np.ones(cols.size, np.float32), (np.repeat(nodes, lens), cols)),
                      shape=(n, width))
    x.sum_duplicates()
    x.data[:] = 1.0  # an id listed twice is still one active feature
    return SparseFeatures(x)


def _read_features(fpath: Path, n: int):
    """(features, note) of a features file: ``.npy`` (N x F) or ``.json`` id lists."""
    if fpath.suffix.lower() == ".npy":
        return C.load_features(fpath, n), str(fpath.name)
    if fpath.suffix.lower() == ".json":
        return read_json_features(fpath, n), str(fpath.name)
    raise DataError(f"{fpath}: a features file is .npy (N x F) or .json (active feature ids "
                    f"per node), got {fpath.suffix or 'no suffix'!r:.20}")


def _no_labels(path: Path) -> DataError:
    """The error for an edge list given without a labels file (naming the likely files)."""
    if path.is_file():
        near = _matches(path.parent, _LABEL_PATTERNS, exclude=(path,))
        hint = f" (beside it: {O.listing(p.name for p in near)})" if near else ""
        return DataError(f"{path}: an edge list carries no labels and no other file is read "
                         f"unless named; name the labels file with {flag('labels')}{hint}")
    return DataError(f"{path}: no labels CSV found (expected *target*.csv, *label*.csv, "
                     f"*class*.csv or *.cmty.txt beside the edges); name a labels file with "
                     f"{flag('labels')}")


def _class_labels(lab_path, ids, values, options) -> tuple[np.ndarray, int, dict]:
    """(labels, N, meta) of a class table read by :func:`scalegnn.data.labels.read_labels_csv`."""
    if ids is None:
        n = len(values)
        order = np.arange(n)
    else:
        hint = "" if "id_column" in options else \
            f" (is another column the node id? name it with {flag('id_column')})"
        if ids.min() < 0:
            raise DataError(f"{lab_path}: negative node id {ids.min()}{hint}")
        n = int(ids.max()) + 1
        if ids.size != n or np.bincount(ids).max() > 1:  # np.unique hashes: ~100x slower
            raise DataError(f"{lab_path}: node ids must be 0..N-1, each exactly once{hint}")
        order = ids
    raw, class_names = L.label_ids(values, lab_path)
    labels = np.zeros(n, dtype=np.int64)
    labels[order] = raw
    meta = {} if class_names is None else {"class_names": class_names}
    return labels, n, meta


def _community_file(lab_path, options) -> tuple[np.ndarray, np.ndarray]:
    for key in ("id_column", "label_column"):
        if key in options:
            raise DataError(f"{lab_path}: a community file (one community per line) has no "
                            f"columns; drop {flag(key)}")
    return L.read_communities(lab_path)


def load_csv(path, *, seed: int = 0, name: str | None = None,
             options: dict | None = None) -> Dataset:
    """Edge list + labels (+ features) as described in the module docstring; ``options``:
    id_column, label_column, labels (a labels file), features (a features file),
    features_source."""
    options = options or {}
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: missing file or folder")
    files = find_csv_files(path, options)
    if files is None:
        raise DataError(f"{path}: no edge list CSV found (expected *edges*.csv)")
    lab_path = files["labels"]
    if lab_path is None:
        raise _no_labels(path)
    keys, stats = read_edge_csv(files["edges"])
    communities = None
    if L.is_community_name(lab_path):
        communities = _community_file(lab_path, options)
    else:
        try:
            ids, values, label_col = L.read_labels_csv(lab_path, options.get("id_column"),
                                                       options.get("label_column"))
        except L.RaggedRows:  # rows of different lengths: one community per line
            communities = _community_file(lab_path, options)
    if communities is not None:
        members, sizes = communities
        n = max(int(stats[1]) + 1 if stats[2] else 0, int(members.max()) + 1)
        labels = L.community_matrix(members, sizes, n, lab_path)
        nodes = np.flatnonzero(labels.any(axis=1))
        label_meta = {"communities": f"{sizes.size:,} ({lab_path.name}), multi-label"}
    else:
        labels, n, label_meta = _class_labels(lab_path, ids, values, options)
        label_meta["label_column"] = label_col
        nodes = None
    graph = S.edge_list_graph(keys, stats, n, files["edges"])
    del keys
    fpath = files["features"]
    extra = {}
    if fpath is None or "features_source" in options:
        x, extra = featureless_features(graph, seed, options, path)
        note = extra.pop("features")
    else:
        x, note = _read_features(fpath, n)
    if communities is None:
        check_class_column(labels, lab_path, f"column {label_col!r:.60}")
    tr, va, te = C.seeded_split(n, seed, nodes=nodes)
    meta = {"format": "csv", "files": {k: str(v) for k, v in files.items() if v},
            **label_meta, "features": note, "split": f"seeded 50/25/25 (seed={seed})",
            **extra}
    stem = path.name if path.is_dir() else \
        Path(path.stem if path.suffix.lower() == ".gz" else path.name).stem.replace("_edges", "")
    ds = Dataset(graph, x, labels, tr, va, te, name=name or stem, source=str(path),
                 metric=C.metric_for(labels), meta=meta)
    return C.finish(ds)
