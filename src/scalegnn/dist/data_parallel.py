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

from scalegnn.dist.ddp import GradientSync
from scalegnn.dist.shard import TorchShard
from scalegnn.dist.wrapped import WrappedMode
from scalegnn.engine.mode import Mode


class DataParallelMode(WrappedMode):
    """Rank ``shard.rank`` of a data-parallel run of the single-process mode ``inner`` (which
    was built with ``shard``)."""

    name = "data-parallel"

    def __init__(self, inner: Mode, shard: TorchShard, *, compression: str = "none"):
        super().__init__(inner, shard, compression)
        self.shard = shard

    def build_model(self, network: dict, params: dict):
        return self.inner.build_model(network, params)

    def setup(self, model, seed: int) -> None:
        self.inner.setup(model, seed)
        self.sync = GradientSync(model, self.shard, compression=self.compression)

    # ---------------------------------------------------------------- batches and steps
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
