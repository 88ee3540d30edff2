"""Dense node features read on demand: a (memory-mapped) matrix with a column standardization.

:class:`MappedFeatures` stands for the dense (n x F) float32 matrix

    X_eff = (X - 1 μᵀ) diag(1/σ)          (X: dense rows, usually an ``np.memmap``)

without ever forming it: rows are standardized when they are read (a batch's gathered rows, an
evaluation row block), computed in float64 and rounded to float32, the same numbers
:func:`scalegnn.data.transforms.apply_statistics` writes into an in-memory copy. So a feature
file larger than the memory budget trains like an in-memory one; only the page cache holds it.

It is the dense counterpart of :class:`scalegnn.features.SparseFeatures` (whose transform folds
into the first layer's weights instead). Interface: ``shape``, ``ndim``, ``dtype``, ``nbytes``
(of the backing storage), ``x[rows]`` / ``x[rows, cols]`` and :meth:`rows` (standardized float32
numpy rows), ``x @ W`` (a torch (n, h) product computed in row blocks of about
:data:`BLOCK_BYTES`), ``np.asarray(x)`` (densifies everything: the escape hatch).
"""

from __future__ import annotations

import numpy as np

MMAP_FEATURES = ("auto", "true", "false")
MMAP_AUTO_SHARE = 0.25
"""``params.mmap_features: auto`` maps a dense feature file over this share of the available
memory (the rest stays for the graph, the pool, the model and evaluation)."""
BLOCK_BYTES = 64 << 20
"""Row blocks (reads, products, statistics) are about this many bytes of float32 input."""


def check_mmap_features(value) -> str:
    """``params.mmap_features`` as one of :data:`MMAP_FEATURES`; ConfigError otherwise."""
    text = str(value).strip().lower() if isinstance(value, (str, bool)) else None
    if text not in MMAP_FEATURES:
        from scalegnn.errors import ConfigError  # noqa: PLC0415
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


def block_rows(num_cols: int, itemsize: int = 4, target: int = BLOCK_BYTES) -> int:
    """Rows of a ``num_cols``-wide block of about ``target`` bytes (at least 1)."""
    return max(1, target // max(1, num_cols * itemsize))


class MappedFeatures:
    """``X_eff = (X - 1 μᵀ) / σ`` over dense rows ``x`` (see the module docstring).

    ``x``: a 2-D float32 array or ``np.memmap`` (never written); ``mean``/``std``: per-column
    float64 statistics (both or neither; ``std`` has no zeros)."""

    ndim = 2
    dtype = np.dtype(np.float32)

    def __init__(self, x, mean=None, std=None):
        if x.ndim != 2 or x.dtype != np.float32:
            raise ValueError(f"MappedFeatures: x must be a 2-D float32 array, got {x.dtype} "
                             f"{tuple(x.shape)}")
        if (mean is None) != (std is None):
            raise ValueError("MappedFeatures: give both mean and std or neither")
        f = x.shape[1]
        self.x = x
        self.mean = None if mean is None else np.asarray(mean, np.float64).reshape(f)
        self.std = None if std is None else np.asarray(std, np.float64).reshape(f)
        self.block_rows = block_rows(f)

    @property
    def shape(self) -> tuple[int, int]:
        return tuple(self.x.shape)

    def __len__(self) -> int:
        return self.x.shape[0]

    @property
    def nbytes(self) -> int:
        """Bytes of the backing matrix (on disk for a memmap; resident only as page cache)."""
        return int(self.x.nbytes)

    @property
    def mapped(self) -> bool:
        """Whether the rows live in a memory-mapped file."""
        return isinstance(self.x, np.memmap)

    @property
    def standardized(self) -> bool:
        return self.mean is not None

    def transform(self, raw: np.ndarray, cols=None) -> np.ndarray:
        """Raw rows (all columns, or ``cols``) standardized, as a new float32 array."""
        if self.mean is None:
            return np.array(raw, dtype=np.float32)  # always a private, writable copy
        mean = self.mean if cols is None else self.mean[cols]
        std = self.std if cols is None else self.std[cols]
        return ((raw.astype(np.float64) - mean) / std).astype(np.float32)

    def rows(self, start: int, stop: int) -> np.ndarray:
        """Standardized rows ``start:stop`` as a new float32 array."""
        return self.transform(self.x[start:stop])

    def __getitem__(self, key) -> np.ndarray:
        """``x[rows]`` (a slice, an index array or a boolean mask) or ``x[rows, cols]``:
        standardized float32 rows. Index arrays are read in sorted order (sequential page
        access on a memmap) and returned in the order asked for."""
        rows, cols = key if isinstance(key, tuple) and len(key) == 2 else (key, None)
        if isinstance(rows, slice):
            raw = self.x[rows]
        else:
            rows = np.asarray(rows)
            if rows.dtype == bool:
                rows = np.flatnonzero(rows)
            rows = rows.astype(np.int64, copy=False)
            order = np.argsort(rows, kind="stable")
            raw = np.empty((rows.shape[0], self.x.shape[1]), dtype=np.float32)
            raw[order] = self.x[rows[order]]
        if cols is not None:
            raw = raw[:, cols]
        return self.transform(raw, cols)

    def __array__(self, dtype=None, copy=None):
        if self.mean is None:
            out = np.array(self.x, dtype=np.float32)
        else:  # the in-memory standardized copy, made in row blocks
            from scalegnn.data.transforms import apply_statistics  # noqa: PLC0415 (cycle)
            out = apply_statistics(self.x, self.mean, self.std, chunk=self.block_rows)
        return out if dtype is None else out.astype(dtype, copy=False)

    def __matmul__(self, weight):
        """``X_eff @ W`` for a (F, h) torch tensor, one row block at a time (an (n, h) result,
        never the (n, F) input). For evaluation: not differentiable in ``W``."""
        import torch  # noqa: PLC0415 (numpy-only users of this module do not need torch)
        if not isinstance(weight, torch.Tensor) or weight.dim() != 2 \
                or weight.shape[0] != self.shape[1]:
            raise TypeError(f"MappedFeatures @ W: W must be a ({self.shape[1]}, h) tensor")
        n = self.shape[0]
        w = weight.detach()
        out = torch.empty(n, w.shape[1], dtype=w.dtype, device=w.device)
        for s in range(0, n, self.block_rows):
            e = min(n, s + self.block_rows)
            block = torch.from_numpy(self.rows(s, e)).to(w.device, w.dtype)
            torch.mm(block, w, out=out[s:e])
        return out

    def all_finite(self) -> bool:
        for s in range(0, self.shape[0], self.block_rows):
            if not np.isfinite(self.x[s:s + self.block_rows]).all():
                return False
        return self.mean is None or bool(np.isfinite(self.mean).all()
                                         and np.isfinite(self.std).all())

    def to(self, device=None, **_) -> "MappedFeatures":
        """Rows stay on the host; gathered batches are moved by the trainer."""
        return self

    def __repr__(self) -> str:
        n, f = self.shape
        return (f"MappedFeatures({n} x {f}, mapped={self.mapped}, "
                f"standardized={self.standardized})")
