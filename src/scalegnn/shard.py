"""A process's share of work that several processes split: its rank, their number, and the
two collectives that splitting needs.

Sampling, evaluation and the modes take a :class:`Shard`. The default one is a single process
(rank 0 of 1; the collectives return their input), so single-process code paths are unchanged;
``scalegnn.dist.shard.TorchShard`` implements the collectives with ``torch.distributed`` for
data-parallel training, where rank ``r`` of ``W`` takes positions ``r, r + W, r + 2W, ...`` of
a stream every rank could draw alike.
"""

from __future__ import annotations

import numpy as np


class Shard:
    """Rank 0 of 1: this process does all the work (the collectives are identities)."""

    rank = 0
    world = 1

    def all_gather(self, x: np.ndarray) -> list[np.ndarray]:
        """Every rank's ``x`` (first dimensions may differ), in rank order."""
        return [np.asarray(x)]

    def all_reduce_sum(self, x: np.ndarray) -> np.ndarray:
        """The elementwise sum of every rank's ``x`` (same shape and dtype on every rank)."""
        return np.asarray(x)

    def gather_rows(self, x: np.ndarray) -> np.ndarray:
        """Every rank's rows of ``x`` stacked in rank order."""
        parts = self.all_gather(x)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def block(self, n: int) -> tuple[int, int]:
        """This rank's contiguous block ``[lo, hi)`` of ``n`` items (balanced; rank order)."""
        return (self.rank * n) // self.world, ((self.rank + 1) * n) // self.world

    def __repr__(self) -> str:
        return f"{type(self).__name__}(rank={self.rank}, world={self.world})"


SINGLE = Shard()
"""The single-process shard."""
