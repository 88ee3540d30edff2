"""Sparse-dense product ``Â·X`` with autograd: forward ``Â·X``, backward ``Âᵀ·G``."""

from __future__ import annotations

import torch

from scalegnn.ops.adj import SparseAdj


def _mm(adj: SparseAdj, x: torch.Tensor) -> torch.Tensor:
    return torch.sparse.mm(adj.torch_csr(x.device, x.dtype), x)


class _SpMM(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, adj):
        ctx.adj = adj
        return _mm(adj, x)

    @staticmethod
    def backward(ctx, grad):
        if not ctx.needs_input_grad[0]:
            return None, None
        return _mm(ctx.adj.t(), grad.contiguous()), None


def spmm(adj: SparseAdj, x: torch.Tensor) -> torch.Tensor:
    """``adj @ x`` for a (rows x cols) SparseAdj and a dense (cols x f) tensor."""
    if x.shape[0] != adj.num_cols:
        raise ValueError(f"spmm: x has {x.shape[0]} rows, adjacency has {adj.num_cols} columns")
    return _SpMM.apply(x.contiguous(), adj)
