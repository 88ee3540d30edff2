"""Sparse node features: a CSR matrix with an optional exact column standardization.

:class:`SparseFeatures` stands for the dense (n x F) float32 matrix

    X_eff = (X - 1 μᵀ) diag(s)          (X: CSR; μ, s: per-column, or no shift/scale at all)

without ever forming it. Standardization (``params.standardize``, z-scores by the training
nodes' statistics) is folded into the first layer's product, so it never densifies::

    X_eff W = X (diag(s) W) - 1 ((μ ⊙ s)ᵀ W)

one sparse x dense product (the SpMM kernels of :mod:`scalegnn.ops.spmm`, differentiable in
``W``: backward ``g_W = diag(s) Xᵀ G - (μ ⊙ s) 1ᵀ G``) plus a rank-one offset.

The same object is the dataset's feature matrix (``Dataset.features``), the rows a batch
gathers (``features[nodes]`` keeps the CSR, ``Batch.x``) and a model's input. Layers use it
through ``x @ W``, ``x[:rows]``, ``x.shape`` and ``nn.Dropout``/``FastDropout`` (dispatched
here by ``__torch_function__``). Input dropout drops stored entries only: ``X`` entries are
kept with probability 1-p and scaled by 1/(1-p), the offset ``μ ⊙ s`` is not dropped, so the
expectation equals that of dense inverted dropout on ``X_eff`` (whose zeros, standardized to
``-μ s``, would be dropped too; the variance differs).

``np.asarray(features)`` densifies (``X_eff`` exactly, float32): the escape hatch for
consumers that need dense rows (distributed plans densify per rank, ``data convert`` writes
GraphSAINT's dense ``feats.npy``).

Representation choice (:func:`choose_representation`, ``params.feature_format``): ``sparse``
and ``dense`` force one; ``auto`` keeps CSR when the density (stored entries / (n F)) is at most
:data:`SPARSE_MAX_DENSITY` and the matrix is dense otherwise.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch

from scalegnn.errors import ConfigError, DataError

FEATURE_FORMATS = ("auto", "dense", "sparse")
SPARSE_MAX_DENSITY = 0.1
"""``auto`` keeps CSR at or below this density. Measured (``benchmarks/sparse_features.py``,
2 threads, forward + weight gradient with the folded standardization): CSR/dense time 0.07 at
0.3% density, 0.35 at 10%, 0.92 at 30%, 1.25 at 40% for 8000 x 4714 -> 512; 0.83 at 10%,
1.0 at 20% for a cora-sized 2708 x 1433 -> 256 (fixed costs weigh more there). 10% is on the
fast side for both with margin; CSR also holds 8 bytes per entry against dense's 4 per
element. Real data: facebook 0.30%, citeseer 0.86%, cora 1.27% -> CSR."""


class SparseFeatures:
    """``X_eff = (X - 1 μᵀ) diag(s)`` for a CSR ``X`` (see the module docstring).

    ``csr``: a scipy CSR matrix (converted to float32 with sorted indices); ``mean``/``inv_std``:
    per-column float arrays (both or neither)."""

    ndim = 2
    dtype = np.dtype(np.float32)

    def __init__(self, csr, mean=None, inv_std=None):
        csr = sp.csr_matrix(csr)
        if csr.dtype != np.float32:
            csr = csr.astype(np.float32)
        self.csr = csr
        if (mean is None) != (inv_std is None):
            raise ValueError("SparseFeatures: give both mean and inv_std or neither")
        f = csr.shape[1]
        self.mean = None if mean is None else np.ascontiguousarray(mean, np.float32).reshape(f)
        self.inv_std = None if inv_std is None else \
            np.ascontiguousarray(inv_std, np.float32).reshape(f)
        self._adj = None

    # -------------------------------------------------------------- construction
    @classmethod
    def from_dense(cls, x, chunk: int = 1 << 14) -> "SparseFeatures":
        """CSR of a dense array or memmap, read in row chunks (never copied whole)."""
        blocks = [sp.csr_matrix(np.asarray(x[s:s + chunk], dtype=np.float32))
                  for s in range(0, x.shape[0], chunk)]
        if not blocks:
            return cls(sp.csr_matrix((0, x.shape[1]), dtype=np.float32))
        return cls(sp.vstack(blocks, format="csr"))

    # -------------------------------------------------------------- array-like surface
    @property
    def shape(self) -> tuple[int, int]:
        return tuple(self.csr.shape)

    def __len__(self) -> int:
        return self.csr.shape[0]

    @property
    def nnz(self) -> int:
        return int(self.csr.nnz)

    @property
    def density(self) -> float:
        n, f = self.shape
        return self.nnz / (n * f) if n * f else 0.0

    @property
    def nbytes(self) -> int:
        extra = 0 if self.mean is None else self.mean.nbytes + self.inv_std.nbytes
        c = self.csr
        return int(c.data.nbytes + c.indices.nbytes + c.indptr.nbytes + extra)

    @property
    def standardized(self) -> bool:
        return self.mean is not None

    def __getitem__(self, key) -> "SparseFeatures":
        """Rows ``x[rows]`` (a slice or an index array) with the same column transform, or
        ``x[rows, cols]`` (its transform restricted to ``cols``)."""
        rows, cols = key if isinstance(key, tuple) and len(key) == 2 else (key, None)
        out = self.csr[_index(rows)]
        if cols is None:
            return SparseFeatures(out, self.mean, self.inv_std)
        cols = _index(cols)
        return SparseFeatures(out[:, cols], None if self.mean is None else self.mean[cols],
                              None if self.inv_std is None else self.inv_std[cols])

    def to_dense(self, chunk: int = 1 << 14) -> np.ndarray:
        """``X_eff`` as a dense float32 array (computed in float64 per row chunk, like
        :func:`scalegnn.data.transforms.standardize_features`)."""
        n, f = self.shape
        out = np.empty((n, f), dtype=np.float32)
        for s in range(0, n, chunk):
            block = self.csr[s:s + chunk].toarray()
            if self.mean is not None:
                block = (block.astype(np.float64) - self.mean) * self.inv_std
            out[s:s + chunk] = block
        return out

    def __array__(self, dtype=None, copy=None):
        out = self.to_dense()
        return out if dtype is None else out.astype(dtype, copy=False)

    def all_finite(self) -> bool:
        ok = bool(np.isfinite(self.csr.data).all())
        if self.mean is not None:
            ok = ok and bool(np.isfinite(self.mean).all() and np.isfinite(self.inv_std).all())
        return ok

    def to(self, device=None, **_) -> "SparseFeatures":
        """Host arrays stay on the host; products with device tensors run there (the SpMM
        moves the CSR to the device once, cached)."""
        return self

    def __repr__(self) -> str:
        n, f = self.shape
        return (f"SparseFeatures({n} x {f}, nnz={self.nnz}, density={self.density:.4g}, "
                f"standardized={self.standardized})")

    # -------------------------------------------------------------- statistics
    def standardize(self, nodes) -> "SparseFeatures":
        """The same CSR with ``μ``/``s`` of rows ``nodes`` (population std, 0 -> 1), computed
        exactly in float64 without densifying: ``var_c = (Σ_nnz (x - μ_c)² + z_c μ_c²) / m``
        with ``z_c`` the zeros of column ``c`` among the ``m`` rows."""
        fit = self.csr[np.sort(np.asarray(nodes, dtype=np.int64))]
        m, f = fit.shape
        data = fit.data.astype(np.float64)
        cols = fit.indices
        mean = np.bincount(cols, weights=data, minlength=f) / max(m, 1)
        nz = np.bincount(cols, minlength=f)
        sq = np.bincount(cols, weights=(data - mean[cols]) ** 2, minlength=f)
        std = np.sqrt((sq + (m - nz) * mean ** 2) / max(m, 1))
        std[std == 0] = 1.0
        return SparseFeatures(self.csr, mean.astype(np.float32),
                              (1.0 / std).astype(np.float32))

    # -------------------------------------------------------------- torch
    def adj(self):
        """The CSR as a :class:`~scalegnn.ops.SparseAdj` (built once; its transpose, built on
        the first backward, serves ``Xᵀ G``)."""
        if self._adj is None:
            from scalegnn.ops.adj import SparseAdj  # noqa: PLC0415 (ops imports torch kernels)
            c = self.csr
            self._adj = SparseAdj(c.indptr, c.indices, c.data, c.shape[1])
        return self._adj

    def __matmul__(self, weight: torch.Tensor) -> torch.Tensor:
        """``X_eff @ W`` (n x F times F x h), differentiable in ``W``."""
        if not isinstance(weight, torch.Tensor) or weight.dim() != 2 \
                or weight.shape[0] != self.shape[1]:
            raise TypeError(f"SparseFeatures @ W: W must be a ({self.shape[1]}, h) tensor")
        return _FoldedProduct.apply(weight, self)

    def dropout(self, p: float) -> "SparseFeatures":
        """Inverted dropout of the stored entries (mask from torch's default generator, so
        ``torch.manual_seed`` fixes it); the column transform is kept."""
        if p <= 0.0 or self.nnz == 0:
            return self
        keep = torch.rand(self.nnz, dtype=torch.float32).numpy() >= p
        c = self.csr
        data = c.data * (keep.astype(np.float32) / np.float32(1.0 - p))
        out = sp.csr_matrix((data, c.indices, c.indptr), shape=c.shape)
        return SparseFeatures(out, self.mean, self.inv_std)

    def append_columns(self, block) -> "SparseFeatures":
        """``[X_eff | B]`` for a dense (n x k) block (stored sparse, untransformed)."""
        b = np.asarray(block.detach().cpu() if isinstance(block, torch.Tensor) else block,
                       dtype=np.float32)
        csr = sp.hstack([self.csr, sp.csr_matrix(b)], format="csr")
        if self.mean is None:
            return SparseFeatures(csr)
        k = b.shape[1]
        return SparseFeatures(csr, np.concatenate([self.mean, np.zeros(k, np.float32)]),
                              np.concatenate([self.inv_std, np.ones(k, np.float32)]))

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.nn.functional.dropout:
            x = args[0]
            p = kwargs.get("p", args[1] if len(args) > 1 else 0.5)
            training = kwargs.get("training", args[2] if len(args) > 2 else True)
            return x.dropout(float(p)) if training else x
        if func in (torch.matmul, torch.Tensor.__matmul__, torch.mm) and \
                isinstance(args[0], SparseFeatures):
            return args[0] @ args[1]
        raise TypeError(f"SparseFeatures does not support {getattr(func, '__name__', func)}; "
                        f"use x @ W, x[rows] or np.asarray(x)")


def _index(idx):
    """A slice as it is, else an int64 (or boolean) index array."""
    if isinstance(idx, slice):
        return idx
    idx = np.asarray(idx)
    return idx if idx.dtype == bool else idx.astype(np.int64, copy=False)


class _FoldedProduct(torch.autograd.Function):
    """``Y = X (diag(s) W) - 1 (μ ⊙ s)ᵀ W``; backward ``g_W = diag(s) Xᵀ G - (μ ⊙ s)(1ᵀ G)``.

    One SpMM each way, the scale and the rank-one offset applied in place on the SpMM's
    fresh output: no dense temporaries beyond ``diag(s) W`` (the composition of torch ops
    allocated five (n x h)/(F x h) temporaries per step, a third of the layer's time)."""

    @staticmethod
    def forward(ctx, weight, feats):
        from scalegnn.ops.spmm import spmm_forward  # noqa: PLC0415 (ops imports numba kernels)
        ctx.feats = feats
        w = weight.detach()
        if feats.mean is None:
            return spmm_forward(feats.adj(), w)
        s, ms = _scale_offset(feats, w)
        out = spmm_forward(feats.adj(), w * s[:, None])
        out.sub_(ms @ w)
        return out

    @staticmethod
    def backward(ctx, grad):
        from scalegnn.ops.spmm import spmm_forward  # noqa: PLC0415
        if not ctx.needs_input_grad[0]:
            return None, None
        feats = ctx.feats
        gw = spmm_forward(feats.adj().t(), grad.contiguous())
        if feats.mean is not None:
            s, ms = _scale_offset(feats, grad)
            gw.mul_(s[:, None]).addr_(ms, grad.sum(0), alpha=-1.0)
        return gw, None


def _scale_offset(feats: SparseFeatures, like: torch.Tensor):
    """``s`` and ``μ ⊙ s`` as tensors of ``like``'s dtype and device."""
    s = torch.from_numpy(feats.inv_std).to(like.device, like.dtype)
    return s, torch.from_numpy(feats.mean).to(like.device, like.dtype) * s


def gather_rows(features, nodes):
    """The model input of rows ``nodes``: SparseFeatures rows, or a float32 tensor (from an
    array, a memmap, or :class:`~scalegnn.mapped_features.MappedFeatures`' standardized rows)."""
    if isinstance(features, SparseFeatures):
        return features[nodes]
    return torch.from_numpy(np.ascontiguousarray(features[nodes], dtype=np.float32))


def append_columns(x, block: torch.Tensor):
    """``[x | block]`` for a tensor or SparseFeatures ``x``."""
    if isinstance(x, SparseFeatures):
        return x.append_columns(block)
    return torch.cat([x, block.to(x.dtype)], dim=1)


def check_feature_format(value) -> str:
    if value not in FEATURE_FORMATS:
        raise ConfigError(f"params.feature_format: {value!r} is not one of "
                          f"{list(FEATURE_FORMATS)}")
    return value


def density_of(x, sample_rows: int = 4096) -> float:
    """Stored-entry density of a feature matrix; for a dense one, the nonzero share of up to
    ``sample_rows`` evenly spaced rows (a memory-mapped matrix is never read whole)."""
    if isinstance(x, SparseFeatures):
        return x.density
    n, f = x.shape
    if n * f == 0:
        return 0.0
    rows = np.unique(np.linspace(0, n - 1, min(n, sample_rows)).astype(np.int64))
    return int(np.count_nonzero(x[rows])) / (rows.size * f)


def choose_representation(x, feature_format: str = "auto"):
    """``x`` as the representation ``feature_format`` asks for (module docstring)."""
    check_feature_format(feature_format)
    sparse = isinstance(x, SparseFeatures)
    if feature_format == "auto":
        feature_format = "sparse" if density_of(x) <= SPARSE_MAX_DENSITY else "dense"
    if feature_format == "sparse":
        return x if sparse else SparseFeatures.from_dense(x)
    return x.to_dense() if sparse else x


def csr_features(indptr, indices, data, shape, path) -> SparseFeatures:
    """SparseFeatures from CSR arrays a loader read (duplicates summed, indices sorted);
    DataError naming ``path`` for non-finite values."""
    data = np.asarray(data, dtype=np.float32)
    if not np.isfinite(data).all():
        raise DataError(f"{path}: features contain NaN or inf")
    m = sp.csr_matrix((data, np.asarray(indices), np.asarray(indptr)), shape=tuple(shape))
    m.sum_duplicates()
    return SparseFeatures(m)
