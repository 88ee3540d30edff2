"""Training on one graph while testing on another (``--test-data``): the same numbers as a
reference evaluation, a run that learns on one graph and is tested on the other (kept on
resume), and mismatched test graphs or modes refused in one line."""

import json

import numpy as np
import pytest

from conftest import REPO_ROOT as REPO
from data_helpers import dense
from scalegnn.cli import main
from scalegnn.config import Config
from scalegnn.data import Dataset
from scalegnn.engine.metrics import compute_metrics
from scalegnn.errors import ConfigError
from scalegnn.train.modes import mode_for
from scalegnn.train.trainer import Trainer


# ------------------------------------------------------------------ a separate test graph
def two_graphs(n=400, classes=3, features=12, seed=0):
    """Two planted-partition graphs drawn independently but with the same class centroids:
    the same feature space and classes, different nodes and edges."""
    rng = np.random.default_rng(seed)
    mu = 2.0 * rng.standard_normal((classes, features))
    out = []
    for k in range(2):
        y = rng.integers(0, classes, n + 50 * k)
        src = rng.integers(0, y.size, 6 * y.size)
        dst = np.array([rng.choice(np.flatnonzero(y == y[s])) if rng.random() < 0.8
                        else rng.integers(0, y.size) for s in src])
        x = mu[y] + 1.5 * rng.standard_normal((y.size, features))
        out.append(Dataset.from_edge_index(np.stack([src, dst]), y, x, name=f"g{k}", seed=k))
    return out


def save_npz(ds, path):
    a = ds.graph.to_scipy()
    np.savez(path, adj_data=a.data, adj_indices=a.indices, adj_indptr=a.indptr,
             adj_shape=np.array(a.shape), attr_matrix=dense(ds.features), labels=ds.labels)


def small_config(epochs=3):
    cfg = Config.builtin() if hasattr(Config, "builtin") else Config()
    return cfg.override([f"phase.end={epochs}", "network.dim=16"])


@pytest.mark.parametrize("feature_format", ["dense", "sparse"])
def test_test_graph_matches_a_reference_evaluation(feature_format):
    """Testing on the training graph itself through --test-data's path gives the same numbers
    as scoring every node of the training graph directly (standardization included, for
    dense features and for CSR ones with the statistics folded into the first layer)."""
    a, _ = two_graphs()
    cfg = small_config().override([f"params.feature_format={feature_format}"]).validate()
    tr = Trainer(mode_for(a, cfg, seed=0, test_dataset=a), cfg, None, progress=False)
    result = tr.fit()
    assert result["test_data"]["test_nodes"] == a.num_nodes
    assert result["test_data"]["test_nodes_from"] == "all nodes"
    # reference: the trained (best) model's own full-graph scores of every node
    scores = tr.mode.scores(tr.model).numpy()
    want = compute_metrics(a.labels, scores, False)
    assert result["test"] == pytest.approx(want, abs=1e-7)
    assert tr.mode.test_graph.metrics(tr.model) == pytest.approx(want, abs=1e-7)


def test_train_on_one_graph_test_on_another(tmp_path, capsys):
    a, b = two_graphs()
    save_npz(a, tmp_path / "a.npz")
    save_npz(b, tmp_path / "b.npz")
    run = tmp_path / "run"
    assert main(["train", "--data", str(tmp_path / "a.npz"), "--test-data",
                 str(tmp_path / "b.npz"), "--epochs", "4", "--out", str(run), "--no-progress",
                 "--set", "network.dim=16"]) == 0
    out = capsys.readouterr().out
    assert "test is on" in out and "b.npz" in out
    summary = json.loads((run / "summary.json").read_text())
    info = summary["test_data"]
    assert info["test_nodes"] == b.num_nodes == 450 and info["test_nodes_from"] == "all nodes"
    assert summary["test"]["accuracy"] > 0.8  # the centroids transfer: the task is learnt
    assert summary["test"] != info["training_graph_test"]
    rec = json.loads((run / "run.json").read_text())
    assert rec["test_data"] == str(tmp_path / "b.npz")
    # resume keeps the test graph; a different one is refused
    assert main(["train", "--resume", str(run), "--epochs", "5", "--no-progress"]) == 0
    again = json.loads((run / "summary.json").read_text())
    assert again["test_data"]["source"] == str(tmp_path / "b.npz")
    assert main(["train", "--resume", str(run), "--test-data", str(tmp_path / "a.npz")]) == 2
    assert "a resumed run keeps its recorded value" in capsys.readouterr().err


def test_test_graph_mismatches_refused(tmp_path, capsys):
    a, b = two_graphs(n=120)
    save_npz(a, tmp_path / "a.npz")
    narrow = Dataset.from_edge_index(np.stack(b.graph.edge_index()), b.labels,
                                     dense(b.features)[:, :5])
    save_npz(narrow, tmp_path / "narrow.npz")
    more = Dataset.from_edge_index(np.stack(b.graph.edge_index()), b.labels + 1,
                                   dense(b.features))
    save_npz(more, tmp_path / "more.npz")
    for other, needle in (("narrow.npz", "5 features, the training graph has 12"),
                          ("more.npz", "4 classes, the training graph has 3")):
        assert main(["train", "--data", str(tmp_path / "a.npz"), "--test-data",
                     str(tmp_path / other), "--epochs", "1", "--out", str(tmp_path / other)
                     + ".run", "--no-progress"]) == 2
        err = capsys.readouterr().err
        assert needle in err and err.count("\n") == 1, err
    # modes without a separate test graph refuse it in one line
    shadow = Config.from_yaml(REPO / "configs" / "shared" / "cora_shadow.yml")
    with pytest.raises(ConfigError, match="GraphSAINT mode only"):
        mode_for(a, shadow, test_dataset=a)
    assert main(["dist-train", "--nprocs", "1", "--test-data", "x"]) == 2
    err = capsys.readouterr().err
    assert "--test-data: a separate test graph is supported by `scalegnn train`" in err
    assert err.count("\n") == 1
