"""Helpers shared by the loaders: file checks, safe npz access, CSR cleanup, splits, labels.

Every problem becomes a one-line :class:`DataError` that starts with the file's path.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from scalegnn import _graph_kernels as K
from scalegnn.data import _build
from scalegnn.errors import DataError, GraphError
from scalegnn.graph import Graph

DEFAULT_SPLIT = (0.5, 0.25, 0.25)


def require_file(path, what: str = "file") -> Path:
    """``path`` as a Path, or DataError if it is not an existing regular file."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: missing {what}" if not path.exists()
                        else f"{path}: expected a file, found a folder")
    return path


def npz_arrays(path, keys=None) -> dict:
    """Arrays of an .npz file, read with ``allow_pickle=False``.

    Only the requested ``keys`` (all when None) are read, so an unrelated pickled entry does
    not stop a load; a requested entry that would need unpickling is refused. A damaged
    archive or entry (bad zip, CRC error, truncated data, a header promising more than the
    file holds) is a DataError naming the file and the entry.
    """
    path = require_file(path, ".npz file")
    try:
        z = np.load(path, allow_pickle=False)
    except Exception as e:  # zipfile.BadZipFile, ValueError, OSError, EOFError...
        raise DataError(f"{path}: not a readable .npz file ({_short(e)})") from None
    if not hasattr(z, "files"):
        raise DataError(f"{path}: expected an .npz archive, found a single .npy array")
    out = {}
    with z:
        for k in (z.files if keys is None else keys):
            if k not in z.files:
                continue
            try:
                out[k] = z[k]
            except ValueError as e:
                if "pickle" in str(e).lower():
                    raise DataError(f"{path}: entry {k!r} is an object array that would need "
                                    "unpickling; refusing to load it") from None
                raise DataError(f"{path}: entry {k!r} is unreadable ({_short(e)})") from None
            except Exception as e:  # BadZipFile (CRC), zlib.error, EOFError, MemoryError...
                raise DataError(f"{path}: entry {k!r} is unreadable ({_short(e)})") from None
    return out


def load_npy(path, what: str = "array", mmap: bool = False) -> np.ndarray:
    """One ``.npy`` array, never unpickled; DataError naming ``path`` for anything else.

    The file is memory-mapped first, so a header that promises more data than the file holds
    is refused before anything is allocated; without ``mmap`` the array is then read into
    memory (object arrays cannot be mapped and are read to give the pickle message).
    """
    path = require_file(path, what)
    try:
        x = np.load(path, mmap_mode="r", allow_pickle=False)
        if isinstance(x, np.memmap) and not mmap:
            x = _read_mapped(path, x)
        elif isinstance(x, np.ndarray) and not mmap:
            x = np.array(x)
    except ValueError as e:
        if "python objects" in str(e).lower() or "pickle" in str(e).lower():
            raise DataError(f"{path}: {what} would need unpickling; refusing") from None
        raise DataError(f"{path}: not a readable .npy file ({_short(e)})") from None
    except Exception as e:  # noqa: BLE001 (OSError, EOFError, MemoryError, a damaged header's
        # tokenize.TokenError or SyntaxError...)
        raise DataError(f"{path}: not a readable .npy file ({_short(e)})") from None
    if not isinstance(x, np.ndarray):
        if hasattr(x, "close"):
            x.close()
        raise DataError(f"{path}: expected a single .npy array, found an .npz archive")
    return x


def load_features(path, n: int, mmap: bool = False) -> np.ndarray:
    """(n, F) float32 features from .npy; memory-mapped read-only when ``mmap`` and float32."""
    x = load_npy(path, "features", mmap=mmap)
    if x.ndim != 2:
        raise DataError(f"{path}: features must be 2-D, got shape {tuple(x.shape)}")
    check_features_rows(x, n, path)
    if x.dtype != np.float32:
        if x.dtype.kind not in "fiub":
            raise DataError(f"{path}: features must be numeric, got dtype {x.dtype}")
        x = np.asarray(x, dtype=np.float32)
    if not _finite_chunks(x):
        raise DataError(f"{path}: features contain NaN or inf")
    return x


def _finite_chunks(x, chunk: int = 1 << 16) -> bool:
    return all(np.isfinite(x[s:s + chunk]).all() for s in range(0, x.shape[0], chunk))


def _read_mapped(path, m: np.memmap) -> np.ndarray:
    """The data of a mapped .npy read into memory with plain reads: copying out of the
    mapping would make its file pages resident in this process too (twice the array in RSS)."""
    order = "F" if m.flags.f_contiguous and not m.flags.c_contiguous else "C"
    with open(path, "rb") as f:
        f.seek(m.offset)
        out = np.fromfile(f, dtype=m.dtype, count=m.size)
    if out.size != m.size:
        raise EOFError(f"expected {m.size} values, the file holds {out.size}")
    return out.reshape(m.shape, order=order)


def _short(e: Exception, limit: int = 160) -> str:
    """The first line of ``e``'s message (its type when empty), at most ``limit`` characters:
    a damaged header's bytes are quoted in the message."""
    text = (str(e).strip().splitlines() or [""])[0] or type(e).__name__
    return text if len(text) <= limit else text[:limit - 3] + "..."


MAX_ID = 2**53  # every integer below this is exact in float64; ids/labels beyond are absurd


def check_int_array(arr, path, what: str) -> np.ndarray:
    """``arr`` as an integer array; whole-number floats (``3.0``) become int64, anything else
    (``1.5``, nan, inf, huge floats, bools, strings) is a DataError naming the first bad value."""
    arr = np.asarray(arr)
    if arr.dtype == np.uint64 and arr.size and arr.max() >= MAX_ID:  # would wrap in int64
        raise DataError(f"{path}: {what} must be integers below 2**53, got {arr.max()}")
    if arr.dtype.kind in "iu":
        return arr
    if arr.dtype.kind != "f":
        raise DataError(f"{path}: {what} must be integers, got dtype {arr.dtype}")
    wide = arr.astype(np.float64)
    with np.errstate(invalid="ignore"):
        ok = np.isfinite(wide) & (np.mod(wide, 1) == 0) & (np.abs(wide) < MAX_ID)
    if not ok.all():
        bad = wide.ravel()[np.flatnonzero(~ok.ravel())[0]]
        raise DataError(f"{path}: {what} must be integers, got {float(bad)!r}")
    return wide.astype(np.int64)


def int_values(values, path, what: str) -> np.ndarray:
    """A list of JSON numbers as int64 (see :func:`check_int_array`); DataError otherwise."""
    try:
        arr = np.asarray(values)
    except (ValueError, TypeError):
        raise DataError(f"{path}: {what} must be a flat list of integers") from None
    if arr.dtype == bool:
        raise DataError(f"{path}: {what} must be integers, got true/false")
    return check_int_array(arr, path, what).astype(np.int64, copy=False)


def parse_int(token: str) -> int | None:
    """``'3'`` or ``'3.0'`` -> 3; None for anything that is not a whole number."""
    token = token.strip()
    try:
        return int(token)
    except ValueError:
        pass
    try:
        f = float(token)
    except ValueError:
        return None
    return int(f) if f.is_integer() and abs(f) < MAX_ID else None


def shape_2d(shape, path, what: str = "adjacency") -> tuple[int, int]:
    """A stored ``(rows, cols)`` shape as two non-negative ints; DataError otherwise."""
    s = check_int_array(np.asarray(shape).ravel(), path, f"{what} shape")
    if s.shape[0] != 2:
        raise DataError(f"{path}: {what} shape must have 2 entries, got {s.shape[0]}")
    if s.min() < 0:
        raise DataError(f"{path}: {what} shape {tuple(int(v) for v in s)} is negative")
    return int(s[0]), int(s[1])


def clean_csr(indptr, indices, shape, path, *, symmetrize: bool = True) -> tuple[Graph, dict]:
    """A validated, sorted, deduplicated, self-loop-free, symmetric Graph from CSR arrays.

    ``indices`` is modified in place (callers pass arrays they own). Returns the graph and a
    dict of what the cleanup changed (``self_loops_removed``, ``duplicates_removed``,
    ``symmetrized``), so the loader can document it in ``Dataset.meta``.
    """
    shape = shape_2d(shape, path)
    if shape[0] != shape[1]:
        raise DataError(f"{path}: adjacency is not square ({shape[0]} x {shape[1]})")
    indptr = check_int_array(indptr, path, "adjacency indptr")
    indices = check_int_array(indices, path, "adjacency indices")
    if indptr.ndim != 1 or indices.ndim != 1:
        raise DataError(f"{path}: adjacency indptr and indices must be 1-D arrays")
    if indptr.shape[0] != shape[0] + 1:
        raise DataError(f"{path}: indptr has length {indptr.shape[0]}, expected {shape[0] + 1}")
    if indices.size and indices.min() < 0:
        raise DataError(f"{path}: negative node id {indices.min()} in the adjacency")
    try:
        g = Graph(indptr, indices, shape[1], name=str(path))
    except GraphError as e:
        raise DataError(str(e)) from None
    if not g.indices.flags.writeable:
        g.indices = g.indices.copy()
    before = g.num_edges
    loops = int(_build.count_self_loops(g.indptr, g.indices))
    lengths = K.sort_dedupe_rows(g.indptr, g.indices, True, True)
    g.indptr = K.compact_rows(g.indptr, g.indices, lengths)
    g.indices = _build.shrink(g.indices, int(g.indptr[-1]))
    changes = {"self_loops_removed": loops,
               "duplicates_removed": before - loops - g.num_edges, "symmetrized": False}
    if symmetrize and not g.is_symmetric():
        g = g.symmetrize()
        changes["symmetrized"] = True
    return g, changes


def graph_from_edges(src, dst, n, path, *, symmetrize: bool = True) -> Graph:
    """Symmetric, deduplicated, self-loop-free Graph from an edge list; DataError on bad ids."""
    src = check_int_array(src, path, "edge endpoints")
    dst = check_int_array(dst, path, "edge endpoints")
    if src.size:
        lo = min(int(src.min()), int(dst.min()))
        hi = max(int(src.max()), int(dst.max()))
        if lo < 0:
            raise DataError(f"{path}: negative node id {lo} in the edge list")
        if hi >= n:
            raise DataError(f"{path}: node id {hi} in the edge list is out of range for "
                            f"{n} nodes")
    try:
        return Graph.from_edges(src, dst, n, symmetrize=symmetrize, deduplicate=True,
                                remove_self_loops=True, name=str(path))
    except GraphError as e:
        raise DataError(str(e)) from None


def seeded_split(n: int, seed: int, fractions=DEFAULT_SPLIT, nodes=None):
    """Random (train, val, test) node ids, each sorted; ``nodes`` defaults to all n nodes.

    Sizes are floor(f_train * k), floor(f_val * k), rest; deterministic in ``seed``.
    """
    nodes = np.arange(n, dtype=np.int64) if nodes is None else np.asarray(nodes, np.int64)
    perm = np.random.default_rng(seed).permutation(nodes)
    k = perm.shape[0]
    a = int(fractions[0] * k)
    b = a + int(fractions[1] * k)
    return np.sort(perm[:a]), np.sort(perm[a:b]), np.sort(perm[b:])


def mask_split(train, val, test, path):
    """Index arrays from three boolean masks of equal length."""
    out = []
    for name, m in (("train", train), ("val", val), ("test", test)):
        m = np.asarray(m)
        if m.dtype != bool:
            if m.dtype.kind not in "iu" or not np.isin(m, (0, 1)).all():
                raise DataError(f"{path}: {name} mask must be boolean")
            m = m.astype(bool)
        out.append(np.flatnonzero(m).astype(np.int64))
    return tuple(out)


def class_labels(y, path, num_nodes: int) -> np.ndarray:
    """Single-label class ids as int64; DataError for negatives or a wrong length."""
    y = check_int_array(np.asarray(y).ravel(), path, "labels")
    if y.shape[0] != num_nodes:
        raise DataError(f"{path}: {y.shape[0]} labels for {num_nodes} nodes")
    if y.size and y.min() < 0:
        raise DataError(f"{path}: label id {y.min()} is negative")
    return y.astype(np.int64)


def strings_to_classes(values) -> tuple[np.ndarray, list]:
    """Map class names to ids in sorted order of the names; returns (ids, names)."""
    names = sorted(set(values))
    lookup = {v: i for i, v in enumerate(names)}
    return np.array([lookup[v] for v in values], dtype=np.int64), names


def metric_for(labels) -> str:
    """f1_micro for multi-label, accuracy for single-label (binary callers may choose roc_auc)."""
    return "f1_micro" if np.asarray(labels).ndim == 2 else "accuracy"


def finite_float32(x, path, what: str = "features") -> np.ndarray:
    """Features as float32; DataError for NaN/inf or a non-numeric dtype."""
    x = np.asarray(x)
    if x.dtype.kind not in "fiub":
        raise DataError(f"{path}: {what} must be numeric, got dtype {x.dtype}")
    with np.errstate(over="ignore", invalid="ignore"):  # too large for float32 -> inf, refused
        x = x.astype(np.float32, copy=False)
    if x.ndim != 2:
        raise DataError(f"{path}: {what} must be a 2-D matrix, got shape {tuple(x.shape)}")
    if not np.isfinite(x).all():
        raise DataError(f"{path}: {what} contain NaN or inf")
    return x


def check_features_rows(x, n: int, path) -> None:
    if x.ndim != 2 or x.shape[0] != n:
        raise DataError(f"{path}: features have {x.shape[0] if x.ndim else 0} rows but the "
                        f"graph has {n} nodes")


def finish(ds):
    """Validate a Dataset, turning GraphError into DataError (one line, names the source)."""
    try:
        return ds.validate()
    except GraphError as e:
        raise DataError(f"{ds.source}: {e}") from None


def parse_int_keys(obj: dict, path) -> np.ndarray:
    """The keys of a JSON object as distinct int64 node ids ('3', not '3.5' or '03' twice)."""
    out = np.empty(len(obj), dtype=np.int64)
    for i, k in enumerate(obj):
        v = parse_int(k) if isinstance(k, str) and k.strip().lstrip("+-").isdigit() else None
        if v is None or not -MAX_ID < v < MAX_ID:
            raise DataError(f"{path}: keys must be integer node ids, found {k!r:.40}")
        out[i] = v
    ordered = np.sort(out)  # a sort: np.unique's hash pass is ~100x slower on int64 here
    if (ordered[1:] == ordered[:-1]).any():
        raise DataError(f"{path}: a node id appears twice among the keys")
    return out
