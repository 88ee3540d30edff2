"""Which path an op takes: host float tensors run the numba kernels (SpMM, the fused layer tail,
L2 normalization, dropout, GAT's attention SpMM, Adam); tensors on any other device run torch
ops, which is what a GPU executes.

:func:`torch_ops` switches the kernels off for a block, so that a CPU runs the GPU's code path:
``tests/test_torch_path.py`` checks every model family's gradients on it against the kernels',
which is how CI (no GPU) keeps the CUDA path honest; ``benchmarks/cuda_check.py`` checks the
same on a real GPU. Process-wide; not for use while other threads train.
"""

from __future__ import annotations

import contextlib

_STATE = {"kernels": True}


def on_host(*tensors) -> bool:
    """Whether ``tensors`` (all of them) take the numba kernels: host tensors, kernels on."""
    return _STATE["kernels"] and all(t.device.type == "cpu" for t in tensors)


@contextlib.contextmanager
def torch_ops():
    """Run the block's ops as torch ops, as on a GPU (the kernels' own tests compare them)."""
    saved = _STATE["kernels"]
    _STATE["kernels"] = False
    try:
        yield
    finally:
        _STATE["kernels"] = saved
