"""Run reports (report.png + report.html), the per-epoch CSV/TensorBoard loggers and the numba
compile clock: numbers in the report against sums computed here by hand, hand-written
single-process and distributed run folders, a real small run, and one-line errors."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time

import numpy as np
import pytest
import yaml

from scalegnn.cli import main as cli_main
from scalegnn.config import Config
from scalegnn.errors import ConfigError
from scalegnn.report import load_run, report_after_run, write_report
from scalegnn.report.rundata import rank_split, rank_totals
from scalegnn.engine.loggers import flatten_record, parse_loggers
from scalegnn.engine.rundir import RunDir

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def single_records(n=6, every=2):
    recs = []
    for e in range(1, n + 1):
        r = {"epoch": e, "loss": 2.0 / e, "iterations": 3, "sample_s": 0.01 * e,
             "compute_s": 0.2 + (1.5 if e == 1 else 0.0)}
        if e == 1:
            r.update(presample_s=0.7, compile_s=1.2)
        if e % every == 0 or e == n:
            acc = [0, 0.5, 0.6, 0.65, 0.7, 0.66, 0.64][e]
            r["val"] = {"accuracy": acc, "f1_micro": acc, "f1_macro": acc - 0.05}
            r["eval_s"] = 0.1
        recs.append(r)
    return recs


def write_run(path, recs, summary=None, info=None):
    path.mkdir(parents=True, exist_ok=True)
    (path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    if summary is not None:
        (path / "summary.json").write_text(json.dumps(summary))
    (path / "run.json").write_text(json.dumps(info or {"mode": "graphsaint", "seed": 4,
                                                       "argv": ["scalegnn", "train"]}))
    (path / "config.yml").write_text(Config().to_yaml())
    return path


def single_summary(recs):
    return {"mode": "graphsaint", "dataset": "toy<&>", "metric": "accuracy", "best_epoch": 4,
            "epochs": len(recs), "seed": 4,
            "test": {"accuracy": 0.61, "f1_micro": 0.61, "f1_macro": 0.55},
            "val": {"accuracy": 0.7, "f1_micro": 0.7, "f1_macro": 0.65},
            "train": {"accuracy": 0.9, "f1_micro": 0.9, "f1_macro": 0.88},
            "time": {"wall_s": 5.0, "eval_s": 0.3 + 0.25, "presample_s": 0.7}}


def test_report_of_a_single_process_run(tmp_path):
    recs = single_records()
    run = write_run(tmp_path / "run", recs, single_summary(recs))
    paths = write_report(run)
    assert paths["png"].read_bytes()[:8] == PNG_MAGIC
    page = paths["html"].read_text()
    assert "data:image/png;base64," in page
    for banned in ("http://", "https://", "<script", "<link"):  # self-contained, no network
        assert banned not in page
    assert "toy&lt;&amp;&gt;" in page and "toy<&>" not in page  # escaped
    assert "test accuracy 0.6100 at best epoch 4/6" in page
    assert "<tr class='best'><td class='k'>4</td>" in page
    data = load_run(run)
    tot = data.time_totals()
    # reference: the same sums written out by hand
    assert tot["presample_s"] == pytest.approx(0.7)
    assert tot["sample_s"] == pytest.approx(0.01 * sum(range(1, 7)))
    assert tot["compute_s"] == pytest.approx(6 * 0.2 + 1.5)
    assert tot["eval_s"] == pytest.approx(0.3)
    assert tot["final_eval_s"] == pytest.approx(0.25)
    assert tot["compile_s"] == pytest.approx(1.2)
    assert tot["other_s"] == pytest.approx(5.0 - 0.7 - 0.21 - 2.7 - 0.3)
    fo = data.first_epoch_overhead()
    assert fo["first_s"] == pytest.approx(1.71)
    assert fo["typical_s"] == pytest.approx(0.24)  # median of 0.22, 0.23, ..., 0.26
    assert fo["extra_s"] == pytest.approx(1.71 - 0.24) and fo["compile_s"] == 1.2
    assert data.val_keys == ["accuracy", "f1_micro", "f1_macro"] and data.best_epoch == 4


def test_unfinished_run_reports_best_so_far(tmp_path):
    recs = single_records(5)
    run = write_run(tmp_path / "run", recs)  # killed: no summary.json
    with open(run / "metrics.jsonl", "ab") as f:
        f.write(b'{"epoch": 6, "lo')  # torn last line
    data = load_run(run)
    assert data.epochs == [1, 2, 3, 4, 5] and data.best_epoch == 4 and data.summary == {}
    page = write_report(run)["html"].read_text()
    assert "unfinished: 5 epochs recorded, best val accuracy at epoch 4" in page
    assert "No summary.json" in page


def dist_records(n=3, world=2):
    recs = []
    for e in range(1, n + 1):
        ranks = [{"epoch_s": 1.0 + r, "compute_s": 0.5 + r, "comm_s": 0.4, "wait_s": 0.1 * (r + 1),
                  "allreduce_s": 0.1, "bytes_sent": 2**20 * (r + 1), "bytes_recv": 2**21,
                  "peak_rss_mb": 100.0 + e, "cuda_peak_mb": 0.0, "kept_boundary": 5.0}
                 for r in range(world)]
        recs.append({"epoch": e, "loss": 1.0 / e, "iterations": 1, "sample_s": 0.0,
                     "compute_s": 1.0, "p": 0.5, "ranks": ranks,
                     "val": {"accuracy": 0.5 + 0.1 * e}, "eval_s": 0.2})
    return recs


def test_report_of_a_distributed_run(tmp_path):
    recs = dist_records()
    summary = {"mode": "distributed", "dataset": "d", "metric": "accuracy", "best_epoch": 3,
               "epochs": 3, "seed": 0, "test": {"accuracy": 0.75}, "world_size": 2,
               "boundary_p": 0.5, "peak_rss_mb": [110.0, 120.0],
               "time": {"wall_s": 4.0, "eval_s": 0.7}}
    run = write_run(tmp_path / "run", recs, summary, {"mode": "distributed"})
    data = load_run(run)
    assert data.distributed and data.world == 2
    parts = rank_split(recs[0]["ranks"][1])
    assert sum(parts.values()) == pytest.approx(recs[0]["ranks"][1]["epoch_s"])
    assert parts["exchange_s"] == pytest.approx(0.4 - 0.2)
    tot = rank_totals(data)
    assert tot[1]["epochs"] == 3 and tot[1]["bytes_sent"] == 3 * 2 * 2**20
    assert tot[0]["wait_s"] == pytest.approx(0.3) and tot[0]["peak_rss_mb"] == 103.0
    paths = write_report(run)
    assert paths["png"].read_bytes()[:8] == PNG_MAGIC
    page = paths["html"].read_text()
    assert "<h2>Per rank</h2>" in page and "2 ranks, boundary p=0.5" in page
    # rank 1: 2 MiB sent, 2 MiB received per epoch; peak RSS from summary.json
    assert "<td>2.000</td><td>2.000</td><td>120.0</td>" in page


@pytest.mark.parametrize("damage", ["missing", "no_metrics", "empty", "bad_summary",
                                    "bad_config", "no_epoch"])
def test_report_cli_errors_are_one_line(tmp_path, capsys, damage):
    run = write_run(tmp_path / "run", single_records(2), single_summary(single_records(2)))
    target = run
    if damage == "missing":
        target = tmp_path / "nope"
    elif damage == "no_metrics":
        (run / "metrics.jsonl").unlink()
    elif damage == "empty":
        (run / "metrics.jsonl").write_text("")
    elif damage == "bad_summary":
        (run / "summary.json").write_text("{not json")
    elif damage == "bad_config":
        (run / "config.yml").write_text("a: [1,")
    else:
        (run / "metrics.jsonl").write_text('{"loss": 1.0}\n')
    assert cli_main(["report", str(target)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("scalegnn: error:") and "\n" not in err and "Traceback" not in err


def test_report_cli_writes_both_files(tmp_path, capsys):
    run = write_run(tmp_path / "run", single_records(3), single_summary(single_records(3)))
    out = tmp_path / "elsewhere" / "r.png"
    out.parent.mkdir()
    assert cli_main(["report", str(run), "--out", str(out)]) == 0
    printed = capsys.readouterr().out.split()
    assert printed == [str(out), str(out.with_suffix(".html"))]
    assert out.read_bytes()[:8] == PNG_MAGIC and out.with_suffix(".html").is_file()


def test_report_problem_never_fails_the_run(tmp_path, monkeypatch, capsys):
    from scalegnn.report import plot as plot_module
    from test_train import planted, small_config

    from scalegnn.train.trainer import Trainer

    def broken(*a, **k):
        raise RuntimeError("font cache exploded\nsecond line")
    monkeypatch.setattr(plot_module, "draw_report", broken)
    assert report_after_run(tmp_path) is None  # not even a run folder: a warning only
    res = Trainer(planted(n=200), small_config(epochs=2), tmp_path / "r", progress=False).fit()
    assert res["best_epoch"] >= 1 and (tmp_path / "r" / "summary.json").is_file()
    err = capsys.readouterr().err
    assert "warning: no report" in err and "font cache exploded" in err
    assert "second line" not in err and not (tmp_path / "r" / "report.png").exists()


def test_real_run_writes_report_and_csv(tmp_path):
    from test_train import planted, small_config

    from scalegnn.train.trainer import Trainer
    cfg = small_config(epochs=3, loggers="csv", eval_every=2)
    Trainer(planted(n=200), cfg, tmp_path / "r", progress=False).fit()
    run = tmp_path / "r"
    assert (run / "report.png").read_bytes()[:8] == PNG_MAGIC
    assert "<h2>Epochs</h2>" in (run / "report.html").read_text()
    recs = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    rows = (run / "metrics.csv").read_text().splitlines()
    head = rows[0].split(",")
    assert head[:3] == ["epoch", "loss", "iterations"] and "val_accuracy" in head
    assert len(rows) == 1 + len(recs) == 4
    for line, rec in zip(rows[1:], recs):  # every number is the metrics.jsonl number
        row = dict(zip(head, line.split(",")))
        for k, v in flatten_record(rec).items():
            assert float(row[k]) == v
        assert ("val_accuracy" in flatten_record(rec)) == (row["val_accuracy"] != "")
    for rec in recs:
        assert rec.get("compile_s", 0.0) >= 0.0


def test_csv_follows_a_resumed_run(tmp_path):
    run = RunDir(tmp_path / "r", loggers="csv")
    run.truncate_metrics(0)
    for rec in dist_records(3):
        run.append_metrics(rec)
    run.close()
    rows = (tmp_path / "r" / "metrics.csv").read_text().splitlines()
    assert len(rows) == 4 and "rank1_bytes_sent" in rows[0].split(",")
    (tmp_path / "r" / "config.yml").write_text(Config().to_yaml())
    again = RunDir(tmp_path / "r", resume=True, loggers="csv")
    again.truncate_metrics(2)  # the resumed run repeats epoch 3
    again.close()
    rows = (tmp_path / "r" / "metrics.csv").read_text().splitlines()
    assert [r.split(",")[0] for r in rows[1:]] == ["1", "2"]


def test_loggers_key_is_validated(monkeypatch):
    assert parse_loggers("none") == () and parse_loggers("CSV") == ("csv",)
    with pytest.raises(ConfigError, match=r"params\.loggers: 'wandb' is not one of"):
        Config().override(["params.loggers=csv+wandb"])
    import importlib.util
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ConfigError, match="params.loggers: tensorboard is not installed"):
        Config().override(["params.loggers=tensorboard"])
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: object())
    assert parse_loggers("csv+tensorboard") == ("csv", "tensorboard")


def test_tensorboard_logger_writes_scalars(tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    run = RunDir(tmp_path / "r", loggers="tensorboard")
    run.truncate_metrics(0)
    for rec in single_records(4):
        run.append_metrics(rec)
    run.close()
    (tmp_path / "r" / "config.yml").write_text(Config().to_yaml())
    again = RunDir(tmp_path / "r", resume=True, loggers="tensorboard")
    again.truncate_metrics(2)  # resumed after epoch 2: epochs 3-4 are trained again
    for rec in single_records(4)[2:]:
        again.append_metrics({**rec, "loss": 10.0 * rec["epoch"]})
    again.close()
    acc = EventAccumulator(str(tmp_path / "r" / "tensorboard"))
    acc.Reload()
    loss = {s.step: s.value for s in acc.Scalars("loss")}
    assert loss == pytest.approx({1: 2.0, 2: 1.0, 3: 30.0, 4: 40.0})  # old 3-4 purged
    assert [s.step for s in acc.Scalars("val/accuracy")] == [2, 4]
    assert acc.Scalars("time/compute_s")[0].value == pytest.approx(1.7)


def test_compile_clock_counts_numba_compilation():
    import numba

    from scalegnn.engine.jitclock import compile_seconds, compile_since

    @numba.njit(cache=False)
    def fresh(a):
        s = 0.0
        for v in a:
            s += math.sqrt(v) * 1.000001
        return s

    start = compile_seconds()
    t0 = time.perf_counter()
    fresh(np.ones(3))  # compiles now
    wall = time.perf_counter() - t0
    spent = compile_seconds() - start
    assert 0.5 * wall <= spent <= wall  # compiling is nearly all of a first call
    start = compile_seconds()
    fresh(np.ones(3))  # compiled: nothing more
    assert compile_seconds() - start == 0.0 and compile_since(start) == {}


@pytest.mark.dist
def test_real_distributed_run_report(tmp_path):
    from test_dist_correctness import CFG, tiny_dataset

    from scalegnn.dist.partition import partition_dataset
    partition_dataset(tiny_dataset(), 2, tmp_path / "plan", method="metis")
    (tmp_path / "cfg.yml").write_text(yaml.safe_dump(CFG))
    r = subprocess.run([sys.executable, "-m", "scalegnn", "dist-train", "--nprocs", "2",
                        "--plan", str(tmp_path / "plan"), "--config", str(tmp_path / "cfg.yml"),
                        "--epochs", "2", "--out", str(tmp_path / "run"),
                        "--set", "params.loggers=csv"],
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    page = (tmp_path / "run" / "report.html").read_text()
    assert "<h2>Per rank</h2>" in page and "<td class='k'>rank 1</td>" in page
    head = (tmp_path / "run" / "metrics.csv").read_text().splitlines()[0].split(",")
    assert "rank1_wait_s" in head and "rank0_bytes_sent" in head
    assert not math.isnan(load_run(tmp_path / "run").time_totals()["wall_s"])


def test_early_stopped_run_with_lr_schedule(tmp_path):
    recs = [{**r, "lr": 0.01 / r["epoch"]} for r in single_records(5)]
    summary = {**single_summary(recs), "epochs": 30, "epochs_run": 5,
               "stopped": "early stop at epoch 5: no better val accuracy"}
    page = write_report(write_run(tmp_path / "run", recs, summary))["html"].read_text()
    assert "at best epoch 4/30, stopped early after epoch 5" in page
    assert "early stop at epoch 5: no better val accuracy" in page
    assert "<th>lr</th>" in page and "<td>0.002000</td>" in page  # epoch 5's rate
