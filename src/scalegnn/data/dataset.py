"""The ``Dataset`` type: full graph, training graph, features, labels, splits, task metadata."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from scalegnn.data import _common as C
from scalegnn.data._build import restrict_to_nodes
from scalegnn.data.arrays import arrays_fields, edge_index_fields
from scalegnn.errors import DataError
from scalegnn.features import FeatureStore, as_feature_store
from scalegnn.graph import Graph

METRICS = ("f1_micro", "accuracy", "roc_auc")
MAX_CLASS_ID = 2**24 - 1  # a single-label class id beyond this is a broken file, not a task


@dataclass
class Dataset:
    """A node-classification dataset.

    ``graph`` is the full graph (symmetric, sorted, no duplicates). ``labels`` is int64 of shape
    (N,) for single-label tasks or a 0/1 float32 matrix (N, C) for multi-label tasks.
    ``train_graph`` (inductive setting) keeps only train–train edges, with the same node ids.
    ``features`` is a :class:`~scalegnn.features.FeatureStore` (float32 (N, F)): whatever is
    assigned (a numpy array, a memmap, a scipy sparse matrix, a tensor, a store) is wrapped by
    :func:`~scalegnn.features.as_feature_store`.
    """

    graph: Graph
    features: FeatureStore
    labels: np.ndarray
    train_idx: np.ndarray
    val_idx: np.ndarray
    test_idx: np.ndarray
    name: str = "dataset"
    source: str = ""
    metric: str = "f1_micro"
    meta: dict = field(default_factory=dict)
    _train_graph: Graph | None = None
    # reads the training graph on first use (a GraphSAINT folder's adj_train.npz): a
    # transductive run never needs it, and at 2^24 nodes it is a gigabyte
    _train_graph_loader: Callable[[], Graph] | None = field(default=None, repr=False)

    def __setattr__(self, name, value):
        if name == "features":
            value = as_feature_store(value)
        super().__setattr__(name, value)

    def __post_init__(self):
        self.train_idx = np.asarray(self.train_idx, dtype=np.int64)
        self.val_idx = np.asarray(self.val_idx, dtype=np.int64)
        self.test_idx = np.asarray(self.test_idx, dtype=np.int64)

    # -------------------------------------------------------------- built from arrays
    @classmethod
    def from_arrays(cls, adjacency, labels, features=None, **kw) -> "Dataset":
        """A validated Dataset from an (N x N) adjacency (numpy, scipy sparse or torch),
        labels ((N,) class ids or an (N, C) 0/1 matrix) and features ((N, F); None ->
        structural). Keywords: ``train``/``val``/``test`` (index arrays or boolean masks; none
        -> seeded 50/25/25), ``seed``, ``name``, ``metric``, ``features_source``. The graph
        is symmetrized, deduplicated and stripped of self-loops. See
        :mod:`scalegnn.data.arrays`."""
        return C.finish(cls(**arrays_fields(adjacency, labels, features, **kw)))

    @classmethod
    def from_edge_index(cls, edge_index, labels, features=None, **kw) -> "Dataset":
        """As :meth:`from_arrays`, from a (2, E) ``edge_index`` (PyG's layout) and
        ``num_nodes`` (default: the number of labels)."""
        return C.finish(cls(**edge_index_fields(edge_index, labels, features, **kw)))

    # -------------------------------------------------------------- task metadata
    @property
    def num_nodes(self) -> int:
        return self.graph.num_nodes

    @property
    def num_features(self) -> int:
        return int(self.features.shape[1])

    @property
    def multilabel(self) -> bool:
        return self.labels.ndim == 2

    @property
    def num_classes(self) -> int:
        if self.multilabel:
            return int(self.labels.shape[1])
        return int(self.labels.max()) + 1 if self.labels.size else 0

    @property
    def has_train_graph(self) -> bool:
        """Whether a training graph came with the data (held or still on disk); without
        one, :attr:`train_graph` restricts the full graph to the training nodes."""
        return self._train_graph is not None or self._train_graph_loader is not None

    @property
    def train_graph(self) -> Graph:
        """Graph with only edges between training nodes (GraphSAINT's ``adj_train``)."""
        if self._train_graph is None and self._train_graph_loader is not None:
            self._train_graph = self._train_graph_loader()
            self._train_graph_loader = None
        if self._train_graph is None:  # straight from the CSR: no edge-list copies
            self._train_graph = restrict_to_nodes(self.graph, self.train_idx)
        return self._train_graph

    @train_graph.setter
    def train_graph(self, g: Graph):
        self._train_graph = g
        self._train_graph_loader = None

    # -------------------------------------------------------------- validation
    def validate(self) -> "Dataset":
        """Check shapes, ranges and splits; raise DataError naming the source and the problem."""
        src = self.source or self.name
        n = self.num_nodes
        if self.graph.num_cols != n:
            raise DataError(f"{src}: adjacency is not square ({n} x {self.graph.num_cols})")
        if self.features.ndim != 2 or self.features.shape[0] != n:
            raise DataError(f"{src}: features have shape {tuple(self.features.shape)}, expected "
                            f"({n}, F) to match the graph's {n} nodes")
        if self.features.dtype != np.float32:
            raise DataError(f"{src}: features must be float32, got {self.features.dtype}")
        if not self.features.all_finite():
            raise DataError(f"{src}: features contain NaN or inf")
        if self.labels.shape[0] != n:
            raise DataError(f"{src}: {self.labels.shape[0]} labels for {n} nodes")
        if self.multilabel:
            if not np.isin(np.unique(self.labels), (0, 1)).all():
                raise DataError(f"{src}: multi-label matrix must contain only 0 and 1")
        elif self.labels.size and self.labels.min() < 0:
            raise DataError(f"{src}: negative class id {self.labels.min()}")
        elif self.labels.size and self.labels.max() > MAX_CLASS_ID:
            raise DataError(f"{src}: class id {self.labels.max()} is absurd (classes are "
                            f"numbered 0..C-1 with C <= {MAX_CLASS_ID + 1})")
        if self.metric not in METRICS:
            raise DataError(f"{src}: metric must be one of {METRICS}, got {self.metric!r}")
        splits = {"train": self.train_idx, "val": self.val_idx, "test": self.test_idx}
        for name, idx in splits.items():
            if idx.size == 0:
                raise DataError(f"{src}: the {name} split is empty")
            if idx.min() < 0 or idx.max() >= n:
                raise DataError(f"{src}: {name} split has node id out of range [0, {n})")
            if np.bincount(idx).max() > 1:  # O(n); np.unique hashes, ~100x slower here
                raise DataError(f"{src}: {name} split lists a node twice")
        names = list(splits)
        owner = np.full(n, 3, np.int8)  # the first split holding each node (3: none)
        for j, name in enumerate(names):
            prev = owner[splits[name]]
            if (prev < 3).any():  # the earliest split it overlaps, as pairs in order would say
                raise DataError(f"{src}: {names[int(prev.min())]} and {name} splits overlap")
            owner[splits[name]] = j
        return self

    def info(self) -> dict:
        """Summary used by ``scalegnn data info``."""
        deg = self.graph.degrees()
        return {
            "name": self.name,
            "nodes": self.num_nodes,
            "edges": self.graph.num_edges // 2 if self.graph.is_symmetric() else self.graph.num_edges,
            "directed_entries": self.graph.num_edges,
            "degree": {"min": int(deg.min()) if deg.size else 0,
                       "max": int(deg.max()) if deg.size else 0,
                       "mean": float(deg.mean()) if deg.size else 0.0,
                       "median": float(np.median(deg)) if deg.size else 0.0},
            "features": self.num_features,
            "feature_storage": self.features.describe(),
            "classes": self.num_classes,
            "multilabel": self.multilabel,
            "metric": self.metric,
            "splits": {"train": int(self.train_idx.size), "val": int(self.val_idx.size),
                       "test": int(self.test_idx.size)},
            "bytes": {"graph": self.graph.nbytes, "features": int(self.features.nbytes),
                      "labels": int(self.labels.nbytes)},
        }

