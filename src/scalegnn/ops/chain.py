"""Matrix-chain ordering for a graph convolution ``Â X W`` (SPEC §2.2)."""

from __future__ import annotations

import torch

from scalegnn.ops.adj import SparseAdj
from scalegnn.ops.spmm import spmm


def propagate_linear(adj: SparseAdj, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """``Â · X · W`` with the cheaper association.

    (ÂX)W costs nnz·f_in + n·f_in·f_out, Â(XW) costs nnz·f_out + n·f_in·f_out: multiply by the
    narrower side first. ``weight`` is (f_in, f_out). Autograd follows the same order backward.
    """
    f_in, f_out = weight.shape
    if f_out < f_in:
        return spmm(adj, x @ weight)
    return spmm(adj, x) @ weight
