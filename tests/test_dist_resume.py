"""Exact resume of 2-rank distributed runs (``scalegnn dist-train``) after a real SIGKILL.

One rank is SIGKILLed at a crash point (``SCALEGNN_TEST_KILL_AT`` + ``SCALEGNN_TEST_KILL_RANK``);
the surviving rank must fail with a one-line peer error within ``--timeout`` and dist-train
exit non-zero; then ``scalegnn dist-train --nprocs 2 --resume RUN`` must finish the run with
exactly the uninterrupted run's metrics.jsonl records (loss, epoch, iterations, val, p and every
rank's bytes_sent / bytes_recv / kept_boundary; not the timings or memory) and summary metrics.
Dropout (per-rank RNG streams) and boundary sampling p = 0.5 make every random state matter.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from run_helpers import dist_train, outcome, random_plan, records

pytestmark = [pytest.mark.dist, pytest.mark.slow]

DATA = "planted:nodes=400,classes=3,features=16"
TIMEOUT = 10
RUN = ["--epochs", "4", "--seed", "5", "--threads", "1", "--no-progress", "--timeout",
       str(TIMEOUT), "--set", "params.dropout=0.3", "--set", "distributed.boundary_p=0.5"]

# (test id, rank killed, kill spec). Rank 0 saves best.pt then last.pt at each epoch end
# (save:3 is the first save of epoch 2); rank 1 writes nothing.
KILLS = [
    ("rank0-batch-2", 0, "batch:2"),        # after epoch 2's step: back to the end of epoch 1
    ("rank0-eval-2", 0, "eval:2"),
    ("rank0-metrics-2", 0, "metrics:2"),    # record of epoch 2 written, last.pt not yet
    ("rank0-save-3", 0, "save:3"),          # inside a checkpoint write, before the rename
    ("rank0-epoch-2", 0, "epoch:2"),        # last.pt of epoch 2 written
    ("rank1-batch-3", 1, "batch:3"),        # the non-writing rank dies
]


@pytest.fixture(scope="module")
def plan(tmp_path_factory) -> Path:
    return random_plan(tmp_path_factory.mktemp("plan"), DATA)


@pytest.fixture(scope="module")
def pool():
    """Two dist-train runs at a time (each is 2 single-threaded ranks)."""
    with ThreadPoolExecutor(2) as ex:
        yield ex


def _reference(cwd: Path, plan: Path) -> Path:
    r = dist_train("--plan", plan, *RUN, "--out", "run", cwd=cwd)
    assert r.returncode == 0, r.stderr
    recs = records(cwd / "run")
    assert [x["epoch"] for x in recs] == [1, 2, 3, 4]
    assert all(len(x["ranks"]) == 2 and x["p"] == 0.5 for x in recs)
    kept = {tuple(rk["kept_boundary"] for rk in x["ranks"]) for x in recs}
    sent = {tuple(rk["bytes_sent"] for rk in x["ranks"]) for x in recs}
    assert len(sent) > 1 or len(kept) > 1  # boundary sampling differs between epochs
    return cwd / "run"


def _kill_and_resume(cwd: Path, plan: Path, rank: int, kill: str) -> dict:
    out = {"run": cwd / "run"}
    t0 = time.perf_counter()
    r = dist_train("--plan", plan, *RUN, "--out", "run", cwd=cwd, kill=kill, rank=rank)
    out["kill"] = (r.returncode, r.stderr, time.perf_counter() - t0)
    out["left"] = sorted(p.name for p in (cwd / "run").iterdir())
    r = dist_train("--resume", "run", "--no-progress", cwd=cwd)
    out["resume"] = (r.returncode, r.stdout, r.stderr[-3000:])
    return out


@pytest.fixture(scope="module")
def reference_future(pool, plan, tmp_path_factory):
    return pool.submit(_reference, tmp_path_factory.mktemp("reference"), plan)


def selected(request) -> set[str]:
    """The kill cases this session runs (-k may have deselected some)."""
    return {item.callspec.params["kid"] for item in request.session.items
            if getattr(item, "originalname", None) == "test_killed_rank_resumes_bit_identical"
            and item.module is request.module}


@pytest.fixture(scope="module")
def kill_runs(request, pool, plan, reference_future, tmp_path_factory):
    wanted = selected(request)
    return {kid: pool.submit(_kill_and_resume, tmp_path_factory.mktemp(kid), plan, rank, kill)
            for kid, rank, kill in KILLS if kid in wanted}


@pytest.mark.parametrize("kid,rank,kill", KILLS, ids=[k[0] for k in KILLS])
def test_killed_rank_resumes_bit_identical(kill_runs, reference_future, kid, rank, kill):
    reference = reference_future.result()
    facts = kill_runs[kid].result()
    rc, err, elapsed = facts["kill"]
    # shown on failure: our own lines (torch's retry warnings can flood the tail), then the tail
    shown = "".join(ln + "\n" for ln in err.splitlines() if ln.startswith("scalegnn:"))
    shown += "...\n" + err[-3000:]
    assert rc != 0, shown
    survivor = 1 - rank
    peer = [ln for ln in err.splitlines() if ln.startswith(f"scalegnn: error: rank {survivor}:")]
    assert len(peer) == 1 and "peer died or did not answer" in peer[0], shown
    assert "Traceback" not in err, shown
    assert elapsed < TIMEOUT + 60, elapsed          # nobody hangs past the timeout
    assert "summary.json" not in facts["left"]
    assert "last.pt" in facts["left"]                # epoch 1 always completed
    rc, stdout, stderr = facts["resume"]
    assert rc == 0, stderr
    assert "test accuracy =" in stdout
    got, want = outcome(facts["run"]), outcome(reference)
    assert got[0] == want[0]  # loss, epoch, iterations, val, p, per-rank bytes / kept boundary
    assert got[1] == want[1]  # train/val/test metrics and best epoch
    info = json.loads((facts["run"] / "run.json").read_text())
    assert len(info.get("resumed", [])) == 1
