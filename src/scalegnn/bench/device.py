"""``scalegnn bench step --device cuda``: the training step on a GPU, and what moving a sampled
subgraph there costs.

The same model, subgraphs, optimizer and settings as the CPU benchmark (:mod:`scalegnn.bench.step`);
the samplers run on the host, so each subgraph crosses to the GPU once per step. Per round (one
per subgraph, after one warm-up step):

* ``transfer_ms``: the batch's tensors (features, labels, loss weights) and its adjacency in both
  directions (the int32 indptr and indices, shared by a transpose by permutation, and the values
  of the CSR and of its transpose, as the SpMM's forward uploads them) copied host to GPU from
  pageable memory, as training does;
  ``transfer_bytes`` and ``transfer_GBps``;
* ``pinned_transfer_ms`` / ``pinned_GBps``: the same copies from page-locked memory, and
  ``pin_ms``, the time to page-lock them first (what pinning would add to the host's work);
* ``iteration_ms``: ``Trainer.train_step`` on the batch (its transfer included, as in training:
  from the page-locked copies that the loader's background thread makes, ``Batch.pin``),
  synchronized; ``iteration_gpu_ms``: CUDA-event time of the same span; ``compute_ms`` =
  iteration − transfer; ``cpu_per_iteration``: process CPU seconds per step (the host's share:
  launches, building the CSR tensors, the transpose);
* ``cuda_peak_mb``: the GPU's peak allocated memory over the timed steps.

Every field but ``wall_s`` / ``cpu_s`` / ``cpu_per_iteration`` / ``load_avg`` is a median over
the rounds. On a CPU device the same rounds run without synchronization (tests use that).
"""

from __future__ import annotations

import time

import numpy as np
import torch

from scalegnn.bench.measure import Clock


def _sync(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def batch_tensors(batch, dtype) -> list[torch.Tensor]:
    """The host tensors one training step moves to the device for ``batch``: its tensor fields
    and the torch operands of its adjacency in both directions (``SparseAdj.torch_csr``; a
    pattern the two share counted once)."""
    adj = batch.sparse_adj()
    out = [v for v in (batch.x, batch.y, batch.loss_weight) if isinstance(v, torch.Tensor)]
    seen = set()
    for m in (adj.torch_csr(dtype=dtype), adj.t().torch_csr(dtype=dtype)):
        for t in (m.crow_indices(), m.col_indices(), m.values()):
            if t.data_ptr() not in seen:
                seen.add(t.data_ptr())
                out.append(t)
    return out


def copy_seconds(tensors, dev: torch.device) -> float:
    """Wall seconds to copy ``tensors`` to ``dev`` (all copies issued, then one synchronize)."""
    _sync(dev)
    t0 = time.perf_counter()
    moved = [t.to(dev, non_blocking=True) for t in tensors]
    _sync(dev)
    dt = time.perf_counter() - t0
    del moved
    return dt


def transfer_times(batch, dtype, dev: torch.device) -> dict:
    """Bytes and seconds of moving ``batch`` to ``dev``, from pageable and from pinned memory."""
    tensors = batch_tensors(batch, dtype)
    nbytes = sum(t.numel() * t.element_size() for t in tensors)
    pageable = copy_seconds(tensors, dev)
    pin_s, pinned_s = float("nan"), float("nan")
    if dev.type == "cuda":
        t0 = time.perf_counter()
        pinned = [t.pin_memory() for t in tensors]
        pin_s = time.perf_counter() - t0
        pinned_s = copy_seconds(pinned, dev)
    return {"bytes": nbytes, "pageable_s": pageable, "pin_s": pin_s, "pinned_s": pinned_s}


def step_seconds(trainer, batch, dev: torch.device, clock: Clock) -> tuple[float, float]:
    """(wall, GPU-event) seconds of one synchronized ``trainer.train_step(batch)``; the GPU
    time is NaN on a CPU device."""
    events = [torch.cuda.Event(enable_timing=True) for _ in range(2)] \
        if dev.type == "cuda" else None
    _sync(dev)
    with clock:
        if events:
            events[0].record()
        trainer.train_step(batch)
        if events:
            events[1].record()
        _sync(dev)
    gpu = events[0].elapsed_time(events[1]) / 1e3 if events else float("nan")
    return clock.last_wall_s, gpu


def device_rounds(trainer, batches, dev: torch.device) -> dict:
    """The module docstring's fields for ``batches[1:]`` (``batches[0]`` warms up)."""
    dtype = next(trainer.model.parameters()).dtype
    cuda = dev.type == "cuda"
    if cuda:
        batches[0].pin(dtype)
    trainer.train_step(batches[0])                   # cuBLAS/cuSPARSE handles, allocator
    _sync(dev)
    if cuda:
        torch.cuda.reset_peak_memory_stats(dev)
    rows, clock = [], Clock()
    for b in batches[1:]:
        tr = transfer_times(b, dtype, dev)
        if cuda:   # as the training loader's thread does it, before the step
            b.pin(dtype)
        wall, gpu = step_seconds(trainer, b, dev, clock)
        rows.append((tr["bytes"], tr["pageable_s"], tr["pin_s"], tr["pinned_s"], wall, gpu))
    a = np.array(rows, dtype=np.float64)
    med = np.median(a, axis=0)
    ms = med * 1e3
    peak = torch.cuda.max_memory_allocated(dev) / 2**20 if dev.type == "cuda" else None
    return {
        "device": str(dev),
        "device_name": torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu",
        "torch": torch.__version__, "tf32": bool(torch.backends.cuda.matmul.allow_tf32),
        "transfer_bytes": int(med[0]), "transfer_ms": ms[1],
        "transfer_GBps": med[0] / med[1] / 1e9,
        "pin_ms": ms[2], "pinned_transfer_ms": ms[3], "pinned_GBps": med[0] / med[3] / 1e9,
        "iteration_ms": ms[4], "iteration_gpu_ms": ms[5],
        "compute_ms": float(np.median(a[:, 4] - a[:, 1]) * 1e3),
        "iteration_ms_all": (a[:, 4] * 1e3).tolist(), "transfer_ms_all": (a[:, 1] * 1e3).tolist(),
        "cuda_peak_mb": peak, **clock.fields(len(rows), "iteration"),
    }
