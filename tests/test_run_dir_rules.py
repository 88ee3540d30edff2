"""The run directory rules of ``scalegnn train`` (single process): one writer, no silent
overwrite, resume keeps its recorded data/split/seed, a finished run is left alone, a missing
device is refused before anything is written, a diverged run stops in one line without a
summary, and ``dist-train`` writes the same files as ``train``.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from conftest import make_tiny_dataset
from run_helpers import DATA, OTHER_DATA, REPO, one_error_line, records, scalegnn, snapshot
from scalegnn.cli import main as cli_main
from scalegnn.config import Config
from scalegnn.data import Dataset, load_dataset
from scalegnn.dist.partition import partition_dataset
from scalegnn.engine.rundir import RunDir
from scalegnn.errors import TrainingError
from scalegnn.train import Trainer


# ----------------------------------------------------------------------------- run directory
def test_second_run_into_a_run_is_refused_overwrite_replaces(run_copy, capsys):
    before = snapshot(run_copy)
    args = ["train", "--data", DATA, "--epochs", "1", "--threads", "2", "--no-progress",
            "--set", "phase.num_root=20", "--out", str(run_copy)]
    assert cli_main(args) == 2
    line = one_error_line(capsys.readouterr().err)
    assert "already holds a run" in line and "--resume" in line
    assert snapshot(run_copy) == before
    assert cli_main([*args, "--overwrite"]) == 0
    assert [r["epoch"] for r in records(run_copy)] == [1]
    assert json.loads((run_copy / "summary.json").read_text())["epochs"] == 1


def test_locked_run_is_refused(run_copy, tmp_path):
    before = snapshot(run_copy)
    holder = RunDir(run_copy, resume=True)  # this process now holds the run's flock
    try:
        r = scalegnn("train", "--resume", run_copy, "--no-progress", cwd=tmp_path)
    finally:
        holder.close()
    assert r.returncode == 2
    line = one_error_line(r.stderr)
    assert "another scalegnn process" in line and str(os.getpid()) in line, line
    assert snapshot(run_copy) == before


def test_non_empty_folder_that_is_not_a_run_is_refused(tmp_path, capsys):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("keep me")
    assert cli_main(["train", "--data", DATA, "--epochs", "1", "--no-progress",
                     "--out", str(folder)]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert "not empty" in line and "notes.txt" in line
    assert [p.name for p in folder.iterdir()] == ["notes.txt"]


@pytest.mark.parametrize("flag,value", [("--data", OTHER_DATA), ("--split", "1"),
                                        ("--seed", "6")])
def test_resume_with_conflicting_recorded_value_is_refused(run_copy, capsys, flag, value):
    before = snapshot(run_copy)
    assert cli_main(["train", "--resume", str(run_copy), flag, value, "--no-progress"]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert flag in line and "recorded" in line, line
    assert snapshot(run_copy) == before


def test_resuming_a_finished_run_changes_nothing(run_copy, capsys):
    before = snapshot(run_copy)
    assert cli_main(["train", "--resume", str(run_copy), "--no-progress"]) == 0
    out = capsys.readouterr().out
    summary = json.loads((run_copy / "summary.json").read_text())
    assert f"test accuracy = {summary['test']['accuracy']:.4f}" in out
    assert f"best epoch {summary['best_epoch']}/4" in out
    assert snapshot(run_copy) == before


def test_cuda_device_without_cuda_is_refused_before_anything(tmp_path, capsys):
    if torch.cuda.is_available():
        pytest.skip("CUDA is available here")
    out = tmp_path / "never"
    assert cli_main(["train", "--data", DATA, "--device", "cuda", "--out", str(out)]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert "cuda" in line.lower() and "not available" in line
    assert not out.exists()


# ----------------------------------------------------------------------------- divergence
def test_nan_loss_is_one_line_naming_the_epoch_python(tmp_path):
    ds = make_tiny_dataset(n=80)
    # finite float32 features near its maximum: the first layer's sums overflow to inf - inf
    # (1e30 or 1e36 do not diverge: the norm layers and grad_clip keep the loss finite)
    huge = Dataset(ds.graph, np.asarray(ds.features) * 1e38 + 1e38, ds.labels, ds.train_idx, ds.val_idx,
                   ds.test_idx, name="huge", source="huge", metric="accuracy").validate()
    cfg = Config().override(["params.standardize=false", "phase.end=3", "phase.num_root=10",
                             "network.dim=8"])
    with pytest.raises(TrainingError) as e:
        Trainer(huge, cfg, tmp_path / "run", progress=False).fit()
    msg = str(e.value)
    assert "\n" not in msg and re.match(r"epoch 1, iteration \d+: the training loss became",
                                        msg), msg
    assert not (tmp_path / "run" / "summary.json").exists()


def test_nan_loss_cli_exits_2(tmp_path, capsys):
    assert cli_main(["train", "--data", DATA, "--epochs", "3", "--threads", "2", "--no-progress",
                     "--set", "phase.num_root=20", "--set", "params.lr=1e30",
                     "--set", "params.grad_clip=0", "--out", str(tmp_path / "run")]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert re.search(r"epoch \d+, iteration \d+: the training loss became (nan|inf)", line), line
    assert not (tmp_path / "run" / "summary.json").exists()


# ----------------------------------------------------------------------------- same run files
def _file_set(run: Path) -> set[str]:
    return {p.name for p in run.iterdir() if not p.name.startswith(".")}


def _same_files_dist_and_single(tmp_path, data, config):
    partition_dataset(load_dataset(data), 2, tmp_path / "plan", method="random")
    d = scalegnn("dist-train", "--nprocs", "2", "--plan", tmp_path / "plan", "--config", config,
                 "--epochs", "3", "--threads", "1", "--no-progress", "--out", "dist", cwd=tmp_path)
    assert d.returncode == 0, d.stderr
    s = scalegnn("train", "--data", data, "--config", config, "--epochs", "3", "--threads", "2",
                 "--no-progress", "--out", "single", cwd=tmp_path)
    assert s.returncode == 0, s.stderr
    files = _file_set(tmp_path / "single")
    assert files == _file_set(tmp_path / "dist")
    assert {"config.yml", "run.json", "metrics.jsonl", "best.pt", "last.pt", "summary.json",
            "report.png"} <= files
    for run in ("single", "dist"):
        assert [r["epoch"] for r in records(tmp_path / run)] == [1, 2, 3]
        assert json.loads((tmp_path / run / "summary.json").read_text())["epochs"] == 3


@pytest.mark.dist
def test_dist_train_writes_the_same_files_as_train_generated(tmp_path):
    raw = yaml.safe_load((REPO / "configs" / "shared" / "cora_rw.yml").read_text())
    assert raw["params"][0]["transductive"] is True  # kept: the dist run must accept it
    raw["network"][0]["dim"] = 32
    raw["phase"][0]["num_root"] = 40
    (tmp_path / "cfg.yml").write_text(yaml.safe_dump(raw))
    _same_files_dist_and_single(tmp_path, DATA, tmp_path / "cfg.yml")


@pytest.mark.dist
@pytest.mark.realdata
def test_dist_train_writes_the_same_files_as_train_cora(tmp_path, shared_data):
    if not (shared_data / "cora").exists():
        pytest.skip("cora not in the shared data")
    _same_files_dist_and_single(tmp_path, str(shared_data / "cora"),
                                REPO / "configs" / "shared" / "cora_rw.yml")
