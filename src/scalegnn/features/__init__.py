"""Node features behind one interface (the feature store).

``Dataset.features`` is always a :class:`FeatureStore`; three representations implement it:

===========================  ==================================================================
:class:`DenseFeatures`       a numpy array in memory (standardized: a float32 copy)
:class:`MappedFeatures`      a memory-mapped ``.npy`` (standardized on read, never copied)
:class:`SparseFeatures`      CSR (standardization folded into the first layer, never densified)
===========================  ==================================================================

The protocol (:mod:`scalegnn.features.store`): ``gather(nodes)`` (a batch's model input),
``as_input()`` (the whole matrix as a model input), ``dense_rows`` / ``row_blocks``,
``fit_statistics`` / ``with_statistics`` / ``standardize``, ``x @ W`` (the first layer's
product), ``nbytes`` / ``resident_bytes`` / ``row_bytes``, ``to(device)``. Which store a run
uses: :mod:`scalegnn.features.formats`.
"""

from scalegnn.features.dense import DenseFeatures, MappedFeatures
from scalegnn.features.formats import (FEATURE_FORMATS, MMAP_AUTO_SHARE, MMAP_FEATURES,
                                       SPARSE_MAX_DENSITY, append_columns, as_feature_store,
                                       check_feature_format, check_mmap_features,
                                       choose_representation, csr_features, should_map)
from scalegnn.features.sparse import SparseFeatures
from scalegnn.features.store import (BLOCK_BYTES, FeatureStore, Statistics, apply_statistics,
                                     block_rows, column_statistics)

__all__ = ["FeatureStore", "DenseFeatures", "MappedFeatures", "SparseFeatures", "Statistics",
           "as_feature_store", "choose_representation", "append_columns", "csr_features",
           "check_feature_format", "check_mmap_features", "should_map", "block_rows",
           "column_statistics", "apply_statistics", "FEATURE_FORMATS", "SPARSE_MAX_DENSITY",
           "MMAP_FEATURES", "MMAP_AUTO_SHARE", "BLOCK_BYTES"]
