"""Training: the GraphSAINT trainer, layer-wise full-graph evaluation, metrics, run directory."""
from scalegnn.train.metrics import compute_metrics
from scalegnn.train.trainer import Trainer

__all__ = ["Trainer", "compute_metrics"]
