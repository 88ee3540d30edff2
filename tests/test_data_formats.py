"""Data as published: every format round-trips a small file the test writes, loader options
(CLI flags, dataset spec .yml, recorded and kept on resume) and featureless graphs.
Dataset.from_arrays/from_edge_index: ``test_data_from_arrays.py``; training on one graph while
testing on another (--test-data): ``test_separate_test_graph.py``."""

import json

import numpy as np
import pytest
import scipy.io as sio
import scipy.sparse as sp

import scalegnn.data.options as O
from conftest import make_tiny_dataset
from data_helpers import assert_same_graph, dense, refused, upper_edges
from scalegnn.cli import main
from scalegnn.data import load_dataset


# ------------------------------------------------------------------ gnn-benchmark, dotted keys
@pytest.mark.parametrize("sparse_attr", [True, False])
def test_gnn_benchmark_dotted_keys_skip_object_entries(tmp_path, sparse_attr):
    ref = make_tiny_dataset()
    a = sp.csr_matrix(ref.graph.to_scipy())
    x = sp.csr_matrix(ref.features)
    arrays = {"adj_matrix.data": a.data, "adj_matrix.indices": a.indices,
              "adj_matrix.indptr": a.indptr, "adj_matrix.shape": np.array(a.shape),
              "labels": ref.labels,
              # object entries of the published files: pickled dicts, never to be unpickled
              "idx_to_node": np.array({0: "paper-0"}, dtype=object),
              "idx_to_class": np.array({0: "Neural_Networks"}, dtype=object)}
    if sparse_attr:
        arrays.update({"attr_matrix.data": x.data, "attr_matrix.indices": x.indices,
                       "attr_matrix.indptr": x.indptr, "attr_matrix.shape": np.array(x.shape)})
    else:
        arrays["attr_matrix"] = ref.features
    np.savez(tmp_path / "cora_ml.npz", **arrays)
    ds = load_dataset(str(tmp_path / "cora_ml.npz"))
    assert_same_graph(ds.graph, ref.graph)
    np.testing.assert_array_equal(dense(ds.features), ref.features)
    np.testing.assert_array_equal(ds.labels, ref.labels)
    assert ds.meta["format"] == "gnn-benchmark"


# ------------------------------------------------------------------ MUSAE twitch-style folder
def twitch_folder(tmp_path, ref):
    """musae_ENGB_*: edges 'from,to', features JSON by new_id, target CSV whose node ids are
    in new_id (id is the platform's user id) and whose class is 'mature' (True/False)."""
    d = tmp_path / "ENGB"
    d.mkdir()
    src, dst = upper_edges(ref.graph)
    (d / "musae_ENGB_edges.csv").write_text(
        "from,to\n" + "".join(f"{u},{v}\n" for u, v in zip(src, dst)))
    feats = {str(i): np.flatnonzero(r).tolist() for i, r in enumerate(ref.features)}
    (d / "musae_ENGB_features.json").write_text(json.dumps(feats))
    rows = ["id,days,mature,views,partner,new_id"]
    for i in np.random.default_rng(1).permutation(ref.num_nodes):
        mature = "True" if ref.labels[i] else "False"
        rows.append(f"{73045350 + 17 * i},{100 + i % 7},{mature},{1000 + i},False,{i}")
    (d / "musae_ENGB_target.csv").write_text("\n".join(rows) + "\n")
    return d


def test_musae_twitch_columns_by_flag_or_spec(tmp_path, capsys):
    ref = make_tiny_dataset(classes=2)
    d = twitch_folder(tmp_path, ref)
    # unchanged, the class column is open among five candidates: the error names the choice
    refused("--label-column", load_dataset, str(d))
    # with the class chosen, the default id column 'id' holds user ids, not 0..N-1
    refused("--id-column", load_dataset, str(d), options={"label_column": "mature"})
    opts = {"id_column": "new_id", "label_column": "mature"}
    ds = load_dataset(str(d), options=opts)
    assert_same_graph(ds.graph, ref.graph)
    np.testing.assert_array_equal(ds.labels, ref.labels)  # False < True
    assert ds.meta["class_names"] == ["False", "True"]
    width = max(max(v) for v in map(np.flatnonzero, ref.features) if len(v)) + 1
    np.testing.assert_array_equal(dense(ds.features), ref.features[:, :width])
    # a column with one class per node is refused, naming the flag
    refused("every node its own class", load_dataset, str(d),
            options={"id_column": "new_id", "label_column": "views"})
    refused("no column 'maturity'", load_dataset, str(d),
            options={"id_column": "new_id", "label_column": "maturity"})
    # the same choices in a dataset spec file (paths relative to it), the CLI overriding it
    (tmp_path / "engb.yml").write_text("path: ENGB\nid_column: new_id\nlabel_column: mature\n")
    ds2 = load_dataset(str(tmp_path / "engb.yml"))
    np.testing.assert_array_equal(ds2.labels, ds.labels)
    refused("every node its own class", load_dataset, str(tmp_path / "engb.yml"),
            options={"label_column": "views"})
    # spec files are checked like flags
    for text, needle in (("id_column: new_id\n", "a mapping with a 'path' key"),
                         ("path: ENGB\nid_colum: new_id\n", "unknown option 'id_colum'"),
                         ("path: [ENGB\n", "not a valid YAML dataset spec"),
                         ("path: ENGB\nlabel_column: {a: 1}\n", "must be a name")):
        (tmp_path / "bad.yml").write_text(text)
        refused(needle, load_dataset, str(tmp_path / "bad.yml"))
    refused("missing dataset spec file", load_dataset, str(tmp_path / "none.yml"))
    # and as flags of `data info`
    assert main(["data", "info", str(d), "--json", "--id-column", "new_id",
                 "--label-column", "mature"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["nodes"] == ref.num_nodes and info["classes"] == 2


def test_facebook_labels_by_flag(shared_data):
    """The published MUSAE facebook folder: the default class column, or another by flag."""
    ds = load_dataset(str(shared_data / "facebook"))
    assert ds.meta["label_column"] == "page_type" and ds.num_classes == 4
    refused("most classes would hold one node", load_dataset, str(shared_data / "facebook"),
            options={"label_column": "page_name"})


# ------------------------------------------------------------------ MATLAB variables
def test_mat_facebook100_attributed_and_harp(tmp_path):
    ref = make_tiny_dataset(classes=3)
    n = ref.num_nodes
    adj = sp.csc_matrix(ref.graph.to_scipy(np.float64))
    # Facebook100: A + local_info (status, gender, major, ...); the class column is a choice
    info = np.stack([np.arange(n) % 5, ref.labels + 1, 100 + np.arange(n)], 1).astype(float)
    sio.savemat(tmp_path / "Caltech36.mat", {"A": adj, "local_info": info})
    path = str(tmp_path / "Caltech36.mat")
    refused("--labels", load_dataset, path)  # no label-like variable: name it
    refused("--label-column", load_dataset, path, options={"labels": "local_info"})
    ds = load_dataset(path, options={"labels": "LOCAL_INFO", "label_column": 1})
    assert_same_graph(ds.graph, ref.graph)
    np.testing.assert_array_equal(ds.labels, ref.labels)  # 1..3 -> 0..2
    assert not ds.multilabel and ds.metric == "accuracy" and ds.meta["class_values"] == [1, 2, 3]
    assert ds.meta["featureless"] and ds.num_features == 33
    refused("not a column", load_dataset, path, options={"labels": "local_info",
                                                         "label_column": 3})
    # attributed networks: Network / Attributes / Label (1-based column), case-insensitive
    sio.savemat(tmp_path / "attr.mat", {"Network": adj, "Attributes": sp.csc_matrix(ref.features),
                                        "Label": (ref.labels + 1)[:, None].astype(float)})
    ds = load_dataset(str(tmp_path / "attr.mat"))
    np.testing.assert_array_equal(ds.labels, ref.labels)
    np.testing.assert_array_equal(dense(ds.features), ref.features)
    assert not ds.multilabel and "featureless" not in ds.meta
    # HARP-like A / F with a row-vector label, and any names through the flags
    sio.savemat(tmp_path / "harp.mat", {"A": adj, "F": ref.features,
                                        "group": ref.labels[None, :].astype(float)})
    ds = load_dataset(str(tmp_path / "harp.mat"))
    np.testing.assert_array_equal(dense(ds.features), ref.features)
    np.testing.assert_array_equal(ds.labels, ref.labels)
    sio.savemat(tmp_path / "named.mat", {"adj_mat": adj, "xs": ref.features,
                                         "ys": ref.labels.astype(float)})
    ds = load_dataset(str(tmp_path / "named.mat"),
                      options={"adjacency": "adj_mat", "features": "xs", "labels": "ys"})
    np.testing.assert_array_equal(ds.labels, ref.labels)
    refused("no variable 'nope'", load_dataset, str(tmp_path / "named.mat"),
            options={"adjacency": "nope"})
    # an option the format does not read is refused, not ignored
    refused("does not apply to mat datasets", load_dataset, str(tmp_path / "attr.mat"),
            options={"id_column": "new_id"})


# ------------------------------------------------------------------ plain edge lists
@pytest.mark.parametrize("name,text", [
    ("com-tiny.ungraph.txt", "# Undirected graph: com-tiny\n# Nodes: {n} Edges: {m}\n"
                             "# FromNodeId\tToNodeId\n{tab}"),
    ("tiny.edges", "% sym unweighted\n% {m} {n} {n}\n{space_w}"),
    ("tiny.txt", "{space}"),
])
def test_plain_edge_lists(tmp_path, name, text):
    ref = make_tiny_dataset()
    src, dst = upper_edges(ref.graph)
    body = {"tab": "".join(f"{u}\t{v}\n" for u, v in zip(src, dst)),
            "space": "".join(f"{u} {v}\n" for u, v in zip(src, dst)),
            "space_w": "".join(f"{u} {v} 1.0\n" for u, v in zip(src, dst))}
    (tmp_path / name).write_text(text.format(n=ref.num_nodes, m=src.size, **body))
    refused("--labels", load_dataset, str(tmp_path / name))
    (tmp_path / "classes.lst").write_text("# node class\n" + "".join(
        f"{i} {y}\n" for i, y in reversed(list(enumerate(ref.labels)))))
    ds = load_dataset(str(tmp_path / name), options={"labels": str(tmp_path / "classes.lst")})
    assert_same_graph(ds.graph, ref.graph)
    np.testing.assert_array_equal(ds.labels, ref.labels)
    assert ds.meta["featureless"]


# ------------------------------------------------------------------ featureless graphs
def test_features_source_choices(tmp_path, capsys, monkeypatch):
    ref = make_tiny_dataset()
    sio.savemat(tmp_path / "g.mat", {"network": sp.csc_matrix(ref.graph.to_scipy(np.float64)),
                                     "group": ref.labels.astype(float)})
    path = str(tmp_path / "g.mat")
    assert main(["data", "info", path]) == 0
    out = capsys.readouterr().out
    assert "no node features in the data: using structural" in out and "--features-source" in out
    one = load_dataset(path, options={"features_source": "onehot"})
    np.testing.assert_array_equal(dense(one.features), np.eye(ref.num_nodes))
    assert "featureless" not in one.meta
    np.save(tmp_path / "x.npy", ref.features)
    filed = load_dataset(path, options={"features_source": str(tmp_path / "x.npy")})
    np.testing.assert_array_equal(dense(filed.features), ref.features)
    # also replaces a file's own features, e.g. on a generated graph
    gen = load_dataset("planted:nodes=40,features=5", options={"features_source": "onehot"})
    assert gen.features.shape == (40, 40)
    monkeypatch.setattr(O, "ONEHOT_MAX_NODES", 10)
    refused("above the limit of 10", load_dataset, path, options={"features_source": "onehot"})
    refused("expected structural, onehot or a .npy", load_dataset, path,
            options={"features_source": "random"})
    refused("unknown option 'feature_source'", load_dataset, path,
            options={"feature_source": "onehot"})


def test_training_log_says_featureless_once(tmp_path, capsys):
    ref = make_tiny_dataset(n=60)
    sio.savemat(tmp_path / "g.mat", {"network": sp.csc_matrix(ref.graph.to_scipy(np.float64)),
                                     "group": ref.labels.astype(float)})
    assert main(["train", "--data", str(tmp_path / "g.mat"), "--epochs", "1", "--out",
                 str(tmp_path / "run"), "--no-progress", "--set", "network.dim=8"]) == 0
    err = capsys.readouterr().err
    assert err.count("no node features in the data") == 1
    rec = json.loads((tmp_path / "run" / "run.json").read_text())
    assert rec["features"].startswith("structural")


def test_data_options_recorded_and_kept_on_resume(tmp_path, capsys):
    ref = make_tiny_dataset(n=80, classes=2)
    d = twitch_folder(tmp_path, ref)
    run = tmp_path / "run"
    flags = ["--id-column", "new_id", "--label-column", "mature"]
    assert main(["train", "--data", str(d), *flags, "--epochs", "1", "--out", str(run),
                 "--no-progress", "--set", "network.dim=8"]) == 0
    rec = json.loads((run / "run.json").read_text())
    assert rec["data_options"] == {"id_column": "new_id", "label_column": "mature"}
    capsys.readouterr()
    assert main(["train", "--resume", str(run), "--epochs", "2", "--no-progress"]) == 0
    assert json.loads((run / "summary.json").read_text())["epochs"] == 2
    assert main(["train", "--resume", str(run), "--label-column", "partner"]) == 2
    assert "keeps its recorded data options" in capsys.readouterr().err
