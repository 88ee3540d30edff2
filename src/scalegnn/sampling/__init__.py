"""GraphSAINT sampling: samplers (SPEC §1.1), normalization (§1.2), parallel engine and
prefetching loader (§2). numba kernels live in ``_kernels.py``; slow references in
``reference.py`` (tests only)."""

from scalegnn.sampling.samplers import SAMPLERS, Sampler, Subgraph, make_sampler
from scalegnn.sampling.normalization import Normalization
from scalegnn.sampling.loader import GraphSAINTLoader

__all__ = ["Subgraph", "Sampler", "make_sampler", "SAMPLERS", "Normalization",
           "GraphSAINTLoader"]
