"""Every loader round-trips a tiny dataset written in its format by an independent writer."""

import gzip
import json

import numpy as np
import pytest
import scipy.io as sio
import scipy.sparse as sp

from conftest import make_tiny_dataset
from scalegnn.data import detect_format, load_dataset
from scalegnn.data.graphsaint import load_graphsaint, save_graphsaint


def assert_same_graph(a, b):
    np.testing.assert_array_equal(a.indptr, b.indptr)
    np.testing.assert_array_equal(a.indices, b.indices)


def assert_same(ds, ref, splits=True):
    assert_same_graph(ds.graph, ref.graph)
    np.testing.assert_array_equal(ds.features, ref.features)
    assert ds.features.dtype == np.float32
    np.testing.assert_array_equal(ds.labels, ref.labels)
    if splits:
        for s in ("train_idx", "val_idx", "test_idx"):
            np.testing.assert_array_equal(getattr(ds, s), getattr(ref, s))


def upper_edges(g):
    src, dst = g.edge_index()
    keep = src < dst
    return src[keep], dst[keep]


# ------------------------------------------------------------------ GraphSAINT
@pytest.mark.parametrize("multilabel", [False, True])
def test_graphsaint_roundtrip(tmp_path, multilabel):
    ref = make_tiny_dataset(multilabel=multilabel)
    save_graphsaint(ref, tmp_path / "gs")
    ds = load_graphsaint(tmp_path / "gs")
    assert_same(ds, ref)
    assert ds.metric == ref.metric and ds.multilabel == multilabel
    assert_same_graph(ds.train_graph, ref.train_graph)
    assert detect_format(tmp_path / "gs") == "graphsaint"
    # scipy can read what we wrote
    a = sp.load_npz(tmp_path / "gs" / "adj_full.npz")
    np.testing.assert_array_equal(a.indices, ref.graph.indices)


def test_graphsaint_published_layout_and_mmap(tmp_path):
    """Files written by scipy.save_npz + json + np.save (as GraphSAINT publishes them)."""
    ref = make_tiny_dataset()
    d = tmp_path / "pub"
    d.mkdir()
    a = ref.graph.to_scipy()
    # published adjacencies may repeat entries and carry self-loops: the loader cleans them
    dup = sp.csr_matrix(a + sp.eye(a.shape[0], format="csr"))
    sp.save_npz(d / "adj_full.npz", dup)
    sp.save_npz(d / "adj_train.npz", ref.train_graph.to_scipy())
    json.dump({"tr": ref.train_idx.tolist(), "va": ref.val_idx.tolist(),
               "te": ref.test_idx.tolist()}, open(d / "role.json", "w"))
    json.dump({str(i): int(c) for i, c in enumerate(ref.labels)}, open(d / "class_map.json", "w"))
    np.save(d / "feats.npy", np.asarray(ref.features, dtype=np.float64))
    ds = load_graphsaint(d)
    assert_same(ds, ref)
    assert ds.meta["adj_full_cleanup"]["self_loops_removed"] == ref.num_nodes
    assert ds.name == "pub" and ds.metric == "accuracy"
    np.save(d / "feats.npy", np.asarray(ref.features))
    ds = load_graphsaint(d, mmap=True)
    assert ds.features.mapped and isinstance(ds.features.array, np.memmap)
    np.testing.assert_array_equal(ds.features, ref.features)


def test_graphsaint_symmetrizes_directed_adjacency(tmp_path):
    ref = make_tiny_dataset()
    save_graphsaint(ref, tmp_path / "gs")
    src, dst = upper_edges(ref.graph)
    n = ref.num_nodes
    sp.save_npz(tmp_path / "gs" / "adj_full.npz",
                sp.csr_matrix((np.ones(src.size), (src, dst)), shape=(n, n)))
    ds = load_graphsaint(tmp_path / "gs")
    assert ds.meta["adj_full_cleanup"]["symmetrized"]
    assert_same_graph(ds.graph, ref.graph)


# ------------------------------------------------------------------ OGB
def _savetxt_gz(path, arr, fmt):
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt") as f:
        np.savetxt(f, arr, fmt=fmt, delimiter=",")


@pytest.mark.parametrize("multilabel", [False, True])
def test_ogb_roundtrip(tmp_path, multilabel):
    ref = make_tiny_dataset(multilabel=multilabel)
    root = tmp_path / "dataset" / "ogbn_tiny"
    src, dst = upper_edges(ref.graph)
    _savetxt_gz(root / "raw" / "edge.csv.gz", np.stack([src, dst], 1), "%d")
    _savetxt_gz(root / "raw" / "node-feat.csv.gz", ref.features, "%.1f")
    lab = ref.labels if multilabel else ref.labels[:, None]
    _savetxt_gz(root / "raw" / "node-label.csv.gz", lab, "%d")
    _savetxt_gz(root / "raw" / "num-node-list.csv.gz", np.array([[ref.num_nodes]]), "%d")
    for name, idx in (("train", ref.train_idx), ("valid", ref.val_idx), ("test", ref.test_idx)):
        _savetxt_gz(root / "split" / "random" / f"{name}.csv.gz", idx[:, None], "%d")
    for spec in (root, tmp_path / "dataset"):  # the dataset folder or its parent
        assert detect_format(spec) == "ogb"
        ds = load_dataset(str(spec))
        assert_same(ds, ref)
        assert ds.meta["split"] == "random"
        assert ds.metric == ("f1_micro" if multilabel else "accuracy")


def test_ogb_unlabelled_nodes_outside_splits(tmp_path):
    ref = make_tiny_dataset()
    root = tmp_path / "o"
    src, dst = upper_edges(ref.graph)
    _savetxt_gz(root / "raw" / "edge.csv.gz", np.stack([src, dst], 1), "%d")
    y = ref.labels.astype(float)
    y[ref.test_idx] = np.nan
    _savetxt_gz(root / "raw" / "node-label.csv.gz", y[:, None], "%.0f")
    for name, idx in (("train", ref.train_idx), ("valid", ref.val_idx), ("test", ref.val_idx[:0])):
        _savetxt_gz(root / "split" / "s" / f"{name}.csv.gz", idx[:, None], "%d")
    from scalegnn.errors import DataError
    with pytest.raises(DataError, match="test split is empty"):
        load_dataset(str(root))
    _savetxt_gz(root / "split" / "s" / "test.csv.gz", ref.test_idx[:, None], "%d")
    with pytest.raises(DataError, match="has no label"):
        load_dataset(str(root))


# ------------------------------------------------------------------ npz
def test_gnn_benchmark_npz_roundtrip(tmp_path):
    ref = make_tiny_dataset()
    src, dst = upper_edges(ref.graph)  # one direction only, plus a self-loop
    n = ref.num_nodes
    a = sp.csr_matrix((np.ones(src.size + 1), (np.r_[src, 3], np.r_[dst, 3])), shape=(n, n))
    x = sp.csr_matrix(ref.features)
    np.savez(tmp_path / "tiny.npz", adj_data=a.data, adj_indices=a.indices, adj_indptr=a.indptr,
             adj_shape=a.shape, attr_data=x.data, attr_indices=x.indices, attr_indptr=x.indptr,
             attr_shape=x.shape, labels=ref.labels.astype(np.int8),
             node_names=np.array([f"n{i}" for i in range(n)]))
    ds = load_dataset(str(tmp_path / "tiny.npz"), seed=0)
    assert_same(ds, ref)  # the tiny dataset's split is the seeded 50/25/25 split with seed 0
    assert ds.meta["adj_cleanup"] == {"self_loops_removed": 1, "duplicates_removed": 0,
                                      "symmetrized": True}
    # dense attr_matrix works too; a different seed gives a different split
    np.savez(tmp_path / "dense.npz", adj_data=a.data, adj_indices=a.indices,
             adj_indptr=a.indptr, adj_shape=a.shape, attr_matrix=ref.features, labels=ref.labels)
    ds2 = load_dataset(str(tmp_path / "dense.npz"), seed=1)
    np.testing.assert_array_equal(ds2.features, ref.features)
    assert not np.array_equal(ds2.train_idx, ref.train_idx)


@pytest.mark.parametrize("classes", [2, 3])
def test_heterophilous_npz_roundtrip(tmp_path, classes):
    ref = make_tiny_dataset(classes=classes)
    src, dst = upper_edges(ref.graph)
    n = ref.num_nodes
    masks = np.zeros((3, 2, n), dtype=bool)
    rng = np.random.default_rng(5)
    for s in range(2):
        perm = rng.permutation(n)
        masks[0, s, perm[:20]] = masks[1, s, perm[20:30]] = masks[2, s, perm[30:]] = True
    np.savez(tmp_path / "h.npz", node_features=ref.features, node_labels=ref.labels,
             edges=np.stack([src, dst], 1), train_masks=masks[0], val_masks=masks[1],
             test_masks=masks[2])
    for s in range(2):
        ds = load_dataset(str(tmp_path / "h.npz"), split=s)
        assert_same(ds, ref, splits=False)
        np.testing.assert_array_equal(ds.train_idx, np.flatnonzero(masks[0, s]))
        np.testing.assert_array_equal(ds.test_idx, np.flatnonzero(masks[2, s]))
        assert ds.metric == ("roc_auc" if classes == 2 else "accuracy")


# ------------------------------------------------------------------ mat
def test_mat_roundtrip_structural_features(tmp_path):
    ref = make_tiny_dataset(multilabel=True)
    sio.savemat(tmp_path / "blog.mat", {"network": sp.csc_matrix(ref.graph.to_scipy(np.float64)),
                                        "group": sp.csc_matrix(ref.labels.astype(np.float64))})
    ds = load_dataset(str(tmp_path / "blog.mat"))
    assert_same_graph(ds.graph, ref.graph)
    np.testing.assert_array_equal(ds.labels, ref.labels)
    assert ds.multilabel and ds.metric == "f1_micro"
    assert ds.features.shape == (ref.num_nodes, 33)
    # deterministic, and the first column is the standardized log-degree
    again = load_dataset(str(tmp_path))  # the folder holding one .mat
    np.testing.assert_array_equal(ds.features, again.features)
    ld = np.log1p(ref.graph.degrees())
    np.testing.assert_allclose(ds.features[:, 0], (ld - ld.mean()) / ld.std(), rtol=1e-5,
                               atol=1e-5)


# ------------------------------------------------------------------ csv
def test_csv_roundtrip(tmp_path):
    ref = make_tiny_dataset(classes=3)
    names = np.array(["politician", "company", "tvshow"])  # sorted: company, politician, tvshow
    src, dst = upper_edges(ref.graph)
    d = tmp_path / "fb"
    d.mkdir()
    with open(d / "fb_edges.csv", "w") as f:
        f.write("id_1,id_2\n" + "".join(f"{u},{v}\n" for u, v in zip(src, dst)) + "5,5\n")
    feats = {str(i): np.flatnonzero(r).tolist() for i, r in enumerate(ref.features)}
    json.dump(feats, open(d / "fb.json", "w"))
    with open(d / "fb_target.csv", "w") as f:
        f.write("id,facebook_id,page_name,page_type\n")
        for i in np.random.default_rng(0).permutation(ref.num_nodes):  # any row order
            f.write(f'{i},{1000 + i},"Page, {i}",{names[ref.labels[i]]}\n')
    ds = load_dataset(str(d))
    want = np.array([1, 0, 2])[ref.labels]  # class ids in sorted order of the names
    assert_same_graph(ds.graph, ref.graph)
    np.testing.assert_array_equal(ds.labels, want)
    assert ds.meta["class_names"] == ["company", "politician", "tvshow"]
    width = int(max(max(v) for v in feats.values() if v)) + 1
    np.testing.assert_array_equal(ds.features, ref.features[:, :width])
    # the edge file itself works as the spec, tab separated without header too; given a
    # file, only the files named by the options are read beside it
    with open(d / "fb_edges.csv", "w") as f:
        f.write("".join(f"{u}\t{v}\n" for u, v in zip(src, dst)))
    ds2 = load_dataset(str(d / "fb_edges.csv"), options={"labels": str(d / "fb_target.csv"),
                                                        "features": str(d / "fb.json")})
    assert_same_graph(ds2.graph, ref.graph)
    np.testing.assert_array_equal(ds2.features, ds.features)


def test_csv_json_lists_and_npy_features(tmp_path):
    ref = make_tiny_dataset()
    src, dst = upper_edges(ref.graph)
    d = tmp_path / "g"
    d.mkdir()
    np.savetxt(d / "edges.csv", np.stack([src, dst], 1), fmt="%d", delimiter=",",
               header="source,target", comments="")
    np.savetxt(d / "labels.csv", ref.labels[:, None], fmt="%d", header="label", comments="")
    json.dump([np.flatnonzero(r).tolist() for r in ref.features], open(d / "feats.json", "w"))
    ds = load_dataset(str(d))
    np.testing.assert_array_equal(ds.labels, ref.labels)
    np.testing.assert_array_equal(ds.features[:, :ref.num_features], ref.features[:, :ds.num_features])
    (d / "feats.json").unlink()
    np.save(d / "feats.npy", ref.features)
    assert_same(load_dataset(str(d)), ref)


def test_standardize_features_matches_numpy():
    from scalegnn.data.transforms import standardize_features
    ref = make_tiny_dataset()
    x = np.asarray(ref.features, dtype=np.float64)
    mu, sd = x[ref.train_idx].mean(0), x[ref.train_idx].std(0)
    sd[sd == 0] = 1
    out = standardize_features(ref)
    np.testing.assert_allclose(out.features, (x - mu) / sd, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(ref.features, make_tiny_dataset().features)  # input untouched
    assert out.features.dtype == np.float32 and out.meta["standardized"]
    np.testing.assert_allclose(out.features[ref.train_idx].mean(0), 0, atol=1e-5)
