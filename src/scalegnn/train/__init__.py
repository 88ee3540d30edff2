"""Training: the one loop of every mode (Trainer), the modes (where batches come from),
layer-wise full-graph evaluation, metrics, checkpoints and the run directory."""
from scalegnn.train.metrics import compute_metrics
from scalegnn.train.modes import GraphSAINTMode, Mode
from scalegnn.train.trainer import Trainer

__all__ = ["Trainer", "Mode", "GraphSAINTMode", "compute_metrics"]
