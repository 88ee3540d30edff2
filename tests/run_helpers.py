"""Helpers of the tests that run the real CLI in a subprocess and compare run directories
(``test_resume``, ``test_checkpoint_safety``, ``test_run_dir_rules``, ``test_early_stop``,
``test_dist_resume``): the run, its metrics.jsonl records and summary without timings, the one
error line, a snapshot of a run's files, and the uninterrupted reference run (the session
fixtures ``reference_run`` and ``run_copy`` of ``conftest.py`` build on it).

Standard library only: ``conftest.py`` imports it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = "planted:nodes=400,classes=3,features=16"
OTHER_DATA = "planted:nodes=300,classes=3,features=16"
# 5 iterations per epoch (rw, 20 roots), 4 epochs; dropout so that the RNG state matters
RUN = ["--data", DATA, "--epochs", "4", "--seed", "5", "--threads", "2", "--no-progress",
       "--set", "params.dropout=0.3", "--set", "phase.num_root=20"]
EVERY_ITER = ["--set", "params.checkpoint_seconds=0"]  # last.pt after every iteration too
KILL_ENV = ("SCALEGNN_TEST_KILL_AT", "SCALEGNN_TEST_KILL_RANK")


# ----------------------------------------------------------------------------- helpers
def scalegnn(*args, cwd, kill=None, env=None, timeout=180):
    """The real CLI in a subprocess (so that SIGKILL is real); ``kill``: a crash point spec,
    ``env``: more environment variables."""
    env = {**{k: v for k, v in os.environ.items() if k not in KILL_ENV}, **(env or {})}
    if kill:
        env["SCALEGNN_TEST_KILL_AT"] = kill
    return subprocess.run([sys.executable, "-m", "scalegnn", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def dist_train(*args, cwd, kill=None, rank=None, nprocs=2):
    """``scalegnn dist-train --nprocs 2 ...``; ``kill`` at the crash point of ``rank`` only."""
    extra = {"SCALEGNN_TEST_KILL_RANK": str(rank)} if rank is not None else None
    return scalegnn("dist-train", "--nprocs", str(nprocs), *args, cwd=cwd, kill=kill, env=extra)


def random_plan(folder: Path, data: str, parts: int = 2) -> Path:
    """A random-rows plan of ``data`` in ``folder / "plan"``."""
    from scalegnn.data import load_dataset
    from scalegnn.dist.partition import partition_dataset
    partition_dataset(load_dataset(data), parts, folder / "plan", method="random")
    return folder / "plan"


def records(run: Path) -> list[dict]:
    """metrics.jsonl, every line whole."""
    raw = (run / "metrics.jsonl").read_bytes()
    assert raw == b"" or raw.endswith(b"\n"), raw[-80:]
    return [json.loads(line) for line in raw.decode().splitlines()]


def comparable(rec: dict) -> dict:
    """A metrics record without timings (``*_s``, and ``overlap_share`` and
    ``allreduce_hidden_share``, ratios of timings) and,
    for distributed records, with only the per-rank fields that do not depend on the clock or the
    allocator."""
    out = {k: v for k, v in rec.items() if not k.endswith("_s")
           and k not in ("overlap_share", "allreduce_hidden_share")}
    if "ranks" in out:
        keep = ("bytes_sent", "bytes_recv", "kept_boundary", "rows_sent")
        out["ranks"] = [{f: r[f] for f in keep if f in r}
                        for r in out["ranks"]]
    return out


def outcome(run: Path) -> tuple[list[dict], dict]:
    summary = json.loads((run / "summary.json").read_text())
    return ([comparable(r) for r in records(run)],
            {k: summary[k] for k in ("train", "val", "test", "best_epoch")})


def one_error_line(err: str) -> str:
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("scalegnn: error: "), err
    assert "Traceback" not in err
    return lines[0]


def snapshot(run: Path, names=("metrics.jsonl", "summary.json", "last.pt")) -> dict:
    return {n: ((run / n).read_bytes(), (run / n).stat().st_mtime_ns) for n in names}


def reference_run_in(cwd: Path) -> Path:
    """The uninterrupted run (RUN) in ``cwd/run``, checked to have several batches per epoch."""
    r = scalegnn("train", *RUN, "--out", "run", cwd=cwd)
    assert r.returncode == 0, r.stderr
    run = cwd / "run"
    recs, _ = outcome(run)
    assert [x["epoch"] for x in recs] == [1, 2, 3, 4]
    assert all(x["iterations"] == 5 for x in recs)  # several batches: mid-epoch kills exist
    return run
