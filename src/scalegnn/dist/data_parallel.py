""":class:`DataParallelMode`: data-parallel minibatch training (``distributed.mode: data``).

Every rank holds the whole dataset and runs the single-process mode the config asks for
(GraphSAINT, shaDow-GNN node or link), built with its :class:`~scalegnn.dist.shard.TorchShard`:
rank r of W takes the batches a single process would draw at positions r, r + W, r + 2W, ...
of one seeded stream, and pre-samples 1/W of GraphSAINT's normalization subgraphs (the counts
are summed, so α and λ are the single-process ones on every rank). One step = one batch per
rank; :class:`~scalegnn.dist.ddp.GradientSync` (torch's DistributedDataParallel) averages the
gradients with bucketed all-reduces that overlap backward, so a step of W ranks equals one
process accumulating the same W batches. Evaluation is sharded: each rank computes a block of
rows of the layer-wise full-graph inference (or a block of the shaDow targets) and the blocks
are gathered, so every rank has every metric. Checkpoints are written at epoch ends (ranks
agree on when), by rank 0, with every rank's random state.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from scalegnn.dist.ddp import GradientSync
from scalegnn.dist.shard import TorchShard
from scalegnn.engine.mode import Mode


class DataParallelMode(Mode):
    """Rank ``shard.rank`` of a data-parallel run of the single-process mode ``inner`` (which
    was built with ``shard``)."""

    name = "data-parallel"
    mid_epoch_checkpoints = False

    def __init__(self, inner: Mode, shard: TorchShard, *, compression: str = "none"):
        self.inner, self.shard = inner, shard
        self.rank, self.world = shard.rank, shard.world
        self.compression = compression
        for attr in ("num_features", "num_classes", "multilabel", "metric", "dataset_name",
                     "dtype"):
            setattr(self, attr, getattr(inner, attr))
        self.sync = None

    # ---------------------------------------------------------------- identity and setup
    def identity(self) -> dict:
        return {**self.inner.identity(), "mode": self.name, "inner": self.inner.name,
                "world": self.world}

    def run_info(self) -> dict:
        return {**self.inner.run_info(), "inner_mode": self.inner.name,
                "world_size": self.world, "backend": dist.get_backend(self.shard.group),
                "compression": self.compression}

    def build_model(self, network: dict, params: dict):
        return self.inner.build_model(network, params)

    def setup(self, model, seed: int) -> None:
        self.inner.setup(model, seed)
        self.sync = GradientSync(model, self.shard, compression=self.compression)

    # ---------------------------------------------------------------- batches and steps
    def num_batches(self, epoch: int) -> int:
        return self.inner.num_batches(epoch)

    def batches(self, epoch: int, skip: int = 0):
        self.sync.reset()
        yield from self.inner.batches(epoch, skip)

    def forward(self, model, batch):
        return self.inner.forward(self.sync.module, batch)

    def reduce(self, params, loss) -> float:
        """DDP averaged the gradients during backward; the loss of the step is the mean of the
        ranks' losses (what one process accumulating their batches reports)."""
        self.sync.step_done()
        return self.shard.mean(float(loss.detach()))

    def evaluate(self, model, splits) -> dict:
        return self.inner.evaluate(model, splits)

    def epoch_stats(self) -> dict:
        mine = [self.sync.busy_s, self.sync.exposed_s, float(self.sync.bytes)]
        ranks = self.gather(torch.tensor(mine, dtype=torch.float64))
        busy, exposed = float(ranks[:, 0].sum()), float(ranks[:, 1].sum())
        return {**self.inner.epoch_stats(),
                "allreduce_s": busy / self.world, "allreduce_exposed_s": exposed / self.world,
                "allreduce_hidden_share": min(1.0, max(0.0, 1 - exposed / busy)) if busy else 0.0,
                "allreduce_bytes": int(ranks[0, 2])}

    def summary_extra(self) -> dict:
        return {**self.inner.summary_extra(), "world_size": self.world,
                "inner_mode": self.inner.name}

    # ---------------------------------------------------------------- ranks
    def gather(self, t):
        return self.shard.gather_tensor(t)

    def sync_model(self, model) -> None:
        self.shard.broadcast_module(model)

    def state_dict(self) -> dict:
        return self.inner.state_dict()

    def load_state_dict(self, state: dict) -> None:
        self.inner.load_state_dict(state)

    def close(self) -> None:
        """Stop the inner mode's threads and release DDP (before the process group goes)."""
        self.inner.close()
        self.sync = None
