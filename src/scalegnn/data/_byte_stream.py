"""The byte layer of the streaming readers (:mod:`scalegnn.data._stream` for edge lists and
number tables, :mod:`scalegnn.data._json_stream` for GraphSAINT's JSON files).

* :func:`iter_blocks` yields the file's bytes as ``uint8`` arrays of about ``BLOCK`` bytes, each
  ending at a line end (a final line without one gets a ``\\n``). A gzip file (by its ``.gz``
  suffix, as ``np.loadtxt`` decided) is inflated with ``zlib`` in a second thread (zlib drops the
  GIL, the numba kernels too), so inflating block i+1 overlaps parsing block i; at most one
  block waits in between. :func:`first_line` reads only as far as the first data line.
* :class:`Growable` is the array the readers fill: it grows with ``mremap``, copying nothing.

Errors are one-line :class:`DataError` naming the file.
"""

from __future__ import annotations

import mmap
import queue
import threading
import zlib
from pathlib import Path

import numpy as np

from scalegnn.errors import DataError

BLOCK = 1 << 22  # bytes of text per parsed block: amortizes a kernel call, small next to data
_READ = 1 << 20  # compressed bytes per read


def _chunks(path, what, size: int | None = None):
    """Raw (decompressed) byte chunks of at most ``size`` (default BLOCK) bytes of ``path``;
    OSError/zlib errors -> DataError."""
    path = Path(path)
    size = size or BLOCK
    try:
        with open(path, "rb") as f:
            if path.suffix.lower() != ".gz":
                while data := f.read(size):
                    yield data
                return
            d = zlib.decompressobj(31)
            started = False  # the current gzip member has consumed input
            pending = b""
            while True:
                data = pending or f.read(min(_READ, size))
                if not data:
                    break
                started = True
                # max_length bounds the output of a highly compressed chunk (a 'zip bomb')
                out = d.decompress(data, size)
                pending = d.unconsumed_tail
                if d.eof:  # concatenated gzip members: start over on the rest
                    pending = pending or d.unused_data
                    d = zlib.decompressobj(31)
                    started = False
                if out:
                    yield out
            if started:
                raise EOFError("compressed file ended before the end-of-stream marker")
    except (OSError, EOFError, zlib.error) as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else (str(e) or "error")
        raise DataError(f"{path}: unreadable {what} ({reason.splitlines()[0]})") from None


def _lines(chunks):
    """Re-cut byte chunks at line ends: (block ending with ``\\n``, its number of lines)."""
    carry = b""
    for data in chunks:
        data = carry + data if carry else data
        cut = data.rfind(b"\n") + 1
        carry = data[cut:]
        if cut:
            block = np.frombuffer(data, np.uint8, cut)
            yield block, data.count(b"\n", 0, cut)
    if carry:
        yield np.frombuffer(carry + b"\n", np.uint8), 1


def iter_blocks(path, what: str):
    """(block, number of its first line) pairs: ``uint8`` arrays ending at a line end.

    Reading, inflating and line counting run in a second thread, one block ahead."""
    q: queue.Queue = queue.Queue(maxsize=1)
    stop = threading.Event()

    def put(item) -> bool:
        """Hand ``item`` over unless the consumer has gone (then never block on it)."""
        while not stop.is_set():
            try:
                q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce():
        try:
            for item in _lines(_chunks(path, what)):
                if not put(item):
                    return
            put(None)
        except BaseException as e:  # handed to the consumer, raised there
            put(e)

    t = threading.Thread(target=produce, daemon=True, name="scalegnn-inflate")
    t.start()
    line = 1
    try:
        while True:
            item = q.get()
            if item is None:
                return
            if isinstance(item, BaseException):
                raise item
            yield item[0], line
            line += item[1]
    finally:
        stop.set()
        t.join()


def first_line(path, what: str) -> str:
    """The first line that is neither blank nor a comment, stripped ('' if none); reads only
    as far as that line."""
    for block in _lines(_chunks(path, what, 1 << 16)):
        for raw in bytes(block[0]).split(b"\n")[:-1]:
            text = raw.decode("utf-8", errors="replace").strip()
            if text and not text.startswith(("#", "%")):
                return text
    return ""


class Growable:
    """A 1-D array in a private anonymous mapping that grows and shrinks with ``mremap``:
    growing copies nothing and leaves the new tail non-resident until written, where
    ``ndarray.resize`` would zero-fill it (touching every page) and a copy would briefly need
    old + new. Call :meth:`array` again after :meth:`resize` (a view pins the mapping).
    Where anonymous mappings cannot be resized, a numpy array grown by copying stands in."""

    def __init__(self, dtype, size: int):
        self.dtype = np.dtype(dtype)
        self.size = max(int(size), 1)
        try:
            self._mm = mmap.mmap(-1, self.size * self.dtype.itemsize,
                                 flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
            self._arr = None
        except (AttributeError, OSError, ValueError):
            self._mm, self._arr = None, np.empty(self.size, self.dtype)

    def array(self) -> np.ndarray:
        if self._mm is None:
            return self._arr[:self.size]
        return np.frombuffer(self._mm, self.dtype, self.size)

    def resize(self, size: int) -> None:
        size = max(int(size), 1)
        if self._mm is not None:
            try:
                self._mm.resize(size * self.dtype.itemsize)
                self.size = size
                return
            except (OSError, SystemError, ValueError):  # no mremap here: copy once, then numpy
                self._arr = np.frombuffer(self._mm, self.dtype, min(self.size, size)).copy()
                self._mm = None
        if size > self._arr.size:
            out = np.empty(size, self.dtype)
            out[:self.size] = self._arr[:self.size]
            self._arr = out
        self.size = size
