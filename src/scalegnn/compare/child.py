"""One method of ``scalegnn compare``: ``scalegnn train`` in a child process, watched until it
ends, then read back from its run directory.

The child is a fresh interpreter (``python -m scalegnn train ...``), so each method's peak
resident memory is its own: the maximum resident set ``wait4`` reports for it. Its stderr is
relayed: its one ``scalegnn: error:`` line, if any, makes the method *skipped* with that line
(the memory guard's refusal, a sampler that needs a missing package); every other line is
passed through once per comparison (the data notes all methods repeat). While it runs, a tqdm
bar over the budget's seconds follows its ``metrics.jsonl`` (the training seconds of its last
epoch, its validation metric).
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from scalegnn.engine.rundir import COMMAND_ENV, read_metrics_file
from scalegnn.io import read_json_object

ERROR = "scalegnn: error: "
POLL_S = 0.5


@dataclass
class ChildRun:
    argv: list           # scalegnn train's arguments, --out included
    shown: list          # the command as the run records it (the final --out)
    run_dir: Path
    method: str
    budget: float
    metric: str


def run_child(job: ChildRun, progress: bool, seen: set) -> dict:
    """Run ``job``; its fields of the comparison table (``skipped`` or ``failed`` with the
    reason when it did not finish)."""
    env = {**os.environ, COMMAND_ENV: "\x1f".join(job.shown)}
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "scalegnn", *job.argv], env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, errors="replace")
    errors, last = [], []
    relay = threading.Thread(target=_relay, args=(proc.stderr, errors, last, seen), daemon=True)
    relay.start()
    bar = _bar(job, progress)
    try:
        status, usage = _wait(proc, lambda: _follow(bar, job))
    except BaseException:  # interrupted: the child goes too
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        raise
    finally:
        bar.close()
    relay.join()
    rc = os.waitstatus_to_exitcode(status)
    process_s = time.perf_counter() - t0
    if rc == 2 and errors:
        return {"skipped": errors[-1]}
    if rc != 0 or not (job.run_dir / "summary.json").is_file():
        return {"failed": f"exit status {rc}" + (f": {last[-1][:200]}" if last else "")}
    return {**read_run(job.run_dir, job.metric), "process_s": process_s,
            "peak_rss_bytes": _max_rss_bytes(usage)}


def _relay(stream, errors: list, last: list, seen: set) -> None:
    for line in stream:
        text = line.rstrip("\n")
        if text.startswith(ERROR):
            errors.append(text[len(ERROR):])
            continue
        last[:] = [text] if text.strip() else last
        if text not in seen:
            seen.add(text)
            sys.stderr.write(line)
            sys.stderr.flush()


def _wait(proc, each):
    """Reap ``proc`` with ``wait4`` (its own resource usage), calling ``each()`` meanwhile."""
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)  # Popen must not reap it again
            return status, usage
        each()
        time.sleep(POLL_S)


def _max_rss_bytes(usage) -> int:
    """``ru_maxrss`` in bytes (Linux reports KiB, macOS bytes)."""
    return int(usage.ru_maxrss) * (1 if sys.platform == "darwin" else 1024)


def _bar(job: ChildRun, progress: bool):
    from tqdm.auto import tqdm  # as engine.console: tqdm loads when a bar is drawn
    return tqdm(total=max(1, math.ceil(job.budget)), dynamic_ncols=True, disable=not progress,
                file=sys.stderr, postfix=job.method,
                bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}, training s{postfix}]")


def _follow(bar, job: ChildRun) -> None:
    if bar.disable:
        return
    records = read_metrics_file(job.run_dir / "metrics.jsonl")
    if not records:
        return
    rec = records[-1]
    if rec.get("epoch") == getattr(bar, "_shown_epoch", None):
        return
    bar._shown_epoch = rec.get("epoch")
    trained = rec.get("train_elapsed_s")
    if isinstance(trained, (int, float)):
        bar.n = min(bar.total, int(trained))
    val = (rec.get("val") or {}).get(job.metric)
    text = f"{job.method} epoch {rec.get('epoch')}"
    if isinstance(val, (int, float)):
        text += f" val_{job.metric}={val:.4f}"
    bar.set_postfix_str(text, refresh=False)
    bar.refresh()


def curve(records: list, metric: str) -> dict:
    """The validation curve of a run's epoch records: training seconds, elapsed wall seconds,
    epoch and validation metric of every validated epoch."""
    out = {"train_s": [], "elapsed_s": [], "epoch": [], "val": []}
    for r in records:
        val = (r.get("val") or {}).get(metric) if isinstance(r.get("val"), dict) else None
        if not isinstance(val, (int, float)) or not math.isfinite(val):
            continue
        out["train_s"].append(float(r.get("train_elapsed_s", math.nan)))
        out["elapsed_s"].append(float(r.get("elapsed_s", math.nan)))
        out["epoch"].append(int(r.get("epoch", 0)))
        out["val"].append(float(val))
    return out


def time_to_target(points: dict, target) -> float | None:
    """The first training time at which the curve reaches ``target`` (None: never)."""
    if target is None:
        return None
    return next((t for t, v in zip(points["train_s"], points["val"]) if v >= target), None)


def read_run(run_dir: Path, metric: str) -> dict:
    """The table fields of a finished run directory."""
    summary = read_json_object(run_dir / "summary.json")
    records = read_metrics_file(run_dir / "metrics.jsonl")
    points = curve(records, metric)
    times = summary.get("time") or {}
    last = records[-1] if records else {}
    return {"best_val": max(points["val"]) if points["val"] else None,
            "best_epoch": summary.get("best_epoch"),
            "test_at_best_val": (summary.get("test") or {}).get(metric),
            "val_at_best": (summary.get("val") or {}).get(metric),
            "epochs_run": summary.get("epochs_run"), "stopped": summary.get("stopped"),
            "train_s": last.get("train_elapsed_s"), "wall_s": times.get("wall_s"),
            "eval_s": times.get("eval_s"), "presample_s": times.get("presample_s"),
            "curve": points}
