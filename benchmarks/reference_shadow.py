"""shaDow-GNN's PPR precompute and per-target extraction: the reference C++ sampler beside
scalegnn's, in process CPU seconds per target (JSON lines: one per round, then a summary).

    python benchmarks/reference_shadow.py --ref /tmp/ref/shaDow_GNN [--data facebook]
        [--eps 1e-6] [--k 32] [--alpha 0.15] [--targets 2048] [--batch 256] [--rounds 3]
        [--threads 2] [--exact-targets 512]

The reference is NOT vendored (its code stays out of this repository). Fetch its unchanged
source from https://github.com/facebookresearch/shaDow_GNN (tested with commit 518759b):
``para_graph_sampler/graph_engine/backend/{ParallelSampler.cpp,ParallelSampler.h,Graph.cpp,
Graph.h}``, and build the pybind11 module with the flags of its CMakeLists.txt (-O3, Release
=> -DNDEBUG) and OpenMP::

    pip install pybind11
    cd <ref>/para_graph_sampler/graph_engine/backend
    g++ -O3 -DNDEBUG -fPIC -fopenmp -shared -std=c++14 $(python -m pybind11 --includes) \\
        Graph.cpp ParallelSampler.cpp -o ParallelSampler$(python3-config --extension-suffix)

``--ref`` is the checkout (or the folder holding the built module).

Each round, in alternating order: (1) PPR precompute of the ``--targets`` distinct random
targets (seeded): the reference's ``preproc_ppr_approximate`` (its defaults: lazy push, r(u) >
eps*deg(u), no files; a new sampler object per round) against a new ``PPRExtractor``'s
``precompute`` (``cache_dir=None``: no disk cache, nothing kept across rounds); (2) extraction
of every target's top-k PPR subgraph, ``--batch`` targets per call: the reference's
``parallel_sampler_ensemble`` (method ppr, one root per subgraph, its C++ core; the numpy
conversion of its output is timed apart as ``ref_convert``) against ``PPRExtractor.extract``.
Times come from :class:`scalegnn.bench.measure.Clock` (process CPU, all threads). Both use
``--threads`` threads (OpenMP / numba).

Scopes: the reference's (the target and the best others of its lazy-walk PPR) against
scalegnn's (the target and the k-1 best others of the standard PPR), as mean |A ∩ B| / k, and
both against a float64 power iteration (numpy/scipy, here) of the standard PPR and of the lazy
one (lazy PPR at alpha = standard PPR at 2 alpha / (1 + alpha)), on the first
``--exact-targets`` targets. stdout carries only the JSON lines (the reference's prints go to
stderr).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from scalegnn.bench.extract import draw_targets
from scalegnn.bench.measure import Clock, load_avg
from scalegnn.data import load_dataset
from scalegnn.shadow.ppr import PPRExtractor
from scalegnn.threads import set_threads

ROOT = Path(__file__).resolve().parents[1]


def load_reference(ref: str):
    """Import the built ``ParallelSampler`` module from ``ref`` (checkout or module folder)."""
    base = Path(ref)
    for d in (base, base / "para_graph_sampler/graph_engine/backend"):
        if list(d.glob("ParallelSampler*.so")):
            sys.path.insert(0, str(d))
            import ParallelSampler
            return ParallelSampler
    sys.exit(f"reference_shadow: no built ParallelSampler*.so under {ref} (see the docstring)")


def data_spec(name: str) -> str:
    shared = ROOT.parent / "shared" / "data" / name
    return str(shared) if shared.is_dir() else name


def new_reference(mod, graph, batch: int, threads: int):
    indptr = graph.indptr.astype(np.uint32).tolist()
    indices = graph.indices.astype(np.uint32).tolist()
    return mod.ParallelSampler(indptr, indices, [1.0] * len(indices), batch, threads,
                               True, True, [], 1, "", "", "", 0)


def ref_config(k: int) -> dict:
    return {"method": "ppr", "k": str(k), "num_roots": "1", "threshold": "0.0",
            "add_self_edge": "false", "include_target_conn": "false"}


def ref_extract(sampler, targets, k, batch, core: Clock, conv: Clock):
    """All targets' subgraphs through the reference sampler; returns each target's scope."""
    sampler.shuffle_targets(targets.astype(np.uint32).tolist())
    scopes = []
    for _ in range(0, targets.size, batch):
        with core:
            out = sampler.parallel_sampler_ensemble([ref_config(k)], [set()])
        with conv:
            sv = out[0]
            m = sv.get_num_valid_subg()
            nodes = [np.asarray(x, np.int64) for x in sv.get_subgraph_node()[:m]]
            for arrs in (sv.get_subgraph_indptr(), sv.get_subgraph_indices()):
                [np.asarray(x, np.int64) for x in arrs[:m]]
        scopes += nodes
    return scopes


def ours_extract(ex, targets, batch, clock: Clock):
    with clock:
        for a in range(0, targets.size, batch):
            ex.extract(targets[a:a + batch])


def power_topk(graph, targets, alpha: float, k: int, tol: float = 1e-13, chunk: int = 256):
    """Top-k scopes of exact PPR (float64 power iteration p = alpha e_t + (1-alpha) p D^-1 A
    until no entry moves by more than ``tol``): the target, then the k-1 best others by
    (score desc, id asc)."""
    n = graph.num_nodes
    a = sp.csr_matrix((np.ones(graph.indices.size), graph.indices, graph.indptr), shape=(n, n))
    deg = np.asarray(a.sum(axis=1)).ravel()
    pt = (sp.diags(np.divide(1.0, deg, out=np.zeros(n), where=deg > 0)) @ a).T.tocsr()
    out, iters = [], 0
    for c in range(0, targets.size, chunk):
        t = targets[c:c + chunk]
        e = np.zeros((n, t.size))
        e[t, np.arange(t.size)] = alpha
        p = e.copy()
        while True:
            q = e + (1.0 - alpha) * (pt @ p)
            iters += 1
            done = np.abs(q - p).max() < tol
            p = q
            if done:
                break
        for j, tj in enumerate(t):
            s = p[:, j].copy()
            s[tj] = -1.0
            cand = np.flatnonzero(s > 0)
            order = np.lexsort((cand, -s[cand]))[:k - 1]
            out.append(np.concatenate([[tj], cand[order]]))
    return out, iters


def overlap(a_scopes, b_scopes, k: int) -> float:
    return float(np.mean([np.intersect1d(a, b).size / k for a, b in zip(a_scopes, b_scopes)]))


def one_round(mod, graph, targets, args, params, r):
    """One interleaved round (order flipped on odd rounds): (record, our scopes, ref scopes)."""
    n_t = int(targets.size)
    tl = targets.astype(np.uint32).tolist()
    c = {name: Clock() for name in ("ref_ppr", "ours_ppr", "ref_extract", "ref_convert",
                                    "ours_extract")}
    ref = new_reference(mod, graph, args.batch, args.threads)
    ex = PPRExtractor(graph, cache_dir=None, **params)
    flip = r % 2 == 1
    for side in (("ours", "ref") if flip else ("ref", "ours")):
        with c[f"{side}_ppr"]:
            if side == "ref":
                ref.preproc_ppr_approximate(tl, args.k, 1.0 - args.alpha, args.eps, "", "")
            else:
                ex.precompute(targets)
    assert ex.num_computed == n_t and not ex.cache_hit
    for side in (("ours", "ref") if flip else ("ref", "ours")):
        if side == "ref":
            scopes = ref_extract(ref, targets, args.k, args.batch, c["ref_extract"],
                                 c["ref_convert"])
        else:
            ours_extract(ex, targets, args.batch, c["ours_extract"])
    ptr, nodes, _ = ex.lists(targets)
    mine = [np.sort(nodes[ptr[i]:ptr[i + 1]]) for i in range(n_t)]
    rec = {"bench": "reference_shadow", "round": r, "targets": n_t}
    for name, clk in c.items():
        rec[f"{name}_cpu_per_target"] = clk.cpu_s / n_t
        rec[f"{name}_wall_per_target"] = clk.wall_s / n_t
    rec["ppr_cpu_ratio"] = rec["ref_ppr_cpu_per_target"] / rec["ours_ppr_cpu_per_target"]
    rec["extract_cpu_ratio"] = (rec["ref_extract_cpu_per_target"]
                                / rec["ours_extract_cpu_per_target"])
    rec["extract_e2e_cpu_ratio"] = ((rec["ref_extract_cpu_per_target"]
                                     + rec["ref_convert_cpu_per_target"])
                                    / rec["ours_extract_cpu_per_target"])
    return rec, mine, scopes


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ref", required=True, help="shaDow_GNN checkout with the built module")
    p.add_argument("--data", default="facebook",
                   help="a folder under ../shared/data or any load_dataset spec")
    p.add_argument("--eps", type=float, default=1e-6)
    p.add_argument("--k", type=int, default=32)
    p.add_argument("--alpha", type=float, default=0.15, help="teleport probability")
    p.add_argument("--targets", type=int, default=2048)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--exact-targets", type=int, default=512,
                   help="targets whose scopes are also checked by power iteration")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    mod = load_reference(args.ref)
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)           # the reference's std::cout goes to stderr

    def emit(rec):
        out.write(json.dumps(rec) + "\n")
        out.flush()

    set_threads(args.threads)
    graph = load_dataset(data_spec(args.data), seed=args.seed).graph
    targets = draw_targets(graph.num_nodes, args.targets, args.seed)
    n_t = int(targets.size)
    params = {"alpha": args.alpha, "eps": args.eps, "k": args.k, "threshold": 0.0}
    warm = PPRExtractor(graph, **params)                  # compile the numba kernels
    warm.precompute(targets[:8])
    warm.extract(targets[:8])
    rounds, ours_scopes, ref_scopes = [], None, None
    for r in range(args.rounds):
        rec, mine, scopes = one_round(mod, graph, targets, args, params, r)
        if ours_scopes is None:
            ours_scopes, ref_scopes = mine, scopes
        rec["ours_same_as_round0"] = all(np.array_equal(a, b)
                                         for a, b in zip(mine, ours_scopes))
        rec["ref_same_as_round0"] = all(np.array_equal(a, b) for a, b in zip(scopes, ref_scopes))
        rec["load_avg"] = load_avg()
        rounds.append(rec)
        emit(rec)
    m = min(args.exact_targets, n_t)
    exact, it1 = power_topk(graph, targets[:m], args.alpha, args.k)
    lazy, it2 = power_topk(graph, targets[:m], 2 * args.alpha / (1 + args.alpha), args.k)
    k = args.k
    summary = {
        "bench": "reference_shadow", "summary": True, "data": args.data,
        "graph_nodes": graph.num_nodes, "graph_edges": graph.num_edges, "targets": n_t,
        "batch": args.batch, "rounds": args.rounds, "threads": args.threads, **params,
        "ref_scope_size": float(np.mean([s.size for s in ref_scopes])),
        "ours_scope_size": float(np.mean([s.size for s in ours_scopes])),
        "overlap_ours_ref": overlap(ours_scopes, ref_scopes, k),
        "exact_targets": m, "power_iterations": [it1, it2],
        "overlap_ours_exact": overlap(ours_scopes[:m], exact, k),
        "overlap_ref_exact": overlap(ref_scopes[:m], exact, k),
        "overlap_ours_exact_lazy": overlap(ours_scopes[:m], lazy, k),
        "overlap_ref_exact_lazy": overlap(ref_scopes[:m], lazy, k),
        "load_avg": load_avg()}
    for key in ("ref_ppr", "ours_ppr", "ref_extract", "ref_convert", "ours_extract"):
        summary[f"{key}_cpu_per_target_median"] = statistics.median(
            x[f"{key}_cpu_per_target"] for x in rounds)
    for key in ("ppr_cpu_ratio", "extract_cpu_ratio", "extract_e2e_cpu_ratio"):
        vals = [x[key] for x in rounds]
        summary[key] = {"median": statistics.median(vals), "min": min(vals), "max": max(vals)}
    emit(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
