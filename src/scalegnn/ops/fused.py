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
other activations) runs :func:`torch_tail`: ``act(t + b)``, then ``F.layer_norm``, which is
the same formula (population variance, eps inside the root) in one normalization kernel each
way on a GPU, where the composition launched ~10 forward and ~15 backward kernels per term.

:func:`l2_normalize` is the models' embedding normalize (``F.normalize(h, p=2, dim=1)``) fused
the same way: two passes over n x d each way instead of ~3 forward and ~9 backward.
"""

from __future__ import annotations

import numpy as np
import torch

from scalegnn.ops import _fused_kernels as K
from scalegnn.ops.route import on_host
from scalegnn.ops.spmm import num_threads

FUSED_ACTS = ("relu", "identity")


def _bias_act(t, bias, act):
    """``act(t + bias)`` (``act``: a name in :data:`FUSED_ACTS` or any callable)."""
    h = t + bias if bias is not None else t
    if callable(act):
        return act(h)
    return torch.relu(h) if act == "relu" else h


def bias_act_norm_reference(t, bias, scale, offset, act="relu"):
    """The torch composition the fused kernel must match (``act``: a name in
    :data:`FUSED_ACTS` or any callable)."""
    h = _bias_act(t, bias, act)
    mean = h.mean(dim=1, keepdim=True)
    var = h.var(dim=1, unbiased=False, keepdim=True) + 1e-9
    return (h - mean) * torch.rsqrt(var) * scale + offset


def torch_tail(t, bias, scale, offset, act="relu"):
    """:func:`bias_act_norm_reference`'s values with torch's layer norm (the unfused path)."""
    h = _bias_act(t, bias, act)
    return torch.nn.functional.layer_norm(h, (h.shape[1],), scale, offset, eps=1e-9)


def _bounds(n: int, p: int) -> np.ndarray:
    """Row chunks, one per thread, cut at multiples of the backward's row block
    (``_fused_kernels._TAIL_BLOCK``): its blocks then hold the same rows at any thread count,
    and so do their float32 column sums."""
    parts = max(1, min(p, n // K._TAIL_BLOCK))
    bounds = np.linspace(0, n, parts + 1).astype(np.int64) // K._TAIL_BLOCK * K._TAIL_BLOCK
    bounds[-1] = n
    return bounds


def _as(p: torch.Tensor, dtype) -> np.ndarray:
    return p.detach().numpy().astype(dtype, copy=False)


class _BiasActNorm(torch.autograd.Function):
    """Terms t_o (n x d_o) -> ``[tail(t_0) | ... | tail(t_{K-1})]`` (n x Σ d_o): each term's
    tail is written straight into its column block of the output, and its backward reads its
    block of the output gradient in place, so a concat layer pays no concatenation copy in
    either direction. Arguments after ``relu``: the K terms, then their biases, scales,
    offsets."""

    @staticmethod
    def forward(ctx, relu, *args):
        k = len(args) // 4
        terms = [t.contiguous() for t in args[:k]]
        biases, scales, offsets = args[k:2 * k], args[2 * k:3 * k], args[3 * k:]
        n = terms[0].shape[0]
        col = np.cumsum([0] + [t.shape[1] for t in terms])
        y = torch.empty((n, int(col[-1])), dtype=terms[0].dtype)
        bounds = _bounds(n, num_threads())
        stats = []
        for o, t in enumerate(terms):
            tn = t.detach().numpy()
            mean, rstd = np.empty(n), np.empty(n)
            K.bias_relu_norm_fwd(tn, _as(biases[o], tn.dtype), _as(scales[o], tn.dtype),
                                 _as(offsets[o], tn.dtype), y.numpy(), int(col[o]), mean, rstd,
                                 bounds, relu)
            stats.append((mean, rstd))
        ctx.save_for_backward(*terms, *biases, *scales)
        ctx.stats = (stats, col, bounds, relu, k)
        return y

    @staticmethod
    def backward(ctx, gy):
        stats, col, bounds, relu, k = ctx.stats
        saved = ctx.saved_tensors
        terms, biases, scales = saved[:k], saved[k:2 * k], saved[2 * k:]
        gyn = gy.contiguous().numpy()
        g_t, g_bias, g_scale, g_offset = [], [], [], []
        for o, t in enumerate(terms):
            tn = t.detach().numpy()
            gt = torch.empty_like(t)
            parts = np.empty((bounds.shape[0] - 1, 3, t.shape[1]))
            mean, rstd = (s.astype(tn.dtype) for s in stats[o])
            K.bias_relu_norm_bwd(tn, _as(biases[o], tn.dtype), _as(scales[o], tn.dtype),
                                 mean, rstd, gyn, int(col[o]), gt.numpy(), parts,
                                 np.empty(parts.shape, tn.dtype),
                                 np.array([0.0, 1.0 / t.shape[1]], tn.dtype), bounds, relu)
            sums = torch.from_numpy(parts.sum(axis=0))     # chunk order: deterministic
            g_t.append(gt)
            g_bias.append(sums[2].to(biases[o].dtype))
            g_scale.append(sums[0].to(scales[o].dtype))
            g_offset.append(sums[1].to(scales[o].dtype))
        return (None, *g_t, *g_bias, *g_scale, *g_offset)


def _fusable(t: torch.Tensor, params, act) -> bool:
    return (on_host(t, *(p for p in params if p is not None))
            and t.dtype in (torch.float32, torch.float64)
            and t.dim() == 2 and isinstance(act, str) and act in FUSED_ACTS and t.shape[1] > 0)


def bias_act_norm(t: torch.Tensor, bias, scale: torch.Tensor, offset: torch.Tensor,
                  act="relu") -> torch.Tensor:
    """``norm(act(t + bias))·scale + offset`` for a 2-D ``t`` (bias may be None; ``act`` a name
    in :data:`FUSED_ACTS`, ``torch.relu``, or any callable, which runs unfused)."""
    return bias_act_norm_concat([t], [bias], [scale], [offset], act)


def bias_act_norm_concat(terms, biases, scales, offsets, act="relu") -> torch.Tensor:
    """``torch.cat([bias_act_norm(t_o, b_o, s_o, f_o, act) ...], dim=1)`` for the hop terms of
    a concat layer (same rows, same dtype), fused into one output without the concatenation."""
    if act is torch.relu:
        act = "relu"
    terms = list(terms)
    fused = all(_fusable(t, (b, s, f), act) and t.dtype == terms[0].dtype
                and t.shape[0] == terms[0].shape[0]
                for t, b, s, f in zip(terms, biases, scales, offsets))
    if not fused:
        out = [torch_tail(t, b, s, f, act) for t, b, s, f in zip(terms, biases, scales, offsets)]
        return torch.cat(out, dim=1) if len(out) > 1 else out[0]
    biases = [torch.zeros(t.shape[1], dtype=t.dtype) if b is None else b
              for t, b in zip(terms, biases)]
    return _BiasActNorm.apply(act == "relu", *terms, *biases, *scales, *offsets)


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
    if not on_host(x) or x.dtype not in (torch.float32, torch.float64) \
            or x.dim() != 2 or x.shape[1] == 0 or x.shape[0] == 0:
        return torch.nn.functional.normalize(x, p=2, dim=1, eps=eps)
    return _L2Normalize.apply(x, eps)
