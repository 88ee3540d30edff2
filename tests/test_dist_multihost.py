"""Multi-host ``scalegnn dist-train`` on one machine: two launchers ("hosts") bound to 127.0.0.2
and 127.0.0.3 meet in a c10d rendezvous served on 127.0.0.1 by the one with --node-rank 0.

* 2 hosts x 2 ranks give exactly the metrics of 1 host x 4 ranks (every record of metrics.jsonl
  but the timings, and the summary);
* a rendezvous that nobody serves, a mistyped one, or one that the other hosts never join ends in
  one line and exit status 2 within --rdzv-timeout (plus the command's start-up);
* hosts that run different commands are refused in one line on both.
"""

from __future__ import annotations

import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from run_helpers import one_error_line, outcome, records

pytestmark = pytest.mark.dist

DATA = "planted:nodes=300,classes=3,features=8"
RUN = ["--epochs", "4", "--seed", "5", "--threads", "1", "--no-progress", "--timeout", "30",
       "--set", "params.dropout=0.3", "--set", "distributed.boundary_p=0.5"]
ADDRS = ("127.0.0.2", "127.0.0.3")
RDZV_TIMEOUT = 4
STARTUP_S = 25  # a command's start-up on 2 busy cores: interpreter, torch, the plan


def cli(*args) -> list[str]:
    return [sys.executable, "-m", "scalegnn", *map(str, args)]


def start(*args, cwd, env=None) -> subprocess.Popen:
    return subprocess.Popen(cli(*args), cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def host_args(node: int, nnodes: int, nprocs: int, port: int) -> list[str]:
    return ["dist-train", "--nprocs", nprocs, "--nnodes", nnodes, "--node-rank", node,
            "--rdzv", f"127.0.0.1:{port}", "--local-addr", ADDRS[node],
            "--rdzv-timeout", 60]


def run_hosts(nnodes: int, nprocs: int, args: list, cwd: Path, env=None, timeout=240) -> list:
    """The same command on ``nnodes`` launchers; (returncode, stdout, stderr) of each."""
    from scalegnn.dist.launch import free_port
    port = free_port()
    procs = [start(*host_args(n, nnodes, nprocs, port), *args, cwd=cwd, env=env)
             for n in range(nnodes)]
    out = []
    for p in procs:
        try:
            o, e = p.communicate(timeout=timeout)
        finally:
            if p.poll() is None:
                p.kill()
        out.append((p.returncode, o, e))
    return out


@pytest.fixture(scope="module")
def plan(tmp_path_factory) -> Path:
    from scalegnn.data import load_dataset
    from scalegnn.dist.partition import partition_dataset
    out = tmp_path_factory.mktemp("plan4") / "plan"
    partition_dataset(load_dataset(DATA), 4, out, method="random")
    return out


def test_two_hosts_match_one_host(plan, tmp_path):
    def one_host():
        r = subprocess.run(cli("dist-train", "--nprocs", 4, "--plan", plan, *RUN, "--out", "one"),
                           cwd=tmp_path, capture_output=True, text=True, timeout=240)
        assert r.returncode == 0, r.stderr
        return r

    with ThreadPoolExecutor(1) as ex:
        ref = ex.submit(one_host)
        hosts = run_hosts(2, 2, ["--plan", plan, *RUN, "--out", "two"], tmp_path)
        ref.result()
    for rc, _, err in hosts:
        assert rc == 0, err
        assert "Traceback" not in err and "scalegnn: error" not in err, err
    assert "test accuracy =" in hosts[0][1] and hosts[1][1] == ""  # rank 0 (node 0) reports
    recs = records(tmp_path / "two")
    assert [r["epoch"] for r in recs] == [1, 2, 3, 4] and all(len(r["ranks"]) == 4 for r in recs)
    assert outcome(tmp_path / "two") == outcome(tmp_path / "one")


def _bad(case: str, plan: Path, cwd: Path):
    from scalegnn.dist.launch import free_port
    port = free_port()
    node, rdzv = {"refused": (1, "127.0.0.1:1"), "unserved": (1, f"127.0.0.1:{port}"),
                  "no-port": (1, "nohost"), "unknown-host": (1, "nohost:29400"),
                  "alone": (0, f"127.0.0.1:{port}")}[case]
    t0 = time.perf_counter()
    r = subprocess.run(cli("dist-train", "--nprocs", 2, "--nnodes", 2, "--node-rank", node,
                           "--rdzv", rdzv, "--rdzv-timeout", RDZV_TIMEOUT, "--plan", plan,
                           *RUN, "--out", f"run-{case}"),
                       cwd=cwd, capture_output=True, text=True, timeout=120)
    return r, time.perf_counter() - t0


BAD = ["refused", "unserved", "no-port", "unknown-host", "alone"]


@pytest.fixture(scope="module")
def bad_runs(plan, tmp_path_factory):
    cwd = tmp_path_factory.mktemp("bad")
    with ThreadPoolExecutor(len(BAD)) as ex:
        return {case: ex.submit(_bad, case, plan, cwd) for case in BAD}


@pytest.mark.parametrize("case", BAD)
def test_bad_rendezvous_is_one_line_within_the_timeout(bad_runs, case):
    r, elapsed = bad_runs[case].result()
    assert r.returncode == 2, (r.stdout, r.stderr)
    line = one_error_line(r.stderr)
    want = {"refused": "no rendezvous answered within 4 s", "unserved": "no rendezvous answered",
            "no-port": "expected HOST:PORT", "unknown-host": "unknown host 'nohost'",
            "alone": "not all 2 hosts joined within 4 s"}[case]
    assert want in line, line
    assert elapsed < RDZV_TIMEOUT + STARTUP_S, elapsed


def test_hosts_running_different_commands_are_refused(plan, tmp_path):
    from scalegnn.dist.launch import free_port
    port = free_port()
    procs = [start(*host_args(n, 2, 2, port), "--plan", plan, *RUN, "--out", "run",
                   "--epochs", 4 + n, cwd=tmp_path) for n in range(2)]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 2, err
        line = one_error_line(err)
        assert "node 1 (127.0.0.3) runs another config" in line, line
    assert not (tmp_path / "run" / "config.yml").exists()  # no rank started
