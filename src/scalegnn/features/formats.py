"""Which store holds a dataset's features: wrapping raw inputs, ``params.feature_format`` and
``params.mmap_features``.

* :func:`as_feature_store` wraps what a loader or a user hands over (a numpy array, a memmap, a
  scipy sparse matrix, a torch tensor) in its store.
* :func:`choose_representation` (``params.feature_format``): ``sparse`` and ``dense`` force
  one; ``auto`` keeps CSR when the density (stored entries / (n F)) is at most
  :data:`SPARSE_MAX_DENSITY` and holds the matrix dense otherwise.
* :func:`should_map` (``params.mmap_features``): whether a dense feature file is memory-mapped.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch

from scalegnn.errors import ConfigError, DataError
from scalegnn.features.dense import DenseFeatures, MappedFeatures
from scalegnn.features.sparse import SparseFeatures
from scalegnn.features.store import FeatureStore

FEATURE_FORMATS = ("auto", "dense", "sparse")
SPARSE_MAX_DENSITY = 0.1
"""``auto`` keeps CSR at or below this density. Measured (``benchmarks/sparse_features.py``,
2 threads, forward + weight gradient with the folded standardization): CSR/dense time 0.07 at
0.3% density, 0.35 at 10%, 0.92 at 30%, 1.25 at 40% for 8000 x 4714 -> 512; 0.83 at 10%,
1.0 at 20% for a cora-sized 2708 x 1433 -> 256 (fixed costs weigh more there). 10% is on the
fast side for both with margin; CSR also holds 8 bytes per entry against dense's 4 per
element. Real data: facebook 0.30%, citeseer 0.86%, cora 1.27% -> CSR."""
MMAP_FEATURES = ("auto", "true", "false")
MMAP_AUTO_SHARE = 0.25
"""``params.mmap_features: auto`` maps a dense feature file over this share of the available
memory (the rest stays for the graph, the pool, the model and evaluation)."""


def as_feature_store(x) -> FeatureStore:
    """``x`` in its store: a store as it is; an ``np.memmap`` -> :class:`MappedFeatures`; a
    scipy sparse matrix -> :class:`SparseFeatures`; a torch tensor or anything array-like ->
    :class:`DenseFeatures` (its dtype and shape are checked by ``Dataset.validate``)."""
    if isinstance(x, FeatureStore):
        return x
    if isinstance(x, np.memmap):
        return MappedFeatures(x)
    if sp.issparse(x):
        return SparseFeatures(x)
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    return DenseFeatures(np.asarray(x))


def check_feature_format(value) -> str:
    if value not in FEATURE_FORMATS:
        raise ConfigError(f"params.feature_format: {value!r} is not one of "
                          f"{list(FEATURE_FORMATS)}")
    return value


def choose_representation(x, feature_format: str = "auto") -> FeatureStore:
    """``x`` in the representation ``feature_format`` asks for (module docstring). A dense
    store stays as it is (memory-mapped ones stay mapped); conversions drop a column
    transform into the values."""
    check_feature_format(feature_format)
    x = as_feature_store(x)
    if feature_format == "auto":
        feature_format = "sparse" if x.density() <= SPARSE_MAX_DENSITY else "dense"
    if feature_format == "sparse":
        return x if x.sparse else SparseFeatures.from_dense(x)
    return DenseFeatures(x.to_dense()) if x.sparse else x


def check_mmap_features(value) -> str:
    """``params.mmap_features`` as one of :data:`MMAP_FEATURES`; ConfigError otherwise."""
    text = str(value).strip().lower() if isinstance(value, (str, bool)) else None
    if text not in MMAP_FEATURES:
        raise ConfigError(f"params.mmap_features: {value!r} is not one of {list(MMAP_FEATURES)}")
    return text


def should_map(setting: str, feature_bytes: int | None, available: int | None) -> bool:
    """Whether to memory-map a dense feature file of ``feature_bytes`` under ``setting``
    (``auto``: when it exceeds :data:`MMAP_AUTO_SHARE` of ``available``; unknown sizes: no)."""
    setting = check_mmap_features(setting)
    if setting != "auto":
        return setting == "true"
    if feature_bytes is None or available is None:
        return False
    return feature_bytes > MMAP_AUTO_SHARE * available


def csr_features(indptr, indices, data, shape, path) -> SparseFeatures:
    """SparseFeatures from CSR arrays a loader read (duplicates summed, indices sorted);
    DataError naming ``path`` for non-finite values."""
    data = np.asarray(data, dtype=np.float32)
    if not np.isfinite(data).all():
        raise DataError(f"{path}: features contain NaN or inf")
    m = sp.csr_matrix((data, np.asarray(indices), np.asarray(indptr)), shape=tuple(shape))
    m.sum_duplicates()
    return SparseFeatures(m)


def append_columns(x, block: torch.Tensor):
    """``[x | block]`` for a model input ``x``: a tensor, or CSR rows (which stay CSR)."""
    if isinstance(x, torch.Tensor):
        return torch.cat([x, block.to(x.dtype)], dim=1)
    return x.append_columns(block)
