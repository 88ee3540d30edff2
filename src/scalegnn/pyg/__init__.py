"""PyTorch Geometric loaders on scalegnn's numba samplers (needs ``torch_geometric``; install
``scalegnn[pyg]``). Drop-in replacements for ``torch_geometric.loader``'s minibatch loaders
that need neither pyg-lib nor torch-sparse, deterministic with a ``seed``:

* :class:`NeighborLoader` - GraphSAGE neighbour sampling (``sampling.neighbour``);
* :class:`GraphSAINTNodeSampler`, :class:`GraphSAINTEdgeSampler`,
  :class:`GraphSAINTRandomWalkSampler` - GraphSAINT subgraphs with ``node_norm`` /
  ``edge_norm`` from scalegnn's pre-sampling (SPEC §1.2);
* :class:`ClusterData`, :class:`ClusterLoader` - Cluster-GCN (METIS parts, q per batch);
* :func:`from_data` / :func:`to_data` - between ``torch_geometric.data.Data`` and scalegnn's
  ``Dataset`` / ``Batch``.

``import scalegnn`` never imports this package (nor torch_geometric).
"""

from scalegnn.pyg.cluster import ClusterData, ClusterLoader
from scalegnn.pyg.convert import from_data, to_data
from scalegnn.pyg.neighbor import NeighborLoader
from scalegnn.pyg.saint import (GraphSAINTEdgeSampler, GraphSAINTNodeSampler,
                                GraphSAINTRandomWalkSampler, GraphSAINTSampler)

__all__ = ["ClusterData", "ClusterLoader", "GraphSAINTEdgeSampler", "GraphSAINTNodeSampler",
           "GraphSAINTRandomWalkSampler", "GraphSAINTSampler", "NeighborLoader", "from_data",
           "to_data"]
