"""``scalegnn bench epoch`` on a tiny Kronecker graph: JSON fields, time split, and the same
training numbers as the trainer's own epoch loop."""

import argparse
import json

import numpy as np
import pytest

from bench_helpers import assert_cost
from scalegnn.bench import epoch as bench_epoch
from scalegnn.errors import ConfigError

TINY = ["--scale", "10", "--edge-factor", "4", "--features", "8", "--labels", "5",
        "--set", "network.dim=16", "--set", "phase.num_root=60",
        "--set", "params.sample_coverage=4", "--threads", "1", "--omp-wait", "inherit"]


def _args(argv):
    p = argparse.ArgumentParser()
    bench_epoch.add_arguments(p)
    return p.parse_args(argv)


def _run(capsys, argv):
    assert bench_epoch.run(_args(argv)) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("bench") / "kron10"


def test_epoch_lines_and_summary(capsys, folder):
    recs = _run(capsys, TINY + ["--data", str(folder), "--epochs", "2"])
    assert (folder / "adj_full.npz").is_file()          # built once, reused by later tests
    epochs, summary = recs[:-1], recs[-1]
    assert [r["epoch"] for r in epochs] == [1, 2] and summary["summary"] is True
    for r in epochs:
        assert r["iterations"] == summary["iterations_per_epoch"] >= 1
        assert r["wait_s"] >= 0 and r["compute_s"] > 0 and r["spmm_s"] > 0
        assert r["spmm_calls"] == 3 * r["iterations"]   # arch 1-0-1-0: 2 forward + 1 backward
        assert r["wait_s"] + r["compute_s"] + r["other_s"] == pytest.approx(r["wall_s"])
        assert r["wait_share"] == pytest.approx(r["wait_s"] / r["wall_s"])
        assert r["subgraph_nodes_min"] <= r["subgraph_nodes_mean"] <= r["subgraph_nodes_max"]
        assert r["subgraph_nodes_max"] <= 60 * 3                       # roots x (depth + 1)
        assert r["subgraph_edges_mean"] > 0 and np.isfinite(r["loss"])
        assert r["threads"] == 1
        assert_cost(r, "iteration")
        assert r["iterations_timed"] == r["iterations"]
    assert summary["nodes"] == 1024 and summary["sampler"] == "rw"
    assert summary["sampler_params"] == {"num_root": 60, "depth": 2}
    assert summary["hidden"] == 16 and summary["arch"] == "1-0-1-0"
    assert summary["presample_s"] > 0 and summary["presampled_subgraphs"] >= 1
    assert summary["epoch_s_median"] == epochs[1]["wall_s"]             # epoch 0 excluded
    assert_cost(summary, "iteration")
    assert (summary["wall_s"], summary["cpu_s"]) == (epochs[1]["wall_s"], epochs[1]["cpu_s"])
    # 66/12/22 split of 1024 nodes (inductive: the rw sampler roots on training nodes only)
    assert summary["train_nodes"] == pytest.approx(0.66 * 1024, abs=2)
    for key in ("data_s", "loader_init_s", "wait_share_median", "meets_targets",
                "target_ratio_vs_gemm_floor", "target_wait_share", "loader_stats"):
        assert key in summary


def test_same_numbers_as_trainer_epoch(capsys, folder):
    """The benchmark's loop is the trainer's: same loader stream, same steps, same loss."""
    from scalegnn.data import load_dataset
    from scalegnn.train.trainer import Trainer
    if not folder.exists():
        _run(capsys, TINY + ["--data", str(folder), "--epochs", "1"])
    (rec, _) = _run(capsys, TINY + ["--data", str(folder), "--epochs", "1", "--seed", "3"])
    args = _args(TINY)
    bench_epoch.set_threads(1)
    cfg = bench_epoch.load_config(None, args.set)
    cfg.params["sampler_threads"] = 1
    trainer = Trainer(load_dataset(str(folder)), cfg, None, seed=3, progress=False)
    loader = trainer.mode.loader(0)
    try:
        ref = trainer.run_epoch(0)
    finally:
        loader.close()
    assert rec["iterations"] == ref["iterations"]
    assert rec["loss"] == ref["loss"]


def test_fresh_skips_presampled(capsys, folder):
    recs = _run(capsys, TINY + ["--data", str(folder), "--epochs", "1", "--fresh"])
    assert recs[0]["presampled_batches"] == 0 and recs[-1]["fresh"] is True
    recs = _run(capsys, TINY + ["--data", str(folder), "--epochs", "1"])
    assert recs[0]["presampled_batches"] == recs[0]["iterations"]   # coverage 4 > 1 epoch


def test_omp_wait_policy_runs_in_a_child(capsys, folder, monkeypatch):
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    argv = [a for a in TINY if a not in ("--omp-wait", "inherit")]
    recs = _run(capsys, argv + ["--data", str(folder), "--epochs", "1", "--omp-wait", "passive"])
    assert recs[-1]["summary"] and recs[-1]["omp_wait_policy"] == "PASSIVE"
    assert recs[0]["epoch"] == 1 and recs[0]["iterations"] >= 1


def test_bad_arguments_are_config_errors(folder):
    with pytest.raises(ConfigError, match="--epochs"):
        bench_epoch.run(_args(TINY + ["--data", str(folder), "--epochs", "0"]))
    with pytest.raises(ConfigError, match="--threads"):
        bench_epoch.run(_args(TINY + ["--data", str(folder), "--threads", "0"]))


def test_cli_lists_epoch():
    from scalegnn.cli import bench as cli_bench
    p = argparse.ArgumentParser()
    cli_bench.add_parser(p.add_subparsers())
    args = p.parse_args(["bench", "epoch", "--epochs", "1", "--threads", "2"])
    assert args.func is bench_epoch.run and args.threads == 2
