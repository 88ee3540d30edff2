"""Matrix-chain ordering for a graph convolution ``Â X W`` (SPEC §2.2)."""

from __future__ import annotations

import torch

from scalegnn.errors import ConfigError
from scalegnn.ops.adj import SparseAdj
from scalegnn.ops.spmm import spmm

ORDERS = ("auto", "propagate_first", "transform_first")


def chain_order(f_in: int, f_out: int) -> str:
    """Which side to multiply first for ``Â (n x n) · X (n x f_in) · W (f_in x f_out)``.

    (ÂX)W costs nnz·f_in + n·f_in·f_out, Â(XW) costs nnz·f_out + n·f_in·f_out: the SpMM should
    run on the narrower of X and XW. Ties propagate first (no difference in cost).
    """
    return "transform_first" if f_out < f_in else "propagate_first"


def propagate_linear(adj: SparseAdj, x: torch.Tensor, weight: torch.Tensor, *,
                     order: str = "auto") -> torch.Tensor:
    """``Â · X · W`` with the cheaper association (``order='auto'``) or a forced one.

    ``weight`` is (f_in, f_out). Autograd follows the same order backward: for
    ``transform_first`` the backward SpMM ``Âᵀ G`` also runs on f_out columns, for
    ``propagate_first`` on f_in columns, so the narrow side is the sparse side both ways.
    """
    if order not in ORDERS:
        raise ConfigError(f"propagate_linear: order must be one of {', '.join(ORDERS)}, "
                          f"got {order!r}")
    f_in, f_out = weight.shape
    if order == "auto":
        # CSR features (scalegnn.features) only multiply dense weights: X W first
        order = chain_order(f_in, f_out) if isinstance(x, torch.Tensor) else "transform_first"
    if order == "transform_first":
        return spmm(adj, x @ weight)
    return spmm(adj, x) @ weight
