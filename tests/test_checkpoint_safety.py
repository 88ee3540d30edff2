"""Safe checkpoints, single process (``scalegnn train --resume``): checkpoints are loaded
without running pickled code, every ``torch.load`` is weights-only, and a checkpoint that
belongs to another dataset or model is refused in one line, leaving the run as it was.
"""

from __future__ import annotations

import os
import pickle
import re
import shutil
from pathlib import Path

import pytest
import torch

from run_helpers import OTHER_DATA, REPO, one_error_line, snapshot
from scalegnn.cli import main as cli_main
from scalegnn.engine.checkpoint import load_checkpoint
from scalegnn.errors import ConfigError


# ----------------------------------------------------------------------------- safe loading
class Evil:
    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def _plant(path: Path, marker: Path, how: str):
    if how == "torch":
        torch.save({"format": "scalegnn-checkpoint/1", "x": Evil(marker)}, path)
    else:
        with open(path, "wb") as f:
            pickle.dump({"format": "scalegnn-checkpoint/1", "x": Evil(marker)}, f, protocol=2)


@pytest.mark.parametrize("name", ["last.pt", "best.pt"])
@pytest.mark.parametrize("how", ["torch", "pickle"])
def test_planted_pickle_is_refused_and_not_run(run_copy, tmp_path, capsys, name, how):
    marker = tmp_path / "MARKER"
    _plant(run_copy / name, marker, how)
    with pytest.raises(ConfigError) as e:
        load_checkpoint(run_copy / name)
    assert "\n" not in str(e.value) and name in str(e.value)
    assert not marker.exists()
    if name == "best.pt":
        # killed after the last checkpoint, before the summary: resume evaluates best.pt
        (run_copy / "summary.json").unlink()
    assert cli_main(["train", "--resume", str(run_copy), "--no-progress"]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert name in line and "safe loader" in line
    assert not marker.exists()
    # the payload is live: an unsafe load of the same file does run it
    live = tmp_path / "LIVE"
    _plant(tmp_path / "probe.pt", live, how)
    if how == "torch":
        torch.load(tmp_path / "probe.pt", weights_only=False)
    else:
        with open(tmp_path / "probe.pt", "rb") as f:
            pickle.load(f)
    assert live.exists()


def test_every_torch_load_is_weights_only():
    calls = []
    for path in sorted((REPO / "src" / "scalegnn").rglob("*.py")):
        text = path.read_text()
        for m in re.finditer(r"torch\.load\(", text):
            depth, i = 1, m.end()
            while depth and i < len(text):
                depth += {"(": 1, ")": -1}.get(text[i], 0)
                i += 1
            calls.append((path.name, text[m.start():i]))
    assert calls, "no torch.load call found (the check would be empty)"
    bad = [(p, c) for p, c in calls if not re.search(r"weights_only\s*=\s*True", c)]
    assert not bad, bad


# ----------------------------------------------------------------------------- wrong checkpoint
def test_checkpoint_of_another_dataset_is_refused(run_copy, tmp_path, capsys):
    other = tmp_path / "other"
    assert cli_main(["train", "--data", OTHER_DATA, "--epochs", "1", "--threads", "2",
                     "--set", "phase.num_root=20", "--no-progress", "--out", str(other)]) == 0
    shutil.copy(run_copy / "last.pt", other / "last.pt")
    before = snapshot(other)
    capsys.readouterr()
    assert cli_main(["train", "--resume", str(other), "--no-progress"]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert "dataset" in line and "400 nodes" in line and "300 nodes" in line, line
    assert snapshot(other) == before


def test_checkpoint_of_another_model_shape_is_refused(run_copy, capsys):
    before = snapshot(run_copy)
    assert cli_main(["train", "--resume", str(run_copy), "--no-progress", "--set",
                     "phase.end=6", "--set", "network.dim=32"]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert "shape" in line and "last.pt" in line, line
    assert snapshot(run_copy) == before
