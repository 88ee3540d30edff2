"""Data-parallel GraphSAINT streams: W ranks pre-sample 1/W each and still get the single-process
normalization, and rank r's batches are positions r, r + W, ... of the single-process stream.
The ranks here are threads sharing an in-memory shard (the collectives' logic, no sockets)."""

import threading

import numpy as np
import pytest

from conftest import make_tiny_dataset
from scalegnn.data import load_dataset
from scalegnn.sampling import GraphSAINTLoader
from scalegnn.shard import Shard

BUDGETS = {"rw": {"num_root": 12, "depth": 2}, "node": {"size_subgraph": 40},
           "edge": {"size_subg_edge": 20}, "mrw": {"size_subgraph": 40, "size_frontier": 8}}


class ThreadShard(Shard):
    """Rank ``rank`` of ``world`` threads; collectives through a shared board and a barrier."""

    def __init__(self, rank, world, board):
        self.rank, self.world, self.board = rank, world, board

    def _exchange(self, x):
        b = self.board
        b["barrier"].wait()
        b["slots"][self.rank] = np.array(x, copy=True)
        b["barrier"].wait()
        out = list(b["slots"])
        b["barrier"].wait()
        return out

    def all_gather(self, x):
        return self._exchange(x)

    def all_reduce_sum(self, x):
        return np.sum(self._exchange(x), axis=0)


def run_ranks(world, fn):
    board = {"barrier": threading.Barrier(world), "slots": [None] * world}
    out, errors = [None] * world, []

    def target(r):
        try:
            out[r] = fn(ThreadShard(r, world, board))
        except BaseException as e:  # noqa: BLE001 - re-raised below
            errors.append(e)
            board["barrier"].abort()

    threads = [threading.Thread(target=target, args=(r,)) for r in range(world)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return out


def loader(ds, sampler, shard=None, **kw):
    kw = {"coverage": 4, "seed": 3, "pool_depth": 0, "num_threads": 1, **kw}
    return GraphSAINTLoader(ds, sampler, BUDGETS[sampler], **kw,
                            **({"shard": shard} if shard is not None else {}))


@pytest.mark.parametrize("sampler", list(BUDGETS))
@pytest.mark.parametrize("world", [2, 3])
def test_sharded_stream_is_the_single_stream(sampler, world):
    ds = load_dataset("planted:nodes=300,classes=3,features=8")
    one = loader(ds, sampler)
    steps = 4
    single = [one.next_batch() for _ in range(steps * world)]

    def rank(shard):
        ld = loader(ds, sampler, shard)
        return ld.norm, [ld.next_batch() for _ in range(steps)]

    outs = run_ranks(world, rank)
    for r, (norm, batches) in enumerate(outs):
        assert norm.num_subgraphs == one.norm.num_subgraphs
        assert np.array_equal(norm.node_counts, one.norm.node_counts)
        assert np.array_equal(norm.edge_counts, one.norm.edge_counts)
        assert np.array_equal(norm.loss_weight, one.norm.loss_weight)
        assert np.array_equal(norm.edge_multiplier, one.norm.edge_multiplier)
        for k, b in enumerate(batches):
            want = single[r + k * world]
            assert b.meta["stream_index"] == want.meta["stream_index"]
            assert np.array_equal(b.nodes, want.nodes)
            assert np.array_equal(b.adj.data, want.adj.data)
            assert np.array_equal(b.loss_weight.numpy(), want.loss_weight.numpy())


def test_kept_prefix_and_seek_follow_the_single_stream(monkeypatch):
    """With a pre-sample budget that keeps only some subgraphs (K < N), positions past K are
    fresh subgraphs N + p - K on every rank too; ``seek`` resumes a rank's share exactly."""
    ds = make_tiny_dataset(n=120)
    monkeypatch.setattr(GraphSAINTLoader, "PRESAMPLE_KEEP_BYTES", 3000)
    one = loader(ds, "rw")
    assert 0 < one.norm.num_kept < one.norm.num_subgraphs
    single = [one.next_batch().meta["stream_index"] for _ in range(12)]

    def rank(shard):
        ld = loader(ds, "rw", shard)
        first = [ld.next_batch().meta["stream_index"] for _ in range(4)]
        again = loader(ds, "rw", shard)
        again.seek(2)
        return first, [again.next_batch().meta["stream_index"] for _ in range(2)]

    for r, (first, resumed) in enumerate(run_ranks(3, rank)):
        assert first == single[r::3][:4]
        assert resumed == first[2:4]


@pytest.mark.parametrize("path", ["layerwise", "neighbourhood"])
@pytest.mark.parametrize("arch", ["1-0-1-0", "1-2", "0-1"])
def test_sharded_full_graph_logits_equal_one_process(path, arch):
    import torch

    from scalegnn.engine.evaluate import full_graph_logits
    from scalegnn.nn import build_model
    ds = make_tiny_dataset(n=90)
    torch.manual_seed(0)
    model = build_model(ds.num_features, ds.num_classes, hidden=12, arch=arch)
    want = full_graph_logits(model, ds.graph, ds.features, batch_rows=16, path=path,
                             budget=1 << 30, cache_bytes=400, block_bytes=4000)
    outs = run_ranks(3, lambda sh: full_graph_logits(
        model, ds.graph, ds.features, batch_rows=16, path=path, budget=1 << 30,
        cache_bytes=400, block_bytes=4000, shard=sh))
    for got in outs:
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
