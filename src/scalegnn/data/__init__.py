"""Dataset type, loaders (one module per format) and synthetic generators.

Entry point: :func:`load_dataset`.
"""

from __future__ import annotations

import os
from pathlib import Path

from scalegnn.data import options as O
from scalegnn.data import synthetic as S
from scalegnn.data.csv import edge_files, load_csv
from scalegnn.data.dataset import Dataset
from scalegnn.data.graphsaint import load_graphsaint
from scalegnn.data.mat import load_mat
from scalegnn.data.npz import load_npz, npz_layout
from scalegnn.data.ogb import find_ogb_root, load_ogb
from scalegnn.data.options import check_for_format
from scalegnn.errors import DataError

__all__ = ["Dataset", "load_dataset", "detect_format", "GENERATORS"]

GENERATORS = ("synthetic", "planted", "kronecker")

_PLANTED_KEYS = {"nodes": int, "classes": int, "features": int, "degree": float, "p_in": float,
                 "noise": float, "multilabel": lambda s: _bool(s), "labels": int, "seed": int}
_KRON_KEYS = {"a": float, "b": float, "c": float, "features": int, "labels": int, "classes": int,
              "seed": int}


def _bool(s: str) -> bool:
    if s.lower() in ("1", "true", "yes"):
        return True
    if s.lower() in ("0", "false", "no"):
        return False
    raise ValueError(s)


def _options(spec: str, text: str, allowed: dict) -> dict:
    out = {}
    for item in filter(None, text.split(",")):
        key, sep, val = item.partition("=")
        key = key.strip()
        if not sep or key not in allowed:
            raise DataError(f"dataset spec {spec!r}: bad option {item!r}; allowed keys: "
                            f"{', '.join(allowed)} (as key=value,key=value)")
        try:
            out[key] = allowed[key](val.strip())
        except ValueError:
            raise DataError(f"dataset spec {spec!r}: option {key} has bad value {val!r}") \
                from None
    return out


def is_generator_spec(spec) -> bool:
    return isinstance(spec, str) and spec.split(":", 1)[0] in GENERATORS


def _generate(spec: str, seed: int) -> Dataset:
    head, _, rest = spec.partition(":")
    if head == "synthetic":
        if rest:
            raise DataError(f"dataset spec {spec!r}: 'synthetic' takes no options; use "
                            "'planted:key=value,...'")
        return S.synthetic_dataset(seed=seed)
    if head == "planted":
        opts = _options(spec, rest, _PLANTED_KEYS)
        if "labels" in opts:
            opts["num_labels"] = opts.pop("labels")
        opts.setdefault("seed", seed)
        return S.planted_dataset(**{**S.SYNTHETIC_DEFAULTS, **opts}, spec=spec)
    parts = rest.split(":", 2)
    sizes = [_digits(p) for p in parts[:2]]
    if len(parts) < 2 or None in sizes:
        raise DataError(f"dataset spec {spec!r}: expected kronecker:SCALE:EDGE_FACTOR"
                        "[:key=value,...], e.g. kronecker:17:8")
    opts = _options(spec, parts[2] if len(parts) == 3 else "", _KRON_KEYS)
    if "labels" in opts:
        opts["num_labels"] = opts.pop("labels")
    opts.setdefault("seed", seed)
    return S.kronecker_dataset(*sizes, **opts, spec=spec)


def _digits(text: str) -> int | None:
    """A non-negative decimal integer written with ASCII digits, else None."""
    text = text.strip()
    return int(text) if text.isascii() and text.isdigit() else None


def detect_format(path) -> str:
    """'graphsaint' | 'ogb' | 'npz' | 'mat' | 'csv' for a file or folder; DataError otherwise."""
    p = Path(path)
    if not p.exists():
        raise DataError(f"{p}: no such file or folder (and not a generator spec: "
                        f"{', '.join(GENERATORS)})")
    if p.is_file():
        suffix = p.suffix.lower()
        if suffix == ".gz":  # a gzip'd edge list: the format is in the inner suffix
            suffix = Path(p.stem).suffix.lower() if Path(p.stem).suffix.lower() in (
                ".csv", ".tsv", ".edges", ".txt", ".ungraph", ".edgelist") else ".gz"
        if suffix == ".npz":
            return "npz"
        if suffix == ".mat":
            return "mat"
        if suffix in (".csv", ".tsv", ".edges", ".txt", ".ungraph", ".edgelist"):
            return "csv"
        raise DataError(f"{p}: unknown dataset file type {suffix!r} (expected .npz, .mat, "
                        ".csv, an edge list .txt/.edges, a dataset spec .yml or a folder)")
    if any((p / f).is_file() for f in ("adj_full.npz", "adj_train.npz", "role.json",
                                        "class_map.json")):
        return "graphsaint"  # so an incomplete folder reports its missing file
    if find_ogb_root(p) is not None:
        return "ogb"
    singles = [f for f in sorted(p.iterdir()) if f.suffix.lower() in (".npz", ".mat")]
    if len(singles) == 1:
        return singles[0].suffix.lower()[1:]
    if edge_files(p):
        return "csv"
    raise DataError(f"{p}: unknown dataset folder (expected GraphSAINT adj_full.npz, OGB "
                    "raw/edge.csv.gz, one .npz/.mat file, or an *edges*.csv)")


def load_dataset(spec="synthetic", *, split: int | None = None, seed: int = 0,
                 mmap: bool = False, options: dict | None = None) -> Dataset:
    """Load a dataset from a path or build one from a generator spec.

    Spec grammar (a string starting with a generator name is a generator spec; to load a
    folder literally named like a generator, write ``./synthetic``)::

        synthetic                                the built-in planted-partition dataset
                                                 (12,000 nodes, degree 12, 32 features, 8 classes)
        planted[:key=value,...]                  keys: nodes, classes, features, degree, p_in,
                                                 noise, multilabel (0/1), labels, seed
        kronecker:SCALE:EDGE_FACTOR[:key=value,...]
                                                 2^SCALE nodes, EDGE_FACTOR*2^SCALE edge draws;
                                                 keys: a, b, c, features (50), labels (121),
                                                 classes (single-label instead), seed
        PATH                                     a file or folder; format from its contents:
          folder with adj_full.npz               GraphSAINT   (scalegnn.data.graphsaint)
          folder with raw/edge.csv.gz            OGB          (scalegnn.data.ogb)
          *.npz (or folder with one)             gnn-benchmark / heterophilous (scalegnn.data.npz)
          *.mat (or folder with one)             network/group MATLAB (scalegnn.data.mat)
          *edges*.csv (or folder with one)       edge-list CSV (scalegnn.data.csv)
          *.txt, *.edges, *.ungraph[.txt]        plain edge list, whitespace separated, # or %
                                                 comments (scalegnn.data.csv)
          any edge list + .gz                    gzip'd, inflated while it is parsed
          *.yml / *.yaml                         a dataset spec: ``path`` plus loader options
                                                 (scalegnn.data.options)

    ``options`` are the choices a file leaves open (column and variable names, the features of
    a featureless graph): see :mod:`scalegnn.data.options`; a key the format does not read is
    refused. ``split`` picks one of several given splits (heterophilous masks; None: split 0,
    and with several ``meta["split_note"]`` says so for the CLI to print); ``seed`` drives the
    generators and every seeded split (50/25/25 unless the format has a split); ``mmap``
    memory-maps float32 GraphSAINT features. Errors are one-line :class:`DataError`, also for
    an unreadable file (the OSError's file and reason) and for running out of memory.
    """
    if isinstance(spec, Dataset):
        return spec
    options = O.check_options(options)
    try:
        if O.is_spec_file(spec):
            spec, from_file = O.read_spec_file(spec)
            options = {**from_file, **options}  # the command line wins
        if is_generator_spec(spec):
            O.check_for_format(options, "generated", spec)
            _check_split(split, spec, False)
            ds = _generate(spec, seed)
        else:
            ds = _load_path(spec, split=split, seed=seed, mmap=mmap, options=options)
        source = options.get("features_source")
        if source is not None and ds.meta.get("features_source") != source:
            ds = O.apply_features_source(ds, source, seed)
        return ds
    except MemoryError:
        raise DataError(f"{spec}: not enough memory to load or build this dataset") from None
    except OSError as e:
        where = os.fsdecode(e.filename) if isinstance(e.filename, (str, bytes)) else spec
        raise DataError(f"{where}: {e.strerror or e}") from None


def _check_split(split, spec, several: bool) -> None:
    """Refuse a split other than 0 for data without several given splits (it would be
    ignored)."""
    if split not in (None, 0) and not several:
        raise DataError(f"{spec}: --split {split}: this dataset has one split, so there is none "
                        f"to choose (--split picks one of several given splits, as a "
                        f"heterophilous .npz has)")


def _load_path(spec, *, split: int | None, seed: int, mmap: bool, options: dict) -> Dataset:
    """Detect the format of a file or folder and run its loader."""
    fmt = detect_format(spec)
    check_for_format(options, fmt, spec)
    p = Path(spec)
    if fmt == "npz" and p.is_dir():
        p = next(f for f in sorted(p.iterdir()) if f.suffix.lower() == ".npz")
    _check_split(split, spec, fmt == "npz" and npz_layout(p) == "heterophilous")
    if fmt == "graphsaint":
        return load_graphsaint(p, mmap=mmap)
    if fmt == "ogb":
        return load_ogb(p, seed=seed)
    if fmt in ("npz", "mat") and p.is_dir():
        p = next(f for f in sorted(p.iterdir()) if f.suffix.lower() == f".{fmt}")
    if fmt == "npz":
        return load_npz(p, split=split, seed=seed)
    if fmt == "mat":
        return load_mat(p, seed=seed, options=options)
    return load_csv(p, seed=seed, options=options)
