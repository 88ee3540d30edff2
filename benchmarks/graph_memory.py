"""Peak memory of building (and optionally re-loading) a Kronecker graph, relative to its CSR.

    python benchmarks/graph_memory.py [--scale 24] [--edge-factor 8] [--seed 0] [--load-check]

Prints one JSON line: nodes, directed entries, final CSR bytes (indptr + indices), peak RSS
of this process (VmHWM from /proc/self/status after resetting it via /proc/self/clear_refs;
``resource.getrusage`` ru_maxrss where /proc is unavailable), the RSS baseline measured
after imports and JIT warm-up, and

    build_ratio = (peak_rss - baseline_rss) / csr_bytes        (target: <= 2)

With ``--load-check`` the adjacency is also written as a GraphSAINT-style adj_full.npz to a
temporary folder and loaded back by :func:`scalegnn.data.graphsaint.load_adj` in a fresh
process, whose ratio is reported as ``load_ratio``. No tracemalloc (it would slow numba-free
numpy code and misses numba allocations); RSS counts everything.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scalegnn.memory import peak_rss_bytes, reset_peak_rss, rss_bytes


def _load(path: str) -> dict:
    import numpy as np  # noqa: F401  (import cost counted in the baseline)

    from scalegnn.data.graphsaint import load_adj
    from scalegnn.data.synthetic import kronecker_graph
    kronecker_graph(4, 2)  # JIT warm-up (cached kernels load here)
    reset_peak_rss()
    base = rss_bytes()
    t = time.perf_counter()
    g, _ = load_adj(path)
    secs = time.perf_counter() - t
    return {"load_seconds": round(secs, 2), "load_peak_rss": peak_rss_bytes(),
            "load_baseline_rss": base, "load_ratio": round((peak_rss_bytes() - base) / g.nbytes, 3)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scale", type=int, default=24)
    p.add_argument("--edge-factor", type=int, default=8)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--load-check", action="store_true",
                   help="also save adj_full.npz and measure loading it in a fresh process")
    p.add_argument("--load", help=argparse.SUPPRESS)  # child-process mode
    args = p.parse_args(argv)
    if args.load:
        print(json.dumps(_load(args.load)))
        return 0

    import numba

    from scalegnn.data.synthetic import kronecker_graph
    kronecker_graph(4, 2)  # JIT warm-up so compilation memory is in the baseline
    reset_peak_rss()
    base = rss_bytes()
    t = time.perf_counter()
    g = kronecker_graph(args.scale, args.edge_factor, seed=args.seed)
    secs = time.perf_counter() - t
    peak = peak_rss_bytes()
    out = {"benchmark": "graph_memory", "scale": args.scale, "edge_factor": args.edge_factor,
           "nodes": g.num_nodes, "edge_draws": args.edge_factor << args.scale,
           "directed_entries": g.num_edges, "csr_bytes": g.nbytes,
           "build_seconds": round(secs, 2), "threads": numba.get_num_threads(),
           "baseline_rss": base, "peak_rss": peak,
           "build_ratio": round((peak - base) / g.nbytes, 3),
           "peak_over_csr_incl_baseline": round(peak / g.nbytes, 3)}
    if args.load_check:
        from scalegnn.io import atomic_save_npz
        import numpy as np
        with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as d:
            path = Path(d) / "adj_full.npz"
            atomic_save_npz(path, indptr=g.indptr, indices=g.indices,
                            shape=np.array(g.shape), format=np.array(b"csr"))
            del g
            r = subprocess.run([sys.executable, __file__, "--load", str(path)],
                               capture_output=True, text=True, check=True)
            out.update(json.loads(r.stdout))
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
