"""Generic edge-list CSV datasets (e.g. MUSAE Facebook page-page in ../shared/data/facebook).

Files (a folder holding them, or the edge CSV itself with its siblings found by name):

* edges: ``*edges*.csv`` (or ``*edge*.csv``/``*.edges``/``*.tsv``): two integer columns,
  ``,``/tab/``;``/space separated; a first line with a non-integer token is a header
  (``id_1,id_2``, ``source,target``...). Edges are undirected: symmetrized, deduplicated,
  self-loops dropped (facebook_edges.csv has 171,002 rows incl. 179 self-loops -> 170,823).
  Any edge file may be gzip'd (``*.gz``). It is streamed (:mod:`scalegnn.data._stream`): peak
  memory is about twice the final CSR, whatever the file's size.
* features (optional): ``*.npy`` (N x F), or ``*.json`` either ``{"node": [active feature
  ids]}`` or ``[[active ids of node 0], [..node 1], ...]`` -> 0/1 float32 with F = max id + 1.
  Missing -> structural features (see :mod:`scalegnn.data.structural`).
* labels: ``*target*.csv``/``*label*.csv``/``*class*.csv`` with a header, or the file named by
  the ``labels`` option (``--labels``; a CSV with a header, or ``node label`` lines without
  one). The node id column is ``--id-column`` when given, else ``id``/``node``/``node_id``
  (else row order); the label column is ``--label-column`` when given, else the first of
  ``page_type``, ``label``, ``target``, ``class``, ``y`` present, else the only column that is
  not the id column; with several candidates the loader refuses and names the columns.
  String classes map to ids in sorted order of the names (recorded in
  ``meta["class_names"]``). A column with as many classes as labelled nodes (an id, a count)
  is refused: nothing could be learned or tested from it.
* plain edge lists (``.txt``, ``.edges``, ``.ungraph``; SNAP, Network Repository):
  whitespace/comma separated, lines starting with ``#`` or ``%`` are comments, extra columns
  (weights) are ignored. They carry no labels: name a labels file with ``--labels``.

N = number of labelled rows (or max id + 1 with an id column). Split: seeded 50/25/25.
"""

from __future__ import annotations

import csv as _csv
import json
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from scalegnn.data import _common as C
from scalegnn.data import _stream as S
from scalegnn.data._byte_stream import first_line
from scalegnn.data.dataset import Dataset
from scalegnn.data.options import check_class_column, featureless_features, flag
from scalegnn.errors import DataError
from scalegnn.features import SparseFeatures

ID_COLUMNS = ("id", "node", "node_id", "nodeid")
LABEL_COLUMNS = ("page_type", "label", "target", "class", "y")
_EDGE_PATTERNS = ("*edges*.csv", "*edge*.csv", "*.edges", "*edges*.tsv", "*.tsv",
                  "*.ungraph.txt", "*.ungraph", "*edges*.txt", "*.edgelist")
_EDGE_PATTERNS += tuple(p + ".gz" for p in _EDGE_PATTERNS)  # gzip'd, inflated while parsed
COMMENTS = ("#", "%")
_LABEL_PATTERNS = ("*target*.csv", "*label*.csv", "*class*.csv")


def _first(folder: Path, patterns, exclude=()) -> Path | None:
    for pat in patterns:
        hits = sorted(p for p in folder.glob(pat) if p.is_file() and p not in exclude)
        if hits:
            return hits[0]
    return None


def find_csv_files(path) -> dict | None:
    """{'edges', 'features', 'labels'} paths for a folder or an edge CSV; None if no edges."""
    path = Path(path)
    folder = path if path.is_dir() else path.parent
    edges = path if path.is_file() else _first(folder, _EDGE_PATTERNS)
    if edges is None:
        return None
    labels = _first(folder, _LABEL_PATTERNS, exclude=(edges,))
    feats = _first(folder, ("*feat*.npy", "*.npy", "*feat*.json", "*.json"))
    return {"edges": edges, "features": feats, "labels": labels}


def _is_number(tok: str) -> bool:
    try:
        float(tok)
        return True
    except ValueError:
        return False


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
        raise DataError(f"{path}: expected two columns (source, target), line 1 is {first!r}")
    header = not (_is_number(toks[0]) and _is_number(toks[1]))  # '1.5' is data, refused below
    return S.read_edges(path, "edge list", ord(delim) if delim else 0, header,
                        ", node ids must be integers")


def _label_rows(path) -> list[list[str]]:
    """Rows of a labels file: a .csv through the csv module (quoted fields), other files split
    on the first line's delimiter (tab, ``;``, ``,``) or on whitespace, comment lines dropped."""
    with open(path, encoding="utf-8", newline="") as f:
        if path.suffix.lower() == ".csv":
            return list(_csv.reader(f))
        lines = [ln.strip() for ln in f]
    lines = [ln for ln in lines if ln and not ln.startswith(COMMENTS)]
    delim = next((d for d in ("\t", ";", ",") if lines and d in lines[0]), None)
    return [[t.strip() for t in (ln.split(delim) if delim else ln.split())] for ln in lines]


def _pick_column(head, wanted, key, path, fallback) -> int | None:
    """Index of the column the user named (case-insensitive), else ``fallback``."""
    if wanted is None:
        return fallback
    name = str(wanted).strip().lower()
    if name in head:
        return head.index(name)
    raise DataError(f"{path}: no column {wanted!r} for {flag(key)}; columns: {', '.join(head)}")


def _columns(first: list[str], more_rows: bool, id_column, label_column, path):
    """(head, headerless, id column or None, label column) from the first row; see
    :func:`read_labels_csv`."""
    headerless = bool(first) and all(_is_number(t) for t in first)
    if headerless:
        head = [str(i) for i in range(len(first))]
        guess_id = 0 if len(head) == 2 else None
        guess_label = len(head) - 1 if len(head) <= 2 else None
    else:
        if not more_rows:
            raise DataError(f"{path}: no label rows")
        head = [h.strip().lower() for h in first]
        if not head:
            raise DataError(f"{path}: line 1 must be a header (e.g. id,label), found an empty "
                            "line")
        guess_id = next((head.index(c) for c in ID_COLUMNS if c in head), None)
        guess_label = next((head.index(c) for c in LABEL_COLUMNS if c in head), None)
    id_col = _pick_column(head, id_column, "id_column", path, guess_id)
    lab_col = _pick_column(head, label_column, "label_column", path, guess_label)
    if lab_col is None:
        rest = [i for i in range(len(head)) if i != id_col]
        if len(rest) != 1:
            raise DataError(f"{path}: which column holds the classes? columns: "
                            f"{', '.join(head)}; name one with {flag('label_column')}")
        lab_col = rest[0]
    if lab_col == id_col:
        raise DataError(f"{path}: column {head[lab_col]!r} cannot be both the node ids and the "
                        f"labels; name the other with {flag('id_column')} or "
                        f"{flag('label_column')}")
    return head, headerless, id_col, lab_col


def _numeric_labels(path, id_column, label_column):
    """The result of :func:`read_labels_csv` for an all-numeric file whose ids and classes are
    whole non-negative numbers, parsed by the streaming table reader (a million rows in well
    under a second, where the csv module takes seconds); None for anything else, which the
    general path then reads and, if need be, refuses with its precise message."""
    first = first_line(path, "labels CSV")
    if not first or '"' in first:
        return None
    if path.suffix.lower() == ".csv":
        delim = ","
    else:
        delim = next((d for d in ("\t", ";", ",") if d in first), None)
    toks = [t.strip() for t in (first.split(delim) if delim else first.split())]
    head, headerless, id_col, lab_col = _columns(toks, True, id_column, label_column, path)
    try:
        table = S.read_table(path, "labels CSV", np.float64, ord(delim) if delim else 0,
                             header=not headerless)
    except DataError:
        return None
    if table.shape[0] == 0 or table.shape[1] != len(head):
        return None
    cols = [table[:, lab_col]] + ([table[:, id_col]] if id_col is not None else [])
    for c in cols:
        if not (np.isfinite(c).all() and (np.mod(c, 1) == 0).all() and c.min() >= 0
                and c.max() < C.MAX_ID):
            return None
    ids = None if id_col is None else table[:, id_col].astype(np.int64)
    return ids, table[:, lab_col].astype(np.int64), head[lab_col]


def read_labels_csv(path, id_column=None, label_column=None):
    """(node ids or None, labels, label column name): labels are class ids (int64) for an
    all-numeric file, else the raw label strings.

    A first row of numbers only is data, not a header (``node label`` lines); its columns are
    then named ``0``, ``1``... (two columns: node id, label). See the module docstring for how
    the id and label columns are chosen."""
    path = C.require_file(path, "labels CSV")
    fast = _numeric_labels(path, id_column, label_column)
    if fast is not None:
        return fast
    try:
        rows = _label_rows(path)
    except UnicodeDecodeError as e:
        raise DataError(f"{path}: not UTF-8 text (byte {e.start})") from None
    except _csv.Error as e:
        raise DataError(f"{path}: bad CSV ({C._short(e)})") from None
    if not rows:
        raise DataError(f"{path}: no label rows")
    head, headerless, id_col, lab_col = _columns(rows[0], len(rows) > 1, id_column,
                                                 label_column, path)
    body = rows[0 if headerless else 1:]
    first_line = 1 if headerless else 2
    for i, r in enumerate(body):
        if len(r) != len(head):
            raise DataError(f"{path}: line {i + first_line} has {len(r)} fields, "
                            f"{'line 1' if headerless else 'header'} has {len(head)}")
    values = [r[lab_col].strip() for r in body]
    ids = None
    if id_col is not None:
        ids = _whole_numbers([r[id_col] for r in body], path, f"column {head[id_col]!r}",
                             "node ids")
    return ids, values, head[lab_col]


def _whole_numbers(tokens, path, where: str, what: str) -> np.ndarray:
    """int64 ids from text tokens ('3' or '3.0'); DataError naming the first other token."""
    out = np.empty(len(tokens), dtype=np.int64)
    for i, tok in enumerate(tokens):
        v = C.parse_int(tok)
        if v is None or not -C.MAX_ID < v < C.MAX_ID:
            raise DataError(f"{path}: {where} must hold integer {what}, line {i + 2} has "
                            f"{tok.strip()!r}")
        out[i] = v
    return out


def label_ids(values, path) -> tuple[np.ndarray, list | None]:
    """Class ids from a label column: integers ('3', '3.0') as they are, other numbers
    ('2.7', 'nan') refused, anything else as class names in sorted order; an int64 array
    (from the numeric fast path) is already class ids."""
    if isinstance(values, np.ndarray):
        return values, None
    if values and all(_is_number(v) for v in values):
        raw = _whole_numbers(values, path, "the label column", "class ids")
        if raw.min() < 0:
            raise DataError(f"{path}: label id {raw.min()} is negative")
        return raw, None
    return C.strings_to_classes(values)


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


def load_csv(path, *, seed: int = 0, name: str | None = None,
             options: dict | None = None) -> Dataset:
    """Edge list + labels (+ features) as described in the module docstring; ``options``:
    id_column, label_column, labels (a labels file), features_source."""
    options = options or {}
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: missing file or folder")
    files = find_csv_files(path)
    if files is None:
        raise DataError(f"{path}: no edge list CSV found (expected *edges*.csv)")
    if "labels" in options:
        files["labels"] = C.require_file(options["labels"], f"labels file ({flag('labels')})")
    if files["labels"] is None:
        raise DataError(f"{path}: no labels CSV found (expected *target*.csv or *label*.csv "
                        f"beside the edges); name a labels file with {flag('labels')}")
    keys, stats = read_edge_csv(files["edges"])
    ids, values, label_col = read_labels_csv(files["labels"], options.get("id_column"),
                                             options.get("label_column"))
    lab_path = files["labels"]
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
    raw, class_names = label_ids(values, lab_path)
    labels = np.zeros(n, dtype=np.int64)
    labels[order] = raw
    graph = S.edge_list_graph(keys, stats, n, files["edges"])
    del keys
    fpath = files["features"]
    extra = {}
    if fpath is None or "features_source" in options:
        x, extra = featureless_features(graph, seed, options, path)
        note = extra.pop("features")
    elif fpath.suffix == ".npy":
        x, note = C.load_features(fpath, n), str(fpath.name)
    else:
        x, note = read_json_features(fpath, n), str(fpath.name)
    check_class_column(raw, lab_path, f"column {label_col!r}")
    tr, va, te = C.seeded_split(n, seed)
    meta = {"format": "csv", "files": {k: str(v) for k, v in files.items() if v},
            "label_column": label_col, "features": note,
            "split": f"seeded 50/25/25 (seed={seed})", **extra}
    if class_names is not None:
        meta["class_names"] = class_names
    stem = path.name if path.is_dir() else \
        Path(path.stem if path.suffix.lower() == ".gz" else path.name).stem.replace("_edges", "")
    ds = Dataset(graph, x, labels, tr, va, te, name=name or stem, source=str(path),
                 metric="accuracy", meta=meta)
    return C.finish(ds)
