"""Exact resume and safe checkpoints, single process (``scalegnn train``).

The property (the issue's target): a run SIGKILLed at any point and continued with
``scalegnn train --resume RUN`` ends with exactly the metrics.jsonl records (every field but the
``*_s`` timings) and the summary.json metrics of the uninterrupted run with the same seed and
``--threads``. The kills are real: the CLI runs in a subprocess and ``SCALEGNN_TEST_KILL_AT``
makes ``scalegnn.faults.crash_point`` SIGKILL it. Then: checkpoints are loaded without running
pickled code, refused in one line when they belong to another dataset or model, and the run
directory rules (one writer, no silent overwrite, resume keeps its recorded data/split/seed, a
finished run is left alone, a torn metrics line is skipped) hold.
"""

from __future__ import annotations

import json
import os
import pickle
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from scalegnn.cli import main as cli_main
from scalegnn.errors import ConfigError, TrainingError

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


def records(run: Path) -> list[dict]:
    """metrics.jsonl, every line whole."""
    raw = (run / "metrics.jsonl").read_bytes()
    assert raw == b"" or raw.endswith(b"\n"), raw[-80:]
    return [json.loads(line) for line in raw.decode().splitlines()]


def comparable(rec: dict) -> dict:
    """A metrics record without timings (``*_s``, and ``overlap_share``, a ratio of timings) and,
    for distributed records, with only the per-rank fields that do not depend on the clock or the
    allocator."""
    out = {k: v for k, v in rec.items() if not k.endswith("_s") and k != "overlap_share"}
    if "ranks" in out:
        keep = ("bytes_sent", "bytes_recv", "kept_boundary", "rows_sent")
        out["ranks"] = [{f: r[f] for f in keep}
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


@pytest.fixture(scope="module")
def pool():
    """Two subprocess runs at a time (the kill/resume pairs are independent)."""
    with ThreadPoolExecutor(2) as ex:
        yield ex


def _reference(cwd: Path) -> Path:
    r = scalegnn("train", *RUN, "--out", "run", cwd=cwd)
    assert r.returncode == 0, r.stderr
    run = cwd / "run"
    recs, _ = outcome(run)
    assert [x["epoch"] for x in recs] == [1, 2, 3, 4]
    assert all(x["iterations"] == 5 for x in recs)  # several batches: mid-epoch kills exist
    return run


@pytest.fixture(scope="module")
def reference_future(pool, tmp_path_factory):
    return pool.submit(_reference, tmp_path_factory.mktemp("reference"))


@pytest.fixture(scope="module")
def reference(reference_future):
    """The uninterrupted run every resumed one must reproduce."""
    return reference_future.result()


@pytest.fixture
def run_copy(reference, tmp_path):
    """A private copy of the finished reference run (mtimes kept)."""
    dst = tmp_path / "run"
    shutil.copytree(reference, dst, ignore=shutil.ignore_patterns(".lock"))
    return dst


# ----------------------------------------------------------------------------- exact resume
# (test id, kill spec, extra args). Saves of the default run: best.pt (1), last.pt (2) at epoch
# 1; with EVERY_ITER: last.pt after iterations 1-4 of epoch 1 (saves 1-4), then best, last.
KILLS = [
    ("presample-1", "presample:1", []),           # before any checkpoint: starts over
    ("batch-8-epoch-end-ckpts", "batch:8", []),    # mid epoch 2, back to the end of epoch 1
    ("batch-8-every-iter", "batch:8", EVERY_ITER),  # mid epoch 2, resumes at iteration 3
    ("batch-14-every-iter", "batch:14", EVERY_ITER),
    ("save-2-first-last", "save:2", []),           # first last.pt half-written: starts over
    ("save-3-mid-epoch", "save:3", EVERY_ITER),    # mid-epoch last.pt half-written
    ("eval-2", "eval:2", []),
    ("metrics-2", "metrics:2", []),                # record written, last.pt not yet
    ("epoch-2-torn-line", "epoch:2", []),          # + a torn metrics line before resuming
    ("batch-8-then-save-4", "batch:8+save:4", EVERY_ITER),  # the resumed run is killed too
]
STARTS_OVER = {"presample:1", "save:2"}  # killed before the first last.pt existed


def _kill_and_resume(cwd: Path, kill: str, extra: list) -> dict:
    """Run with the kill, look at what it left, (tear metrics.jsonl), resume; the facts."""
    from scalegnn.engine.checkpoint import load_checkpoint
    from scalegnn.engine.rundir import read_metrics_file
    run = cwd / "run"
    out = {"run": run}
    r = scalegnn("train", *RUN, *extra, "--out", "run", cwd=cwd, kill=kill.split("+")[0])
    out["kill"] = (r.returncode, r.stderr[-2000:])
    out["left"] = sorted(p.name for p in run.iterdir())
    if (run / "last.pt").exists():                # whatever was killed, last.pt is whole
        state = load_checkpoint(run / "last.pt")
        out["next"] = (int(state["next_epoch"]), int(state["next_iter"]))
    if kill.startswith("epoch"):                  # SIGKILL mid-append: a torn last line
        with open(run / "metrics.jsonl", "ab") as f:
            f.write(b'{"epoch": 9, "lo')
        (run / "report.png").unlink(missing_ok=True)
        rep = scalegnn("report", "run", cwd=cwd)
        out["report"] = (rep.returncode, rep.stderr[-2000:], (run / "report.png").is_file(),
                         [r["epoch"] for r in read_metrics_file(run / "metrics.jsonl")])
    for again in kill.split("+")[1:]:             # resumed runs killed as well
        r = scalegnn("train", "--resume", "run", "--no-progress", cwd=cwd, kill=again)
        out.setdefault("kill_again", []).append((r.returncode, r.stderr[-2000:]))
    r = scalegnn("train", "--resume", "run", "--no-progress", cwd=cwd)
    out["resume"] = (r.returncode, r.stdout, r.stderr[-2000:])
    return out


def selected(request) -> set[str]:
    """The kill cases this session runs (-k may have deselected some)."""
    return {item.callspec.params["kid"] for item in request.session.items
            if getattr(item, "originalname", None) == "test_killed_run_resumes_bit_identical"
            and item.module is request.module}


@pytest.fixture(scope="module")
def kill_runs(request, pool, reference_future, tmp_path_factory):
    wanted = selected(request)
    return {kid: pool.submit(_kill_and_resume, tmp_path_factory.mktemp(kid), kill, extra)
            for kid, kill, extra in KILLS if kid in wanted}


@pytest.mark.parametrize("kid,kill,extra", KILLS, ids=[k[0] for k in KILLS])
def test_killed_run_resumes_bit_identical(kill_runs, reference, kid, kill, extra):
    facts = kill_runs[kid].result()
    run = facts["run"]
    assert facts["kill"][0] == -9, facts["kill"]  # really SIGKILLed at the point
    assert "summary.json" not in facts["left"]
    if kill in STARTS_OVER:
        assert "last.pt" not in facts["left"]     # nothing to resume from: --resume starts over
    else:
        assert "last.pt" in facts["left"]
    if extra == EVERY_ITER and kill.startswith("batch"):
        assert facts["next"][1] > 0               # really a mid-epoch resume
    for again in facts.get("kill_again", []):
        assert again[0] == -9, again
    if "report" in facts:                         # `scalegnn report` skips the torn line
        assert facts["report"][0] == 0 and facts["report"][2], facts["report"]
        assert facts["report"][3] == [1, 2]
    rc, stdout, stderr = facts["resume"]
    assert rc == 0, stderr
    assert "test accuracy =" in stdout
    got, want = outcome(run), outcome(reference)
    assert got[0] == want[0]                      # every record, every non-timing field
    assert got[1] == want[1]                      # train/val/test metrics and best epoch
    info = json.loads((run / "run.json").read_text())
    assert len(info.get("resumed", [])) == (0 if kill in STARTS_OVER else kill.count("+") + 1)


# ----------------------------------------------------------------------------- safe loading
class Evil:
    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def _plant(path: Path, marker: Path, how: str):
    if how == "torch":
        torch.save({"format": "scalegnn-checkpoint/1", "x": Evil(marker)}, path)
    else:
        with open(path, "wb") as f:
            pickle.dump({"format": "scalegnn-checkpoint/1", "x": Evil(marker)}, f, protocol=2)


@pytest.mark.parametrize("name", ["last.pt", "best.pt"])
@pytest.mark.parametrize("how", ["torch", "pickle"])
def test_planted_pickle_is_refused_and_not_run(run_copy, tmp_path, capsys, name, how):
    from scalegnn.engine.checkpoint import load_checkpoint
    marker = tmp_path / "MARKER"
    _plant(run_copy / name, marker, how)
    with pytest.raises(ConfigError) as e:
        load_checkpoint(run_copy / name)
    assert "\n" not in str(e.value) and name in str(e.value)
    assert not marker.exists()
    if name == "best.pt":
        # killed after the last checkpoint, before the summary: resume evaluates best.pt
        (run_copy / "summary.json").unlink()
    assert cli_main(["train", "--resume", str(run_copy), "--no-progress"]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert name in line and "safe loader" in line
    assert not marker.exists()
    # the payload is live: an unsafe load of the same file does run it
    live = tmp_path / "LIVE"
    _plant(tmp_path / "probe.pt", live, how)
    if how == "torch":
        torch.load(tmp_path / "probe.pt", weights_only=False)
    else:
        with open(tmp_path / "probe.pt", "rb") as f:
            pickle.load(f)
    assert live.exists()


def test_every_torch_load_is_weights_only():
    calls = []
    for path in sorted((REPO / "src" / "scalegnn").rglob("*.py")):
        text = path.read_text()
        for m in re.finditer(r"torch\.load\(", text):
            depth, i = 1, m.end()
            while depth and i < len(text):
                depth += {"(": 1, ")": -1}.get(text[i], 0)
                i += 1
            calls.append((path.name, text[m.start():i]))
    assert calls, "no torch.load call found (the check would be empty)"
    bad = [(p, c) for p, c in calls if not re.search(r"weights_only\s*=\s*True", c)]
    assert not bad, bad


# ----------------------------------------------------------------------------- wrong checkpoint
def test_checkpoint_of_another_dataset_is_refused(run_copy, tmp_path, capsys):
    other = tmp_path / "other"
    assert cli_main(["train", "--data", OTHER_DATA, "--epochs", "1", "--threads", "2",
                     "--set", "phase.num_root=20", "--no-progress", "--out", str(other)]) == 0
    shutil.copy(run_copy / "last.pt", other / "last.pt")
    before = snapshot(other)
    capsys.readouterr()
    assert cli_main(["train", "--resume", str(other), "--no-progress"]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert "dataset" in line and "400 nodes" in line and "300 nodes" in line, line
    assert snapshot(other) == before


def test_checkpoint_of_another_model_shape_is_refused(run_copy, capsys):
    before = snapshot(run_copy)
    assert cli_main(["train", "--resume", str(run_copy), "--no-progress", "--set",
                     "phase.end=6", "--set", "network.dim=32"]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert "shape" in line and "last.pt" in line, line
    assert snapshot(run_copy) == before


# ----------------------------------------------------------------------------- run directory
def test_second_run_into_a_run_is_refused_overwrite_replaces(run_copy, capsys):
    before = snapshot(run_copy)
    args = ["train", "--data", DATA, "--epochs", "1", "--threads", "2", "--no-progress",
            "--set", "phase.num_root=20", "--out", str(run_copy)]
    assert cli_main(args) == 2
    line = one_error_line(capsys.readouterr().err)
    assert "already holds a run" in line and "--resume" in line
    assert snapshot(run_copy) == before
    assert cli_main([*args, "--overwrite"]) == 0
    assert [r["epoch"] for r in records(run_copy)] == [1]
    assert json.loads((run_copy / "summary.json").read_text())["epochs"] == 1


def test_locked_run_is_refused(run_copy, tmp_path):
    from scalegnn.engine.rundir import RunDir
    before = snapshot(run_copy)
    holder = RunDir(run_copy, resume=True)  # this process now holds the run's flock
    try:
        r = scalegnn("train", "--resume", run_copy, "--no-progress", cwd=tmp_path)
    finally:
        holder.close()
    assert r.returncode == 2
    line = one_error_line(r.stderr)
    assert "another scalegnn process" in line and str(os.getpid()) in line, line
    assert snapshot(run_copy) == before


def test_non_empty_folder_that_is_not_a_run_is_refused(tmp_path, capsys):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("keep me")
    assert cli_main(["train", "--data", DATA, "--epochs", "1", "--no-progress",
                     "--out", str(folder)]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert "not empty" in line and "notes.txt" in line
    assert [p.name for p in folder.iterdir()] == ["notes.txt"]


@pytest.mark.parametrize("flag,value", [("--data", OTHER_DATA), ("--split", "1"),
                                        ("--seed", "6")])
def test_resume_with_conflicting_recorded_value_is_refused(run_copy, capsys, flag, value):
    before = snapshot(run_copy)
    assert cli_main(["train", "--resume", str(run_copy), flag, value, "--no-progress"]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert flag in line and "recorded" in line, line
    assert snapshot(run_copy) == before


def test_resuming_a_finished_run_changes_nothing(run_copy, capsys):
    before = snapshot(run_copy)
    assert cli_main(["train", "--resume", str(run_copy), "--no-progress"]) == 0
    out = capsys.readouterr().out
    summary = json.loads((run_copy / "summary.json").read_text())
    assert f"test accuracy = {summary['test']['accuracy']:.4f}" in out
    assert f"best epoch {summary['best_epoch']}/4" in out
    assert snapshot(run_copy) == before


def test_cuda_device_without_cuda_is_refused_before_anything(tmp_path, capsys):
    if torch.cuda.is_available():
        pytest.skip("CUDA is available here")
    out = tmp_path / "never"
    assert cli_main(["train", "--data", DATA, "--device", "cuda", "--out", str(out)]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert "cuda" in line.lower() and "not available" in line
    assert not out.exists()


# ----------------------------------------------------------------------------- divergence
def test_nan_loss_is_one_line_naming_the_epoch_python(tmp_path):
    from conftest import make_tiny_dataset
    from scalegnn.config import Config
    from scalegnn.data import Dataset
    from scalegnn.train import Trainer
    ds = make_tiny_dataset(n=80)
    # finite float32 features near its maximum: the first layer's sums overflow to inf - inf
    # (1e30 or 1e36 do not diverge: the norm layers and grad_clip keep the loss finite)
    huge = Dataset(ds.graph, np.asarray(ds.features) * 1e38 + 1e38, ds.labels, ds.train_idx, ds.val_idx,
                   ds.test_idx, name="huge", source="huge", metric="accuracy").validate()
    cfg = Config().override(["params.standardize=false", "phase.end=3", "phase.num_root=10",
                             "network.dim=8"])
    with pytest.raises(TrainingError) as e:
        Trainer(huge, cfg, tmp_path / "run", progress=False).fit()
    msg = str(e.value)
    assert "\n" not in msg and re.match(r"epoch 1, iteration \d+: the training loss became",
                                        msg), msg
    assert not (tmp_path / "run" / "summary.json").exists()


def test_nan_loss_cli_exits_2(tmp_path, capsys):
    assert cli_main(["train", "--data", DATA, "--epochs", "3", "--threads", "2", "--no-progress",
                     "--set", "phase.num_root=20", "--set", "params.lr=1e30",
                     "--set", "params.grad_clip=0", "--out", str(tmp_path / "run")]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert re.search(r"epoch \d+, iteration \d+: the training loss became (nan|inf)", line), line
    assert not (tmp_path / "run" / "summary.json").exists()


# ----------------------------------------------------------------------------- same run files
def _file_set(run: Path) -> set[str]:
    return {p.name for p in run.iterdir() if not p.name.startswith(".")}


def _same_files_dist_and_single(tmp_path, data, config):
    from scalegnn.data import load_dataset
    from scalegnn.dist.partition import partition_dataset
    partition_dataset(load_dataset(data), 2, tmp_path / "plan", method="random")
    d = scalegnn("dist-train", "--nprocs", "2", "--plan", tmp_path / "plan", "--config", config,
                 "--epochs", "3", "--threads", "1", "--no-progress", "--out", "dist", cwd=tmp_path)
    assert d.returncode == 0, d.stderr
    s = scalegnn("train", "--data", data, "--config", config, "--epochs", "3", "--threads", "2",
                 "--no-progress", "--out", "single", cwd=tmp_path)
    assert s.returncode == 0, s.stderr
    files = _file_set(tmp_path / "single")
    assert files == _file_set(tmp_path / "dist")
    assert {"config.yml", "run.json", "metrics.jsonl", "best.pt", "last.pt", "summary.json",
            "report.png"} <= files
    for run in ("single", "dist"):
        assert [r["epoch"] for r in records(tmp_path / run)] == [1, 2, 3]
        assert json.loads((tmp_path / run / "summary.json").read_text())["epochs"] == 3


@pytest.mark.dist
def test_dist_train_writes_the_same_files_as_train_generated(tmp_path):
    raw = yaml.safe_load((REPO / "configs" / "shared" / "cora_rw.yml").read_text())
    assert raw["params"][0]["transductive"] is True  # kept: the dist run must accept it
    raw["network"][0]["dim"] = 32
    raw["phase"][0]["num_root"] = 40
    (tmp_path / "cfg.yml").write_text(yaml.safe_dump(raw))
    _same_files_dist_and_single(tmp_path, DATA, tmp_path / "cfg.yml")


@pytest.mark.dist
@pytest.mark.realdata
def test_dist_train_writes_the_same_files_as_train_cora(tmp_path, shared_data):
    if not (shared_data / "cora").exists():
        pytest.skip("cora not in the shared data")
    _same_files_dist_and_single(tmp_path, str(shared_data / "cora"),
                                REPO / "configs" / "shared" / "cora_rw.yml")


def test_kill_points_cover_every_crash_point():
    """Every crash_point in the engine is exercised above."""
    names = set()
    for path in (REPO / "src" / "scalegnn").rglob("*.py"):
        names |= set(re.findall(r"crash_point\(\"(\w+)\"\)", path.read_text()))
    assert names == {p.split(":")[0] for k in KILLS for p in k[1].split("+")} == {
        "presample", "batch", "save", "eval", "metrics", "epoch"}
