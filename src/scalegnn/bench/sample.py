"""``scalegnn bench sample``: sampler throughput and normalization pre-sampling time (SPEC §2).

One JSON line per (sampler, threads): subgraphs per second (best and median of ``--repeats``
calls of ``--count`` subgraphs each, CSR + parent edge ids + transpose permutation + edge
values built, as the loader uses them), process CPU per subgraph (all threads; less
sensitive than wall time to other load on a shared machine): ``cpu_ms_per_subgraph`` of the
best call, and the wall and CPU seconds of all the calls (``wall_s``, ``cpu_s``,
``cpu_per_subgraph``: :mod:`scalegnn.bench.measure`), mean nodes and edges per subgraph, the
load average at the end of the (sampler, threads) cell (``load_avg``; ``load_avg_1min`` its
first value), and the wall and CPU time of ``Normalization.estimate`` at ``--coverage``
(counting only; subgraphs are not kept).
``roofline`` (:mod:`scalegnn.bench.roofline`): the bytes streamed and random cache lines one
subgraph touches (as implemented, and the minimum), the CPU-time lower bound they give at
the read rates ``ops.membw.read_probe`` measures on an array the size of the CSR with the
same thread count, and ``cpu_over_bound`` = measured CPU per subgraph / that bound; split by
phase (``Sampler.phase_cpu_s`` of the best call): the node-set draws (``draw_cpu_ms`` against
the draws' random lines, ``draw_bound_cpu_ms``) and the induction (``induce_cpu_ms`` against
the rest, ``induce_bound_cpu_ms``).
Default budgets are the reference PPI ones: rw 3000 roots x 2 hops, edge 4000, node 6000,
mrw 8000 nodes / 2500 frontier. By default the whole graph is sampled over all its nodes;
``--inductive`` samples the training graph over the training nodes instead.
"""

from __future__ import annotations

import json
import statistics
import time

import numpy as np

from scalegnn.bench import roofline
from scalegnn.bench.measure import Clock
from scalegnn.config.flags import REPEATS, SEED, count, name_flags, real
from scalegnn.data import load_dataset
from scalegnn.errors import ConfigError
from scalegnn.sampling import SAMPLERS, Normalization, make_sampler

BUDGETS = {"rw": {"num_root": 3000, "depth": 2}, "edge": {"size_subg_edge": 4000},
           "node": {"size_subgraph": 6000}, "mrw": {"size_subgraph": 8000, "size_frontier": 2500},
           "full": {}}


def add_arguments(p):
    p.add_argument("--graph", default="kronecker:17:8",
                   help="anything scalegnn.data.load_dataset accepts (default kronecker:17:8)")
    p.add_argument("--samplers", default="rw,edge,node,mrw", help="comma list (default %(default)s)")
    p.add_argument("--threads", default="1,2", help="comma list of thread counts (default 1,2)")
    p.add_argument("--count", type=count(1, 10**6), default=32, help="subgraphs per timed call")
    p.add_argument("--repeats", type=REPEATS, default=3, help="timed calls per (sampler, threads)")
    p.add_argument("--coverage", type=real(0.0, 1e5), default=50.0,
                   help="pre-sampling coverage to time (0: skip)")
    p.add_argument("--budget", action="append", default=[], metavar="SAMPLER.KEY=VALUE",
                   help="override a budget, e.g. rw.num_root=2000 (repeatable)")
    p.add_argument("--inductive", action="store_true",
                   help="sample dataset.train_graph over train_idx (default: whole graph)")
    p.add_argument("--seed", type=SEED, default=0)
    name_flags(p)


def _int_list(text: str, name: str) -> list[int]:
    try:
        vals = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise ConfigError(f"--{name}: expected a comma list of integers, got {text!r}") from None
    if not vals or min(vals) < 1:
        raise ConfigError(f"--{name}: values must be integers >= 1, got {text!r}")
    return vals


def _budgets(names: list[str], overrides: list[str]) -> dict:
    out = {n: dict(BUDGETS[n]) for n in names}
    for item in overrides:
        key, sep, val = item.partition("=")
        sampler, dot, param = key.partition(".")
        if not sep or not dot or sampler not in out:
            raise ConfigError(f"--budget: expected SAMPLER.KEY=VALUE with SAMPLER in "
                              f"{', '.join(names)}, got {item!r}")
        try:
            out[sampler][param] = int(val)
        except ValueError:
            raise ConfigError(f"--budget {item!r}: value must be an integer") from None
    return out


def run(args) -> int:

    names = [s.strip() for s in args.samplers.split(",") if s.strip()]
    for n in names:
        if n not in SAMPLERS:
            raise ConfigError(f"--samplers: unknown sampler {n!r} (allowed: "
                              f"{', '.join(SAMPLERS)})")
    threads = _int_list(args.threads, "threads")
    if args.count < 1 or args.repeats < 1:
        raise ConfigError("--count and --repeats must be >= 1")
    budgets = _budgets(names, args.budget)
    t0 = time.perf_counter()
    ds = load_dataset(args.graph, seed=args.seed)
    load_s = time.perf_counter() - t0
    graph = ds.train_graph if args.inductive else ds.graph
    nodes = ds.train_idx if args.inductive else np.arange(graph.num_nodes, dtype=np.int64)
    edge_values = np.ones(graph.num_edges, dtype=np.float32)
    base = {"bench": "sample", "graph": args.graph, "mode": "inductive" if args.inductive
            else "whole-graph", "graph_nodes": graph.num_nodes, "graph_edges": graph.num_edges,
            "load_seconds": round(load_s, 3)}
    csr_bytes = graph.indptr.nbytes + graph.indices.nbytes
    probes = {th: roofline.probe_for(csr_bytes, th) for th in threads}
    for name in names:
        sampler = make_sampler(name, graph, nodes, budgets[name])
        sampler.sample(max(threads), seed=args.seed, num_threads=max(threads))  # compile, warm
        first_rate = None
        for th in threads:
            rates, cpu, phases, nv, ne, scanned, clock = [], [], [], [], [], [], Clock()
            for r in range(args.repeats):
                with clock:
                    subs = sampler.sample(args.count, seed=args.seed + 1, num_threads=th,
                                          start=r * args.count, edge_values=edge_values,
                                          row_scale="inverse_degree")
                rates.append(args.count / clock.last_wall_s)
                cpu.append(clock.last_cpu_s / args.count)
                phases.append({k: v / args.count for k, v in sampler.phase_cpu_s.items()})
                nv += [s.num_nodes for s in subs]
                ne += [s.num_edges for s in subs]
                scanned += [roofline.scanned_entries(graph.indptr, s.nodes) for s in subs]
                del subs
            rec = {**base, "sampler": name, "budget": budgets[name], "threads": th,
                   "subgraphs_per_s": round(max(rates), 2),
                   "subgraphs_per_s_median": round(statistics.median(rates), 2),
                   "cpu_ms_per_subgraph": round(1e3 * min(cpu), 3),
                   "nodes_per_subgraph": round(float(np.mean(nv)), 1),
                   "edges_per_subgraph": round(float(np.mean(ne)), 1),
                   "count": args.count, "repeats": args.repeats,
                   # the box is shared: thread scaling means little when load > cores
                   **clock.fields(args.count * args.repeats, "subgraph")}
            rec["load_avg_1min"] = rec["load_avg"][0]
            traffic = roofline.sampler_traffic(name, budgets[name], np.mean(nv), np.mean(scanned),
                                               np.mean(ne), graph.num_nodes)
            best = int(np.argmin(cpu))   # the phases of the best call, as cpu_ms_per_subgraph
            rec["roofline"] = roofline.bound(traffic, probes[th], cpu[best], phases[best])
            if first_rate is None:
                first_rate = max(rates)
            else:
                rec["speedup_vs_first"] = round(max(rates) / first_rate, 3)
            if args.coverage > 0:
                with Clock() as pre:
                    norm, _ = Normalization.estimate(sampler, nodes, graph.num_nodes,
                                                     args.coverage, seed=args.seed,
                                                     num_threads=th, keep=False)
                rec["presample_seconds"] = round(pre.wall_s, 3)
                rec["presample_cpu_s"] = round(pre.cpu_s, 3)
                rec["presample_subgraphs"] = norm.num_subgraphs
                rec["coverage"] = args.coverage
            print(json.dumps(rec), flush=True)
    return 0
