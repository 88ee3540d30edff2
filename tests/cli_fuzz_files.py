"""The files of the CLI fuzz (``test_cli_fuzz.py``, ``benchmarks/fuzz_cli.py``): small valid
fixtures made once per session, a case's private copies of them, and the damage a case does to
those copies.

Fixtures (:func:`build_fixtures`, made with the real CLI): ``gs`` (a 120-node GraphSAINT folder),
``run`` (a 2-epoch run trained on ``gs``, which its run.json records as the relative path
``gs``), ``plan`` (an rp plan of ``gs`` in 2 parts), ``csv`` (an edge list and a labels CSV),
``edges.txt`` (a lone edge list), ``het.npz`` (a heterophilous-layout dataset with 3 splits),
``spec.yml`` (a dataset spec naming ``gs``), ``config.yml`` and ``shadow.yml`` (small train
configs), ``ids.npy`` / ``ids.txt`` (node ids), ``random.bin`` and ``empty/``.

Damage (:func:`damage`, an operation drawn by ``cli_fuzz_cases``): truncation, bit flips,
zeroed or replaced bytes, a deleted file or one replaced by a folder, and structural edits that
keep the format readable: a JSON / JSONL / YAML value replaced (wrong type, huge, NaN, nested),
a top-level key of a JSON / JSONL / YAML / .pt mapping set (``set``), CSV / text
lines deleted, repeated or replaced, a ``.npy`` re-saved with another dtype, shape or
NaN/inf values, an ``.npz`` entry edited, dropped or renamed, a ``.pt`` checkpoint entry replaced.
"""

from __future__ import annotations

import io
import json
import math
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import yaml

FIXTURES = ("gs", "run", "plan", "csv", "edges.txt", "het.npz", "spec.yml", "config.yml",
            "shadow.yml", "ids.npy", "ids.txt", "random.bin", "empty")
CONFIG = {"network": {"dim": 16, "arch": "1-0-1-0"}, "params": {"lr": 0.01, "eval_every": 1},
          "phase": [{"end": 1, "sampler": "rw", "num_root": 20, "depth": 2}]}
SHADOW = {"network": {"dim": 16, "arch": "1-1"}, "params": {"lr": 0.01},
          "phase": [{"end": 1, "sampler": "rw", "num_root": 20, "depth": 2}],
          "shadow": {"extractors": [{"kind": "khop", "depth": 2, "budget": 5}],
                     "batch_size": 32, "eval_batch_size": 64, "cache_dir": "none"}}
EDITS = {".json": "json", ".jsonl": "json", ".yml": "yaml", ".yaml": "yaml", ".npy": "npy",
         ".npz": "npy", ".pt": "pt"}
"""The structural edit of a file, by its suffix (any other: its lines)."""
NPY_DTYPES = ("int8", "int64", "uint16", "float16", "float64", "bool", "complex64", "<U2")


@dataclass
class FileSpec:
    """A file or folder of a case: ``alias`` (its path in the case folder) made from
    ``source`` (``("fixture", name)``, ``("text", str)`` or ``("bytes", bytes)``), then damaged
    by ``ops`` (each ``(file index, operation)``)."""

    alias: str
    source: tuple
    ops: list = field(default_factory=list)


def build_fixtures(root: Path, run_cli) -> Path:
    """The fixtures in ``root`` (made by ``run_cli(argv, cwd)``, which must succeed)."""
    root.mkdir(parents=True, exist_ok=True)
    run_cli(["data", "synth", "planted", "--nodes", "120", "--features", "8", "--classes", "3",
             "--degree", "6", "--out", "gs"], root)
    run_cli(["train", "--data", "gs", "--epochs", "2", "--seed", "1", "--threads", "1",
             "--no-progress", "--set", "network.dim=16", "--set", "phase.num_root=20", "--out",
             "run"], root)
    for name in ("report.png", "report.html", ".lock"):
        (root / "run" / name).unlink(missing_ok=True)
    run_cli(["partition", "make", "gs", "--parts", "2", "--method", "rp", "--out", "plan"], root)
    rng = np.random.default_rng(0)
    n = 60
    edges = rng.integers(0, n, (200, 2))
    (root / "csv").mkdir()
    (root / "csv" / "g_edges.csv").write_text(
        "id_1,id_2\n" + "".join(f"{a},{b}\n" for a, b in edges))
    (root / "csv" / "g_target.csv").write_text(
        "id,target\n" + "".join(f"{i},{i % 3}\n" for i in range(n)))
    (root / "edges.txt").write_text("# a lone edge list\n" + "".join(f"{a} {b}\n"
                                                                      for a, b in edges))
    masks = rng.random((3, n)) < 0.5
    np.savez(root / "het.npz", node_features=rng.random((n, 4), dtype=np.float32),
             node_labels=np.arange(n) % 2, edges=edges, train_masks=masks,
             val_masks=~masks, test_masks=~masks)
    (root / "spec.yml").write_text("path: gs\n")
    (root / "config.yml").write_text(yaml.safe_dump(CONFIG))
    (root / "shadow.yml").write_text(yaml.safe_dump(SHADOW))
    np.save(root / "ids.npy", np.arange(0, 120, 7))
    (root / "ids.txt").write_text("".join(f"{i}\n" for i in range(0, 120, 11)))
    (root / "random.bin").write_bytes(rng.bytes(64))
    (root / "empty").mkdir()
    return root


def materialize(case_dir: Path, fixtures: Path, files: list[FileSpec]) -> None:
    """Copy or write every file of a case into ``case_dir``, then damage it."""
    for spec in files:
        target = case_dir / spec.alias
        target.parent.mkdir(parents=True, exist_ok=True)
        kind, value = spec.source
        if kind == "fixture":
            src = fixtures / value
            if target.exists() or target.is_symlink():
                _remove(target)
            if src.is_dir():
                shutil.copytree(src, target)
            else:
                shutil.copyfile(src, target)
        elif kind == "text":
            target.write_text(value, encoding="utf-8", errors="surrogateescape")
        else:
            target.write_bytes(value)
        for index, op in spec.ops:
            files_in = [target] if target.is_file() else \
                sorted(p for p in target.rglob("*") if p.is_file())
            if files_in:
                damage(files_in[index % len(files_in)], op)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


# ----------------------------------------------------------------------------- damage
def damage(path: Path, op: tuple) -> None:
    """Apply one damage operation to the file ``path`` (see the module docstring)."""
    kind, *args = op
    if kind == "delete":
        path.unlink()
        return
    if kind == "to_dir":
        path.unlink()
        path.mkdir()
        return
    data = path.read_bytes()
    if kind == "set":
        edited = _set_key(path, data, *args)
        if edited is not None:
            path.write_bytes(edited)
        return
    if kind == "edit":
        kind = EDITS.get(path.suffix, "lines")
    if kind in ("json", "yaml", "lines", "npy", "pt"):
        edited = _structural(path, data, kind, *args)
        if edited is not None:
            path.write_bytes(edited)
            return
        kind, args = "flip", [[(0.5, 0)]]  # not of that format: a bit flip instead
    path.write_bytes(_bytes(data, kind, *args))


def _bytes(data: bytes, kind: str, *args) -> bytes:
    n = len(data)
    if kind == "truncate":
        return data[:int(n * args[0])]
    if kind == "flip":
        b = bytearray(data)
        for frac, bit in args[0]:
            if b:
                b[min(int(frac * len(b)), len(b) - 1)] ^= 1 << (bit % 8)
        return bytes(b)
    if kind == "zero":
        start = int(n * args[0])
        return data[:start] + bytes(min(args[1], n - start)) + data[start + args[1]:]
    if kind == "replace":
        return args[0]
    if kind == "append":
        return data + args[0]
    raise ValueError(f"unknown damage {kind!r}")


def _structural(path: Path, data: bytes, kind: str, index: int, value) -> bytes | None:
    """The file with one structural edit, or None when it is not of that format."""
    try:
        if kind == "lines":
            lines = data.decode("utf-8").splitlines(keepends=True)
            return _edit_lines(lines, index, value).encode("utf-8", "surrogateescape")
        if kind == "npy" and path.suffix == ".npz":
            return _edit_npz(data, index, value)
        if kind == "npy":
            arr = np.load(io.BytesIO(data), allow_pickle=False)
            return _npy_bytes(_edit_array(arr, index, value))
        if kind == "pt":
            state = torch.load(io.BytesIO(data), weights_only=True)
            buf = io.BytesIO()
            torch.save(_replace_at(state, index, _tensorish(value)), buf)
            return buf.getvalue()
        if path.suffix == ".jsonl":
            lines = data.decode("utf-8").splitlines(keepends=True)
            i = index % max(len(lines), 1)
            if lines:
                rec = json.loads(lines[i])
                lines[i] = json.dumps(_replace_at(rec, index // 7, value)) + "\n"
            return "".join(lines).encode()
        if kind == "json":
            doc = json.loads(data.decode("utf-8"))
            return json.dumps(_replace_at(doc, index, value)).encode()
        doc = yaml.safe_load(data.decode("utf-8"))
        return yaml.safe_dump(_replace_at(doc, index, value)).encode()
    except Exception:  # noqa: BLE001 (not of that format, or already damaged)
        return None


def _set_key(path: Path, data: bytes, key: str, value) -> bytes | None:
    """A JSON / JSONL / YAML / .pt mapping with its top-level ``key`` set to ``value`` (every
    record of a JSONL file); None when the file holds no mapping."""
    try:
        kind = EDITS.get(path.suffix)
        if kind == "pt":
            state = torch.load(io.BytesIO(data), weights_only=True)
            state[key] = _tensorish(value)
            buf = io.BytesIO()
            torch.save(state, buf)
            return buf.getvalue()
        if path.suffix == ".jsonl":
            recs = [json.loads(line) for line in data.decode("utf-8").splitlines()]
            return "".join(json.dumps({**r, key: value}) + "\n" for r in recs).encode()
        doc = (json.loads if kind == "json" else yaml.safe_load)(data.decode("utf-8"))
        doc[key] = value
        return (json.dumps(doc) if kind == "json" else yaml.safe_dump(doc)).encode()
    except Exception:  # noqa: BLE001 (not a mapping of that format)
        return None


def _edit_lines(lines: list[str], index: int, value) -> str:
    if not lines:
        return str(value) + "\n"
    i = index % len(lines)
    how = index // len(lines) % 4
    if how == 0:
        del lines[i]
    elif how == 1:
        lines.insert(i, lines[i])
    elif how == 2:
        lines[i] = f"{value}\n"
    else:
        lines.insert(i, f"{value},{value}\n")
    return "".join(lines)


def _npy_bytes(arr) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return buf.getvalue()


def _edit_array(arr: np.ndarray, index: int, value):
    """One edit of an array: dtype, shape, values or layout."""
    how = index % 8
    if how == 0:
        return arr.astype(NPY_DTYPES[index // 8 % len(NPY_DTYPES)])
    if how == 1:
        return arr[:max(arr.shape[0] - 1 - index // 8 % 3, 0)] if arr.ndim else arr.reshape(1)
    if how == 2:
        return arr.ravel()
    if how == 3:
        return arr[..., None]
    if how == 4:
        return arr.T.copy() if arr.ndim > 1 else arr.reshape(1, -1)
    if how == 5:
        return np.asfortranarray(arr)
    out = arr.astype(np.float64) if arr.dtype.kind not in "f" else arr.copy()
    if out.size:
        bad = (math.nan, math.inf, -math.inf, 1e300, -1.0, 2.0**31)[index // 8 % 6]
        out.flat[index // 48 % out.size] = bad
    return out if how == 6 else out.astype(arr.dtype, casting="unsafe")


def _edit_npz(data: bytes, index: int, value) -> bytes:
    with np.load(io.BytesIO(data), allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    keys = sorted(arrays)
    key = keys[index % len(keys)] if keys else "x"
    how = index // max(len(keys), 1) % 4
    if how == 0:
        arrays.pop(key, None)
    elif how == 1 and key in arrays:
        arrays[key + "_"] = arrays.pop(key)
    elif how == 2 and key in arrays:
        arrays[key] = _edit_array(arrays[key], index // 4, value)
    else:
        arrays[key] = np.asarray(value if isinstance(value, (int, float, bool)) else 0)
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def _tensorish(value):
    """A value a weights-only checkpoint can hold: lists of numbers become tensors."""
    if isinstance(value, list) and value and all(isinstance(v, (int, float)) for v in value):
        return torch.tensor(value)
    return value


def _nodes(doc, path=()):
    """Every (path, node) of a JSON-like tree, depth first."""
    yield path, doc
    items = doc.items() if isinstance(doc, dict) else \
        enumerate(doc) if isinstance(doc, list) else ()
    for k, v in items:
        yield from _nodes(v, (*path, k))


def _replace_at(doc, index: int, value):
    """``doc`` with its ``index``-th node (mod their count) replaced by ``value``."""
    nodes = list(_nodes(doc))
    path, _ = nodes[index % len(nodes)]
    if not path:
        return value
    parent = doc
    for k in path[:-1]:
        parent = parent[k]
    parent[path[-1]] = value
    return doc
