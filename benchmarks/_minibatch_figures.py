"""The pure figures of ``benchmarks/dist_minibatch.py``: a run's epoch records reduced to the
numbers its JSON lines report (all-reduce time and hidden share, bytes and rows per minibatch,
measured against predicted volume). No processes, no clock: tested on their own."""

from __future__ import annotations

import math
import statistics

import numpy as np

TOLERANCE = 0.05


def graph_layers(arch: str) -> int:
    """Layers of ``network.arch`` that aggregate over the graph (each exchanges rows once)."""
    return sum(1 for t in str(arch).split("-") if int(t) > 0)


def later(recs: list[dict]) -> list[dict]:
    """The epoch records after the first (warm-up: thread pools, page cache), or all of one."""
    return recs[1:] or recs


def volume_check(step_rows: list[int], layers: int, predicted: float,
                 tolerance: float = TOLERANCE) -> dict:
    """Measured forward rows per graph layer per minibatch (mean, standard error) against the
    predicted expected volume: their ratio and whether it is within ``tolerance``."""
    v = np.asarray(step_rows, dtype=np.float64) / max(layers, 1)
    mean = float(v.mean()) if v.size else float("nan")
    sem = float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else 0.0
    ratio = mean / predicted if predicted else float("nan")
    return {"minibatches": int(v.size), "measured_volume": round(mean, 2),
            "measured_sem": round(sem, 2), "predicted_volume": round(predicted, 2),
            "measured_vs_predicted": round(ratio, 4),
            "within_tolerance": bool(abs(ratio - 1) <= tolerance)}


def hidden_share(busy: float, exposed: float) -> float:
    return round(min(1.0, max(0.0, 1 - exposed / busy)), 3) if busy > 0 else 0.0


def data_figures(recs: list[dict], nodes_per_batch: float) -> dict:
    """A data-parallel run's figures from its epoch records (rank-averaged all-reduce times)."""
    rs = later(recs)
    busy = sum(r["allreduce_s"] for r in rs)
    exposed = sum(r["allreduce_exposed_s"] for r in rs)
    work = sum(r["compute_s"] + r["sample_s"] for r in rs)
    iters = sum(r["iterations"] for r in rs)
    bps = iters / work if work else 0.0
    return {"epochs_timed": len(rs), "iterations_per_epoch": rs[-1]["iterations"],
            "epoch_s": round(statistics.median(r["compute_s"] + r["sample_s"] for r in rs), 3),
            "allreduce_s": round(statistics.median(r["allreduce_s"] for r in rs), 3),
            "allreduce_exposed_s": round(statistics.median(r["allreduce_exposed_s"] for r in rs), 3),
            "allreduce_hidden_share": hidden_share(busy, exposed),
            "allreduce_mb": round(rs[-1]["allreduce_bytes"] / 1e6, 2),
            "batches_per_s_rank": round(bps, 3),
            "nodes_per_s_rank": round(bps * nodes_per_batch),
            "nodes_per_batch": round(nodes_per_batch, 1)}


def partition_figures(recs: list[dict], layers: int) -> dict:
    """A partition-parallel run's per-minibatch bytes and rows, epoch time and all-reduce."""
    rows = [v for r in recs for v in r["step_rows_sent"]]
    nbytes = [v for r in recs for v in r["step_bytes_sent"]]
    rs = later(recs)
    busy = sum(x["allreduce_s"] for r in rs for x in r["ranks"])
    exposed = sum(x["allreduce_exposed_s"] for r in rs for x in r["ranks"])
    return {"epochs_timed": len(rs), "iterations_per_epoch": rs[-1]["iterations"],
            "graph_layers": layers,
            "bytes_per_minibatch": round(statistics.fmean(nbytes)),
            "rows_per_minibatch": round(statistics.fmean(rows), 2),
            "epoch_s": round(statistics.median(r["compute_s"] + r["sample_s"] for r in rs), 3),
            "step_s": round(sum(r["compute_s"] + r["sample_s"] for r in rs)
                            / max(sum(r["iterations"] for r in rs), 1), 4),
            "comm_s_max_rank": round(statistics.median(
                max(x["comm_s"] for x in r["ranks"]) for r in rs), 3),
            "allreduce_s": round(statistics.median(
                max(x["allreduce_s"] for x in r["ranks"]) for r in rs), 3),
            "allreduce_hidden_share": hidden_share(busy, exposed)}


def full_figures(recs: list[dict]) -> dict:
    """A full-graph run's epoch time and all-reduce (max over ranks, median over epochs)."""
    rs = later(recs)
    med = lambda f: round(statistics.median(max(x[f] for x in r["ranks"]) for r in rs), 3)  # noqa: E731
    busy = sum(x["allreduce_s"] for r in rs for x in r["ranks"])
    exposed = sum(x["allreduce_exposed_s"] for r in rs for x in r["ranks"])
    return {"epochs_timed": len(rs), "epoch_s": med("epoch_s"), "allreduce_s": med("allreduce_s"),
            "allreduce_exposed_s": med("allreduce_exposed_s"), "comm_s": med("comm_s"),
            "allreduce_hidden_share": hidden_share(busy, exposed),
            "bytes_sent_mb": round(statistics.median(
                sum(x["bytes_sent"] for x in r["ranks"]) for r in rs) / 1e6, 2)}
