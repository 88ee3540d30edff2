"""The mode protocol: where a run's batches come from. The one loop is :class:`scalegnn.train.Trainer`.

A mode gives the trainer, for the rank it runs on: the task (features, classes, metric), a
stream of :class:`~scalegnn.batch.Batch` per epoch whose position can be saved and restored, the
forward of a model on a batch, the gradient reduction across ranks, and evaluation. Everything
else (config, model zoo, optimizer, checkpoints, exact resume, run directory, progress bar,
metrics, report) is the trainer's and is the same for every mode.

* :class:`scalegnn.train.GraphSAINTMode` — sampled node-induced subgraphs, full-graph evaluation.
* :class:`scalegnn.shadow.mode.ShadowMode` / ``LinkMode`` — per-target subgraphs (shaDow-GNN).
* :class:`scalegnn.dist.mode.DistributedMode` — one rank's partition with boundary exchange.
"""

from __future__ import annotations

import torch


class Mode:
    """The interface the trainer drives (defaults fit a single process)."""

    name = "mode"
    rank, world = 0, 1
    dtype = torch.float32
    mid_epoch_checkpoints = True
    """May the trainer checkpoint between batches (False where ranks must agree on when)."""

    # task: num_features, num_classes, multilabel, metric, dataset_name (set by subclasses)

    @property
    def is_writer(self) -> bool:
        """Writes the run directory and shows the progress bar."""
        return self.rank == 0

    def identity(self) -> dict:
        """What a checkpoint must match to be loaded into this run."""
        raise NotImplementedError

    def run_info(self) -> dict:
        return {}

    def build_model(self, network: dict, params: dict):
        """The mode's own model, or None for the zoo model ``build_model`` makes from the
        config (same weights on every rank: called right after seeding)."""
        return None

    def setup(self, model, seed: int) -> None:
        """Called once the model is built (same initial weights on every rank)."""

    def num_batches(self, epoch: int) -> int:
        raise NotImplementedError

    def batches(self, epoch: int, skip: int = 0):
        """Iterator over epoch ``epoch``'s batches after the first ``skip`` (resumed epochs)."""
        raise NotImplementedError

    def forward(self, model, batch) -> torch.Tensor:
        raise NotImplementedError

    def reduce(self, params, loss: torch.Tensor) -> float:
        """After backward: make ``.grad`` the gradient of the global loss; return that loss."""
        return float(loss.detach())

    def evaluate(self, model, splits) -> dict:
        raise NotImplementedError

    def epoch_stats(self) -> dict:
        """Extra fields of this epoch's metrics record."""
        return {}

    def summary_extra(self) -> dict:
        return {}

    def gather(self, t: torch.Tensor) -> torch.Tensor:
        """Every rank's ``t`` (same shape) stacked in rank order."""
        return t.unsqueeze(0)

    def sync_model(self, model) -> None:
        """Make every rank's weights rank 0's."""

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:
        """Position the batch stream as saved (applied when the stream is next used)."""

    def close(self) -> None:
        """Release threads and processes (idempotent)."""
