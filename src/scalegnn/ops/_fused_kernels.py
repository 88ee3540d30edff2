"""numba kernels behind :mod:`scalegnn.ops.fused`: the layer tail ``norm(relu(t + b))·scale +
offset`` and the L2 row normalize, forward and backward (the slow references are the torch
compositions in :mod:`scalegnn.ops.fused` and the tests)."""

import numba as nb
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.core.errors import TypingError
from numba.extending import intrinsic

from scalegnn.ops._kernels import _JIT
from scalegnn.ops._vector_ir import VectorIR, lanes

# Strict IEEE kernels ('nsz' only), and the row sums as explicit vector IR in a fixed order
# (_W lanes, then a fixed tree): the same bits wherever the arrays lie in memory and whether
# numba compiled the kernels or loaded them from its cache. With 'reassoc' (how the row sums
# were vectorized before) neither held: numba re-optimizes a parallel kernel when it links it,
# and a process that had compiled the kernels and one that loaded them computed gradients 1
# ulp apart (Adam grew that to 8e-6 in a weight within 3 steps; the data-parallel test failed
# whenever CI's cache started empty). A variant with serial kernels failed the other way: a
# 'reassoc' loop that also stores gets a runtime overlap check from LLVM's vectorizer, its
# vector and scalar versions rounded differently, and results depended on the arrays'
# addresses (tests/test_kernel_cache_bits.py, tests/test_ops_fused.py check both). Without
# 'reassoc' or the vector IR the sums do not vectorize: 2x slower tails.
_JIT_STRICT = dict(_JIT, fastmath={"nsz"})
_W = 16   # lanes of the row sums
_F64 = ir.DoubleType()


def _check_rows(*arrays):
    for a in arrays:
        if not isinstance(a, types.Array) or a.layout != "C":
            raise TypingError(f"row sums need C-contiguous arrays, got {a}")


def _relu(b, a, relu):
    """``a`` with its lanes below 0 set to 0 where ``relu`` (NaN stays NaN)."""
    zero = ir.Constant(a.type, [0.0] * a.type.count)
    neg = b.and_(b.fcmp_ordered("<", a, zero), relu)
    return b.select(neg, zero, a)


def _f64(b, v):
    return v if v.type.element == _F64 else b.fpext(v, lanes(_F64, v.type.count))


@intrinsic
def _stats16(typingctx, t, bias, i, stop, relu):
    """(Σ a, Σ a²) in float64 over ``c < stop`` (a multiple of _W) of row i, a = relu(t[i, c]
    + bias[c]) in t's precision."""
    _check_rows(t, bias)

    def codegen(context, builder, signature, args):
        tv, bv, i_, stop_, relu_ = args
        g = VectorIR(context, builder, signature)
        vt = lanes(context.get_value_type(signature.args[0].dtype), _W)
        rl = g.vec(relu_, _W)

        def terms(c):
            a = builder.fadd(builder.load(g.row_ptr(0, tv, i_, c, vt), align=4),
                             builder.load(g.ptr(1, bv, c, vt), align=4))
            a = _f64(builder, _relu(builder, a, rl))
            return [a, builder.fmul(a, a)]
        sums = g.sum_loop(stop_, _W, [lanes(_F64, _W)] * 2, terms)
        return context.make_tuple(builder, signature.return_type, sums)

    return types.UniTuple(types.float64, 2)(t, bias, types.int64, types.int64,
                                            types.boolean), codegen


@intrinsic
def _grad_sums16(typingctx, t, bias, scale, gy, col0, i, mu, r, stop, relu):
    """(Σ gŷ, Σ gŷ·ŷ) in t's precision over ``c < stop`` of row i: gŷ = gy[i, col0 + c]·scale[c],
    ŷ = (relu(t[i, c] + bias[c]) − mu)·r."""
    _check_rows(t, bias, scale, gy)

    def codegen(context, builder, signature, args):
        tv, bv, sv, gv, col0_, i_, mu_, r_, stop_, relu_ = args
        g = VectorIR(context, builder, signature)
        vt = lanes(context.get_value_type(signature.args[0].dtype), _W)
        rl, vmu, vr = g.vec(relu_, _W), g.vec(mu_, _W), g.vec(r_, _W)

        def terms(c):
            a = builder.fadd(builder.load(g.row_ptr(0, tv, i_, c, vt), align=4),
                             builder.load(g.ptr(1, bv, c, vt), align=4))
            yh = builder.fmul(builder.fsub(_relu(builder, a, rl), vmu), vr)
            gh = builder.fmul(builder.load(g.row_ptr(3, gv, i_, builder.add(col0_, c), vt),
                                           align=4),
                              builder.load(g.ptr(2, sv, c, vt), align=4))
            return [gh, builder.fmul(gh, yh)]
        sums = g.sum_loop(stop_, _W, [vt] * 2, terms)
        return context.make_tuple(builder, signature.return_type, sums)

    return types.UniTuple(t.dtype, 2)(t, bias, scale, gy, types.int64, types.int64, t.dtype,
                                      t.dtype, types.int64, types.boolean), codegen


@intrinsic
def _dot16(typingctx, x, z, i, stop):
    """Σ x[i, c]·z[i, c] in float64 over ``c < stop`` (a multiple of _W)."""
    _check_rows(x, z)

    def codegen(context, builder, signature, args):
        xv, zv, i_, stop_ = args
        g = VectorIR(context, builder, signature)
        vt = lanes(context.get_value_type(signature.args[0].dtype), _W)

        def terms(c):
            return [builder.fmul(_f64(builder, builder.load(g.row_ptr(0, xv, i_, c, vt),
                                                            align=4)),
                                 _f64(builder, builder.load(g.row_ptr(1, zv, i_, c, vt),
                                                            align=4)))]
        return g.sum_loop(stop_, _W, [lanes(_F64, _W)], terms)[0]

    return types.float64(x, z, types.int64, types.int64), codegen


# --------------------------------------------------------------------------- fused layer tail
# GraphSAINT's layer tail  y = norm(relu(t + b))·scale + offset  (norm over each row's d
# features, population variance + 1e-9) costs torch ~8 passes over n x d forward and ~12
# backward; these kernels do 2 passes each way. Rows are split into ``bounds`` chunks; column
# sums (gradients of b, scale, offset) are accumulated per chunk and reduced by the caller in
# chunk order, so results do not depend on scheduling.

@nb.njit(parallel=True, **_JIT_STRICT)
def bias_relu_norm_fwd(t, b, scale, offset, y, col0, mean, rstd, bounds, relu):
    """Rows of t (n x d) -> columns ``col0 .. col0+d`` of y (n x D, D >= col0 + d): one term
    of a concat layer writes its block of the layer's output in place."""
    d = t.shape[1]
    dv = d - d % _W
    for k in nb.prange(bounds.shape[0] - 1):
        for i in range(bounds[k], bounds[k + 1]):
            s, s2 = _stats16(t, b, i, dv, relu)
            for c in range(dv, d):
                a = t[i, c] + b[c]
                if relu and a < 0:
                    a = 0.0
                s += a
                s2 += a * a
            mu = s / d
            var = max(s2 / d - mu * mu, 0.0) + 1e-9
            r = 1.0 / np.sqrt(var)
            mean[i] = mu
            rstd[i] = r
            for c in range(d):
                a = t[i, c] + b[c]
                if relu and a < 0:
                    a = 0.0
                y[i, col0 + c] = (a - mu) * r * scale[c] + offset[c]


_TAIL_BLOCK = 32   # rows whose column sums gather in the input's precision before a flush


@nb.njit(parallel=True, **_JIT_STRICT)
def bias_relu_norm_bwd(t, b, scale, mean, rstd, gy, col0, gt, gparts, acc, consts, bounds,
                       relu):
    """gy's columns ``col0 .. col0+d`` are this term's output gradient (as the forward wrote
    them); gparts[k] rows: 0 = Σ gy·ŷ (scale), 1 = Σ gy (offset), 2 = Σ g_a (bias) over chunk k.

    Everything per element runs in the input's precision (float32: 16 lanes, not the 4 of
    float64 with a conversion per element, ~3.5x faster); the per-row sums are vector IR
    (:func:`_grad_sums16`), and the column sums gather over blocks of
    ``_TAIL_BLOCK`` rows in the input's precision before they are added into the float64
    ``gparts`` (a float64 read-modify-write per element and sum cost as much as the rest).
    The caller passes everything in the input's dtype: ``mean``/``rstd`` (the forward's row
    stats), ``acc`` (chunks x 3 x d scratch, chunk k's own) and ``consts`` = [0, 1/d]: numba
    hoists arrays allocated inside a ``prange`` body out of the loop, so scratch allocated
    there is not plainly each chunk's."""
    d = t.shape[1]
    dv = d - d % _W
    zero, rd = consts[0], consts[1]
    for k in nb.prange(bounds.shape[0] - 1):
        for j in range(3):
            for c in range(d):
                gparts[k, j, c] = 0.0
                acc[k, j, c] = zero
        i0 = bounds[k]
        while i0 < bounds[k + 1]:
            # blocks end at multiples of _TAIL_BLOCK rows, as the chunks do (fused._bounds):
            # each block's float32 sums then cover the same rows at any thread count
            i1 = min((i0 // _TAIL_BLOCK + 1) * _TAIL_BLOCK, bounds[k + 1])
            for i in range(i0, i1):
                mu, r = mean[i], rstd[i]
                sg, sgy = _grad_sums16(t, b, scale, gy, col0, i, mu, r, dv, relu)
                for c in range(dv, d):
                    a = t[i, c] + b[c]
                    if relu and a < zero:   # (not max(): a NaN stays NaN)
                        a = zero
                    gh = gy[i, col0 + c] * scale[c]
                    sg += gh
                    sgy += gh * ((a - mu) * r)
                sg *= rd
                sgy *= rd
                for c in range(d):
                    a = t[i, c] + b[c]
                    yh = ((zero if relu and a < zero else a) - mu) * r
                    g = gy[i, col0 + c]
                    ga = r * (g * scale[c] - sg - yh * sgy)
                    if relu and a <= zero:
                        ga = zero
                    gt[i, c] = ga
                    acc[k, 0, c] += g * yh
                    acc[k, 1, c] += g
                    acc[k, 2, c] += ga
            for j in range(3):
                for c in range(d):
                    gparts[k, j, c] += acc[k, j, c]
                    acc[k, j, c] = zero
            i0 = i1


# --------------------------------------------------------------------------- fused L2 normalize
# y = x / max(‖x‖₂, eps) per row (F.normalize): torch takes 3 passes over n x d forward and
# ~9 backward (norm, clamp, expand, div, and their gradients); these take 2 passes forward
# (row sum of squares, scaled write) and 2 backward (row dot g·y, write). Row norms and dots
# accumulate in float64; rows split into ``bounds`` chunks, one output row per thread.

@nb.njit(parallel=True, **_JIT_STRICT)
def l2_normalize_fwd(x, y, inv, bounds, eps):
    """``y[i] = x[i] · inv[i]`` with ``inv[i] = 1 / max(‖x[i]‖, eps)``; ``inv[i]`` is stored
    negated when the norm was below ``eps`` (the clamp: no gradient through the norm)."""
    d = x.shape[1]
    dv = d - d % _W
    for k in nb.prange(bounds.shape[0] - 1):
        for i in range(bounds[k], bounds[k + 1]):
            s = _dot16(x, x, i, dv)
            for c in range(dv, d):
                s += np.float64(x[i, c]) * x[i, c]
            nrm = np.sqrt(s)
            r = 1.0 / max(nrm, eps)
            rf = x.dtype.type(r)
            for c in range(d):
                y[i, c] = x[i, c] * rf
            inv[i] = r if nrm >= eps else -r


@nb.njit(parallel=True, **_JIT_STRICT)
def l2_normalize_bwd(y, gy, gx, inv, bounds):
    """``gx[i] = (gy[i] − y[i]·(gy[i]·y[i])) · inv[i]`` (``gy[i] · |inv[i]|`` for clamped rows)."""
    d = y.shape[1]
    dv = d - d % _W
    for k in nb.prange(bounds.shape[0] - 1):
        for i in range(bounds[k], bounds[k + 1]):
            r = inv[i]
            dot = 0.0
            if r > 0:
                dot = _dot16(gy, y, i, dv)
                for c in range(dv, d):
                    dot += np.float64(gy[i, c]) * y[i, c]
            else:
                r = -r
            rf = y.dtype.type(r)
            df = y.dtype.type(dot)
            for c in range(d):
                gx[i, c] = (gy[i, c] - y[i, c] * df) * rf
