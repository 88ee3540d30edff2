""":class:`TorchShard`: a :class:`~scalegnn.shard.Shard` whose collectives run on
``torch.distributed`` (gloo on CPU, NCCL with CUDA tensors), for data-parallel training."""

from __future__ import annotations

import numpy as np
import torch
import torch.distributed as dist

from scalegnn.dist.exchange import peer_error
from scalegnn.shard import Shard


class TorchShard(Shard):
    """This process's rank of the default process group (or ``group``). A failed or timed-out
    collective is a one-line :class:`~scalegnn.errors.DistError`."""

    def __init__(self, *, group=None, device=None, timeout: float = 120.0):
        self.group = group
        self.rank = dist.get_rank(group)
        self.world = dist.get_world_size(group)
        self.device = torch.device(device or "cpu")
        self.timeout = float(timeout)

    def _run(self, fn, what: str):
        try:
            return fn()
        except Exception as e:
            raise peer_error(self.rank, what, e, self.timeout) from None

    def _tensor(self, x: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(x)).to(self.device)

    def all_reduce_sum(self, x: np.ndarray) -> np.ndarray:
        t = self._tensor(np.array(x, copy=True))
        self._run(lambda: dist.all_reduce(t, op=dist.ReduceOp.SUM, group=self.group),
                  "all-reduce")
        return t.cpu().numpy()

    def all_gather(self, x: np.ndarray) -> list[np.ndarray]:
        x = np.ascontiguousarray(x).reshape(np.shape(x) or (1,))
        n = self._tensor(np.array([x.shape[0]], dtype=np.int64))
        ns = [torch.zeros_like(n) for _ in range(self.world)]
        self._run(lambda: dist.all_gather(ns, n, group=self.group), "gather of row counts")
        counts = [int(v.item()) for v in ns]
        rows = x.reshape(x.shape[0], -1)
        pad = np.zeros((max(counts),) + rows.shape[1:], dtype=x.dtype)
        pad[:rows.shape[0]] = rows
        t = self._tensor(pad)
        outs = [torch.empty_like(t) for _ in range(self.world)]
        self._run(lambda: dist.all_gather(outs, t, group=self.group), "gather of rows")
        tail = x.shape[1:]
        return [o[:k].cpu().numpy().reshape((k,) + tail) for o, k in zip(outs, counts)]

    # ---------------------------------------------------------------- torch tensors
    def gather_tensor(self, t: torch.Tensor) -> torch.Tensor:
        """Every rank's ``t`` (same shape) stacked in rank order, on the CPU."""
        t = t.to(self.device)
        outs = [torch.empty_like(t) for _ in range(self.world)]
        self._run(lambda: dist.all_gather(outs, t, group=self.group), "gather")
        return torch.stack([o.cpu() for o in outs])

    def broadcast_module(self, module: torch.nn.Module) -> None:
        """Make every rank's parameters and buffers rank 0's."""
        for v in module.state_dict().values():
            self._run(lambda v=v: dist.broadcast(v, src=0, group=self.group),
                      "broadcast of the model")

    def mean(self, value: float) -> float:
        """The mean over the ranks of a number."""
        t = torch.tensor([float(value)], dtype=torch.float64, device=self.device)
        self._run(lambda: dist.all_reduce(t, op=dist.ReduceOp.SUM, group=self.group),
                  "all-reduce of the loss")
        return float(t.item()) / self.world
