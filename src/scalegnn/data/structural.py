"""Deterministic structural node features for graphs that ship without features.

Used by the .mat loader (BlogCatalog) and by any loader whose file has no feature matrix.
With Â = D^{-1} A (row-normalized adjacency) and R an (N x k) standard-normal matrix drawn
from ``numpy.random.default_rng(seed)``, the features are the columns

    [ z(log(1 + deg)),  z(Â R),  z(Â² R) ]          -> N x (1 + 2k), float32

where z(.) standardizes each column to zero mean and unit variance. Â R and Â² R are random
projections of the 1- and 2-hop neighbourhood indicator rows (FastRP-style): nodes with
overlapping neighbourhoods get similar rows, which is what a spectral embedding captures,
at the cost of two sparse products. Same graph + same seed -> same numbers.
"""

from __future__ import annotations

import numpy as np

from scalegnn.graph import Graph

DEFAULT_K = 16


def _zscore(x: np.ndarray) -> np.ndarray:
    mu = x.mean(axis=0, keepdims=True)
    sd = x.std(axis=0, keepdims=True)
    sd[sd == 0] = 1.0
    return (x - mu) / sd


def structural_features(graph: Graph, k: int = DEFAULT_K, seed: int = 0) -> np.ndarray:
    """(N, 1 + 2k) float32 features as described in the module docstring."""
    n = graph.num_nodes
    if n == 0:  # no statistics to standardize by (and numpy would warn about empty means)
        return np.zeros((0, 1 + 2 * k), dtype=np.float32)
    deg = graph.degrees().astype(np.float64)
    a = graph.row_normalized(dtype=np.float64).to_scipy()
    r = np.random.default_rng(seed).standard_normal((n, k))
    h1 = a @ r
    h2 = a @ h1
    x = np.concatenate([_zscore(np.log1p(deg)[:, None]), _zscore(h1), _zscore(h2)], axis=1)
    return x.astype(np.float32)
