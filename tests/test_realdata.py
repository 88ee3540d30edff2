"""Every dataset in ../shared/data loads with the counts its README states.

Counts are undirected edges after symmetrizing, dropping duplicates and self-loops
(citeseer.npz stores 124 self-loops, facebook_edges.csv 179; both are removed).
"""

import numpy as np
import pytest

from scalegnn.data import load_dataset

pytestmark = pytest.mark.realdata

# name: (path, nodes, undirected edges, features (None: structural), classes, multilabel,
#        metric, split sizes or None for seeded 50/25/25)
EXPECTED = {
    "cora": ("cora", 2708, 5278, 1433, 7, False, "accuracy", (140, 500, 1000)),
    "citeseer": ("citeseer", 3312, 4536, 3703, 6, False, "accuracy", None),
    "facebook": ("facebook", 22470, 170823, 4714, 4, False, "accuracy", None),
    "tolokers": ("tolokers", 11758, 519000, 10, 2, False, "roc_auc", (5879, 2939, 2940)),
    "blogcatalog": ("blogcatalog", 10312, 333983, None, 39, True, "f1_micro", None),
}


@pytest.mark.parametrize("name", list(EXPECTED))
def test_counts(shared_data, name):
    path, n, e, f, c, ml, metric, split = EXPECTED[name]
    ds = load_dataset(str(shared_data / path))
    assert ds.num_nodes == n
    assert ds.graph.num_edges == 2 * e
    assert ds.graph.is_symmetric() and ds.graph.is_sorted()
    src, dst = ds.graph.edge_index()
    assert not np.any(src == dst)
    if f is not None:
        assert ds.num_features == f
    else:
        assert ds.num_features == 33  # structural features
    assert ds.num_classes == c and ds.multilabel == ml and ds.metric == metric
    sizes = (ds.train_idx.size, ds.val_idx.size, ds.test_idx.size)
    assert sizes == (split if split else (n // 2, n // 4, n - n // 2 - n // 4))
    assert ds.features.dtype == np.float32


def test_cora_details(shared_data):
    ds = load_dataset(str(shared_data / "cora"), mmap=True)
    assert ds.features.mapped
    assert set(np.unique(ds.features)) <= {0.0, 1.0}
    assert ds.train_graph.num_edges == 42  # adj_train.npz: train-train edges only
    assert np.bincount(ds.labels[ds.train_idx]).tolist() == [20] * 7  # Planetoid: 20 per class


def test_facebook_classes_and_tolokers_splits(shared_data):
    fb = load_dataset(str(shared_data / "facebook"))
    assert fb.meta["class_names"] == ["company", "government", "politician", "tvshow"]
    t0 = load_dataset(str(shared_data / "tolokers"), split=0)
    t1 = load_dataset(str(shared_data / "tolokers"), split=1)
    assert not np.array_equal(t0.train_idx, t1.train_idx)
    assert np.array_equal(t0.graph.indices, t1.graph.indices)
