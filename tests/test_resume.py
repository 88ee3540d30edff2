"""Exact resume, single process (``scalegnn train``).

The property (the issue's target): a run SIGKILLed at any point and continued with
``scalegnn train --resume RUN`` ends with exactly the metrics.jsonl records (every field but the
``*_s`` timings) and the summary.json metrics of the uninterrupted run with the same seed and
``--threads``. The kills are real: the CLI runs in a subprocess and ``SCALEGNN_TEST_KILL_AT``
makes ``scalegnn.faults.crash_point`` SIGKILL it. Safe checkpoint loading:
``test_checkpoint_safety.py``; the run directory rules: ``test_run_dir_rules.py``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from run_helpers import EVERY_ITER, REPO, RUN, outcome, scalegnn
from scalegnn.engine.checkpoint import load_checkpoint
from scalegnn.engine.rundir import read_metrics_file

# ----------------------------------------------------------------------------- exact resume
# (test id, kill spec, extra args). Saves of the default run: best.pt (1), last.pt (2) at epoch
# 1; with EVERY_ITER: last.pt after iterations 1-4 of epoch 1 (saves 1-4), then best, last.
KILLS = [
    ("presample-1", "presample:1", []),           # before any checkpoint: starts over
    ("batch-8-epoch-end-ckpts", "batch:8", []),    # mid epoch 2, back to the end of epoch 1
    ("batch-8-every-iter", "batch:8", EVERY_ITER),  # mid epoch 2, resumes at iteration 3
    ("batch-14-every-iter", "batch:14", EVERY_ITER),
    ("save-2-first-last", "save:2", []),           # first last.pt half-written: starts over
    ("save-3-mid-epoch", "save:3", EVERY_ITER),    # mid-epoch last.pt half-written
    ("eval-2", "eval:2", []),
    ("metrics-2", "metrics:2", []),                # record written, last.pt not yet
    ("epoch-2-torn-line", "epoch:2", []),          # + a torn metrics line before resuming
    ("batch-8-then-save-4", "batch:8+save:4", EVERY_ITER),  # the resumed run is killed too
]
STARTS_OVER = {"presample:1", "save:2"}  # killed before the first last.pt existed


def _kill_and_resume(cwd: Path, kill: str, extra: list) -> dict:
    """Run with the kill, look at what it left, (tear metrics.jsonl), resume; the facts."""
    run = cwd / "run"
    out = {"run": run}
    r = scalegnn("train", *RUN, *extra, "--out", "run", cwd=cwd, kill=kill.split("+")[0])
    out["kill"] = (r.returncode, r.stderr[-2000:])
    out["left"] = sorted(p.name for p in run.iterdir())
    if (run / "last.pt").exists():                # whatever was killed, last.pt is whole
        state = load_checkpoint(run / "last.pt")
        out["next"] = (int(state["next_epoch"]), int(state["next_iter"]))
    if kill.startswith("epoch"):                  # SIGKILL mid-append: a torn last line
        with open(run / "metrics.jsonl", "ab") as f:
            f.write(b'{"epoch": 9, "lo')
        (run / "report.png").unlink(missing_ok=True)
        rep = scalegnn("report", "run", cwd=cwd)
        out["report"] = (rep.returncode, rep.stderr[-2000:], (run / "report.png").is_file(),
                         [r["epoch"] for r in read_metrics_file(run / "metrics.jsonl")])
    for again in kill.split("+")[1:]:             # resumed runs killed as well
        r = scalegnn("train", "--resume", "run", "--no-progress", cwd=cwd, kill=again)
        out.setdefault("kill_again", []).append((r.returncode, r.stderr[-2000:]))
    r = scalegnn("train", "--resume", "run", "--no-progress", cwd=cwd)
    out["resume"] = (r.returncode, r.stdout, r.stderr[-2000:])
    return out


def selected(request) -> set[str]:
    """The kill cases this session runs (-k may have deselected some)."""
    return {item.callspec.params["kid"] for item in request.session.items
            if getattr(item, "originalname", None) == "test_killed_run_resumes_bit_identical"
            and item.module is request.module}


@pytest.fixture(scope="module")
def kill_runs(request, run_pool, reference_run_future, tmp_path_factory):
    wanted = selected(request)
    return {kid: run_pool.submit(_kill_and_resume, tmp_path_factory.mktemp(kid), kill, extra)
            for kid, kill, extra in KILLS if kid in wanted}


@pytest.mark.parametrize("kid,kill,extra", KILLS, ids=[k[0] for k in KILLS])
def test_killed_run_resumes_bit_identical(kill_runs, reference_run, kid, kill, extra):
    facts = kill_runs[kid].result()
    run = facts["run"]
    assert facts["kill"][0] == -9, facts["kill"]  # really SIGKILLed at the point
    assert "summary.json" not in facts["left"]
    if kill in STARTS_OVER:
        assert "last.pt" not in facts["left"]     # nothing to resume from: --resume starts over
    else:
        assert "last.pt" in facts["left"]
    if extra == EVERY_ITER and kill.startswith("batch"):
        assert facts["next"][1] > 0               # really a mid-epoch resume
    for again in facts.get("kill_again", []):
        assert again[0] == -9, again
    if "report" in facts:                         # `scalegnn report` skips the torn line
        assert facts["report"][0] == 0 and facts["report"][2], facts["report"]
        assert facts["report"][3] == [1, 2]
    rc, stdout, stderr = facts["resume"]
    assert rc == 0, stderr
    assert "test accuracy =" in stdout
    got, want = outcome(run), outcome(reference_run)
    assert got[0] == want[0]                      # every record, every non-timing field
    assert got[1] == want[1]                      # train/val/test metrics and best epoch
    info = json.loads((run / "run.json").read_text())
    assert len(info.get("resumed", [])) == (0 if kill in STARTS_OVER else kill.count("+") + 1)


def test_kill_points_cover_every_crash_point():
    """Every crash_point in the engine is exercised above."""
    names = set()
    for path in (REPO / "src" / "scalegnn").rglob("*.py"):
        names |= set(re.findall(r"crash_point\(\"(\w+)\"\)", path.read_text()))
    assert names == {p.split(":")[0] for k in KILLS for p in k[1].split("+")} == {
        "presample", "batch", "save", "eval", "metrics", "epoch"}
