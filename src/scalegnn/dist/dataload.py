"""Dataset access for the distributed tools (a thin seam over ``scalegnn.data.load_dataset``,
so partitioning, dist-train and the benchmark load data one way)."""

from __future__ import annotations

from scalegnn.data import load_dataset
from scalegnn.data.dataset import Dataset


def load(spec, seed: int = 0, options: dict | None = None, split: int = 0) -> Dataset:
    """Load ``spec`` (a path, a generator spec such as ``kronecker:17:16``, or a Dataset) with
    the loader ``options`` of :mod:`scalegnn.data.options` (and split ``split``)."""
    if isinstance(spec, Dataset):
        return spec
    return load_dataset(spec, seed=seed, options=options, split=split)
