"""Training: :class:`Trainer`, the one loop of every mode, and the single-process modes it picks
from a config (:func:`mode_for`: :class:`GraphSAINTMode`, or shaDow-GNN for a ``shadow:``
section). The parts the loop is made of (the :class:`Mode` protocol, optimizer, evaluation,
metrics, checkpoints, run directory) are in :mod:`scalegnn.engine`."""
from scalegnn.engine.metrics import compute_metrics
from scalegnn.engine.mode import Mode
from scalegnn.train.modes import GraphSAINTMode, mode_for
from scalegnn.train.trainer import Trainer

__all__ = ["Trainer", "Mode", "GraphSAINTMode", "mode_for", "compute_metrics"]
