"""CLI: ``scalegnn partition`` and ``scalegnn dist-train`` (torchrun), checkpoint + resume.

The resumed run (2 epochs, then --resume to 3) must reproduce the single-process full-batch
losses of the first 3 Adam steps (p = 1, float64): the checkpoint restores weights AND the
optimizer state."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import yaml

from scalegnn.cli import main as cli_main
from scalegnn.dist.partition import partition_dataset
from scalegnn.dist.plan import PartitionPlan
from test_dist_correctness import CFG, reference, tiny_dataset


def test_partition_cli(tmp_path, capsys):
    rc = cli_main(["partition", "planted:nodes=300,classes=3,features=8", "--parts", "3",
                   "--method", "random", "--out", str(tmp_path / "p")])
    assert rc == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    plan = PartitionPlan.load(tmp_path / "p", world_size=3)
    assert out["parts"] == 3 and out["comm_volume"] == plan.meta["totals"]["comm_volume"]
    assert sum(s["inner"] for s in plan.meta["stats"]) == 300
    assert cli_main(["partition", "planted:nodes=300", "--parts", "2", "--method", "kahip",
                     "--out", str(tmp_path / "q")]) == 2


def _dist_train(*args):
    return subprocess.run([sys.executable, "-m", "scalegnn", "dist-train", "--nprocs", "2", *args],
                          capture_output=True, text=True, timeout=180)


@pytest.mark.dist
def test_dist_train_checkpoint_and_resume(tmp_path):
    ds = tiny_dataset()
    partition_dataset(ds, 2, tmp_path / "plan", method="metis")
    (tmp_path / "cfg.yml").write_text(yaml.safe_dump(CFG))
    run = tmp_path / "run"
    r = _dist_train("--plan", str(tmp_path / "plan"), "--config", str(tmp_path / "cfg.yml"),
                    "--epochs", "2", "--out", str(run), "--seed", "3")
    assert r.returncode == 0, r.stderr
    assert {"config.yml", "run.json", "metrics.jsonl", "best.pt", "last.pt", "summary.json",
            "report.png"} <= {p.name for p in run.iterdir()}
    r = _dist_train("--resume", str(run), "--epochs", "3")
    assert r.returncode == 0, r.stderr
    recs = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert [rec["epoch"] for rec in recs] == [1, 2, 3]
    ref_loss, _ = reference(ds)
    np.testing.assert_allclose([rec["loss"] for rec in recs], ref_loss, rtol=1e-5)
    for rec in recs:
        assert len(rec["ranks"]) == 2 and "accuracy" in rec["val"]
        for rk in rec["ranks"]:
            assert rk["bytes_sent"] > 0 and rk["peak_rss_mb"] > 0 and rk["epoch_s"] >= rk["comm_s"]
    summary = json.loads((run / "summary.json").read_text())
    assert summary["best_epoch"] in (1, 2, 3) and summary["world_size"] == 2
    assert summary["mode"] == "distributed" and "accuracy" in summary["test"]
