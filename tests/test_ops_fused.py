"""Fused bias + act + norm vs the torch composition: values, gradients, gradcheck."""

import numpy as np
import pytest
import torch

from scalegnn.ops import _fused_kernels as K
from scalegnn.ops.fused import _bounds, bias_act_norm, bias_act_norm_concat, bias_act_norm_reference


def _params(d, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(d, dtype=dtype, generator=g) for _ in range(3)]


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 2e-4), (torch.float64, 1e-10)])
@pytest.mark.parametrize("act", ["relu", "identity"])
@pytest.mark.parametrize("n,d", [(37, 16), (5, 1), (200, 130)])
def test_matches_reference_values_and_grads(dtype, tol, act, n, d):
    t0 = torch.randn(n, d, dtype=dtype, generator=torch.Generator().manual_seed(n))
    b0, s0, o0 = _params(d, dtype)
    gy = torch.randn(n, d, dtype=dtype)
    outs = []
    for fn in (bias_act_norm, bias_act_norm_reference):
        leaves = [x.clone().requires_grad_() for x in (t0, b0, s0, o0)]
        y = fn(*leaves, act=act)
        grads = torch.autograd.grad(y, leaves, gy)
        outs.append((y.detach(), grads))
    (y1, g1), (y2, g2) = outs
    torch.testing.assert_close(y1, y2, rtol=tol, atol=tol)
    for a, b in zip(g1, g2):
        torch.testing.assert_close(a, b, rtol=tol, atol=tol * max(n, 10))


def test_gradcheck_float64():
    t = torch.randn(9, 6, dtype=torch.float64, requires_grad=True)
    b, s, o = (p.requires_grad_() for p in _params(6, torch.float64, 1))
    assert torch.autograd.gradcheck(lambda *a: bias_act_norm(*a, act="relu"), (t, b, s, o))


def _concat_reference(terms, params, act):
    return torch.cat([bias_act_norm_reference(t, b, s, o, act)
                      for t, (b, s, o) in zip(terms, params)], dim=1)


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 2e-4), (torch.float64, 1e-10)])
@pytest.mark.parametrize("widths", [(16, 16), (7, 3, 12), (5,)])
def test_concat_writes_each_tail_into_its_block(dtype, tol, widths):
    """A concat layer's tails in one output (no cat copy): the values and every gradient of
    cat([tail(t_o) ...]), with an output gradient that reaches each block."""
    n = 41
    g = torch.Generator().manual_seed(len(widths))
    terms = [torch.randn(n, d, dtype=dtype, generator=g) for d in widths]
    params = [_params(d, dtype, seed=i) for i, d in enumerate(widths)]
    gy = torch.randn(n, sum(widths), dtype=dtype, generator=g)
    outs = []
    for fused in (True, False):
        ts = [t.clone().requires_grad_() for t in terms]
        ps = [[p.clone().requires_grad_() for p in trip] for trip in params]
        y = (bias_act_norm_concat(ts, *zip(*ps), act="relu") if fused
             else _concat_reference(ts, ps, "relu"))
        leaves = ts + [p for trip in ps for p in trip]
        outs.append((y.detach(), torch.autograd.grad(y, leaves, gy)))
    (y1, g1), (y2, g2) = outs
    torch.testing.assert_close(y1, y2, rtol=tol, atol=tol)
    for a, b in zip(g1, g2):
        torch.testing.assert_close(a, b, rtol=tol, atol=tol * n)
    if dtype == torch.float64 and len(widths) >= 2:
        leaves = [t.clone().requires_grad_() for t in terms[:2]]
        trip = [[p.clone().requires_grad_() for p in q] for q in params[:2]]
        assert torch.autograd.gradcheck(
            lambda a, b, *p: bias_act_norm_concat([a, b], p[0::3], p[1::3], p[2::3]),
            (*leaves, *[p for q in trip for p in q]))


def test_no_bias_and_fallback_for_other_acts():
    t = torch.randn(8, 5)
    _, s, o = _params(5, torch.float32)
    torch.testing.assert_close(bias_act_norm(t, None, s, o, act="identity"),
                               bias_act_norm_reference(t, None, s, o, act="identity"))
    tanh = bias_act_norm(t, None, s, o, act=torch.tanh)          # callables run unfused
    torch.testing.assert_close(tanh, bias_act_norm_reference(t, None, s, o, act=torch.tanh))
    assert not torch.allclose(tanh, bias_act_norm(t, None, s, o, act="identity"))
    torch.testing.assert_close(bias_act_norm(t, None, s, o, act=torch.relu),
                               bias_act_norm_reference(t, None, s, o, act="relu"))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_backward_does_not_depend_on_the_chunking(dtype):
    """The backward's column sums gather over 32-row blocks in the input's precision; the
    per-thread chunks are cut at multiples of 32 rows (``_bounds``), so any thread count gives
    the same sums up to the float64 adding of the blocks (data-parallel ranks and a single
    process must agree: Adam magnifies a gradient's rounding)."""
    rng = np.random.default_rng(3)
    n, d = 203, 40
    t = rng.standard_normal((n, d)).astype(dtype)
    b, s = (0.1 * rng.standard_normal(d)).astype(dtype), (1 + rng.random(d)).astype(dtype)
    y, mean, rstd = np.empty((n, d), dtype), np.empty(n), np.empty(n)
    K.bias_relu_norm_fwd(t, b, s, np.zeros(d, dtype), y, 0, mean, rstd, np.array([0, n]), True)
    gy = rng.standard_normal((n, d)).astype(dtype)
    outs = []
    cuts = _bounds(n, 4)
    assert cuts[0] == 0 and cuts[-1] == n and len(cuts) == 5 and not (cuts[1:-1] % 32).any()
    for bounds in ([0, n], cuts, [0, 64, 96, n]):
        gt, parts = np.empty_like(t), np.empty((len(bounds) - 1, 3, d))
        K.bias_relu_norm_bwd(t, b, s, mean.astype(dtype), rstd.astype(dtype), gy, 0, gt, parts,
                             np.empty(parts.shape, dtype), np.array([0, 1 / d], dtype),
                             np.array(bounds), True)
        outs.append((gt, parts.sum(axis=0)))
    assert np.array_equal(outs[0][0], outs[1][0])
    np.testing.assert_allclose(outs[0][1], outs[1][1], rtol=1e-13, atol=1e-13)


def _at(a: np.ndarray, off: int) -> np.ndarray:
    """A C-contiguous copy of ``a`` whose data starts ``off`` elements into a fresh buffer."""
    buf = np.zeros(a.size + off, a.dtype)
    out = buf[off:].reshape(a.shape)
    out[...] = a
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_kernels_do_not_depend_on_where_the_arrays_lie(dtype):
    """The same inputs at other addresses give the same bits, forward and backward, tail and
    L2. (A version with 'reassoc' on a loop that also stored was not: LLVM's runtime overlap
    check picked its vector or its scalar version by the arrays' addresses, they rounded
    differently, and training was not repeatable from run to run.)"""
    rng = np.random.default_rng(5)
    n, d = 70, 40                    # 40 = two 16-lane blocks of the row sums + a tail of 8
    t, gy = (rng.standard_normal((n, d)).astype(dtype) for _ in range(2))
    b, s, o = (rng.standard_normal(d).astype(dtype) for _ in range(3))
    bounds = _bounds(n, 2)
    outs = []
    for off in range(7):
        ta, gya, ba, sa, oa = (_at(x, off) for x in (t, gy, b, s, o))
        y, mean, rstd = _at(np.zeros((n, d), dtype), off), np.empty(n), np.empty(n)
        K.bias_relu_norm_fwd(ta, ba, sa, oa, y, 0, mean, rstd, bounds, True)
        gt, parts = _at(np.zeros((n, d), dtype), 6 - off), np.empty((2, 3, d))
        K.bias_relu_norm_bwd(ta, ba, sa, _at(mean.astype(dtype), off),
                             _at(rstd.astype(dtype), off), gya, 0, gt, parts,
                             _at(np.zeros((2, 3, d), dtype), off),
                             _at(np.array([0, 1 / d], dtype), off), bounds, True)
        z, inv, gz = _at(np.zeros((n, d), dtype), off), np.empty(n), np.empty((n, d), dtype)
        K.l2_normalize_fwd(ta, z, inv, bounds, 1e-12)
        K.l2_normalize_bwd(z, gya, gz, inv, bounds)
        outs.append([y, mean, rstd, gt, parts, z, inv, gz])
    for got in outs[1:]:
        for a, e in zip(got, outs[0]):
            assert np.array_equal(a, e)
