"""Dataset transforms that return a new Dataset (the input is never modified).

:func:`standardize_features` reproduces GraphSAINT's preprocessing (``utils.load_data`` fits a
StandardScaler on the training nodes' features and transforms all nodes):

    x'_v = (x_v - mean_{u in train} x_u) / std_{u in train} x_u     (std 0 -> 1)

Loaders return features unchanged; call this explicitly where the reference setup needs it.
How the result is held depends on the feature store
(:meth:`~scalegnn.features.FeatureStore.with_statistics`): an in-memory dense matrix becomes a
standardized float32 copy, a memory-mapped one is standardized on read (no (n x F) copy in
memory), a CSR one stays CSR and the first layer folds the statistics into its weights.

:func:`prepared_dataset` is the dataset as every single-process mode trains on it.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from scalegnn.data.dataset import Dataset
from scalegnn.features import choose_representation


def standardize_features(ds: Dataset, nodes=None) -> Dataset:
    """Dataset with features standardized by the statistics of ``nodes`` (default: train)."""
    nodes = ds.train_idx if nodes is None else np.asarray(nodes, dtype=np.int64)
    return dataclasses.replace(ds, features=ds.features.standardize(nodes),
                               meta={**ds.meta, "standardized": True})


def prepared_dataset(dataset: Dataset, config) -> Dataset:
    """The dataset as every single-process mode trains on it: features in the representation
    ``params.feature_format`` picks (CSR or dense,
    :func:`~scalegnn.features.choose_representation`) and standardized by the training nodes'
    statistics when ``params.standardize`` (GraphSAINT's preprocessing)."""
    x = choose_representation(dataset.features, config.params["feature_format"])
    if x is not dataset.features:
        dataset = dataclasses.replace(dataset, features=x)
    if config.params["standardize"] and not dataset.meta.get("standardized"):
        return standardize_features(dataset)
    return dataset


def standardized_like(features, train_raw: Dataset, train_prepared: Dataset):
    """Another graph's ``features`` prepared as the training graph's were: the same
    representation and, when the training graph was standardized by this run, the training
    nodes' statistics (not the other graph's own), as GraphSAINT treats unseen nodes."""
    tx = train_prepared.features
    x = choose_representation(features, "sparse" if tx.sparse else "dense")
    if tx.statistics is None or train_raw.meta.get("standardized"):
        return x
    return x.with_statistics(tx.statistics)
