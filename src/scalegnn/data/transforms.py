"""Dataset transforms that return a new Dataset (the input is never modified).

:func:`standardize_features` reproduces GraphSAINT's preprocessing (``utils.load_data`` fits a
StandardScaler on the training nodes' features and transforms all nodes):

    x'_v = (x_v - mean_{u in train} x_u) / std_{u in train} x_u     (std 0 -> 1)

Loaders return features unchanged; call this explicitly where the reference setup needs it.
The result depends on where the features live:

* an in-memory dense array -> a dense in-memory float32 copy;
* a memory-mapped one (``np.memmap``, e.g. ``load_dataset(..., mmap=True)``) -> a
  :class:`~scalegnn.mapped_features.MappedFeatures` that standardizes rows when they are read
  (same numbers, no (n x F) copy in memory);
* CSR features (:class:`~scalegnn.features.SparseFeatures`) stay CSR and carry ``mean`` and
  ``1/std`` instead, which the first layer folds into its weights exactly.

Statistics are fitted in row blocks of about 64 MiB of float64 (a memmap is never read whole).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from scalegnn.data.dataset import Dataset
from scalegnn.features import SparseFeatures
from scalegnn.mapped_features import MappedFeatures, block_rows


def standardize_features(ds: Dataset, nodes=None, chunk: int = 1 << 16) -> Dataset:
    """Dataset with features standardized by the statistics of ``nodes`` (default: train)."""
    nodes = ds.train_idx if nodes is None else np.asarray(nodes, dtype=np.int64)
    x = ds.features
    if isinstance(x, SparseFeatures):  # exact, and kept sparse: the model folds μ and σ in
        out = x.standardize(nodes)
    elif isinstance(x, MappedFeatures):  # statistics of the raw rows, applied on read
        out = MappedFeatures(x.x, *fit_statistics(x.x, nodes))
    elif isinstance(x, np.memmap):  # never copied into memory: standardized on read
        out = MappedFeatures(x, *fit_statistics(x, nodes))
    else:
        out = apply_statistics(x, *fit_statistics(x, nodes), chunk=chunk)
    return dataclasses.replace(ds, features=out, meta={**ds.meta, "standardized": True})


def fit_statistics(x, nodes, block: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Column mean and population std (0 -> 1) of rows ``nodes`` of dense ``x``, in float64.

    Two passes over blocks of ``block`` rows of ``x[sort(nodes)]`` (default about 64 MiB of
    float64): ``mean = Σ x / m``, then ``std = sqrt(Σ (x - mean)² / m)``. With one block these
    are exactly numpy's ``mean``/``std`` along axis 0."""
    nodes = np.sort(np.asarray(nodes, dtype=np.int64))
    m, f = nodes.shape[0], x.shape[1]
    block = block or block_rows(f, itemsize=8)
    if m <= block:
        fit = np.asarray(x[nodes], dtype=np.float64)
        mean, std = fit.mean(axis=0), fit.std(axis=0)
    else:
        total = np.zeros(f, dtype=np.float64)
        for s in range(0, m, block):
            total += np.asarray(x[nodes[s:s + block]], dtype=np.float64).sum(axis=0)
        mean = total / m
        sq = np.zeros(f, dtype=np.float64)
        for s in range(0, m, block):
            d = np.asarray(x[nodes[s:s + block]], dtype=np.float64) - mean
            sq += np.einsum("ij,ij->j", d, d)
        std = np.sqrt(sq / m)
    std[std == 0] = 1.0
    return mean, std


def apply_statistics(x, mean, std, chunk: int = 1 << 16) -> np.ndarray:
    """``(x - mean) / std`` as a float32 copy, computed in float64 per row chunk (a memory-mapped
    ``x`` is never read whole)."""
    out = np.empty(x.shape, dtype=np.float32)
    for s in range(0, x.shape[0], chunk):
        out[s:s + chunk] = (np.asarray(x[s:s + chunk], dtype=np.float64) - mean) / std
    return out
