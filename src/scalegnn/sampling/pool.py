"""Prefetching pool (SPEC §2.2 runtime scheduler): a producer thread fills a bounded queue.

The producer repeatedly calls ``produce()`` (which returns a list of ready items, e.g. Batches
built from one multi-threaded sampler call; the numba kernels release the GIL, so sampling
overlaps training) and puts the items into a queue of at most ``depth`` entries. The consumer
``get()``s them in order and the time it waits is recorded (``wait_seconds``).

* an exception in the producer is re-raised, unchanged, by the consumer's next ``get()``;
* ``close()`` stops the producer (event + bounded-timeout puts), drains the queue and joins
  the daemon thread with a timeout, so neither side can hang; a closed pool raises on get().
"""

from __future__ import annotations

import queue
import threading
import time
from typing import Callable

from scalegnn.errors import ConfigError


class PoolClosed(RuntimeError):
    """get() on a pool that was closed."""


class _Failure:
    __slots__ = ("exc",)

    def __init__(self, exc: BaseException):
        self.exc = exc


class BatchPool:
    """Bounded background prefetch queue fed by ``produce()`` (see module docstring)."""

    POLL = 0.05  # seconds between checks of the stop flag while blocked

    def __init__(self, produce: Callable[[], list], depth: int = 4, name: str = "scalegnn-pool"):
        if depth < 1:
            raise ValueError("pool depth must be >= 1")
        self._produce = produce
        self._queue: queue.Queue = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._failure: _Failure | None = None
        self.wait_seconds = 0.0
        self.produce_seconds = 0.0
        self.consumed = 0
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    # -------------------------------------------------------------- producer side
    def _run(self):
        try:
            while not self._stop.is_set():
                t0 = time.perf_counter()
                items = self._produce()
                self.produce_seconds += time.perf_counter() - t0
                items.reverse()
                while items:  # hold only what is not queued yet: while the next chunk is
                    if not self._put(items.pop()):  # made, consumed items must be freeable
                        return
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer
            self._put(_Failure(exc))

    def _put(self, item) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=self.POLL)
                return True
            except queue.Full:
                continue
        return False

    # -------------------------------------------------------------- consumer side
    def get(self):
        """Next item, in production order; re-raises a producer exception."""
        if self._failure is not None:
            raise self._failure.exc
        t0 = time.perf_counter()
        try:
            while True:
                if self._stop.is_set():
                    raise PoolClosed("the sampling pool was closed")
                try:
                    item = self._queue.get(timeout=self.POLL)
                    break
                except queue.Empty:
                    if not self._thread.is_alive() and self._queue.empty():
                        raise PoolClosed("the sampling pool's producer thread stopped")
        finally:
            self.wait_seconds += time.perf_counter() - t0
        if isinstance(item, _Failure):
            self._failure = item
            self.close()
            raise item.exc
        self.consumed += 1
        return item

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def close(self, timeout: float = 10.0) -> bool:
        """Stop the producer and join it; True if the thread ended within ``timeout``."""
        self._stop.set()
        self._drain()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout)
        self._drain()
        return not self._thread.is_alive()

    def _drain(self):
        try:
            while True:
                self._queue.get_nowait()
        except queue.Empty:
            pass


class PooledLoader:
    """What every loader over a :class:`BatchPool` shares: ``_produce()`` (implemented by the
    subclass) returns a list of ready batches, made in the pool's thread when ``pool_depth`` >
    0, else on demand; one epoch is ``len(loader)`` batches. Subclasses set ``_len``,
    ``pool_depth``, ``stats`` (with ``batches`` and ``wait_seconds``), ``_pool = None`` and
    ``_closed = False`` in their ``__init__``. ``pin_dtype``: set (by the mode, when the model
    is on a GPU) to a torch dtype, the pool's thread page-locks each batch it makes
    (``Batch.pin``), so that the training thread only queues the batch's copies to the GPU
    (batches made on demand, ``pool_depth`` 0, are not: pinning there costs more than the
    copy it saves)."""

    pool_name = "scalegnn-sampler"
    pin_dtype = None

    def __len__(self) -> int:
        return self._len

    def __iter__(self):
        try:
            for _ in range(self._len):
                yield self.next_batch()
        except (Exception, KeyboardInterrupt):
            self.close()
            raise

    @property
    def position(self) -> int:
        """Batches of the stream consumed so far."""
        return self.stats["batches"]

    def _check_open(self):
        if self._closed:
            raise ConfigError(f"{type(self).__name__}: used after close()")

    def _start_pool(self):
        if self._pool is None and self.pool_depth > 0 and not self._closed:
            self._pool = BatchPool(self._produce_pinned if self.pin_dtype is not None
                                   else self._produce, self.pool_depth, name=self.pool_name)

    def _produce_pinned(self) -> list:
        return [b.pin(self.pin_dtype) for b in self._produce()]

    def _next_produced(self):
        """The next batch of ``_produce``: from the pool, or made now (``pool_depth`` 0)."""
        if self.pool_depth == 0:
            return self._produce()[0]
        self._start_pool()
        batch = self._pool.get()
        self.stats["wait_seconds"] = self._pool.wait_seconds
        return batch

    def close(self, timeout: float = 10.0):
        """Stop the background producer and join it for up to ``timeout`` s (idempotent)."""
        self._closed = True
        if self._pool is not None:
            self.stats["wait_seconds"] = self._pool.wait_seconds
            self._pool.close(timeout)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close(timeout=0.0)  # signal only: never block the collecting thread
        except Exception:  # noqa: BLE001, S110 - interpreter shutdown
            pass
