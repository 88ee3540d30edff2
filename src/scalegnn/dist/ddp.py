"""Gradient averaging through torch's :class:`~torch.nn.parallel.DistributedDataParallel`:
bucketed all-reduces launched while backward still computes the remaining gradients, timed.

:class:`GradientSync` wraps a model in DDP with one communication hook that all-reduces each
bucket (optionally compressed to fp16 / bf16 on the wire, ``distributed.compression``) and
records, per step, the all-reduce time (launch to completion, summed over buckets) and the
part of it backward had to wait for after its last gradient (``exposed``): the rest was
hidden behind the computation of earlier layers' gradients.

The bucket layout is fixed when DDP is made (``find_unused_parameters=True``, which also keeps
DDP from laying the buckets out anew after the first backward): a ring all-reduce rounds an
element by its position in the bucket, so a rebuilt layout would make a run resumed with W >= 3
ranks round its first step unlike the run it continues (two values add the same in either
order). The price is one walk of the autograd graph per forward; a parameter a rank's forward
did not use is then reduced as zero rather than hanging the step.
"""

from __future__ import annotations

import time
import warnings

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


class GradientSync:
    """DDP around ``model`` on ``shard``'s process group; ``module`` is what forward calls
    (``model(*inputs)``, or ``forward(model, *inputs)`` when given)."""

    def __init__(self, model: torch.nn.Module, shard, *, compression: str = "none",
                 bucket_mb: float = 25.0, forward=None):
        device = shard.device
        self.shard = shard
        self.wire = COMPRESSIONS[compression]
        self.module = DistributedDataParallel(
            model if forward is None else _Call(model, forward),
            device_ids=[device] if device.type == "cuda" else None,
            process_group=shard.group, forward_sync_buffers=False, bucket_cap_mb=bucket_mb,
            find_unused_parameters=True)
        self.module.register_comm_hook(self, _all_reduce_hook)
        # chosen for the fixed layout, not for unused parameters: its advice does not apply
        warnings.filterwarnings("ignore", category=UserWarning,
                                message="find_unused_parameters=True was specified")
        self.reset()

    def reset(self) -> None:
        self.busy_s = 0.0     # all-reduce launch -> completion, summed over buckets
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
    """Average one bucket over the ranks (DDP's default, optionally compressed), timed;
    returns a future of the averaged bucket."""
    t0 = time.perf_counter()
    state.last_ready = t0
    buf = bucket.buffer()
    world = state.shard.world
    wire = buf if state.wire is None else buf.to(state.wire)
    wire.div_(world)
    state.bytes += wire.numel() * wire.element_size()
    fut = dist.all_reduce(wire, group=state.shard.group, async_op=True).get_future()

    def done(f):
        state.busy_s += time.perf_counter() - t0
        out = f.value()[0]
        if state.wire is None:
            return out
        buf.copy_(out)
        return buf

    return fut.then(done)
