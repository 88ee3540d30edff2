"""Streaming readers for large text tables (edge lists, OGB ``*.csv.gz``), plain or gzip'd.

The file's bytes come as line-ended blocks from :mod:`scalegnn.data._byte_stream` (inflated in
a second thread); this module parses them:

* :func:`read_edges` parses ``src<sep>dst[<sep>ignored...]`` lines into canonical keys
  ``min(u,v) << 32 | max(u,v)`` (self-loops counted and dropped) in one growing array, sorts and
  deduplicates them in place; :func:`graph_from_keys` scatters them into the symmetric CSR.
  Peak memory: 8 bytes per edge line, then 8 bytes per distinct undirected edge + the final
  CSR (8 bytes per undirected edge + indptr), i.e. about twice the CSR; the edge list is never
  held as two int64 columns.
* :func:`read_table` parses a rectangular table of numbers into a float32/float64 array,
  exactly (see :mod:`scalegnn.data._parse`).

Errors are one-line :class:`DataError` naming the file, the line and the bad token.
"""

from __future__ import annotations

import threading
import zipfile
import zlib

import numpy as np

from scalegnn.data._byte_stream import Growable, first_line, iter_blocks
from scalegnn.data._parse import (BAD_COLUMNS, BAD_TOKEN, FULL, LF, OK, P10, SLOW, count_rows,
                                  edge_keys, pair_keys, scatter_rows, table, unique_sorted)
from scalegnn.errors import DataError
from scalegnn.graph import Graph, index_dtype


def _drop_header(block):
    """(``block`` after its first data line, whether one was found): a header is dropped."""
    raw = block.tobytes()
    p = 0
    while p < len(raw):
        e = raw.index(b"\n", p)  # every block ends with one
        text = raw[p:e].strip()
        p = e + 1
        if text and not text.startswith((b"#", b"%")):
            return block[p:], True
    return block[p:], False


def _error(path, what, hint, block, line0, pos, status, ncols) -> DataError:
    """One-line DataError for a parse failure at byte ``pos`` of ``block``."""
    start = pos
    while start > 0 and block[start - 1] != LF:
        start -= 1
    end = pos
    while end < block.size and block[end] != LF:
        end += 1
    line_no = line0 + int(np.count_nonzero(block[:pos] == LF))
    text = bytes(block[start:end]).decode("utf-8", errors="replace").strip()
    if status == BAD_COLUMNS:
        return DataError(f"{path}: bad {what}, line {line_no} does not have {ncols} values: "
                         f"{text[:60]!r}")
    if pos >= end or block[pos] in b",;\r\t":
        return DataError(f"{path}: bad {what}{hint}, line {line_no} has an empty value: "
                         f"{text[:60]!r}")
    tok = bytes(block[pos:end]).decode("utf-8", errors="replace")
    tok = tok.replace(",", " ").replace(";", " ").split() or [text]
    return DataError(f"{path}: bad {what}{hint}, line {line_no} has {tok[0][:40]!r}")


def _new_stats() -> np.ndarray:
    return np.array([np.iinfo(np.int64).max, np.iinfo(np.int64).min, 0, 0], np.int64)


def _finish_keys(buf: Growable, k: int) -> np.ndarray:
    """Sort and deduplicate the first k keys in place; the buffer shrinks to the result."""
    buf.resize(k)
    keys = buf.array()[:k]
    keys.sort()  # in place
    k = int(unique_sorted(keys))
    del keys
    buf.resize(k)
    return buf.array()[:k]


def read_edges(path, what: str = "edge list", sep: int = 44, header: bool = False,
               hint: str = "", extra_ok: bool = True):
    """(sorted distinct canonical keys, stats) of an edge-list file whose first data line is
    dropped when ``header``; columns after the second are ignored when ``extra_ok``.
    stats = [min id, max id, edge lines, self-loops]."""
    buf = Growable(np.uint64, 1 << 16)
    k = 0
    stats = _new_stats()
    for block, line0 in iter_blocks(path, what):
        if header:
            rest, found = _drop_header(block)
            line0 += int(np.count_nonzero(block[:block.size - rest.size] == LF))
            block, header = rest, not found
        need = k + block.size // 4 + 1  # the shortest line, "1,2\n", is 4 bytes
        if need > buf.size:
            buf.resize(max(need, 2 * buf.size))
        k, status, pos = edge_keys(block, sep, buf.array(), k, stats, extra_ok)
        if status != OK:
            raise _error(path, what, hint, block, line0, pos, status, 2)
    return _finish_keys(buf, k), stats


def pairs_keys(chunks, total: int):
    """(sorted distinct keys, stats) of ``total`` edges given as (src, dst) integer chunks."""
    buf = Growable(np.uint64, total)
    k = 0
    stats = _new_stats()
    for src, dst in chunks:
        k = pair_keys(src, dst, buf.array(), k, stats)
    return _finish_keys(buf, k), stats


def npy_rows(stream, rows_per_chunk: int = 1 << 18):
    """(header dict, chunk generator) of a C-order .npy stream read ``rows_per_chunk`` rows at
    a time (for an .npz member: never the whole array at once); None for other layouts."""
    fmt = np.lib.format
    version = fmt.read_magic(stream)
    if version not in ((1, 0), (2, 0)):
        return None
    read = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
    shape, fortran, dtype = read(stream)
    if fortran or dtype.hasobject or len(shape) != 2:
        return None
    row = dtype.itemsize * shape[1]

    def chunks():
        left = shape[0]
        while left:
            m = min(left, rows_per_chunk)
            data = stream.read(m * row)
            if len(data) != m * row:
                raise EOFError(f"array data ends after {shape[0] - left} of {shape[0]} rows")
            yield np.frombuffer(data, dtype).reshape(m, shape[1])
            left -= m
    return {"shape": shape, "dtype": dtype}, chunks()


def _two_threads(kernel, keys, *arrays, split: int, n: int) -> None:
    """``kernel(keys, *arrays, first, stop)`` for rows [0, split) in a second thread and
    [split, n) here: each scans every key, writes only its own rows (the kernels drop the
    GIL), so the random writes, which dominate, are shared by two cores."""
    t = threading.Thread(target=kernel, args=(keys, *arrays, 0, split))
    t.start()
    try:
        kernel(keys, *arrays, split, n)
    finally:
        t.join()


def graph_from_keys(keys: np.ndarray, n: int) -> Graph:
    """The symmetric CSR of sorted distinct keys ``lo << 32 | hi``, built by two threads."""
    indptr = np.zeros(n + 1, np.int64)
    small = keys.size < (1 << 16)
    if small:
        count_rows(keys, indptr, 0, n)
    else:
        _two_threads(count_rows, keys, indptr, split=n // 2, n=n)
    np.cumsum(indptr, out=indptr)
    indices = np.empty(int(indptr[-1]), index_dtype(n))
    if small:
        scatter_rows(keys, indptr, indices, 0, n)
    else:  # split where half of the entries lie before
        split = int(np.searchsorted(indptr, indptr[-1] // 2))
        _two_threads(scatter_rows, keys, indptr, indices, split=min(split, n), n=n)
    indptr[1:] = indptr[:-1].copy()  # cursors ended at the row ends: shift into starts
    indptr[0] = 0
    return Graph(indptr, indices, n, validate=False)


def edge_list_graph(keys: np.ndarray, stats: np.ndarray, n: int, path) -> Graph:
    """The Graph of :func:`read_edges`' output for ``n`` nodes; DataError on ids outside
    [0, n) (the messages of :func:`scalegnn.data._common.graph_from_edges`)."""
    if stats[2]:
        if stats[0] < 0:
            raise DataError(f"{path}: negative node id {stats[0]} in the edge list")
        if stats[1] >= n:
            raise DataError(f"{path}: node id {stats[1]} in the edge list is out of range for "
                            f"{n} nodes")
    return graph_from_keys(keys, n)


def split_keys(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) int64 columns of canonical keys."""
    return ((keys >> np.uint64(32)).astype(np.int64),
            (keys & np.uint64(0xFFFFFFFF)).astype(np.int64))


def read_table(path, what: str, dtype=np.float32, sep: int = 44,
               rows: int | None = None, header: bool = False) -> np.ndarray:
    """(rows, cols) array of the numbers in ``path``, cols from the first data line (dropped
    when ``header``). Exact: see the module docstring. An empty file gives shape (0, 1). With
    ``rows`` the array is allocated once and a file with another number of rows is refused."""
    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float64):
        raise TypeError(f"read_table reads float32/float64 tables, not {dtype}")
    first = first_line(path, what)
    if not first:
        return np.zeros((0, 1), dtype)
    ncols = len(first.split(chr(sep)) if sep else first.split())
    buf = Growable(dtype, 1 << 12) if rows is None else None
    flat = np.empty(rows * ncols, dtype) if rows is not None else None
    f32 = dtype == np.float32
    k = 0
    for block, line0 in iter_blocks(path, what):
        if header:
            rest, found = _drop_header(block)
            line0 += int(np.count_nonzero(block[:block.size - rest.size] == LF))
            block, header = rest, not found
        if buf is not None:
            need = k + ncols * (block.size // 2 + 1)  # a value takes at least 2 bytes ("1\n")
            if need > buf.size:
                flat = None
                buf.resize(max(need, 2 * buf.size))
            flat = buf.array()
        p, col = 0, 0
        while True:
            status, p, k, col, end = table(block, p, flat, k, col, ncols, sep, f32, P10)
            if status == OK:
                break
            if status == FULL:
                raise DataError(f"{path}: {what} have more than {rows} rows, expected {rows}")
            if status != SLOW:
                raise _error(path, what, "", block, line0, p, status, ncols)
            try:
                flat[k] = float(bytes(block[p:end]))  # exact; as float32 it rounds once more
            except ValueError:
                raise _error(path, what, "", block, line0, p, BAD_TOKEN, ncols) from None
            k, col, p = k + 1, col + 1, end
    if buf is None:
        if k != flat.size:
            raise DataError(f"{path}: {what} have {k // ncols} rows, expected {rows}")
        return flat.reshape(rows, ncols)
    flat = None
    buf.resize(k)
    return buf.array()[:k].reshape(-1, ncols)


def npz_edges_graph(path, key: str, n: int) -> Graph | None:
    """Graph of the (E, 2) integer array ``key`` of an .npz, streamed out of the archive in
    row chunks (peak: the keys + the CSR, never the int64 edge array); None when the entry
    is not a C-order 2-column integer array (the caller then loads it whole)."""
    try:
        with zipfile.ZipFile(path) as zf, zf.open(f"{key}.npy") as f:
            got = npy_rows(f)
            if got is None or got[0]["dtype"].kind != "i" or got[0]["shape"][1] != 2:
                return None
            keys, stats = pairs_keys(((c[:, 0], c[:, 1]) for c in got[1]), got[0]["shape"][0])
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, KeyError, zlib.error) as e:
        reason = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise DataError(f"{path}: entry {key!r} is unreadable ({reason})") from None
    return edge_list_graph(keys, stats, n, path)
