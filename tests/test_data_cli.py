"""`scalegnn data info|synth|convert` through scalegnn.cli.main, plus one real subprocess."""

import json
import os
import subprocess
import sys

import numpy as np

from conftest import make_tiny_dataset
from scalegnn.cli import main
from scalegnn.data import load_dataset
from scalegnn.data.graphsaint import save_graphsaint


def test_info_json_and_text(tmp_path, capsys):
    ref = make_tiny_dataset()
    save_graphsaint(ref, tmp_path / "gs")
    assert main(["data", "info", str(tmp_path / "gs"), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    deg = ref.graph.degrees()
    assert info["nodes"] == ref.num_nodes
    assert info["edges"] == ref.graph.num_edges // 2
    assert info["degree"]["max"] == deg.max() and info["degree"]["min"] == deg.min()
    assert abs(info["degree"]["mean"] - deg.mean()) < 1e-9
    assert info["features"] == ref.num_features and info["classes"] == ref.num_classes
    assert info["splits"] == {"train": ref.train_idx.size, "val": ref.val_idx.size,
                              "test": ref.test_idx.size}
    assert info["bytes"]["features"] == ref.features.nbytes
    assert main(["data", "info", str(tmp_path / "gs")]) == 0
    text = capsys.readouterr().out
    assert f"nodes      {ref.num_nodes}" in text and "metric accuracy" in text


def test_synth_planted_and_kronecker(tmp_path, capsys):
    out = tmp_path / "p"
    assert main(["data", "synth", "planted", "--nodes", "300", "--classes", "3", "--features",
                 "5", "--seed", "2", "--out", str(out)]) == 0
    ds = load_dataset(str(out))
    ref = load_dataset("planted:nodes=300,classes=3,features=5,seed=2")
    np.testing.assert_array_equal(ds.graph.indices, ref.graph.indices)
    np.testing.assert_array_equal(ds.features, ref.features)
    np.testing.assert_array_equal(ds.labels, ref.labels)
    np.testing.assert_array_equal(ds.test_idx, ref.test_idx)
    assert main(["data", "synth", "kronecker", "--scale", "8", "--edge-factor", "4",
                 "--out", str(tmp_path / "k")]) == 0
    k = load_dataset(str(tmp_path / "k"))
    assert k.num_nodes == 256 and k.multilabel and k.num_classes == 121 and k.num_features == 50
    # refusing to overwrite is a user error: exit 2, one line
    capsys.readouterr()
    assert main(["data", "synth", "kronecker", "--scale", "8", "--out", str(tmp_path / "k")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "already exists" in err


def test_convert(tmp_path):
    ref = make_tiny_dataset(classes=2)
    src, dst = ref.graph.edge_index()
    masks = np.zeros((3, 1, ref.num_nodes), bool)
    masks[0, 0, :20], masks[1, 0, 20:30], masks[2, 0, 30:] = True, True, True
    np.savez(tmp_path / "t.npz", node_features=ref.features, node_labels=ref.labels,
             edges=np.stack([src, dst], 1), train_masks=masks[0], val_masks=masks[1],
             test_masks=masks[2])
    assert main(["data", "convert", str(tmp_path / "t.npz"), "--to", "graphsaint",
                 str(tmp_path / "gs")]) == 0
    ds = load_dataset(str(tmp_path / "gs"))
    np.testing.assert_array_equal(ds.graph.indices, ref.graph.indices)
    np.testing.assert_array_equal(ds.train_idx, np.arange(20))
    assert ds.metric == "roc_auc" and ds.name == "t"  # kept through scalegnn.json
    assert main(["data", "convert", str(tmp_path / "t.npz"), "--to", "ogb",
                 str(tmp_path / "x")]) == 2


def test_errors_exit_2_one_line(tmp_path, capsys):
    assert main(["data", "info", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("scalegnn: error: ") and err.count("\n") == 1 and "missing" in err


def test_subprocess_info_synthetic_and_error(tmp_path):
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    r = subprocess.run([sys.executable, "-m", "scalegnn", "data", "info", "planted:nodes=200",
                        "--json"], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["nodes"] == 200
    r = subprocess.run([sys.executable, "-m", "scalegnn", "data", "info",
                        str(tmp_path / "none")], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().count("\n") == 0
