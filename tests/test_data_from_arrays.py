"""Datasets built from arrays in memory (``Dataset.from_arrays`` / ``from_edge_index``): every
input type (scipy, dense, torch sparse, edge index, masks or index splits) gives the same
dataset, and bad arrays are refused in one line."""

import numpy as np
import torch

from conftest import make_tiny_dataset
from data_helpers import assert_same_graph, dense, refused, upper_edges
from scalegnn.data import Dataset
from scalegnn.data._common import seeded_split


# ------------------------------------------------------------------ Dataset from arrays
def test_from_arrays_and_edge_index_agree_across_input_types():
    ref = make_tiny_dataset()
    a = ref.graph.to_scipy()
    src, dst = upper_edges(ref.graph)
    masks = [np.isin(np.arange(ref.num_nodes), i) for i in (ref.train_idx, ref.val_idx,
                                                             ref.test_idx)]
    variants = [
        Dataset.from_arrays(a, ref.labels, ref.features, train=ref.train_idx, val=ref.val_idx,
                            test=ref.test_idx),
        Dataset.from_arrays(a.toarray(), ref.labels, ref.features, train=masks[0],
                            val=masks[1], test=masks[2]),
        Dataset.from_arrays(torch.from_numpy(a.toarray()).to_sparse(), torch.from_numpy(ref.labels),
                            torch.from_numpy(np.asarray(ref.features)), train=ref.train_idx,
                            val=ref.val_idx, test=ref.test_idx),
        Dataset.from_edge_index(torch.from_numpy(np.stack([src, dst])), ref.labels,
                                ref.features, train=torch.from_numpy(ref.train_idx),
                                val=ref.val_idx, test=ref.test_idx),
        Dataset.from_edge_index(np.stack([dst, src]), ref.labels.tolist(), ref.features,
                                num_nodes=ref.num_nodes, train=ref.train_idx,
                                val=ref.val_idx, test=ref.test_idx),
    ]
    for ds in variants:
        assert_same_graph(ds.graph, ref.graph)
        np.testing.assert_array_equal(dense(ds.features), ref.features)
        np.testing.assert_array_equal(ds.labels, ref.labels)
        for s in ("train", "val", "test"):
            np.testing.assert_array_equal(getattr(ds, f"{s}_idx"), getattr(ref, f"{s}_idx"))
    multi = Dataset.from_edge_index(np.stack([src, dst]), np.eye(ref.num_nodes, 3), seed=3)
    assert multi.multilabel and multi.metric == "f1_micro" and multi.meta["featureless"]
    np.testing.assert_array_equal(multi.train_idx, load_split(ref.num_nodes, 3))


def load_split(n, seed):
    return seeded_split(n, seed)[0]


def test_from_arrays_errors_are_one_line():
    ref = make_tiny_dataset()
    a = ref.graph.to_scipy()
    refused("adjacency is not square", Dataset.from_arrays, np.ones((3, 4)), [0, 1, 2])
    refused("39 labels for 40 nodes", Dataset.from_arrays, a, ref.labels[:-1])
    refused("features have 39 rows", Dataset.from_arrays, a, ref.labels, ref.features[:-1])
    refused("all three of train, val, test", Dataset.from_arrays, a, ref.labels,
            train=ref.train_idx)
    refused("edge_index must have shape (2, E)", Dataset.from_edge_index,
            np.zeros((3, 4), int), ref.labels)
    refused("out of range for 40 nodes", Dataset.from_edge_index, np.array([[0], [40]]),
            ref.labels)
    refused("features contain NaN", Dataset.from_arrays, a, ref.labels,
            np.full(ref.features.shape, np.nan))
    refused("class id -1 is negative", Dataset.from_arrays, a, -np.ones(40, int))
