"""shaDow-GNN inference memory does not grow with the graph (JSON lines).

    python benchmarks/shadow_inference_memory.py                 # Kronecker 2^18 and 2^20
    python benchmarks/shadow_inference_memory.py --scales 18 20 --targets 20000

For each scale, in a fresh process: generate ``kronecker:SCALE:16`` (50 features), build a
ShadowMode (2-hop, budget 20, and PPR top-64 extractors) and a 3-layer SAGE ShadowNet, then score
``--targets`` random nodes in minibatches. Reported: resident memory after loading the dataset,
peak resident memory during inference, and their difference (what inference adds), which should
stay flat while the graph grows 4x.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def measure(scale: int, targets: int, kind: str) -> dict:
    import numpy as np

    from scalegnn.config import Config
    from scalegnn.data import load_dataset
    from scalegnn.train import Trainer
    ds = load_dataset(f"kronecker:{scale}:16:features=50,labels=2")
    extractor = {"khop": {"kind": "khop", "depth": 2, "budget": 20},
                 "ppr": {"kind": "ppr", "k": 64, "eps": 1e-4}}[kind]
    cfg = Config.from_dict({"network": {"dim": 128, "arch": "1-1-1"},
                            "params": {"transductive": True, "standardize": False},
                            "phase": [{"end": 1, "sampler": "full"}],
                            "shadow": {"extractors": [extractor], "readout": "center+mean",
                                       "eval_batch_size": 512, "cache_dir": "none"}})
    trainer = Trainer(ds, cfg, None, seed=0, progress=False)
    base = rss_mb()
    nodes = np.random.default_rng(0).choice(ds.num_nodes, size=targets, replace=False)
    t0 = time.perf_counter()
    if hasattr(trainer.mode.eval_extractors[0], "precompute"):
        trainer.mode.eval_extractors[0].precompute(nodes)
    scores = trainer.mode.scores(trainer.model, np.sort(nodes))
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"bench": "shadow_inference_memory", "scale": scale, "nodes": ds.num_nodes,
            "edges": ds.graph.num_edges, "extractor": kind, "targets": int(scores.shape[0]),
            "rss_after_load_mb": round(base, 1), "peak_rss_mb": round(peak, 1),
            "inference_added_mb": round(peak - base, 1), "seconds": round(seconds, 1),
            "load_avg": list(os.getloadavg())}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scales", nargs="*", type=int, default=[18, 20])
    p.add_argument("--targets", type=int, default=20000)
    p.add_argument("--extractors", nargs="*", default=["khop", "ppr"])
    p.add_argument("--one", nargs=2, metavar=("SCALE", "KIND"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.one:
        print(json.dumps(measure(int(args.one[0]), args.targets, args.one[1])), flush=True)
        return 0
    for kind in args.extractors:
        for scale in args.scales:  # a fresh process per cell: peak RSS is per process
            subprocess.run([sys.executable, __file__, "--one", str(scale), kind,
                            "--targets", str(args.targets)], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
