"""Inverted dropout with a counter-based mask: one parallel pass each way.

``y = x · m / (1 − p)`` with ``m[i] = 1`` iff ``u[i] >= p``, where ``u[i] ∈ [0, 1)`` is the low
(even ``i``) or high (odd ``i``) 32 bits of ``splitmix64(key + ⌊i/2⌋·γ)`` (``i`` the flat
element index, ``key`` one 63-bit draw from torch's default generator per call). Same distribution as ``nn.Dropout`` (p rounded to a
multiple of 2^-32), but the mask is a pure function of (key, i): any thread count gives the same
numbers, and the pass is multi-threaded — torch's CPU ``bernoulli_`` is serial and costs about
one 5000x1024x512 GEMM per call at 2 threads (``scalegnn bench epoch``). Backward:
``g_x = g_y · m / (1 − p)``, with ``m`` kept as one byte per element.

:class:`FastDropout` is a drop-in ``nn.Dropout``: host float32/float64 tensors in training mode
take the kernel, anything else (eval mode, p = 0, CUDA, other dtypes) the torch module.
:func:`dropout_mask_reference` is the slow obviously-correct mask for tests.
"""

from __future__ import annotations

import numba as nb
import numpy as np
import torch
from torch import nn

SPLITMIX_GAMMA = np.uint64(0x9E3779B97F4A7C15)   # also keys scalegnn.dist's boundary draws
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_LO = np.uint64(0xFFFFFFFF)


@nb.njit(cache=True, nogil=True, inline="always")
def splitmix64(z):
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


@nb.njit(cache=True, nogil=True, inline="always")
def _keep(x, y, mask, i, u, threshold, scale):
    keep = u >= threshold
    mask[i] = keep
    y[i] = x[i] * (scale * keep)     # branch-free: the loop vectorizes


@nb.njit(parallel=True, cache=True, nogil=True, boundscheck=False)
def _dropout_fwd(x, y, mask, key, threshold, scale, chunks):
    """Flat contiguous x -> y, mask (uint8); task c covers elements [chunks[c], chunks[c+1])
    (even bounds but the last); one hash serves two elements."""
    n = x.shape[0]
    for c in nb.prange(chunks.shape[0] - 1):
        for k in range(chunks[c] // 2, chunks[c + 1] // 2):
            z = splitmix64(key + np.uint64(k) * SPLITMIX_GAMMA)
            _keep(x, y, mask, 2 * k, z & _LO, threshold, scale)
            _keep(x, y, mask, 2 * k + 1, z >> np.uint64(32), threshold, scale)
    if n % 2 == 1:
        z = splitmix64(key + np.uint64(n // 2) * SPLITMIX_GAMMA)
        _keep(x, y, mask, n - 1, z & _LO, threshold, scale)


@nb.njit(parallel=True, cache=True, nogil=True, boundscheck=False)
def _dropout_bwd(g, mask, gx, scale, chunks):
    for c in nb.prange(chunks.shape[0] - 1):
        for i in range(chunks[c], chunks[c + 1]):
            gx[i] = g[i] * (scale * np.float32(mask[i]))


def _threshold(p: float) -> np.uint64:
    return np.uint64(min(int(round(p * 2.0**32)), 2**32))


def dropout_mask_reference(n: int, p: float, key: int) -> np.ndarray:
    """The kept-element mask of a call with ``key`` (pure Python ints; slow)."""
    out = np.empty(n, dtype=bool)
    mask64 = (1 << 64) - 1
    thr = int(_threshold(p))
    for i in range(n):
        z = (key + (i // 2) * int(SPLITMIX_GAMMA)) & mask64
        z = ((z ^ (z >> 30)) * int(_M1)) & mask64
        z = ((z ^ (z >> 27)) * int(_M2)) & mask64
        z ^= z >> 31
        u = (z >> 32) if i % 2 else (z & 0xFFFFFFFF)
        out[i] = u >= thr
    return out


def _chunks(n: int) -> np.ndarray:
    # a fixed number of equal tasks (not one per thread): results never depend on threads
    parts = max(1, min(64, n // 4096))
    bounds = np.linspace(0, n, parts + 1).astype(np.int64) & ~np.int64(1)  # even: whole pairs
    bounds[-1] = n
    return bounds


class _Dropout(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, p, key):
        xc = x.detach().contiguous()
        flat = xc.numpy().reshape(-1)
        y = torch.empty_like(xc)
        mask = np.empty(flat.shape[0], dtype=np.uint8)
        scale = flat.dtype.type(1.0 / (1.0 - p))
        chunks = _chunks(flat.shape[0])
        _dropout_fwd(flat, y.numpy().reshape(-1), mask, np.uint64(key), _threshold(p), scale,
                     chunks)
        ctx.mask, ctx.scale, ctx.chunks = mask, scale, chunks
        return y

    @staticmethod
    def backward(ctx, gy):
        g = gy.contiguous()
        gx = torch.empty_like(g)
        _dropout_bwd(g.numpy().reshape(-1), ctx.mask, gx.numpy().reshape(-1), ctx.scale,
                     ctx.chunks)
        return gx, None, None


def fast_dropout(x: torch.Tensor, p: float, key: int | None = None) -> torch.Tensor:
    """Training-mode inverted dropout of a host float tensor (``key``: None draws one from
    torch's default generator, so ``torch.manual_seed`` fixes the masks)."""
    if key is None:
        key = int(torch.randint(0, 2**63 - 1, (1,), dtype=torch.int64).item())
    return _Dropout.apply(x, float(p), key)


class FastDropout(nn.Dropout):
    """``nn.Dropout`` that runs :func:`fast_dropout` where it applies (see module docstring)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if (self.training and 0.0 < self.p < 1.0 and not self.inplace
                and isinstance(x, torch.Tensor)   # CSR features: nn.Dropout dispatches to them
                and x.device.type == "cpu" and x.dtype in (torch.float32, torch.float64)
                and x.numel() > 0):
            return fast_dropout(x, self.p)
        return super().forward(x)
