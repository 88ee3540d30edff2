"""MATLAB .mat datasets as published: DeepWalk (BlogCatalog, Flickr, PPI, YouTube), Facebook100,
attributed networks, HARP.

Variables are matched case-insensitively; the options ``adjacency``, ``features``, ``labels``
(``--adjacency`` / ``--features`` / ``--labels``) name them when the defaults do not:

=============  =======================================================  =======================
role           default names, first present wins                         examples
=============  =======================================================  =======================
adjacency      network, a, adj, adjacency, graph, net, w                 DeepWalk ``network``,
                                                                         Facebook100 ``A``,
                                                                         attributed ``Network``
features       features, attributes, attr, feats, x, f                   ``Attributes``, HARP ``F``
labels         group, label, labels, y, gnd, class                        ``group``, ``Label``
=============  =======================================================  =======================

A variable the user names plays that role only: the defaults of the other roles skip it
(``--labels F`` on a HARP file makes ``F`` the labels, and the graph, having no other feature
variable, gets structural features). Naming one variable for two roles is refused.

Labels: a vector (N, 1 x N or N x 1) is a single-label task (metric accuracy); its values
(MATLAB's 1-based class ids, any integers) map to classes 0..C-1 in sorted order, recorded in
``meta["class_values"]``. An (N x L) 0/1 matrix is a multi-label task (f1_micro). An (N x L)
matrix of non-negative rows summing to 1 (a per-node label distribution, HARP ``F``) is a
single-label task: each node's class is its most likely label (the first on ties). For any
other matrix (Facebook100's ``local_info``: status, gender, major, ... per column) the
option ``label_column`` (``--label-column``, 0-based), or ``--labels VAR:K``, picks the column
that becomes the class vector; without a label variable, the error names the candidates with
both. Without a feature variable, structural features are used (:mod:`scalegnn.data.options`).
A sparse feature variable stays sparse (CSR, :class:`~scalegnn.features.SparseFeatures`). The
adjacency is symmetrized, deduplicated and stripped of self-loops; the split is seeded
50/25/25. Read with scipy.io.loadmat (MATLAB v5/v7 files; v7.3 HDF5 files are refused with a
clear message); loadmat never unpickles.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import scipy.sparse as sp

from scalegnn.data import _common as C
from scalegnn.data import options as O
from scalegnn.data.dataset import Dataset
from scalegnn.data.options import check_class_column, featureless_features, flag
from scalegnn.errors import DataError
from scalegnn.features import csr_features

ADJACENCY_NAMES = ("network", "a", "adj", "adjacency", "graph", "net", "w")
FEATURE_NAMES = ("features", "attributes", "attr", "feats", "x", "f")
LABEL_NAMES = ("group", "label", "labels", "y", "gnd", "class")


def _find(variables: dict, wanted, defaults, key: str, path, taken=()):
    """The name of the variable the user named, matched case-insensitively (an exact match
    first), or the first default present that no other role took; None when none is."""
    lower = {}
    for name in variables:
        lower.setdefault(name.lower(), name)
    if wanted is not None:
        if wanted in variables:
            return wanted
        if wanted.lower() in lower:
            return lower[wanted.lower()]
        raise DataError(f"{path}: no variable {wanted!r:.60} for {flag(key)}; variables: "
                        f"{O.listing(variables)}")
    return next((lower[n] for n in defaults if n in lower and lower[n] not in taken), None)


def _label_choice(options, variables, path) -> tuple[str | None, str | None]:
    """(label variable named, label column) from ``--labels VAR`` or ``--labels VAR:K`` and
    ``--label-column K``."""
    wanted, column = options.get("labels"), options.get("label_column")
    if wanted is None or ":" not in wanted or wanted in variables:
        return wanted, column
    var, _, col = wanted.rpartition(":")
    if C.parse_int(col) is None:
        raise DataError(f"{path}: {flag('labels')} {wanted!r:.60}: expected VAR or VAR:K, K the "
                        f"0-based class column")
    if column is not None and C.parse_int(str(column)) != C.parse_int(col):
        raise DataError(f"{path}: {flag('labels')} {wanted!r:.60} and {flag('label_column')} "
                        f"{column!r:.20} name different columns; give one")
    return var, col


def _label_hint(path, variables: dict, adj_name: str, n: int) -> str:
    """How to name the labels of a file without a default label variable: for each variable
    with a row per node, the flags that make it the labels (it is read to tell a class table
    from 0/1 or distribution rows when it holds at most 2^24 values, else both are named)."""
    hints = []
    for name, shape in variables.items():
        rows, cols = (tuple(shape) + (1, 1))[:2]
        if name == adj_name or n not in (rows, cols) or (rows != n and rows != 1):
            continue
        cols = cols if rows == n else 1
        table = None if cols > 1 else False  # None: not read
        if cols > 1 and n * cols <= 1 << 24:
            y = _dense(_variable(path, name), path, name)
            y = y.T if y.shape[0] == 1 and n != 1 else y
            table = y.ndim == 2 and not (_is_01(y) or _is_distribution(y))
            del y
        if table:
            hints.append(f"--labels {name} --label-column K (K = 0..{cols - 1}, the class "
                         f"column; or --labels {name}:K)")
        elif table is None:
            hints.append(f"--labels {name} (one column of it: --labels {name}:K, K = "
                         f"0..{cols - 1})")
        else:
            hints.append(f"--labels {name}")
    if not hints:
        return f"name it with {flag('labels')}"
    more = f" (or {len(hints) - 2} more)" if len(hints) > 2 else ""
    return "name it: " + " or ".join(hints[:2]) + more


def _is_01(y) -> bool:
    return bool(np.isin(y, (0, 1)).all())


def _is_distribution(y) -> bool:
    """Rows of non-negative numbers each summing to 1 (a per-node label distribution)."""
    if y.dtype.kind != "f" or not np.isfinite(y).all() or (y < 0).any():
        return False
    return bool(np.allclose(y.sum(axis=1), 1.0, rtol=0, atol=1e-3))


def _dense(value, path, name: str) -> np.ndarray:
    arr = value.toarray() if sp.issparse(value) else np.asarray(value)
    if arr.dtype.kind not in "fiub":
        raise DataError(f"{path}: '{name}' must be numeric, got {arr.dtype}")
    return arr


def _read_mat(reader, path, **kw):
    """``reader(path, **kw)`` (scipy.io.loadmat/whosmat) with its failures as DataError."""
    try:
        return reader(path, **kw)
    except NotImplementedError:
        raise DataError(f"{path}: MATLAB v7.3 (HDF5) files are not supported; re-save with "
                        "-v7") from None
    except Exception as e:
        raise DataError(f"{path}: not a readable .mat file ({C._short(e)})") from None


def _variable(path, name: str):
    """One variable of a .mat file, read without the others."""
    import scipy.io as sio
    return _read_mat(sio.loadmat, path, variable_names=[name])[name]


def _adjacency(value, path, name: str):
    """The cleaned graph of a matrix. The matrix is one loadmat made for us alone, so its
    arrays are cleaned in place; a CSC matrix (MATLAB's sparse layout) is used as the CSR of
    its transpose, with no conversion copy: the symmetrized pattern is the same."""
    if not sp.issparse(value):
        value = np.asarray(value)
        if value.ndim != 2 or value.dtype.kind not in "fiub":
            raise DataError(f"{path}: '{name}' must be a 2-D numeric matrix")
    shape = value.shape
    adj = value.T if sp.issparse(value) and value.format == "csc" else sp.csr_matrix(value)
    del value
    adj.eliminate_zeros()  # an explicit 0 is not an edge
    indptr, indices = adj.indptr, adj.indices
    del adj  # the values (float64, 8 bytes per entry) are not needed
    return C.clean_csr(indptr, indices, shape, path)


def _labels(value, path, name: str, n: int, column) -> tuple[np.ndarray, dict]:
    """(labels, meta) from a label variable; see the module docstring."""
    y = _dense(value, path, name)
    if y.ndim == 1:
        y = y[:, None]
    if y.ndim != 2:
        raise DataError(f"{path}: '{name}' must be a vector or a matrix, got shape "
                        f"{tuple(y.shape)}")
    if y.shape[0] == 1 and y.shape[1] == n and n != 1:
        y = y.T  # a MATLAB row vector
    if y.shape[0] != n:
        raise DataError(f"{path}: '{name}' has shape {tuple(y.shape)}, expected ({n}, L) for "
                        f"the graph's {n} nodes")
    if column is not None:
        c = C.parse_int(str(column))
        if c is None or not 0 <= c < y.shape[1]:
            raise DataError(f"{path}: {flag('label_column')} {column!r} is not a column of "
                            f"'{name}' (0..{y.shape[1] - 1})")
        y = y[:, c:c + 1]
    if y.shape[1] == 1:
        ids = C.check_int_array(y.ravel(), path, f"classes in '{name}'")
        values, classes = np.unique(ids, return_inverse=True)
        check_class_column(ids, path, f"'{name}'" + ("" if column is None else
                                                     f" column {column}"))
        meta = {"label_variable": name, "class_values": values.tolist()}
        if column is not None:
            meta["label_column"] = int(C.parse_int(str(column)))
        return classes.astype(np.int64), meta
    if _is_01(y):
        return y.astype(np.float32), {"label_variable": name}
    if _is_distribution(y):  # one class per node: its most likely label
        return np.argmax(y, axis=1).astype(np.int64), {
            "label_variable": name, "labels_from": f"argmax of each row of '{name}' (a "
                                                   f"per-node label distribution)"}
    raise DataError(f"{path}: '{name}' is a {y.shape[0]} x {y.shape[1]} matrix holding neither "
                    f"only 0 and 1 (multi-label) nor rows summing to 1 (a label distribution); "
                    f"pick its class column K (0..{y.shape[1] - 1}) with --labels {name}:K or "
                    f"--label-column K")


def _roles(variables: dict, options: dict, path) -> tuple[str, str | None, str | None, object]:
    """(adjacency, labels, features, label column): the variables the user named, then the
    defaults among the others (see the module docstring)."""
    lab_wanted, column = _label_choice(options, variables, path)
    wanted = {"adjacency": options.get("adjacency"), "labels": lab_wanted,
              "features": options.get("features")}
    defaults = {"adjacency": ADJACENCY_NAMES, "labels": LABEL_NAMES, "features": FEATURE_NAMES}
    names = {k: _find(variables, w, defaults[k], k, path) for k, w in wanted.items()
             if w is not None}
    if len(set(names.values())) < len(names):
        raise DataError(f"{path}: one variable cannot play two roles (" + ", ".join(
            f"{k} {v!r:.40}" for k, v in names.items()) + ")")
    for key in ("adjacency", "labels", "features"):
        if key not in names:
            names[key] = _find(variables, None, defaults[key], key, path,
                               taken=set(names.values()))
    if names["adjacency"] is None:
        raise DataError(f"{path}: no adjacency variable (looked for "
                        f"{', '.join(repr(v) for v in ADJACENCY_NAMES)}); name it with {flag('adjacency')} "
                        f"(variables: {O.listing(variables)})")
    return names["adjacency"], names["labels"], names["features"], column


def _features(value, path, name: str, n: int):
    """(features, note) of a feature variable: a sparse matrix stays CSR."""
    if sp.issparse(value):
        m = value.tocsr()
        if m.dtype.kind not in "fiub":
            raise DataError(f"{path}: '{name}' must be numeric, got {m.dtype}")
        x = csr_features(m.indptr, m.indices, m.data, m.shape, f"{path}: '{name}'")
    else:
        x = C.finite_float32(_dense(value, path, name), path, name)
    C.check_features_rows(x, n, path)
    return x, f"from '{name}'" + (" (sparse, kept as CSR)" if sp.issparse(value) else "")


def load_mat(path, *, seed: int = 0, name: str | None = None,
             options: dict | None = None) -> Dataset:
    """Load a .mat file (see the module docstring); ``options``: adjacency, features, labels
    (``VAR`` or ``VAR:K``), label_column, features_source."""
    import scipy.io as sio
    options = options or {}
    path = C.require_file(path, ".mat file")
    # names first, then one variable at a time: the peak holds one variable's loadmat copy,
    # not the whole file's
    variables = {v[0]: v[1] for v in _read_mat(sio.whosmat, path) if not v[0].startswith("__")}
    adj_name, lab_name, feat_name, column = _roles(variables, options, path)
    graph, changes = _adjacency(_variable(path, adj_name), path, adj_name)
    n = graph.num_nodes
    if lab_name is None:
        raise DataError(f"{path}: no labels variable (looked for "
                        f"{', '.join(repr(v) for v in LABEL_NAMES)}); "
                        f"{_label_hint(path, variables, adj_name, n)} (variables: "
                        f"{O.listing(variables)})")
    labels, label_meta = _labels(_variable(path, lab_name), path, lab_name, n, column)
    extra = {}
    if feat_name is not None and "features_source" not in options:
        x, feat_note = _features(_variable(path, feat_name), path, feat_name, n)
    else:
        x, extra = featureless_features(graph, seed, options, path)
        feat_note = extra.pop("features")
    tr, va, te = C.seeded_split(n, seed)
    ds = Dataset(graph, x, labels, tr, va, te, name=name or Path(path).stem, source=str(path),
                 metric=C.metric_for(labels),
                 meta={"format": "mat", "adjacency_variable": adj_name, **label_meta,
                       "adj_cleanup": changes, "features": feat_note,
                       "split": f"seeded 50/25/25 (seed={seed})", **extra})
    return C.finish(ds)
