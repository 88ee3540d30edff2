"""``scalegnn compare`` and the time budget it rests on (``params.time_budget``).

The budget against the Trainer's records (it stops after the first epoch past the budget, that
epoch validated whatever eval_every says, the reason in summary.json, the clock in every
record); the shipped method configs and how they are fitted to a graph (transductive from the
data, sizes capped by it); the command's refusals (one line, exit 2) and its output folder
(the table's fields, the plot, one run directory per method).
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from conftest import make_tiny_dataset
from scalegnn.cli import main
from scalegnn.compare import (CONFIG_DIR, METHODS, check_out, data_settings, method_overrides,
                              parse_methods, time_to_target)
from scalegnn.config import Config
from scalegnn.errors import ConfigError
from scalegnn.graph import Graph
from scalegnn.train import Trainer

DATA = "planted:nodes=300,classes=3,features=8"


# ----------------------------------------------------------------------------- time budget
def test_time_budget_stops_after_the_epoch_it_ran_out_in_and_validates_it(tmp_path):
    cfg = Config.builtin().override(["params.time_budget=1e-6", "params.eval_every=7",
                                     "phase.end=50", "phase.num_root=5"])
    result = Trainer(make_tiny_dataset(60), cfg, tmp_path / "r", progress=False).fit()
    assert result["epochs_run"] == 1 and result["best_epoch"] == 1
    assert result["stopped"].startswith("time budget: stopped after epoch 1,")
    assert "params.time_budget 1e-06 s" in result["stopped"]
    rec = [json.loads(line) for line in (tmp_path / "r" / "metrics.jsonl").open()]
    assert len(rec) == 1 and "val" in rec[0]  # validated although eval_every is 7
    assert 0 < rec[0]["train_elapsed_s"] <= rec[0]["elapsed_s"]
    assert rec[0]["elapsed_s"] - rec[0]["train_elapsed_s"] == pytest.approx(rec[0]["eval_s"],
                                                                             abs=0.05)
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["stopped"] == result["stopped"]


def test_no_budget_runs_every_epoch_and_the_clock_grows():
    cfg = Config.builtin().override(["phase.end=3", "params.patience=0", "phase.num_root=5"])
    trainer = Trainer(make_tiny_dataset(60), cfg, None, progress=False)
    result = trainer.fit()
    assert result["epochs_run"] == 3 and result["stopped"] == "finished: all 3 epochs"
    clocks = [r["train_elapsed_s"] for r in trainer.history]
    assert clocks == sorted(clocks) and clocks[0] > 0


def test_a_resumed_run_continues_its_clock_and_keeps_a_spent_budget(tmp_path):
    ds, run = make_tiny_dataset(60), tmp_path / "r"
    base = ["params.patience=0", "phase.num_root=5"]
    Trainer(ds, Config.builtin().override([*base, "phase.end=2"]), run, progress=False).fit()
    Trainer(ds, Config.builtin().override([*base, "phase.end=3"]), run, progress=False,
            resume=True).fit()
    rec = [json.loads(line) for line in (run / "metrics.jsonl").open()]
    assert [r["epoch"] for r in rec] == [1, 2, 3]
    assert rec[0]["train_elapsed_s"] < rec[1]["train_elapsed_s"] < rec[2]["train_elapsed_s"]
    assert rec[2]["elapsed_s"] > rec[1]["elapsed_s"]
    spent = rec[2]["train_elapsed_s"] / 2  # a budget the run had spent before: no new epoch
    again = Trainer(ds, Config.builtin().override([*base, "phase.end=9",
                                                   f"params.time_budget={spent}"]),
                    run, progress=False, resume=True).fit()
    assert again["epochs_run"] == 3 and again["stopped"].startswith("time budget")


def test_time_budget_is_checked_like_other_params():
    with pytest.raises(ConfigError, match="params.time_budget"):
        Config.builtin().override(["params.time_budget=-1"])


# ----------------------------------------------------------------------------- methods
def test_every_method_ships_a_config_that_validates():
    assert sorted(p.stem for p in CONFIG_DIR.glob("*.yml")) == sorted(METHODS)
    settings = {"transductive": True, "nodes": 5000, "train_nodes": 2000,
                "sampled_from": 5000}
    for method in METHODS:
        cfg = Config.from_yaml(CONFIG_DIR / f"{method}.yml")
        cfg.override(method_overrides(cfg, settings, 30.0)).validate_for_mode("graphsaint")
        assert cfg.params["time_budget"] == 30.0 and cfg.params["eval_every"] == 1
        assert cfg.params["patience"] == 0 and cfg.epochs == 10**7


def test_sizes_are_capped_by_the_graph():
    small = {"transductive": True, "nodes": 2708, "train_nodes": 140, "sampled_from": 2708}

    def sets(method):
        cfg = Config.from_yaml(CONFIG_DIR / f"{method}.yml")
        return dict(o.split("=", 1) for o in method_overrides(cfg, small, 10.0))

    assert sets("saint-rw")["phase.num_root"] == str(2708 // 12)
    assert sets("saint-node")["phase.size_subgraph"] == str(2708 // 4)
    assert sets("neighbour")["phase.batch_size"] == "35"
    assert sets("shadow")["shadow.batch_size"] == "35"
    cluster = sets("cluster")
    assert cluster["phase.num_parts"] == "27" and cluster["phase.parts_per_batch"] == "6"
    big = {**small, "nodes": 10**7, "train_nodes": 10**6, "sampled_from": 10**7}
    cfg = Config.from_yaml(CONFIG_DIR / "saint-rw.yml")
    assert not any(o.startswith("phase.num_root") for o in method_overrides(cfg, big, 1.0))


def test_transductive_follows_the_data():
    ds = make_tiny_dataset(80)
    assert data_settings(ds)["transductive"]  # one graph and a node split
    ds.train_graph = ds.train_graph  # shipped with a training graph (GraphSAINT's adj_train)
    settings = data_settings(ds)
    assert settings["transductive"] is False
    assert settings["sampled_from"] == settings["train_nodes"] == len(ds.train_idx)
    n = ds.num_nodes  # a training graph that leaves the training nodes alone (Cora's split)
    ds.train_graph = Graph(np.zeros(n + 1, dtype=np.int64), np.zeros(0, dtype=np.int32), n)
    assert data_settings(ds)["transductive"] is True


def test_time_to_target_is_the_first_point_at_or_above_it():
    points = {"train_s": [1.0, 2.0, 3.0], "val": [0.5, 0.9, 0.95]}
    assert time_to_target(points, 0.9) == 2.0
    assert time_to_target(points, 0.96) is None


# ----------------------------------------------------------------------------- command line
@pytest.mark.parametrize("argv, says", [
    (["--methods", "saint-rw,gat"], "--methods: unknown method 'gat'; known: saint-rw, "),
    (["--methods", "full,,cluster"], "--methods: empty item"),
    (["--methods", "full,full"], "--methods: full is listed twice"),
    (["--budget", "0"], "--budget"),
    (["--budget", "nan"], "--budget"),
])
def test_bad_flags_are_one_line_and_exit_2(argv, says, tmp_path, capsys):
    args = ["compare", DATA, "--budget", "1", "--out", str(tmp_path / "o"), *argv]
    assert main(args) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("scalegnn")]
    assert len(err) == 1 and says in err[0]
    assert not (tmp_path / "o").exists()


def test_missing_data_is_one_line(tmp_path, capsys):
    assert main(["compare", str(tmp_path / "nope"), "--budget", "1", "--out",
                 str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("scalegnn: error: ") and "nope" in err[0]
    assert not (tmp_path / "o").exists()


def test_out_follows_train_out_rules(tmp_path):
    check_out(tmp_path / "new", False)
    (tmp_path / "empty").mkdir()
    check_out(tmp_path / "empty", False)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("x")
    with pytest.raises(ConfigError, match="not empty .*'notes.txt'"):
        check_out(tmp_path / "mine", True)
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "metrics.jsonl").write_text("")
    with pytest.raises(ConfigError, match="holds a run directory"):
        check_out(tmp_path / "run", True)
    (tmp_path / "cmp").mkdir()
    (tmp_path / "cmp" / "compare.json").write_text("{}")
    with pytest.raises(ConfigError, match="pass --overwrite"):
        check_out(tmp_path / "cmp", False)
    check_out(tmp_path / "cmp", True)
    assert parse_methods("full, saint-rw") == ["full", "saint-rw"]


def _compare(tmp_path, methods: str, budget: str):
    out = tmp_path / "cmp"
    proc = subprocess.run([sys.executable, "-m", "scalegnn", "compare", DATA, "--methods",
                           methods, "--budget", budget, "--threads", "1", "--no-progress",
                           "--out", str(out)], capture_output=True, text=True, timeout=600,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    odd = [ln for ln in proc.stderr.splitlines() if not ln.startswith("scalegnn: ")]
    assert not odd, odd
    return out, json.loads((out / "compare.json").read_text()), proc


def test_short_compare_writes_the_table_the_plot_and_the_runs(tmp_path):
    out, table, proc = _compare(tmp_path, "saint-node,full", "0.5")
    assert [m["method"] for m in table["methods"]] == ["saint-node", "full"]
    assert table["budget_s"] == 0.5 and table["seed"] == 0 and table["transductive"]
    best = max(m["best_val"] for m in table["methods"])
    assert table["target"]["value"] == pytest.approx(0.99 * best)
    for m in table["methods"]:
        for key in ("best_val", "test_at_best_val", "epochs_run", "wall_s", "train_s",
                    "time_to_target_s", "peak_rss_bytes", "curve", "command"):
            assert key in m, key
        assert m["stopped"].startswith("time budget") and m["train_s"] >= 0.5
        assert m["curve"]["epoch"] == list(range(1, m["epochs_run"] + 1))  # every epoch
        assert m["best_val"] == max(m["curve"]["val"])
        assert m["peak_rss_bytes"] > 50 * 2**20
        run = out / m["run_dir"]
        assert (run / "summary.json").is_file() and (run / "metrics.jsonl").is_file()
        assert json.loads((run / "summary.json").read_text())["epochs_run"] == m["epochs_run"]
    winner = table["fastest_to_target"]
    times = {m["method"]: m["time_to_target_s"] for m in table["methods"]
             if m["time_to_target_s"] is not None}
    assert winner == min(times, key=times.get)
    assert (out / "compare.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "fastest to it: " + winner in proc.stdout
    assert not list(tmp_path.glob(".cmp.*"))  # no temporary left


@pytest.mark.slow
def test_all_methods_run(tmp_path):
    pytest.importorskip("pymetis")
    _, table, _ = _compare(tmp_path, ",".join(METHODS), "2")
    assert [m["method"] for m in table["methods"]] == list(METHODS)
    for m in table["methods"]:
        assert "curve" in m, m
        assert m["best_val"] > 0.5, m
