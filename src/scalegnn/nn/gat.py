"""Multi-head graph attention layer (Veličković et al., GAT) over the pattern of ``Â``.

For head ``k`` with ``z_u = W_k h_u`` (``F'`` = ``out_dim`` features), destination ``v`` (a row
of ``Â``) and source ``u`` (a column; the stored entries of row ``v``, plus ``v`` itself when
``self_loops``)::

    e_vu = LeakyReLU_0.2( a_kᵀ [z_v ‖ z_u] ) = LeakyReLU( a_dst,k · z_v + a_src,k · z_u )
    α_vu = exp(e_vu) / Σ_{w ∈ N(v)} exp(e_vw)            (softmax per destination row)
    h'_v,k = Σ_{u ∈ N(v)} α_vu z_u

then ``H' = tail(h'_1 ‖ … ‖ h'_K)`` (heads concatenated, width ``heads·out_dim``) or, with
``concat=False``, ``tail(mean_k h'_k)`` (width ``out_dim``). ``tail`` is bias + activation
(+ GraphSAINT's feature norm with ``bias='norm'``, see :mod:`scalegnn.nn.tail`).

Only the *pattern* of ``Â`` is used: its values (GraphSAINT's ``D⁻¹A·α``) are ignored, the
attention is the aggregator. Destinations are the first ``adj.num_rows`` rows of ``H`` (the
rows of a rectangular ``Â`` are its first columns), so the self loop of row ``v`` is column
``v``; stored diagonal entries are dropped in favour of that one self term.

Softmax is a segment softmax over each row's entries with the row maximum subtracted (a
constant shift per row: same values, no overflow). The aggregation ``Σ_u α_vu z_u`` is
:func:`attention_spmm`: on host float tensors one SpMM per head with the attention as the values
of a SparseAdj sharing ``Â``'s pattern (the kernels of :mod:`scalegnn.ops.spmm`), backward
``g_z = Attᵀ g`` (SpMM over the transposed pattern, attention permuted) and
``g_α_vu = g_v · z_u`` (SDDMM, one head at a time); elsewhere (CUDA, other dtypes) a gather +
``index_add`` that keeps entries × heads × out_dim values for autograd.
"""

from __future__ import annotations

import weakref

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from scalegnn.graph import Graph
from scalegnn.nn.tail import LayerTail
from scalegnn.ops import SparseAdj
from scalegnn.ops.route import on_host
from scalegnn.ops.spmm import spmm_forward

_TRANSPOSES = weakref.WeakKeyDictionary()   # SparseAdj -> (transposed pattern, value permutation)


def edge_rows(adj: SparseAdj, device=None) -> tuple[torch.Tensor, torch.Tensor]:
    """(destination row, source column) of every stored entry, as int64 tensors."""
    deg = torch.from_numpy(np.diff(adj.indptr))
    rows = torch.repeat_interleave(torch.arange(adj.num_rows), deg)
    cols = torch.from_numpy(adj.indices.astype(np.int64, copy=False))
    return rows.to(device), cols.to(device)


def segment_softmax(e: torch.Tensor, rows: torch.Tensor, num_rows: int,
                    self_e: torch.Tensor | None = None):
    """Softmax of ``e`` (entries x heads) within each row; ``self_e`` (num_rows x heads): one
    extra logit per row. Returns (entry weights, self weights or None)."""
    heads = e.shape[1]
    idx = rows[:, None].expand(-1, heads)
    init = self_e if self_e is not None else e.new_full((num_rows, heads), float("-inf"))
    m = init.scatter_reduce(0, idx, e, reduce="amax", include_self=True).detach()
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))   # empty rows
    p = torch.exp(e - m[rows])
    denom = torch.zeros_like(m).index_add_(0, rows, p)
    p_self = None
    if self_e is not None:
        p_self = torch.exp(self_e - m)
        denom = denom + p_self
        p_self = p_self / denom
    denom = torch.where(denom > 0, denom, torch.ones_like(denom))
    return p / denom[rows], p_self


class GATLayer(nn.Module):
    """``heads`` attention heads of width ``out_dim``, concatenated (or averaged)."""

    def __init__(self, in_dim: int, out_dim: int, heads: int = 4, concat: bool = True,
                 bias: str = "bias", act: str = "elu", dropout: float = 0.0,
                 negative_slope: float = 0.2, self_loops: bool = True):
        super().__init__()
        self.in_dim, self.out_dim, self.heads, self.concat = in_dim, out_dim, int(heads), concat
        self.negative_slope, self.self_loops = negative_slope, self_loops
        self.weight = nn.Parameter(torch.empty(in_dim, self.heads * out_dim))
        self.att_src = nn.Parameter(torch.empty(self.heads, out_dim))
        self.att_dst = nn.Parameter(torch.empty(self.heads, out_dim))
        self.tail = LayerTail(self.output_dim, bias, act)
        self.dropout = nn.Dropout(dropout)
        self.reset_parameters()

    @property
    def output_dim(self) -> int:
        return self.heads * self.out_dim if self.concat else self.out_dim

    def reset_parameters(self):
        nn.init.xavier_uniform_(self.weight)
        # a_k as one (2·F') x 1 vector per head, Glorot-initialized like GAT's reference
        for a in (self.att_src, self.att_dst):
            bound = float(np.sqrt(6.0 / (2 * self.out_dim + 1)))
            nn.init.uniform_(a, -bound, bound)
        self.tail.reset_parameters()

    def attention(self, z: torch.Tensor, adj: SparseAdj):
        """(entry weights α_vu: nnz x heads, self weights α_vv: rows x heads or None, rows,
        cols) for ``z`` = ``H W`` viewed as (num_cols, heads, out_dim)."""
        n = adj.num_rows
        rows, cols = edge_rows(adj, z.device)
        s_src = (z * self.att_src).sum(-1)                  # (num_cols, heads)
        s_dst = (z[:n] * self.att_dst).sum(-1)              # (num_rows, heads)
        e = F.leaky_relu(s_dst[rows] + s_src[cols], self.negative_slope)
        self_e = None
        if self.self_loops:
            self_e = F.leaky_relu(s_dst + s_src[:n], self.negative_slope)
            # the self term replaces any stored diagonal entry
            e = e.masked_fill((rows == cols)[:, None], float("-inf"))
        alpha, alpha_self = segment_softmax(e, rows, n, self_e)
        return alpha, alpha_self, rows, cols

    def forward(self, x: torch.Tensor, adj: SparseAdj) -> torch.Tensor:
        """``x``: one row per column of ``adj``; output: one row per row of ``adj``."""
        n = adj.num_rows
        z = (self.dropout(x) @ self.weight).view(-1, self.heads, self.out_dim)
        alpha, alpha_self, rows, cols = self.attention(z, adj)
        out = attention_spmm(adj, alpha, z, rows, cols)
        if alpha_self is not None:
            out = out + alpha_self[:, :, None] * z[:n]
        out = out.reshape(n, -1) if self.concat else out.mean(dim=1)
        return self.tail(out)

    def extra_repr(self) -> str:
        return (f"{self.in_dim}, {self.out_dim}, heads={self.heads}, concat={self.concat}, "
                f"self_loops={self.self_loops}")


def _transpose_of(adj: SparseAdj):
    """(transposed pattern as a Graph, perm with ``values_T = values[perm]``), cached per adj."""
    if adj not in _TRANSPOSES:
        perm = np.arange(adj.nnz, dtype=np.int64)
        _TRANSPOSES[adj] = Graph(adj.indptr, adj.indices, adj.num_cols, perm,
                                 validate=False).transpose()
    gt = _TRANSPOSES[adj]
    return gt, gt.data


def _head_adj(indptr, indices, values: torch.Tensor, num_cols: int) -> SparseAdj:
    return SparseAdj(indptr, indices, values.detach().contiguous().numpy(), num_cols)


class _AttentionSpMM(torch.autograd.Function):
    """``out[:, k] = Att_k z[:, k]`` per head, Att_k = ``Â``'s pattern with values ``alpha[:, k]``."""

    @staticmethod
    def forward(ctx, alpha, z, adj, rows, cols):
        ctx.save_for_backward(alpha, z)
        ctx.adj, ctx.rows, ctx.cols = adj, rows, cols
        heads = z.shape[1]
        return torch.stack([spmm_forward(_head_adj(adj.indptr, adj.indices, alpha[:, k],
                                                   adj.num_cols), z[:, k].contiguous())
                            for k in range(heads)], dim=1)

    @staticmethod
    def backward(ctx, g):
        alpha, z = ctx.saved_tensors
        adj, rows, cols = ctx.adj, ctx.rows, ctx.cols
        heads = z.shape[1]
        g_alpha = g_z = None
        if ctx.needs_input_grad[0]:      # SDDMM g_α[e] = g[row_e] · z[col_e], one head at a time
            g_alpha = torch.stack([(g[:, k][rows] * z[:, k][cols]).sum(-1) for k in range(heads)],
                                  dim=1)
        if ctx.needs_input_grad[1]:      # Attᵀ g over the transposed pattern
            gt, perm = _transpose_of(adj)
            perm = torch.from_numpy(perm)
            g_z = torch.stack([spmm_forward(_head_adj(gt.indptr, gt.indices, alpha[perm, k],
                                                      adj.num_rows), g[:, k].contiguous())
                               for k in range(heads)], dim=1)
        return g_alpha, g_z, None, None, None


def attention_spmm(adj: SparseAdj, alpha: torch.Tensor, z: torch.Tensor, rows: torch.Tensor,
                   cols: torch.Tensor, kernel: str = "auto") -> torch.Tensor:
    """``out[v, k] = Σ_e∈row v alpha[e, k] · z[cols[e], k]`` (rows x heads x f), differentiable
    in ``alpha`` (entries x heads) and ``z`` (cols x heads x f). ``kernel='auto'``: SpMM kernels
    on host float32/float64 tensors, else (or ``'torch'``) gather + ``index_add``."""
    host = (on_host(z, alpha) and z.dtype in (torch.float32, torch.float64)
            and alpha.dtype == z.dtype)
    if kernel == "auto" and host:
        return _AttentionSpMM.apply(alpha, z, adj, rows, cols)
    out = z.new_zeros(adj.num_rows, z.shape[1], z.shape[2])
    return out.index_add(0, rows, alpha[:, :, None] * z[cols])
