"""Gradient averaging through torch's :class:`~torch.nn.parallel.DistributedDataParallel`:
bucketed all-reduces launched while backward still computes the remaining gradients, timed.

:class:`GradientSync` wraps a model in DDP with one communication hook that all-reduces each
bucket (optionally compressed to fp16 / bf16 on the wire, ``distributed.compression``) and
records, per step, the all-reduce time (the time some bucket's all-reduce was under way) and the
part of it backward had to wait for after its last gradient (``exposed``): the rest was
hidden behind the computation of earlier layers' gradients.

Each bucket is all-reduced one parameter's gradient at a time (one collective per parameter,
all launched at once): a ring all-reduce rounds an element by its position in the buffer it
reduces, and DDP lays its buckets out anew after the first backward, so reducing the bucket's
flat buffer would make a run resumed with W >= 3 ranks round its first step unlike the run it
continues (two values add the same in either order). Per parameter, the rounding depends on the
parameter alone, whatever the bucket layout.

Buckets are sized to the model (:func:`bucket_cap_mb`): about a quarter of its gradient bytes
each, between 256 KiB and DDP's 25 MiB. DDP's own default is sized for models of hundreds of
megabytes; a GNN of a few megabytes would fit one bucket whole, launched only after backward's
last gradient, and nothing would overlap.
"""

from __future__ import annotations

import inspect
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

COMPRESSIONS = {"none": None, "fp16": torch.float16, "bf16": torch.bfloat16}
"""The values of ``distributed.compression``: the gradients' type on the wire."""


class _Call(torch.nn.Module):
    """``fn(model, *inputs)`` as a module with ``model``'s parameters (a forward that is not
    ``model.forward``, e.g. the overlapped distributed one, under DDP)."""

    def __init__(self, model: torch.nn.Module, fn):
        super().__init__()
        self.model, self.fn = model, fn

    def forward(self, *inputs):
        return self.fn(self.model, *inputs)


def bucket_cap_mb(model: torch.nn.Module, *, buckets: int = 4) -> float:
    """The bucket cap in MiB that splits ``model``'s gradients into about ``buckets`` buckets,
    within [0.25, 25] MiB."""
    nbytes = sum(p.numel() * p.element_size() for p in model.parameters() if p.requires_grad)
    return min(25.0, max(0.25, nbytes / buckets / 2**20))


def no_buffer_sync(ddp_init=DistributedDataParallel.__init__) -> dict:
    """The DDP keyword that turns off the per-forward broadcast of buffers (the models have
    none to keep in step): ``forward_sync_buffers`` from torch 2.13, which deprecates the
    ``broadcast_buffers`` of earlier versions (a CUDA machine's torch 2.11 has only that)."""
    if "forward_sync_buffers" in inspect.signature(ddp_init).parameters:
        return {"forward_sync_buffers": False}
    return {"broadcast_buffers": False}


class GradientSync:
    """DDP around ``model`` on ``shard``'s process group; ``module`` is what forward calls
    (``model(*inputs)``, or ``forward(model, *inputs)`` when given)."""

    def __init__(self, model: torch.nn.Module, shard, *, compression: str = "none",
                 bucket_mb: float | None = None, forward=None):
        device = shard.device
        self.shard = shard
        self.wire = COMPRESSIONS[compression]
        self.module = DistributedDataParallel(
            model if forward is None else _Call(model, forward),
            device_ids=[device] if device.type == "cuda" else None,
            process_group=shard.group, **no_buffer_sync(),
            bucket_cap_mb=bucket_cap_mb(model) if bucket_mb is None else bucket_mb)
        self.module.register_comm_hook(self, _all_reduce_hook)
        self.reset()

    def reset(self) -> None:
        self.busy_s = 0.0     # time some bucket's all-reduce was under way (launch -> completion)
        self.busy_until = 0.0  # the latest completion so far (buckets complete in launch order)
        self.exposed_s = 0.0  # backward's wait after its last bucket was ready
        self.bytes = 0        # bytes all-reduced (on the wire type)
        self.last_ready = None

    def step_done(self) -> None:
        """Called right after backward: it returned once every bucket was reduced."""
        if self.last_ready is not None:
            self.exposed_s += time.perf_counter() - self.last_ready
            self.last_ready = None

    @property
    def hidden_share(self) -> float:
        """Of the all-reduce time, the share that overlapped backward's computation."""
        if self.busy_s <= 0:
            return 0.0
        return min(1.0, max(0.0, 1.0 - self.exposed_s / self.busy_s))


def _all_reduce_hook(state, bucket):  # unannotated: DDP checks annotations as objects
    """Average one bucket over the ranks (DDP's default, optionally compressed), each
    parameter's gradient by its own all-reduce, timed; returns a future of the averaged bucket."""
    t0 = time.perf_counter()
    state.last_ready = t0
    buf = bucket.buffer()
    wire = buf if state.wire is None else buf.to(state.wire)
    wire.div_(state.shard.world)
    state.bytes += wire.numel() * wire.element_size()
    pieces = wire.split([p.numel() for p in bucket.parameters()])
    futures = [dist.all_reduce(piece, group=state.shard.group, async_op=True).get_future()
               for piece in pieces]

    def done(_):
        now = time.perf_counter()
        # the union of the buckets' intervals: a bucket queued behind another is not counted twice
        state.busy_s += max(0.0, now - max(t0, state.busy_until))
        state.busy_until = max(state.busy_until, now)
        if state.wire is not None:
            buf.copy_(wire)
        return buf

    return torch.futures.collect_all(futures).then(done)
