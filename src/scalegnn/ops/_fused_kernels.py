"""numba kernels behind :mod:`scalegnn.ops.fused`: the layer tail ``norm(relu(t + b))·scale +
offset`` and the L2 row normalize, forward and backward (the slow references are the torch
compositions in :mod:`scalegnn.ops.fused` and the tests)."""

import numba as nb
import numpy as np

from scalegnn.ops._kernels import _FM, _JIT

# The row sums: 'reassoc' vectorizes them (a fixed lane order: same numbers at any thread
# count; 6229 x 512 tail forward 6.6 -> 2.6 ms, backward 12.5 -> 6.8 ms CPU when it came).
_JIT_ROWSUM = dict(_JIT, fastmath=_FM | {"reassoc"})


# --------------------------------------------------------------------------- fused layer tail
# GraphSAINT's layer tail  y = norm(relu(t + b))·scale + offset  (norm over each row's d
# features, population variance + 1e-9) costs torch ~8 passes over n x d forward and ~12
# backward; these kernels do 2 passes each way. Rows are split into ``bounds`` chunks; column
# sums (gradients of b, scale, offset) are accumulated per chunk and reduced by the caller in
# chunk order, so results do not depend on scheduling.

@nb.njit(parallel=True, **_JIT_ROWSUM)
def bias_relu_norm_fwd(t, b, scale, offset, y, col0, mean, rstd, bounds, relu):
    """Rows of t (n x d) -> columns ``col0 .. col0+d`` of y (n x D, D >= col0 + d): one term
    of a concat layer writes its block of the layer's output in place."""
    d = t.shape[1]
    for k in nb.prange(bounds.shape[0] - 1):
        for i in range(bounds[k], bounds[k + 1]):
            s = 0.0
            s2 = 0.0
            for c in range(d):
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


@nb.njit(parallel=True, **_JIT_ROWSUM)
def bias_relu_norm_bwd(t, b, scale, mean, rstd, gy, col0, gt, gparts, acc, consts, bounds,
                       relu):
    """gy's columns ``col0 .. col0+d`` are this term's output gradient (as the forward wrote
    them); gparts[k] rows: 0 = Σ gy·ŷ (scale), 1 = Σ gy (offset), 2 = Σ g_a (bias) over chunk k.

    Everything per element runs in the input's precision (float32: 16 lanes, not the 4 of
    float64 with a conversion per element, ~3.5x faster); the per-row sums carry ``reassoc``
    (several vector accumulators), and the column sums gather over blocks of
    ``_TAIL_BLOCK`` rows in the input's precision before they are added into the float64
    ``gparts`` (a float64 read-modify-write per element and sum cost as much as the rest).
    The caller passes everything in the input's dtype: ``mean``/``rstd`` (the forward's row
    stats), ``acc`` (chunks x 3 x d scratch) and ``consts`` = [0, 1/d]. Arrays allocated
    inside the ``prange`` body would be hoisted out of it by numba and shared by the
    threads (a race that made training nondeterministic)."""
    d = t.shape[1]
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
                sg = zero
                sgy = zero
                for c in range(d):
                    a = t[i, c] + b[c]
                    if relu and a < zero:   # (not max(): a NaN stays NaN)
                        a = zero
                    yh = (a - mu) * r
                    g = gy[i, col0 + c]
                    acc[k, 0, c] += g * yh
                    acc[k, 1, c] += g
                    gh = g * scale[c]
                    sg += gh
                    sgy += gh * yh
                sg *= rd
                sgy *= rd
                for c in range(d):
                    a = t[i, c] + b[c]
                    yh = ((zero if relu and a < zero else a) - mu) * r
                    ga = r * (gy[i, col0 + c] * scale[c] - sg - yh * sgy)
                    if relu and a <= zero:
                        ga = zero
                    gt[i, c] = ga
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

@nb.njit(parallel=True, **_JIT_ROWSUM)
def l2_normalize_fwd(x, y, inv, bounds, eps):
    """``y[i] = x[i] · inv[i]`` with ``inv[i] = 1 / max(‖x[i]‖, eps)``; ``inv[i]`` is stored
    negated when the norm was below ``eps`` (the clamp: no gradient through the norm)."""
    d = x.shape[1]
    for k in nb.prange(bounds.shape[0] - 1):
        for i in range(bounds[k], bounds[k + 1]):
            s = 0.0
            for c in range(d):
                s += np.float64(x[i, c]) * x[i, c]
            nrm = np.sqrt(s)
            r = 1.0 / max(nrm, eps)
            rf = x.dtype.type(r)
            for c in range(d):
                y[i, c] = x[i, c] * rf
            inv[i] = r if nrm >= eps else -r


@nb.njit(parallel=True, **_JIT_ROWSUM)
def l2_normalize_bwd(y, gy, gx, inv, bounds):
    """``gx[i] = (gy[i] − y[i]·(gy[i]·y[i])) · inv[i]`` (``gy[i] · |inv[i]|`` for clamped rows)."""
    d = y.shape[1]
    for k in nb.prange(bounds.shape[0] - 1):
        for i in range(bounds[k], bounds[k + 1]):
            r = inv[i]
            dot = 0.0
            if r > 0:
                for c in range(d):
                    dot += np.float64(gy[i, c]) * y[i, c]
            else:
                r = -r
            rf = y.dtype.type(r)
            df = y.dtype.type(dot)
            for c in range(d):
                gx[i, c] = (gy[i, c] - y[i, c] * df) * rf
