"""Partition plans against slow references; refusal of broken plans; BNS sampling unbiasedness
(single process: no communication needed)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest
import torch

from scalegnn.dist.exchange import BoundaryExchange, boundary_keep, split_adj
from scalegnn.dist.partition import assign, partition_dataset, write_plan
from scalegnn.dist.plan import PartitionPlan
from scalegnn.errors import ConfigError, PlanError
from test_dist_correctness import tiny_dataset


@pytest.fixture(scope="module")
def ds():
    return tiny_dataset(n=200, seed=4)


@pytest.mark.parametrize("method,parts", [("metis", 3), ("random", 4)])
def test_plan_matches_graph(tmp_path, ds, method, parts):
    plan = partition_dataset(ds, parts, tmp_path / "p", method=method, seed=2)
    plan = PartitionPlan.load(tmp_path / "p", world_size=parts)
    a = plan.assignment()
    assert np.bincount(a, minlength=parts).min() > 0
    g = ds.graph
    adj = {(u, int(v)) for u in range(g.num_nodes) for v in g.indices[g.indptr[u]:g.indptr[u + 1]]}
    parts_ = [plan.rank(r) for r in range(parts)]
    seen_rows = np.concatenate([p.inner for p in parts_])
    assert np.array_equal(np.sort(seen_rows), np.arange(g.num_nodes))   # every node owned once
    total_vol = 0
    for r, p in enumerate(parts_):
        assert np.array_equal(p.inner, np.flatnonzero(a == r))
        glob = np.concatenate([p.inner, p.boundary])                    # local col -> global id
        local = set()
        for i, u in enumerate(p.inner):
            for c in p.indices[p.indptr[i]:p.indptr[i + 1]]:
                local.add((int(u), int(glob[c])))
        assert local == {(u, v) for (u, v) in adj if a[u] == r}        # exactly my rows' edges
        # boundary = neighbours owned elsewhere, sorted by (owner, id), owners correct
        nb = {v for (u, v) in adj if a[u] == r and a[v] != r}
        assert set(p.boundary.tolist()) == nb and np.array_equal(p.owner, a[p.boundary])
        assert np.array_equal(np.lexsort((p.boundary, p.owner)), np.arange(p.num_boundary))
        np.testing.assert_array_equal(p.deg_full, g.degrees()[p.inner])
        np.testing.assert_array_equal(p.features, ds.features[p.inner])
        np.testing.assert_array_equal(p.labels, ds.labels[p.inner])
        assert p.train_mask.sum() == np.isin(p.inner, ds.train_idx).sum()
        for j in range(parts):                                          # send_i[j] <-> recv_j[i]
            q = parts_[j]
            np.testing.assert_array_equal(p.inner[p.send_rows(j)], q.boundary[q.recv_positions(r)])
        total_vol += p.num_boundary
        st = plan.meta["stats"][r]
        assert st["comm_volume"] == p.num_boundary and st["inner"] == p.num_inner
    assert plan.meta["totals"]["comm_volume"] == total_vol
    assert plan.meta["task"]["num_train"] == ds.train_idx.size
    plan.check_graph(ds.graph)


def test_metis_cuts_less_than_random(tmp_path, ds):
    m = partition_dataset(ds, 4, tmp_path / "m", method="metis").meta["totals"]["comm_volume"]
    r = partition_dataset(ds, 4, tmp_path / "r", method="random").meta["totals"]["comm_volume"]
    assert m < r


def test_sparsify_for_partitioning(ds):
    from scalegnn.dist.graphs import sparsify_for_partitioning
    g = ds.graph
    budget = g.num_edges // 2
    s = sparsify_for_partitioning(g, budget, seed=1)
    assert s.is_symmetric() and s.num_edges < g.num_edges
    k = budget / (2 * g.num_nodes)
    full = {(u, int(v)) for u in range(g.num_nodes) for v in g.indices[g.indptr[u]:g.indptr[u + 1]]}
    sub = {(u, int(v)) for u in range(s.num_nodes) for v in s.indices[s.indptr[u]:s.indptr[u + 1]]}
    assert sub <= full
    deg = g.degrees()
    low = {(u, v) for (u, v) in full if min(deg[u], deg[v]) <= k}
    assert low <= sub                                   # low-degree endpoints keep every edge
    assert sparsify_for_partitioning(g, g.num_edges) is g
    a = assign(g, 3, "metis", max_entries=budget)      # still a valid balanced-ish partition
    assert np.bincount(a, minlength=3).min() > 0
    counts = np.bincount(assign(g, 4, "metis", weights="nodes"), minlength=4)
    assert counts.max() <= 1.1 * counts.mean()          # node weights balance rows


def test_plan_refusals(tmp_path, ds):
    partition_dataset(ds, 3, tmp_path / "p", method="random")
    with pytest.raises(PlanError, match="3 parts but 2 ranks"):
        PartitionPlan.load(tmp_path / "p", world_size=2)
    other = tiny_dataset(n=201, seed=5)
    with pytest.raises(PlanError, match="re-run"):
        PartitionPlan.load(tmp_path / "p").check_graph(other.graph)
    (tmp_path / "p" / "rank_1" / "send_idx.npy").unlink()
    with pytest.raises(PlanError, match="missing send_idx.npy"):
        PartitionPlan.load(tmp_path / "p").rank(1)
    shutil.rmtree(tmp_path / "p" / "rank_2")
    with pytest.raises(PlanError, match="rank_2 .*missing"):
        PartitionPlan.load(tmp_path / "p")
    (tmp_path / "p" / "plan.json").unlink()
    with pytest.raises(PlanError, match="no plan.json"):
        PartitionPlan.load(tmp_path / "p")
    with pytest.raises(ConfigError, match="--method"):
        assign(ds.graph, 2, "spectral")
    with pytest.raises(PlanError, match="empty"):
        write_plan(ds, np.r_[np.zeros(ds.num_nodes - 1, int), 2], tmp_path / "q")


def test_cli_refuses_mismatched_plan_in_one_line(tmp_path, ds):
    partition_dataset(ds, 2, tmp_path / "p", method="random")
    shutil.rmtree(tmp_path / "p" / "rank_1")
    r = subprocess.run([sys.executable, "-m", "scalegnn", "dist-train", "--nprocs", "2",
                        "--plan", str(tmp_path / "p")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "rank_1" in lines[0] and "Traceback" not in r.stderr


def test_sampled_adjacency_is_unbiased(tmp_path, ds):
    """E[Â_epoch · [x_in; x_kept]] = Â_local · [x_in; x_bd] (kept boundary scaled by 1/p)."""
    plan = partition_dataset(ds, 3, tmp_path / "p", method="metis")
    part = plan.rank(1)
    ex = BoundaryExchange(part, device="cpu", dtype=torch.float64, timeout=5)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((part.num_inner + part.num_boundary, 4))
    full = ex.full_adj
    ref = np.zeros((part.num_inner, 4))
    for i in range(part.num_inner):                                     # slow reference: mean
        cols = part.indices[part.indptr[i]:part.indptr[i + 1]]
        ref[i] = x[cols].sum(0) / part.deg_full[i]
    dense = lambda adj: adj.to_dense().numpy()                          # noqa: E731
    np.testing.assert_allclose(dense(full) @ x, ref, atol=1e-12)
    p, trials, acc = 0.3, 4000, np.zeros_like(ref)
    for _ in range(trials):
        keep = rng.random(part.num_boundary) < p
        adj = ex._build_adj(keep, p)
        xk = np.concatenate([x[:part.num_inner], x[part.num_inner:][keep]])
        acc += dense(adj) @ xk
    assert np.abs(acc / trials - ref).max() < 0.08
    drop = ex._build_adj(np.zeros(part.num_boundary, bool), 0.0)        # p = 0: inner only
    assert drop.num_cols == part.num_inner
    np.testing.assert_allclose(dense(drop) @ x[:part.num_inner],
                               (dense(full)[:, :part.num_inner]) @ x[:part.num_inner])


def test_sampled_split_equals_rebuilt_matrix(tmp_path, ds):
    """The per-epoch [Â_in | Â_bd] (kept rows of the boundary transpose) equals splitting the
    local matrix rebuilt from scratch for the same kept set, at p in (0, 1) and p = 0."""
    plan = partition_dataset(ds, 3, tmp_path / "p", method="metis")
    ex = BoundaryExchange(plan.rank(2), device="cpu", dtype=torch.float32, timeout=5)
    rng = np.random.default_rng(1)
    for p in (0.3, 0.0):
        keep = rng.random(ex.part.num_boundary) < p
        got = ex._sampled_boundary(keep, p)
        want = split_adj(ex._build_adj(keep, p), ex.n_in)
        for a, b in ((ex.full_split[0], want[0]), (got, want[1])):
            assert a.shape == b.shape
            np.testing.assert_array_equal(a.indptr, b.indptr)
            np.testing.assert_array_equal(a.indices, b.indices)
            np.testing.assert_allclose(a.data, b.data, rtol=1e-6)
        np.testing.assert_allclose(got.t().to_dense().numpy(), got.to_dense().numpy().T)


def test_boundary_keep_draws_are_bernoulli_and_pure():
    nodes = np.arange(200_000)
    for p in (0.1, 0.5):
        k = boundary_keep(7, 3, 1, nodes, p)
        assert abs(k.mean() - p) < 4 * np.sqrt(p * (1 - p) / nodes.size)
        # independent of position and of the other ids asked about in the same call
        np.testing.assert_array_equal(boundary_keep(7, 3, 1, nodes[::-1], p), k[::-1])
        np.testing.assert_array_equal(boundary_keep(7, 3, 1, nodes[5:9], p), k[5:9])
    a, b = boundary_keep(7, 3, 1, nodes, 0.5), boundary_keep(7, 4, 1, nodes, 0.5)
    c, d = boundary_keep(7, 3, 2, nodes, 0.5), boundary_keep(8, 3, 1, nodes, 0.5)
    for other in (b, c, d):                      # epoch, receiver, seed: fresh draws
        assert abs((a & other).mean() - 0.25) < 0.01
    assert boundary_keep(7, 3, 1, nodes, 1.0).all() and not boundary_keep(7, 3, 1, nodes, 0.0).any()


def test_owners_and_receivers_agree_on_kept_rows_without_messages(tmp_path, ds):
    """Every rank samples on its own; what owner i sends to j is exactly j's kept boundary
    block from i, in order (so the positional exchange stays consistent)."""
    plan = partition_dataset(ds, 3, tmp_path / "p", method="metis")
    parts = [plan.rank(r) for r in range(3)]
    exs = [BoundaryExchange(pt, device="cpu", dtype=torch.float32, timeout=5, seed=5)
           for pt in parts]
    for epoch in range(3):
        for ex in exs:
            ex.sample(epoch, 0.4)
        for j, ex_j in enumerate(exs):
            kept_total = 0
            for i, ex_i in enumerate(exs):
                if i == j or i not in ex_j.recv_peers:
                    continue
                a, b = parts[j].recv_ptr[i], parts[j].recv_ptr[i + 1]
                want = parts[j].boundary[a:b][ex_j._keep[a:b]]
                got = parts[i].inner[ex_i.send_rows[j].numpy()]
                np.testing.assert_array_equal(got, want)
                assert ex_j.recv_counts[i] == want.shape[0]
                kept_total += want.shape[0]
            assert ex_j.num_kept == kept_total == ex_j.split[1].num_cols


def test_any_assignment_makes_a_plan(tmp_path, ds):
    """A hypergraph partitioner only has to supply node -> part."""
    a = (np.arange(ds.num_nodes) * 7) % 3
    plan = write_plan(ds, a, tmp_path / "h", method="hypergraph")
    assert plan.meta["method"] == "hypergraph"
    assert np.array_equal(PartitionPlan.load(tmp_path / "h").assignment(), a)
    assert sum(plan.rank(r).num_inner for r in range(3)) == ds.num_nodes


def test_plan_json_written_last_and_readable(tmp_path, ds):
    plan = partition_dataset(ds, 2, tmp_path / "p", method="metis")
    meta = json.loads((tmp_path / "p" / "plan.json").read_text())
    assert meta["parts"] == 2 and meta["fingerprint"]["num_nodes"] == ds.num_nodes
    assert not list((tmp_path / "p").rglob("*.tmp"))
    assert plan.meta["totals"]["messages"] >= 1
