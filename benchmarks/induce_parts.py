"""Where the induction's CPU goes: ``fill_induced`` against copies of itself with one part
taken out, on the same node sets, in interleaved rounds (JSON lines: one per round, then a
summary). Issue 25 asks each sampler to come within 2x of its roofline bound or to say
precisely why not; this is the why for the induction, which is most of a subgraph's CPU.

    python benchmarks/induce_parts.py [--graph kronecker:17:8] [--sampler rw] [--count 32]
        [--rounds 21] [--calls 2] [--seed 0]

The node sets come from the sampler's own draws (PPI budgets, ``scalegnn.bench.sample``). Each
variant is the current kernel source (``sampling/_induce_kernels.py`` and ``ops/_simd.py``)
with one textual edit, compiled from a temporary copy (the edits assert that their text is
there, so a changed kernel fails here instead of timing something else):

* ``transpose``: the transpose pass (journal Alg. 6) removed;
* ``local_ids``: the AVX-512 block no longer computes and stores the kept entries' local ids
  (the rank words are still gathered: the membership test needs them);
* ``edge_ids``: ... nor stores their parent edge ids;
* ``row_tails``: each row's last chunk of < 16 entries (a block with its tail lanes masked)
  skipped;
* ``values``: no edge values at all (``fill_induced``'s own no-data mode, not an edit).

``full_2_threads`` is the full kernel on the same node sets with two workers (subgraphs
w, w + 2, ...): its CPU per subgraph over the one-thread figure says what sharing the machine
between two busy threads costs the same work (``two_threads_over_one``).

One thread, output arrays allocated once and reused (no page faults, as in training with
``keep_freed_memory``); process CPU per subgraph of ``--calls`` calls, the minimum and median
over rounds. A part's cost is the median over rounds of the full kernel's CPU minus the
variant's in the same round. ``core`` is what is left: marking and
ranking the members, the row loop and the 16-entry membership test (one gather of rank words
per block: int32 ones below 2^16 nodes). ``blocks`` counts the 16-entry chunks scanned per subgraph.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numba
import numpy as np

from scalegnn.bench import roofline
from scalegnn.bench.sample import BUDGETS
from scalegnn.data import load_dataset
from scalegnn.sampling import make_sampler
from scalegnn.sampling.sampler_base import stream_seeds

SRC = Path(__file__).resolve().parents[1] / "src" / "scalegnn"
FILES = {"_induce_kernels.py": SRC / "sampling" / "_induce_kernels.py",
         "_simd.py": SRC / "ops" / "_simd.py"}
EDITS = {   # variant: [(file, text, replacement)]
    "transpose": [("_induce_kernels.py", """                loc = np.uint32(out_indices[q])
                out_perm[q] = cursor[loc]
                cursor[loc] += 1""", "                pass")],
    "local_ids": [("_simd.py", """        inword = g.call("llvm.ctpop.v16i32", V_I32, [builder.and_(words, below)])
        g.compress(builder.add(ranks, inword), g.item(4, oi, p_), mask)""", "")],
    "edge_ids": [("_simd.py", "        g.compress(eids, g.item(5, oe, p_), mask)\n", "")],
    "row_tails": [("_induce_kernels.py", """        n = min(end - e0, np.uint64(W))
""", """        n = min(end - e0, np.uint64(W))
        if n < np.uint64(W):
            e0 = end
            continue
""")],
}


def variant(name: str, tmp: Path):
    """``fill_induced`` of the kernel source with ``EDITS[name]`` applied (no numba cache)."""
    folder = tmp / name
    folder.mkdir()
    texts = {f: path.read_text() for f, path in FILES.items()}
    for f, old, new in EDITS[name]:
        if old not in texts[f]:
            raise SystemExit(f"induce_parts.py: variant {name}: {f} no longer has the edited "
                             f"text; update EDITS")
        texts[f] = texts[f].replace(old, new)
    texts["_induce_kernels.py"] = texts["_induce_kernels.py"].replace(
        "from scalegnn.ops._simd import", f"from _simd_{name} import").replace(
        "_JIT = dict(nogil=True, cache=True)", "_JIT = dict(nogil=True, cache=False)")
    (folder / f"_simd_{name}.py").write_text(texts["_simd.py"])
    (folder / f"_induce_{name}.py").write_text(texts["_induce_kernels.py"])
    sys.path.insert(0, str(folder))
    spec = importlib.util.spec_from_file_location(f"_induce_{name}", folder / f"_induce_{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.fill_induced


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--graph", default="kronecker:17:8")
    p.add_argument("--sampler", default="rw", choices=sorted(BUDGETS))
    p.add_argument("--count", type=int, default=32)
    p.add_argument("--rounds", type=int, default=21)
    p.add_argument("--calls", type=int, default=2, help="calls per timing")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if min(args.count, args.rounds, args.calls) < 1:
        raise SystemExit("induce_parts.py: --count, --rounds and --calls must be >= 1")
    from scalegnn.ops._simd import VECTOR_FILL
    from scalegnn.sampling._induce_kernels import fill_induced
    if not VECTOR_FILL:
        raise SystemExit("induce_parts.py: the host has no AVX-512 (the parts are the vector "
                         "path's)")
    graph = load_dataset(args.graph, seed=args.seed).graph
    sampler = make_sampler(args.sampler, graph, np.arange(graph.num_nodes), BUDGETS[args.sampler])
    numba.set_num_threads(1)
    count = args.count
    bits, mark = sampler._scratch(2)
    nodes_buf = np.empty((count, sampler.cap), dtype=np.int64)
    nv = np.zeros(count, dtype=np.int64)
    sampler._run(stream_seeds(args.seed, 0, count), 0, bits[:1], mark[:1], nodes_buf, nv)
    node_off = np.concatenate([[0], np.cumsum(nv)])
    sets = [nodes_buf[i, :nv[i]] for i in range(count)]
    scanned = [roofline.scanned_entries(graph.indptr, v) for v in sets]
    deg = np.diff(graph.indptr)
    blocks = float(np.mean([(-(-deg[v] // 16)).sum() for v in sets]))
    tot_e = sum(scanned) + 32 * count   # kept <= scanned, + a padding slot and 17 strays
    out = {"nodes": np.empty(int(node_off[-1]), np.int64),
           "indptr": np.empty(int(node_off[-1]) + count, np.int64),
           "indices": np.empty(tot_e, np.int32), "eids": np.empty(tot_e, np.int32),
           "perm": np.empty(tot_e, np.int32), "data": np.empty(tot_e, np.float32)}
    values = np.ones(graph.num_edges, np.float32)
    edge_off, ne, overflow = (np.zeros(count, np.int64) for _ in range(3))

    # two workers: worker w takes subgraphs w, w + 2, ... into its own segment (worker 0's
    # sized like tot_e, worker 1 the rest)
    segments = {1: np.array([0, tot_e]),
                2: np.array([0, sum(scanned[0::2]) + 32 * len(scanned[0::2]), tot_e])}

    def call(fn, with_values=True, workers=1):
        numba.set_num_threads(workers)
        seg = segments[workers]
        fn(graph.indptr, graph.indices, nodes_buf, nv, node_off, seg[:-1], seg[1:],
           bits[:workers], values if with_values else np.empty(0, np.float32),
           np.empty(0, np.float32), True, out["nodes"], out["indptr"], out["indices"],
           out["eids"], out["perm"], out["data"] if with_values else np.empty(0, np.float32),
           edge_off, ne, overflow[:workers], True)

    with tempfile.TemporaryDirectory() as tmp:
        fns = {"full": (fill_induced, True, 1), "values": (fill_induced, False, 1)}
        fns.update({name: (variant(name, Path(tmp)), True, 1) for name in EDITS})
        fns["full_2_threads"] = (fill_induced, True, 2)
        for fn, vals, workers in fns.values():
            call(fn, vals, workers)   # compile, first touch
        call(fill_induced)
        edges = float(ne.mean())   # the full kernel's (the variants' row_tails keeps fewer)
        cpu = {name: [] for name in fns}
        for r in range(args.rounds):
            order = list(fns) if r % 2 == 0 else list(fns)[::-1]
            for name in order:
                fn, vals, workers = fns[name]
                c0 = time.process_time()
                for _ in range(args.calls):
                    call(fn, vals, workers)
                cpu[name].append(1e3 * (time.process_time() - c0) / count / args.calls)
            print(json.dumps({"bench": "induce_parts", "round": r,
                              "cpu_ms": {k: round(v[-1], 4) for k, v in cpu.items()},
                              "load_avg": [round(x, 2) for x in os.getloadavg()]}), flush=True)
    med = {k: statistics.median(v) for k, v in cpu.items()}
    # paired: a part's cost is the median over rounds of full - variant within the round
    # (the rounds share whatever else the machine was doing then)
    parts = {k: round(statistics.median(np.subtract(cpu["full"], cpu[k])), 4)
             for k in ("values", *EDITS)}
    parts["core"] = round(med["full"] - sum(parts.values()), 4)
    print(json.dumps({"bench": "induce_parts", "summary": True, "graph": args.graph,
                      "sampler": args.sampler, "budget": BUDGETS[args.sampler],
                      "count": count, "rounds": args.rounds, "threads": 1,
                      "nodes": float(nv.mean()), "scanned": float(np.mean(scanned)),
                      "edges": edges, "blocks": blocks,
                      "full_cpu_ms": round(med["full"], 4),
                      "full_cpu_ms_min": round(min(cpu["full"]), 4),
                      "variant_cpu_ms": {k: round(v, 4) for k, v in med.items()},
                      "part_cpu_ms": parts,
                      "ns_per_block": round(1e6 * med["full"] / blocks, 2),
                      "full_2_threads_cpu_ms": round(med["full_2_threads"], 4),
                      "two_threads_over_one": round(med["full_2_threads"] / med["full"], 3),
                      "load_avg": [round(x, 2) for x in os.getloadavg()]}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
