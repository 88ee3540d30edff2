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
Both passes go 16 elements at a time as LLVM vector IR (:func:`_drop16`, :func:`_undrop16`:
8 hashes in one vector, the keep mask compared in one go and stored as two bytes, the backward
reading two mask bytes as a 16-lane select): 4-6x the forward's speed and ~2x the backward's of
the scalar loops they replace (6229 x 1024 float32, 2 threads), same bits out.

:class:`FastDropout` is a drop-in ``nn.Dropout``: host float32/float64 tensors in training mode
take the kernel, anything else (eval mode, p = 0, CUDA, other dtypes) the torch module.
:func:`dropout_mask_reference` is the slow obviously-correct mask for tests.
"""

from __future__ import annotations

import numba as nb
import numpy as np
import torch
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic
from torch import nn

from scalegnn.ops._vector_ir import I1, I16, I32, I64, VectorIR, lanes, splat
from scalegnn.ops.route import on_host

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


@intrinsic
def _drop16(typingctx, x, y, bits, i, key, threshold, scale):
    """Elements ``i .. i+15`` (``i`` a multiple of 16): their 8 pair hashes as one <8 x i64>
    splitmix64, read as 16 u32 (lane 2h the low half of hash h: little-endian), the keep
    mask ``u >= threshold`` stored as 2 bytes of ``bits``, ``y = x · (keep ? scale : 0)``.
    LLVM does not vectorize this from the scalar loop (the mask bits, the pair halves)."""
    def codegen(context, builder, signature, args):
        xv, yv, bv, i_, key_, thr_, sc_ = args
        g = VectorIR(context, builder, signature)
        vf = lanes(context.get_value_type(signature.args[0].dtype), 16)
        z = builder.add(g.vec(builder.add(key_, builder.mul(builder.lshr(i_, I64(1)),
                                                            I64(int(SPLITMIX_GAMMA)))), 8),
                        ir.Constant(lanes(I64, 8), [h * int(SPLITMIX_GAMMA) % 2**64
                                                    for h in range(8)]))
        for shift, mult in ((30, _M1), (27, _M2)):
            z = builder.mul(builder.xor(z, builder.lshr(z, splat(I64, shift, 8))),
                            splat(I64, int(mult), 8))
        z = builder.xor(z, builder.lshr(z, splat(I64, 31, 8)))
        u = builder.zext(builder.bitcast(z, lanes(I32, 16)), lanes(I64, 16))
        keep = builder.icmp_unsigned(">=", u, g.vec(thr_, 16))
        builder.store(builder.bitcast(keep, I16), g.ptr(2, bv, builder.lshr(i_, I64(3)), I16),
                      align=1)
        factor = builder.select(keep, g.vec(sc_, 16), ir.Constant(vf, [0.0] * 16))
        builder.store(builder.fmul(g.load(0, xv, i_, vf, 4), factor), g.ptr(1, yv, i_, vf),
                      align=4)
        return context.get_dummy_value()

    return types.void(x, y, bits, types.uint64, types.uint64, types.uint64, x.dtype), codegen


@intrinsic
def _undrop16(typingctx, g, bits, gx, i, scale):
    """``gx[i:i+16] = g[i:i+16] · (bit ? scale : 0)``, the 16 bits read as one i16 mask."""
    def codegen(context, builder, signature, args):
        gv, bv, gxv, i_, sc_ = args
        ir_ = VectorIR(context, builder, signature)
        vf = lanes(context.get_value_type(signature.args[0].dtype), 16)
        keep = builder.bitcast(ir_.load(1, bv, builder.lshr(i_, I64(3)), I16, 1),
                               lanes(I1, 16))
        factor = builder.select(keep, ir_.vec(sc_, 16), ir.Constant(vf, [0.0] * 16))
        builder.store(builder.fmul(ir_.load(0, gv, i_, vf, 4), factor), ir_.ptr(2, gxv, i_, vf),
                      align=4)
        return context.get_dummy_value()

    return types.void(g, bits, gx, types.uint64, g.dtype), codegen


@nb.njit(parallel=True, cache=True, nogil=True, boundscheck=False)
def _dropout_fwd(x, y, bits, key, threshold, scale, chunks):
    """Flat contiguous x -> y, and the kept elements as bits (element i is bit i % 8 of
    ``bits[i // 8]``); task c covers elements [chunks[c], chunks[c+1]) (bounds multiples of
    16 but the last), 16 at a time (:func:`_drop16`), the last < 16 one by one."""
    n = x.shape[0]
    full = n - n % 16
    for c in nb.prange(chunks.shape[0] - 1):
        for i in range(chunks[c], min(chunks[c + 1], full), 16):
            _drop16(x, y, bits, np.uint64(i), key, threshold, scale)
    for b in range(full // 8, bits.shape[0]):
        bits[b] = 0
    for i in range(full, n):
        keep = _u32(key, i) >= threshold
        y[i] = x[i] * (scale * keep)
        bits[i // 8] |= np.uint8(keep) << np.uint8(i % 8)


@nb.njit(cache=True, nogil=True, inline="always")
def _bit(m, t):
    return np.float32((m >> np.uint8(t)) & np.uint8(1))


@nb.njit(parallel=True, cache=True, nogil=True, boundscheck=False)
def _dropout_bwd(g, bits, gx, scale, chunks):
    n = g.shape[0]
    full = n - n % 16
    for c in nb.prange(chunks.shape[0] - 1):
        for i in range(chunks[c], min(chunks[c + 1], full), 16):
            _undrop16(g, bits, gx, np.uint64(i), scale)
    for i in range(full, n):
        gx[i] = g[i] * (scale * _bit(bits[i // 8], i % 8))


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
    bounds = np.linspace(0, n, parts + 1).astype(np.int64) & ~np.int64(15)  # 16-element blocks
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
                and on_host(x) and x.dtype in (torch.float32, torch.float64)
                and x.numel() > 0):
            return fast_dropout(x, self.p)
        return super().forward(x)
