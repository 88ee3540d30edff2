"""Process-wide runtime knobs: one thread count for torch (GEMMs, elementwise) and numba
(SpMM, samplers), and glibc malloc settings that keep freed buffers for reuse."""

import ctypes
import os

_M_TRIM_THRESHOLD = -1
_M_TOP_PAD = -2
_M_MMAP_THRESHOLD = -3
_MMAP_THRESHOLD_MAX = 32 << 20  # glibc's upper limit on 64-bit (DEFAULT_MMAP_THRESHOLD_MAX)
_malloc_tuned = None


def set_threads(n: int) -> int:
    """Use ``n`` threads in torch and numba, both capped at numba's pool size (the cores, or
    ``NUMBA_NUM_THREADS``): more threads than cores never speeds the kernels up, and thousands
    of OpenMP threads can fail to start, which libgomp answers by exiting the process
    (``--threads 4096``). ``n <= 0`` keeps the defaults. Returns torch's thread count."""
    import numba
    import torch
    if n > 0:
        n = min(n, numba.config.NUMBA_NUM_THREADS)
        torch.set_num_threads(n)
        numba.set_num_threads(n)
    return torch.get_num_threads()


def _glibc(name: str, *argtypes):
    """glibc's function ``name`` taking ``argtypes`` and returning int; None off glibc."""
    try:
        fn = getattr(ctypes.CDLL("libc.so.6"), name)
    except (OSError, AttributeError):
        return None
    fn.argtypes = list(argtypes)
    fn.restype = ctypes.c_int
    return fn


def _mallopt(settings) -> bool:
    """Apply glibc ``mallopt`` (param, value) pairs; False off glibc or if one is refused."""
    mallopt = _glibc("mallopt", ctypes.c_int, ctypes.c_int)
    if mallopt is None:
        return False
    return all([mallopt(param, value) == 1 for param, value in settings])


def release_freed_memory() -> bool:
    """Return freed large blocks to the OS at once (the opposite trade to
    :func:`keep_freed_memory`), for processes whose peak memory is the point: distributed
    ranks. glibc raises its mmap threshold to the size of every freed mmap block, so after the
    first epoch the 5-60 MB activations come from the heap, where freed holes are reused only
    by blocks that fit and are never trimmed: a rank's RSS grew 40% over its first epochs with
    no new live data. A fixed 256 KiB threshold keeps every activation in its own mapping,
    unmapped on free. Costs page faults per step. A no-op off glibc or with
    ``SCALEGNN_KEEP_FREED_MEMORY=0``. Returns whether the setting is in effect."""
    global _malloc_tuned
    if os.environ.get("SCALEGNN_KEEP_FREED_MEMORY", "1") == "0":
        return False
    _malloc_tuned = False     # keep_freed_memory() must not undo this later in the process
    return _mallopt([(_M_MMAP_THRESHOLD, 256 << 10), (_M_TRIM_THRESHOLD, 1 << 20)])


def trim_heap() -> bool:
    """Hand the heap's free pages back to the OS (glibc ``malloc_trim(0)``), once setup is
    done. With :func:`keep_freed_memory` the heap is never trimmed, so the temporaries of
    loading and sampler setup (degree tables, node sets: up to 32 MiB each, below the mmap
    threshold) would stay resident for the whole run: ~200 MiB at 2^22 nodes. Training's own
    buffers are allocated after it and are kept as before. A no-op (False) off glibc."""
    malloc_trim = _glibc("malloc_trim", ctypes.c_size_t)
    return malloc_trim is not None and bool(malloc_trim(0))


def keep_freed_memory() -> bool:
    """Let glibc malloc reuse freed activation-sized buffers instead of returning them.

    By default glibc serves blocks above a (dynamic) threshold with fresh ``mmap`` calls and
    trims the heap top on free, so every 5-30 MB activation, gradient and subgraph array of a
    training step comes back as new pages: one page fault plus zeroing per 4 KiB, which made
    the elementwise ops of a step 2-3x slower than their memory traffic (``bench step``). Raising
    the mmap threshold to glibc's maximum (32 MiB) and never trimming keeps those blocks in
    the heap; the process's footprint stays at its high-water mark, which a training run
    reaches in its first steps anyway. Idempotent; a no-op off glibc or with
    ``SCALEGNN_KEEP_FREED_MEMORY=0``. Returns whether the settings are in effect.
    """
    global _malloc_tuned
    if _malloc_tuned is not None:
        return _malloc_tuned
    _malloc_tuned = False
    if os.environ.get("SCALEGNN_KEEP_FREED_MEMORY", "1") == "0":
        return False
    _malloc_tuned = _mallopt([(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD_MAX),
                              (_M_TRIM_THRESHOLD, 2**31 - 1), (_M_TOP_PAD, 64 << 20)])
    return _malloc_tuned
