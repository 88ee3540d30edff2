"""Inference from a run directory (``scalegnn.load_run``, ``scalegnn predict`` / ``embed``).

The property: the written scores are the evaluation's, so the metrics computed from the file
equal the run's ``summary.json`` test metrics; embeddings are the classifier's input (the
classifier applied to them gives the same scores). Plus the file schemas, node selection and the
one-line refusals (another feature width, changed data, bad node ids, unknown output types).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import scalegnn
from scalegnn.cli import main as cli_main
from scalegnn.config import Config
from scalegnn.data import load_dataset
from scalegnn.engine.metrics import compute_metrics
from scalegnn.train.trainer import Trainer

DATA = "planted:nodes=400,classes=3,features=16"
MULTI = "planted:nodes=300,classes=4,features=12,multilabel=1"
SHADOW = {"extractors": [{"kind": "khop", "depth": 2, "budget": 6}], "readout": "center+mean",
          "batch_size": 32, "eval_batch_size": 64, "cache_dir": "none"}


def train(out, data=DATA, shadow=False, epochs=3):
    cfg = Config().override([f"phase.end={epochs}", "phase.num_root=20", "network.dim=32"])
    if shadow:
        cfg.sections["shadow"] = dict(SHADOW)
        cfg.validate()
    Trainer(load_dataset(data), cfg, out, seed=2, progress=False,
            run_info={"data": data, "split": 0, "threads": 0}).fit()
    return json.loads((out / "summary.json").read_text())


@pytest.fixture(scope="module")
def saint_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("inf") / "saint"
    return out, train(out)


@pytest.fixture(scope="module")
def shadow_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("inf") / "shadow"
    return out, train(out, shadow=True)


def read_csv(path):
    header = path.read_text().splitlines()[0].split(",")
    return header, np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)


def cli(*args, capsys):
    rc = cli_main([str(a) for a in args])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def one_line_error(rc, err):
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert rc == 2 and len(lines) == 1 and lines[0].startswith("scalegnn: error: "), err
    return lines[0]


@pytest.mark.parametrize("which", ["saint_run", "shadow_run"])
def test_predict_reproduces_the_runs_test_metrics(which, request, tmp_path, capsys):
    run_dir, summary = request.getfixturevalue(which)
    ds = load_dataset(DATA)
    rc, out, err = cli("predict", run_dir, "--split", "test", "--out", tmp_path / "p.csv",
                       capsys=capsys)
    assert rc == 0, err
    assert f"(summary.json: {summary['test'][summary['metric']]:.4f})" in out
    header, table = read_csv(tmp_path / "p.csv")
    c = ds.num_classes
    assert header == ["node", "label"] + [f"score_{j}" for j in range(c)]
    nodes = table[:, 0].astype(np.int64)
    assert np.array_equal(nodes, ds.test_idx)
    scores = table[:, 2:].astype(np.float32)
    assert np.array_equal(table[:, 1].astype(np.int64), scores.argmax(1))
    assert compute_metrics(ds.labels[nodes], scores, False) == summary["test"]
    # .npy: the same matrix
    rc, _, err = cli("predict", run_dir, "--split", "test", "--out", tmp_path / "p.npy",
                     capsys=capsys)
    assert rc == 0, err
    assert np.array_equal(np.load(tmp_path / "p.npy", allow_pickle=False), scores)


@pytest.mark.parametrize("which", ["saint_run", "shadow_run"])
def test_embeddings_are_the_classifiers_input_and_rows_follow_the_selection(which, request,
                                                                            tmp_path, capsys):
    run_dir, _ = request.getfixturevalue(which)
    run = scalegnn.load_run(run_dir)
    pick = np.array([17, 3, 250, 3, 399], dtype=np.int64)
    (tmp_path / "ids.txt").write_text("# some nodes\n17\n3, 250\n3 399\n")
    rc, out, err = cli("embed", run_dir, "--nodes", tmp_path / "ids.txt", "--out",
                       tmp_path / "e.csv", capsys=capsys)
    assert rc == 0, err
    header, table = read_csv(tmp_path / "e.csv")
    assert header[0] == "node" and len(header) == 1 + run.model.embed_dim
    assert np.array_equal(table[:, 0].astype(np.int64), pick)
    emb = torch.from_numpy(table[:, 1:].astype(np.float32))
    if which == "saint_run":  # shaDow's readout (center+mean) is not itself normalized
        assert torch.allclose(emb.norm(dim=1), torch.ones(len(pick)), atol=1e-5)
    with torch.no_grad():
        from_emb = run.model.predict(run.model.classifier(emb)).numpy()
    full = run.scores()  # every node, one pass: a row does not depend on the others asked for
    assert np.allclose(from_emb, full[pick], atol=1e-6)
    assert np.allclose(run.scores(pick), full[pick], atol=1e-6)


def test_multilabel_scores_and_labels(tmp_path, capsys):
    run_dir = tmp_path / "multi"
    summary = train(run_dir, data=MULTI)
    ds = load_dataset(MULTI)
    rc, _, err = cli("predict", run_dir, "--split", "test", "--out", tmp_path / "m.csv",
                     capsys=capsys)
    assert rc == 0, err
    header, table = read_csv(tmp_path / "m.csv")
    c = ds.num_classes
    assert header == ["node"] + [f"label_{j}" for j in range(c)] + [f"score_{j}" for j in range(c)]
    scores = table[:, 1 + c:].astype(np.float32)
    assert np.array_equal(table[:, 1:1 + c].astype(bool), scores > 0.5)
    assert compute_metrics(ds.labels[ds.test_idx], scores, True) == summary["test"]


def test_new_graph_of_the_same_width_is_predicted_and_another_width_refused(saint_run, tmp_path,
                                                                            capsys):
    run_dir, _ = saint_run
    other = "planted:nodes=250,classes=3,features=16,seed=9"
    rc, out, err = cli("predict", run_dir, "--data", other, "--out", tmp_path / "n.npy",
                       capsys=capsys)
    assert rc == 0, err
    assert np.load(tmp_path / "n.npy").shape == (250, 3)
    rc, _, err = cli("predict", run_dir, "--data", "planted:nodes=250,features=20", "--out",
                     tmp_path / "w.npy", capsys=capsys)
    line = one_line_error(rc, err)
    assert "20 features per node" in line and "16" in line
    assert not (tmp_path / "w.npy").exists()


def test_moved_data_is_found_with_data_and_is_the_runs_own(tmp_path, capsys):
    from scalegnn.data.graphsaint import save_graphsaint
    moved = tmp_path / "graph"
    save_graphsaint(load_dataset(DATA), moved)
    run_dir = tmp_path / "run"
    summary = train(run_dir, data=str(moved))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    moved.rename(elsewhere / "graph")
    line = one_line_error(*cli("predict", run_dir, "--out", tmp_path / "x.npy",
                               capsys=capsys)[::2])
    assert "give --data to point at it" in line
    run = scalegnn.load_run(run_dir, elsewhere / "graph")
    assert not run.new_data  # same fingerprint: the run's own data, its own preparation
    test = run.select(split="test")
    assert run.metrics(test, run.scores(test)) == summary["test"]


def test_new_data_is_standardized_by_the_runs_training_statistics(saint_run):
    run_dir, _ = saint_run
    from scalegnn.data.transforms import standardize_features
    own = scalegnn.load_run(run_dir)
    # the same graph under another spec has the run's fingerprint: it is the run's own data
    same = scalegnn.load_run(run_dir, DATA + ",seed=0")
    assert not same.new_data and not own.new_data
    assert np.array_equal(same.scores(), own.scores())
    assert np.array_equal(same.embeddings([5, 6]), own.embeddings([5, 6]))
    # another graph: z-scores by the run's training statistics, not by its own
    other = "planted:nodes=250,classes=3,features=16,seed=9"
    new = scalegnn.load_run(run_dir, other)
    assert new.new_data
    ref = load_dataset(DATA)
    fit = np.asarray(ref.features, dtype=np.float64)[np.sort(ref.train_idx)]
    mean, std = fit.mean(0), np.where(fit.std(0) == 0, 1.0, fit.std(0))
    raw = np.asarray(load_dataset(other).features, dtype=np.float64)
    assert np.allclose(new.dataset.features, (raw - mean) / std, atol=1e-6)
    assert not np.allclose(new.dataset.features,
                           standardize_features(load_dataset(other)).features, atol=1e-3)


def test_changed_data_and_bad_inputs_are_one_line_errors(saint_run, tmp_path, capsys):
    run_dir, _ = saint_run
    changed = tmp_path / "changed"
    changed.mkdir()
    for f in ("config.yml", "best.pt"):
        (changed / f).write_bytes((run_dir / f).read_bytes())
    info = json.loads((run_dir / "run.json").read_text())
    info["data"] = "planted:nodes=400,classes=3,features=16,seed=5"
    (changed / "run.json").write_text(json.dumps(info))
    line = one_line_error(*cli("predict", changed, "--out", tmp_path / "x.npy",
                               capsys=capsys)[::2])
    assert "not the data the run" in line
    info["mode"] = "distributed"
    (changed / "run.json").write_text(json.dumps(info))
    line = one_line_error(*cli("embed", changed, "--out", tmp_path / "x.npy", capsys=capsys)[::2])
    assert "a dist-train run" in line
    (tmp_path / "bad.txt").write_text("1\n2\n400\n")
    line = one_line_error(*cli("predict", run_dir, "--nodes", tmp_path / "bad.txt", "--out",
                               tmp_path / "x.npy", capsys=capsys)[::2])
    assert "node id 400 is out of range [0, 400)" in line
    (tmp_path / "word.txt").write_text("1\nseven\n")
    line = one_line_error(*cli("predict", run_dir, "--nodes", tmp_path / "word.txt", "--out",
                               tmp_path / "x.npy", capsys=capsys)[::2])
    assert "line 2: 'seven' is not a node id" in line
    np.save(tmp_path / "f.npy", np.array([1.5, 2.0]))
    line = one_line_error(*cli("predict", run_dir, "--nodes", tmp_path / "f.npy", "--out",
                               tmp_path / "x.npy", capsys=capsys)[::2])
    assert "integer array" in line
    line = one_line_error(*cli("predict", run_dir, "--out", tmp_path / "x.txt",
                               capsys=capsys)[::2])
    assert "unknown file type '.txt'" in line
    line = one_line_error(*cli("embed", tmp_path, "--out", tmp_path / "x.npy",
                               capsys=capsys)[::2])
    assert "not a run directory" in line
    assert not (tmp_path / "x.npy").exists()


def test_parquet_needs_pyarrow(saint_run, tmp_path, capsys):
    run_dir, _ = saint_run
    try:
        import pyarrow.parquet as pq
    except ImportError:
        line = one_line_error(*cli("predict", run_dir, "--out", tmp_path / "p.parquet",
                                   capsys=capsys)[::2])
        assert "needs the pyarrow package" in line
        return
    rc, _, err = cli("predict", run_dir, "--split", "val", "--out", tmp_path / "p.parquet",
                     capsys=capsys)
    assert rc == 0, err
    t = pq.read_table(tmp_path / "p.parquet")
    assert t.column_names[:2] == ["node", "label"]


@pytest.mark.realdata
@pytest.mark.slow
@pytest.mark.parametrize("config", ["cora_rw.yml", "cora_shadow.yml"])
def test_cora_predict_and_embed_reproduce_the_runs_test_metrics(shared_data, tmp_path, capsys,
                                                                 config):
    from test_resume import REPO
    cora = shared_data / "cora"
    run_dir = tmp_path / "run"
    rc, _, err = cli("train", "--config", REPO / "configs" / "shared" / config, "--data", cora,
                     "--out", run_dir, "--no-progress", "--epochs", "10", "--threads", "2",
                     capsys=capsys)
    assert rc == 0, err
    summary = json.loads((run_dir / "summary.json").read_text())
    ds = load_dataset(str(cora))
    rc, out, err = cli("predict", run_dir, "--split", "test", "--out", tmp_path / "t.csv",
                       capsys=capsys)
    assert rc == 0, err
    _, table = read_csv(tmp_path / "t.csv")
    nodes = table[:, 0].astype(np.int64)
    assert np.array_equal(nodes, ds.test_idx)
    got = compute_metrics(ds.labels[nodes], table[:, 2:].astype(np.float32), False)
    assert got == summary["test"]
    rc, _, err = cli("embed", run_dir, "--split", "test", "--out", tmp_path / "e.npy",
                     capsys=capsys)
    assert rc == 0, err
    run = scalegnn.load_run(run_dir)
    emb = torch.from_numpy(np.load(tmp_path / "e.npy"))
    with torch.no_grad():
        scores = run.model.predict(run.model.classifier(emb.to(torch.float32))).numpy()
    assert compute_metrics(ds.labels[nodes], scores, False)[summary["metric"]] == \
        pytest.approx(summary["test"][summary["metric"]], abs=1e-6)
