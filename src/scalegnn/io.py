"""Atomic file writes: a reader never sees a half-written file or folder.

Contract: every writer here creates a temporary sibling in the *same folder* as the target
(so the final ``os.replace`` is a same-filesystem rename, atomic on POSIX), flushes and fsyncs
it, then renames it over the target. On any exception the temporary is removed and the target
is left as it was.

This module is the one place where a write fails: a full disk or quota, a read-only or
forbidden folder, a short write, or torch's serializer failing on one of them inside
``torch.save`` all become one :class:`~scalegnn.errors.WriteError` line naming the file the
caller asked for (``<path>: cannot write (<reason>)``), never the hidden temporary.

* :func:`atomic_write_bytes`, :func:`atomic_write_text`, :func:`atomic_write_json`
* :func:`atomic_save_npy`, :func:`atomic_save_npz` (``compressed=True`` -> ``np.savez_compressed``)
* :func:`atomic_open` — context manager yielding a file object for custom writers
* :func:`atomic_folder` — context manager yielding a temporary folder that replaces ``path``
  on success (an existing folder at ``path`` is moved aside and removed after the swap).
* :func:`append_text` — append to a log (``metrics.jsonl``); a failed append is undone.
* :func:`write_error` — the WriteError of an OSError on a path (for writes of other kinds).

:func:`write_npy_blocks` / :func:`read_npy_blocks` stream a float32 ``.npy`` in row blocks with
plain file reads and writes (nothing mapped, so nothing counts in the resident set), and
:func:`read_json_object` is the one reader of the small JSON files a run directory holds;
:func:`same_path` the one test of whether a given path names a recorded one.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from scalegnn.errors import DataError, ScaleGNNError, WriteError

__all__ = ["append_text", "atomic_folder", "atomic_open", "atomic_save_npy", "atomic_save_npz",
           "atomic_write_bytes", "atomic_write_json", "atomic_write_text", "read_json_object",
           "read_npy_blocks", "same_path", "whole_npy_file", "write_error", "write_npy_blocks"]

_NO_ROOM = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
_TORCH_WRITER = ("PytorchStreamWriter", "inline_container", "unexpected pos")


# ---------------------------------------------------------------------------- write errors
def write_error(path, e: BaseException | str) -> WriteError:
    """The one-line WriteError for ``path``: ``<path>: cannot write (<reason>)``; ``e`` is the
    OSError (or its reason)."""
    path = Path(path)
    reason = e if isinstance(e, str) else _reason(e, path)
    err = WriteError(f"{path}: cannot write ({reason})")
    err.path, err.reason = path, reason
    return err


def _reason(e: BaseException, path: Path) -> str:
    """Why a write to ``path`` failed, in words (``No space left on device``...)."""
    if isinstance(e, OSError) and e.errno in (errno.EEXIST, errno.ENOTDIR):
        block = next((p for p in (path, *path.parents) if p.exists()), None)
        if block is not None and block != path and not block.is_dir():
            return f"{block} is a file, not a folder"
    if isinstance(e, OSError) and e.errno is not None:
        return e.strerror or os.strerror(e.errno)
    if _free_bytes(path.parent) < (1 << 20):  # numpy's tofile: "N requested and M written"
        return os.strerror(errno.ENOSPC)
    text = (str(e).strip().splitlines() or [type(e).__name__])[0]
    return text if len(text) <= 120 else text[:117] + "..."


def _free_bytes(folder: Path) -> int:
    try:
        st = os.statvfs(folder)
    except OSError:
        return 1 << 62
    return st.f_bavail * st.f_frsize


def _os_error_in(e: BaseException) -> OSError | None:
    """``e`` when it is an OSError, else an OSError that caused it (torch's serializer turns
    a failed write into a RuntimeError raised while handling it)."""
    seen = set()
    while e is not None and id(e) not in seen:
        if isinstance(e, OSError):
            return e
        seen.add(id(e))
        e = e.__cause__ or (None if e.__suppress_context__ else e.__context__)
    return None


def _write_failure(e: BaseException, path: Path, tmp: str) -> WriteError | None:
    """The WriteError for ``e`` raised while writing ``path`` through ``tmp``; None when ``e``
    is no write failure (a bug, an interrupt, or an error reading some other file)."""
    if isinstance(e, ScaleGNNError) or not isinstance(e, Exception):
        return None  # already one line (a user error raised by the writer), or an interrupt
    cause = _os_error_in(e)
    if cause is None:
        if isinstance(e, RuntimeError) and any(w in str(e) for w in _TORCH_WRITER):
            return write_error(path, _reason(e, path))
        return None
    named = cause.filename is None or os.fsdecode(cause.filename) in (tmp, str(path))
    if named or cause.errno in _NO_ROOM + (errno.EROFS,):
        return write_error(path, _reason(cause, path))
    return None  # an error on another file (a read inside the writer): its own message


@contextlib.contextmanager
def atomic_open(path, mode: str = "wb"):
    """Yield a file object; on clean exit it is fsynced and renamed onto ``path``. A failed
    write is a WriteError naming ``path``; the temporary is removed, ``path`` left as it was."""
    if mode not in ("wb", "w"):
        raise ValueError(f"atomic_open: mode must be 'wb' or 'w', got {mode!r}")
    path = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as e:
        raise write_error(path, e) from None
    try:
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; published files should be readable
        with os.fdopen(fd, mode, **({"encoding": "utf-8"} if mode == "w" else {})) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        failure = _write_failure(e, path, tmp)  # before the unlink: it may look at free space
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if failure is not None:
            raise failure from None
        raise


def append_text(path, text: str) -> None:
    """Append ``text`` to ``path`` (created if missing) with unbuffered writes; a failed append
    is cut off again (the file keeps whole records) and is a WriteError naming ``path``."""
    path, data = Path(path), text.encode("utf-8")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError as e:
        raise write_error(path, e) from None
    try:
        start = os.fstat(fd).st_size
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(fd, view):]
        except OSError as e:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, start)
            raise write_error(path, e) from None
    finally:
        os.close(fd)


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
    (except for the two-rename window, during which it is briefly absent). A failed write
    inside is a WriteError naming the file under ``path`` (not under the temporary folder).
    """
    path = Path(path)
    if path.exists() and not overwrite:
        raise FileExistsError(f"{path} already exists")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    except OSError as e:
        raise write_error(path, e) from None
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
    except BaseException as e:
        failure = _folder_failure(e, path, tmp)
        shutil.rmtree(tmp, ignore_errors=True)
        if failure is not None:
            raise failure from None
        raise


def _folder_failure(e: BaseException, path: Path, tmp: Path) -> WriteError | None:
    """:func:`_write_failure` for a write inside ``atomic_folder``'s ``tmp``: the file named
    under ``path``."""
    def mine(name) -> Path | None:
        try:
            return path / Path(os.fsdecode(name)).relative_to(tmp)
        except (TypeError, ValueError):
            return None
    if isinstance(e, WriteError):
        inside = mine(e.path) if e.path is not None else None
        return write_error(inside, e.reason) if inside is not None else None
    if isinstance(e, ScaleGNNError) or not isinstance(e, Exception):
        return None
    cause = _os_error_in(e)
    if cause is None:
        return None
    if cause.filename is None:
        return write_error(path, _reason(cause, path))
    inside = path if os.fsdecode(cause.filename) == str(path) else mine(cause.filename)
    # an error on a file outside the folder is a read of the input: its own message
    return write_error(inside, _reason(cause, inside)) if inside is not None else None


def read_json_object(path, *, missing_ok: bool = False) -> dict:
    """The JSON object in ``path`` (``run.json``, ``summary.json``...); ``{}`` for a missing file
    when ``missing_ok``. A damaged file is a one-line :class:`~scalegnn.errors.DataError`."""
    path = Path(path)
    if missing_ok and not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
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
    """A float32 .npy of ``shape`` from consecutive row ``blocks``, written atomically with
    plain file writes (a memmap would count every written page in this process's resident
    set)."""
    with atomic_open(path, "wb") as f:
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
    try:
        m = np.load(path, mmap_mode="r", allow_pickle=False)  # header only: no page is read
    except (OSError, EOFError):
        raise
    except Exception as e:  # noqa: BLE001 (a damaged header: ValueError, TokenError...)
        raise DataError(f"{path}: not a readable .npy file ({type(e).__name__})") from None
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
