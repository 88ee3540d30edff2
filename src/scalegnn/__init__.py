"""scalegnn: train graph neural networks on graphs too large for naive full-batch training."""

from scalegnn.errors import ScaleGNNError, DataError, GraphError, ConfigError, PlanError, DistError
from scalegnn.graph import Graph

__version__ = "0.1.0"

__all__ = ["Graph", "ScaleGNNError", "DataError", "GraphError", "ConfigError", "PlanError", "DistError",
           "__version__"]
