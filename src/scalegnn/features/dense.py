"""Dense feature stores: rows in memory, or rows in a memory-mapped ``.npy`` file.

:class:`DenseFeatures` holds a numpy array; standardizing it makes a standardized float32 copy
(GraphSAINT's preprocessing), so batches gather plain rows. :class:`MappedFeatures` holds a
(read-only) ``np.memmap`` and standardizes rows when they are read (a batch's gathered rows,
an evaluation row block), computed in float64 and rounded to float32: the same numbers as the
in-memory copy. So a feature file larger than the memory budget trains like an in-memory one;
only the page cache holds it.
"""

from __future__ import annotations

import numpy as np

from scalegnn.features.store import (FeatureStore, Statistics, apply_statistics, block_rows,
                                     column_statistics, read_only_tensor, row_index)
from scalegnn.io import read_npy_blocks, whole_npy_file


class _ArrayStore(FeatureStore):
    """A store over a dense 2-D ``array`` (its shape and dtype are the store's, so
    ``Dataset.validate`` can name a wrong one) with ``statistics`` (see the subclasses)."""

    def __init__(self, array: np.ndarray, *, statistics: Statistics | None = None):
        self.array = array
        self.statistics = statistics
        self.block_rows = block_rows(array.shape[1]) if array.ndim == 2 else 1

    @property
    def shape(self) -> tuple[int, int]:
        return tuple(self.array.shape)

    @property
    def ndim(self) -> int:
        return self.array.ndim

    @property
    def dtype(self) -> np.dtype:
        return self.array.dtype

    @property
    def nbytes(self) -> int:
        """Bytes of the rows (for a mapped file: on disk, resident only as page cache)."""
        return int(self.array.nbytes)

    def _rows_finite(self) -> bool:
        for s in range(0, self.shape[0], self.block_rows):
            if not np.isfinite(self.array[s:s + self.block_rows]).all():
                return False
        return True


class DenseFeatures(_ArrayStore):
    """Rows of a numpy array in memory. ``statistics``: the standardization already applied
    to ``array`` (a record, for transferring it to another graph), or None."""

    def __getitem__(self, key) -> np.ndarray:
        return self.array[key]

    def dense_rows(self, rows) -> np.ndarray:
        return np.ascontiguousarray(self.array[row_index(rows)], dtype=np.float32)

    def to_dense(self) -> np.ndarray:
        return np.asarray(self.array, dtype=np.float32)

    def as_input(self):
        return read_only_tensor(np.asarray(self.array))

    def fit_statistics(self, nodes) -> Statistics:
        if self.statistics is not None:
            raise ValueError("DenseFeatures: the rows are standardized already (their raw "
                             "values are gone)")
        return column_statistics(self.array, nodes)

    def with_statistics(self, stats: Statistics) -> "DenseFeatures":
        """A standardized float32 copy (float64 arithmetic per row chunk)."""
        if self.statistics is not None:
            raise ValueError("DenseFeatures: the rows are standardized already (their raw "
                             "values are gone)")
        return DenseFeatures(apply_statistics(self.array, stats), statistics=stats)


class MappedFeatures(_ArrayStore):
    """Rows of a dense (usually memory-mapped) float32 matrix ``array``, never written,
    standardized on read by ``statistics`` (None: raw)."""

    @property
    def mapped(self) -> bool:
        """Whether the rows live in a memory-mapped file."""
        return isinstance(self.array, np.memmap)

    def transform(self, raw: np.ndarray, cols=None) -> np.ndarray:
        """Raw rows (all columns, or ``cols``) standardized, as a new float32 array."""
        if self.statistics is None:
            return np.array(raw, dtype=np.float32)  # always a private, writable copy
        st = self.statistics if cols is None else self.statistics.columns(cols)
        return ((raw.astype(np.float64) - st.mean) / st.std).astype(np.float32)

    def __getitem__(self, key) -> np.ndarray:
        """``x[rows]`` (a slice, an index array or a boolean mask) or ``x[rows, cols]``:
        standardized float32 rows. Index arrays are read in sorted order (sequential page
        access on a memmap) and returned in the order asked for."""
        rows, cols = key if isinstance(key, tuple) and len(key) == 2 else (key, None)
        rows = row_index(rows)
        if isinstance(rows, slice):
            raw = self.array[rows]
        else:
            order = np.argsort(rows, kind="stable")
            raw = np.empty((rows.shape[0], self.array.shape[1]), dtype=np.float32)
            raw[order] = self.array[rows[order]]
        if cols is not None:
            raw = raw[:, cols]
        return self.transform(raw, cols)

    def dense_rows(self, rows) -> np.ndarray:
        return self[rows]

    def row_blocks(self, step: int):
        """Blocks of standardized rows; a whole mapped ``.npy`` file is read with plain file
        reads (pages read through the mapping would count in this process's resident set)."""
        source = whole_npy_file(self.array)
        if source is None:
            yield from super().row_blocks(step)
            return
        for s, raw in read_npy_blocks(source, step):
            yield s, self.transform(raw)

    def to_dense(self) -> np.ndarray:
        if self.statistics is None:
            return np.array(self.array, dtype=np.float32)
        return apply_statistics(self.array, self.statistics, chunk=self.block_rows)

    def as_input(self):
        """Raw rows stay mapped (a zero-copy tensor over the file); standardized ones are read
        into memory in row blocks (the propagation ``Â X`` needs random rows of ``X_eff``)."""
        if self.statistics is None:
            return read_only_tensor(self.array)
        return read_only_tensor(self.to_dense())

    def fit_statistics(self, nodes) -> Statistics:
        return column_statistics(self.array, nodes)

    def with_statistics(self, stats: Statistics) -> "MappedFeatures":
        """The same mapped rows, standardized by ``stats`` when read (no copy)."""
        return MappedFeatures(self.array, statistics=stats)
