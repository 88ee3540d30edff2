"""The torch-op path (what every op runs on a GPU) against the numba kernels (host tensors),
on the CPU: ``scalegnn.ops.route.torch_ops`` switches the kernels off, and
``benchmarks/cuda_check.py``'s cases (every model family, shaDow readouts, samplers) must give
the same loss, logits, gradients, parameters after 3 Adam steps and validation metric. CI has no
GPU; this keeps the CUDA path's arithmetic tested (the script checks the same on a real GPU)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

from scalegnn.data import load_dataset
from scalegnn.ops import SparseAdj, spmm
from scalegnn.ops.route import on_host, torch_ops

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
_spec = importlib.util.spec_from_file_location("cuda_check", BENCH / "cuda_check.py")
cc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cc)


@pytest.fixture(scope="module")
def ds():
    return load_dataset("planted:nodes=1500,classes=5,features=24", seed=0)


@pytest.mark.parametrize("name", list(cc.CASES))
def test_torch_path_matches_the_kernels(name, ds):
    if "cluster" in name:
        pytest.importorskip("pymetis")
    r = cc.check(name, *cc.CASES[name], ds, "cpu", torch_ops)
    assert max(r["loss_rel"], r["logits_rel"], r["worst_grad_rel"]) <= 1e-5, r
    assert r["params_after_3_steps_rel"] <= 1e-3, r   # Adam divides by tiny moments
    key = next(k for k in r if k.startswith("val_") and k.endswith("_cpu"))
    assert r[key] == pytest.approx(r[key[:-4] + "_gpu"], abs=0.01), r


def test_torch_ops_switches_the_kernels_off_and_back(monkeypatch):
    calls = []
    mm = torch.sparse.mm
    monkeypatch.setattr(torch.sparse, "mm", lambda *a: calls.append(1) or mm(*a))
    adj = SparseAdj.from_graph(load_dataset("planted:nodes=200,classes=3,features=4",
                                            seed=0).graph.row_normalized())
    x = torch.randn(adj.num_cols, 8)
    host = spmm(adj, x)
    assert on_host(x) and not calls
    with torch_ops():
        assert not on_host(x)
        torch.testing.assert_close(spmm(adj, x), host)
    assert calls == [1] and on_host(x)
