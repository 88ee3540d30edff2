"""Dataset transforms that return a new Dataset (the input is never modified).

:func:`standardize_features` reproduces GraphSAINT's preprocessing (``utils.load_data`` fits a
StandardScaler on the training nodes' features and transforms all nodes):

    x'_v = (x_v - mean_{u in train} x_u) / std_{u in train} x_u     (std 0 -> 1)

Loaders return features unchanged; call this explicitly where the reference setup needs it.
The result is a dense in-memory float32 copy (a memory-mapped input is read in row chunks);
CSR features (:class:`~scalegnn.features.SparseFeatures`) stay CSR and carry ``mean`` and
``1/std`` instead, which the first layer folds into its weights exactly.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from scalegnn.data.dataset import Dataset
from scalegnn.features import SparseFeatures


def standardize_features(ds: Dataset, nodes=None, chunk: int = 1 << 16) -> Dataset:
    """Dataset with features standardized by the statistics of ``nodes`` (default: train)."""
    nodes = ds.train_idx if nodes is None else np.asarray(nodes, dtype=np.int64)
    x = ds.features
    if isinstance(x, SparseFeatures):  # exact, and kept sparse: the model folds μ and σ in
        return dataclasses.replace(ds, features=x.standardize(nodes),
                                   meta={**ds.meta, "standardized": True})
    out = apply_statistics(x, *fit_statistics(x, nodes), chunk=chunk)
    return dataclasses.replace(ds, features=out, meta={**ds.meta, "standardized": True})


def fit_statistics(x, nodes) -> tuple[np.ndarray, np.ndarray]:
    """Column mean and population std (0 -> 1) of rows ``nodes`` of dense ``x``, in float64."""
    fit = np.asarray(x[np.sort(nodes)], dtype=np.float64)
    mean, std = fit.mean(axis=0), fit.std(axis=0)
    std[std == 0] = 1.0
    return mean, std


def apply_statistics(x, mean, std, chunk: int = 1 << 16) -> np.ndarray:
    """``(x - mean) / std`` as a float32 copy, computed in float64 per row chunk (a memory-mapped
    ``x`` is never read whole)."""
    out = np.empty(x.shape, dtype=np.float32)
    for s in range(0, x.shape[0], chunk):
        out[s:s + chunk] = (np.asarray(x[s:s + chunk], dtype=np.float64) - mean) / std
    return out
