"""GCN layer (Kipf & Welling) over the operator it is given::

    H' = tail( Â H W ),   tail(t) = act(t + b)   (bias='bias')
                                  = norm(act(t + b))   (bias='norm', see nn.tail)

``Â`` is exactly the :class:`~scalegnn.ops.SparseAdj` passed in. Under GraphSAINT training the
trainer passes the subgraph's ``D⁻¹A`` times the aggregator multipliers α (the unbiased
minibatch estimator of SPEC §1.2) and evaluation passes ``D⁻¹A`` of the full graph, as the
GraphSAINT reference does for all its GCN-style models. The symmetric GCN operator
``(D+I)^{-1/2}(A+I)(D+I)^{-1/2}`` is :func:`gcn_norm`, for full-batch users who build the
SparseAdj themselves.

The product associates by the narrower side (``ops.propagate_linear``: ``Â (H W)`` when
``out_dim < in_dim``). Rectangular ``Â`` (rows = destinations, columns = the rows of ``H``)
works unchanged: the output has one row per row of ``Â``.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from scalegnn.graph import Graph
from scalegnn.nn.tail import LayerTail
from scalegnn.ops import SparseAdj, propagate_linear


def gcn_norm(graph: Graph, dtype=np.float32) -> Graph:
    """``(D+I)^{-1/2} (A+I) (D+I)^{-1/2}`` of a square graph (D = degrees of A, the pattern's
    row lengths without self loops; existing self loops are kept once)."""
    g = graph.add_self_loops()                     # exactly one (u, u) per row, sorted
    deg = g.degrees().astype(np.float64)           # = deg_A(u) + 1
    inv_sqrt = 1.0 / np.sqrt(deg)
    rows = np.repeat(np.arange(g.num_nodes), g.degrees())
    return g.with_data((inv_sqrt[rows] * inv_sqrt[g.indices]).astype(dtype))


class GCNLayer(nn.Module):
    """``H' = tail(Â H W)`` mapping ``in_dim`` -> ``out_dim`` features."""

    def __init__(self, in_dim: int, out_dim: int, bias: str = "bias", act: str = "relu",
                 dropout: float = 0.0):
        super().__init__()
        self.in_dim, self.out_dim = in_dim, out_dim
        self.weight = nn.Parameter(torch.empty(in_dim, out_dim))
        self.tail = LayerTail(out_dim, bias, act)
        self.dropout = nn.Dropout(dropout)
        self.reset_parameters()

    @property
    def output_dim(self) -> int:
        return self.out_dim

    def reset_parameters(self):
        nn.init.xavier_uniform_(self.weight)
        self.tail.reset_parameters()

    def forward(self, x: torch.Tensor, adj: SparseAdj) -> torch.Tensor:
        """``x``: one row per column of ``adj``; output: one row per row of ``adj``."""
        return self.tail(propagate_linear(adj, self.dropout(x), self.weight))

    def extra_repr(self) -> str:
        return f"{self.in_dim}, {self.out_dim}"
