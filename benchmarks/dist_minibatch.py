"""Distributed training modes under a shaped link: data-parallel, partition-parallel, full-graph.

Every run is one ``scalegnn dist-train`` command (gloo ranks on this host, ``--threads 1`` each)
in a fresh run directory; the script prints one JSON line per run (``kind: run``: the command,
the 1-minute load average before/after, the CPU seconds of the command and all its ranks, the
wall time, and the figures below) and one per comparison (``kind: summary``):

* ``data``: data-parallel minibatches (``distributed.mode=data``) at each ``--nprocs``: the
  gradient all-reduce time per epoch, the share of it hidden behind backward
  (``allreduce_hidden_share``; target >= 0.5 at 4 ranks), batches/s per rank (a rank's batches
  over its sampling + compute time) and subgraph nodes/s per rank (batches/s x the mean nodes
  of the config's subgraphs, from 64 draws of its sampler).
* ``partition``: partition-parallel GraphSAINT minibatches on RP / GP / HP plans
  (``partition make``) and the SHP plan (``partition shp --out``, the config's sampler and
  budget, ``--transductive`` when the config is), same ``--seed``: bytes and forward rows per
  minibatch (``step_bytes_sent`` / ``step_rows_sent`` of every step, summed over ranks), epoch
  time; the measured forward volume per graph layer against the prediction for the same plan
  and sampler (the mean over 200 fresh minibatches, :func:`scalegnn.dist.shp.expected_volume`,
  which ``partition shp`` reports as hp_volume / shp_volume: both are printed). Targets: SHP <
  HP, HP <= 0.5x RP (bytes per minibatch), measured within 5% of predicted. Every run of one
  dataset draws the same minibatch stream (same seed), so the plans are compared on the same
  subgraphs.
* ``full``: full-graph training (the plan of ``--method``) at each boundary keep-probability p
  and gradient ``distributed.compression``: epoch time, all-reduce time (max over ranks),
  hidden share, test metric.

Variants run interleaved (``--rounds R``: each once per round), so load changes hit them alike.
``--shape RATE``: inside ``unshare -n`` with ``tc ... tbf`` on lo (``benchmarks/_shaped.py``).

    python benchmarks/dist_minibatch.py data --shape 1gbit --nprocs 2,4 --epochs 12
    python benchmarks/dist_minibatch.py partition --shape 1gbit --parts 4,8 \\
        --data ../shared/data/facebook kronecker:17:8 --min-steps 120
    python benchmarks/dist_minibatch.py full --shape 50mbit --latency 400ms --ps 1,0.1 \\
        --compression none,bf16,fp16 --rounds 2
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from scalegnn.config import Config
from scalegnn.data import load_dataset
from scalegnn.dist.plan import PartitionPlan
from scalegnn.dist.shp import expected_volume
from scalegnn.sampling import make_sampler

sys.path.insert(0, str(Path(__file__).resolve().parent))  # _shaped, also when loaded by path
from _minibatch_figures import (TOLERANCE, data_figures, full_figures,  # noqa: E402,F401
                                graph_layers, hidden_share, later, partition_figures, volume_check)
from _shaped import SHAPED_ENV, measure_link, run_shaped  # noqa: E402

DATA = "../shared/data/facebook"


# ----------------------------------------------------------------------------- running
def load1() -> float:
    return round(os.getloadavg()[0], 2)


def display(argv: list[str]) -> str:
    if argv[:3] == [sys.executable, "-m", "scalegnn"]:
        argv = ["scalegnn", *argv[3:]]
    return " ".join(shlex.quote(a) for a in argv)


def command(argv: list[str]) -> dict:
    """Run ``argv``; its display form, load average before/after, wall and CPU seconds (the
    command and every process it waited for, i.e. all its ranks)."""
    before, ru = load1(), resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    ru2 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise SystemExit(f"{display(argv)} exited {proc.returncode}: {tail}")
    return {"command": display(argv), "load_avg": [before, load1()], "wall_s": round(wall, 1),
            "cpu_s": round(ru2.ru_utime + ru2.ru_stime - ru.ru_utime - ru.ru_stime, 1)}


def scalegnn(*args: str) -> list[str]:
    return [sys.executable, "-m", "scalegnn", *map(str, args)]


def train(out: Path, nprocs: int, args, *extra: str) -> tuple[dict, list[dict], dict]:
    """``scalegnn dist-train`` into ``out`` (replaced): run metadata, epoch records, summary."""
    if out.exists():
        shutil.rmtree(out)
    meta = command(scalegnn("dist-train", "--nprocs", nprocs, *extra, "--epochs", args.epochs,
                            "--set", f"params.eval_every={args.epochs}", "--threads", "1",
                            "--seed", args.seed, "--out", out, "--no-progress"))
    recs = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines() if x]
    return meta, recs, json.loads((out / "summary.json").read_text())


def emit(**rec) -> dict:
    print(json.dumps(rec), flush=True)
    return rec


def dataset_info(spec: str, config_path: str) -> dict:
    """The config's sampler, its budget string, the subgraphs' mean nodes (64 draws), the
    batches per epoch, the dataset's metric and label kind."""
    cfg = Config.from_yaml(config_path)
    ds = load_dataset(spec, seed=0)
    phase = cfg.phases[-1]
    budget = cfg.sampler_params(phase)
    transductive = bool(cfg.params["transductive"])
    graph, nodes = ((ds.graph, np.arange(ds.num_nodes)) if transductive
                    else (ds.train_graph, ds.train_idx))
    smp = make_sampler(phase["sampler"], graph, nodes, budget)
    sizes = [s.num_nodes for s in smp.sample(64, 12345)]
    return {"dataset": ds, "config": cfg, "sampler": smp, "sampler_name": phase["sampler"],
            "budget": ",".join(f"{k}={v}" for k, v in budget.items()),
            "transductive": transductive, "nodes_per_batch": float(np.mean(sizes)),
            "batches_per_epoch": smp.batches_per_epoch(len(ds.train_idx)),
            "layers": graph_layers(cfg.network["arch"]), "metric": ds.metric,
            "loss_set": ["--set", "network.loss=sigmoid"] if ds.multilabel else []}


def name_of(spec: str) -> str:
    return Path(spec).name if not spec.startswith("kronecker") else spec


def test_metric(summary: dict, metric: str):
    v = summary.get("test", {}).get(metric)
    return None if v is None else round(v, 4)


# ----------------------------------------------------------------------------- benchmarks
def bench_data(args) -> None:
    spec = args.data[0]
    info = dataset_info(spec, args.config)
    root, runs = Path(args.out) / "data", {}
    for rnd in range(args.rounds):
        for w in [int(x) for x in args.nprocs.split(",")]:
            for comp in args.compression.split(","):
                meta, recs, summ = train(
                    root / f"w{w}_{comp}_r{rnd}", w, args, "--data", spec, "--config",
                    args.config, "--set", "distributed.mode=data", "--set",
                    f"distributed.compression={comp}", *info["loss_set"])
                runs.setdefault((w, comp), []).append(emit(
                    kind="run", mode="data", dataset=name_of(spec), nprocs=w, compression=comp,
                    round=rnd, shape=args.shape, epochs=args.epochs, **meta,
                    **data_figures(recs, info["nodes_per_batch"]), metric=info["metric"],
                    test=test_metric(summ, info["metric"])))
    for (w, comp), rs in runs.items():
        med = lambda f: round(statistics.median(r[f] for r in rs), 3)  # noqa: E731
        emit(kind="summary", mode="data", dataset=name_of(spec), nprocs=w, compression=comp,
             shape=args.shape, runs=len(rs), allreduce_s=med("allreduce_s"),
             allreduce_hidden_share=med("allreduce_hidden_share"), epoch_s=med("epoch_s"),
             batches_per_s_rank=med("batches_per_s_rank"),
             nodes_per_s_rank=med("nodes_per_s_rank"), test=[r["test"] for r in rs],
             target_hidden_met=(med("allreduce_hidden_share") >= 0.5) if w >= 4 else None)


def make_plan(spec: str, k: int, method: str, root: Path, info: dict, args) -> dict:
    """``partition make`` (rp, gp, hp) or ``partition shp --out`` (shp): the plan's command and
    predicted volume (and, for shp, its table's hp_volume / shp_volume)."""
    plan = root / f"plan_{method}{k}"
    if plan.exists():
        shutil.rmtree(plan)
    table = {}
    if method == "shp":
        js = root / f"shp{k}.json"
        meta = command(scalegnn(
            "partition", "shp", spec, "--parts", k, "--sampler", info["sampler_name"],
            "--budget", info["budget"], *(["--transductive"] if info["transductive"] else []),
            "--seed", args.seed, "--out", plan, "--json", js))
        row = json.loads(js.read_text())["rows"][0]
        table = {k2: row[k2] for k2 in ("hp_volume", "hp_sem", "shp_volume", "shp_sem",
                                         "batches")}
    else:
        meta = command(scalegnn("partition", "make", spec, "--parts", k, "--method", method,
                                "--seed", args.seed, "--out", plan))
    assignment = PartitionPlan.load(plan, world_size=k).assignment()
    pred = expected_volume(info["sampler"], assignment, args.eval_batches, args.seed)
    return emit(kind="plan", dataset=name_of(spec), parts=k, method=method, plan=str(plan),
                **meta, predicted_volume=round(pred["mean"], 2),
                predicted_sem=round(pred["sem"], 2), eval_batches=args.eval_batches,
                shp_table=table)


def bench_partition(args) -> None:
    methods = args.methods.split(",")
    for spec in args.data:
        info = dataset_info(spec, args.config)
        epochs = max(2, math.ceil(args.min_steps / info["batches_per_epoch"]))
        root = Path(args.out) / "partition" / name_of(spec).replace(":", "_")
        root.mkdir(parents=True, exist_ok=True)
        for k in [int(x) for x in args.parts.split(",")]:
            plans = {m: make_plan(spec, k, m, root, info, args) for m in methods}
            shp_table = plans.get("shp", {}).get("shp_table", {})
            runs = {}
            for rnd in range(args.rounds):
                for m in methods:
                    meta, recs, summ = train(
                        root / f"run_{m}{k}_r{rnd}", k, argparse.Namespace(**{
                            **vars(args), "epochs": epochs}), "--data", spec, "--plan",
                        plans[m]["plan"], "--config", args.config, "--set",
                        "distributed.mode=partition", *info["loss_set"])
                    fig = partition_figures(recs, info["layers"])
                    rows = [v for r in recs for v in r["step_rows_sent"]]
                    check = volume_check(rows, info["layers"], plans[m]["predicted_volume"])
                    table = shp_table.get(f"{m}_volume")
                    runs.setdefault(m, []).append(emit(
                        kind="run", mode="partition", dataset=name_of(spec), parts=k, method=m,
                        round=rnd, shape=args.shape, epochs=epochs, sampler=info["sampler_name"],
                        budget=info["budget"], transductive=info["transductive"], **meta, **fig,
                        **check, shp_table_volume=table,
                        measured_vs_shp_table=None if not table else
                        round(check["measured_volume"] / table, 4),
                        metric=info["metric"], test=test_metric(summ, info["metric"])))
            med = {m: {f: statistics.median(r[f] for r in rs) for f in
                       ("bytes_per_minibatch", "epoch_s", "measured_volume",
                        "measured_vs_predicted")} for m, rs in runs.items()}
            b = {m: v["bytes_per_minibatch"] for m, v in med.items()}
            emit(kind="summary", mode="partition", dataset=name_of(spec), parts=k,
                 shape=args.shape, epochs=epochs, minibatches=runs[methods[0]][0]["minibatches"],
                 bytes_per_minibatch=b, epoch_s={m: v["epoch_s"] for m, v in med.items()},
                 measured_volume={m: v["measured_volume"] for m, v in med.items()},
                 predicted_volume={m: plans[m]["predicted_volume"] for m in methods},
                 measured_vs_predicted={m: v["measured_vs_predicted"] for m, v in med.items()},
                 shp_lt_hp=(b["shp"] < b["hp"]) if {"shp", "hp"} <= set(b) else None,
                 hp_vs_rp=round(b["hp"] / b["rp"], 4) if {"hp", "rp"} <= set(b) else None,
                 within_5pct=all(abs(v["measured_vs_predicted"] - 1) <= TOLERANCE
                                 for v in med.values()))


def bench_full(args) -> None:
    spec = args.data[0]
    metric = load_dataset(spec, seed=0).metric
    root = Path(args.out) / "full"
    root.mkdir(parents=True, exist_ok=True)
    plan = root / f"plan_{args.method}{args.nprocs}"
    if plan.exists():
        shutil.rmtree(plan)
    emit(kind="plan", dataset=name_of(spec), parts=int(args.nprocs), method=args.method,
         **command(scalegnn("partition", "make", spec, "--parts", args.nprocs, "--method",
                            args.method, "--seed", args.seed, "--out", plan)))
    ps, comps, runs = [float(x) for x in args.ps.split(",")], args.compression.split(","), {}
    for rnd in range(args.rounds):
        for p in ps:
            for comp in comps:
                meta, recs, summ = train(
                    root / f"p{p}_{comp}_r{rnd}", int(args.nprocs), args, "--plan", plan,
                    "--config", args.config, "--set", f"distributed.boundary_p={p}", "--set",
                    f"distributed.compression={comp}")
                runs.setdefault((p, comp), []).append(emit(
                    kind="run", mode="full", dataset=name_of(spec), nprocs=int(args.nprocs),
                    method=args.method, p=p, compression=comp, round=rnd, shape=args.shape,
                    epochs=args.epochs, **meta, **full_figures(recs), metric=metric,
                    test=test_metric(summ, metric)))
    for comp in comps:
        med = {p: {f: round(statistics.median(r[f] for r in runs[(p, comp)]), 3) for f in
                   ("epoch_s", "allreduce_s", "allreduce_exposed_s", "allreduce_hidden_share")}
               for p in ps}
        rounds = ([round(a["epoch_s"] / b["epoch_s"], 3) for a, b in
                   zip(runs[(0.1, comp)], runs[(1.0, comp)])] if {0.1, 1.0} <= set(ps) else [])
        emit(kind="summary", mode="full", dataset=name_of(spec), compression=comp,
             shape=args.shape, nprocs=int(args.nprocs), epochs=args.epochs, figures=med,
             epoch_ratio_p01_vs_p1=round(statistics.median(rounds), 3) if rounds else None,
             epoch_ratio_rounds=rounds,
             test={p: [r["test"] for r in runs[(p, comp)]] for p in ps})


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bench", choices=("data", "partition", "full"))
    ap.add_argument("--data", nargs="+", default=None,
                    help=f"datasets (default: {DATA}; partition: also kronecker:17:8)")
    ap.add_argument("--config", default=None, help="train config (default per benchmark: "
                    "facebook_rw.yml, facebook_partition.yml, facebook_dist.yml)")
    ap.add_argument("--nprocs", default=None, help="data: comma list (2,4); full: one (4)")
    ap.add_argument("--parts", default="4,8", help="partition: comma list of K (= ranks)")
    ap.add_argument("--methods", default="rp,gp,hp,shp", help="partition: plans to compare")
    ap.add_argument("--method", default="gp", help="full: the plan's partitioner")
    ap.add_argument("--ps", default="1,0.1", help="full: boundary keep-probabilities")
    ap.add_argument("--compression", default=None,
                    help="data / full: comma list of distributed.compression (none,bf16,fp16)")
    ap.add_argument("--epochs", type=int, default=None, help="data / full (default 12 / 20)")
    ap.add_argument("--min-steps", type=int, default=120,
                    help="partition: at least this many minibatches per run (epochs follow)")
    ap.add_argument("--eval-batches", type=int, default=200,
                    help="partition: fresh minibatches of each plan's predicted volume")
    ap.add_argument("--rounds", type=int, default=1, help="run every variant R times, interleaved")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--shape", default=None, help="rate-limit the loopback (e.g. 1gbit, 50mbit)")
    ap.add_argument("--burst", default="1mb", help="token-bucket burst of --shape (> 64 KiB)")
    ap.add_argument("--latency", default="50ms", help="tbf queue bound of --shape (400ms below "
                    "1gbit)")
    ap.add_argument("--out", default="runs/bench_minibatch")
    args = ap.parse_args(argv)
    if args.shape and os.environ.get(SHAPED_ENV) != args.shape:
        return run_shaped(__file__, args.shape, args.burst, args.latency,
                          sys.argv[1:] if argv is None else list(argv))
    defaults = {"data": ("facebook_rw", "2,4", "none", 12), "partition": ("facebook_partition",
                None, "none", 1), "full": ("facebook_dist", "4", "none,bf16", 20)}[args.bench]
    args.config = args.config or f"configs/shared/{defaults[0]}.yml"
    args.nprocs = args.nprocs or defaults[1]
    args.compression = args.compression or defaults[2]
    args.epochs = args.epochs or defaults[3]
    args.data = args.data or ([DATA, "kronecker:17:8"] if args.bench == "partition" else [DATA])
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    emit(kind="start", bench=args.bench, shape=args.shape, load_avg=list(os.getloadavg()),
         argv=sys.argv[1:] if argv is None else list(argv))
    if args.shape:
        emit(kind="link", shape=args.shape, measured_gbit_s=round(measure_link(), 3))
    {"data": bench_data, "partition": bench_partition, "full": bench_full}[args.bench](args)
    emit(kind="end", bench=args.bench, load_avg=list(os.getloadavg()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
