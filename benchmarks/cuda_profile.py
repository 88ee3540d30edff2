"""Where a GPU training step of ``scalegnn bench step --device cuda`` spends its host time: the
torch profiler over a few steps (after warm-up), the ops with the most CPU time, and the GPU
kernels with the most device time.

    PYTHONPATH=src python3 benchmarks/cuda_profile.py [--device cuda] [--steps 5]
"""

from __future__ import annotations

import argparse

import torch
from torch.profiler import ProfilerActivity, profile

from scalegnn.bench import step as bench_step
from scalegnn.data import load_dataset
from scalegnn.train.trainer import Trainer


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    bench_step.add_arguments(p)
    p.add_argument("--steps", type=int, default=5)
    p.set_defaults(device="cuda", repeat=6)
    args = p.parse_args()
    ds = load_dataset(args.dataset, seed=args.seed)
    trainer = Trainer(ds, bench_step.step_config(args, ds.multilabel), None, seed=args.seed,
                      device=args.device, progress=False)
    batches = bench_step._batches(trainer, args)
    cuda = trainer.device.type == "cuda"
    for b in batches[:2]:
        trainer.train_step(b)
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=acts) as prof:
        for b in batches[2:2 + args.steps]:
            trainer.train_step(b)
        if cuda:
            torch.cuda.synchronize()
    table = prof.key_averages()
    print(table.table(sort_by="self_cpu_time_total", row_limit=25, max_name_column_width=40))
    if cuda:
        print(table.table(sort_by="self_cuda_time_total", row_limit=12, max_name_column_width=40))


if __name__ == "__main__":
    main()
