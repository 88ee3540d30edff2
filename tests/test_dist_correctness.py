"""With p = 1, K-rank BNS-GCN training equals single-process full-batch training: same loss and
same (all-reduced) weight gradients over 3 Adam steps, float64, dropout 0, to 1e-5."""

from __future__ import annotations


import numpy as np
import pytest
import torch

from gloo_helpers import join, leave, spawn
from scalegnn.data.dataset import Dataset
from scalegnn.graph import Graph

pytestmark = pytest.mark.dist

STEPS = 3
SEED = 3
CFG = {"network": {"dim": 8, "arch": "1-0-1-0", "aggr": "concat", "bias": "norm"},
       "params": {"dropout": 0.0, "lr": 0.01, "grad_clip": 0.0, "standardize": False},
       "phase": [{"end": STEPS, "sampler": "full"}],
       "distributed": {"dtype": "float64", "timeout": 60.0, "boundary_p": 1.0}}


def dist_config(**distributed):
    """The tests' config (the one schema every mode reads), with distributed overrides."""
    from scalegnn.config import Config
    raw = {k: (dict(v) if isinstance(v, dict) else v) for k, v in CFG.items()}
    raw["distributed"].update(distributed)
    return Config.from_dict(raw)


def tiny_dataset(n=240, seed=0) -> Dataset:
    rng = np.random.default_rng(seed)
    src = rng.integers(0, n, 5 * n)
    dst = (src + rng.integers(1, 12, 5 * n)) % n      # local-ish edges: METIS finds a cut
    far = rng.integers(0, n, n // 2)
    src = np.concatenate([src, far])
    dst = np.concatenate([dst, rng.integers(0, n, n // 2)])
    g = Graph.from_edges(src, dst, n, symmetrize=True)
    x = rng.standard_normal((n, 6)).astype(np.float32)
    y = rng.integers(0, 3, n)
    perm = rng.permutation(n)
    return Dataset(g, x, y, perm[:100], perm[100:170], perm[170:]).validate()


def _worker(rank, world, port, plan_dir, out_dir, overlap):

    from scalegnn.dist.mode import DistributedMode
    from scalegnn.dist.plan import PartitionPlan
    from scalegnn.train import Trainer
    join(rank, world, port)
    cfg = dist_config(overlap=overlap)
    mode = DistributedMode(PartitionPlan.load(plan_dir, world), rank, world, cfg)
    tr = Trainer(mode, cfg, None, seed=SEED, progress=False)
    losses, grads = [], []
    for step in range(STEPS):     # the trainer's own step: forward, all-reduce, Adam
        (batch,) = mode.batches(step)
        losses.append(tr.train_step(batch))
        grads.append(torch.cat([p.grad.reshape(-1) for p in tr.params]).numpy().copy())
    np.savez(f"{out_dir}/rank{rank}.npz", loss=np.array(losses), grads=np.stack(grads))
    leave(mode)


def reference(ds: Dataset):
    """Single-process full batch: model(x, Â_full), loss weight 1/|V_train| on training nodes."""
    from scalegnn.nn.models import build_model
    from scalegnn.ops import SparseAdj
    net = CFG["network"]
    torch.manual_seed(SEED)
    model = build_model(ds.num_features, ds.num_classes, hidden=net["dim"], arch=net["arch"],
                        aggr=net["aggr"], bias=net["bias"], dropout=0.0).double()
    adj = SparseAdj.from_graph(ds.graph.row_normalized(dtype=np.float64), dtype=np.float64)
    x = torch.as_tensor(np.asarray(ds.features), dtype=torch.float64)
    y = torch.as_tensor(ds.labels)
    w = torch.zeros(ds.num_nodes, dtype=torch.float64)
    w[ds.train_idx] = 1.0 / ds.train_idx.size
    params = list(model.parameters())
    opt = torch.optim.Adam(params, lr=CFG["params"]["lr"])
    losses, grads = [], []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = model.loss(model(x, adj), y, w)
        loss.backward()
        losses.append(loss.item())
        grads.append(torch.cat([p.grad.reshape(-1) for p in params]).numpy().copy())
        opt.step()
    return np.array(losses), np.stack(grads)


@pytest.mark.parametrize("world,method,overlap", [(2, "metis", False), (4, "random", True)])
def test_p1_matches_full_batch(tmp_path, world, method, overlap):
    """2 ranks through the model's exchange hook, 4 ranks through the overlapped forward."""
    from scalegnn.dist.partition import partition_dataset
    ds = tiny_dataset()
    plan = partition_dataset(ds, world, tmp_path / "plan", method=method, seed=1)
    assert plan.meta["totals"]["comm_volume"] > 0       # the test really exchanges rows
    spawn(_worker, world, str(tmp_path / "plan"), str(tmp_path), overlap)
    ref_loss, ref_grads = reference(ds)
    for r in range(world):
        got = np.load(tmp_path / f"rank{r}.npz")
        np.testing.assert_allclose(got["loss"], ref_loss, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(got["grads"], ref_grads, rtol=1e-5, atol=1e-7)
    assert np.abs(ref_grads).max() > 1e-3                # gradients are not trivially zero
