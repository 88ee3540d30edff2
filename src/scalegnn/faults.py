"""Fault injection for the exact-resume tests (a no-op unless the environment asks for it)."""

from __future__ import annotations

import os
import signal
import sys
import time

_KILL_ENV = "SCALEGNN_TEST_KILL_AT"
_kill_counts: dict = {}


def crash_point(name: str) -> None:
    """Test hook of the exact-resume tests: SIGKILL this process at the n-th pass through the
    point ``name`` when ``SCALEGNN_TEST_KILL_AT=name[:n]`` is set (and ``SCALEGNN_TEST_KILL_RANK``
    matches the rank, when given); a no-op otherwise."""
    spec = os.environ.get(_KILL_ENV)
    if not spec:
        return
    point, _, count = spec.partition(":")
    rank = os.environ.get("SCALEGNN_TEST_KILL_RANK")
    if point != name or (rank is not None and rank != os.environ.get("RANK", "0")):
        return
    _kill_counts[name] = _kill_counts.get(name, 0) + 1
    if _kill_counts[name] >= int(count or 1):
        sys.stdout.flush()
        sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGKILL)


_DELAY_ENV = "SCALEGNN_TEST_EXCHANGE_DELAY"


def exchange_delay(rank: int) -> None:
    """Test hook of the overlap test: sleep before posting each forward exchange on one rank
    when ``SCALEGNN_TEST_EXCHANGE_DELAY=rank:seconds`` is set (a late sender); a no-op otherwise."""
    spec = os.environ.get(_DELAY_ENV)
    if not spec:
        return
    who, _, secs = spec.partition(":")
    if who == str(rank):
        time.sleep(float(secs or 0))
