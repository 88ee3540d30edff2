"""Partition-parallel minibatch training: with p = 1 (the whole subgraph's boundary exchanged),
W ranks computing their rows of the same GraphSAINT subgraph equal single-process GraphSAINT
on that subgraph stream (losses and weights after 3 steps), and the rows each step sends are the
connectivity-1 cut of the subgraph's column-net hypergraph under the plan."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from gloo_helpers import join, leave, spawn

pytestmark = pytest.mark.dist

STEPS = 3
SEED = 7
DATA = "planted:nodes=300,classes=3,features=8"


def config():
    from scalegnn.config import Config
    return Config.from_dict({
        "network": {"dim": 12, "arch": "1-0-1-0"},
        "params": {"dropout": 0.0, "lr": 0.02, "grad_clip": 0.0, "sample_coverage": 5},
        "phase": [{"end": 2, "sampler": "rw", "num_root": 20, "depth": 2}],
        "distributed": {"mode": "partition", "timeout": 60.0}})


def _weights(model) -> np.ndarray:
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()]).numpy()


def _rank(rank, world, port, plan_dir, out):

    from scalegnn.data import load_dataset
    from scalegnn.dist.minibatch import PartitionParallelMode
    from scalegnn.dist.plan import PartitionPlan
    from scalegnn.dist.shard import TorchShard
    from scalegnn.train import GraphSAINTMode, Trainer
    join(rank, world, port)
    cfg = config()
    plan = PartitionPlan.load(plan_dir, world)
    mode = PartitionParallelMode(GraphSAINTMode(load_dataset(DATA), cfg, seed=SEED),
                                 plan.assignment(), TorchShard(timeout=60),
                                 settings=cfg.section("distributed"))
    tr = Trainer(mode, cfg, None, seed=SEED, progress=False)
    it = mode.batches(0)
    losses, volumes, nodes = [], [], []
    for _ in range(STEPS):
        batch = next(it)
        losses.append(tr.train_step(batch))
        volumes.append(batch.meta["volume"])
        nodes.append(batch.meta["stream_index"])
    stats = mode.epoch_stats()
    np.savez(f"{out}/rank{rank}.npz", losses=np.array(losses), weights=_weights(tr.model))
    if rank == 0:
        with open(f"{out}/steps.json", "w") as f:
            json.dump({"rows": stats["step_rows_sent"], "volumes": volumes,
                       "streams": nodes}, f)
    leave(mode)


def reference():
    """Single-process GraphSAINT, the same subgraphs: losses, weights, the batches."""
    from scalegnn.data import load_dataset
    from scalegnn.train import GraphSAINTMode, Trainer
    torch.set_num_threads(1)
    cfg = config()
    mode = GraphSAINTMode(load_dataset(DATA), cfg, seed=SEED)
    tr = Trainer(mode, cfg, None, seed=SEED, progress=False)
    it = mode.batches(0)
    batches = [next(it) for _ in range(STEPS)]
    losses = [tr.train_step(b) for b in batches]
    mode.close()
    return np.array(losses), _weights(tr.model), batches


def cut(batch, assignment) -> int:
    """Σ_u (λ_u - 1) of the subgraph's column-net hypergraph: net u = the parts of u and of
    every subgraph row that references u."""
    owner = assignment[batch.nodes]
    rows = np.repeat(np.arange(batch.num_nodes), np.diff(batch.adj.indptr))
    cols = np.asarray(batch.adj.indices)
    parts = {u: {int(owner[u])} for u in range(batch.num_nodes)}
    for r, c in zip(rows, cols):
        parts[int(c)].add(int(owner[r]))
    return sum(len(p) - 1 for p in parts.values())


@pytest.mark.parametrize("world,method", [(2, "random"), (3, "metis")])
def test_p1_equals_single_process_graphsaint(tmp_path, world, method):
    from scalegnn.data import load_dataset
    from scalegnn.dist.partition import partition_dataset
    plan = partition_dataset(load_dataset(DATA), world, tmp_path / "plan", method=method,
                             seed=1)
    spawn(_rank, world, str(tmp_path / "plan"), str(tmp_path))
    ref_losses, ref_weights, batches = reference()
    for r in range(world):
        got = np.load(tmp_path / f"rank{r}.npz")
        np.testing.assert_allclose(got["losses"], ref_losses, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(got["weights"], ref_weights, rtol=1e-5, atol=1e-6)
    steps = json.loads((tmp_path / "steps.json").read_text())
    assert steps["streams"] == [b.meta["stream_index"] for b in batches]
    a = plan.assignment()
    layers = 2                                     # arch 1-0-1-0: two graph layers
    for b, vol, rows in zip(batches, steps["volumes"], steps["rows"]):
        assert vol == cut(b, a) > 0                 # the exchange is the hypergraph cut
        assert rows == layers * vol                 # forward rows sent by all ranks, per step
