"""The volume predicted from a plan is what one distributed epoch moves at p = 1 (rows and
bytes, per rank, both forward paths), and the epoch metrics report the overlapped share: a
rank whose peer sends late waits (share near 0) while the late rank itself does not."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from gloo_helpers import join, leave, spawn
from scalegnn.dist.accounting import comm_report, epoch_bytes, exchanged_layers
from test_dist_correctness import dist_config, tiny_dataset

pytestmark = pytest.mark.dist


def _worker(rank, world, port, plan_dir, out_dir, overlap, delay):

    from scalegnn.dist.mode import DistributedMode
    from scalegnn.dist.plan import PartitionPlan
    from scalegnn.train import Trainer
    if delay:
        os.environ["SCALEGNN_TEST_EXCHANGE_DELAY"] = delay
    join(rank, world, port)
    cfg = dist_config(overlap=overlap, dtype="float32")
    mode = DistributedMode(PartitionPlan.load(plan_dir, world), rank, world, cfg)
    tr = Trainer(mode, cfg, None, seed=1, progress=False)
    (batch,) = mode.batches(0)
    tr.train_step(batch)
    stats = mode.epoch_stats()
    if rank == 0:
        stats["layers"] = exchanged_layers(tr.model, overlap)
        with open(f"{out_dir}/stats.json", "w") as f:
            json.dump(stats, f)
    leave(mode)


def _run(tmp_path, method, world, overlap, delay=""):
    from scalegnn.dist.partition import partition_dataset
    ds = tiny_dataset(n=300, seed=5)
    plan = partition_dataset(ds, world, tmp_path / "plan", method=method, seed=0)
    spawn(_worker, world, str(tmp_path / "plan"), str(tmp_path),
                                      overlap, delay)
    return ds, plan, json.loads((tmp_path / "stats.json").read_text())


@pytest.mark.parametrize("method,world,overlap", [("gp", 3, True), ("rp", 2, False),
                                                  ("hp", 4, True)])
def test_predicted_volume_is_measured(tmp_path, method, world, overlap):
    if method == "hp":
        pytest.importorskip("mtkahypar")
    ds, plan, st = _run(tmp_path, method, world, overlap)
    rep = comm_report(ds.graph, plan.assignment(), world)
    assert rep["volume_total"] > 0
    layers = [tuple(x) for x in st["layers"]]               # arch 1-0-1-0, dim 8, 6 features:
    assert layers == [(6, False), (8, True)]
    rows = [int(r["rows_sent"]) for r in st["ranks"]]
    sent = [int(r["bytes_sent"]) for r in st["ranks"]]
    recv = [int(r["bytes_recv"]) for r in st["ranks"]]
    assert rows == [s * len(layers) for s in rep["sent"]]  # every graph layer sends V rows
    np.testing.assert_array_equal(sent, epoch_bytes(rep["sent"], rep["recv"], layers, 4))
    np.testing.assert_array_equal(recv, epoch_bytes(rep["recv"], rep["sent"], layers, 4))


def test_overlap_share_with_a_late_rank(tmp_path):
    delay = 0.5
    _, _, st = _run(tmp_path, "rp", 3, True, delay=f"1:{delay}")
    ranks = st["ranks"]
    assert 0.0 <= st["overlap_share"] <= 1.0
    for r, rk in enumerate(ranks):
        assert 0.0 <= rk["overlap_share"] <= 1.0 and rk["overlap_s"] > 0
        if r == 1:                                          # its peers' rows were waiting for it
            assert rk["fwd_wait_s"] < 0.5 * delay
        else:  # blocked on rank 1 in 2 graph layers, less the local product computed meanwhile
            assert rk["fwd_wait_s"] > 1.0 * delay             # (slow on a loaded machine)
            assert rk["overlap_share"] < ranks[1]["overlap_share"]
