"""Does the CUDA path compute what the CPU path computes? One training batch per model family and
mode, forward + loss + backward on the CPU and on a GPU from the same initial weights (float32,
no dropout), and the relative differences of the loss, the logits and every gradient; then the
full-graph evaluation of a model trained a few steps on the GPU against the same model on the CPU.

Run on a machine with CUDA (prints one JSON line per case, then a table)::

    PYTHONPATH=src python3 benchmarks/cuda_check.py [--device cuda]

Exit status 1 when any case differs by more than ``--tol`` (relative, default 1e-4) or fails;
Cluster-GCN is skipped where pymetis is missing (the H200 image has none).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import importlib.util
import json
import sys
import time
import traceback

import torch

from scalegnn.config import Config
from scalegnn.data import load_dataset
from scalegnn.train.trainer import Trainer

NETWORK = {"dim": 64, "aggr": "concat", "bias": "norm", "act": "relu", "loss": "softmax"}
CASES = {   # name: (network keys, extra config sections)
    "saint rw": ({"arch": "1-0-1-0"}, {}),
    "saint 1-1-0": ({"arch": "1-1-0", "bias": "bias"}, {}),
    "gcn": ({"model": "gcn", "arch": "1-1"}, {}),
    "gat": ({"model": "gat", "arch": "1-1"}, {}),
    "mixhop": ({"model": "mixhop", "arch": "1-1"}, {}),
    "jk": ({"model": "jk", "arch": "1-1-1"}, {}),
    "gin": ({"model": "gin", "arch": "1-1"}, {}),
    "shadow ppr center": ({"arch": "1-1"}, {"shadow": [{
        "extractors": [{"kind": "ppr", "k": 16, "alpha": 0.15, "eps": 1e-5, "threshold": 0.0}],
        "readout": "center", "batch_size": 16}]}),
    # max and sort pooling are discontinuous at ties, and concat layers tie: two rows with the
    # same neighbours in a block share the aggregated half, so rounding picks other rows on
    # the two devices; aggr 'mean' adds each row's own term to every channel (no ties)
    "shadow khop center+max": ({"arch": "1-1-1", "aggr": "mean"}, {"shadow": [{
        "extractors": [{"kind": "khop", "depth": 2, "budget": 10}],
        "readout": "center+max", "batch_size": 16}]}),
    "shadow sort:4": ({"arch": "1-1", "aggr": "mean"}, {"shadow": [{
        "extractors": [{"kind": "khop", "depth": 2, "budget": 10}],
        "readout": "sort:4", "batch_size": 16}]}),
}
PHASES = {"neighbour": {"sampler": "neighbour", "fanouts": [5, 5], "batch_size": 64},
          "cluster": {"sampler": "cluster", "num_parts": 30, "parts_per_batch": 3}}
CASES.update({f"saint {k}": ({"arch": "1-1"}, {"phase": [dict(v, end=1)]})
              for k, v in PHASES.items()})


def config_for(net: dict, extra: dict) -> Config:
    """Dropout off (the devices' random streams differ); the case's sections replace these."""
    return Config.from_dict({
        "network": [dict(NETWORK, **net)],
        "params": [{"lr": 0.01, "dropout": 0.0, "eval_every": 1}],
        "phase": [{"end": 1, "sampler": "rw", "num_root": 60, "depth": 2}], **extra},
        "cuda check")


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.detach().double().cpu(), b.detach().double().cpu()
    return float((a - b).norm() / max(float(b.norm()), 1e-30))


def grads(trainer, batch):
    trainer.model.train()
    trainer.optimizer.zero_grad(set_to_none=True)
    batch.to(trainer.device)
    logits = trainer.mode.forward(trainer.model, batch)
    loss = trainer.model.loss(logits, batch.y, batch.loss_weight)
    loss.backward()
    return loss, logits, [p.grad for p in trainer.params]


def check(name, net, extra, ds, dev, other=contextlib.nullcontext) -> dict:
    """One case: a trainer on the CPU (the kernels) and one on ``dev`` from the same weights;
    the second side runs inside ``other()`` (``scalegnn.ops.route.torch_ops``: a CPU taking the
    GPU's torch-op path, as ``tests/test_torch_path.py`` does)."""
    cfg = config_for(net, extra)
    cpu = Trainer(ds, copy.deepcopy(cfg), None, seed=1, device="cpu", progress=False)
    gpu = Trainer(ds, copy.deepcopy(cfg), None, seed=1, device=dev, progress=False)
    gpu.model.load_state_dict(cpu.model.state_dict())
    cpu.mode.num_batches(0)
    batch = next(cpu.mode.batches(0, 0))
    t0 = time.perf_counter()
    lc, yc, gc = grads(cpu, copy.deepcopy(batch))
    t_cpu = time.perf_counter() - t0
    sync = torch.cuda.synchronize if gpu.device.type == "cuda" else (lambda: None)
    with other():
        grads(gpu, copy.deepcopy(batch))                    # warm-up (handles, kernels)
        sync()
        t0 = time.perf_counter()
        lg, yg, gg = grads(gpu, copy.deepcopy(batch))
        sync()
    t_gpu = time.perf_counter() - t0
    worst = max(rel(g, c) for g, c in zip(gg, gc, strict=True) if c is not None)
    for _ in range(3):                                      # a few real steps on each side
        b = next(cpu.mode.batches(0, 0))
        cpu.train_step(copy.deepcopy(b))
        with other():
            gpu.train_step(copy.deepcopy(b))
    ec = cpu.evaluate(("val",))
    with other():
        eg = gpu.evaluate(("val",))
    key = next(iter(ec["val"]))
    return {"case": name, "batch_nodes": batch.num_nodes, "loss_rel": rel(lg, lc),
            "logits_rel": rel(yg, yc), "worst_grad_rel": worst,
            "params_after_3_steps_rel": max(rel(p, q) for p, q in zip(gpu.params, cpu.params,
                                                                      strict=True)),
            f"val_{key}_cpu": ec["val"][key], f"val_{key}_gpu": eg["val"][key],
            "cpu_ms": t_cpu * 1e3, "gpu_ms": t_gpu * 1e3}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda")
    p.add_argument("--tol", type=float, default=1e-4)
    p.add_argument("--data", default="planted:nodes=3000,classes=5,features=24")
    args = p.parse_args()
    ds = load_dataset(args.data, seed=0)
    bad = 0
    rows = []
    for name, (net, extra) in CASES.items():
        if "cluster" in name and importlib.util.find_spec("pymetis") is None:
            print(f"{name}: skipped (needs pymetis: pip install 'scalegnn[partition]')")
            continue
        try:
            r = check(name, net, extra, ds, args.device)
            r["ok"] = max(r["loss_rel"], r["logits_rel"], r["worst_grad_rel"]) <= args.tol
        except Exception as e:   # noqa: BLE001 - report every case, then fail
            r = {"case": name, "ok": False, "error": f"{type(e).__name__}: {e}"}
            traceback.print_exc()
        bad += not r["ok"]
        rows.append(r)
        print(json.dumps(r), flush=True)
    print(f"{'case':24s} {'ok':>3s} {'loss':>9s} {'logits':>9s} {'grad':>9s} {'3 steps':>9s}")
    for r in rows:
        if "error" in r:
            print(f"{r['case']:24s} ERR {r['error'][:90]}")
            continue
        print(f"{r['case']:24s} {'yes' if r['ok'] else 'NO':>3s} {r['loss_rel']:9.1e} "
              f"{r['logits_rel']:9.1e} {r['worst_grad_rel']:9.1e} "
              f"{r['params_after_3_steps_rel']:9.1e}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
