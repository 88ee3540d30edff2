"""``scalegnn partition DATA --parts K --method metis|random --out PLAN``: write a partition plan."""

from __future__ import annotations

import json


def add_parser(sub):
    p = sub.add_parser("partition", help="partition a dataset into a plan folder for dist-train")
    p.add_argument("data", help="dataset path or generator spec (e.g. kronecker:17:16)")
    p.add_argument("--parts", type=int, required=True, help="number of parts (= ranks)")
    p.add_argument("--method", default="metis", help="metis (min. communication volume) or random")
    p.add_argument("--out", required=True, help="plan folder to write")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--weights", default="degree",
                   help="METIS vertex weights: degree (deg+1, balances SpMM work) or nodes "
                        "(balances rows: feature memory and dense GEMMs)")
    p.add_argument("--metis-max-entries", type=int, default=1 << 25,
                   help="sparsify larger graphs before METIS (its memory is ~100 B/entry); "
                        "the plan always uses the full graph")
    p.set_defaults(func=run)


def run(args) -> int:
    from scalegnn.dist.dataload import load
    from scalegnn.dist.partition import METHODS, partition_dataset
    from scalegnn.errors import ConfigError
    if args.method not in METHODS:
        raise ConfigError(f"--method: {args.method!r} is not one of {list(METHODS)}")
    ds = load(args.data, seed=args.seed)
    plan = partition_dataset(ds, args.parts, args.out, method=args.method, seed=args.seed,
                              max_entries=args.metis_max_entries, weights=args.weights)
    print(json.dumps({"plan": str(plan.root), "method": args.method, "parts": plan.parts,
                      **plan.meta["totals"]}))
    return 0
