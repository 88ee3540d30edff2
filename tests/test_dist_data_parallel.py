"""Data-parallel minibatch training: W gloo ranks give the same losses and weights after 3 steps
as one process accumulating the same W batches per step (GraphSAINT, shaDow-GNN node and link
tasks), with the single-process normalization on every rank."""

from __future__ import annotations


import numpy as np
import pytest
import torch

from gloo_helpers import join, leave, spawn

pytestmark = pytest.mark.dist

STEPS = 3
SEED = 5
DATA = "planted:nodes=400,classes=3,features=8"
CONFIGS = {
    "graphsaint": {"phase": [{"end": 2, "sampler": "rw", "num_root": 15, "depth": 2}],
                   "params": {"sample_coverage": 5}},
    "shadow": {"phase": [{"end": 2, "sampler": "rw"}],
               "shadow": {"extractors": [{"kind": "khop", "depth": 2, "budget": 5}],
                          "batch_size": 16, "readout": "center+mean", "cache_dir": "none"}},
    "link": {"phase": [{"end": 2, "sampler": "rw"}],
             "shadow": {"task": "link", "extractors": [{"kind": "khop", "depth": 1,
                                                       "budget": 8}],
                        "batch_size": 16, "readout": "hadamard", "negatives": 50,
                        "pair_labels": 2, "cache_dir": "none"}},
}


def config(kind: str):
    from scalegnn.config import Config
    raw = {"network": {"dim": 12, "arch": "1-0-1-0"},
           "params": {"dropout": 0.0, "lr": 0.02, "grad_clip": 0.0}}
    for key, value in CONFIGS[kind].items():
        raw[key] = {**raw[key], **value} if isinstance(value, dict) and key in raw else value
    return Config.from_dict(raw)


def stream(mode):
    """The mode's batches across epochs (GraphSAINT's stream goes on from epoch to epoch)."""
    epoch = 0
    while True:
        yield from mode.batches(epoch)
        epoch += 1


def _weights(model) -> np.ndarray:
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()]).numpy()


def _rank(rank, world, port, kind, out):

    from scalegnn.data import load_dataset
    from scalegnn.dist.data_parallel import DataParallelMode
    from scalegnn.dist.shard import TorchShard
    from scalegnn.train import Trainer, mode_for
    join(rank, world, port)
    cfg = config(kind)
    shard = TorchShard(timeout=60)
    mode = DataParallelMode(mode_for(load_dataset(DATA), cfg, seed=SEED, shard=shard), shard)
    tr = Trainer(mode, cfg, None, seed=SEED, progress=False)
    it = stream(mode)
    losses = [tr.train_step(next(it)) for _ in range(STEPS)]
    norm = getattr(getattr(mode.inner, "_loader", None), "norm", None)
    np.savez(f"{out}/rank{rank}.npz", losses=np.array(losses), weights=_weights(tr.model),
             loss_weight=norm.loss_weight if norm is not None else np.zeros(0))
    leave(mode)


def reference(kind: str, world: int):
    """One process, the same W batches per step, their gradients averaged: losses, weights."""
    from scalegnn.data import load_dataset
    from scalegnn.train import Trainer, mode_for
    torch.set_num_threads(1)
    cfg = config(kind)
    mode = mode_for(load_dataset(DATA), cfg, seed=SEED)
    tr = Trainer(mode, cfg, None, seed=SEED, progress=False)
    it = stream(mode)
    losses = []
    for _ in range(STEPS):
        tr.model.train()
        tr.optimizer.zero_grad(set_to_none=True)
        total = 0.0
        for _ in range(world):
            batch = next(it)
            loss = tr.model.loss(mode.forward(tr.model, batch), batch.y, batch.loss_weight)
            (loss / world).backward()
            total += float(loss.detach()) / world
        tr.optimizer.step()
        losses.append(total)
    norm = getattr(getattr(mode, "_loader", None), "norm", None)
    mode.close()
    return np.array(losses), _weights(tr.model), norm


@pytest.mark.parametrize("kind,world", [("graphsaint", 2), ("graphsaint", 4), ("shadow", 2),
                                        ("shadow", 4), ("link", 2)])
def test_w_ranks_equal_one_process_accumulating(tmp_path, kind, world):
    spawn(_rank, world, kind, str(tmp_path))
    ref_losses, ref_weights, norm = reference(kind, world)
    for r in range(world):
        got = np.load(tmp_path / f"rank{r}.npz")
        np.testing.assert_allclose(got["losses"], ref_losses, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(got["weights"], ref_weights, rtol=1e-5, atol=1e-6)
        if norm is not None:   # GraphSAINT: the single-process λ on every rank, exactly
            assert np.array_equal(got["loss_weight"], norm.loss_weight)
    assert np.ptp(ref_losses) > 0                      # the steps really train
