"""GraphSAINT sampling: samplers (SPEC §1.1), normalization (§1.2), parallel engine and
prefetching loader (§2). numba kernels live in ``_sample_kernels.py`` (the samplers' draws),
``_random_kernels.py`` (uniform and alias draws), ``_frontier_kernels.py`` (the frontier
sampler's Dashboard) and ``_induce_kernels.py`` (induced subgraphs, normalization counts); slow
references in ``reference.py`` (tests only). Neighbour (fanout) sampling, behind
``scalegnn.pyg.NeighborLoader`` and ``sampler: neighbour``: ``neighbour.py``,
``_neighbour_kernels.py`` and ``neighbour_loader.py``."""

from scalegnn.sampling.loader import GraphSAINTLoader
from scalegnn.sampling.neighbour import NeighbourSample, NeighbourSampler
from scalegnn.sampling.neighbour_loader import NeighbourLoader
from scalegnn.sampling.normalization import Normalization
from scalegnn.sampling.sampler_base import Sampler, Subgraph
from scalegnn.sampling.samplers import SAMPLERS, make_sampler

PHASE_SAMPLERS = {**SAMPLERS, NeighbourLoader.name: NeighbourLoader}
"""Every ``phase.sampler`` name: the GraphSAINT samplers (node-induced subgraphs) and
``neighbour`` (GraphSAGE fanout batches); each class names its ``required`` and ``optional``
phase keys."""

__all__ = ["Subgraph", "Sampler", "make_sampler", "SAMPLERS", "PHASE_SAMPLERS", "Normalization",
           "GraphSAINTLoader", "NeighbourLoader", "NeighbourSampler", "NeighbourSample"]
