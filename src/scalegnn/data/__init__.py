"""Dataset type, loaders (one module per format) and synthetic generators."""
from scalegnn.data.dataset import Dataset

__all__ = ["Dataset"]
