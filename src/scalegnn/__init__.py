"""scalegnn: train graph neural networks on graphs too large for naive full-batch training."""

import os as _os

# torch and numba each load an OpenMP runtime with its own thread team; with the default
# (active) wait policy each team spin-waits on the cores the other needs, which measured
# 1.7x the CPU per training step on 2 cores. Passive waiting only takes effect if set before
# torch is first imported; a user's explicit setting wins.
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from scalegnn.errors import (ScaleGNNError, DataError, GraphError, ConfigError, PlanError, DistError,
                             TrainingError, WriteError)
from scalegnn.graph import Graph

__version__ = "0.1.0"

__all__ = ["Graph", "load_run", "ScaleGNNError", "DataError", "GraphError", "ConfigError", "PlanError", "DistError",
           "TrainingError", "WriteError", "__version__"]


def __getattr__(name):
    # load_run pulls in torch; imported on first use so that `import scalegnn` stays light
    if name == "load_run":
        from scalegnn.inference import load_run
        return load_run
    raise AttributeError(f"module 'scalegnn' has no attribute {name!r}")
