"""A dead or frozen rank makes the others exit with a one-line DistError within --timeout."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from scalegnn.dist.launch import spawn_local
from scalegnn.dist.partition import partition_dataset
from test_dist_correctness import tiny_dataset

pytestmark = pytest.mark.dist
TIMEOUT = 6.0


def _start(tmp_path):
    partition_dataset(tiny_dataset(), 2, tmp_path / "plan", method="metis")
    argv = ["--plan", str(tmp_path / "plan"), "--out", str(tmp_path / "run"), "--epochs", "100000",
            "--timeout", str(TIMEOUT), "--set", "network.dim=4", "--set", "params.eval_every=1000",
            "--set", "params.standardize=false"]
    procs = spawn_local(2, argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = ""
    deadline = time.time() + 90
    while "epoch" not in line:                       # rank 0 logs evaluations; wait for training
        assert time.time() < deadline and procs[0].poll() is None, procs[0].stderr.read()
        if (tmp_path / "run" / "metrics.jsonl").exists():
            line = "epoch"
        time.sleep(0.2)
    return procs


def _finish(procs, victim):
    t0 = time.time()
    try:
        _, err = procs[0].communicate(timeout=TIMEOUT + 30)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return time.time() - t0, err


@pytest.mark.parametrize("how", ["kill", "freeze"])
def test_survivor_exits_with_dist_error(tmp_path, how):
    procs = _start(tmp_path)
    if how == "kill":
        procs[1].kill()                              # SIGKILL: the connection drops at once
    else:
        os.kill(procs[1].pid, signal.SIGSTOP)        # alive but silent: only the timeout helps
    elapsed, err = _finish(procs, procs[1])
    assert procs[0].returncode == 2, err
    lines = [ln for ln in err.strip().splitlines() if ln.startswith("scalegnn: error")]
    assert len(lines) == 1 and "rank 0" in lines[0] and "Traceback" not in err, err
    assert "peer died or did not answer" in lines[0]
    assert elapsed < TIMEOUT + 25
