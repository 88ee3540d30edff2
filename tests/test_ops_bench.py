"""The propagation benchmarks run end to end on tiny inputs and print consistent JSON lines."""

import json

import pytest
import torch

from bench_helpers import assert_cost
from scalegnn.cli import main


def _lines(capsys):
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]


def test_bench_spmm_json(capsys):
    assert main(["bench", "spmm", "--n", "300", "--f", "16", "--degree", "4", "--repeat", "2",
                 "--threads", "2", "--no-membw"]) == 0
    recs = _lines(capsys)
    case, summary = recs[0], recs[-1]
    assert (case["n"], case["f"], case["threads"]) == (300, 16, 2)
    assert case["picked"] in ("rows", "features") and case["fastest"] in ("rows", "features")
    assert case["model_agrees"] == (case["picked"] == case["fastest"])
    assert case["ratio_vs_torch"] == pytest.approx(case["torch_ms"] / case["picked_ms"])
    assert case["ratio_vs_plain"] == pytest.approx(case["plain_ms"] / case["picked_ms"])
    assert case["ratio_plain_vs_torch"] == pytest.approx(case["torch_ms"] / case["plain_ms"])
    assert summary["kind"] == "summary" and summary["model_agrees"] == int(case["model_agrees"])
    assert_cost(case, "call")
    assert case["calls_timed"] == 2 * len(case["cpu_ms"]) and case["cpu_ms"]["rows"] >= 0
    assert_cost(summary, "case")
    assert summary["cpu_s"] >= case["cpu_s"] and summary["cases_timed"] == 1


def test_bench_step_json(capsys):
    assert main(["bench", "step", "--dataset", "kronecker:10:4", "--size-subgraph", "300",
                 "--size-frontier", "50", "--hidden", "32", "--repeat", "1",
                 "--tail", "both"]) == 0
    model, plain = _lines(capsys)
    assert (model["tail"], plain["tail"]) == ("model", "torch")
    for r in (model, plain):
        assert r["gemm_calls"] > 0 and r["spmm_ms"] > 0
        assert r["iteration_ms"] == pytest.approx(r["gemm_alone_ms"] + r["spmm_ms"] + r["other_ms"])
        assert_cost(r, "iteration")
        assert r["iterations_timed"] == 1
        assert r["wall_s"] == pytest.approx(r["iteration_ms"] / 1e3)      # one round
        # one warm step's saved activations (bench scale's memory bound adds the same)
        assert r["activation_bytes"] > 0 and r["gradient_bytes"] > 0
        assert r["step_bytes"] == r["activation_bytes"] + r["gradient_bytes"]
        # its high-water mark adds the backward's transients: more than what it saves
        assert r["peak_bytes"] > r["step_bytes"]
        assert r["transient_bytes"] == r["peak_bytes"] - r["gradient_bytes"]


def test_tensor_peak_bytes_follows_allocations_and_frees():
    from scalegnn.bench.step import tensor_peak_bytes
    keep = torch.ones(1000)          # live before: not counted

    def fn():
        a = torch.empty(250_000)     # 1 MB
        b = torch.empty(500_000)     # 2 MB -> 3 MB live
        del a
        c = torch.empty(375_000)     # 1.5 MB -> 3.5 MB live: the peak
        del b, c
        d = torch.empty(100_000)     # 0.4 MB
        return d

    assert tensor_peak_bytes(fn) == 3_500_000
    assert keep.sum() == 1000


def test_bench_eval_json(capsys):
    assert main(["bench", "eval", "--dataset", "kronecker:10:4", "--hidden", "16",
                 "--batch-rows", "100", "5000", "--repeat", "1"]) == 0
    small, whole = _lines(capsys)
    assert (small["batch_rows"], whole["batch_rows"]) == (100, 1024)
    assert whole["max_abs_diff_vs_first"] < 1e-4
    for r in (small, whole):
        assert_cost(r, "call")
        assert r["calls_timed"] == 1 and r["wall_s"] == pytest.approx(r["time_s"])


def _step_trainer_and_batches():
    import argparse

    from scalegnn.bench.step import _batches, step_config
    from scalegnn.data import load_dataset
    from scalegnn.train.trainer import Trainer
    args = argparse.Namespace(hidden=32, arch="1-0-1-0", dropout=0.1, flush_denormal=True,
                              threads=2, size_subgraph=300, size_frontier=50, repeat=2, seed=0)
    ds = load_dataset("kronecker:10:4", seed=0)
    trainer = Trainer(ds, step_config(args, ds.multilabel), None, progress=False)
    return trainer, _batches(trainer, args)


def test_device_rounds_count_every_tensor_a_step_moves():
    """``bench step --device``'s rounds, run on the CPU device: the bytes are the batch's
    tensors plus both directions of its CSR, and the step times are the trainer's."""
    from scalegnn.bench.device import batch_tensors, device_rounds
    trainer, batches = _step_trainer_and_batches()
    b = batches[1]
    # one int32 pattern shared by both directions, the values of each
    want = (b.x.numel() * 4 + b.y.numel() * b.y.element_size() + b.loss_weight.numel() * 4
            + (b.num_nodes + 1) * 4 + b.num_edges * 4 + 2 * b.num_edges * 4)
    assert sum(t.numel() * t.element_size() for t in batch_tensors(b, torch.float32)) == want
    r = device_rounds(trainer, batches, torch.device("cpu"))
    assert r["device"] == "cpu" and r["iterations_timed"] == 2 and r["cuda_peak_mb"] is None
    assert r["transfer_bytes"] > 0 and r["iteration_ms"] > 0
    assert len(r["iteration_ms_all"]) == 2
    assert_cost(r, "iteration")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_bench_step_on_cuda(capsys):
    assert main(["bench", "step", "--dataset", "kronecker:10:4", "--size-subgraph", "300",
                 "--size-frontier", "50", "--hidden", "32", "--repeat", "2",
                 "--device", "cuda"]) == 0
    (r,) = _lines(capsys)
    assert r["device"].startswith("cuda") and r["cuda_peak_mb"] > 0
    assert r["transfer_bytes"] > 0 and r["pinned_transfer_ms"] > 0
    assert r["iteration_gpu_ms"] > 0 and r["iteration_ms"] >= r["transfer_ms"]
