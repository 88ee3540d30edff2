"""Machine memory bandwidth: a STREAM-like triad ``a = b + s·c`` in numba parallel.

Arrays are sized well beyond the last-level cache so that the figure is DRAM bandwidth.
Bytes are counted the STREAM way (3 arrays x itemsize per element; the write-allocate read of
``a`` is not counted), so the figure is comparable to published STREAM numbers.
"""

from __future__ import annotations

import time

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
