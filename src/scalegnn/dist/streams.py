"""The standard error of the multi-host launcher and of its ranks (:mod:`scalegnn.dist.elastic`).

When a host or rank is lost, torch's C++ store client logs each broken connection with a stack
trace, and every surviving rank prints its own "peer died" line. The launcher forwards its ranks'
stderr (and its own) through a :class:`LineFilter`: torch's log records and their stack frames
are dropped, and a rank's ``scalegnn: error: ...`` line is held back, so that the launcher can
print the one line that explains a failure (a rank killed on another host, say), or the rank's
own line when the rank is the cause. Everything else (progress bars, warnings) passes at once.
"""

from __future__ import annotations

import os
import re
import sys
import threading
from contextlib import contextmanager

ERROR_PREFIX = b"scalegnn: error: "
# "[W1125 01:46:26.371643022 TCPStore.cpp:138] [c10d] ..." (C++), and torch's Python logging
# "W1125 01:52:16.083000 9407 torch/distributed/elastic/...] ..."
_TORCH_LOG = re.compile(rb"^\[?[WEIF]\d{4} \d\d:\d\d:\d\d\.\d+ ")
_TRACE = re.compile(rb"^(Exception raised from |frame #\d+: |<omitting python frames>|\s*$)")


def _write_all(fd: int, data: bytes) -> None:
    try:
        while data:
            data = data[os.write(fd, data):]
    except OSError:  # the reader is gone (a closed terminal): nothing to tell anyone
        pass


class LineFilter:
    """Forward a byte stream to ``out_fd`` with torch's log records dropped and, when ``hold``,
    ``scalegnn: error:`` lines kept in :attr:`held` (text, without the newline) instead."""

    def __init__(self, out_fd: int, hold: bool = True):
        self.out_fd, self.hold = out_fd, hold
        self.held: list[str] = []
        self._pending = b""
        self._in_log = False

    def feed(self, data: bytes) -> None:
        *lines, self._pending = (self._pending + data).split(b"\n")
        out = [kept + b"\n" for kept in map(self._keep, lines) if kept is not None]
        if self._pending.startswith(b"\r") or len(self._pending) > 65536:  # a progress bar
            out.append(self._pending)
            self._pending = b""
        if out:
            _write_all(self.out_fd, b"".join(out))

    def close(self) -> None:
        if self._pending:
            kept = self._keep(self._pending)
            self._pending = b""
            if kept is not None:
                _write_all(self.out_fd, kept)

    def _keep(self, line: bytes) -> bytes | None:
        if _TORCH_LOG.match(line):
            self._in_log = True
            return None
        if self._in_log and _TRACE.match(line):
            return None
        self._in_log = False
        if self.hold and line.startswith(ERROR_PREFIX):
            self.held.append(line.decode("utf-8", errors="replace").rstrip("\r"))
            return None
        return line


def pump(fd: int, filt: LineFilter) -> None:
    """Read ``fd`` to its end through ``filt``, then close it."""
    try:
        while True:
            try:
                data = os.read(fd, 65536)
            except InterruptedError:
                continue
            except OSError:
                break
            if not data:
                break
            filt.feed(data)
        filt.close()
    finally:
        os.close(fd)


def start_pump(fd: int, filt: LineFilter) -> threading.Thread:
    t = threading.Thread(target=pump, args=(fd, filt), daemon=True, name="scalegnn-stderr")
    t.start()
    return t


@contextmanager
def filtered_stderr():
    """This process's file descriptor 2 goes through a :class:`LineFilter` (nothing held) for
    the duration, C++ writes included; yields a descriptor of the real stderr."""
    sys.stderr.flush()
    real = os.dup(2)
    r, w = os.pipe()
    os.dup2(w, 2)
    os.close(w)
    thread = start_pump(r, LineFilter(real, hold=False))
    try:
        yield real
    finally:
        sys.stderr.flush()
        os.dup2(real, 2)  # the pipe's last writer closes: the pump reads its end and stops
        thread.join(timeout=5)
        os.close(real)
