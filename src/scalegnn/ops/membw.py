"""Machine memory bandwidth: a STREAM-like triad ``a = b + s·c`` in numba parallel, and the
read probes behind the samplers' roofline (:func:`read_probe`).

Triad arrays are sized well beyond the last-level cache so that the figure is DRAM
bandwidth. Bytes are counted the STREAM way (3 arrays x itemsize per element; the
write-allocate read of ``a`` is not counted), so the figure is comparable to published
STREAM numbers.
"""

from __future__ import annotations

import time

import numba
import numpy as np

from scalegnn.ops import _kernels as K
from scalegnn.ops.costmodel import read_caches


def triad_bandwidth(repeat: int = 5, nbytes: int | None = None, dtype=np.float64) -> dict:
    """Median triad bandwidth in GB/s over ``repeat`` runs (after one warm-up run).

    Each array holds ``nbytes`` (default max(4·L3, 64 MiB): far beyond the caches).
    """
    itemsize = np.dtype(dtype).itemsize
    if nbytes is None:
        nbytes = max(4 * read_caches().l3, 64 << 20)
    n = nbytes // itemsize
    a = np.empty(n, dtype=dtype)
    b = np.full(n, 1.0, dtype=dtype)
    c = np.full(n, 2.0, dtype=dtype)
    s = dtype(3.0) if isinstance(dtype, type) else np.dtype(dtype).type(3.0)
    K.triad(a, b, c, s)
    times = []
    for _ in range(max(repeat, 1)):
        t0 = time.perf_counter()
        K.triad(a, b, c, s)
        times.append(time.perf_counter() - t0)
    t = float(np.median(times))
    return {"triad_GBps": 3 * n * itemsize / t / 1e9, "array_MiB": n * itemsize / 2**20,
            "median_ms": t * 1e3}


@numba.njit(parallel=True, cache=True, nogil=True, boundscheck=False)
def stream_read(a, parts):
    """Max of ``a`` read in ``parts`` contiguous chunks, one per thread (the streaming-read
    bandwidth probe: reads only; the max vectorizes, a scalar sum ran at half the rate)."""
    n = a.shape[0]
    out = np.zeros(parts, dtype=a.dtype)
    for t in numba.prange(parts):
        out[t] = a[t * n // parts:(t + 1) * n // parts].max()
    return out.max()


@numba.njit(parallel=True, cache=True, nogil=True, boundscheck=False)
def random_read(a, idx, parts):
    """Sum of ``a[idx[j]]`` in ``parts`` chunks of ``idx``, one per thread: independent random
    reads, so the core overlaps their misses as the samplers' prefetched row lookups do (the
    random-read probe: one cache line fetched per access)."""
    n = idx.shape[0]
    sums = np.zeros(parts, dtype=np.uint64)
    for t in numba.prange(parts):
        s = np.uint64(0)
        for j in range(t * n // parts, (t + 1) * n // parts):
            s += np.uint64(a[idx[j]])
        sums[t] = s
    return sums.sum()


def read_probe(nbytes: int, threads: int, repeat: int = 5, accesses: int = 1 << 22,
               seed: int = 0) -> dict:
    """Streaming and random read rates of ``threads`` threads reading one ``nbytes`` uint32
    array at once. Size it like the data the measured code reads (a graph's CSR), so that the
    probe reads from the same cache level or DRAM. Rates are per CPU second of the process
    (``time.process_time``: what the samplers' CPU figures are compared with; other processes on
    the cores inflate it far less than wall time), best of ``repeat`` runs::

        stream_GBps_per_thread          contiguous reads, one chunk per thread
        random_lines_per_s_per_thread   independent reads at random positions, one cache line
                                        each (the 4-byte index array is read alongside)
        random_ns_per_line              its inverse: CPU ns per random line

    Runs on ``threads`` numba threads (capped at the pool), restoring the previous count.
    """
    n = max(int(nbytes) // 4, 1 << 10)
    a = np.arange(n, dtype=np.uint32)
    m = int(min(accesses, max(n, 1 << 16)))
    idx = np.random.default_rng(seed).integers(0, n, size=m, dtype=np.int64).astype(
        np.int32 if n < 2**31 else np.int64)
    prev = numba.get_num_threads()
    t = min(max(int(threads), 1), numba.config.NUMBA_NUM_THREADS)
    numba.set_num_threads(t)
    try:
        stream_read(a, t)
        random_read(a, idx, t)
        ts, tr = [], []
        for _ in range(max(repeat, 1)):
            t0 = time.process_time()
            stream_read(a, t)
            ts.append(time.process_time() - t0)
            t0 = time.process_time()
            random_read(a, idx, t)
            tr.append(time.process_time() - t0)
    finally:
        numba.set_num_threads(prev)
    rate = m / max(min(tr), 1e-9)
    return {"probe_MiB": round(n * 4 / 2**20, 2), "probe_threads": t,
            "stream_GBps_per_thread": round(n * 4 / max(min(ts), 1e-9) / 1e9, 3),
            "random_lines_per_s_per_thread": round(rate),
            "random_ns_per_line": round(1e9 / rate, 3)}
