"""Elastic ``scalegnn dist-train --max-restarts N`` on two launchers ("hosts" 127.0.0.2 and
127.0.0.3, one rank each), and ranks that never outlive their launcher.

* a rank SIGKILLed mid-epoch, inside a checkpoint write or during evaluation (the crash points of
  ``scalegnn.faults``): the job restarts from last.pt and ends with exactly the metrics of an
  uninterrupted run (every metrics.jsonl record but the timings, and the summary);
* a whole host's launcher SIGKILLed and its command run again, as a user would: the same;
* no restarts left: both launchers end within 30 s of the rank's death with one line naming it,
  no rank is left, and ``--resume`` afterwards ends with the uninterrupted run's metrics;
* the ranks hold the run directory's lock with their launcher, so a second command on that
  directory is refused in one line while one runs, and die with their launcher (SIGKILL);
* under ``torchrun --max-restarts`` too, restarted ranks (TORCHELASTIC_RESTART_COUNT > 0) resume.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from run_helpers import one_error_line, outcome, records
from test_dist_multihost import cli, host_args, run_hosts, start

pytestmark = pytest.mark.dist

DATA = "planted:nodes=300,classes=3,features=8"
RUN = ["--epochs", "6", "--seed", "5", "--threads", "1", "--no-progress", "--timeout", "20",
       "--set", "params.dropout=0.3", "--set", "distributed.boundary_p=0.5"]
SLOW = {"SCALEGNN_TEST_EXCHANGE_DELAY": "0:0.3"}  # rank 0 sends late: slower epochs, same numbers

# (test id, rank killed, crash point). Rank 0 (node 0) writes best.pt then last.pt at each epoch
# end; save:3 is inside the first checkpoint write of epoch 2, before its rename.
KILLS = [("mid-epoch", 0, "batch:2"), ("checkpoint-write", 0, "save:3"),
         ("evaluation", 1, "eval:2")]


def env_with(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCALEGNN_TEST_")}
    return {**env, **extra}


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


def children(pid: int) -> list[int]:
    out = []
    for d in os.listdir("/proc"):
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if d.isdigit() and int(fields[1]) == pid and fields[0] not in ("Z", "X"):
                out.append(int(d))
        except (OSError, IndexError, ValueError):
            continue
    return out


def wait_for(cond, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def epochs_done(run: Path) -> int:
    try:
        return len((run / "metrics.jsonl").read_text().splitlines())
    except OSError:
        return 0


@pytest.fixture(scope="module")
def plan(tmp_path_factory) -> Path:
    from scalegnn.data import load_dataset
    from scalegnn.dist.partition import partition_dataset
    out = tmp_path_factory.mktemp("plan2") / "plan"
    partition_dataset(load_dataset(DATA), 2, out, method="random")
    return out


@pytest.fixture(scope="module")
def pool():
    with ThreadPoolExecutor(2) as ex:
        yield ex


def _reference(cwd: Path, plan: Path) -> Path:
    r = subprocess.run(cli("dist-train", "--nprocs", 2, "--plan", plan, *RUN, "--out", "run"),
                       cwd=cwd, capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stderr
    assert [x["epoch"] for x in records(cwd / "run")] == [1, 2, 3, 4, 5, 6]
    return cwd / "run"


@pytest.fixture(scope="module")
def reference(pool, plan, tmp_path_factory):
    return pool.submit(_reference, tmp_path_factory.mktemp("reference"), plan)


def _killed_rank(cwd: Path, plan: Path, rank: int, kill: str):
    env = env_with(SCALEGNN_TEST_KILL_AT=kill, SCALEGNN_TEST_KILL_RANK=str(rank))
    return run_hosts(2, 1, ["--plan", plan, *RUN, "--out", "run", "--max-restarts", 1], cwd,
                     env), cwd / "run"


@pytest.fixture(scope="module")
def jobs(pool, plan, reference, tmp_path_factory):
    """Every scenario, submitted at once (two at a time): the module's wall time is about half
    the sum of theirs."""
    out = {kid: pool.submit(_killed_rank, tmp_path_factory.mktemp(kid), plan, rank, kill)
           for kid, rank, kill in KILLS}
    for name, fn in (("no-restarts", _no_restarts), ("host-lost", _host_lost),
                     ("launcher-killed", _launcher_killed), ("torchrun", _torchrun)):
        cwd = tmp_path_factory.mktemp(name)
        out[name] = (cwd, pool.submit(fn, cwd, plan))
    return out


def assert_resumed_once(run: Path, reference: Path):
    assert outcome(run) == outcome(reference)
    assert len(json.loads((run / "run.json").read_text()).get("resumed", [])) == 1
    assert not list(run.glob(".*.tmp"))  # the killed write's temporary is gone


@pytest.mark.parametrize("kid,rank,kill", KILLS, ids=[k[0] for k in KILLS])
def test_killed_rank_restarts_bit_identical(jobs, reference, kid, rank, kill):
    hosts, run = jobs[kid].result()
    for rc, _, err in hosts:
        assert rc == 0, err
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert len(lines) == 1, err
        assert lines[0].startswith(f"scalegnn: dist-train: rank {rank} (host 127.0.0.{2 + rank}) "
                                   f"was killed by signal 9 (SIGKILL); restarting"), err
    assert "test accuracy =" in hosts[0][1]
    assert_resumed_once(run, reference.result())


def _no_restarts(cwd: Path, plan: Path) -> dict:
    from scalegnn.dist.launch import free_port
    port = free_port()
    env = env_with(SCALEGNN_TEST_KILL_AT="batch:2", SCALEGNN_TEST_KILL_RANK="1")
    procs = [start(*host_args(n, 2, 1, port), "--plan", plan, *RUN, "--out", "run", cwd=cwd,
                   env=env) for n in range(2)]
    ranks: dict = {}

    def ranks_seen():
        for p in procs:
            for c in children(p.pid):
                ranks.setdefault(c, p.pid)
        return len(ranks) == 2

    wait_for(ranks_seen, 120, "the two ranks did not start")
    wait_for(lambda: not all(map(alive, ranks)), 120, "no rank died")
    t_dead = time.monotonic()
    out = {"errs": [], "after": []}
    for p in procs:
        _, err = p.communicate(timeout=120)
        out["after"].append(time.monotonic() - t_dead)
        out["errs"].append((p.returncode, err))
    out["ranks_left"] = [r for r in ranks if alive(r)]
    out["left"] = sorted(p.name for p in (cwd / "run").iterdir())
    r = subprocess.run(cli("dist-train", "--nprocs", 2, "--resume", "run", "--no-progress"),
                       cwd=cwd, capture_output=True, text=True, timeout=240, env=env_with())
    out["resume"] = (r.returncode, r.stderr)
    return out


def test_no_restarts_left_one_line_then_resume(jobs, reference):
    tmp_path, facts = jobs["no-restarts"][0], jobs["no-restarts"][1].result()
    for rc, err in facts["errs"]:
        assert rc == 2, err
        line = one_error_line(err)
        assert line.startswith("scalegnn: error: rank 1 (host 127.0.0.3) was killed by "
                               "signal 9"), line
        assert "no restarts left (--max-restarts 0)" in line and "--resume run" in line, line
    assert max(facts["after"]) < 30, facts["after"]
    assert facts["ranks_left"] == []
    assert "summary.json" not in facts["left"] and "last.pt" in facts["left"]
    rc, err = facts["resume"]
    assert rc == 0, err
    assert outcome(tmp_path / "run") == outcome(reference.result())


def _host_lost(cwd: Path, plan: Path) -> dict:
    from scalegnn.dist.launch import free_port
    port = free_port()
    args = ["--plan", plan, *RUN, "--out", "run", "--max-restarts", 1]
    env = env_with(**SLOW)
    procs = [start(*host_args(n, 2, 1, port), *args, cwd=cwd, env=env) for n in range(2)]
    wait_for(lambda: epochs_done(cwd / "run") >= 2, 180, "the run did not reach epoch 2")
    lock = str((cwd / "run" / ".lock").resolve())
    held = [os.readlink(f"/proc/{c}/fd/{fd}") == lock for c in children(procs[0].pid)
            for fd in os.listdir(f"/proc/{c}/fd")]
    lost = children(procs[1].pid)
    procs[1].send_signal(signal.SIGKILL)  # the whole host's launcher
    t0 = time.monotonic()
    wait_for(lambda: not any(map(alive, lost)), 10, "the lost launcher's rank survived it")
    out = {"rank_gone_s": time.monotonic() - t0, "lock_held_by_rank": any(held)}
    procs[1].communicate()
    procs[1] = start(*host_args(1, 2, 1, port), *args, cwd=cwd, env=env)  # the user reruns it
    out["hosts"] = []
    for p in procs:
        o, e = p.communicate(timeout=240)
        out["hosts"].append((p.returncode, o, e))
    return out


def test_lost_host_rejoins_and_finishes_bit_identical(jobs, reference):
    tmp_path, facts = jobs["host-lost"][0], jobs["host-lost"][1].result()
    assert facts["lock_held_by_rank"]  # node 0's rank holds the run directory's lock too
    assert facts["rank_gone_s"] < 10
    for rc, _, err in facts["hosts"]:
        assert rc == 0, err
    err0 = facts["hosts"][0][2]
    assert "lost host 127.0.0.3 (node 1, rank 1)" in err0 and "restarting" in err0, err0
    assert "scalegnn: error" not in err0 and "Traceback" not in err0, err0
    assert_resumed_once(tmp_path / "run", reference.result())


def _launcher_killed(cwd: Path, plan: Path) -> dict:
    p = start("dist-train", "--nprocs", 2, "--plan", plan, *RUN, "--out", "run", cwd=cwd,
              env=env_with(**SLOW))
    wait_for(lambda: epochs_done(cwd / "run") >= 1, 180, "the run did not reach epoch 1")
    ranks = children(p.pid)
    lock = str((cwd / "run" / ".lock").resolve())
    out = {"ranks": len(ranks), "holding": sum(
        any(os.readlink(f"/proc/{r}/fd/{fd}") == lock for fd in os.listdir(f"/proc/{r}/fd"))
        for r in ranks)}
    second = subprocess.run(cli("dist-train", "--nprocs", 2, "--resume", "run"), cwd=cwd,
                            capture_output=True, text=True, timeout=120, env=env_with())
    out["second"] = (second.returncode, second.stderr)
    p.send_signal(signal.SIGKILL)
    t0 = time.monotonic()
    wait_for(lambda: not any(map(alive, ranks)), 10, "a rank outlived its launcher")
    out["gone_s"] = time.monotonic() - t0
    p.communicate()
    r = subprocess.run(cli("dist-train", "--nprocs", 2, "--resume", "run", "--no-progress"),
                       cwd=cwd, capture_output=True, text=True, timeout=240, env=env_with())
    out["resume"] = (r.returncode, r.stderr)
    return out


def test_ranks_hold_the_lock_and_die_with_their_launcher(jobs, reference):
    tmp_path, facts = jobs["launcher-killed"][0], jobs["launcher-killed"][1].result()
    assert facts["ranks"] == 2 and facts["holding"] == 2
    rc, err = facts["second"]
    assert rc == 2 and "is writing this run directory" in one_error_line(err), err
    assert facts["gone_s"] < 10
    rc, err = facts["resume"]
    assert rc == 0, err
    assert outcome(tmp_path / "run") == outcome(reference.result())


def _torchrun(cwd: Path, plan: Path):
    from scalegnn.dist.launch import free_port
    env = env_with(SCALEGNN_TEST_KILL_AT="eval:2", SCALEGNN_TEST_KILL_RANK="1")
    return subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--max-restarts",
         "1", "--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{free_port()}", "-m",
         "scalegnn.dist", "--plan", str(plan), *RUN, "--out", "run"],
        cwd=cwd, capture_output=True, text=True, timeout=240, env=env)


def test_torchrun_restart_resumes_bit_identical(jobs, reference):
    tmp_path, r = jobs["torchrun"][0], jobs["torchrun"][1].result()
    assert r.returncode == 0, r.stderr[-3000:]
    assert_resumed_once(tmp_path / "run", reference.result())
