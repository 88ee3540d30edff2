"""GraphSAINT's samplers: the reference C++/OpenMP sampler beside scalegnn's, in process CPU
seconds per subgraph of the same size (JSON lines: one per sampler per round, then a summary).

    OMP_NUM_THREADS=2 python benchmarks/reference_samplers.py --ref /tmp/ref/GraphSAINT
        [--graph kronecker:17:8] [--samplers rw,edge,node,mrw] [--rounds 3] [--count 32]
        [--threads 2] [--seed 0]

The reference is NOT vendored (its code stays out of this repository). Fetch its unchanged
source from https://github.com/GraphSAINT/GraphSAINT: ``graphsaint/cython_sampler.pyx``,
``graphsaint/cython_utils.pyx``, ``graphsaint/cython_utils.pxd``, ``graphsaint/adj_misc.pyx``
(its setup.py compiles it too), ``graphsaint/setup.py`` and ``LICENSE`` into ``<ref>/``, add an
empty ``graphsaint/__init__.py`` (the package marker; without it the modules are built
top-level and ``cimport graphsaint.cython_utils`` fails), and build it in place with its own
setup.py (``-fopenmp -std=c++11`` from the .pyx headers, ``-O3`` from Python's flags)::

    pip install cython setuptools
    cd <ref> && python graphsaint/setup.py build_ext --inplace

With Cython 3 the build stops at ``cython_utils.pyx:72: Function signature does not match
previous declaration``: the stored .pxd declares ``_adj_extract_cython`` without the
``ret_indices_orig`` and ``ret_edge_index`` arguments its .pyx defines. The samplers never
call that function (each has its own ``adj_extract``); make the .pxd declaration match the
.pyx definition (those two arguments) and build again. ``--ref`` is the folder holding the
built ``graphsaint`` package. Tested with the files of commits 1b72b2d (cython_sampler.pyx),
7ec312d (cython_utils.pyx), 0b289d2 (cython_utils.pxd), f5b2e67 (adj_misc.pyx), 22e5b26
(setup.py); CRLF line endings; Cython 3.3.1, g++ 12.2.

Each round, for each sampler, in alternating order (reference first in even rounds): one
timed call of the reference's ``par_sample`` (``num_proc = --threads`` OpenMP threads, each
drawing ``--count / --threads`` subgraphs and inducing them, then its numpy conversion
``get_return``), constructed as its ``graphsaint/graph_samplers.py`` constructs it with every
node a training node, and one timed call of scalegnn's ``make_sampler(...).sample(--count,
seed, num_threads=--threads, start, edge_values=ones, row_scale="inverse_degree")`` as
``scalegnn bench sample`` calls it (CSR + parent edge ids + transpose permutation + edge
values). Budgets are ``scalegnn.bench.sample.BUDGETS`` (the reference's PPI ones); the
reference's frontier sampler gets its default ``max_deg=10000``, scalegnn's none. Both are
constructed and called once before timing (numba compilation, first-touch allocations).
Times come from :class:`scalegnn.bench.measure.Clock` (process CPU of all threads, and wall).
``ratio`` is ref CPU / ours CPU per subgraph; ``sizes_agree`` says whether mean nodes and
edges per subgraph agree within 1%. stdout carries only the JSON lines.

The two differ in work done: the reference draws from the C library's ``rand()`` (one global,
locked generator shared by its threads), by binary search over float32 (edge) or int32 (node)
cumulative weights, and its frontier Dashboard grows without compaction; it writes constant
edge values and no transpose permutation, where scalegnn writes values scaled by 1/deg(row)
and the transpose permutation. Both edge samplers draw the same distribution (``size_subg_edge``
undirected edges with replacement, P(u, v) ∝ 1/deg(u) + 1/deg(v)), so the budgets are the same.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from scalegnn.bench.measure import Clock, load_avg
from scalegnn.bench.sample import BUDGETS
from scalegnn.data import load_dataset
from scalegnn.sampling import make_sampler
from scalegnn.threads import keep_freed_memory

SAMPLERS = ("rw", "edge", "node", "mrw")
REF_MAX_DEG = 10000  # graph_samplers.mrw_sampling's default


def fail(msg: str):
    """One line on stderr, exit status 2 (bad arguments), as the CLI does."""
    print(f"reference_samplers: {msg}", file=sys.stderr)
    sys.exit(2)


def load_reference(ref: str):
    """Import the built ``graphsaint.cython_sampler`` from the folder ``ref``."""
    base = Path(ref)
    if not list((base / "graphsaint").glob("cython_sampler*.so")):
        fail(f"--ref {ref}: no built graphsaint/cython_sampler*.so "
                 f"there (see the docstring for how to fetch and build it)")
    sys.path.insert(0, str(base))
    import graphsaint.cython_sampler as cy
    return cy


def new_reference(cy, name: str, graph, budget: dict, threads: int, per_proc: int):
    """The reference's sampler object, with the constructor arguments its
    ``graph_samplers.py`` computes (training nodes = all nodes, adjacency data all ones)."""
    n = graph.num_nodes
    indptr = graph.indptr.astype(np.int32)
    indices = graph.indices.astype(np.int32)
    train = np.arange(n, dtype=np.int32)
    deg = np.diff(graph.indptr)
    head = (indptr, indices, train, threads, per_proc)
    if name == "rw":
        return cy.RW(*head, budget["num_root"], budget["depth"])
    if name == "node":  # cumulative degree of the training nodes (int32)
        return cy.Node(*head, np.cumsum(deg).astype(np.int32), budget["size_subgraph"])
    if name == "mrw":  # p_dist: row sums of the adjacency
        return cy.MRW(*head, deg.astype(np.int32), REF_MAX_DEG, budget["size_frontier"],
                      budget["size_subgraph"])
    m = budget["size_subg_edge"]  # edge: Edge2 over the upper triangle, P ∝ 1/deg(u) + 1/deg(v)
    adj = sp.csr_matrix((np.ones(indices.size), indices, indptr), shape=(n, n))
    with np.errstate(divide="ignore"):
        norm = sp.dia_matrix((1 / np.asarray(adj.sum(1)).ravel(), 0), shape=(n, n)).dot(adj)
    prob = sp.csr_matrix((np.zeros(adj.size), adj.indices, adj.indptr), shape=(n, n))
    prob.data[:] = norm.data[:]
    prob.data += sp.csr_matrix.tocsc(norm).data
    prob.data *= 2 * m / prob.data.sum()
    tri = sp.triu(prob).astype(np.float32)
    return cy.Edge2(*head, tri.row.astype(np.int32), tri.col.astype(np.int32),
                    tri.data.cumsum(), m)


def ref_call(sampler, clock: Clock):
    with clock:
        _, indices, _, nodes, _ = sampler.par_sample()
    return [x.size for x in nodes], [x.size for x in indices]


def ours_call(sampler, count, seed, threads, start, ones, clock: Clock):
    with clock:
        subs = sampler.sample(count, seed=seed, num_threads=threads, start=start,
                              edge_values=ones, row_scale="inverse_degree")
    return [s.num_nodes for s in subs], [s.num_edges for s in subs]


def rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(b), 1e-12)


def pooled_sizes(sizes: dict) -> dict:
    """Mean nodes and edges per subgraph over every round's subgraphs, each side, with the
    standard error of the mean (per-round means of hub-heavy graphs vary by a few %)."""
    out = {}
    for i, what in enumerate(("nodes", "edges")):
        for side in ("ref", "ours"):
            x = np.asarray(sizes[side][i], dtype=np.float64)
            out[f"{side}_{what}"] = float(x.mean())
            out[f"{side}_{what}_sem"] = float(x.std(ddof=1) / np.sqrt(x.size)) if x.size > 1 \
                else 0.0
        out[f"{what}_rel_diff"] = rel(out[f"ours_{what}"], out[f"ref_{what}"])
    out["agree"] = out["nodes_rel_diff"] <= 0.01 and out["edges_rel_diff"] <= 0.01
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ref", required=True,
                   help="folder holding the built reference graphsaint package")
    p.add_argument("--graph", default="kronecker:17:8", help="any load_dataset spec")
    p.add_argument("--samplers", default=",".join(SAMPLERS), help="comma list of rw,edge,node,mrw")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--count", type=int, default=32,
                   help="subgraphs per timed call (a multiple of --threads)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    names = [s.strip() for s in args.samplers.split(",") if s.strip()]
    bad = [s for s in names if s not in SAMPLERS]
    if bad or not names:
        fail(f"--samplers: unknown {bad} (choose from {SAMPLERS})")
    if args.threads < 1 or args.count < args.threads or args.count % args.threads:
        fail("--count must be a positive multiple of --threads")
    if args.rounds < 1:
        fail("--rounds must be >= 1")
    cy = load_reference(args.ref)
    # the process settings every scalegnn command and the Trainer run with (freed buffers
    # reused instead of fresh pages); both sides allocate their outputs under them
    keep_freed_memory()

    def emit(rec):
        print(json.dumps(rec), flush=True)

    graph = load_dataset(args.graph, seed=args.seed).graph
    nodes = np.arange(graph.num_nodes, dtype=np.int64)
    ones = np.ones(graph.num_edges, dtype=np.float32)
    per_proc = args.count // args.threads
    refs, ours = {}, {}
    for name in names:  # one-time setup and warm-up, untimed
        refs[name] = new_reference(cy, name, graph, BUDGETS[name], args.threads, per_proc)
        refs[name].par_sample()
        ours[name] = make_sampler(name, graph, nodes, BUDGETS[name])
        ours[name].sample(args.count, seed=args.seed, num_threads=args.threads,
                          edge_values=ones, row_scale="inverse_degree")
    rows = []
    pooled = {n: {"ref": ([], []), "ours": ([], [])} for n in names}
    for r in range(args.rounds):
        for name in names:
            clocks, sizes = {"ref": Clock(), "ours": Clock()}, {}
            for side in ("ref", "ours") if r % 2 == 0 else ("ours", "ref"):
                if side == "ref":
                    sizes[side] = ref_call(refs[name], clocks[side])
                else:
                    sizes[side] = ours_call(ours[name], args.count, args.seed + 1, args.threads,
                                            r * args.count, ones, clocks[side])
                if len(sizes[side][0]) != args.count:
                    fail(f"{name}: {side} returned {len(sizes[side][0])} subgraphs, "
                         f"expected {args.count}")
            rec = {"bench": "reference_samplers", "round": r, "sampler": name,
                   "graph": args.graph, "budget": BUDGETS[name], "threads": args.threads,
                   "count": args.count, "first": "ref" if r % 2 == 0 else "ours"}
            for side, clk in clocks.items():
                v, e = sizes[side]
                pooled[name][side][0].extend(v)
                pooled[name][side][1].extend(e)
                rec[f"{side}_cpu_per_subgraph"] = clk.cpu_s / args.count
                rec[f"{side}_wall_per_subgraph"] = clk.wall_s / args.count
                rec[f"{side}_nodes"] = float(np.mean(v))
                rec[f"{side}_edges"] = float(np.mean(e))
            rec["nodes_rel_diff"] = rel(rec["ours_nodes"], rec["ref_nodes"])
            rec["edges_rel_diff"] = rel(rec["ours_edges"], rec["ref_edges"])
            rec["sizes_agree"] = rec["nodes_rel_diff"] <= 0.01 and rec["edges_rel_diff"] <= 0.01
            rec["ratio"] = rec["ref_cpu_per_subgraph"] / rec["ours_cpu_per_subgraph"]
            rec["wall_ratio"] = rec["ref_wall_per_subgraph"] / rec["ours_wall_per_subgraph"]
            rec["load_avg"] = load_avg()
            rows.append(rec)
            emit(rec)
    loads = [x["load_avg"][0] for x in rows]
    summary = {"bench": "reference_samplers", "summary": True, "graph": args.graph,
               "graph_nodes": graph.num_nodes, "graph_edges": graph.num_edges,
               "rounds": args.rounds, "count": args.count, "threads": args.threads,
               "load_avg_1min_range": [min(loads), max(loads)], "load_avg": load_avg()}
    for key in ("ratio", "wall_ratio"):
        summary[f"median_{key}"] = {n: statistics.median(x[key] for x in rows
                                                         if x["sampler"] == n) for n in names}
    summary["sizes_agree_every_round"] = {n: all(x["sizes_agree"] for x in rows
                                                 if x["sampler"] == n) for n in names}
    summary["pooled_sizes"] = {n: pooled_sizes(pooled[n]) for n in names}
    emit(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
