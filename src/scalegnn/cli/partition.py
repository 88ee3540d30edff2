"""``scalegnn partition``: partition a dataset into a plan folder, measure partitions.

* ``partition DATA --parts K --method hp|gp|rp --out PLAN [--report]`` — write a plan; with
  ``--report`` also print its exact accounting (volume and messages avg/max per layer, compute
  imbalance, partitioning time). ``--report`` without ``--out`` only measures.
* ``partition compare DATA --methods hp,gp,rp --parts 4,8,16,32 --out T.json [--plot T.png]`` —
  the accounting table of every method and part count, as JSON and a plot.
* ``partition shp DATA --parts 4,8 --sampler rw --budget num_root=500,depth=2`` — expected
  communication volume of fresh random minibatches under HP vs SHP (stochastic hypergraph).

``metis`` and ``random`` remain aliases of ``gp`` and ``rp``.
"""

from __future__ import annotations

import argparse
import json

from scalegnn.dist.compare import (compare, format_table, method_spec, parse_list, plot, report_row,
                                   write_json)
from scalegnn.dist.dataload import load
from scalegnn.dist.partition import canonical, partition_dataset
from scalegnn.dist.shp import compare_shp, parse_budget, plot_shp
from scalegnn.errors import ConfigError

_FORMS = ("compare", "shp")


def add_parser(sub):
    p = sub.add_parser("partition", help="partition a dataset into a plan folder for dist-train; "
                                         "'partition compare' / 'partition shp' measure methods")
    p.add_argument("data", help="dataset path or generator spec (e.g. kronecker:17:16), or "
                                "'compare' / 'shp' followed by the dataset")
    p.add_argument("data2", nargs="?", help=argparse.SUPPRESS)
    p.add_argument("--parts", required=True,
                   help="number of parts (= ranks); compare/shp: a comma list, e.g. 4,8,16,32")
    p.add_argument("--method", default="gp",
                   help="hp (hypergraph, Mt-KaHyPar: minimal volume), gp (METIS graph model; "
                        "alias metis) or rp (random rows; alias random)")
    p.add_argument("--methods", default="hp,gp,rp",
                   help="compare: methods to compare (gp:cut / gp:vol pick METIS' objective)")
    p.add_argument("--gp-objective", default="vol",
                   help="METIS objective for gp: vol (communication volume) or cut (edge cut, "
                        "the graph model of Demirci et al. / DistDGL)")
    p.add_argument("--out", help="plan folder to write (compare/shp: JSON table)")
    p.add_argument("--report", action="store_true",
                   help="print the exact volume / messages / imbalance / time of the partition")
    p.add_argument("--plot", help="compare/shp: PNG plot to write")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--imbalance", type=float, default=0.01,
                   help="allowed compute imbalance ε (max part weight <= (1+ε) avg), HP and GP")
    p.add_argument("--preset", default="deterministic",
                   help="Mt-KaHyPar preset for hp: deterministic (reproducible), default, "
                        "quality, highest_quality")
    p.add_argument("--threads", type=int, default=None, help="Mt-KaHyPar threads (default: all)")
    p.add_argument("--weights", default="degree",
                   help="METIS vertex weights: degree (deg+1, balances SpMM work) or nodes "
                        "(balances rows: feature memory and dense GEMMs)")
    p.add_argument("--metis-max-entries", type=int, default=1 << 25,
                   help="sparsify larger graphs before METIS / Mt-KaHyPar (memory); "
                        "the plan always uses the full graph")
    p.add_argument("--sampler", default="rw", help="shp: GraphSAINT sampler (node, edge, rw)")
    p.add_argument("--budget", default="num_root=500,depth=2",
                   help="shp: sampler budget as key=value pairs")
    p.add_argument("--theta", type=float, default=0.1, help="shp: Hoeffding error θ")
    p.add_argument("--delta", type=float, default=0.5, help="shp: Hoeffding confidence 1-δ")
    p.add_argument("--min-batches", type=int, default=200,
                   help="shp: sample at least this many minibatches even when the Hoeffding "
                        "bound asks for fewer (default 200)")
    p.add_argument("--no-prior", dest="prior", action="store_false",
                   help="shp: partition the sampled nets alone, without the full graph's nets "
                        "(Algorithm 3 as published)")
    p.add_argument("--eval-batches", type=int, default=200,
                   help="shp: fresh minibatches the expected volume is averaged over")
    p.set_defaults(func=run)


def _kw(args) -> dict:
    return {"imbalance": args.imbalance, "preset": args.preset, "threads": args.threads,
            "max_entries": args.metis_max_entries, "weights": args.weights,
            "gp_objective": args.gp_objective}


def run(args) -> int:
    if args.data in _FORMS:
        if not args.data2:
            raise ConfigError(f"partition {args.data}: missing DATA (a dataset path or spec)")
        return run_compare(args) if args.data == "compare" else run_shp(args)
    if args.data2:
        raise ConfigError(f"partition: unexpected argument {args.data2!r} (forms: "
                          f"'partition DATA', 'partition compare DATA', 'partition shp DATA')")
    canonical(args.method)
    try:
        parts = int(args.parts)
    except ValueError:
        raise ConfigError(f"--parts: expected one integer, got {args.parts!r}") from None
    if not args.out and not args.report:
        raise ConfigError("partition: --out PLAN is required (or --report to only measure)")
    ds = load(args.data, seed=args.seed)
    row, a = report_row(ds.graph, args.method, parts, seed=args.seed, **_kw(args))
    out = {"method": row["method"], "parts": parts}
    if args.out:
        plan = partition_dataset(ds, parts, args.out, method=args.method, seed=args.seed,
                                 weights=args.weights, preset=args.preset,
                                 gp_objective=args.gp_objective, assignment=a)
        out = {"plan": str(plan.root), **out, **plan.meta["totals"]}
    if args.report:
        out["report"] = {k: row[k] for k in row if k not in ("sent", "recv", "messages",
                                                             "compute_load")}
    print(json.dumps(out))
    if args.report:
        print(format_table([row]))
    return 0


def run_compare(args) -> int:
    methods = parse_list(args.methods, "--methods")
    for m in methods:
        method_spec(m)                           # refuse a bad name before loading data
    parts = parse_list(args.parts, "--parts", int)
    ds = load(args.data2, seed=args.seed)
    res = compare(ds, methods, parts, seed=args.seed, **_kw(args),
                  log=lambda r: print(json.dumps({k: r[k] for k in r if k not in (
                      "sent", "recv", "messages", "compute_load")}), flush=True))
    print(format_table(res["rows"]))
    print(json.dumps({"geomean_ratios": res["geomean_ratios"]}))
    return _save(res, args, plot)


def run_shp(args) -> int:
    parts = parse_list(args.parts, "--parts", int)
    ds = load(args.data2, seed=args.seed)
    res = compare_shp(ds, parts, sampler=args.sampler, budget=parse_budget(args.budget),
                      theta=args.theta, delta=args.delta, eval_batches=args.eval_batches,
                      seed=args.seed, imbalance=args.imbalance, preset=args.preset,
                      threads=args.threads, min_batches=args.min_batches, prior=args.prior,
                      log=lambda r: print(json.dumps(r), flush=True))
    print(json.dumps({"geomean_shp_vs_hp": res["geomean_shp_vs_hp"]}))
    return _save(res, args, plot_shp)


def _save(res: dict, args, plot_fn) -> int:
    """The compare/shp result as ``--out`` JSON and a ``--plot`` PNG, where asked for."""
    if args.out:
        write_json(res, args.out)
    if args.plot:
        plot_fn(res, args.plot)
    return 0
