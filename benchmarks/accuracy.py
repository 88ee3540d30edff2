"""Accuracy of GraphSAINT training on the shared datasets, mean over seeds (JSON lines).

    python benchmarks/accuracy.py                      # every case below, seeds 0 1 2
    python benchmarks/accuracy.py --cases cora_rw facebook_rw --seeds 0

Each line: case, dataset, config, metric, per-seed test values, mean, std, wall seconds.
The synthetic case also trains an MLP (arch 0-0) on the same features for the GNN-vs-MLP gap.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from scalegnn.config import Config
from scalegnn.data import load_dataset
from scalegnn.train import Trainer

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
CASES = {
    "cora_rw": (DATA / "cora", "configs/shared/cora_rw.yml", []),
    "cora_node": (DATA / "cora", "configs/shared/cora_node.yml", []),
    "cora_edge": (DATA / "cora", "configs/shared/cora_edge.yml", []),
    "cora_mrw": (DATA / "cora", "configs/shared/cora_mrw.yml", []),
    "facebook_rw": (DATA / "facebook", "configs/shared/facebook_rw.yml", []),
    "tolokers_rw": (DATA / "tolokers", "configs/shared/tolokers_rw.yml", []),
    "cora_neighbour": (DATA / "cora", "configs/shared/cora_neighbour.yml", []),
    "facebook_neighbour": (DATA / "facebook", "configs/shared/facebook_neighbour.yml", []),
    "tolokers_neighbour": (DATA / "tolokers", "configs/shared/tolokers_neighbour.yml", []),
    "cora_cluster": (DATA / "cora", "configs/shared/cora_cluster.yml", []),
    "facebook_cluster": (DATA / "facebook", "configs/shared/facebook_cluster.yml", []),
    "tolokers_cluster": (DATA / "tolokers", "configs/shared/tolokers_cluster.yml", []),
    "synthetic_gnn": ("synthetic", None, []),
    "synthetic_mlp": ("synthetic", None, ["network.arch=0-0"]),
}


def run_case(name, seeds):
    data, cfg_path, overrides = CASES[name]
    ds = load_dataset(str(data))
    values, t0 = [], time.perf_counter()
    for seed in seeds:
        base = Config.from_yaml(ROOT / cfg_path) if cfg_path else Config.builtin()
        cfg = base.override(overrides)
        with tempfile.TemporaryDirectory() as tmp:
            res = Trainer(ds, cfg, Path(tmp) / "run", seed=seed, progress=False).fit()
        values.append(res["test"][ds.metric])
    return {"case": name, "dataset": ds.name, "config": cfg_path or "built-in default",
            "overrides": overrides, "metric": ds.metric, "seeds": list(seeds),
            "test": [round(v, 4) for v in values], "mean": round(float(np.mean(values)), 4),
            "std": round(float(np.std(values)), 4), "wall_s": round(time.perf_counter() - t0, 1)}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", nargs="*", default=list(CASES), choices=list(CASES))
    p.add_argument("--seeds", nargs="*", type=int, default=[0, 1, 2])
    args = p.parse_args(argv)
    for name in args.cases:
        print(json.dumps(run_case(name, args.seeds)), flush=True)


if __name__ == "__main__":
    sys.exit(main())
