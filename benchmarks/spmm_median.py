"""Run ``scalegnn bench spmm`` cases several times and print per-case medians (JSON lines).

The machine is shared, so single runs are noisy: each run interleaves all kernels per repeat
(see scalegnn.bench.spmm), and this script takes the median over ``--runs`` such runs.

    python benchmarks/spmm_median.py --runs 3 --repeat 5 --threads 2
"""

import argparse
import json

import numba
import numpy as np
import torch

from scalegnn.bench import spmm as B
from scalegnn.ops.membw import triad_bandwidth

FIELDS = ("rows_ms", "features_ms", "torch_ms", "backward_ms", "torch_backward_ms",
          "ratio_vs_torch", "ratio_backward_vs_torch", "effective_GBps")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    p.add_argument("--cases", default="default", choices=["default", "all"])
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    numba.set_num_threads(min(a.threads, numba.config.NUMBA_NUM_THREADS))
    cases = B.DEFAULT_CASES + (B.MODEL_CHECK_CASES if a.cases == "all" else [])
    bw = [triad_bandwidth()["triad_GBps"] for _ in range(a.runs)]
    print(json.dumps({"bench": "spmm_median", "kind": "membw", "triad_GBps": float(np.median(bw)),
                      "triad_GBps_all": bw}), flush=True)
    for n, f in cases:
        recs = [B.run_case(n, f, 15, a.dtype, a.repeat, 0, float(np.median(bw)))
                for _ in range(a.runs)]
        out = {"bench": "spmm_median", "n": n, "f": f, "dtype": a.dtype, "runs": a.runs,
               "nnz": recs[0]["nnz"], "picked": [r["picked"] for r in recs],
               "fastest": [r["fastest"] for r in recs],
               "predicted_ms": recs[0]["predicted_ms"]}
        for k in FIELDS:
            out[k] = float(np.median([r[k] for r in recs]))
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
