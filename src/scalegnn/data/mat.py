"""MATLAB .mat datasets (BlogCatalog, Flickr-social, PPI-DeepWalk, YouTube as in DeepWalk).

Keys: ``network`` — (N x N) sparse adjacency; ``group`` — (N x L) sparse or dense 0/1
node-label matrix (multi-label, metric f1_micro). Optional ``features``/``attr`` (N x F).
Without features, :func:`scalegnn.data.structural.structural_features` supplies 33
deterministic structural columns. The adjacency is symmetrized, deduplicated and stripped of
self-loops; the split is seeded 50/25/25. Read with scipy.io.loadmat (MATLAB v5/v7 files;
v7.3 HDF5 files are refused with a clear message). loadmat never unpickles.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import scipy.sparse as sp

from scalegnn.data import _common as C
from scalegnn.data.dataset import Dataset
from scalegnn.data.structural import structural_features
from scalegnn.errors import DataError


def load_mat(path, *, seed: int = 0, name: str | None = None) -> Dataset:
    import scipy.io as sio
    path = C.require_file(path, ".mat file")
    try:
        m = sio.loadmat(path)
    except NotImplementedError:
        raise DataError(f"{path}: MATLAB v7.3 (HDF5) files are not supported; re-save with "
                        "-v7") from None
    except Exception as e:
        raise DataError(f"{path}: not a readable .mat file ({C._short(e)})") from None
    if "network" not in m:
        raise DataError(f"{path}: missing variable 'network' (sparse adjacency)")
    if "group" not in m:
        raise DataError(f"{path}: missing variable 'group' (node x label matrix)")
    adj = m["network"]
    if not sp.issparse(adj):
        adj = np.asarray(adj)
        if adj.ndim != 2 or adj.dtype.kind not in "fiub":
            raise DataError(f"{path}: 'network' must be a 2-D numeric matrix")
        adj = sp.csr_matrix(adj)
    adj = sp.csr_matrix(adj)
    adj.eliminate_zeros()  # an explicit 0 is not an edge
    graph, changes = C.clean_csr(adj.indptr, adj.indices.copy(), adj.shape, path)
    n = graph.num_nodes
    group = m["group"]
    group = group.toarray() if sp.issparse(group) else np.asarray(group)
    if group.dtype.kind not in "fiub":
        raise DataError(f"{path}: 'group' must be a numeric 0/1 matrix, got {group.dtype}")
    if group.ndim != 2 or group.shape[0] != n:
        raise DataError(f"{path}: 'group' has shape {tuple(group.shape)}, expected ({n}, L)")
    if not np.isin(group, (0, 1)).all():
        raise DataError(f"{path}: 'group' must contain only 0 and 1")
    labels = group.astype(np.float32)
    feat_key = next((k for k in ("features", "attr") if k in m), None)
    if feat_key:
        f = m[feat_key]
        x = C.finite_float32(f.toarray() if sp.issparse(f) else f, path, feat_key)
        C.check_features_rows(x, n, path)
        feat_note = f"from '{feat_key}'"
    else:
        x = structural_features(graph, seed=seed)
        feat_note = "structural (log-degree + 2-hop random projections, see data.structural)"
    tr, va, te = C.seeded_split(n, seed)
    ds = Dataset(graph, x, labels, tr, va, te, name=name or Path(path).stem, source=str(path),
                 metric="f1_micro",
                 meta={"format": "mat", "adj_cleanup": changes, "features": feat_note,
                       "split": f"seeded 50/25/25 (seed={seed})"})
    return C.finish(ds)
