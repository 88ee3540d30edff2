"""shaDow-GNN's training cost per epoch and per target beside GraphSAINT's epoch (JSON lines).

    python benchmarks/shadow_cost.py [--data ../shared/data/facebook] [--batches 20]
                                     [--threads 2] [--config src/scalegnn/configs/methods/shadow.yml]

shaDow-GNN (``--config``, the shipped default): the one-off PPR precompute (disk cache off),
then ``--batches`` training minibatches timed apart (extraction + batch assembly, the training
step, on batches built in the background as the trainer builds them) and the forward of
inference over ``--batches // 4`` evaluation minibatches (built in the background), each with the
features of each node once (``branch_batch(unique=True)``, what inference runs) and once per
appearance (the earlier inference), interleaved; an epoch is the
per-target cost times the training targets. GraphSAINT (the built-in default config): its
pre-sampling, then one training epoch and one full-graph validation pass. Wall and CPU
seconds (the process's, all threads) each; the load average around the run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

from scalegnn.config import Config
from scalegnn.data import load_dataset
from scalegnn.shadow.batch import prefetch
from scalegnn.shadow.mode import EVAL_SEED
from scalegnn.threads import set_threads
from scalegnn.train import Trainer

ROOT = Path(__file__).resolve().parents[1]


class Clock:
    """Wall and process-CPU seconds summed over the timed blocks."""

    def __init__(self):
        self.wall = self.cpu = 0.0

    def __enter__(self):
        self._w, self._c = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall += time.perf_counter() - self._w
        self.cpu += time.process_time() - self._c

    def out(self, per: float = 1.0) -> dict:
        return {"wall_s": round(self.wall / per, 6), "cpu_s": round(self.cpu / per, 6)}


def shadow_cost(ds, config_path: str, batches: int) -> dict:
    cfg = Config.from_yaml(config_path).override(["shadow.cache_dir=none"])
    tr = Trainer(ds, cfg, None, seed=0, progress=False)
    mode = tr.mode
    pre = Clock()
    with pre:
        mode._prepare()
    make, step = Clock(), Clock()
    order = mode._order(0)
    bs = mode.settings["batch_size"]
    n = min(batches, mode.epoch_batches(0))
    targets = rows = 0
    for i in range(n):       # extraction + assembly alone (the trainer overlaps it)
        with make:
            b = mode._make(order[i * bs:(i + 1) * bs], mode.train_extractors, 1 + i)
        targets, rows = targets + b.targets.shape[0], rows + b.x.shape[0]
    # the steps on batches built in the background, as the trainer runs them: a step right
    # after numba's parallel extraction on the same thread measured ~8x slower here
    for i, b in enumerate(mode.batches(0)):
        if i >= n:
            break
        with step:
            tr.train_step(b)
    ev, ev_rows = Clock(), Clock()    # unique rows (what scores() runs) / per appearance
    ebs = mode.settings["eval_batch_size"]
    val = np.asarray(ds.val_idx, dtype=np.int64)[:ebs * max(1, batches // 4)]
    jobs = [(val[s:s + ebs], unique) for s in range(0, val.shape[0], ebs)
            for unique in (False, True)]     # interleaved: both see the same load
    tr.model.eval()
    with torch.no_grad():
        made = prefetch(lambda j: mode._make(j[0], mode.eval_extractors, EVAL_SEED, j[1]), jobs)
        for (_, unique), b in zip(jobs, made):
            with (ev if unique else ev_rows):
                mode.forward(tr.model, b)
    ntrain = int(mode.train_idx.shape[0])
    per = {"extract": make.out(targets), "step": step.out(targets)}
    epoch = {k: round((make.wall + step.wall) / targets * ntrain, 2) if k == "wall_s" else
             round((make.cpu + step.cpu) / targets * ntrain, 2) for k in ("wall_s", "cpu_s")}
    return {"method": "shadow", "config": config_path, "train_targets": ntrain,
            "timed_targets": targets, "rows_per_target": round(rows / targets, 1),
            "precompute": pre.out(), "per_target_train": per,
            "per_target_eval": ev.out(val.shape[0]),
            "per_target_eval_per_appearance": ev_rows.out(val.shape[0]), "epoch_train_est": epoch}


def saint_cost(ds) -> dict:
    tr = Trainer(ds, Config.builtin(), None, seed=0, progress=False)
    pre, epoch, ev = Clock(), Clock(), Clock()
    with pre:
        tr.mode.num_batches(0)     # pre-sampling (norm counts) happens on first use
    with epoch:
        tr.run_epoch(0)
    with ev:
        tr.evaluate(("val",))
    return {"method": "graphsaint", "config": "built-in default", "presample": pre.out(),
            "epoch_train": epoch.out(), "eval_val": ev.out()}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "facebook"))
    p.add_argument("--config", default="src/scalegnn/configs/methods/shadow.yml")
    p.add_argument("--batches", type=int, default=20)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--only", choices=("shadow", "graphsaint"), default=None)
    args = p.parse_args(argv)
    set_threads(args.threads)
    ds = load_dataset(args.data)
    runs = {"shadow": lambda: shadow_cost(ds, args.config, args.batches),
            "graphsaint": lambda: saint_cost(ds)}
    for name, fn in runs.items():
        if args.only and name != args.only:
            continue
        load0 = os.getloadavg()[0]
        rec = fn()
        rec.update(dataset=ds.name, threads=args.threads,
                   load_avg=[round(load0, 2), round(os.getloadavg()[0], 2)])
        print(json.dumps(rec), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
