"""Inverted dropout with a counter-based mask: one parallel pass each way.

``y = x · m / (1 − p)`` with ``m[i] = 1`` iff ``u[i] >= p``, where ``u[i] ∈ [0, 1)`` is the low
(even ``i``) or high (odd ``i``) 32 bits of ``splitmix64(key + ⌊i/2⌋·γ)`` (``i`` the flat
element index, ``key`` one 63-bit draw from torch's default generator per call). Same distribution as ``nn.Dropout`` (p rounded to a
multiple of 2^-32), but the mask is a pure function of (key, i): any thread count gives the same
numbers, and the pass is multi-threaded — torch's CPU ``bernoulli_`` is serial and costs about
one 5000x1024x512 GEMM per call at 2 threads (``scalegnn bench epoch``). Backward:
``g_x = g_y · m / (1 − p)``, with ``m`` kept as one bit per element (an eighth of the bytes
of a byte mask, and no slower either way; recomputing it from the hash in the backward cost
~1.6x the pass).

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
def _u32(key, i):
    """u[i]: the low (even i) or high (odd i) half of the pair's hash."""
    z = splitmix64(key + np.uint64(i // 2) * SPLITMIX_GAMMA)
    return (z >> np.uint64(32)) if i % 2 else (z & _LO)


@nb.njit(parallel=True, cache=True, nogil=True, boundscheck=False)
def _dropout_fwd(x, y, bits, key, threshold, scale, chunks):
    """Flat contiguous x -> y, and the kept elements as bits (element i is bit i % 8 of
    ``bits[i // 8]``); task c covers elements [chunks[c], chunks[c+1]) (bounds multiples of 8
    but the last); one hash serves two elements, four make a byte."""
    n = x.shape[0]
    for c in nb.prange(chunks.shape[0] - 1):
        for b in range(chunks[c] // 8, chunks[c + 1] // 8):
            acc = np.uint8(0)
            for h in range(4):
                k = 4 * b + h
                z = splitmix64(key + np.uint64(k) * SPLITMIX_GAMMA)
                k0 = (z & _LO) >= threshold
                k1 = (z >> np.uint64(32)) >= threshold
                y[2 * k] = x[2 * k] * (scale * k0)     # branch-free
                y[2 * k + 1] = x[2 * k + 1] * (scale * k1)
                acc |= (np.uint8(k0) << np.uint8(2 * h)) | (np.uint8(k1) << np.uint8(2 * h + 1))
            bits[b] = acc
    tail = n - n % 8   # the last, partial byte
    if tail < n:
        acc = np.uint8(0)
        for i in range(tail, n):
            keep = _u32(key, i) >= threshold
            y[i] = x[i] * (scale * keep)
            acc |= np.uint8(keep) << np.uint8(i - tail)
        bits[tail // 8] = acc


@nb.njit(cache=True, nogil=True, inline="always")
def _bit(m, t):
    return np.float32((m >> np.uint8(t)) & np.uint8(1))


@nb.njit(parallel=True, cache=True, nogil=True, boundscheck=False)
def _dropout_bwd(g, bits, gx, scale, chunks):
    n = g.shape[0]
    for c in nb.prange(chunks.shape[0] - 1):
        for b in range(chunks[c] // 8, chunks[c + 1] // 8):
            m = bits[b]
            for t in range(8):
                gx[8 * b + t] = g[8 * b + t] * (scale * _bit(m, t))
    tail = n - n % 8
    for i in range(tail, n):
        gx[i] = g[i] * (scale * _bit(bits[tail // 8], i - tail))


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
    bounds = np.linspace(0, n, parts + 1).astype(np.int64) & ~np.int64(7)  # whole mask bytes
    bounds[-1] = n
    return bounds


class _Dropout(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, p, key):
        xc = x.detach().contiguous()
        flat = xc.numpy().reshape(-1)
        y = torch.empty_like(xc)
        mask = np.empty((flat.shape[0] + 7) // 8, dtype=np.uint8)
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
