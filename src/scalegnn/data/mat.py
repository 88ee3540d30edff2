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

Labels: a vector (N, 1 x N or N x 1) is a single-label task (metric accuracy); its values
(MATLAB's 1-based class ids, any integers) map to classes 0..C-1 in sorted order, recorded in
``meta["class_values"]``. An (N x L) 0/1 matrix is a multi-label task (f1_micro). For any
other matrix (Facebook100's ``local_info``: status, gender, major, ... per column) the option
``label_column`` (``--label-column``, 0-based) picks the column that becomes the class vector.
Without a feature variable, structural features are used (:mod:`scalegnn.data.options`). The
adjacency is symmetrized, deduplicated and stripped of self-loops; the split is seeded
50/25/25. Read with scipy.io.loadmat (MATLAB v5/v7 files; v7.3 HDF5 files are refused with a
clear message); loadmat never unpickles.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import scipy.sparse as sp

from scalegnn.data import _common as C
from scalegnn.data.dataset import Dataset
from scalegnn.data.options import check_class_column, featureless_features, flag
from scalegnn.errors import DataError

ADJACENCY_NAMES = ("network", "a", "adj", "adjacency", "graph", "net", "w")
FEATURE_NAMES = ("features", "attributes", "attr", "feats", "x", "f")
LABEL_NAMES = ("group", "label", "labels", "y", "gnd", "class")


def _find(variables: dict, wanted, defaults, key: str, path, required: bool = True):
    """The name of the variable the user named (or the first default present), matched
    case-insensitively (an exact match first); None when optional and absent."""
    lower = {}
    for name in variables:
        lower.setdefault(name.lower(), name)
    listing = ", ".join(variables) or "none"
    if wanted is not None:
        if wanted in variables:
            return wanted
        if wanted.lower() in lower:
            return lower[wanted.lower()]
        raise DataError(f"{path}: no variable {wanted!r} for {flag(key)}; variables: {listing}")
    hit = next((lower[n] for n in defaults if n in lower), None)
    if hit is None and required:
        raise DataError(f"{path}: no {key} variable (looked for "
                        f"{', '.join(repr(n) for n in defaults)}); name it with {flag(key)} "
                        f"(variables: {listing})")
    return hit


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
    if not np.isin(y, (0, 1)).all():
        raise DataError(f"{path}: '{name}' is an {y.shape[0]} x {y.shape[1]} matrix with values "
                        f"other than 0 and 1, and a multi-label matrix must contain only 0 and "
                        f"1; pick the column holding the classes with {flag('label_column')} "
                        f"(0..{y.shape[1] - 1})")
    return y.astype(np.float32), {"label_variable": name}


def load_mat(path, *, seed: int = 0, name: str | None = None,
             options: dict | None = None) -> Dataset:
    """Load a .mat file (see the module docstring); ``options``: adjacency, features, labels,
    label_column, features_source."""
    import scipy.io as sio
    options = options or {}
    path = C.require_file(path, ".mat file")
    # names first, then one variable at a time: the peak holds one variable's loadmat copy,
    # not the whole file's
    variables = {v[0]: None for v in _read_mat(sio.whosmat, path) if not v[0].startswith("__")}
    adj_name = _find(variables, options.get("adjacency"), ADJACENCY_NAMES, "adjacency", path)
    lab_name = _find(variables, options.get("labels"), LABEL_NAMES, "labels", path)
    feat_name = _find(variables, options.get("features"), FEATURE_NAMES, "features", path,
                      required=False)
    if len({adj_name, lab_name, feat_name} - {None}) < 2 + (feat_name is not None):
        raise DataError(f"{path}: one variable cannot play two roles (adjacency "
                        f"{adj_name!r}, labels {lab_name!r}, features {feat_name!r})")
    graph, changes = _adjacency(_variable(path, adj_name), path, adj_name)
    n = graph.num_nodes
    labels, label_meta = _labels(_variable(path, lab_name), path, lab_name, n,
                                 options.get("label_column"))
    extra = {}
    if feat_name is not None and "features_source" not in options:
        x = C.finite_float32(_dense(_variable(path, feat_name), path, feat_name), path,
                             feat_name)
        C.check_features_rows(x, n, path)
        feat_note = f"from '{feat_name}'"
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
