"""Where a training step's non-GEMM time goes: variants of ``scalegnn bench step``'s iteration,
interleaved in one process.

    python benchmarks/step_overhead.py [--rounds 4] [--variants default,no_flush,...] [bench step options]

Each round runs every variant once on the same subgraph, in turn, and replays that subgraph's
dense products alone right after each variant's step (``scalegnn.bench.gemm``), so every
ratio step / GEMMs compares two timings taken under the same machine load. Variants (each
differs from ``default``, the product's step at default settings, in one thing):

  default      Trainer.train_step: fused tail, denormals flushed, clip at 5, the lean Adam
  no_flush     params.flush_denormal false
  torch_tail   the plain torch bias+act+norm composition instead of the fused tail
  torch_normalize  F.normalize instead of the fused l2_normalize of the embeddings
  torch_adam   the optimizer's torch elementwise ops instead of its fused one-pass update
  no_clip      params.grad_clip 0
  no_adam      the optimizer step skipped (its cost = default − no_adam)
  no_dropout   params.dropout 0 (the dropout kernels' cost)

One JSON line per variant: median ratio over rounds, median step and GEMM ms, and the median
difference to ``default`` in the same rounds (``minus_default_ms``); the load average at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import os
import sys
import time

import numpy as np
import torch

VARIANTS = ("default", "no_flush", "torch_tail", "torch_normalize", "torch_adam", "no_clip",
            "no_adam", "no_dropout")


def main(argv=None) -> int:
    import torch.nn.functional as F

    from scalegnn.bench import step as bench_step
    from scalegnn.bench.gemm import GemmReplay
    from scalegnn.data import load_dataset
    from scalegnn.nn import models
    from scalegnn.ops.fused import l2_normalize
    from scalegnn.threads import set_threads
    from scalegnn.engine import optim
    from scalegnn.engine.optim import Adam
    from scalegnn.train.trainer import Trainer

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    bench_step.add_arguments(p)
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--variants", default=",".join(VARIANTS))
    args = p.parse_args(argv)
    variants = args.variants.split(",")
    bad = sorted(set(variants) - set(VARIANTS))
    if bad:
        p.error(f"--variants: unknown {bad}; choose from {list(VARIANTS)}")
    set_threads(args.threads)
    args.repeat = args.rounds
    ds = load_dataset(args.dataset, seed=args.seed)
    trainer = Trainer(ds, bench_step.step_config(args, ds.multilabel), None, seed=args.seed,
                      progress=False)
    batches = bench_step._batches(trainer, args)
    init = copy.deepcopy(trainer.model.state_dict())
    params = trainer.config.params
    fusable = optim._fusable
    base = {"flush": params["flush_denormal"], "clip": params["grad_clip"],
            "dropout": params["dropout"]}
    trainer.train_step(batches[0])
    template, *_ = bench_step.gemm_template(trainer, batches)
    replay = GemmReplay(next(trainer.model.parameters()).dtype)
    dropouts = [m for m in trainer.model.modules() if isinstance(m, torch.nn.Dropout)]

    @contextlib.contextmanager
    def variant(name):
        trainer.model.load_state_dict(init)        # every variant steps from the same weights
        trainer.optimizer = Adam(trainer.params, lr=params["lr"])
        torch.set_flush_denormal(name != "no_flush" and base["flush"])
        params["grad_clip"] = 0.0 if name == "no_clip" else base["clip"]
        for m in dropouts:
            m.p = 0.0 if name == "no_dropout" else base["dropout"]
        step = trainer.optimizer.step
        if name == "no_adam":
            trainer.optimizer.step = lambda: None
        tail = bench_step.torch_tail() if name == "torch_tail" else contextlib.nullcontext()
        if name == "torch_normalize":
            models.l2_normalize = lambda h: F.normalize(h, p=2, dim=1)
        if name == "torch_adam":
            optim._fusable = lambda *ts: False
        try:
            with tail:
                yield
        finally:
            trainer.optimizer.step = step
            models.l2_normalize = l2_normalize
            optim._fusable = fusable

    # warm each variant's code path once (numba compilation of the torch tail is none, but the
    # first call of every path allocates)
    for name in variants:
        with variant(name):
            trainer.train_step(batches[0])
    step_s = {v: [] for v in variants}
    gemm_s = {v: [] for v in variants}
    for r, b in enumerate(batches[1:]):
        order = variants[r % len(variants):] + variants[:r % len(variants)]  # rotate
        for name in order:
            with variant(name):
                torch.manual_seed(args.seed + r)
                t = time.perf_counter()
                trainer.train_step(b)
                step_s[name].append(time.perf_counter() - t)
            gemm_s[name].append(replay.floor_seconds(template, [b.num_nodes]))
    torch.set_flush_denormal(False)
    d = np.array(step_s["default"]) if "default" in variants else None
    for name in variants:
        s, g = np.array(step_s[name]), np.array(gemm_s[name])
        rec = {"bench": "step_overhead", "variant": name, "rounds": len(s),
               "ratio_vs_gemm": float(np.median(s / g)), "ratio_all": (s / g).tolist(),
               "step_ms": float(np.median(s)) * 1e3, "gemm_ms": float(np.median(g)) * 1e3,
               "subgraph_nodes_median": float(np.median([b.num_nodes for b in batches[1:]])),
               "load_avg": list(os.getloadavg())}
        if d is not None:
            rec["minus_default_ms"] = float(np.median(s - d)) * 1e3
        print(json.dumps(rec), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
