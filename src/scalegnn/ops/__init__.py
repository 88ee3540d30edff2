"""Propagation kernels: SpMM with autograd over a SparseAdj."""
from scalegnn.ops.adj import SparseAdj
from scalegnn.ops.chain import propagate_linear
from scalegnn.ops.spmm import spmm

__all__ = ["SparseAdj", "spmm", "propagate_linear"]
