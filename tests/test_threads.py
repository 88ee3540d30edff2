"""Runtime knobs: glibc malloc tuning is idempotent, can be switched off, and is harmless."""

import numba
import numpy as np
import torch

from scalegnn import threads


def test_keep_freed_memory_idempotent(monkeypatch):
    monkeypatch.setattr(threads, "_malloc_tuned", None)
    first = threads.keep_freed_memory()
    assert threads.keep_freed_memory() is first
    # large blocks still allocate, free and compute correctly afterwards
    a = np.ones(10 << 20, dtype=np.uint8)
    assert int(a.sum()) == 10 << 20


def test_keep_freed_memory_opt_out(monkeypatch):
    monkeypatch.setattr(threads, "_malloc_tuned", None)
    monkeypatch.setenv("SCALEGNN_KEEP_FREED_MEMORY", "0")
    assert threads.keep_freed_memory() is False


def test_release_freed_memory_wins_over_keep(monkeypatch):
    """A rank that asked for its memory back is not switched to keeping it later."""
    monkeypatch.setattr(threads, "_malloc_tuned", None)
    threads.release_freed_memory()
    assert threads.keep_freed_memory() is False
    a = np.ones(4 << 20, dtype=np.uint8)
    assert int(a.sum()) == 4 << 20
    monkeypatch.setattr(threads, "_malloc_tuned", None)
    threads.keep_freed_memory()  # restore this test process's setting


def test_trim_heap_returns_freed_pages():
    """After keep_freed_memory the heap is never trimmed on free; trim_heap gives the freed
    pages of setup temporaries back (glibc only)."""
    from scalegnn.memory import rss_bytes
    threads.keep_freed_memory()
    if not threads._malloc_tuned:
        assert threads.trim_heap() in (True, False)
        return
    blocks = [np.ones(1 << 20, dtype=np.int64) for _ in range(32)]  # 8 MiB each: heap-allocated
    held = rss_bytes()
    del blocks
    threads.trim_heap()
    assert rss_bytes() < held - (128 << 20)


def test_set_threads_caps_at_the_pool():
    """--threads 4096 used to ask libgomp for 4096 threads, which it answered by exiting the
    process (found by the long CLI fuzz under its address-space limit): torch and numba both
    get at most numba's pool size."""
    before = torch.get_num_threads()
    try:
        got = threads.set_threads(4096)
        assert got == numba.config.NUMBA_NUM_THREADS == torch.get_num_threads()
        assert numba.get_num_threads() == got
        assert threads.set_threads(1) == 1 and numba.get_num_threads() == 1
        assert threads.set_threads(0) == 1   # 0 keeps what is set
    finally:
        threads.set_threads(before)
