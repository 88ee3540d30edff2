"""GraphSAINTLoader: batch contents vs hand computation, stream order, determinism, modes."""

import math

import numpy as np
import pytest
import torch

from scalegnn.data import Dataset
from scalegnn.errors import ConfigError
from scalegnn.graph import Graph
from scalegnn.sampling import GraphSAINTLoader, Sampler


def tiny_dataset(n=400, m=2400, multilabel=False, seed=0):
    rng = np.random.default_rng(seed)
    g = Graph.from_edges(rng.integers(0, n, m), rng.integers(0, n, m), n)
    perm = rng.permutation(n)
    feats = rng.standard_normal((n, 5)).astype(np.float32)
    labels = (rng.random((n, 3)) < 0.4).astype(np.float32) if multilabel \
        else rng.integers(0, 4, n)
    return Dataset(g, feats, labels, perm[:240], perm[240:320], perm[320:])


def batches(loader, k):
    return [loader.next_batch() for _ in range(k)]


def check_batch(ds, loader, b, graph, loss_nodes):
    nodes = b.nodes
    assert np.all(np.diff(nodes) > 0)
    ref, eids = graph.induced_subgraph(nodes)
    np.testing.assert_array_equal(b.adj.indices, ref.indices)
    np.testing.assert_array_equal(b.edge_ids, eids)
    rows = np.repeat(nodes, b.adj.degrees())
    want = loader.norm.edge_multiplier[eids] / graph.degrees()[rows]
    np.testing.assert_allclose(b.adj.data, want, rtol=1e-6)
    np.testing.assert_array_equal(b.adj.data[b.adj_t_perm], b.adj.transpose().data)
    np.testing.assert_array_equal(b.x.numpy(), ds.features[nodes])
    np.testing.assert_array_equal(b.y.numpy(), ds.labels[nodes])
    is_loss = np.isin(nodes, loss_nodes)
    lw = b.loss_weight.numpy()
    assert lw.dtype == np.float32 and np.all(lw[~is_loss] == 0)
    c = loader.norm.node_counts[nodes[is_loss]].astype(float)
    c[c == 0] = 0.1
    np.testing.assert_allclose(lw[is_loss], loader.norm.num_subgraphs / c / loss_nodes.size,
                               rtol=1e-6)


@pytest.mark.parametrize("sampler,params", [("rw", {"num_root": 15, "depth": 2}),
                                            ("mrw", {"size_subgraph": 60, "size_frontier": 15})])
def test_inductive_batches(sampler, params):
    ds = tiny_dataset()
    with GraphSAINTLoader(ds, sampler, params, coverage=2, seed=3, num_threads=2) as L:
        n_pre = L.stats["presampled"]
        assert len(L) == math.ceil(240 / L.sampler.size_budget)
        bs = batches(L, n_pre + 5)
        assert [b.meta["stream_index"] for b in bs] == list(range(n_pre + 5))
        for b in bs[n_pre - 2:]:  # the last pre-sampled ones and fresh ones from the pool
            assert np.all(np.isin(b.nodes, ds.train_idx))
            check_batch(ds, L, b, ds.train_graph, ds.train_idx)
        assert L.stats["batches"] == n_pre + 5
        assert L.presample_seconds > 0


def test_transductive_batches_and_multilabel():
    ds = tiny_dataset(multilabel=True)
    with GraphSAINTLoader(ds, "node", {"size_subgraph": 80}, transductive=True, coverage=3,
                          seed=1, num_threads=1) as L:
        bs = batches(L, L.stats["presampled"] + 3)
        assert any(not np.all(np.isin(b.nodes, ds.train_idx)) for b in bs)
        for b in bs[-4:]:
            check_batch(ds, L, b, ds.graph, ds.train_idx)
            assert b.y.dtype == torch.float32


def test_stream_is_identical_across_threads_and_pool_depth(monkeypatch):
    monkeypatch.setattr(Sampler, "MIN_WORK", 1)  # really use 2 workers on this small graph
    ds = tiny_dataset(seed=5)
    kw = dict(coverage=1, seed=9)
    outs = []
    for threads, depth in [(1, 0), (2, 3), (2, 1)]:
        with GraphSAINTLoader(ds, "edge", {"size_subg_edge": 20}, num_threads=threads,
                              pool_depth=depth, **kw) as L:
            outs.append([(b.nodes.copy(), b.adj.data.copy()) for b in batches(L, 30)])
    for other in outs[1:]:
        for (n1, d1), (n2, d2) in zip(outs[0], other):
            np.testing.assert_array_equal(n1, n2)
            np.testing.assert_array_equal(d1, d2)


def test_epochs_and_unnormalized_mode():
    ds = tiny_dataset()
    with GraphSAINTLoader(ds, "rw", {"num_root": 20, "depth": 1}, normalize=False,
                          clip_multiple=16) as L:
        assert L.stats["presampled"] == 0
        for _ in range(2):
            got = list(L)
            assert len(got) == len(L)
        for b in got:
            assert b.num_nodes % 16 == 0
            rows = np.repeat(b.nodes, b.adj.degrees())
            np.testing.assert_allclose(b.adj.data, 1.0 / ds.train_graph.degrees()[rows])
            assert b.loss_weight.sum().item() == pytest.approx(1.0)
        assert L.stats["batches"] == 2 * len(L)
        assert "wait_seconds" in L.stats and "sample_seconds" in L.stats


def test_close_stops_the_thread_and_rejects_use():
    ds = tiny_dataset()
    L = GraphSAINTLoader(ds, "rw", {"num_root": 10, "depth": 2}, coverage=1, pool_depth=2)
    batches(L, L.stats["presampled"] + 2)
    assert L._pool.alive
    L.close()
    assert not L._pool.alive
    with pytest.raises(ConfigError, match="close"):
        L.next_batch()


@pytest.mark.parametrize("kw,key", [({"pool_depth": -1}, "pool_depth"),
                                    ({"clip_multiple": 1.5}, "clip_multiple"),
                                    ({"num_threads": 0}, "num_threads")])
def test_bad_loader_arguments(kw, key):
    with pytest.raises(ConfigError, match=key):
        GraphSAINTLoader(tiny_dataset(), "rw", {"num_root": 10, "depth": 2}, **kw)


def test_presample_keep_budget_continues_the_stream(monkeypatch):
    ds = tiny_dataset()
    monkeypatch.setattr(GraphSAINTLoader, "PRESAMPLE_KEEP_BYTES", 0)
    with GraphSAINTLoader(ds, "rw", {"num_root": 15, "depth": 2}, coverage=2, seed=3) as L:
        n = L.stats["presample_subgraphs"]
        assert L.stats["presampled"] == 0 and n > 0
        b = L.next_batch()
        assert b.meta["stream_index"] == n
        (ref,) = L.sampler.sample(1, seed=3, start=n)
        np.testing.assert_array_equal(b.nodes, ref.nodes)
