"""GraphSAINT's SAGE-style layer of order k (the reference ``HighOrderAggregator``).

For input ``X`` (rows = the columns of ``Â``) the layer computes, for each hop ``o = 0..k``::

    H_o = norm_o( act( Â^o X W_o + b_o ) )

and combines them by column concatenation (``aggr='concat'``: ``H_0 ‖ H_1 ‖ … ‖ H_k``) or by
sum (``aggr='mean'``). ``Â^0 X`` is the layer's own rows of ``X``. ``bias='norm'`` is the
reference's per-node feature normalization with a learnable per-feature scale and offset::

    norm(h) = (h - mean(h)) / sqrt(var(h) + 1e-9) * scale + offset   (mean/var over features)

``bias='bias'`` keeps only ``b_o``; ``bias='none'`` drops it too. Order 0 is a dense layer.
With ``bias='norm'`` the tail ``norm(act(t + b))`` runs as one fused op
(:func:`scalegnn.ops.fused.bias_act_norm`: 2 passes each way on host float tensors instead of
~20 torch ops, same values and gradients; other devices/activations use the torch composition);
in a concat layer every hop term's tail writes its block of the output in place
(:func:`scalegnn.ops.fused.bias_act_norm_concat`), so neither pass copies a concatenation.
The product ``Â^o X W_o`` is associated by the narrower side (``ops.propagate_linear``).
"""

from __future__ import annotations

import torch
from torch import nn

from scalegnn.nn.dropout import FastDropout
from scalegnn.ops import SparseAdj, spmm
from scalegnn.ops.fused import FUSED_ACTS, bias_act_norm, bias_act_norm_concat

ACTIVATIONS = {
    "relu": torch.relu,
    "leaky_relu": torch.nn.functional.leaky_relu,
    "elu": torch.nn.functional.elu,
    "gelu": torch.nn.functional.gelu,
    "tanh": torch.tanh,
    "identity": lambda x: x,
    "I": lambda x: x,
}
AGGREGATIONS = ("concat", "mean")
BIASES = ("norm", "bias", "none")


class SAINTLayer(nn.Module):
    """One order-``order`` GraphSAINT layer mapping ``in_dim`` -> ``out_dim * (order+1)`` (concat)
    or ``out_dim`` (mean)."""

    def __init__(self, in_dim: int, out_dim: int, order: int = 1, aggr: str = "concat",
                 bias: str = "norm", act: str = "relu", dropout: float = 0.0):
        super().__init__()
        self.in_dim, self.out_dim, self.order = in_dim, out_dim, order
        self.aggr, self.bias = aggr, bias
        self.act = ACTIVATIONS[act]
        # the fused tail takes an activation by name ("I" is GraphSAINT's spelling of identity)
        self._fused_act = {"I": "identity"}.get(act, act) if act in FUSED_ACTS + ("I",) \
            else self.act
        self.dropout = FastDropout(dropout)   # nn.Dropout semantics, one parallel pass
        self.weights = nn.ParameterList(
            [nn.Parameter(torch.empty(in_dim, out_dim)) for _ in range(order + 1)])
        self.biases = nn.ParameterList(
            [nn.Parameter(torch.zeros(out_dim)) for _ in range(order + 1)]) if bias != "none" else None
        if bias == "norm":
            self.scales = nn.ParameterList([nn.Parameter(torch.ones(out_dim)) for _ in range(order + 1)])
            self.offsets = nn.ParameterList([nn.Parameter(torch.zeros(out_dim)) for _ in range(order + 1)])
        self.reset_parameters()

    def reset_parameters(self):
        for w in self.weights:
            nn.init.xavier_uniform_(w)
        if self.biases is not None:
            for b in self.biases:
                nn.init.zeros_(b)
        if self.bias == "norm":
            for s, o in zip(self.scales, self.offsets):
                nn.init.ones_(s)
                nn.init.zeros_(o)

    @property
    def output_dim(self) -> int:
        return self.out_dim * (self.order + 1) if self.aggr == "concat" else self.out_dim

    def hop_terms(self, x: torch.Tensor, adj: SparseAdj | None, num_rows: int) -> list[torch.Tensor]:
        """``[Â^o X W_o for o in 0..order]`` (before bias/act), each with ``num_rows`` rows.

        For ``o >= 1``, hops beyond the first need a square ``Â`` (``Â^o`` = repeated SpMM).
        The product is associated by the narrower side: when ``out_dim < in_dim`` it computes
        ``Â^o (X W_o)``, else ``(Â^o X) W_o``.
        """
        # a full-length slice still costs a zero-fill + copy in backward: skip it when it is one
        own = x if num_rows == x.shape[0] else x[:num_rows]
        terms = [own @ self.weights[0]]
        if self.order == 0:
            return terms
        # an input that is not a tensor is a feature store's CSR rows (scalegnn.features):
        # X W first, the only product it supports
        narrow_first = self.out_dim < self.in_dim or not isinstance(x, torch.Tensor)
        hop = x
        for o in range(1, self.order + 1):
            if narrow_first:
                h = x @ self.weights[o]
                for _ in range(o):
                    h = spmm(adj, h)
                terms.append(h)
            else:
                hop = spmm(adj, hop)
                terms.append(hop @ self.weights[o])
        return terms

    def combine(self, terms: list[torch.Tensor]) -> torch.Tensor:
        """bias, activation and normalization per hop term, then concat or sum."""
        if self.bias == "norm" and self.aggr == "concat":   # tails written in place: no cat
            return bias_act_norm_concat(terms, self.biases, self.scales, self.offsets,
                                        self._fused_act)
        out = []
        for o, t in enumerate(terms):
            if self.bias == "norm":
                out.append(bias_act_norm(t, self.biases[o], self.scales[o], self.offsets[o],
                                         self._fused_act))
                continue
            if self.biases is not None:
                t = t + self.biases[o]
            out.append(self.act(t))
        if self.aggr == "concat":
            return torch.cat(out, dim=1) if len(out) > 1 else out[0]
        return torch.stack(out).sum(0) if len(out) > 1 else out[0]

    def forward(self, x: torch.Tensor, adj: SparseAdj | None = None,
                num_rows: int | None = None) -> torch.Tensor:
        """``x`` has one row per column of ``adj``; the output has ``adj``'s rows (or
        ``num_rows``, the rows of ``x`` that are this layer's own nodes)."""
        if num_rows is None:
            num_rows = adj.num_rows if adj is not None else x.shape[0]
        x = self.dropout(x)
        return self.combine(self.hop_terms(x, adj, num_rows))

    def extra_repr(self) -> str:
        return (f"{self.in_dim}, {self.out_dim}, order={self.order}, aggr={self.aggr}, "
                f"bias={self.bias}")
