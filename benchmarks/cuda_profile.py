"""Where a GPU training step of ``scalegnn bench step --device cuda`` spends its host time: the
torch profiler over a few steps (after warm-up), the ops with the most CPU time, and the GPU
kernels with the most device time; last, one JSON line per step: wall time, kernel launches,
GPU busy time (the kernels' and copies' device time), and the host's time inside the CUDA
runtime's launch, copy and synchronize calls.

    PYTHONPATH=src python3 benchmarks/cuda_profile.py [--device cuda] [--steps 5]
"""

from __future__ import annotations

import argparse
import json
import time

import torch
from torch.autograd import DeviceType
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
    if cuda:   # as the training loader's thread pins them
        dtype = next(trainer.model.parameters()).dtype
        batches = [b.pin(dtype) for b in batches]
    for b in batches[:2]:
        trainer.train_step(b)
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    steps = batches[2:2 + args.steps]
    with profile(activities=acts) as prof:
        t0 = time.perf_counter()
        for b in steps:
            trainer.train_step(b)
        if cuda:
            torch.cuda.synchronize()
        wall = time.perf_counter() - t0
    table = prof.key_averages()
    print(table.table(sort_by="self_cpu_time_total", row_limit=40, max_name_column_width=40))
    if cuda:
        print(table.table(sort_by="self_cuda_time_total", row_limit=20, max_name_column_width=40))
    print(json.dumps(summary(table, len(steps), wall)))


def summary(table, steps: int, wall: float) -> dict:
    """Per-step totals of the profiled steps (profiler overhead included in the wall time)."""
    def host_ms(pick):
        return sum(e.self_cpu_time_total for e in table if pick(e.key)) / 1e3 / steps
    return {
        "steps": steps, "wall_ms_per_step": wall * 1e3 / steps,
        "launches_per_step": sum(e.count for e in table if "LaunchKernel" in e.key) / steps,
        "gpu_busy_ms_per_step": sum(e.self_device_time_total for e in table
                                    if e.device_type == DeviceType.CUDA) / 1e3 / steps,
        "host_launch_ms_per_step": host_ms(lambda k: "LaunchKernel" in k),
        "host_memcpy_ms_per_step": host_ms(lambda k: k.startswith(("cudaMemcpy", "cuMemcpy"))),
        "host_sync_ms_per_step": host_ms(lambda k: "Synchronize" in k),
        "ops_per_step": sum(e.count for e in table if e.key.startswith("aten::")) / steps,
    }


if __name__ == "__main__":
    main()
