"""Fast defaults (issue 15): denormal flushing in the one trainer, ``bench step`` on the product's
own step and tail, the GEMM floor of ``bench step`` / ``bench epoch`` (recorded products
replayed at any batch size) and ``benchmarks/readme_numbers.py``."""

import argparse
import json
import subprocess
import sys

import numpy as np
import pytest
import torch
from conftest import REPO_ROOT, make_tiny_dataset

from scalegnn.bench import epoch as bench_epoch
from scalegnn.bench import step as bench_step
from scalegnn.bench.gemm import GemmReplay, GemmTemplate, gemm_flops, record_gemms
from scalegnn.config import Config
from scalegnn.errors import ConfigError
from scalegnn.train.trainer import Trainer

DENORMAL = 1e-41   # below float32's smallest normal (1.18e-38)


def _flushing() -> bool:
    """Whether this thread computes with denormals flushed (DAZ: a denormal input reads as 0)."""
    return float((torch.tensor([DENORMAL], dtype=torch.float32) * 1.0).item()) == 0.0


@pytest.fixture(autouse=True)
def _no_flush_after():
    yield
    torch.set_flush_denormal(False)     # leave the process as torch starts it


def _config(**params):
    cfg = Config.from_dict({"network": [{"dim": 8}],
                            "params": [{"dropout": 0.1, "sample_coverage": 2, **params}],
                            "phase": [{"end": 1, "sampler": "rw", "num_root": 10,
                                       "depth": 2}]})
    return cfg


def test_trainer_flushes_denormals_by_default_and_opts_out():
    torch.set_flush_denormal(False)
    assert not _flushing()
    assert Config().params["flush_denormal"] is True
    Trainer(make_tiny_dataset(), _config(), None, progress=False)
    assert _flushing()
    Trainer(make_tiny_dataset(), _config(flush_denormal=False), None, progress=False)
    assert not _flushing()
    cfg = _config().override(["params.flush_denormal=false"])
    assert cfg.params["flush_denormal"] is False
    with pytest.raises(ConfigError, match="params.flush_denormal"):
        _config(flush_denormal="sometimes").validate()


def test_flushing_changes_only_denormal_results():
    """Adam with flushing equals Adam without it wherever no value is denormal, and turns a
    denormal second moment into 0 (as GPUs do) instead of computing on it."""
    from scalegnn.engine.optim import Adam
    g = torch.tensor([1e-3, 0.5, -2.0, 1e-21], dtype=torch.float32)   # 1e-21² is denormal
    out = {}
    for flush in (False, True):
        torch.set_flush_denormal(flush)
        p = torch.nn.Parameter(torch.ones(4))
        opt = Adam([p], lr=0.1)
        p.grad = g.clone()
        opt.step()
        out[flush] = (p.detach().clone(), opt.exp_avg_sq[0].clone())
    torch.set_flush_denormal(False)
    assert torch.equal(out[True][0][:3], out[False][0][:3])
    assert out[False][1][3] > 0 and out[True][1][3] == 0


def _tiny_trainer_and_batches():
    """A trainer and three of its GraphSAINT batches of pairwise different row counts."""
    from scalegnn.data import load_dataset
    ds = load_dataset("kronecker:9:4", seed=0)
    trainer = Trainer(ds, _config(), None, progress=False)
    loader = trainer.mode.loader(0)
    try:
        batches = []
        while len(batches) < 3:
            b = loader.next_batch()
            if all(b.num_nodes != c.num_nodes for c in batches):
                batches.append(b)
    finally:
        loader.close()
    return trainer, batches


def test_gemm_template_predicts_a_third_batch():
    trainer, batches = _tiny_trainer_and_batches()
    rec = [record_gemms(lambda b=b: trainer.train_step(b))[0] for b in batches]
    assert rec[0] and all(name in ("aten::mm", "aten::addmm") for name, _ in rec[0])
    t = GemmTemplate.from_two(rec[0], batches[0].num_nodes, rec[1], batches[1].num_nodes)
    assert t.calls_for(batches[2].num_nodes) == rec[2]          # the recorded truth
    assert any(None in s for _, shapes in t.calls for s in shapes)
    with pytest.raises(ValueError, match="same row count"):
        GemmTemplate.from_two(rec[0], 5, rec[1], 5)
    with pytest.raises(ValueError, match="different products"):
        GemmTemplate.from_two(rec[0], batches[0].num_nodes, rec[1][1:], batches[1].num_nodes)


def test_gemm_flops_and_replay_shapes():
    calls = [("aten::mm", [(3, 4), (4, 5)]), ("aten::addmm", [(5,), (3, 4), (4, 5)]),
             ("aten::bmm", [(2, 3, 4), (2, 4, 5)])]
    assert gemm_flops(calls) == 2 * 3 * 4 * 5 * 2 + 2 * 2 * 3 * 4 * 5
    replay = GemmReplay()
    assert replay.seconds(calls, repeat=2) > 0
    # one buffer per operand, grown to the largest shape, viewed at the replayed one
    t = GemmTemplate([("aten::mm", [(None, 4), (4, 5)])])
    assert replay.floor_seconds(t, [7, 3, 9]) > 0
    assert replay._buffers[(0, 0)].numel() == 9 * 4


def _parse(module, argv):
    p = argparse.ArgumentParser()
    module.add_arguments(p)
    return p.parse_args(argv)


def test_bench_step_defaults_are_the_products(capsys):
    args = _parse(bench_step, [])
    assert args.tail == "model" and args.flush_denormal is True
    assert _parse(bench_step, ["--no-flush-denormal"]).flush_denormal is False
    argv = ["--dataset", "kronecker:10:4", "--size-subgraph", "300", "--size-frontier", "50",
            "--hidden", "32", "--repeat", "3", "--threads", "1"]
    assert bench_step.run(_parse(bench_step, argv)) == 0
    (rec,) = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert rec["tail"] == "model" and rec["flush_denormal"] is True
    assert len(rec["ratio_all"]) == len(rec["iteration_ms_all"]) == 3
    ratios = np.array(rec["iteration_ms_all"]) / np.array(rec["gemm_alone_ms_all"])
    assert rec["ratio_all"] == pytest.approx(ratios.tolist())
    assert rec["ratio_vs_gemm"] == pytest.approx(float(np.median(ratios)))
    assert rec["meets_target"] == (rec["ratio_vs_gemm"] <= rec["target_ratio"])
    assert rec["profile_top"] and len(rec["load_avg"]) == 3
    assert not _flushing()                      # the benchmark leaves the process as it was


def test_bench_epoch_reports_the_gemm_floor(capsys, tmp_path):
    argv = ["--scale", "10", "--edge-factor", "4", "--features", "8", "--labels", "5",
            "--set", "network.dim=16", "--set", "phase.num_root=60",
            "--set", "params.sample_coverage=4", "--threads", "1", "--omp-wait", "inherit",
            "--data", str(tmp_path / "kron10"), "--epochs", "3"]
    assert bench_epoch.run(_parse(bench_epoch, argv)) == 0
    recs = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    epochs, summary = recs[:-1], recs[-1]
    for r in epochs:
        assert r["gemm_floor_s"] > 0
        assert r["ratio_vs_gemm_floor"] == pytest.approx(r["wall_s"] / r["gemm_floor_s"])
        assert "subgraph_nodes" not in r and len(r["load_avg"]) == 3
    steady = [r["ratio_vs_gemm_floor"] for r in epochs[1:]]
    assert summary["ratio_vs_gemm_floor_median"] == pytest.approx(float(np.median(steady)))
    assert summary["target_ratio_vs_gemm_floor"] == 1.5


def test_readme_numbers_tiny(tmp_path):
    out = tmp_path / "speed.md"
    proc = subprocess.run(
        [sys.executable, str(REPO_ROOT / "benchmarks" / "readme_numbers.py"), "--tiny",
         "--quick", "--only", "step,epoch,scale", "--data-dir", str(tmp_path), "--out", str(out)],
        capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = [json.loads(x) for x in proc.stdout.splitlines() if x.startswith("{")]
    assert {x["bench"] for x in lines} == {"step", "epoch", "scale"}
    assert all(len(x["load_avg"]) >= 1 and "record" in x for x in lines)
    step = next(x["record"] for x in lines if x["bench"] == "step")
    text = out.read_text()
    assert text in proc.stdout
    assert f"**{step['ratio_vs_gemm']:.3f}x** its dense GEMMs replayed alone, target " in text
    assert "`scalegnn bench step --dataset kronecker:10:4" in text
    assert "Training epoch" in text and "GEMM floor" in text
    assert "Scaling, `scalegnn bench scale --scales 10,11" in text and "| 2^11 | " in text
    assert "Largest / smallest scale iteration: **" in text
    assert (tmp_path / "bench_epoch_kron10").is_dir()           # --data-dir keeps the graph


def test_l2_normalize_matches_torch():
    """The fused row normalize of the models' embeddings = F.normalize (values, gradients,
    rows below eps), float64 gradcheck."""
    import torch.nn.functional as F

    from scalegnn.ops.fused import l2_normalize
    torch.manual_seed(0)
    x = torch.randn(37, 19, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(l2_normalize, (x,))
    for dtype, tol in ((torch.float32, 1e-6), (torch.float64, 1e-12)):
        x = torch.randn(101, 64, dtype=dtype)
        x[3] = 0.0
        x[7] = 1e-14                                   # norm below eps: clamped
        g = torch.randn(101, 64, dtype=dtype)
        grads = []
        for fn in (l2_normalize, lambda t: F.normalize(t, p=2, dim=1)):
            t = x.clone().requires_grad_(True)
            y = fn(t)
            y.backward(g)
            grads.append((y.detach(), t.grad))
        (y1, g1), (y2, g2) = grads
        torch.testing.assert_close(y1, y2, atol=tol, rtol=tol)
        torch.testing.assert_close(g1, g2, atol=tol, rtol=tol)
    # anything but a host float 2-D tensor runs F.normalize itself
    v = torch.randn(5)
    torch.testing.assert_close(l2_normalize(v.unsqueeze(0))[0], F.normalize(v, dim=0))
    assert l2_normalize(torch.zeros(0, 4)).shape == (0, 4)


@pytest.mark.parametrize("dtype,size", [(torch.float32, (300, 300)), (torch.float64, (7, 3))])
def test_fused_adam_matches_torch_ops(dtype, size, monkeypatch):
    """The fused one-pass update (parallel above 65536 elements, serial below) = the optimizer's
    torch-ops path = torch.optim.Adam, with and without weight decay."""
    from scalegnn.engine import optim
    tol = 1e-6 if dtype == torch.float32 else 1e-12
    for wd in (0.0, 0.01):
        runs = []
        for fused in (True, False, None):
            monkeypatch.setattr(optim, "_fusable", optim._fusable if fused else
                                (lambda *ts: False))
            torch.manual_seed(0)
            p = torch.nn.Parameter(torch.randn(*size, dtype=dtype))
            opt = (torch.optim.Adam if fused is None else optim.Adam)([p], lr=0.05,
                                                                       weight_decay=wd)
            gen = torch.Generator().manual_seed(1)
            for _ in range(5):
                p.grad = torch.randn(*size, generator=gen, dtype=dtype)
                opt.step()
            runs.append(p.detach().clone())
        torch.testing.assert_close(runs[0], runs[1], rtol=tol, atol=tol)
        torch.testing.assert_close(runs[0], runs[2], rtol=tol, atol=tol)
