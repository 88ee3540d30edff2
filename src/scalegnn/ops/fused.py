"""Fused layer tail ``y = norm(act(t + b))·scale + offset`` (GraphSAINT ``bias: norm``).

``norm(h) = (h − mean(h)) / sqrt(var(h) + 1e-9)`` over each row's features (population
variance), ``act`` ∈ {relu, identity}. Same values and gradients as the composition of torch
ops (:func:`bias_act_norm_reference`), in two passes over the n x d data each way instead of
~8 forward and ~12 backward: the elementwise tail is most of the non-GEMM time of a training
iteration of the reference model (``scalegnn bench step``). Backward, with ŷ the normalized
row, r = 1/σ and gŷ = gy·scale::

    g_a = r · (gŷ − mean(gŷ) − ŷ · mean(gŷ·ŷ)) · [a > 0],   g_t = g_a,  g_b = Σ_rows g_a,
    g_scale = Σ_rows gy·ŷ,   g_offset = Σ_rows gy.

Host float32/float64 tensors use the numba kernels; anything else (CUDA, other dtypes,
other activations) uses the reference composition.

:func:`l2_normalize` is the models' embedding normalize (``F.normalize(h, p=2, dim=1)``) fused
the same way: two passes over n x d each way instead of ~3 forward and ~9 backward.
"""

from __future__ import annotations

import numpy as np
import torch

from scalegnn.ops import _kernels as K
from scalegnn.ops.spmm import num_threads

FUSED_ACTS = ("relu", "identity")


def bias_act_norm_reference(t, bias, scale, offset, act="relu"):
    """The torch composition the fused kernel must match (``act``: a name in
    :data:`FUSED_ACTS` or any callable)."""
    h = t + bias if bias is not None else t
    if callable(act):
        h = act(h)
    elif act == "relu":
        h = torch.relu(h)
    mean = h.mean(dim=1, keepdim=True)
    var = h.var(dim=1, unbiased=False, keepdim=True) + 1e-9
    return (h - mean) * torch.rsqrt(var) * scale + offset


def _bounds(n: int, p: int) -> np.ndarray:
    parts = max(1, min(p, n))
    return np.linspace(0, n, parts + 1).astype(np.int64)


class _BiasActNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, t, bias, scale, offset, relu):
        t = t.contiguous()
        n, d = t.shape
        y = torch.empty_like(t)
        mean = np.empty(n)
        rstd = np.empty(n)
        bounds = _bounds(n, num_threads())
        tn = t.detach().numpy()
        dt = tn.dtype
        K.bias_relu_norm_fwd(tn, bias.detach().numpy().astype(dt, copy=False),
                             scale.detach().numpy().astype(dt, copy=False),
                             offset.detach().numpy().astype(dt, copy=False),
                             y.numpy(), mean, rstd, bounds, relu)
        ctx.save_for_backward(t, bias, scale)
        ctx.stats = (mean, rstd, bounds, relu)
        return y

    @staticmethod
    def backward(ctx, gy):
        t, bias, scale = ctx.saved_tensors
        mean, rstd, bounds, relu = ctx.stats
        gy = gy.contiguous()
        gt = torch.empty_like(t)
        parts = np.empty((bounds.shape[0] - 1, 3, t.shape[1]))
        tn = t.detach().numpy()
        dt = tn.dtype
        K.bias_relu_norm_bwd(tn, bias.detach().numpy().astype(dt, copy=False),
                             scale.detach().numpy().astype(dt, copy=False), mean, rstd,
                             gy.numpy(), gt.numpy(), parts, bounds, relu)
        sums = torch.from_numpy(parts.sum(axis=0))     # chunk order: deterministic
        return (gt, sums[2].to(bias.dtype), sums[0].to(scale.dtype), sums[1].to(scale.dtype),
                None)


def bias_act_norm(t: torch.Tensor, bias, scale: torch.Tensor, offset: torch.Tensor,
                  act="relu") -> torch.Tensor:
    """``norm(act(t + bias))·scale + offset`` for a 2-D ``t`` (bias may be None; ``act`` a name
    in :data:`FUSED_ACTS`, ``torch.relu``, or any callable, which runs unfused)."""
    if act is torch.relu:
        act = "relu"
    fused = (t.device.type == "cpu" and t.dtype in (torch.float32, torch.float64)
             and t.dim() == 2 and isinstance(act, str) and act in FUSED_ACTS and t.shape[1] > 0
             and all(p is None or p.device.type == "cpu" for p in (bias, scale, offset)))
    if not fused:
        return bias_act_norm_reference(t, bias, scale, offset, act)
    if bias is None:
        bias = torch.zeros(t.shape[1], dtype=t.dtype)
    return _BiasActNorm.apply(t, bias, scale, offset, act == "relu")


class _L2Normalize(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, eps):
        x = x.contiguous()
        y = torch.empty_like(x)
        inv = np.empty(x.shape[0])
        bounds = _bounds(x.shape[0], num_threads())
        K.l2_normalize_fwd(x.detach().numpy(), y.numpy(), inv, bounds, float(eps))
        ctx.save_for_backward(y)
        ctx.stats = (inv, bounds)
        return y

    @staticmethod
    def backward(ctx, gy):
        (y,) = ctx.saved_tensors
        inv, bounds = ctx.stats
        gy = gy.contiguous()
        gx = torch.empty_like(y)
        K.l2_normalize_bwd(y.detach().numpy(), gy.numpy(), gx.numpy(), inv, bounds)
        return gx, None


def l2_normalize(x: torch.Tensor, eps: float = 1e-12) -> torch.Tensor:
    """``F.normalize(x, p=2, dim=1, eps=eps)``: ``y = x / max(‖x‖₂, eps)`` per row, same values
    and gradients (``g_x = (g − y·(g·y)) / ‖x‖``; ``g / eps`` where the norm is below eps) in
    two passes each way instead of torch's ~3 forward and ~9 backward. Host float32/float64
    2-D tensors take the numba kernels; anything else runs ``F.normalize``."""
    if x.device.type != "cpu" or x.dtype not in (torch.float32, torch.float64) \
            or x.dim() != 2 or x.shape[1] == 0 or x.shape[0] == 0:
        return torch.nn.functional.normalize(x, p=2, dim=1, eps=eps)
    return _L2Normalize.apply(x, eps)
