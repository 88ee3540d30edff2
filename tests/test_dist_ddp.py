"""GradientSync's reduction: the mean of the ranks' gradients, and the same bits in a run's
first step as in a later one (DDP lays its buckets out anew after the first backward, and a
ring all-reduce rounds an element by its position in the buffer: reducing whole buckets, a run
resumed with W >= 3 ranks would round its first step unlike the run it continues); compressed,
within the wire type's precision; DDP's buckets sized to the model."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import torch
from torch.nn.parallel import DistributedDataParallel

from gloo_helpers import join, leave, spawn
from scalegnn.dist.ddp import bucket_cap_mb, no_buffer_sync

pytestmark = pytest.mark.dist

DIM, LAYERS, WORLD = 257, 5, 3


def _inputs(rank, steps):
    gen = torch.Generator().manual_seed(10 + rank)
    return [torch.randn(32, DIM, generator=gen) * 10.0 ** (rank % 3) for _ in range(steps)]


def _grads(xs, forward):
    """The model's gradients after each input's backward (no update between)."""
    out = []
    for x in xs:
        forward.zero_grad()
        forward(x).pow(2).sum().backward()
        out.append(torch.cat([p.grad.reshape(-1) for p in forward.parameters()]).numpy().copy())
    return np.stack(out)


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(*[torch.nn.Linear(DIM, DIM) for _ in range(LAYERS)])


def _rank(rank, world, port, out):
    from scalegnn.dist.ddp import GradientSync
    from scalegnn.dist.shard import TorchShard
    join(rank, world, port)
    shard = TorchShard(timeout=60)
    xs = _inputs(rank, 3)
    results = {"own": _grads(xs, _model())}
    for compression in ("none", "fp16"):
        sync = GradientSync(_model(), shard, compression=compression, bucket_mb=0.5)
        results[compression] = _grads(xs, sync.module)
        results[compression + "_bytes"] = np.array(sync.bytes)
    # a "resumed" run: a new GradientSync whose first step is the last input
    resumed = GradientSync(_model(), shard, bucket_mb=0.5)
    results["resumed"] = _grads(xs[-1:], resumed.module)
    np.savez(f"{out}/rank{rank}.npz", **results)
    leave()


def test_mean_is_the_same_bits_in_a_first_and_a_later_step(tmp_path):
    spawn(_rank, WORLD, str(tmp_path))
    ranks = [np.load(tmp_path / f"rank{r}.npz") for r in range(WORLD)]
    mean = sum(r["own"].astype(np.float64) for r in ranks) / WORLD
    scale = np.abs(mean).max()
    for r in ranks:
        assert np.array_equal(r["none"], ranks[0]["none"])  # every rank the same bits
        assert np.array_equal(r["resumed"][0], r["none"][-1])
        np.testing.assert_allclose(r["none"], mean, rtol=1e-5, atol=1e-6 * scale)
        assert np.abs(r["fp16"] - mean).max() <= 2e-3 * scale
    grad_bytes = ranks[0]["own"][0].size * 4
    assert int(ranks[0]["none_bytes"]) == 3 * grad_bytes
    assert int(ranks[0]["fp16_bytes"]) == 3 * grad_bytes // 2


def test_buckets_are_sized_to_the_model():
    small = torch.nn.Linear(10, 10)
    assert bucket_cap_mb(small) == 0.25
    mid = torch.nn.Linear(1024, 1024)  # 4 MiB of float32 gradients -> 4 buckets of 1 MiB
    assert bucket_cap_mb(mid) == pytest.approx((1024 * 1024 + 1024) * 4 / 4 / 2**20)
    big = torch.nn.Linear(8192, 8192)  # 256 MiB -> DDP's cap
    assert bucket_cap_mb(big) == 25.0


def test_buffer_sync_keyword_fits_the_installed_torch():
    """torch 2.13 renamed DDP's ``broadcast_buffers`` to ``forward_sync_buffers``; a torch
    without the new name (2.11, as on a CUDA machine seen here) gets the old one."""
    def before_2_13(self, module, device_ids=None, broadcast_buffers=True, process_group=None):
        pass

    def from_2_13(self, module, broadcast_buffers=None, forward_sync_buffers=None):
        pass

    assert no_buffer_sync(before_2_13) == {"broadcast_buffers": False}
    assert no_buffer_sync(from_2_13) == {"forward_sync_buffers": False}
    (key,) = no_buffer_sync()                  # the installed torch takes the one chosen
    assert key in inspect.signature(DistributedDataParallel.__init__).parameters
