"""``scalegnn bench extract``: shaDow-GNN extractor throughput (SPEC §4).

One JSON line per extractor configuration: targets per second at each ``--threads`` count
(best, median and worst of ``--repeats`` passes over ``--targets`` random nodes, seeded,
``--batch`` targets per ``extract`` call, the block-diagonal CSR built as the trainer uses it),
mean nodes and edges per target subgraph, and the 1-minute load average after each thread
count (the box may be shared: compare thread counts only when it is below the core count).
PPR lists are computed once up front at the largest thread count; that precompute time is
reported apart (``precompute_seconds``) and excluded from targets/s.
Defaults: ``ppr`` alpha 0.15, eps 1e-6, k 200; ``khop`` depth 2, budget 20.
"""

from __future__ import annotations

import json
import os
import statistics
import time

import numpy as np

from scalegnn.bench.sample import _int_list
from scalegnn.config.flags import REPEATS, SEED, count, name_flags
from scalegnn.config.schema import INT32_MAX
from scalegnn.data import load_dataset
from scalegnn.errors import ConfigError
from scalegnn.shadow.extract import KHopExtractor
from scalegnn.shadow.ppr import PPRExtractor
from scalegnn.threads import set_threads

PARAMS = {"ppr": {"alpha": 0.15, "eps": 1e-6, "k": 200, "threshold": 0.0},
          "khop": {"depth": 2, "budget": 20}}


def add_arguments(p):
    p.add_argument("--data", default="synthetic",
                   help="anything scalegnn.data.load_dataset accepts (default synthetic)")
    p.add_argument("--extractors", default="ppr,khop", help="comma list (default %(default)s)")
    p.add_argument("--threads", default="1,2", help="comma list of thread counts (default 1,2)")
    p.add_argument("--targets", type=count(1, INT32_MAX), default=4096,
                   help="random target nodes (seeded)")
    p.add_argument("--batch", type=count(1, 1 << 20), default=256, help="targets per extract call")
    p.add_argument("--repeats", type=REPEATS, default=3, help="timed passes per thread count")
    p.add_argument("--param", action="append", default=[], metavar="EXTRACTOR.KEY=VALUE",
                   help="override a parameter, e.g. ppr.k=100 or khop.budget=10 (repeatable)")
    p.add_argument("--cache-dir", default=None, help="PPR list cache folder (default: none)")
    p.add_argument("--seed", type=SEED, default=0)
    name_flags(p)


def _params(names: list[str], overrides: list[str]) -> dict:
    out = {n: dict(PARAMS[n]) for n in names}
    for item in overrides:
        key, sep, val = item.partition("=")
        ex, dot, param = key.partition(".")
        if not sep or not dot or ex not in out or param not in out[ex]:
            raise ConfigError(f"--param: expected EXTRACTOR.KEY=VALUE with a key of "
                              f"{', '.join(f'{n}.{k}' for n in names for k in out[n])}, "
                              f"got {item!r}")
        try:
            out[ex][param] = type(PARAMS[ex][param])(float(val))
        except ValueError:
            raise ConfigError(f"--param {item!r}: value must be a number") from None
    return out


def run(args) -> int:

    names = [s.strip() for s in args.extractors.split(",") if s.strip()]
    for n in names:
        if n not in PARAMS:
            raise ConfigError(f"--extractors: unknown extractor {n!r} (allowed: "
                              f"{', '.join(PARAMS)})")
    threads = _int_list(args.threads, "threads")
    if args.targets < 1 or args.batch < 1 or args.repeats < 1:
        raise ConfigError("--targets, --batch and --repeats must be >= 1")
    params = _params(names, args.param)
    t0 = time.perf_counter()
    graph = load_dataset(args.data, seed=args.seed).graph
    load_s = time.perf_counter() - t0
    targets = np.random.default_rng(args.seed).integers(0, graph.num_nodes, args.targets)
    batches = [targets[a:a + args.batch] for a in range(0, targets.size, args.batch)]
    base = {"bench": "extract", "data": args.data, "graph_nodes": graph.num_nodes,
            "graph_edges": graph.num_edges, "targets": int(targets.size), "batch": args.batch,
            "repeats": args.repeats, "load_seconds": round(load_s, 3)}
    for name in names:
        rec = {**base, "extractor": name, "params": params[name]}
        set_threads(max(threads))
        if name == "ppr":
            PPRExtractor(graph, **params[name]).precompute(targets[:1])   # compile first
            ex = PPRExtractor(graph, cache_dir=args.cache_dir, **params[name])
            ex.precompute(targets)
            rec["precompute_seconds"] = round(ex.precompute_seconds, 3)
            rec["precompute_threads"] = max(threads)
            rec["precompute_cache_hit"] = ex.cache_hit and ex.num_computed == 0
        else:
            ex = KHopExtractor(graph, **params[name])
        ex.extract(batches[0], seed=args.seed)       # compile / warm up
        rates, nv, ne = {}, [], []
        for th in threads:
            set_threads(th)
            r = []
            for rep in range(args.repeats):
                t = time.perf_counter()
                for b in batches:
                    ts = ex.extract(b, seed=args.seed + rep)
                    if th == threads[0] and rep == 0:
                        nv.append(ts.num_nodes)
                        ne.append(ts.num_edges)
                r.append(targets.size / (time.perf_counter() - t))
            rates[str(th)] = {"targets_per_s": round(max(r), 1),
                              "targets_per_s_median": round(statistics.median(r), 1),
                              "targets_per_s_min": round(min(r), 1),
                              "load_avg_1min": round(os.getloadavg()[0], 2)}
        rec["threads"] = rates
        rec["nodes_per_target"] = round(sum(nv) / targets.size, 1)
        rec["edges_per_target"] = round(sum(ne) / targets.size, 1)
        print(json.dumps(rec), flush=True)
    return 0
