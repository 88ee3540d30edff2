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
