""":class:`WrappedMode`: what the distributed minibatch modes share. Each runs a single-process
mode (``inner``: GraphSAINT or shaDow-GNN, built on the whole dataset) on every rank and adds
how the ranks split the work; the task, the batch stream's position and closing are the inner
mode's, the rank collectives (checkpointed random states, the best model) go through a
:class:`~scalegnn.dist.shard.TorchShard`, and gradients through DDP (``self.sync``)."""

from __future__ import annotations

import torch.distributed as dist

from scalegnn.dist.shard import TorchShard
from scalegnn.engine.mode import Mode


class WrappedMode(Mode):
    """Rank ``ranks.rank`` of ``ranks.world`` around the single-process mode ``inner``."""

    mid_epoch_checkpoints = False  # ranks agree on when: at epoch ends

    def __init__(self, inner: Mode, ranks: TorchShard, compression: str):
        self.inner, self.ranks, self.compression = inner, ranks, compression
        self.rank, self.world = ranks.rank, ranks.world
        for attr in ("num_features", "num_classes", "multilabel", "metric", "dataset_name",
                     "dtype"):
            setattr(self, attr, getattr(inner, attr))
        self.sync = None  # GradientSync, made in setup()

    def identity(self) -> dict:
        return {**self.inner.identity(), "mode": self.name, "inner": self.inner.name,
                "world": self.world}

    def run_info(self) -> dict:
        return {**self.inner.run_info(), "inner_mode": self.inner.name,
                "world_size": self.world, "backend": dist.get_backend(),
                "compression": self.compression}

    def summary_extra(self) -> dict:
        return {**self.inner.summary_extra(), "world_size": self.world,
                "inner_mode": self.inner.name}

    def num_batches(self, epoch: int) -> int:
        return self.inner.num_batches(epoch)

    def gather(self, t):
        return self.ranks.gather_tensor(t)

    def sync_model(self, model) -> None:
        self.ranks.broadcast_module(model)

    def state_dict(self) -> dict:
        return self.inner.state_dict()

    def load_state_dict(self, state: dict) -> None:
        self.inner.load_state_dict(state)

    def close(self) -> None:
        """Stop the inner mode's threads and release DDP (before the process group goes)."""
        self.inner.close()
        self.sync = None
