"""The feature-store protocol every representation of node features implements.

A :class:`FeatureStore` stands for the dense (n x F) float32 matrix

    X_eff = (X - 1 μᵀ) diag(1/σ)          (X: the stored rows; μ, σ: per-column, or none)

whatever holds ``X``: a numpy array in memory (:class:`~scalegnn.features.DenseFeatures`), a
memory-mapped ``.npy`` file (:class:`~scalegnn.features.MappedFeatures`) or a CSR matrix
(:class:`~scalegnn.features.SparseFeatures`). Every consumer (the batch loaders, full-graph
evaluation, the memory estimate, writers, distributed plans) uses this interface:

* **gather**: :meth:`FeatureStore.gather` gives the model input of a batch's rows (a float32
  tensor, or CSR rows that the first layer multiplies sparse x dense); :meth:`as_input` the
  whole matrix as a model input; :meth:`dense_rows` / :meth:`row_blocks` dense float32 rows.
* **standardization**: :meth:`fit_statistics` (column mean and population std of some rows,
  float64, std 0 -> 1), :meth:`with_statistics` (the store of ``X_eff`` under them: an
  in-memory copy, applied on read, or folded into the first layer, by representation),
  :meth:`standardize` (both); :attr:`statistics` records what a store applies.
* **the first layer's product**: ``x @ W`` is ``X_eff W`` as a tensor.
* **bytes**: :attr:`nbytes` (storage), :attr:`resident_bytes` (held in this process's memory),
  :attr:`row_bytes` (one gathered row).
* **device**: :meth:`to` gives the store whose gathered rows land on a device.

Statistics are fitted in row blocks of about :data:`BLOCK_BYTES` (a memmap is never read
whole) with the same float64 arithmetic for every representation, so an in-memory, a mapped
and a CSR copy of one matrix standardize to the same numbers (float32-rounded).
"""

from __future__ import annotations

import abc
import warnings
from dataclasses import dataclass

import numpy as np
import torch

BLOCK_BYTES = 64 << 20
"""Row blocks (reads, products, statistics) are about this many bytes of float32 input."""
FLOAT = 4
"""Bytes per value of a gathered (float32) row."""


def block_rows(num_cols: int, itemsize: int = FLOAT, target: int = BLOCK_BYTES) -> int:
    """Rows of a ``num_cols``-wide block of about ``target`` bytes (at least 1)."""
    return max(1, target // max(1, num_cols * itemsize))


@dataclass(frozen=True)
class Statistics:
    """Per-column ``mean`` and ``std`` (float64, no zeros in ``std``) of a standardization."""

    mean: np.ndarray
    std: np.ndarray

    def __post_init__(self):
        object.__setattr__(self, "mean", np.asarray(self.mean, np.float64).reshape(-1))
        object.__setattr__(self, "std", np.asarray(self.std, np.float64).reshape(-1))
        if self.mean.shape != self.std.shape:
            raise ValueError(f"Statistics: mean has {self.mean.size} columns, std "
                             f"{self.std.size}")

    def columns(self, cols) -> "Statistics":
        """The statistics of columns ``cols``."""
        return Statistics(self.mean[cols], self.std[cols])


def column_statistics(x, nodes, block: int | None = None) -> Statistics:
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
    return Statistics(mean, std)


def apply_statistics(x, stats: Statistics, chunk: int = 1 << 16) -> np.ndarray:
    """``(x - mean) / std`` as a float32 copy, computed in float64 per row chunk (a memory-mapped
    ``x`` is never read whole)."""
    out = np.empty(x.shape, dtype=np.float32)
    for s in range(0, x.shape[0], chunk):
        out[s:s + chunk] = (np.asarray(x[s:s + chunk], dtype=np.float64) - stats.mean) / stats.std
    return out


def row_index(rows):
    """A slice as it is, a boolean mask as positions, else an int64 index array."""
    if isinstance(rows, slice):
        return rows
    rows = np.asarray(rows)
    return np.flatnonzero(rows) if rows.dtype == bool else rows.astype(np.int64, copy=False)


def read_only_tensor(a: np.ndarray) -> torch.Tensor:
    """A zero-copy tensor over ``a`` (a read-only memmap is fine: it is never written)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return torch.from_numpy(a)


class FeatureStore(abc.ABC):
    """Node features: ``X_eff`` of the module docstring, whatever holds it."""

    ndim = 2
    sparse = False
    """Whether the rows are CSR (the model input is then a store, multiplied ``X W`` first)."""
    mapped = False
    """Whether the rows live in a memory-mapped file (not in this process's memory)."""
    statistics: Statistics | None = None
    """The standardization this store applies (or, in memory, has applied); None: raw."""
    device = torch.device("cpu")
    """Where :meth:`gather` puts the rows (:meth:`to`)."""

    # ---------------------------------------------------------------- shape and bytes
    @property
    @abc.abstractmethod
    def shape(self) -> tuple[int, int]:
        """(nodes, features)."""

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(np.float32)

    def __len__(self) -> int:
        return int(self.shape[0])

    @property
    def num_nodes(self) -> int:
        return int(self.shape[0])

    @property
    def num_features(self) -> int:
        return int(self.shape[1])

    @property
    def standardized(self) -> bool:
        return self.statistics is not None

    @property
    @abc.abstractmethod
    def nbytes(self) -> int:
        """Bytes of the stored rows (on disk for a mapped store)."""

    @property
    def resident_bytes(self) -> int:
        """Bytes this store holds in the process's memory (0 for a mapped file)."""
        return 0 if self.mapped else int(self.nbytes)

    @property
    def row_bytes(self) -> float:
        """Bytes of one gathered row."""
        return FLOAT * self.num_features

    # ---------------------------------------------------------------- rows
    @abc.abstractmethod
    def __getitem__(self, key):
        """``x[rows]`` / ``x[rows, cols]``: rows in this representation's own type (dense
        float32 numpy rows; a :class:`SparseFeatures` for CSR)."""

    @abc.abstractmethod
    def dense_rows(self, rows) -> np.ndarray:
        """Rows ``rows`` (a slice or an index array) of ``X_eff`` as dense float32."""

    def row_blocks(self, step: int):
        """``(start, rows)`` of ``X_eff`` in consecutive blocks of ``step`` rows."""
        n = self.num_nodes
        for s in range(0, n, step):
            yield s, self.dense_rows(slice(s, min(n, s + step)))

    def to_dense(self) -> np.ndarray:
        """``X_eff`` as one dense float32 array (the escape hatch: ``np.asarray(x)``)."""
        return self.dense_rows(slice(None))

    def __array__(self, dtype=None, copy=None):
        out = self.to_dense()
        return out if dtype is None else out.astype(dtype, copy=False)

    def all_finite(self) -> bool:
        """No NaN or inf in the stored rows or the statistics (read in row blocks)."""
        ok = self.statistics is None or bool(np.isfinite(self.statistics.mean).all() and
                                             np.isfinite(self.statistics.std).all())
        return ok and self._rows_finite()

    @abc.abstractmethod
    def _rows_finite(self) -> bool:
        ...

    def density(self, sample_rows: int = 4096) -> float:
        """Nonzero share of ``X_eff`` (dense stores: of up to ``sample_rows`` evenly spaced rows)."""
        n, f = self.shape
        if n * f == 0:
            return 0.0
        rows = np.unique(np.linspace(0, n - 1, min(n, sample_rows)).astype(np.int64))
        return int(np.count_nonzero(self.dense_rows(rows))) / (rows.size * f)

    # ---------------------------------------------------------------- model input
    def gather(self, nodes):
        """The model input of rows ``nodes``: a float32 tensor on :attr:`device` (CSR stores:
        their rows, which the first layer multiplies sparse x dense)."""
        t = torch.from_numpy(self.dense_rows(np.asarray(nodes)))
        return t if self.device.type == "cpu" else t.to(self.device, non_blocking=True)

    @abc.abstractmethod
    def as_input(self):
        """The whole matrix as a model input (full-graph evaluation): a tensor over the rows,
        zero-copy where they are already what the model reads; a CSR store itself."""

    def __matmul__(self, weight: torch.Tensor) -> torch.Tensor:
        """``X_eff @ W`` (n x F times F x h): the first layer's product, computed in row blocks
        (never a second (n, F) copy). Not differentiable in ``W`` (evaluation)."""
        check_weight(self, weight)
        n = self.num_nodes
        w = weight.detach()
        out = torch.empty(n, w.shape[1], dtype=w.dtype, device=w.device)
        for s, rows in self.row_blocks(block_rows(self.num_features)):
            block = torch.from_numpy(rows).to(w.device, w.dtype)
            torch.mm(block, w, out=out[s:s + rows.shape[0]])
        return out

    def to(self, device=None, **_) -> "FeatureStore":
        """This store with its gathered rows landing on ``device`` (the rows themselves stay
        where they are)."""
        device = torch.device(device or "cpu")
        if device == self.device:
            return self
        out = object.__new__(type(self))
        out.__dict__.update(self.__dict__)
        out.device = device
        return out

    # ---------------------------------------------------------------- standardization
    @abc.abstractmethod
    def fit_statistics(self, nodes) -> Statistics:
        """Column mean and population std (0 -> 1) of the stored rows ``nodes`` (float64)."""

    @abc.abstractmethod
    def with_statistics(self, stats: Statistics) -> "FeatureStore":
        """The store of the stored rows standardized by ``stats``."""

    def standardize(self, nodes) -> "FeatureStore":
        """The store standardized by the statistics of rows ``nodes`` (GraphSAINT's
        preprocessing: a StandardScaler fitted on the training nodes)."""
        return self.with_statistics(self.fit_statistics(nodes))

    # ---------------------------------------------------------------- description
    def describe(self) -> str:
        """How the rows are held (``data info``)."""
        return "dense, memory-mapped" if self.mapped else "dense"

    def __repr__(self) -> str:
        n, f = self.shape
        return (f"{type(self).__name__}({n} x {f}, standardized={self.standardized}, "
                f"{self.describe()})")


def check_weight(x: FeatureStore, weight) -> None:
    if not isinstance(weight, torch.Tensor) or weight.dim() != 2 \
            or weight.shape[0] != x.shape[1]:
        raise TypeError(f"{type(x).__name__} @ W: W must be a ({x.shape[1]}, h) tensor")
