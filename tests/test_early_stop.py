"""Early stopping (``params.patience``), learning-rate schedules (``params.lr_schedule``) and
their exact resume.

Schedules are checked against their formulas written out by hand; the trainer's stop against
the metrics it recorded (it stops exactly ``patience`` validation passes after the best one);
resume with a schedule active against the uninterrupted run, with real SIGKILLs (the helpers of
``run_helpers``).
"""

from __future__ import annotations

import json
import math

import pytest

from run_helpers import outcome, records, scalegnn
from scalegnn.config import Config
from scalegnn.errors import ConfigError
from scalegnn.engine.optim import LRSchedule

DATA = "planted:nodes=400,classes=3,features=16"
SCHEDULED = ["--data", DATA, "--epochs", "8", "--seed", "3", "--threads", "2", "--no-progress",
             "--set", "params.dropout=0.3", "--set", "phase.num_root=20",
             "--set", "params.lr_schedule=plateau", "--set", "params.lr_patience=1",
             "--set", "params.lr_decay=0.3", "--set", "params.patience=4",
             "--set", "params.checkpoint_seconds=0"]


# ----------------------------------------------------------------------------- schedules
def test_step_and_cosine_follow_their_formulas():
    step = LRSchedule("step", 0.1, epochs=20, decay=0.5, step=3, lr_min=0.02)
    assert [step.lr_at(e) for e in range(10)] == pytest.approx(
        [0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025, 0.025, 0.025, 0.02])
    cos = LRSchedule("cosine", 0.1, epochs=4, lr_min=0.01)
    want = [0.01 + 0.09 * (1 + math.cos(math.pi * e / 4)) / 2 for e in range(5)]
    assert [cos.lr_at(e) for e in range(5)] == pytest.approx(want)
    assert cos.lr_at(0) == pytest.approx(0.1) and cos.lr_at(4) == pytest.approx(0.01)
    none = LRSchedule("none", 0.1, epochs=4)
    none.observe(0.0)
    assert none.lr_at(3) == 0.1


def test_plateau_decays_after_patience_passes_without_gain_and_saves_plain_state():
    s = LRSchedule("plateau", 1.0, decay=0.5, lr_min=0.2, patience=2)
    seen = []
    for v in [0.5, 0.6, 0.6, 0.55, 0.7, float("nan"), 0.7, 0.1, 0.1, 0.1, 0.1]:
        s.observe(v)
        seen.append(s.lr_at(0))
    # decays after 2 passes in a row without a better value; never below lr_min
    assert seen == [1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.25, 0.25, 0.2, 0.2, 0.2]
    state = s.state_dict()
    assert all(isinstance(v, (int, float, str)) for v in state.values())
    t = LRSchedule("plateau", 1.0, decay=0.5, lr_min=0.2, patience=2)
    t.load_state_dict(state)
    assert t.state_dict() == state
    other = LRSchedule("step", 1.0)
    other.load_state_dict(state)  # another kind's state (a changed config) is ignored
    assert other.lr_at(0) == 1.0


@pytest.mark.parametrize("key,value,needle", [
    ("lr_schedule", "linear", "params.lr_schedule: 'linear' is not one of"),
    ("lr_decay", 0, "params.lr_decay: must be"),
    ("lr_decay", 1.5, "params.lr_decay: must be"),
    ("lr_step", 0, "params.lr_step: must be"),
    ("patience", -1, "params.patience: must be"),
    ("lr_patience", 0, "params.lr_patience: must be"),
])
def test_bad_schedule_values_are_one_line_errors(key, value, needle):
    with pytest.raises(ConfigError) as e:
        Config().override([f"params.{key}={value}"])
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_lr_min_above_lr_is_refused_and_builtin_default_stops_early():
    with pytest.raises(ConfigError, match="params.lr_min: must be <= params.lr"):
        Config().override(["params.lr_schedule=cosine", "params.lr_min=0.5"])
    assert Config().params["patience"] == 0          # config files run their full schedule
    assert Config.builtin().params["patience"] == 5  # `scalegnn train` without --config


# ----------------------------------------------------------------------------- the trainer
def test_trainer_stops_patience_passes_after_the_best_and_says_why(tmp_path):
    from scalegnn.data import load_dataset
    from scalegnn.train.trainer import Trainer
    cfg = Config().override(["phase.end=40", "phase.num_root=20", "params.patience=2",
                             "params.lr=0.05"])
    out = tmp_path / "run"
    result = Trainer(load_dataset(DATA), cfg, out, seed=1, progress=False).fit()
    recs = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    vals = [r["val"][result["metric"]] for r in recs]
    best = max(range(len(vals)), key=lambda i: (vals[i], -i))  # first epoch of the max
    assert result["epochs_run"] == len(recs) < 40
    assert result["best_epoch"] == best + 1
    assert len(recs) == best + 1 + 2  # exactly `patience` passes without a better value
    assert result["stopped"].startswith(f"early stop at epoch {len(recs)}")
    saved = json.loads((out / "summary.json").read_text())
    assert saved["stopped"] == result["stopped"] and saved["epochs_run"] == len(recs)


def test_no_patience_runs_every_epoch(tmp_path):
    from scalegnn.data import load_dataset
    from scalegnn.train.trainer import Trainer
    cfg = Config().override(["phase.end=3", "phase.num_root=20", "params.lr_schedule=step",
                             "params.lr_step=1", "params.lr_decay=0.5"])
    t = Trainer(load_dataset(DATA), cfg, None, seed=1, progress=False)
    result = t.fit()
    assert result["stopped"] == "finished: all 3 epochs" and result["epochs_run"] == 3
    assert [r["lr"] for r in t.history] == pytest.approx([0.01, 0.005, 0.0025])


@pytest.mark.slow
@pytest.mark.parametrize("kill", ["batch:23", "eval:5"])
def test_resume_with_a_plateau_schedule_and_patience_is_exact(tmp_path, kill):
    ref = tmp_path / "ref"
    ref.mkdir()
    r = scalegnn("train", *SCHEDULED, "--out", "run", cwd=ref)
    assert r.returncode == 0, r.stderr
    want = outcome(ref / "run")
    lrs = [rec["lr"] for rec in records(ref / "run")]
    assert len(set(lrs)) > 1, lrs  # the schedule did act before the kill points
    cut = tmp_path / "cut"
    cut.mkdir()
    r = scalegnn("train", *SCHEDULED, "--out", "run", cwd=cut, kill=kill)
    assert r.returncode != 0
    r = scalegnn("train", "--resume", "run", "--no-progress", cwd=cut)
    assert r.returncode == 0, r.stderr
    assert outcome(cut / "run") == want
    summary = json.loads((cut / "run" / "summary.json").read_text())
    assert summary["stopped"] == json.loads((ref / "run" / "summary.json").read_text())["stopped"]


@pytest.mark.slow
def test_resuming_an_early_stopped_run_changes_nothing(tmp_path):
    args = ["--data", DATA, "--epochs", "60", "--seed", "1", "--threads", "2", "--no-progress",
            "--set", "phase.num_root=20", "--set", "params.patience=2", "--set", "params.lr=0.05"]
    r = scalegnn("train", *args, "--out", "run", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    before = (tmp_path / "run" / "metrics.jsonl").read_text()
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["stopped"].startswith("early stop")
    r = scalegnn("train", "--resume", "run", "--no-progress", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "run" / "metrics.jsonl").read_text() == before
    assert json.loads((tmp_path / "run" / "summary.json").read_text()) == summary
