"""The one minibatch type shared by every training mode.

* GraphSAINT: one sampled node-induced subgraph (``segment`` is None).
* shaDow-GNN: many per-target subgraphs stacked block-diagonally; ``segment[i]`` is the
  subgraph of row ``i`` and ``targets[k]`` the row of subgraph ``k``'s target node.
* Distributed: a partition's rectangular local matrix; ``adj`` has ``num_cols > num_nodes`` and
  columns ``num_nodes..num_cols-1`` are boundary nodes whose parent ids are ``col_nodes``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from scalegnn.graph import Graph
from scalegnn.ops.adj import SparseAdj


@dataclass
class Batch:
    nodes: np.ndarray
    """Parent (dataset) id of each row, int64, sorted for sampled subgraphs (neighbour
    sampling: the seeds first, then each hop's new nodes)."""
    adj: Graph
    """Normalized adjacency of the batch (rows = len(nodes)); ``adj.data`` holds the weights."""
    edge_ids: np.ndarray | None = None
    """Parent edge id of each entry of ``adj`` (sampled subgraphs)."""
    adj_t_perm: np.ndarray | None = None
    """For a symmetric pattern: ``data_T = adj.data[adj_t_perm]`` gives the transpose's values."""
    adj_t: Graph | None = None
    """For a non-symmetric pattern (neighbour sampling): the transpose of ``adj``, built with
    the batch (in the sampling pool's thread) for the backward pass."""
    col_nodes: np.ndarray | None = None
    """Parent ids of all columns when ``adj`` is rectangular (inner first, then boundary)."""
    x: object = None
    """Gathered input features, rows aligned with ``nodes``: a torch.Tensor, or
    :class:`~scalegnn.features.SparseFeatures` rows for CSR features (the model's first layer
    multiplies them sparse x dense)."""
    y: object = None
    """Gathered labels (torch.Tensor)."""
    loss_weight: object = None
    """Per-row loss weight (torch.Tensor); 0 for rows that carry no loss."""
    segment: np.ndarray | None = None
    targets: np.ndarray | None = None
    meta: dict = field(default_factory=dict)
    _sparse: SparseAdj | None = field(default=None, init=False, repr=False, compare=False)
    """:meth:`sparse_adj`'s cache (not copied by ``dataclasses.replace``)."""

    @property
    def num_nodes(self) -> int:
        return int(self.nodes.shape[0])

    @property
    def num_edges(self) -> int:
        return self.adj.num_edges

    def sparse_adj(self) -> SparseAdj:
        """``adj`` as the model's propagation operand, with its transpose (built once)."""
        if self._sparse is None:
            self._sparse = SparseAdj.from_graph(self.adj, self.adj_t_perm, transpose=self.adj_t)
        return self._sparse

    def pin(self, dtype) -> Batch:
        """Page-lock the tensor fields and the adjacency's operands in ``dtype``, both
        directions (:meth:`SparseAdj.pin`), so that moving the batch to a GPU only queues
        copies: a copy from pageable memory holds the training thread until it is done.
        Loaders call this in their background thread when the model is on a GPU (needs
        CUDA)."""
        for name in ("x", "y", "loss_weight"):
            v = getattr(self, name)
            if isinstance(v, torch.Tensor):
                setattr(self, name, v.pin_memory())
        self.sparse_adj().pin(dtype)
        return self

    def to(self, device) -> "Batch":
        """Move the tensor fields to ``device`` (the graph stays in host memory; the
        adjacency's operands move with the forward's first SpMM)."""
        for name in ("x", "y", "loss_weight"):
            v = getattr(self, name)
            if v is not None and hasattr(v, "to"):
                setattr(self, name, v.to(device, non_blocking=True))
        return self
