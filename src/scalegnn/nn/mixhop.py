"""MixHop layer (Abu-El-Haija et al., 2019): a column concatenation over the powers ``P``::

    H' = ‖_{k ∈ P}  tail_k( Â^k H W_k ),     default P = (0, 1, 2)

``Â^0 H`` is the layer's own rows of ``H``; ``Â^k`` is ``k`` repeated SpMMs with the operator
passed in (under GraphSAINT, the subgraph's ``D⁻¹A·α``; see :mod:`scalegnn.nn.gcn`); ``tail_k``
is bias + activation (+ GraphSAINT's feature norm with ``bias='norm'``) per power. Output width
is ``len(P) · out_dim``.

Cost: the products are associated by the narrower side. Propagating ``H`` first costs
``max(P)`` SpMMs over ``in_dim`` columns; transforming first computes ``H [W_k …]`` in one GEMM
and propagates only the columns of the powers still pending, ``Σ_{k∈P} k`` SpMMs over
``out_dim`` columns in all; the layer picks the cheaper. Powers ``>= 2`` need a square ``Â``
(a rectangular operator maps columns to rows once); power 0 and 1 work on rectangular ones.
"""

from __future__ import annotations

import torch
from torch import nn

from scalegnn.errors import ConfigError, GraphError
from scalegnn.nn.tail import LayerTail
from scalegnn.ops import SparseAdj, spmm


def parse_powers(powers) -> tuple[int, ...]:
    """``'0-1-2'``, ``[0, 1, 2]`` or ``2`` -> ``(0, 1, 2)`` (sorted, unique, non-negative)."""
    if isinstance(powers, int):
        powers = str(powers)
    tokens = powers.split("-") if isinstance(powers, str) else list(powers)
    try:
        out = [int(t) for t in tokens]
    except (TypeError, ValueError):
        raise ConfigError(f"network.powers: expected hop powers like '0-1-2', got {powers!r}") from None
    if not out or min(out) < 0 or len(set(out)) != len(out):
        raise ConfigError(f"network.powers: expected distinct non-negative powers like '0-1-2', "
                          f"got {powers!r}")
    return tuple(sorted(out))


class MixHopLayer(nn.Module):
    """``H' = ‖_{k∈P} tail_k(Â^k H W_k)``: ``in_dim`` -> ``len(powers) * out_dim``."""

    def __init__(self, in_dim: int, out_dim: int, powers=(0, 1, 2), bias: str = "bias",
                 act: str = "relu", dropout: float = 0.0):
        super().__init__()
        self.in_dim, self.out_dim = in_dim, out_dim
        self.powers = parse_powers(powers)
        self.weights = nn.ParameterList(
            [nn.Parameter(torch.empty(in_dim, out_dim)) for _ in self.powers])
        self.tails = nn.ModuleList([LayerTail(out_dim, bias, act) for _ in self.powers])
        self.dropout = nn.Dropout(dropout)
        self.reset_parameters()

    @property
    def output_dim(self) -> int:
        return self.out_dim * len(self.powers)

    def reset_parameters(self):
        for w in self.weights:
            nn.init.xavier_uniform_(w)
        for t in self.tails:
            t.reset_parameters()

    def transform_first(self) -> bool:
        """True when ``Σ k · out_dim`` SpMM columns are fewer than ``max(P) · in_dim``."""
        return sum(self.powers) * self.out_dim < max(self.powers) * self.in_dim

    def hop_terms(self, x: torch.Tensor, adj: SparseAdj | None) -> list[torch.Tensor]:
        """``[Â^k X W_k for k in P]`` before the tails, each with ``adj.num_rows`` rows."""
        num_rows = adj.num_rows if adj is not None else x.shape[0]
        top = max(self.powers)
        if top >= 2 and adj.num_rows != adj.num_cols:
            raise GraphError(f"MixHop power {top} needs a square adjacency, got shape {adj.shape}")
        terms = {}
        if 0 in self.powers:
            terms[0] = x[:num_rows] @ self.weights[0]
        hops = [k for k in self.powers if k > 0]
        # CSR input (scalegnn.features) only multiplies dense weights: transform first
        if hops and (self.transform_first() or not isinstance(x, torch.Tensor)):
            ws = [self.weights[self.powers.index(k)] for k in hops]
            h = x @ torch.cat(ws, dim=1)             # pending columns, blocks in order of hops
            for step in range(1, top + 1):
                h = spmm(adj, h)
                if step in hops:                     # its block is the leftmost pending one
                    terms[step], h = h[:, :self.out_dim], h[:, self.out_dim:]
        elif hops:
            h = x
            for step in range(1, top + 1):
                h = spmm(adj, h)
                if step in hops:
                    terms[step] = h @ self.weights[self.powers.index(step)]
        return [terms[k] for k in self.powers]

    def forward(self, x: torch.Tensor, adj: SparseAdj | None) -> torch.Tensor:
        """``x``: one row per column of ``adj``; output: one row per row of ``adj``."""
        terms = self.hop_terms(self.dropout(x), adj)
        out = [tail(t) for tail, t in zip(self.tails, terms)]
        return torch.cat(out, dim=1) if len(out) > 1 else out[0]

    def extra_repr(self) -> str:
        return f"{self.in_dim}, {self.out_dim}, powers={self.powers}"
