"""The methods of ``scalegnn compare`` and how each is fitted to a graph (see
:mod:`scalegnn.compare`): the names, their shipped configs, the data's settings, the
``--set`` overrides, and the rules of ``--out``."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from scalegnn.config import Config
from scalegnn.config.schema import MAX_EPOCHS
from scalegnn.engine.rundir import check_output_folder
from scalegnn.errors import ConfigError

METHODS = ("saint-rw", "saint-node", "neighbour", "cluster", "shadow", "full")
"""The methods, in the order the table lists them."""
CONFIG_DIR = Path(__file__).resolve().parents[1] / "configs" / "methods"
RESULT_FILE, PLOT_FILE, RUNS = "compare.json", "compare.png", "runs"
TARGET = 0.99
"""Time to accuracy: the training seconds a method needs to reach this share of the best
validation metric any method reached."""
INDUCTIVE_MIN = 0.5
"""Share of training nodes with a neighbour in the dataset's own training graph above which a
dataset that ships one trains inductively."""


def parse_methods(text: str) -> list[str]:
    """``saint-rw,full`` -> the method names; one ConfigError line naming ``--methods`` for an
    empty item, a repeat or an unknown name (listing the known ones)."""
    names = [n.strip() for n in str(text).split(",")]
    if not names or any(not n for n in names):
        raise ConfigError(f"--methods: empty item in {str(text)[:60]!r}; expected a comma list "
                          f"of {', '.join(METHODS)}")
    unknown = [n for n in names if n not in METHODS]
    if unknown:
        raise ConfigError(f"--methods: unknown method {unknown[0][:40]!r}; known: "
                          f"{', '.join(METHODS)}")
    repeated = next((n for i, n in enumerate(names) if n in names[:i]), None)
    if repeated:
        raise ConfigError(f"--methods: {repeated} is listed twice")
    return names


def config_path(method: str) -> Path:
    return CONFIG_DIR / f"{method}.yml"


def data_settings(dataset) -> dict:
    """What :func:`method_overrides` takes from the data (see the module docstring)."""
    train = np.asarray(dataset.train_idx)
    transductive = True
    if dataset.has_train_graph and train.size:
        degree = np.diff(dataset.train_graph.indptr)[train]
        transductive = bool(np.mean(degree > 0) < INDUCTIVE_MIN)
    return {"dataset": str(dataset.name), "metric": dataset.metric,
            "nodes": int(dataset.num_nodes), "train_nodes": int(train.size),
            "transductive": transductive,
            "sampled_from": int(dataset.num_nodes if transductive else train.size)}


def method_overrides(config: Config, settings: dict, budget: float) -> list[str]:
    """The ``--set`` items that adapt a method's config to the graph and the budget."""
    out = [f"params.transductive={str(settings['transductive']).lower()}",
           f"params.time_budget={budget!r}", "params.eval_every=1", "params.patience=0",
           f"phase.end={MAX_EPOCHS}"]
    every, train = max(1, settings["sampled_from"]), max(1, settings["train_nodes"])

    def cap(key, value, limit):
        if value is not None and value > max(1, limit):
            out.append(f"{key}={max(1, limit)}")
            return max(1, limit)
        return value

    if "shadow" in config.sections:
        cap("shadow.batch_size", config.section("shadow")["batch_size"], train // 4)
        return out
    phase = config.phases[-1]
    kind = phase["sampler"]
    if kind == "rw":
        cap("phase.num_root", phase.get("num_root"), every // (4 * (phase.get("depth", 2) + 1)))
    elif kind == "node":
        cap("phase.size_subgraph", phase.get("size_subgraph"), every // 4)
    elif kind == "neighbour":
        cap("phase.batch_size", phase.get("batch_size"), train // 4)
    elif kind == "cluster":
        parts = cap("phase.num_parts", phase.get("num_parts"), every // 100)
        cap("phase.parts_per_batch", phase.get("parts_per_batch"), (parts or 1) // 4)
    return out


def check_out(out, overwrite: bool) -> None:
    """``--out`` may be written by ``train --out``'s rules: new, an empty folder, or a folder
    holding a comparison (``compare.json``, ``compare.png``, ``runs/``) when ``overwrite``
    (:func:`scalegnn.engine.rundir.check_output_folder`)."""
    check_output_folder(out, overwrite, "comparison",
                        lambda name, path: name in (RESULT_FILE, PLOT_FILE, RUNS),
                        marker=RESULT_FILE)
