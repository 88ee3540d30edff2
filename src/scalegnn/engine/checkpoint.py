"""Checkpoints of every training mode: what they hold and how they are read safely.

A checkpoint is a dict of tensors, numbers, strings, lists and dicts only. It is written with
``torch.save`` and read with ``torch.load(weights_only=True)``, so a crafted file cannot run code
(random-generator states are stored as tensors for that reason). ``last.pt`` holds::

    format       "scalegnn-checkpoint/1"
    identity     what the run trains on: mode, dataset fingerprint, plan hash, world size
    next_epoch   the epoch to run next, and
    next_iter    the iteration inside it (0 at an epoch boundary; > 0 after a mid-epoch save)
    partial      the running epoch's losses and times so far (mid-epoch saves)
    model, optimizer, best, mode (the batch stream's position), rng (one row per rank)
    best         also ``stale``: validation passes since the best one (early stopping)
    schedule     the learning-rate schedule's state (scalegnn.engine.optim.LRSchedule)

``best.pt`` holds ``format``, ``identity``, ``model``, ``epoch`` and ``val``. A checkpoint whose
identity or parameter shapes differ from the run that loads it is refused with one line.
"""

from __future__ import annotations

import hashlib
import pickle
import zipfile
from pathlib import Path

import numpy as np
import torch

from scalegnn.errors import ConfigError

FORMAT = "scalegnn-checkpoint/1"
_FINGERPRINT_SAMPLE = 1 << 22  # elements hashed per array: enough to tell graphs apart, O(1) time


def dataset_fingerprint(dataset) -> dict:
    """Identity of a dataset: its sizes plus a blake2b hash of a strided sample of its CSR
    arrays and labels (at most 4M elements each, so a 10^9-edge graph is fingerprinted in
    milliseconds; any change of sizes, or of the sampled entries, changes it)."""
    g = dataset.graph
    h = hashlib.blake2b(digest_size=12)
    for arr in (g.indptr, g.indices, np.asarray(dataset.labels).reshape(-1)):
        step = max(1, arr.shape[0] // _FINGERPRINT_SAMPLE)
        h.update(np.ascontiguousarray(arr[::step], dtype=np.int64).tobytes())
    return {"name": str(dataset.name), "nodes": int(g.num_nodes), "edges": int(g.num_edges),
            "features": int(dataset.num_features), "classes": int(dataset.num_classes),
            "hash": h.hexdigest()}


# ---------------------------------------------------------------------------- RNG as tensors
def rng_state() -> torch.Tensor:
    """This process's random-generator states (torch CPU, numpy's global MT19937, and every
    CUDA device's once CUDA is initialized) packed into one uint8 tensor."""
    parts = [torch.get_rng_state()]
    _, keys, pos, has_gauss, gauss = np.random.get_state()
    extra = np.array([pos, has_gauss], dtype=np.int64).view(np.uint8)
    parts += [torch.from_numpy(keys.astype(np.uint32).view(np.uint8).copy()),
              torch.from_numpy(extra.copy()),
              torch.from_numpy(np.array([gauss], dtype=np.float64).view(np.uint8).copy())]
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        parts += list(torch.cuda.get_rng_state_all())
    sizes = torch.tensor([p.numel() for p in parts], dtype=torch.int64).view(torch.uint8)
    return torch.cat([torch.tensor([len(parts)], dtype=torch.int64).view(torch.uint8), sizes,
                      *[p.reshape(-1) for p in parts]])


def set_rng_state(packed: torch.Tensor) -> None:
    """Inverse of :func:`rng_state`; ValueError when ``packed`` is not such a state (damaged)."""
    try:
        _set_rng_state(packed)
    except (RuntimeError, ValueError, IndexError, TypeError, OverflowError) as e:
        raise ValueError(f"damaged random-generator state ({type(e).__name__})") from None


def _set_rng_state(packed: torch.Tensor) -> None:
    packed = packed.contiguous()
    n = int(packed[:8].view(torch.int64)[0])
    sizes = packed[8:8 + 8 * n].view(torch.int64).tolist()
    off, parts = 8 + 8 * n, []
    for s in sizes:
        parts.append(packed[off:off + s].clone())
        off += s
    torch.set_rng_state(parts[0])
    pos, has_gauss = parts[2].numpy().view(np.int64)
    gauss = float(parts[3].numpy().view(np.float64)[0])
    np.random.set_state(("MT19937", parts[1].numpy().view(np.uint32).copy(), int(pos),
                         int(has_gauss), gauss))
    if len(parts) > 4 and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(parts[4:])


# ---------------------------------------------------------------------------- safe load
def load_checkpoint(path, map_location="cpu") -> dict:
    """``torch.load(path, weights_only=True)``; anything but a scalegnn checkpoint -> one line."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: checkpoint not found")
    try:
        ck = torch.load(path, map_location=map_location, weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError, ValueError, zipfile.BadZipFile,
            AttributeError, TypeError, KeyError, IndexError) as e:
        why = (str(e).strip().splitlines() or [type(e).__name__])[0].split(". ")[0][:120]
        raise ConfigError(f"{path}: not a loadable scalegnn checkpoint (refused by the safe "
                          f"loader: {why})") from None
    if not isinstance(ck, dict) or ck.get("format") != FORMAT:
        raise ConfigError(f"{path}: not a scalegnn checkpoint (format "
                          f"{ck.get('format') if isinstance(ck, dict) else type(ck).__name__!r}, "
                          f"expected {FORMAT!r})")
    check_fields(ck, path)
    return ck


_COUNT = (int, "a count >= 0")
_NUMBER = ((int, float), "a number")
_MAP = (dict, "a mapping")
FIELDS = {"identity": _MAP, "model": _MAP, "optimizer": _MAP, "best": _MAP, "totals": _MAP,
          "mode": _MAP, "val": _MAP, "epoch": _COUNT, "next_epoch": _COUNT, "next_iter": _COUNT,
          "seed": _COUNT, "partial": ((dict, type(None)), "a mapping or null"),
          "schedule": ((dict, type(None)), "a mapping or null")}
"""The type of each field a checkpoint may hold (module docstring); :func:`check_fields`."""
NESTED = {("best", "epoch"): _COUNT, ("best", "stale"): _COUNT, ("best", "value"): _NUMBER,
          ("partial", "sample_s"): _NUMBER, ("partial", "compute_s"): _NUMBER,
          ("identity", "dataset"): ((dict, type(None)), "a mapping or null")}

REQUIRED = {"best": ("epoch", "value"), "partial": ("losses", "sample_s", "compute_s")}


def check_fields(ck: dict, path) -> None:
    """Every known field of checkpoint ``ck`` (:data:`FIELDS`, :data:`NESTED`, ``totals``'
    numbers, ``partial``'s losses) has its type; else one ConfigError line naming the field."""
    def bad(name, value, what):
        text = repr(value) if not isinstance(value, torch.Tensor) else \
            f"a tensor of shape {tuple(value.shape)}"
        text = text if len(text) <= 40 else f"{text[:37]}..."
        return ConfigError(f"{path}: damaged checkpoint ({name} is {text}, expected {what})")

    def ok(value, kinds):
        return isinstance(value, kinds) and not isinstance(value, bool)

    for key, (kinds, what) in FIELDS.items():
        if key in ck and (not ok(ck[key], kinds) or (ok(ck[key], int) and ck[key] < 0)):
            raise bad(key, ck[key], what)
    for (outer, key), (kinds, what) in NESTED.items():
        inner = ck.get(outer)
        if isinstance(inner, dict) and key in inner and not ok(inner[key], kinds):
            raise bad(f"{outer}.{key}", inner[key], what)
    for outer, keys in REQUIRED.items():
        inner = ck.get(outer)
        missing = [k for k in keys if isinstance(inner, dict) and k not in inner]
        if missing:
            raise ConfigError(f"{path}: damaged checkpoint ({outer} has no {missing[0]})")
    for key, value in (ck.get("totals") or {}).items():
        if not ok(value, (int, float)):
            raise bad(f"totals.{key}", value, "a number of seconds")
    partial = ck.get("partial")
    if isinstance(partial, dict):
        losses = partial.get("losses")
        if not isinstance(losses, torch.Tensor) or losses.dim() != 1:
            raise bad("partial.losses", losses, "a vector of losses")


def check_identity(ck: dict, identity: dict, path) -> None:
    """Refuse a checkpoint trained on another mode, dataset, plan or world size."""
    theirs = ck.get("identity") or {}
    for key in ("mode", "dataset", "plan", "world"):
        a, b = theirs.get(key), identity.get(key)
        if a != b:
            raise ConfigError(f"{path}: checkpoint is for {key} {_short(a)}, this run has "
                              f"{_short(b)}; use a new --out or the run's own data")


def _short(v) -> str:
    if isinstance(v, dict):
        return f"{v.get('name', '?')!r} ({v.get('nodes', '?')} nodes, {v.get('features', '?')} " \
               f"features, {v.get('classes', '?')} classes, hash {v.get('hash', '?')})"
    return repr(v)


def load_model_state(model: torch.nn.Module, state: dict, path) -> None:
    """``model.load_state_dict(state)``, refusing other parameter names or shapes in one line."""
    mine = model.state_dict()
    if not isinstance(state, dict):
        raise ConfigError(f"{path}: model state is not a mapping")
    missing = sorted(set(mine) - set(state))
    extra = sorted(set(state) - set(mine))
    if missing or extra:
        raise ConfigError(f"{path}: checkpoint model does not fit this config (missing "
                          f"{missing[:3]}, unexpected {extra[:3]})")
    for k, v in mine.items():
        if not isinstance(state[k], torch.Tensor) or tuple(state[k].shape) != tuple(v.shape):
            got = tuple(state[k].shape) if isinstance(state[k], torch.Tensor) else type(state[k])
            raise ConfigError(f"{path}: checkpoint parameter {k} has shape {got}, this config's "
                              f"model has {tuple(v.shape)} (another network.dim/arch/dataset?)")
    model.load_state_dict(state)
