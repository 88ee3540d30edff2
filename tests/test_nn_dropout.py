"""FastDropout: the counter-based mask against its pure-Python reference, gradients, seeds,
thread-count independence, and nn.Dropout semantics where the kernel does not apply."""

import numba
import numpy as np
import pytest
import torch

from scalegnn.nn.dropout import (FastDropout, _chunks, _Dropout, _dropout_bwd, _dropout_fwd,
                                 _threshold, dropout_mask_reference, fast_dropout)


@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (37, 53), (64, 129)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_values_match_reference_mask(shape, dtype):
    x = torch.randn(*shape, dtype=dtype)
    y = _Dropout.apply(x, 0.3, 987654321)
    keep = torch.from_numpy(dropout_mask_reference(x.numel(), 0.3, 987654321).reshape(shape))
    expect = torch.where(keep, x * (1 / 0.7), torch.zeros((), dtype=dtype))
    torch.testing.assert_close(y, expect)


def test_gradient_is_mask_over_keep_probability():
    x = torch.randn(20, 31, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: _Dropout.apply(t, 0.25, 42), (x,))


@pytest.mark.parametrize("n", [8, 13, 4096 * 3 + 5, 4096 * 70 + 1])
def test_bit_mask_across_tasks_and_last_byte(n):
    """The kept elements travel to the backward as bits: every task boundary and the last,
    partial byte give the reference mask both ways."""
    x = torch.randn(n, dtype=torch.float64, requires_grad=True)
    y = _Dropout.apply(x, 0.4, 2024)
    keep = torch.from_numpy(dropout_mask_reference(n, 0.4, 2024))
    torch.testing.assert_close(y, torch.where(keep, x * (1 / 0.6), torch.zeros((), dtype=x.dtype)))
    g = torch.randn(n, dtype=torch.float64)
    y.backward(g)
    torch.testing.assert_close(x.grad, torch.where(keep, g / 0.6, torch.zeros((), dtype=g.dtype)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [15, 16, 17, 4096 * 5 + 9])
@pytest.mark.parametrize("p", [0.1, 0.5, 1 - 2.0**-34])   # the last: threshold 2^32, none kept
def test_vector_blocks_bit_exact(dtype, n, p):
    """The 16-element vector blocks and the scalar last ones give, bit for bit, the scalar
    formula ``x · (scale · keep)`` (so a dropped -1 is -0.0 and a dropped inf is NaN) and the
    reference mask packed little-endian, both ways."""
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(dtype)
    x[::7] = -1.0
    x[3::11] = np.inf
    x[5::13] = np.nan
    keep = dropout_mask_reference(n, p, 77)
    scale = dtype(1.0 / (1.0 - p)) if p < 1 - 2.0**-40 else dtype(1.0)
    y, bits = np.empty_like(x), np.empty((n + 7) // 8, np.uint8)
    with np.errstate(invalid="ignore"):
        expect = x * (scale * keep.astype(dtype))
    _dropout_fwd(x, y, bits, np.uint64(77), _threshold(p), scale, _chunks(n))
    assert np.array_equal(y.view(f"u{y.itemsize}"), expect.view(f"u{y.itemsize}"))
    assert np.array_equal(bits, np.packbits(keep, bitorder="little"))
    g, gx = x[::-1].copy(), np.empty_like(x)
    _dropout_bwd(g, bits, gx, scale, _chunks(n))
    with np.errstate(invalid="ignore"):
        expect = g * (scale * keep.astype(dtype))
    assert np.array_equal(gx.view(f"u{gx.itemsize}"), expect.view(f"u{gx.itemsize}"))


def test_keep_fraction_and_mean_preserved():
    x = torch.ones(400_000)
    y = fast_dropout(x, 0.1, key=5)
    kept = (y != 0).double().mean().item()
    assert abs(kept - 0.9) < 4 * np.sqrt(0.09 / x.numel())
    assert abs(y.double().mean().item() - 1.0) < 0.01


def test_same_seed_same_mask_any_thread_count():
    x = torch.randn(300, 257)
    outs = []
    for threads in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
        prev = numba.get_num_threads()
        numba.set_num_threads(threads)
        try:
            torch.manual_seed(11)
            outs.append(fast_dropout(x, 0.5))
        finally:
            numba.set_num_threads(prev)
    torch.manual_seed(12)
    other = fast_dropout(x, 0.5)
    assert torch.equal(outs[0], outs[1]) and not torch.equal(outs[0], other)


def test_module_semantics():
    m = FastDropout(0.2)
    x = torch.randn(50, 40)
    m.eval()
    assert torch.equal(m(x), x)                          # eval: identity
    m.train()
    assert not torch.equal(m(x), x)
    assert torch.equal(FastDropout(0.0)(x), x)            # p = 0: identity
    xh = x.to(torch.bfloat16)                             # other dtypes: torch's dropout
    assert m(xh).dtype == torch.bfloat16
    assert isinstance(m, torch.nn.Dropout) and m.state_dict() == {}
