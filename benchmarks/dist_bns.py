"""BNS-GCN benchmark: K gloo ranks at boundary keep-probability p vs single-process full batch.

For each dataset and partitioner (``--methods hp,gp,rp``): partition into K parts (and once into
1 part); run ``scalegnn.dist`` through torchrun for every p (and the 1-rank plan = single-process full-batch training through the
same code, so peak memory is measured the same way); print one JSON line per run and one
summary line per dataset:

* bytes sent per epoch (sum over ranks) at p vs p = 1            (target <= 12% at p = 0.1)
* epoch time (median over epochs after the first; with ``--rounds R`` the median over R
  interleaved runs, and the p=0.1 / p=1 ratio of each round)   (p = 0.1 faster than p = 1)
* final test metric at p = 0.1 / 1 / 0                           (target |0.1 - 1| <= 1 point)
* peak RSS per rank (max over ranks) vs the 1-rank run           (target <= 40%)
* per run: communication share (exchange time / epoch), wait share (blocked / epoch) and the
  overlapped share of the forward exchanges (local compute / (local compute + blocked))

Shaped network (``--shape 1gbit``): on Linux as root, the script re-runs itself inside a private
network namespace whose loopback is rate-limited by ``tc ... tbf`` (``benchmarks/_shaped.py``),
so every rank on 127.0.0.1 talks over a 1 Gbit/s link; a short TCP transfer checks the rate
first (``kind: link``). Where namespaces or ``tc`` are not permitted it prints ``kind: skip``
and exits 0.

Usage::

    python benchmarks/dist_bns.py --data ../shared/data/facebook kronecker:17:16 \
        --nprocs 4 --epochs 30 --hidden 64 --out runs/bench_dist
    python benchmarks/dist_bns.py --shape 1gbit --methods hp,gp,rp --ps 1,0.1,0.01 \
        --data ../shared/data/facebook kronecker:17:16 --nprocs 4 --out runs/bench_shaped

Measured 2026-11-22 (2 cores, 4 gloo ranks, OMP_NUM_THREADS=1 per rank, 1-0-1-0 concat/norm,
hidden 64, lr 0.01, dropout 0, 30 epochs, ``--weights nodes``, lean_memory on):

=================  ============  =============  =====================  =======================
dataset            bytes p=.1/1  epoch s p=1    test p=1 / .1 / 0      peak RSS/rank vs 1 rank
                                 / .1 / 0                              (above the 282 MB base)
=================  ============  =============  =====================  =======================
facebook           0.101         .84/.87/.86    acc .932/.928/.929     0.56 (0.36)
kronecker:17:16    0.101         1.74/1.50/1.39 auc .774/.701/.750     0.50 (0.35)
=================  ============  =============  =====================  =======================

(1-rank full batch: facebook acc .932, 0.85 s/epoch, 886 MB; kronecker auc .774, 1.68 s/epoch,
1254 MB. An earlier facebook run gave 1.17 s at p=1 vs 1.04 s at p=0.1: its exchange is 7.8 MB
per epoch, within this machine's run-to-run noise. Kronecker F1-micro stays near 0 after 30
epochs at every p: the model does not yet predict positives.)

Later the same day, with owners deriving the kept rows from the receivers' draws (no count /
index rounds) and ``--rounds`` (12 epochs per run, p=1 then p=0.1 in each round): kronecker
median epoch 1.35 s (p=1) vs 1.27 s (p=0.1), per-round ratios 1.02 / 0.87; facebook 0.78 vs
0.77 s, ratios 1.10 / 1.08 / 0.90; bytes 0.100 / 0.101; peak RSS ratios unchanged.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # _shaped, also when loaded by path
from _shaped import SHAPED_ENV, measure_link, run_shaped  # noqa: E402


def run_dist(plan: Path, nprocs: int, out: Path, p: float, args) -> dict:
    from scalegnn.dist.launch import supervise
    sets = [f"network.dim={args.hidden}", f"network.arch={args.arch}", f"params.lr={args.lr}",
            f"params.dropout={args.dropout}", f"params.eval_every={args.epochs}",
            "params.standardize=false", f"distributed.boundary_p={p}"]
    argv = ["--plan", str(plan), "--out", str(out), "--epochs", str(args.epochs),
            "--timeout", "600", "--seed", str(args.seed), "--no-progress"]
    for s in sets:
        argv += ["--set", s]
    if out.exists():
        import shutil
        shutil.rmtree(out)
    t0 = time.perf_counter()
    rc = supervise(nprocs, argv)
    wall = time.perf_counter() - t0
    if rc != 0:
        raise SystemExit(f"dist run {out} failed with status {rc}")
    recs = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    summary = json.loads((out / "summary.json").read_text())
    later = recs[1:] or recs
    per_epoch = lambda f: statistics.median(sum(r[f] for r in rec["ranks"]) for rec in later)  # noqa: E731
    epoch_s = statistics.median(max(r["epoch_s"] for r in rec["ranks"]) for rec in later)
    last = recs[-1]
    peak = max(r["peak_rss_mb"] for r in last["ranks"])
    base = max(r["base_rss_mb"] for r in last["ranks"])
    test = summary.get("test", {})
    med = lambda f: statistics.median(max(r[f] for r in rec["ranks"]) for rec in later)  # noqa: E731
    return {"nprocs": nprocs, "p": p, "epochs": len(recs), "wall_s": round(wall, 1),
            "epoch_s": round(epoch_s, 3),
            "comm_share": round(med("comm_s") / epoch_s, 3) if epoch_s else 0.0,
            "wait_share": round(med("wait_s") / epoch_s, 3) if epoch_s else 0.0,
            "overlap_share": round(statistics.median(rec.get("overlap_share", 0.0)
                                                     for rec in later), 3),
            "compute_s": round(statistics.median(max(r["compute_s"] for r in rec["ranks"]) for rec in later), 3),
            "comm_s": round(statistics.median(max(r["comm_s"] for r in rec["ranks"]) for rec in later), 3),
            "wait_s": round(statistics.median(max(r["wait_s"] for r in rec["ranks"]) for rec in later), 3),
            "allreduce_s": round(statistics.median(max(r["allreduce_s"] for r in rec["ranks"]) for rec in later), 3),
            "bytes_sent": per_epoch("bytes_sent"), "bytes_recv": per_epoch("bytes_recv"),
            "peak_rss_mb_max_rank": round(peak, 1), "base_rss_mb": round(base, 1),
            "final_loss": last["loss"], "test": test}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", nargs="+", default=["../shared/data/facebook", "kronecker:17:16"])
    ap.add_argument("--nprocs", type=int, default=4)
    ap.add_argument("--ps", default="1,0.1,0")
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--arch", default="1-0-1-0")
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--dropout", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--methods", default="gp",
                    help="partitioners to compare, e.g. hp,gp,rp (each gets its own plan and runs)")
    ap.add_argument("--shape", default=None,
                    help="rate-limit the loopback (e.g. 1gbit, 10gbit) in a private network "
                         "namespace (Linux, root); skipped with a message where not permitted")
    ap.add_argument("--burst", default="1mb", help="token-bucket burst of --shape (> 64 KiB MTU)")
    ap.add_argument("--latency", default="50ms",
                    help="tbf queue bound of --shape (packets queued longer are dropped: raise "
                         "it, e.g. 400ms, for rates below 1gbit)")
    ap.add_argument("--weights", default="degree", help="METIS vertex weights: degree | nodes")
    ap.add_argument("--out", default="runs/bench_dist")
    ap.add_argument("--no-single", action="store_true", help="skip the 1-rank full-batch run")
    ap.add_argument("--rounds", type=int, default=1,
                    help="run every p this many times, interleaved (p=1, p=.1, ..., p=1, ...), and "
                         "compare epoch times per round: machine drift hits both alike")
    args = ap.parse_args(argv)
    if args.shape and os.environ.get(SHAPED_ENV) != args.shape:
        return run_shaped(__file__, args.shape, args.burst, args.latency,
                          sys.argv[1:] if argv is None else list(argv))
    if args.shape:
        print(json.dumps({"kind": "link", "shape": args.shape,
                          "measured_gbit_s": round(measure_link(), 3)}), flush=True)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from scalegnn.dist.dataload import load
    from scalegnn.dist.partition import partition_dataset
    ps = [float(x) for x in args.ps.split(",")]
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    for spec in args.data:
        name = Path(spec).name if not spec.startswith("kronecker") else spec.replace(":", "_")
        root = Path(args.out) / name
        t0 = time.perf_counter()
        ds = load(spec, seed=args.seed)
        load_s = time.perf_counter() - t0
        key = ds.metric
        info = {"dataset": name, "nodes": ds.num_nodes, "entries": ds.graph.num_edges,
                "features": ds.num_features, "metric": key, "load_s": round(load_s, 1)}
        for m in methods:
            t0 = time.perf_counter()
            plan = partition_dataset(ds, args.nprocs, root / f"plan_{m}{args.nprocs}", method=m,
                                     seed=args.seed, weights=args.weights)
            print(json.dumps({"kind": "plan", "method": m, **info,
                              "partition_s": round(time.perf_counter() - t0, 1),
                              **plan.meta["totals"]}), flush=True)
        single_plan = None if args.no_single else partition_dataset(ds, 1, root / "plan1", method="random")
        del ds
        per_method = {}
        for m in methods:
            rounds = {p: [] for p in ps}
            for r in range(max(args.rounds, 1)):
                for p in ps:
                    out = root / (f"run_{m}_p{p}" if args.rounds <= 1 else f"run_{m}_p{p}_r{r}")
                    rounds[p].append(run_dist(root / f"plan_{m}{args.nprocs}", args.nprocs, out,
                                              p, args))
                    print(json.dumps({"kind": "run", "dataset": name, "method": m, "round": r,
                                      "shape": args.shape, **rounds[p][-1]}), flush=True)
            per_method[m] = (rounds, {p: dict(runs[-1], epoch_s=statistics.median(
                x["epoch_s"] for x in runs)) for p, runs in rounds.items()})
        single = None
        if single_plan is not None:
            single = run_dist(root / "plan1", 1, root / "run_single", 1.0, args)
            print(json.dumps({"kind": "run", "dataset": name, "single": True, **single}), flush=True)
        for m, (rounds, res) in per_method.items():
            summ = {"kind": "summary", "dataset": name, "method": m, "shape": args.shape,
                    "nprocs": args.nprocs, "epochs": args.epochs, "hidden": args.hidden}
            for p in res:
                summ[f"epoch_s_p{p}"] = res[p]["epoch_s"]
                summ[f"comm_share_p{p}"] = res[p]["comm_share"]
                summ[f"wait_share_p{p}"] = res[p]["wait_share"]
                summ[f"overlap_share_p{p}"] = res[p]["overlap_share"]
                summ[f"test_p{p}"] = res[p]["test"].get(key)
            if 1.0 in res:
                for p in res:
                    if p != 1.0:
                        summ[f"epoch_ratio_p{p}_vs_p1"] = round(res[p]["epoch_s"] / res[1.0]["epoch_s"], 3)
                        summ[f"bytes_sent_ratio_p{p}_vs_p1"] = res[p]["bytes_sent"] / max(res[1.0]["bytes_sent"], 1)
            if 1.0 in res and 0.1 in res:
                # per round: p=0.1 ran right after p=1, so drift of the machine cancels
                summ["epoch_ratio_p0.1_vs_p1_rounds"] = [
                    round(a["epoch_s"] / b["epoch_s"], 3) for a, b in zip(rounds[0.1], rounds[1.0])]
            if single is not None:
                summ["test_single"] = single["test"].get(key)
                summ["peak_rss_mb_single"] = single["peak_rss_mb_max_rank"]
                for p in res:
                    summ[f"peak_rss_ratio_p{p}"] = res[p]["peak_rss_mb_max_rank"] / single["peak_rss_mb_max_rank"]
                    base = single["base_rss_mb"]
                    summ[f"peak_rss_ratio_above_base_p{p}"] = (
                        (res[p]["peak_rss_mb_max_rank"] - res[p]["base_rss_mb"])
                        / max(single["peak_rss_mb_max_rank"] - base, 1e-9))
            print(json.dumps(summ), flush=True)
        if len(per_method) > 1 and 1.0 in ps:
            print(json.dumps({"kind": "methods", "dataset": name, "shape": args.shape,
                              "epoch_s_p1": {m: res[1.0]["epoch_s"] for m, (_, res) in per_method.items()},
                              "bytes_sent_p1": {m: res[1.0]["bytes_sent"] for m, (_, res) in per_method.items()}}),
                  flush=True)


if __name__ == "__main__":
    sys.exit(main())
