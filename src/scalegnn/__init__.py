"""scalegnn: train graph neural networks on graphs too large for naive full-batch training."""

import os as _os

# torch and numba each load an OpenMP runtime with its own thread team; with the default
# (active) wait policy each team spin-waits on the cores the other needs, which measured
# 1.7x the CPU per training step on 2 cores. Passive waiting only takes effect if set before
# torch is first imported; a user's explicit setting wins.
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from scalegnn.errors import (ScaleGNNError, DataError, GraphError, ConfigError, PlanError, DistError,
                             TrainingError)
from scalegnn.graph import Graph

__version__ = "0.1.0"

__all__ = ["Graph", "ScaleGNNError", "DataError", "GraphError", "ConfigError", "PlanError", "DistError",
           "TrainingError", "__version__"]
