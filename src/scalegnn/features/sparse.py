"""Sparse node features: a CSR matrix with an optional exact column standardization.

:class:`SparseFeatures` stands for the dense (n x F) float32 matrix

    X_eff = (X - 1 μᵀ) diag(s)          (X: CSR; μ, s: per-column, or no shift/scale at all)

without ever forming it (a :class:`~scalegnn.features.store.FeatureStore`). Standardization
(``params.standardize``, z-scores by the training nodes' statistics) is folded into the first
layer's product, so it never densifies::

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

Representation choice: :func:`scalegnn.features.choose_representation`.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch

from scalegnn.features.store import FeatureStore, Statistics, check_weight, row_index
from scalegnn.ops.adj import SparseAdj
from scalegnn.ops.spmm import spmm_forward


class SparseFeatures(FeatureStore):
    """``X_eff = (X - 1 μᵀ) diag(s)`` for a CSR ``X`` (see the module docstring).

    ``csr``: a scipy CSR matrix (converted to float32 with sorted indices); ``statistics``: the
    standardization folded in (``mean``/``inv_std`` are its float32 μ and s = 1/σ), or None."""

    sparse = True

    def __init__(self, csr, *, statistics: Statistics | None = None):
        csr = sp.csr_matrix(csr)
        if csr.dtype != np.float32:
            csr = csr.astype(np.float32)
        self.csr = csr
        self.statistics = statistics
        if statistics is not None and statistics.mean.shape[0] != csr.shape[1]:
            raise ValueError(f"SparseFeatures: statistics of {statistics.mean.shape[0]} columns "
                             f"for {csr.shape[1]}")
        self.mean = None if statistics is None else statistics.mean.astype(np.float32)
        self.inv_std = None if statistics is None else (1.0 / statistics.std).astype(np.float32)
        self._adj = None

    def _rows_like(self, csr) -> "SparseFeatures":
        """Another CSR with this store's column transform (shared, not recomputed)."""
        out = object.__new__(SparseFeatures)
        out.__dict__.update(self.__dict__)
        out.csr, out._adj = csr, None
        return out

    # -------------------------------------------------------------- construction
    @classmethod
    def from_dense(cls, x, chunk: int = 1 << 14) -> "SparseFeatures":
        """CSR of a dense array, memmap or dense store, read in row chunks (never copied whole)."""
        blocks = [sp.csr_matrix(np.asarray(x[s:s + chunk], dtype=np.float32))
                  for s in range(0, x.shape[0], chunk)]
        if not blocks:
            return cls(sp.csr_matrix((0, x.shape[1]), dtype=np.float32))
        return cls(sp.vstack(blocks, format="csr"))

    # -------------------------------------------------------------- store protocol
    @property
    def shape(self) -> tuple[int, int]:
        return tuple(self.csr.shape)

    @property
    def nnz(self) -> int:
        return int(self.csr.nnz)

    def density(self, sample_rows: int = 0) -> float:
        """Stored entries / (n F), exact."""
        n, f = self.shape
        return self.nnz / (n * f) if n * f else 0.0

    @property
    def nbytes(self) -> int:
        extra = 0 if self.mean is None else self.mean.nbytes + self.inv_std.nbytes
        c = self.csr
        return int(c.data.nbytes + c.indices.nbytes + c.indptr.nbytes + extra)

    @property
    def row_bytes(self) -> float:
        return self.nbytes / max(self.num_nodes, 1)

    def describe(self) -> str:
        return f"csr (density {self.density():.3%})"

    def __getitem__(self, key) -> "SparseFeatures":
        """Rows ``x[rows]`` (a slice or an index array) with the same column transform, or
        ``x[rows, cols]`` (its transform restricted to ``cols``)."""
        rows, cols = key if isinstance(key, tuple) and len(key) == 2 else (key, None)
        out = self.csr[row_index(rows)]
        if cols is None:
            return self._rows_like(out)
        cols = row_index(cols)
        return SparseFeatures(out[:, cols], statistics=None if self.statistics is None
                              else self.statistics.columns(cols))

    def dense_rows(self, rows) -> np.ndarray:
        return self[rows].to_dense()

    def to_dense(self, chunk: int = 1 << 14) -> np.ndarray:
        """``X_eff`` as a dense float32 array (computed in float64 per row chunk, like
        :func:`scalegnn.features.store.apply_statistics`)."""
        n, f = self.shape
        out = np.empty((n, f), dtype=np.float32)
        for s in range(0, n, chunk):
            block = self.csr[s:s + chunk].toarray()
            if self.mean is not None:
                block = (block.astype(np.float64) - self.mean) * self.inv_std
            out[s:s + chunk] = block
        return out

    def _rows_finite(self) -> bool:
        return bool(np.isfinite(self.csr.data).all())

    def gather(self, nodes) -> "SparseFeatures":
        """The batch's rows, still CSR (the first layer multiplies them sparse x dense)."""
        return self[nodes]

    def as_input(self) -> "SparseFeatures":
        return self

    def to(self, device=None, **_) -> "SparseFeatures":
        """The CSR stays in host memory; products with device tensors run there (the SpMM
        moves the CSR to the device once, cached)."""
        return self

    # -------------------------------------------------------------- statistics
    def fit_statistics(self, nodes) -> Statistics:
        """``μ``/``σ`` of the stored rows ``nodes`` (population std, 0 -> 1), computed exactly in
        float64 without densifying: ``var_c = (Σ_nnz (x - μ_c)² + z_c μ_c²) / m`` with ``z_c``
        the zeros of column ``c`` among the ``m`` rows."""
        fit = self.csr[np.sort(np.asarray(nodes, dtype=np.int64))]
        m, f = fit.shape
        data = fit.data.astype(np.float64)
        cols = fit.indices
        mean = np.bincount(cols, weights=data, minlength=f) / max(m, 1)
        nz = np.bincount(cols, minlength=f)
        sq = np.bincount(cols, weights=(data - mean[cols]) ** 2, minlength=f)
        std = np.sqrt((sq + (m - nz) * mean ** 2) / max(m, 1))
        std[std == 0] = 1.0
        return Statistics(mean, std)

    def with_statistics(self, stats: Statistics) -> "SparseFeatures":
        """The same CSR with ``stats`` folded into the first layer (never densified)."""
        return SparseFeatures(self.csr, statistics=stats)

    # -------------------------------------------------------------- torch
    def adj(self):
        """The CSR as a :class:`~scalegnn.ops.SparseAdj` (built once; its transpose, built on
        the first backward, serves ``Xᵀ G``)."""
        if self._adj is None:
            c = self.csr
            self._adj = SparseAdj(c.indptr, c.indices, c.data, c.shape[1])
        return self._adj

    def __matmul__(self, weight: torch.Tensor) -> torch.Tensor:
        """``X_eff @ W`` (n x F times F x h), differentiable in ``W``."""
        check_weight(self, weight)
        return _FoldedProduct.apply(weight, self)

    def dropout(self, p: float) -> "SparseFeatures":
        """Inverted dropout of the stored entries (mask from torch's default generator, so
        ``torch.manual_seed`` fixes it); the column transform is kept."""
        if p <= 0.0 or self.nnz == 0:
            return self
        keep = torch.rand(self.nnz, dtype=torch.float32).numpy() >= p
        c = self.csr
        data = c.data * (keep.astype(np.float32) / np.float32(1.0 - p))
        return self._rows_like(sp.csr_matrix((data, c.indices, c.indptr), shape=c.shape))

    def append_columns(self, block) -> "SparseFeatures":
        """``[X_eff | B]`` for a dense (n x k) block (stored sparse, untransformed)."""
        b = np.asarray(block.detach().cpu() if isinstance(block, torch.Tensor) else block,
                       dtype=np.float32)
        csr = sp.hstack([self.csr, sp.csr_matrix(b)], format="csr")
        if self.statistics is None:
            return SparseFeatures(csr)
        k = b.shape[1]
        st = self.statistics
        return SparseFeatures(csr, statistics=Statistics(np.concatenate([st.mean, np.zeros(k)]),
                                                         np.concatenate([st.std, np.ones(k)])))

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


class _FoldedProduct(torch.autograd.Function):
    """``Y = X (diag(s) W) - 1 (μ ⊙ s)ᵀ W``; backward ``g_W = diag(s) Xᵀ G - (μ ⊙ s)(1ᵀ G)``.

    One SpMM each way, the scale and the rank-one offset applied in place on the SpMM's
    fresh output: no dense temporaries beyond ``diag(s) W`` (the composition of torch ops
    allocated five (n x h)/(F x h) temporaries per step, a third of the layer's time)."""

    @staticmethod
    def forward(ctx, weight, feats):
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
