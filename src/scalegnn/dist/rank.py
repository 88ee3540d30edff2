"""The mode one rank of ``scalegnn dist-train`` trains with, from ``distributed.mode``:

* ``full`` — partition-parallel full-graph training (BNS-GCN) on a plan:
  :class:`~scalegnn.dist.mode.DistributedMode`.
"""

from __future__ import annotations

from pathlib import Path

from scalegnn.dist.mode import DistributedMode
from scalegnn.dist.plan import PartitionPlan

MODES = ("full",)
"""The values of ``distributed.mode``."""


def rank_mode(spec, plan_dir: Path | None, rank: int, world: int, device):
    """The :class:`~scalegnn.engine.mode.Mode` of rank ``rank`` of ``world`` for the resolved
    run ``spec`` (its config's ``distributed.mode``), after the process group is up."""
    plan = PartitionPlan.load(plan_dir, world_size=world)
    return DistributedMode(plan, rank, world, spec.config, device=device)
