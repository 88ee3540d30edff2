"""Every script in ``examples/`` runs as a user would run it, and does what it says.

Each example runs in a fresh ``python`` process (``sys.executable``) with its working
directory in ``tmp_path`` (so none relies on the repository root as working directory and none
writes into the repository), ``--out`` pointing into ``tmp_path``. The tests check what the
examples print against the files they write (summary.json, metrics.jsonl, .npy outputs) and
against plausible ranges (accuracy far above chance, Hits@50 far above random ranking), and
the claims the examples make (metrics equal summary.json, distributed losses equal full-batch
losses, CLI scores equal the Python scores).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
TIMEOUT_S = 300


def run_example(name: str, tmp_path: Path, *args, out: bool = True) -> str:
    """Run ``examples/NAME`` from ``tmp_path`` (``--out tmp_path/out`` unless ``out`` is
    False); its stdout, after checking that it exited with status 0."""
    argv = [sys.executable, str(EXAMPLES / name), *map(str, args)]
    if out:
        argv += ["--out", str(tmp_path / "out")]
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True,
                          timeout=TIMEOUT_S)
    assert done.returncode == 0, f"{name} exited with {done.returncode}:\n{done.stderr[-3000:]}"
    return done.stdout


def number(pattern: str, text: str) -> float:
    """The number captured by ``pattern`` in ``text`` (the test fails if it is absent)."""
    m = re.search(pattern, text)
    assert m, f"{pattern!r} not in the output:\n{text}"
    return float(m.group(1))


def read_json(path: Path) -> dict:
    return json.loads(path.read_text())


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


RUN_FILES = {"config.yml", "run.json", "metrics.jsonl", "best.pt", "last.pt", "summary.json"}


def test_every_example_is_tested_and_listed_in_the_readme():
    scripts = {p.name for p in EXAMPLES.glob("*.py")}
    tested = {"python_api.py", "dataset_in_python.py", "predict_embed.py", "shadow_link.py",
              "distributed.py", "make_two_graphs.py", "pyg_neighbor_loader.py"}
    assert scripts == tested
    readme = (EXAMPLES / "README.md").read_text()
    for name in scripts:
        assert f"examples/{name}" in readme, f"{name} is not in examples/README.md"


def test_python_api(tmp_path):
    out = run_example("python_api.py", tmp_path)
    run = tmp_path / "out" / "python_api"
    assert RUN_FILES <= {p.name for p in run.iterdir()}
    summary = read_json(run / "summary.json")
    assert summary["dataset"] == "synthetic" and summary["metric"] == "accuracy"
    # the printed numbers are the run's summary
    assert number(r"engine: test accuracy = ([0-9.]+)", out) == \
        pytest.approx(summary["test"]["accuracy"], abs=5e-5)
    assert number(r"engine: val accuracy = ([0-9.]+)", out) == \
        pytest.approx(summary["val"]["accuracy"], abs=5e-5)
    assert summary["test"]["accuracy"] > 0.9        # 8 classes: chance is 0.125
    epochs = read_jsonl(run / "metrics.jsonl")
    assert [e["epoch"] for e in epochs] == [1, 2, 3, 4, 5, 6]   # --epochs default 6
    assert epochs[-1]["loss"] < epochs[0]["loss"]
    # the plain-PyTorch loop trains too: its loss falls and it beats chance by far
    losses = [float(x) for x in re.findall(r"plain PyTorch: step \d+/\d+: .* loss ([0-9.]+)", out)]
    assert len(losses) >= 2 and losses[-1] < losses[0]
    for split in ("val", "test"):
        assert number(rf"plain PyTorch: {split} accuracy = ([0-9.]+)", out) > 0.6


def test_dataset_in_python(tmp_path):
    out = run_example("dataset_in_python.py", tmp_path)
    base = tmp_path / "out" / "dataset_in_python"
    for name in ("edge_index", "arrays"):
        # the given split (1200/400/400) is kept, not replaced by a seeded one
        assert re.search(rf"^{name}: 2000 nodes, \d+ undirected edges.*split 1200/400/400$",
                         out, re.M), out
        summary = read_json(base / name / "summary.json")
        printed = number(rf"{name}: test accuracy = ([0-9.]+)", out)
        assert printed == pytest.approx(summary["test"]["accuracy"], abs=5e-5)
        assert printed > 0.8                        # 4 classes: chance is 0.25
    assert "features stored as csr" in out          # scipy sparse features stay sparse
    assert re.search(r"^structural: \d+ structural features; seeded split 1000/500/500$",
                     out, re.M), out
    assert re.search(r"^refused: DataError: .*1999 labels for 2000 nodes", out, re.M), out


def test_predict_embed(tmp_path):
    from scalegnn.data import load_dataset
    out = run_example("predict_embed.py", tmp_path)
    base = tmp_path / "out" / "predict_embed"
    run = base / "run"
    summary = read_json(run / "summary.json")
    assert "metrics equal summary.json: True" in out
    # the written test scores give summary.json's test accuracy
    data = load_dataset("planted:nodes=3000,classes=5,features=24")
    scores = np.load(base / "test_scores.npy")
    assert scores.shape == (data.test_idx.size, 5) and scores.dtype == np.float32
    np.testing.assert_allclose(scores.sum(1), 1.0, atol=1e-5)
    accuracy = float((scores.argmax(1) == data.labels[data.test_idx]).mean())
    assert accuracy == summary["test"]["accuracy"] > 0.8   # 5 classes: chance is 0.2
    # embeddings of the 4 nodes asked for: the L2-normalized classifier input
    emb = np.load(base / "embeddings.npy")
    assert emb.shape[0] == 4 and emb.shape[1] > 1
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)
    # the CLI equivalent in the example's docstring writes the very same scores
    cli = subprocess.run([sys.executable, "-m", "scalegnn", "predict", str(run), "--split",
                          "test", "--out", str(tmp_path / "cli.npy")], cwd=tmp_path,
                         capture_output=True, text=True, timeout=TIMEOUT_S)
    assert cli.returncode == 0, cli.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "cli.npy"), scores)


def test_shadow_link(tmp_path):
    out = run_example("shadow_link.py", tmp_path)
    run = tmp_path / "out" / "shadow_link"
    summary = read_json(run / "summary.json")
    assert summary["mode"] == "link" and summary["metric"] == "hits@50"
    for key in ("hits@20", "hits@50", "hits@100", "mrr"):
        printed = number(rf"test .*{key} = ([0-9.]+)", out)
        assert printed == pytest.approx(summary["test"][key], abs=5e-5)
    test = summary["test"]
    assert 0.0 <= test["hits@20"] <= test["hits@50"] <= test["hits@100"] <= 1.0
    # random ranking among 1000 negatives: Hits@50 ~ 0.05, MRR ~ 0.0075
    assert number(r"random scores: hits@50 = ([0-9.]+)", out) == pytest.approx(50 / 1001, abs=1e-4)
    assert test["hits@50"] > 0.5 and test["mrr"] > 0.04
    assert len(read_jsonl(run / "metrics.jsonl")) == 3


@pytest.mark.dist
def test_distributed(tmp_path):
    out = run_example("distributed.py", tmp_path)
    base = tmp_path / "out" / "distributed"
    assert (base / "plan" / "plan.json").is_file() and (base / "dist.yml").is_file()
    run = base / "run"
    assert RUN_FILES <= {p.name for p in run.iterdir()}
    summary = read_json(run / "summary.json")
    assert summary["mode"] == "distributed" and summary["world_size"] == 2
    assert number(r"distributed: 2 ranks, .* test accuracy = ([0-9.]+)", out) == \
        pytest.approx(summary["test"]["accuracy"], abs=5e-5)
    assert summary["test"]["accuracy"] > 0.8        # 4 classes: chance is 0.25
    # each rank sends its plan's rows once per graph layer (arch 1-0-1-0: two) and epoch
    stats = read_json(base / "plan" / "plan.json")["stats"]
    epochs = read_jsonl(run / "metrics.jsonl")
    assert len(epochs) == 20
    for e in epochs:
        assert [r["rows_sent"] for r in e["ranks"]] == [2 * s["send_volume"] for s in stats]
    # with boundary_p 1 the 2 ranks' losses are full-batch training's, to rounding
    assert number(r"largest loss difference over 20 epochs: ([0-9.e+-]+)", out) < 1e-8
    assert epochs[-1]["loss"] < epochs[0]["loss"]


def test_make_two_graphs(tmp_path):
    from scalegnn.data import load_dataset
    run_example("make_two_graphs.py", tmp_path, out=False)   # writes into its working dir
    a, b = load_dataset(tmp_path / "a.npz"), load_dataset(tmp_path / "b.npz")
    assert (a.num_nodes, b.num_nodes) == (3000, 2000)
    assert a.num_features == b.num_features == 16 and a.num_classes == b.num_classes == 4
    # what the files are for: train on a.npz, test on b.npz (README, --test-data)
    done = subprocess.run([sys.executable, "-m", "scalegnn", "train", "--data", "a.npz",
                           "--test-data", "b.npz", "--epochs", "3", "--set", "network.dim=64",
                           "--out", "run", "--no-progress"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=TIMEOUT_S)
    assert done.returncode == 0, done.stderr
    assert "test is on b.npz (2,000 nodes" in done.stdout
    assert read_json(tmp_path / "run" / "summary.json")["test"]["accuracy"] > 0.7


def test_pyg_neighbor_loader(tmp_path):
    pytest.importorskip("torch_geometric")
    out = run_example("pyg_neighbor_loader.py", tmp_path, "--epochs", 3, out=False)
    assert [int(e) for e in re.findall(r"^epoch (\d+): loss", out, re.M)] == [1, 2, 3]
    assert number(r"test accuracy = ([0-9.]+)", out) > 0.9     # 8 classes: chance is 0.125
    assert "same seed, same first batch: True" in out

