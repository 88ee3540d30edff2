"""First-layer cost of CSR vs dense input features by density (JSON lines).

    python benchmarks/sparse_features.py                          # n=8000, F=4714, h=512
    python benchmarks/sparse_features.py --rows 8000 --features 1433 --densities 0.01 0.1

For each density one line: the median seconds of a training step's first-layer work,
forward ``X_eff W`` plus the weight gradient, for dense ``X`` (GEMM) and for
:class:`scalegnn.features.SparseFeatures` with the folded standardization (SpMM + rank-one
offset), the ratio sparse/dense, and which is faster. ``SPARSE_MAX_DENSITY`` (the ``auto``
threshold of ``params.feature_format``) is set from this crossover.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import scipy.sparse as sp
import torch

from scalegnn.features import SparseFeatures


def median_seconds(fn, repeats: int) -> float:
    fn()  # warm-up (numba compile, allocator)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def step(x, w, g):
    """Forward product and the weight gradient of <X W, G>."""
    w.grad = None
    (x @ w).backward(g)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=8000)
    p.add_argument("--features", type=int, default=4714)
    p.add_argument("--hidden", type=int, default=512)
    p.add_argument("--densities", type=float, nargs="+",
                   default=[0.003, 0.01, 0.03, 0.1, 0.2, 0.3, 0.5])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    w = torch.randn(args.features, args.hidden, requires_grad=True)
    g = torch.randn(args.rows, args.hidden)
    for d in args.densities:
        csr = sp.random(args.rows, args.features, density=d, format="csr", dtype=np.float32,
                        random_state=rng)
        csr.data[:] = 1.0
        xs = SparseFeatures(csr).standardize(np.arange(args.rows))
        xd = torch.from_numpy(xs.to_dense())
        t_dense = median_seconds(lambda: step(xd, w, g), args.repeats)
        t_sparse = median_seconds(lambda: step(xs, w, g), args.repeats)
        print(json.dumps({"rows": args.rows, "features": args.features, "hidden": args.hidden,
                          "density": d, "dense_s": round(t_dense, 5),
                          "sparse_s": round(t_sparse, 5),
                          "sparse_over_dense": round(t_sparse / t_dense, 3),
                          "faster": "sparse" if t_sparse < t_dense else "dense",
                          "threads": torch.get_num_threads()}), flush=True)


if __name__ == "__main__":
    main()
