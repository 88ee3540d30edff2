"""A separate test graph (inductive transfer): train on one graph, report the test metric on another
with the same feature space (``scalegnn train --test-data PATH``).

The test graph is prepared as the training graph was: the same feature representation (CSR or
dense) and, with ``params.standardize``, z-scores by the **training** graph's training-node
statistics (the model was fitted to inputs scaled that way; the test graph's own statistics
would shift every input). Its test nodes are its own test split when the data gives one
(GraphSAINT ``role.json``, OGB split files, heterophilous masks, a Dataset built with explicit
splits), else every node: a seeded split of a graph nobody trains on would only discard three
quarters of its labels. The model's evaluation is the trainer's layer-wise full-graph pass
(:func:`scalegnn.engine.evaluate.full_graph_logits`) on the test graph's own adjacency.

Requirements, each a one-line :class:`~scalegnn.errors.ConfigError`: the same feature width;
the same task kind (single- or multi-label); for multi-label the same label count, for
single-label no class id beyond the training graph's classes. Class names (CSV) and class
values (.mat) are matched by name, so two files that number their classes differently agree.
"""

from __future__ import annotations

import copy
import dataclasses

import numpy as np

from scalegnn.data.transforms import standardized_like
from scalegnn.engine.evaluate import full_graph_logits
from scalegnn.engine.metrics import compute_metrics
from scalegnn.errors import ConfigError
from scalegnn.ops import SparseAdj


def given_split(ds) -> bool:
    """True when the dataset's split comes with the data, not from a seed or a generator."""
    split = str(ds.meta.get("split", ""))
    return not split.startswith("seeded") and ds.meta.get("format") != "synthetic"


def _match_classes(test, train, where: str) -> np.ndarray:
    """The test graph's labels in the training graph's class numbering."""
    labels = test.labels
    for key in ("class_names", "class_values"):
        ours, theirs = train.meta.get(key), test.meta.get(key)
        if ours is None or theirs is None or list(ours) == list(theirs):
            continue
        lookup = {v: i for i, v in enumerate(ours)}
        unknown = [v for v in theirs if v not in lookup]
        if unknown:
            raise ConfigError(f"--test-data {where}: class {unknown[0]!r} does not occur in the "
                              f"training graph (classes: {', '.join(map(str, ours))})")
        return np.array([lookup[v] for v in theirs], dtype=np.int64)[labels]
    return labels


class TestGraph:
    """The other graph a run is tested on; ``metrics(model)`` is its test metric."""

    __test__ = False  # not a pytest class

    def __init__(self, test, train_raw, train_prepared, config):
        where = test.source or test.name
        if test.num_features != train_raw.num_features:
            raise ConfigError(f"--test-data {where}: {test.num_features} features, the training "
                              f"graph has {train_raw.num_features}; both graphs need the same "
                              f"feature space")
        if test.multilabel != train_raw.multilabel:
            kinds = {True: "multi-label", False: "single-label"}
            raise ConfigError(f"--test-data {where}: a {kinds[test.multilabel]} task, the "
                              f"training graph is {kinds[train_raw.multilabel]}")
        labels = _match_classes(test, train_raw, where)
        got = int(labels.shape[1]) if test.multilabel else \
            (int(labels.max()) + 1 if labels.size else 0)
        want = train_raw.num_classes
        if (got != want) if test.multilabel else (got > want):
            raise ConfigError(f"--test-data {where}: {got} classes, the training graph has "
                              f"{want}; both graphs need the same classes")
        x = standardized_like(test.features, train_raw, train_prepared) \
            if config.params["standardize"] else test.features
        self.dataset = dataclasses.replace(test, features=x, labels=labels)
        self.split = "its test split" if given_split(test) else "all nodes"
        self.nodes = test.test_idx if given_split(test) else \
            np.arange(test.num_nodes, dtype=np.int64)
        self.batch_rows = config.params["eval_batch_rows"]
        self._adj = None

    def metrics(self, model) -> dict:
        """Test metrics of ``model`` on this graph (layer-wise full-graph pass on the CPU)."""
        if next(model.parameters()).device.type != "cpu":
            model = copy.deepcopy(model).cpu()
        ds = self.dataset
        if self._adj is None:
            self._adj = SparseAdj.from_graph(ds.graph.row_normalized())
        scores = model.predict(full_graph_logits(model, ds.graph, ds.features,
                                                 self.batch_rows, adj=self._adj)).numpy()
        return compute_metrics(ds.labels[self.nodes], scores[self.nodes], ds.multilabel)

    def info(self) -> dict:
        ds = self.dataset
        return {"source": str(ds.source), "name": ds.name, "nodes": int(ds.num_nodes),
                "test_nodes": int(self.nodes.size), "test_nodes_from": self.split}
