"""GraphSAINT sampling: samplers (SPEC §1.1), normalization (§1.2), parallel engine and
prefetching loader (§2). numba kernels live in ``_sample_kernels.py`` (the samplers' draws),
``_random_kernels.py`` (uniform and alias draws), ``_frontier_kernels.py`` (the frontier
sampler's Dashboard) and ``_induce_kernels.py`` (induced subgraphs, normalization counts); slow
references in ``reference.py`` (tests only). Neighbour (fanout) sampling, behind
``scalegnn.pyg.NeighborLoader``: ``neighbour.py`` and ``_neighbour_kernels.py``."""

from scalegnn.sampling.loader import GraphSAINTLoader
from scalegnn.sampling.neighbour import NeighbourSample, NeighbourSampler
from scalegnn.sampling.normalization import Normalization
from scalegnn.sampling.sampler_base import Sampler, Subgraph
from scalegnn.sampling.samplers import SAMPLERS, make_sampler

__all__ = ["Subgraph", "Sampler", "make_sampler", "SAMPLERS", "Normalization",
           "GraphSAINTLoader", "NeighbourSampler", "NeighbourSample"]
