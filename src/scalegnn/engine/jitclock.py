"""Seconds this process has spent compiling numba kernels (for the run report's time split).

Contract: :func:`compile_seconds` returns the wall-clock seconds, since the first call, during
which at least one numba compilation was running in any thread (nested compilations of callees
count once). Loading a kernel from numba's on-disk cache is not a compilation and is not
counted. The trainer reads it around every epoch and records the difference as ``compile_s``;
that time is part of (overlaps) the epoch's pre-sampling, sampling, compute or evaluation time.
"""

from __future__ import annotations

import threading
import time

_lock = threading.Lock()
_state = {"depth": 0, "since": 0.0, "total": 0.0, "installed": False}


def _install():
    from numba.core import event  # noqa: PLC0415 (numba is heavy; import on first use)

    class _Clock(event.Listener):
        # numba serializes compilation under its global compiler lock; the depth counter
        # still guards against nested (callee) compilations being counted twice.
        def on_start(self, ev):
            with _lock:
                if _state["depth"] == 0:
                    _state["since"] = time.perf_counter()
                _state["depth"] += 1

        def on_end(self, ev):
            with _lock:
                _state["depth"] = max(0, _state["depth"] - 1)
                if _state["depth"] == 0:
                    _state["total"] += time.perf_counter() - _state["since"]

    event.register("numba:compile", _Clock())
    _state["installed"] = True


def compile_seconds() -> float:
    """Seconds spent compiling so far (the clock starts listening at the first call)."""
    with _lock:
        if not _state["installed"]:
            _install()
        running = time.perf_counter() - _state["since"] if _state["depth"] else 0.0
        return _state["total"] + running


def compile_since(start: float) -> dict:
    """``{"compile_s": seconds}`` compiled since ``start`` (a :func:`compile_seconds` reading);
    empty below 10 ms, so epochs without compilation keep their records short."""
    spent = compile_seconds() - start
    return {"compile_s": spent} if spent >= 0.01 else {}
