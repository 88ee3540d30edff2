"""propagate_linear: both associations agree (values and gradients); the narrow side goes first."""

import importlib

import numpy as np
import pytest
import torch

from scalegnn.errors import ConfigError
from scalegnn.graph import Graph
from scalegnn.ops import chain
from scalegnn.ops.adj import SparseAdj
from scalegnn.ops.chain import chain_order, propagate_linear


def _adj(n=40, seed=0):
    rng = np.random.default_rng(seed)
    g = Graph.from_edges(rng.integers(0, n, 150), rng.integers(0, n, 150), n).row_normalized(
        dtype=np.float64)
    return SparseAdj.from_graph(g, g.transpose_permutation(), dtype=np.float64)


@pytest.mark.parametrize("f_in,f_out", [(12, 3), (3, 12), (7, 7)])
def test_orders_agree_in_value_and_gradient(f_in, f_out):
    adj = _adj()
    dense = adj.to_dense()
    gen = torch.Generator().manual_seed(f_in)
    x0 = torch.randn(40, f_in, dtype=torch.float64, generator=gen)
    w0 = torch.randn(f_in, f_out, dtype=torch.float64, generator=gen)
    g = torch.randn(40, f_out, dtype=torch.float64, generator=gen)
    results = {}
    for order in chain.ORDERS:
        x, w = x0.clone().requires_grad_(), w0.clone().requires_grad_()
        y = propagate_linear(adj, x, w, order=order)
        y.backward(g)
        results[order] = (y.detach(), x.grad, w.grad)
    ref = dense @ x0 @ w0
    for y, gx, gw in results.values():
        torch.testing.assert_close(y, ref)
        torch.testing.assert_close(gx, dense.T @ g @ w0.T)
        torch.testing.assert_close(gw, (dense @ x0).T @ g)


def test_narrow_side_multiplied_first(monkeypatch):
    widths = []
    real = chain.spmm

    def recording_spmm(adj, x, **kw):
        widths.append(x.shape[1])
        return real(adj, x, **kw)

    monkeypatch.setattr(chain, "spmm", recording_spmm)
    adj = _adj()
    for f_in, f_out in [(50, 8), (8, 50)]:
        widths.clear()
        x = torch.randn(40, f_in, dtype=torch.float64, requires_grad=True)
        w = torch.randn(f_in, f_out, dtype=torch.float64, requires_grad=True)
        propagate_linear(adj, x, w).sum().backward()
        assert widths == [min(f_in, f_out)]
    assert chain_order(50, 8) == "transform_first" and chain_order(8, 50) == "propagate_first"


def test_backward_spmm_runs_on_narrow_side(monkeypatch):
    spmm_mod = importlib.import_module("scalegnn.ops.spmm")   # the module, not the function
    widths = []
    real = spmm_mod.spmm_forward

    def recording(adj, x, *a, **kw):
        widths.append(x.shape[1])
        return real(adj, x, *a, **kw)

    monkeypatch.setattr(spmm_mod, "spmm_forward", recording)
    adj = _adj()
    for f_in, f_out in [(50, 8), (8, 50)]:
        widths.clear()
        x = torch.randn(40, f_in, dtype=torch.float64, requires_grad=True)
        w = torch.randn(f_in, f_out, dtype=torch.float64, requires_grad=True)
        propagate_linear(adj, x, w).sum().backward()
        assert widths == [min(f_in, f_out)] * 2     # forward Â·, backward Âᵀ·


def test_bad_order():
    with pytest.raises(ConfigError, match="order must be one of"):
        propagate_linear(_adj(), torch.randn(40, 3, dtype=torch.float64),
                         torch.randn(3, 2, dtype=torch.float64), order="left")
