"""Stochastic hypergraph partitioning: the Hoeffding batch count, the per-minibatch volume
against the column-net definition, and the union hypergraph (nets of batches kept apart)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from scalegnn.dist.hypergraph import iter_nets, vertex_weights, write_hmetis
from scalegnn.dist.partition import assign_random
from scalegnn.dist.shp import (batch_nets, batch_volume, expected_volume, hoeffding_nets,
                               sample_for_shp)
from scalegnn.errors import ConfigError
from scalegnn.sampling import make_sampler
from test_dist_correctness import tiny_dataset


@pytest.fixture(scope="module")
def ds():
    return tiny_dataset(n=300, seed=7)


def test_hoeffding_nets():
    assert hoeffding_nets(4, 0.1, 0.5) == math.ceil(9 / 0.02 * math.log(4))
    assert hoeffding_nets(32, 0.1, 0.5) == math.ceil(31 ** 2 / 0.02 * math.log(4))
    assert hoeffding_nets(1, 0.1, 0.5) == 0
    with pytest.raises(ConfigError, match="--theta"):
        hoeffding_nets(4, 0.0, 0.5)
    with pytest.raises(ConfigError, match="--delta"):
        hoeffding_nets(4, 0.1, 1.0)
    with pytest.raises(ConfigError, match="--delta"):  # 2/δ overflows: found by the CLI fuzz
        hoeffding_nets(2, 0.5, 5e-324)
    with pytest.raises(ConfigError, match="--theta"):
        hoeffding_nets(4, 1e-200, 0.5)


def test_batch_volume_is_column_net_km1(ds):
    smp = make_sampler("rw", ds.graph, ds.train_idx, {"num_root": 30, "depth": 2})
    a = assign_random(ds.num_nodes, 4, seed=1)
    for sub in smp.sample(5, seed=3):
        g = sub.graph
        lam = 0
        for j in range(g.num_nodes):                     # net j = {j} ∪ rows using column j
            pins = {int(i) for i in range(g.num_nodes)
                    if j in g.indices[g.indptr[i]:g.indptr[i + 1]]} | {j}
            lam += len({a[sub.nodes[i]] for i in pins}) - 1
        assert batch_volume(sub, a) == lam


def test_union_keeps_batches_apart(tmp_path, ds):
    smp = make_sampler("rw", ds.graph, ds.train_idx, {"num_root": 20, "depth": 2})
    subs, need = sample_for_shp(smp, 4, theta=0.5, delta=0.5, seed=0, chunk=3)
    assert need == hoeffding_nets(4, 0.5, 0.5)
    nets = np.cumsum([s.num_nodes for s in subs])
    assert nets[-1] >= need and (len(subs) == 1 or nets[-2] < need)   # b is the smallest
    w = vertex_weights(ds.graph)
    count = write_hmetis(tmp_path / "u.hgr", (b for s in subs for b in batch_nets(s)),
                         ds.num_nodes, w)
    per_batch = [sum(p.shape[0] - 1 for p, _ in iter_nets(s.graph)) for s in subs]
    assert count == sum(per_batch)                       # one net per batch column, none merged
    lines = (tmp_path / "u.hgr").read_text().splitlines()[1:1 + count]
    first = subs[0]
    ref = [sorted(first.nodes[pins[ptr[i]:ptr[i + 1]]].tolist())
           for ptr, pins in iter_nets(first.graph) for i in range(ptr.shape[0] - 1)]
    assert [sorted(int(x) - 1 for x in ln.split()) for ln in lines[:len(ref)]] == ref


def test_expected_volume_uses_fresh_batches(ds):
    smp = make_sampler("rw", ds.graph, ds.train_idx, {"num_root": 20, "depth": 2})
    a = assign_random(ds.num_nodes, 3, seed=0)
    e = expected_volume(smp, a, 8, seed=0)
    from scalegnn.dist.shp import EVAL_START
    fresh = smp.sample(8, 0, start=EVAL_START)
    assert e["mean"] == pytest.approx(np.mean([batch_volume(s, a) for s in fresh]))
    assert e["sem"] >= 0


def test_min_batches_and_prior(monkeypatch, ds):
    import scalegnn.dist.shp as S
    smp = make_sampler("rw", ds.graph, ds.train_idx, {"num_root": 20, "depth": 2})
    subs, need = sample_for_shp(smp, 4, theta=0.5, delta=0.5, seed=0, chunk=3, min_batches=7)
    assert len(subs) == 7 and sum(s.num_nodes for s in subs) >= need
    with pytest.raises(ConfigError, match="--min-batches"):
        sample_for_shp(smp, 4, theta=0.5, delta=0.5, min_batches=-1)
    seen = {}

    def fake(nets, weights, parts, **kw):
        seen["nets"] = sum(ptr.shape[0] - 1 for ptr, _ in nets)
        return np.zeros(len(weights), dtype=np.int32)

    monkeypatch.setattr(S, "partition_nets", fake)
    batch = sum(ptr.shape[0] - 1 for s in subs for ptr, _ in batch_nets(s))
    full = sum(ptr.shape[0] - 1 for ptr, _ in iter_nets(ds.graph))
    S.assign_shp(ds.graph, subs, 4, prior=False)
    assert seen["nets"] == batch
    S.assign_shp(ds.graph, subs, 4)                       # the full graph's nets, once
    assert seen["nets"] == batch + full
