"""Atomic file writes: a reader never sees a half-written file or folder.

Contract: every writer here creates a temporary sibling in the *same folder* as the target
(so the final ``os.replace`` is a same-filesystem rename, atomic on POSIX), flushes and fsyncs
it, then renames it over the target. On any exception the temporary is removed and the target
is left as it was.

* :func:`atomic_write_bytes`, :func:`atomic_write_text`, :func:`atomic_write_json`
* :func:`atomic_save_npy`, :func:`atomic_save_npz` (``compressed=True`` -> ``np.savez_compressed``)
* :func:`atomic_open` — context manager yielding a binary file object for custom writers
* :func:`atomic_folder` — context manager yielding a temporary folder that replaces ``path``
  on success (an existing folder at ``path`` is moved aside and removed after the swap).

:func:`write_npy_blocks` / :func:`read_npy_blocks` stream a float32 ``.npy`` in row blocks with
plain file reads and writes (nothing mapped, so nothing counts in the resident set), and
:func:`read_json_object` is the one reader of the small JSON files a run directory holds;
:func:`same_path` the one test of whether a given path names a recorded one.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from scalegnn.errors import DataError

__all__ = ["atomic_open", "atomic_write_bytes", "atomic_write_text", "atomic_write_json",
           "atomic_save_npy", "atomic_save_npz", "atomic_folder", "read_json_object",
           "same_path", "write_npy_blocks", "read_npy_blocks", "whole_npy_file"]


@contextlib.contextmanager
def atomic_open(path, mode: str = "wb"):
    """Yield a file object; on clean exit it is fsynced and renamed onto ``path``."""
    if mode not in ("wb", "w"):
        raise ValueError(f"atomic_open: mode must be 'wb' or 'w', got {mode!r}")
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; published files should be readable
        with os.fdopen(fd, mode, **({"encoding": "utf-8"} if mode == "w" else {})) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(e, OSError) and e.filename is None and e.errno is not None:
            raise type(e)(e.errno, e.strerror, str(path)) from None  # name the file (disk full)
        raise


def atomic_write_bytes(path, data: bytes) -> None:
    with atomic_open(path, "wb") as f:
        f.write(data)


def atomic_write_text(path, text: str) -> None:
    with atomic_open(path, "w") as f:
        f.write(text)


def atomic_write_json(path, obj, **kw) -> None:
    """JSON with sorted keys by default so that equal objects give equal files."""
    kw.setdefault("sort_keys", True)
    atomic_write_text(path, json.dumps(obj, **kw) + "\n")


def atomic_save_npy(path, arr) -> None:
    """``np.save`` (never pickles: object arrays are refused)."""
    with atomic_open(path, "wb") as f:
        np.save(f, np.asarray(arr), allow_pickle=False)


def atomic_save_npz(path, compressed: bool = False, **arrays) -> None:
    """``np.savez[_compressed]`` of ``arrays`` to exactly ``path`` (no '.npz' appended)."""
    for k, v in arrays.items():
        if np.asarray(v).dtype == object:
            raise ValueError(f"atomic_save_npz: array {k!r} has dtype object (would need pickle)")
    with atomic_open(path, "wb") as f:
        (np.savez_compressed if compressed else np.savez)(f, **arrays)


@contextlib.contextmanager
def atomic_folder(path, overwrite: bool = False):
    """Yield a temporary folder (a sibling of ``path``); on success it becomes ``path``.

    If ``path`` exists and ``overwrite`` is False, raises FileExistsError before yielding.
    With ``overwrite`` the old folder is renamed aside, the new one renamed in, then the old
    one deleted, so at every instant ``path`` is either the old or the complete new folder
    (except for the two-rename window, during which it is briefly absent).
    """
    path = Path(path)
    if path.exists() and not overwrite:
        raise FileExistsError(f"{path} already exists")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    try:
        os.chmod(tmp, 0o755)
        yield tmp
        old = None
        if path.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".old", dir=path.parent))
            os.replace(path, old / "x")
        os.replace(tmp, path)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def read_json_object(path, *, missing_ok: bool = False) -> dict:
    """The JSON object in ``path`` (``run.json``, ``summary.json``...); ``{}`` for a missing file
    when ``missing_ok``. A damaged file is a one-line :class:`~scalegnn.errors.DataError`."""
    path = Path(path)
    if missing_ok and not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError):
        raise DataError(f"{path}: damaged (not valid JSON)") from None
    if not isinstance(data, dict):
        raise DataError(f"{path}: damaged (expected a JSON object)")
    return data


def same_path(given, recorded) -> bool:
    """``given`` names what ``recorded`` (a path or dataset spec from ``run.json``; None: nothing)
    names: the same text, or the same file once both are resolved."""
    if recorded is None:
        return False
    given, recorded = str(given), str(recorded)
    if given == recorded:
        return True
    try:
        return Path(given).resolve() == Path(recorded).resolve()
    except OSError:
        return False


def whole_npy_file(x):
    """The .npy file ``x`` maps whole (a float32 C-order memmap of all of it), else None."""
    name = getattr(x, "filename", None) if isinstance(x, np.memmap) else None
    if name is None or x.dtype != np.float32 or not x.flags.c_contiguous:
        return None
    try:
        m = np.load(name, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError, EOFError):
        return None
    whole = isinstance(m, np.memmap) and m.shape == x.shape and m.offset == x.offset \
        and m.dtype == x.dtype
    return name if whole else None


def write_npy_blocks(path, shape: tuple[int, int], blocks) -> None:
    """A float32 .npy of ``shape`` from consecutive row ``blocks``, written with plain file
    writes (a memmap would count every written page in this process's resident set)."""
    with open(path, "wb") as f:
        np.lib.format.write_array_header_1_0(f, {"descr": np.lib.format.dtype_to_descr(
            np.dtype(np.float32)), "fortran_order": False, "shape": tuple(shape)})
        rows = 0
        for block in blocks:
            np.ascontiguousarray(block, dtype=np.float32).tofile(f)
            rows += block.shape[0]
    if rows != shape[0]:
        raise ValueError(f"write_npy_blocks: {rows} rows written, {shape[0]} expected")


def read_npy_blocks(path, step: int, buf=None):
    """``(start, rows)`` of a float32 C-order 2-D .npy, read into one reused buffer of ``step``
    rows (``buf`` when given) with plain file reads (nothing mapped, nothing resident beyond
    the buffer)."""
    m = np.load(path, mmap_mode="r", allow_pickle=False)  # header only: no page is read
    if not isinstance(m, np.memmap) or m.dtype != np.float32 or m.ndim != 2 \
            or not m.flags.c_contiguous:
        raise DataError(f"{path}: expected a C-order 2-D float32 .npy")
    (n, width), offset = m.shape, m.offset
    del m
    with open(path, "rb") as f:
        f.seek(offset)
        if buf is None or buf.shape[0] < min(step, n) or buf.shape[1] != width:
            buf = np.empty((min(step, n), width), dtype=np.float32)
        for s in range(0, n, step):
            b = buf[:min(step, n - s)]
            if f.readinto(memoryview(b).cast("B")) != b.nbytes:
                raise DataError(f"{path}: truncated .npy")
            yield s, b
