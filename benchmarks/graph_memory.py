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
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _rss_now() -> int:
    """Current resident set size in bytes (Linux /proc), or the peak where unavailable."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return _peak()


def _reset_peak() -> None:
    """Reset the kernel's RSS high-water mark (Linux >= 4.0), so a child started by this
    process does not inherit the parent's peak through fork+exec."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def _peak() -> int:
    """Peak RSS in bytes: VmHWM from /proc (honours _reset_peak), else ru_maxrss."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kb * (1 if sys.platform == "darwin" else 1024)


def _load(path: str) -> dict:
    import numpy as np  # noqa: F401  (import cost counted in the baseline)

    from scalegnn.data.graphsaint import load_adj
    from scalegnn.data.synthetic import kronecker_graph
    kronecker_graph(4, 2)  # JIT warm-up (cached kernels load here)
    _reset_peak()
    base = _rss_now()
    t = time.perf_counter()
    g, _ = load_adj(path)
    secs = time.perf_counter() - t
    return {"load_seconds": round(secs, 2), "load_peak_rss": _peak(),
            "load_baseline_rss": base, "load_ratio": round((_peak() - base) / g.nbytes, 3)}


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
    _reset_peak()
    base = _rss_now()
    t = time.perf_counter()
    g = kronecker_graph(args.scale, args.edge_factor, seed=args.seed)
    secs = time.perf_counter() - t
    peak = _peak()
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
