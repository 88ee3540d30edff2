"""``scalegnn dist-train`` with ``distributed.mode: data`` and ``partition``: the same run
directory as every mode, one-line refusals, predict from the run, and exact resume after rank 1
is SIGKILLed mid-epoch (metrics identical to the uninterrupted run's)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from run_helpers import dist_train, outcome, random_plan, records, scalegnn

pytestmark = [pytest.mark.dist]

DATA = "planted:nodes=400,classes=3,features=16"
COMMON = ["--epochs", "3", "--seed", "4", "--threads", "1", "--no-progress", "--timeout", "20",
          "--set", "params.dropout=0.2", "--set", "network.dim=16",
          "--set", "phase.num_root=10", "--set", "params.sample_coverage=5"]


@pytest.fixture(scope="module")
def plan(tmp_path_factory) -> Path:
    return random_plan(tmp_path_factory.mktemp("plan"), DATA)


def mode_args(kind: str, plan: Path) -> list[str]:
    args = ["--data", DATA, "--set", f"distributed.mode={kind}"]
    return args + (["--plan", str(plan)] if kind == "partition" else [])


@pytest.mark.parametrize("kind", ["data", "partition"])
def test_run_directory_and_predict(tmp_path, plan, kind):
    r = dist_train(*mode_args(kind, plan), *COMMON, "--out", "run", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    run = tmp_path / "run"
    info = json.loads((run / "run.json").read_text())
    assert info["mode"] == f"{kind}-parallel" and info["world_size"] == 2
    assert info["data"] == DATA and info["inner_mode"] == "graphsaint"
    recs = records(run)
    assert [x["epoch"] for x in recs] == [1, 2, 3]
    assert all(0.0 <= x["allreduce_hidden_share"] <= 1.0 for x in recs)
    if kind == "partition":  # every step's rows and bytes sent
        assert all(len(x["step_rows_sent"]) == x["iterations"] > 0 for x in recs)
        assert all(min(x["step_bytes_sent"]) > 0 for x in recs)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["test"]["accuracy"] > 0.5
    p = scalegnn("predict", "run", "--split", "test", "--out", "t.npy", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert f"(summary.json: {summary['test']['accuracy']:.4f})" in p.stdout
    assert np.load(tmp_path / "t.npy").shape[1] == 3


def test_shadow_config_trains_data_parallel(tmp_path):
    cfg = tmp_path / "shadow.yml"
    cfg.write_text("shadow:\n  extractors: [{kind: khop, depth: 2, budget: 5}]\n"
                   "  batch_size: 32\n  cache_dir: none\n")
    r = dist_train("--data", DATA, "--config", cfg, "--set", "distributed.mode=data",
                   "--epochs", "2", "--threads", "1", "--no-progress", "--out", "run",
                   cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    info = json.loads((tmp_path / "run" / "run.json").read_text())
    assert info["mode"] == "data-parallel" and info["inner_mode"] == "shadow"


@pytest.mark.parametrize("args,msg", [
    (["--set", "distributed.mode=data"], "--data: required by distributed.mode data"),
    (["--set", "distributed.mode=partition", "--data", DATA], "--plan: required"),
    (["--set", "distributed.mode=full", "--set", "network.model=gcn"], "network.model"),
])
def test_one_line_refusals(tmp_path, args, msg):
    r = dist_train(*args, "--epochs", "1", cwd=tmp_path)
    assert r.returncode == 2 and msg in r.stderr and len(r.stderr.strip().splitlines()) == 1


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["data", "partition"])
def test_sigkill_of_rank1_mid_epoch_then_resume_is_exact(tmp_path, plan, kind):
    ref, cut = tmp_path / "ref", tmp_path / "cut"
    ref.mkdir()
    cut.mkdir()
    r = dist_train(*mode_args(kind, plan), *COMMON, "--out", "run", cwd=ref)
    assert r.returncode == 0, r.stderr
    steps = records(ref / "run")[0]["iterations"]     # per rank and epoch: 4 (data), 7 (partition)
    assert steps >= 4
    r = dist_train(*mode_args(kind, plan), *COMMON, "--out", "run", cwd=cut,
                   kill=f"batch:{steps + 2}", rank=1)  # epoch 2, after its 2nd step
    assert r.returncode != 0 and "rank 1" in r.stderr, r.stderr
    assert [x["epoch"] for x in records(cut / "run")] == [1]
    r = dist_train("--resume", "run", "--no-progress", cwd=cut)
    assert r.returncode == 0, r.stderr
    assert outcome(cut / "run") == outcome(ref / "run")
