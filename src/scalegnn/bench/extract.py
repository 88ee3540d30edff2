"""``scalegnn bench extract``: shaDow-GNN extractor throughput (SPEC §4).

One JSON line per extractor configuration: targets per second at each ``--threads`` count
(best, median and worst of ``--repeats`` passes over ``--targets`` distinct random nodes,
seeded, drawn without replacement — at most every node once: a larger ``--targets`` is cut to
the node count with a warning line — ``--batch`` targets per ``extract`` call, the
block-diagonal CSR built as the trainer uses it), with the wall and process CPU seconds of
those passes per target (:mod:`scalegnn.bench.measure`: ``cpu_per_target``) and the load
average after each thread count (the box may be shared: compare thread counts only when it
is below the core count); the record's own ``wall_s`` / ``cpu_s`` / ``cpu_per_target`` cover
the passes of every thread count. Mean nodes and edges per target subgraph.
PPR lists are computed once up front at the largest thread count; that precompute time is
reported apart (``precompute_seconds``, ``precompute_cpu_s``, ``precompute_cpu_per_target``)
and excluded from targets/s, with its roofline (``precompute_roofline``,
:func:`scalegnn.bench.roofline.ppr_traffic`: the work the push kernel counted per target,
``pushes``, ``neighbour_updates``, ``swept_ids``, ``touched``, and the CPU bound it gives at
the rates ``ops.membw.read_probe`` measures on an array the size of the CSR).
Defaults: ``ppr`` alpha 0.15, eps 1e-6, k 200; ``khop`` depth 2, budget 20.
"""

from __future__ import annotations

import json
import statistics
import sys
import time

import numpy as np

from scalegnn.bench import roofline
from scalegnn.bench.measure import Clock, load_avg
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
                   help="distinct random target nodes (seeded; at most the node count)")
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
    targets = draw_targets(graph.num_nodes, args.targets, args.seed)
    batches = [targets[a:a + args.batch] for a in range(0, targets.size, args.batch)]
    base = {"bench": "extract", "data": args.data, "graph_nodes": graph.num_nodes,
            "graph_edges": graph.num_edges, "targets": int(targets.size),
            "targets_requested": args.targets, "batch": args.batch,
            "repeats": args.repeats, "load_seconds": round(load_s, 3)}
    for name in names:
        rec = {**base, "extractor": name, "params": params[name]}
        set_threads(max(threads))
        if name == "ppr":
            PPRExtractor(graph, **params[name]).precompute(targets[:1])   # compile first
            ex = PPRExtractor(graph, cache_dir=args.cache_dir, **params[name])
            with Clock() as pre:
                ex.precompute(targets)
            rec["precompute_seconds"] = round(ex.precompute_seconds, 3)
            rec["precompute_cpu_s"] = pre.cpu_s
            if ex.num_computed:
                per = ex.push_work / ex.num_computed
                rec["precompute_cpu_per_target"] = pre.cpu_s / ex.num_computed
                rec["precompute_work"] = dict(zip(("pushes", "neighbour_updates", "swept_ids",
                                                   "touched"), np.round(per, 1).tolist()))
                probe = roofline.probe_for(graph.indptr.nbytes + graph.indices.nbytes,
                                           max(threads))
                rec["precompute_roofline"] = roofline.bound(roofline.ppr_traffic(*per), probe,
                                                            pre.cpu_s / ex.num_computed)
            rec["precompute_threads"] = max(threads)
            rec["precompute_cache_hit"] = ex.cache_hit and ex.num_computed == 0
        else:
            ex = KHopExtractor(graph, **params[name])
        ex.extract(batches[0], seed=args.seed)       # compile / warm up
        rates, nv, ne, total = {}, [], [], Clock()
        for th in threads:
            set_threads(th)
            r, clock = [], Clock()
            for rep in range(args.repeats):
                with clock, total:
                    for b in batches:
                        ts = ex.extract(b, seed=args.seed + rep)
                        if th == threads[0] and rep == 0:
                            nv.append(ts.num_nodes)
                            ne.append(ts.num_edges)
                r.append(targets.size / clock.last_wall_s)
            rates[str(th)] = {"targets_per_s": round(max(r), 1),
                              "targets_per_s_median": round(statistics.median(r), 1),
                              "targets_per_s_min": round(min(r), 1),
                              **clock.fields(targets.size * args.repeats, "target"),
                              "load_avg_1min": load_avg()[0]}
        rec["threads"] = rates
        rec["nodes_per_target"] = round(sum(nv) / targets.size, 1)
        rec["edges_per_target"] = round(sum(ne) / targets.size, 1)
        rec.update(total.fields(targets.size * args.repeats * len(threads), "target"))
        print(json.dumps(rec), flush=True)
    return 0


def draw_targets(num_nodes: int, n: int, seed: int) -> np.ndarray:
    """``n`` distinct nodes drawn at random (seeded), in drawn order; at most every node once
    (a larger ``n`` is cut to ``num_nodes`` with a warning line on stderr)."""
    if n > num_nodes:
        print(f"scalegnn: warning: --targets {n} is more than the graph's {num_nodes} nodes: "
              f"timing all {num_nodes} (targets are distinct)", file=sys.stderr, flush=True)
        n = num_nodes
    return np.random.default_rng(seed).choice(num_nodes, size=n, replace=False)
