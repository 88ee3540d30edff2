"""``scalegnn compare``: train several methods on one graph under the same time budget and seed,
then tabulate and plot validation against training time (GraphSAINT's Figure 2).

Each method is a config shipped with the package (``scalegnn/configs/methods/<name>.yml``:
:data:`METHODS`), run as ``scalegnn train --config <it>`` in a child process of its own, so its
peak memory (the child's maximum resident set, ``wait4``) is its own. Nothing in them is tuned
to a dataset; :func:`method_overrides` adapts a method to the graph in the same way for every
graph:

* ``params.transductive`` follows the data (:func:`data_settings`): a dataset that ships its
  own training graph (GraphSAINT's ``adj_train``, the inductive setting) trains inductively,
  unless that graph leaves most training nodes without a neighbour (Cora's 140 of 2,708: a
  semi-supervised split, where the training graph is almost empty); a dataset with one graph
  and a node split (CSV, npz, OGB) trains transductively (every node seen, training labels only);
* sizes that grow with the graph are capped by it, so that an epoch has several minibatches:
  a subgraph budget (``num_root`` x (``depth`` + 1), ``size_subgraph``) at most a quarter of
  the nodes sampled from, ``batch_size`` (neighbour, ``shadow.batch_size``) at most a quarter
  of the training nodes, ``num_parts`` at most one part per 100 nodes sampled from and
  ``parts_per_batch`` at most a quarter of the parts;
* ``params.time_budget`` = the budget, ``params.eval_every`` = 1 (a point of the curve per
  epoch), ``params.patience`` = 0 and the last phase's ``end`` =
  :data:`~scalegnn.config.schema.MAX_EPOCHS`: every method may use its whole budget.

The budget counts training time, the run's ``train_elapsed_s`` (wall clock of the epochs,
validation passes left out, :mod:`scalegnn.engine.runclock`), so a method that validates more
often is not charged for it; it is also the curves' time axis. A run stops after the epoch in
which its budget ran out. A method the child refuses in one line (the memory guard: ``full`` on
a graph too big for memory) is reported as skipped with that line; the others still run.

The output folder holds ``compare.json`` (:func:`compare`'s table), ``compare.png`` (when
matplotlib is installed) and ``runs/<method>/``, each a run directory (``scalegnn report``,
``predict`` work on it). It is written as a whole (a temporary sibling renamed into place at
the end, :func:`scalegnn.io.atomic_folder`) and follows ``train --out``'s rules
(:func:`check_out`).
"""

from __future__ import annotations

import os
from pathlib import Path

from scalegnn.compare.child import ChildRun, curve, run_child, time_to_target
from scalegnn.compare.methods import (CONFIG_DIR, METHODS, PLOT_FILE, RESULT_FILE, RUNS, TARGET,
                                      check_out, config_path, data_settings, method_overrides,
                                      parse_methods)
from scalegnn.config import Config
from scalegnn.data import load_dataset
from scalegnn.data.options import OPTION_KEYS
from scalegnn.errors import ConfigError
from scalegnn.io import atomic_folder, atomic_write_json, read_json_object
from scalegnn.report import plot_compare
from scalegnn.threads import trim_heap
from scalegnn.train.build import resolve_device


def plan(data, methods, budget: float, *, split=None, data_options=None,
         device=None) -> tuple[dict, dict]:
    """``(settings, {method: (config path, overrides)})``, every config checked with its
    overrides before any training; the data is loaded once here (a bad ``data`` is one line)
    and let go before the children load it again."""
    if not budget > 0:
        raise ConfigError(f"--budget: must be > 0 seconds, got {budget}")
    resolve_device(device)  # one line here, not one per method
    dataset = load_dataset(data, split=split, seed=0, options=dict(data_options or {}))
    settings = data_settings(dataset)
    del dataset
    trim_heap()
    runs = {}
    for method in methods:
        path = config_path(method)
        config = Config.from_yaml(path)
        overrides = method_overrides(config, settings, budget)
        config.override(overrides).validate_for_mode("graphsaint")
        runs[method] = (path, overrides)
    return settings, runs


def compare(data, methods, budget: float, out, *, seed: int = 0, split=None, threads=None,
            device=None, data_options=None, overwrite: bool = False, progress: bool = True,
            log=None) -> dict:
    """Run ``methods`` on ``data`` for ``budget`` training seconds each; write ``out`` (see the
    module docstring) and return the table written to ``out/compare.json``. ``log(line)``
    gets a line as each method starts and ends."""
    methods = parse_methods(",".join(methods)) if not isinstance(methods, str) else \
        parse_methods(methods)
    check_out(out, overwrite)
    settings, runs = plan(data, methods, budget, split=split, data_options=data_options,
                          device=device)
    log = log or (lambda line: None)
    out = Path(out)
    table = {"data": str(data), **settings, "budget_s": float(budget), "seed": int(seed),
             "split": split, "threads": threads, "device": device or "cpu",
             "time_axis": "training seconds: wall clock of the epochs, validation passes "
                          "left out (train_elapsed_s)",
             "machine": {"cpus": os.cpu_count(), "load_average_start": _load()},
             "methods": []}
    check_out(out, overwrite)  # again: the folder may have changed while the data loaded
    seen_lines: set = set()
    with atomic_folder(out, overwrite=True) as tmp:
        for i, method in enumerate(methods):
            path, overrides = runs[method]
            argv = train_argv(data, path, overrides, seed=seed, split=split, threads=threads,
                              device=device, data_options=data_options)
            shown = ["scalegnn", *argv, "--out", str(out / RUNS / method)]
            log(f"{method} ({i + 1}/{len(methods)}): {budget:g} s of training")
            res = run_child(ChildRun(argv + ["--out", str(tmp / RUNS / method)], shown,
                                     tmp / RUNS / method, method, budget, settings["metric"]),
                            progress, seen_lines)
            entry = {"method": method, "config": f"scalegnn/configs/methods/{method}.yml",
                     "overrides": overrides, "command": " ".join(shown),
                     "run_dir": f"{RUNS}/{method}", **res}
            table["methods"].append(entry)
            log(_done_line(method, entry, settings["metric"]))
        _finish_table(table)
        atomic_write_json(tmp / RESULT_FILE, table, indent=1)
        plot_compare(table, tmp / PLOT_FILE)
    return table


def train_argv(data, path, overrides, *, seed, split, threads, device, data_options) -> list:
    """``scalegnn train`` arguments of one method (without ``--out``)."""
    argv = ["train", "--data", str(data), "--config", str(path), "--seed", str(seed),
            "--no-progress"]
    for item in overrides:
        argv += ["--set", item]
    for flag, value in (("--split", split), ("--threads", threads), ("--device", device)):
        if value is not None:
            argv += [flag, str(value)]
    for key, value in (data_options or {}).items():
        argv.append(f"{OPTION_KEYS[key][0]}={value}")
    return argv


def _finish_table(table: dict) -> None:
    """Time to the target (99% of the best validation metric of all methods) and the winner."""
    ran = [m for m in table["methods"] if m.get("curve")]
    best = max((max(m["curve"]["val"]) for m in ran), default=None)
    target = None if best is None else TARGET * best
    table["target"] = {"fraction": TARGET, "value": target}
    for m in table["methods"]:
        if "curve" in m:
            m["time_to_target_s"] = time_to_target(m["curve"], target)
    reached = [m for m in ran if m["time_to_target_s"] is not None]
    table["fastest_to_target"] = min(reached, key=lambda m: m["time_to_target_s"])["method"] \
        if reached else None
    table["machine"]["load_average_end"] = _load()


def _done_line(method: str, entry: dict, metric: str) -> str:
    if "curve" not in entry:
        return f"{method}: not run: {entry.get('skipped') or entry.get('failed')}"
    return (f"{method}: best val {metric} {entry['best_val']:.4f} (test "
            f"{_fmt(entry['test_at_best_val'])}) "
            f"in {entry['epochs_run']} epochs, {entry['train_s']:.1f} s of training, peak "
            f"{entry['peak_rss_bytes'] / 2**20:.0f} MiB")


def _fmt(x) -> str:
    return f"{x:.4f}" if isinstance(x, (int, float)) else "-"


def _load() -> list | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def read_table(path) -> dict:
    """A ``compare.json`` (the folder's or the file), checked to hold a methods list."""
    path = Path(path)
    path = path / RESULT_FILE if path.is_dir() else path
    table = read_json_object(path)
    if not isinstance(table.get("methods"), list):
        raise ConfigError(f"{path}: not a scalegnn compare table (no methods list)")
    return table


__all__ = ["CONFIG_DIR", "METHODS", "check_out", "compare", "curve", "data_settings",
           "method_overrides", "parse_methods", "read_table", "time_to_target"]
