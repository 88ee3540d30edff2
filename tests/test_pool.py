"""Prefetching pool: order, wait accounting, error propagation, shutdown without hangs."""

import _thread
import os
import signal
import threading
import time

import numpy as np
import pytest

from scalegnn.data import Dataset
from scalegnn.graph import Graph
from scalegnn.sampling import GraphSAINTLoader, Sampler, make_sampler
from scalegnn.sampling.pool import BatchPool, PoolClosed


def counter_producer(chunk=3, delay=0.0):
    state = {"next": 0}

    def produce():
        if delay:
            time.sleep(delay)
        a = state["next"]
        state["next"] += chunk
        return list(range(a, a + chunk))
    return produce


def tiny_dataset(n=300, m=1500):
    rng = np.random.default_rng(0)
    g = Graph.from_edges(rng.integers(0, n, m), rng.integers(0, n, m), n)
    perm = rng.permutation(n)
    return Dataset(g, rng.random((n, 4)).astype(np.float32), rng.integers(0, 3, n),
                   perm[:200], perm[200:250], perm[250:])


def test_items_arrive_in_order_and_queue_is_bounded():
    pool = BatchPool(counter_producer(), depth=2)
    try:
        assert [pool.get() for _ in range(10)] == list(range(10))
        time.sleep(0.2)
        assert pool._queue.qsize() <= 2
    finally:
        assert pool.close(timeout=5)


def test_wait_time_is_recorded():
    pool = BatchPool(counter_producer(chunk=1, delay=0.05), depth=1)
    try:
        for _ in range(4):
            pool.get()
        assert pool.wait_seconds >= 0.1
    finally:
        pool.close()


def test_producer_error_surfaces_in_consumer_without_hanging():
    calls = {"n": 0}

    def produce():
        calls["n"] += 1
        if calls["n"] == 3:
            raise ValueError("broken sampler")
        return [calls["n"]]

    pool = BatchPool(produce, depth=4)
    t0 = time.perf_counter()
    assert pool.get() == 1 and pool.get() == 2
    with pytest.raises(ValueError, match="broken sampler"):
        pool.get()
    with pytest.raises(ValueError, match="broken sampler"):  # stays failed
        pool.get()
    assert time.perf_counter() - t0 < 5
    pool._thread.join(5)
    assert not pool.alive


def test_close_while_producer_blocked_on_full_queue():
    pool = BatchPool(counter_producer(chunk=50), depth=1)
    time.sleep(0.1)  # producer now blocked on put
    t0 = time.perf_counter()
    assert pool.close(timeout=5)
    assert time.perf_counter() - t0 < 2
    with pytest.raises(PoolClosed):
        pool.get()


def test_loader_reraises_sampler_error_and_stops():
    ds = tiny_dataset()
    L = GraphSAINTLoader(ds, "rw", {"num_root": 10, "depth": 2}, coverage=1, pool_depth=2)
    n_pre = L.stats["presampled"]

    def broken(*a, **k):
        raise RuntimeError("kernel exploded")

    L.sampler.sample = broken
    with pytest.raises(RuntimeError, match="kernel exploded"):
        for _ in range(n_pre + 5):
            L.next_batch()
    L.close()
    assert not L._pool.alive


def test_ctrl_c_in_consumer_shuts_down():
    ds = tiny_dataset()
    L = GraphSAINTLoader(ds, "rw", {"num_root": 10, "depth": 2}, coverage=1, pool_depth=2)
    n_pre = L.stats["presampled"]
    real = L.sampler.sample

    def slow(*a, **k):
        time.sleep(0.3)
        return real(*a, **k)

    L.sampler.sample = slow
    for _ in range(n_pre):  # from here on every batch waits on the (slow) producer
        L.next_batch()
    # A shell that starts a command in the background with job control off (`cmd &` in a
    # script) makes it ignore SIGINT, and then Python installs no KeyboardInterrupt handler
    # and interrupt_main() does nothing; this test is about the loader, so install it.
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        threading.Timer(0.5, _thread.interrupt_main).start()
        t0 = time.perf_counter()
        with pytest.raises(KeyboardInterrupt):
            for _ in range(10):  # the loader's epoch iterator closes itself on Ctrl-C
                for _b in L:
                    pass
    finally:
        signal.signal(signal.SIGINT, old)
    assert time.perf_counter() - t0 < 10
    assert L._closed
    L._pool._thread.join(5)
    assert not L._pool.alive
    assert n_pre > 0


def _rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc")
def test_no_memory_growth_over_10000_subgraphs(monkeypatch):
    monkeypatch.setattr(Sampler, "MIN_WORK", 1)  # the 2-worker path, on a small graph
    rng = np.random.default_rng(0)
    n = 3000
    g = Graph.from_edges(rng.integers(0, n, 15000), rng.integers(0, n, 15000), n)
    for name, params in [("rw", {"num_root": 50, "depth": 2}),
                         ("mrw", {"size_subgraph": 150, "size_frontier": 40})]:
        s = make_sampler(name, g, np.arange(n), params)
        for i in range(10):  # warm-up: compile, allocator pools
            s.sample(100, seed=1, num_threads=2, start=100 * i)
        before = _rss_mb()
        for i in range(100):
            subs = s.sample(100, seed=2, num_threads=2, start=100 * i)
        del subs
        assert _rss_mb() - before < 30, name
    ds = tiny_dataset()
    with GraphSAINTLoader(ds, "edge", {"size_subg_edge": 30}, coverage=1, pool_depth=4) as L:
        for _ in range(500):
            L.next_batch()
        before = _rss_mb()
        for _ in range(3000):
            L.next_batch()
        assert _rss_mb() - before < 30


def test_pool_thread_pins_batches_when_asked(monkeypatch):
    """With ``pin_dtype`` set (the model is on a GPU) the pool's thread pins every batch it
    makes, and only there; without it nothing is pinned. (``Batch.pin`` itself needs CUDA:
    here it records where it ran.)"""
    from scalegnn.batch import Batch
    pinned = []
    monkeypatch.setattr(Batch, "pin", lambda self, dtype: pinned.append(
        (threading.current_thread().name, dtype)) or self)
    ds = tiny_dataset()
    for dtype in (None, np.float32):
        pinned.clear()
        L = GraphSAINTLoader(ds, "rw", {"num_root": 10, "depth": 2}, coverage=1, pool_depth=2)
        L.pin_dtype = dtype
        first = [L.next_batch() for _ in range(L.stats["presampled"] + 3)]
        L.close()
        assert all(isinstance(b, Batch) for b in first)
        if dtype is None:
            assert pinned == []
        else:
            assert pinned and set(pinned) == {(L.pool_name, dtype)}


def test_graphsaint_mode_asks_its_loaders_to_pin_for_a_gpu_model():
    """``GraphSAINTMode.setup`` with a model on a GPU sets the loaders' ``pin_dtype`` to the
    model's dtype; with a host model it stays unset (the model is a stand-in: no CUDA here)."""
    from types import SimpleNamespace

    import torch
    from test_train import planted, small_config

    from scalegnn.train.modes import GraphSAINTMode
    for device, want in (("cuda", torch.float32), ("cpu", None)):
        mode = GraphSAINTMode(planted(), small_config(), seed=0)
        param = SimpleNamespace(device=torch.device(device), dtype=torch.float32)
        mode.setup(SimpleNamespace(parameters=lambda p=param: iter([p])), seed=0)
        try:
            assert mode.loader(0).pin_dtype == want
        finally:
            mode.close()
