"""A run directory read for its report: records, summary, config and run facts, checked.

Contract: :func:`load_run` reads ``metrics.jsonl`` (torn or damaged lines skipped and counted
in ``RunData.skipped``), and, when present,
``summary.json`` (a run killed before its end has none), ``run.json`` and ``config.yml``
(``yaml.safe_load``). A folder that is not a run, a run with no epoch record yet, or a damaged
JSON/YAML file is a one-line :class:`~scalegnn.errors.DataError` naming the file.
Values that are not numbers read as NaN (:func:`num`), so a report never fails on one odd field.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from scalegnn.engine.rundir import read_metrics_lines
from scalegnn.errors import DataError
from scalegnn.io import read_json_object

STEP_FIELDS = ("presample_s", "sample_s", "compute_s", "eval_s")
"""Per-epoch times that add up (compile_s overlaps them)."""
RANK_SPLIT = ("compute_s", "exchange_s", "wait_s", "allreduce_s")
"""Per-rank epoch time split that adds up to ``epoch_s`` (:func:`rank_split`)."""


def num(value) -> float:
    """``value`` as a float; NaN when it is not a number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return math.nan
    return float(value)


def median(values) -> float:
    v = sorted(x for x in values if math.isfinite(x))
    if not v:
        return math.nan
    m = len(v) // 2
    return v[m] if len(v) % 2 else 0.5 * (v[m - 1] + v[m])


@dataclass
class RunData:
    path: Path
    records: list[dict]
    summary: dict = field(default_factory=dict)
    info: dict = field(default_factory=dict)
    config: dict = field(default_factory=dict)
    config_text: str = ""
    skipped: int = 0  # lines of metrics.jsonl that do not parse (torn or damaged), left out

    # ------------------------------------------------------------------ facts
    @property
    def epochs(self) -> list[int]:
        return [int(r["epoch"]) for r in self.records]

    @property
    def mode(self) -> str:
        return str(self.summary.get("mode") or self.info.get("mode") or "?")

    @property
    def dataset(self) -> str:
        return str(self.summary.get("dataset") or self.info.get("dataset") or self.path.name)

    @property
    def val_keys(self) -> list[str]:
        keys = {}
        for r in self.records:
            if isinstance(r.get("val"), dict):
                keys.update(dict.fromkeys(r["val"]))
        return list(keys)

    @property
    def metric(self) -> str:
        m = self.summary.get("metric")
        if isinstance(m, str):
            return m
        keys = self.val_keys
        return next((k for k in ("accuracy", "f1_micro", "roc_auc", "mrr") if k in keys),
                    keys[0] if keys else "")

    @property
    def best_epoch(self) -> int | None:
        """The summary's best epoch; for an unfinished run the epoch of the best validation
        value so far (the trainer's rule: the first epoch that reaches the maximum)."""
        b = self.summary.get("best_epoch")
        if isinstance(b, int) and b > 0:
            return b
        best, where = -math.inf, None
        for r in self.records:
            v = num((r.get("val") or {}).get(self.metric)) if isinstance(r.get("val"), dict) \
                else math.nan
            if v > best:
                best, where = v, int(r["epoch"])
        return where

    @property
    def distributed(self) -> bool:
        return any(isinstance(r.get("ranks"), list) and r["ranks"] for r in self.records)

    @property
    def world(self) -> int:
        return max((len(r["ranks"]) for r in self.records if isinstance(r.get("ranks"), list)),
                   default=1)

    def series(self, key: str) -> list[float]:
        return [num(r.get(key)) for r in self.records]

    def val_series(self, key: str) -> tuple[list[int], list[float]]:
        ev = [r for r in self.records if isinstance(r.get("val"), dict)]
        return [int(r["epoch"]) for r in ev], [num(r["val"].get(key)) for r in ev]

    def record(self, epoch: int) -> dict:
        return next((r for r in self.records if r["epoch"] == epoch), {})

    def first_epoch_overhead(self) -> dict:
        """First epoch's training time (sampling + compute) against the median of the later
        epochs: ``{"first_s", "typical_s", "extra_s", "compile_s"}`` (compile_s: numba
        compilation measured in epoch 1, also included in first_s when it happened there);
        empty with fewer than two epochs."""
        if len(self.records) < 2:
            return {}
        train = [num(r.get("sample_s", 0.0)) + num(r.get("compute_s", 0.0)) for r in self.records]
        typical = median(train[1:])
        first = self.records[0]
        return {"epoch": int(first["epoch"]), "first_s": train[0], "typical_s": typical,
                "extra_s": max(0.0, train[0] - typical),
                "compile_s": num(first.get("compile_s", 0.0))}

    def time_totals(self) -> dict:
        """Seconds of the whole run: per-epoch phases summed, the final evaluation (summary's
        evaluation total minus the per-epoch ones), compilation (overlapping the others), and
        ``other`` = wall - the per-epoch phases (checkpoints, logging, the loop itself)."""
        out = {k: math.fsum(x for x in self.series(k) if math.isfinite(x)) for k in STEP_FIELDS}
        out["compile_s"] = math.fsum(x for x in self.series("compile_s") if math.isfinite(x))
        t = self.summary.get("time") if isinstance(self.summary.get("time"), dict) else {}
        wall = num(t.get("wall_s"))
        if math.isfinite(wall):
            out["wall_s"] = wall
            out["other_s"] = max(0.0, wall - sum(out[k] for k in STEP_FIELDS))
        final = num(t.get("eval_s")) - out["eval_s"]
        if math.isfinite(final) and final > 0:
            out["final_eval_s"] = final
        return out


def rank_split(rank: dict) -> dict:
    """One rank's epoch time as parts that add up to ``epoch_s``: compute, exchange (posting
    and copying boundary rows), wait (blocked on peers' rows; part of the exchange time as
    recorded), all-reduce of the gradients."""
    comm, wait = num(rank.get("comm_s", 0.0)), num(rank.get("wait_s", 0.0))
    return {"compute_s": num(rank.get("compute_s", 0.0)), "exchange_s": max(0.0, comm - wait),
            "wait_s": wait, "allreduce_s": num(rank.get("allreduce_s", 0.0))}


def steady_records(data: RunData) -> list[dict]:
    """The records of the steady state: all but the first epoch (which holds compilation and
    warm-up) when there are at least three."""
    return data.records[1:] if len(data.records) >= 3 else data.records


def rank_totals(data: RunData, records: list[dict] | None = None) -> list[dict]:
    """Per rank, summed over ``records`` (default: all epochs): the :func:`rank_split` parts,
    ``epoch_s``, ``bytes_sent`` / ``bytes_recv``, ``overlap_share`` (summed; divide by epochs),
    the epochs counted, and peaks (max) of ``peak_rss_mb`` / ``cuda_peak_mb``."""
    out = [dict.fromkeys((*RANK_SPLIT, "epoch_s", "bytes_sent", "bytes_recv",
                          "overlap_share"), 0.0) | {
        "epochs": 0, "peak_rss_mb": 0.0, "cuda_peak_mb": 0.0} for _ in range(data.world)]
    for r in (data.records if records is None else records):
        for i, rank in enumerate(r.get("ranks") or []):
            if not isinstance(rank, dict):
                continue
            acc = out[i]
            acc["epochs"] += 1
            for k, v in rank_split(rank).items():
                acc[k] += v if math.isfinite(v) else 0.0
            for k in ("epoch_s", "bytes_sent", "bytes_recv", "overlap_share"):
                v = num(rank.get(k, 0.0))
                acc[k] += v if math.isfinite(v) else 0.0
            for k in ("peak_rss_mb", "cuda_peak_mb"):
                v = num(rank.get(k, 0.0))
                acc[k] = max(acc[k], v) if math.isfinite(v) else acc[k]
    return out



def load_run(run_dir) -> RunData:
    """Read the run in ``run_dir`` (see the module docstring)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise DataError(f"{run_dir}: not a folder (expected a run directory)")
    path = run_dir / "metrics.jsonl"
    if not path.is_file():
        raise DataError(f"{path}: not found (is {run_dir} a run directory?)")
    recs, found = [], read_metrics_lines(path)
    for i, rec in enumerate(found[0], 1):
        ep = rec.get("epoch")
        if isinstance(ep, bool) or not isinstance(ep, int) or ep < 1:
            raise DataError(f"{path}: record {i} has no epoch number (got {ep!r})")
        recs.append(rec)
    if not recs:
        raise DataError(f"{path}: no epoch recorded yet (nothing to report)")
    recs.sort(key=lambda r: r["epoch"])
    text, config = "", {}
    cfg = run_dir / "config.yml"
    if cfg.is_file():
        try:
            text = cfg.read_text(encoding="utf-8")
            config = yaml.safe_load(text) or {}
        except (yaml.YAMLError, UnicodeDecodeError, RecursionError):
            raise DataError(f"{cfg}: damaged (not valid YAML)") from None
        if not isinstance(config, dict):
            raise DataError(f"{cfg}: expected a mapping")
    return RunData(run_dir, recs, read_json_object(run_dir / "summary.json", missing_ok=True),
                   read_json_object(run_dir / "run.json", missing_ok=True), config, text,
                   skipped=found[1])


def config_section(data: RunData, name: str) -> dict:
    """A section of config.yml (GraphSAINT's one-item-list shape or a mapping); {} if absent."""
    v = data.config.get(name)
    if isinstance(v, list):
        v = v[0] if v and isinstance(v[0], dict) else {}
    return v if isinstance(v, dict) else {}


def title_lines(data: RunData) -> tuple[str, str]:
    """Two title lines: what ran (dataset, mode, model, key settings), and how it scored."""
    net, params = config_section(data, "network"), config_section(data, "params")
    phases = data.config.get("phase") if isinstance(data.config.get("phase"), list) else []
    parts = [data.dataset] + ([data.mode] if data.mode != "?" else [])
    if net:
        parts.append(f"{net.get('model', 'saint')} arch {net.get('arch')} dim {net.get('dim')}")
    if params:
        parts.append(f"lr {params.get('lr')} dropout {params.get('dropout')}")
    if data.mode == "graphsaint" and phases:
        parts.append("sampler " + ", ".join(str(p.get("sampler")) for p in phases
                                            if isinstance(p, dict)))
    sh = config_section(data, "shadow")
    if data.mode in ("shadow", "link") and sh:
        kinds = [f"{e.get('kind')}" + (f" k={e['k']}" if "k" in e else "")
                 for e in (sh.get("extractors") or []) if isinstance(e, dict)]
        parts.append(f"{'+'.join(kinds)} readout {sh.get('readout')}")
    if data.distributed:
        p = data.summary.get("boundary_p", data.info.get("boundary_p", "?"))
        parts.append(f"{data.world} ranks, boundary p={p}")
    seed = data.summary.get("seed", data.info.get("seed"))
    if seed is not None:
        parts.append(f"seed {seed}")
    first = " | ".join(str(p) for p in parts)
    metric, best = data.metric, data.best_epoch
    total = data.summary.get("epochs", data.epochs[-1])
    test = num((data.summary.get("test") or {}).get(metric)) \
        if isinstance(data.summary.get("test"), dict) else math.nan
    if math.isfinite(test):
        second = f"test {metric} {test:.4f} at best epoch {best}/{total}"
        run = data.summary.get("epochs_run")
        if isinstance(run, int) and isinstance(total, int) and run < total:
            second += f", stopped early after epoch {run}"
    elif best:
        second = (f"unfinished: {len(data.records)} epochs recorded, best val {metric} at "
                  f"epoch {best}")
    else:
        second = f"unfinished: {len(data.records)} epochs recorded"
    return first, f"{second}  ({data.path.name})"
