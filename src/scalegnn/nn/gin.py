"""GIN layer (Xu et al., "How powerful are graph neural networks?")::

    H' = tail( MLP( (1 + ε) H_v + Σ_u Â_vu H_u ) ),   MLP(t) = act(t W_1 + b_1) W_2

with a learnable ``ε`` (initialized to 0; fixed with ``train_eps=False``) and
``tail`` = bias + activation (+ GraphSAINT's feature norm with ``bias='norm'``).

Neighbour weights (``weights``):

* ``'operator'`` (default): ``Â`` is the operator passed in, i.e. under GraphSAINT the
  subgraph's ``D⁻¹A·α`` in training and the full graph's ``D⁻¹A`` at evaluation. The
  neighbour term is then an unbiased estimate of the full-graph *mean* (GraphSAINT's
  normalization, SPEC §1.2), so training and evaluation see the same scale. This is
  "GIN-mean": it gives up the sum aggregator's multiset injectivity.
* ``'ones'``: the pattern of ``Â`` with unit weights, the paper's sum aggregator. Its values
  ignore the normalization, so a sampled subgraph's sums are smaller than the full graph's
  (biased, and the scale shifts between training and evaluation); meant for full-batch use.

``W_1`` is applied before the aggregation when it narrows (``Â (H W_1)`` = ``(Â H) W_1``, fewer
SpMM columns). Rectangular ``Â``: the self rows are the first ``adj.num_rows`` rows of ``H``.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from scalegnn.errors import ConfigError
from scalegnn.nn.saint import ACTIVATIONS
from scalegnn.nn.tail import LayerTail
from scalegnn.ops import SparseAdj, spmm

GIN_WEIGHTS = ("operator", "ones")


def unit_weights(adj: SparseAdj) -> SparseAdj:
    """``adj``'s pattern with every value 1 (its transpose shares the cached transpose's
    pattern)."""
    t = adj.t()
    ones = SparseAdj(adj.indptr, adj.indices, np.ones(adj.nnz, dtype=adj.dtype), adj.num_cols)
    ones._t = SparseAdj(t.indptr, t.indices, np.ones(t.nnz, dtype=adj.dtype), adj.num_rows,
                        transpose=ones)
    return ones


class GINLayer(nn.Module):
    """``H' = tail(MLP((1+ε) H + Â H))``: ``in_dim`` -> ``out_dim`` (MLP hidden = ``out_dim``)."""

    def __init__(self, in_dim: int, out_dim: int, bias: str = "bias", act: str = "relu",
                 dropout: float = 0.0, weights: str = "operator", train_eps: bool = True,
                 eps: float = 0.0):
        super().__init__()
        if weights not in GIN_WEIGHTS:
            raise ConfigError(f"network.gin_weights: {weights!r} is not one of {list(GIN_WEIGHTS)}")
        self.in_dim, self.out_dim, self.weights = in_dim, out_dim, weights
        self.eps0 = float(eps)
        self.eps = nn.Parameter(torch.tensor(self.eps0)) if train_eps else None
        self.lin1 = nn.Linear(in_dim, out_dim)
        self.lin2 = nn.Linear(out_dim, out_dim, bias=False)   # the tail holds the bias
        self.act = ACTIVATIONS[act]
        self.tail = LayerTail(out_dim, bias, act)
        self.dropout = nn.Dropout(dropout)
        self.reset_parameters()

    @property
    def output_dim(self) -> int:
        return self.out_dim

    def reset_parameters(self):
        if self.eps is not None:
            with torch.no_grad():
                self.eps.fill_(self.eps0)
        self.lin1.reset_parameters()
        self.lin2.reset_parameters()
        self.tail.reset_parameters()

    def _eps(self, like: torch.Tensor):
        return self.eps.to(like.dtype) if self.eps is not None else self.eps0

    def forward(self, x: torch.Tensor, adj: SparseAdj) -> torch.Tensor:
        """``x``: one row per column of ``adj``; output: one row per row of ``adj``."""
        n = adj.num_rows
        a = unit_weights(adj) if self.weights == "ones" else adj
        x = self.dropout(x)
        w1 = self.lin1.weight.t()
        # aggregate the narrower H W_1 (always for CSR input, which only multiplies weights)
        if self.out_dim < self.in_dim or not isinstance(x, torch.Tensor):
            hw = x @ w1
            t = (1 + self._eps(hw)) * hw[:n] + spmm(a, hw)
        else:
            t = ((1 + self._eps(x)) * x[:n] + spmm(a, x)) @ w1
        h = self.act(t + self.lin1.bias)
        return self.tail(self.lin2(h))

    def extra_repr(self) -> str:
        return f"{self.in_dim}, {self.out_dim}, weights={self.weights}"
