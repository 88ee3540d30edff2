"""Loader options: the choices a file leaves open, as one dict, and the YAML dataset spec.

A file as published sometimes cannot say everything a loader needs (which CSV column holds the
node ids, which MATLAB variable is the adjacency, what to use as features when there are none).
Those choices travel as one ``options`` dict from the CLI flags or a dataset spec file to
:func:`scalegnn.data.load_dataset`; every loader reads only its own keys, and a key the chosen
format does not use is refused (a typo must not be ignored silently).

* ``id_column`` (``--id-column``): labels CSV, the column of node ids (MUSAE twitch ``new_id``).
* ``label_column`` (``--label-column``): labels CSV, the column of classes (twitch ``mature``);
  ``.mat``, the 0-based column of the label matrix that becomes a single-label task.
* ``adjacency`` (``--adjacency``): ``.mat``, the adjacency variable (Facebook100 ``A``).
* ``features`` (``--features``): ``.mat``, the feature variable (``Attributes``); edge list or
  CSV folder, the features file (``.npy`` N x F, or ``.json`` active feature ids per node).
* ``labels`` (``--labels``): ``.mat``, the label variable (``Label``, HARP ``F``), or
  ``VAR:K`` for column K of a label matrix (``local_info:1``); edge list or CSV folder, the
  labels file (a CSV with a header, ``node label`` lines, or a SNAP ``.cmty`` community file).
* ``features_source`` (``--features-source``): ``structural`` | ``onehot`` | ``FILE.npy``, the
  node features used instead of the file's own (default: the file's own; structural ones,
  said aloud, when it has none). ``onehot`` is an identity matrix kept as CSR, refused above
  :data:`ONEHOT_MAX_NODES` nodes.

A **dataset spec** is a small YAML file (read with ``yaml.safe_load``) given in place of a path::

    path: twitch/ENGB          # the file or folder; relative paths are relative to this file
    id_column: new_id
    label_column: mature

Options given on the command line override the spec file's.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import scipy.sparse as sp
import yaml

from scalegnn.data import _common as C
from scalegnn.data.structural import DEFAULT_K, structural_features
from scalegnn.errors import DataError
from scalegnn.features import SparseFeatures

# key -> (CLI flag, formats that read it); "*" = every format and generator
OPTION_KEYS = {
    "id_column": ("--id-column", ("csv",)),
    "label_column": ("--label-column", ("csv", "mat")),
    "adjacency": ("--adjacency", ("mat",)),
    "features": ("--features", ("mat", "csv")),
    "labels": ("--labels", ("mat", "csv")),
    "features_source": ("--features-source", ("*",)),
}
SPEC_SUFFIXES = (".yml", ".yaml")
ONEHOT_MAX_NODES = 16384  # one first-layer weight row per node: ids beyond this overfit/bloat
FEATURE_KEYWORDS = ("structural", "onehot")


def flag(key: str) -> str:
    """How the user wrote option ``key``: ``--id-column (id_column)``."""
    return f"{OPTION_KEYS[key][0]} ({key})" if key in OPTION_KEYS else key


def listing(names, limit: int = 120) -> str:
    """``a, b, c`` for an error line: names cut at 40 characters, the list elided past ``limit``
    characters with its count (``0, 1, 2, ... (13,338 in all)``), so the line stays short."""
    names = [n if len(n) <= 40 else n[:37] + "..." for n in map(str, names)]
    text = ", ".join(names)
    if len(text) <= limit:
        return text or "none"
    shown, size = [], 0
    for n in names:
        if size + len(n) + 2 > limit - 20:
            break
        shown.append(n)
        size += len(n) + 2
    return f"{', '.join(shown)}, ... ({len(names):,} in all)"


def check_options(options, where: str = "dataset options") -> dict:
    """A clean copy of ``options``: known keys, non-empty string values (ints allowed for
    ``label_column``), None values dropped. DataError naming the key otherwise."""
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise DataError(f"{where}: expected a mapping of option: value, got "
                        f"{type(options).__name__}")
    out = {}
    for key, value in options.items():
        if key not in OPTION_KEYS:
            raise DataError(f"{where}: unknown option {key!r:.60}; allowed: "
                            f"{', '.join(OPTION_KEYS)}")
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (str, int, Path)) or \
                (isinstance(value, int) and key != "label_column"):
            raise DataError(f"{where}: option {flag(key)} must be a name, got {value!r:.60}")
        value = str(value).strip()
        if not value:
            raise DataError(f"{where}: option {flag(key)} is empty")
        out[key] = value
    return out


def check_for_format(options: dict, fmt: str, source) -> None:
    """Refuse an option that format ``fmt`` does not read (one line naming the option)."""
    for key in options:
        formats = OPTION_KEYS[key][1]
        if "*" not in formats and fmt not in formats:
            raise DataError(f"{source}: option {flag(key)} does not apply to {fmt} datasets "
                            f"(it is read by: {', '.join(formats)} datasets)")


def check_class_column(labels, where, column: str) -> None:
    """Refuse a class column that is really an identifier or a measurement: as many classes as
    labelled nodes, or (from 10 nodes on) more classes than half the nodes, where most classes
    would hold a single node and nothing could be learnt or tested."""
    rows = int(labels.shape[0])
    k = int(np.unique(labels).size)
    if (k == rows > 1) or (rows >= 10 and 2 * k > rows):
        raise DataError(f"{where}: {column} has {k:,} distinct values for {rows:,} labelled "
                        f"nodes ({'every node its own class' if k == rows else 'most classes would hold one node'}), "
                        f"so it is not a class label; choose the class column with "
                        f"{flag('label_column')}")


def is_spec_file(spec) -> bool:
    return isinstance(spec, (str, Path)) and Path(spec).suffix.lower() in SPEC_SUFFIXES


def read_spec_file(path) -> tuple[str, dict]:
    """(dataset path, options) of a YAML dataset spec; relative paths (``path``, a
    ``features_source`` file, a ``labels`` file that exists) resolve against its folder."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: missing dataset spec file")
    try:
        obj = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        raise DataError(f"{path}: not a valid YAML dataset spec "
                        f"({str(e).splitlines()[0] if str(e) else type(e).__name__})") from None
    if not isinstance(obj, dict) or "path" not in obj:
        raise DataError(f"{path}: a dataset spec is a mapping with a 'path' key and options "
                        f"({', '.join(OPTION_KEYS)})")
    data = obj.pop("path")
    if not isinstance(data, str) or not data.strip():
        raise DataError(f"{path}: 'path' must name a dataset file or folder")
    options = check_options(obj, str(path))
    here = path.parent

    def rel(p: str) -> str:
        return p if Path(p).is_absolute() else str(here / p)

    src = options.get("features_source")
    if src is not None and src not in FEATURE_KEYWORDS:
        options["features_source"] = rel(src)
    for key in ("labels", "features"):  # a file beside the spec (not a .mat variable name)
        if key in options and (here / options[key]).is_file():
            options[key] = rel(options[key])
    if is_spec_file(data):
        raise DataError(f"{path}: 'path' names another dataset spec; point it at the data")
    return rel(data), options


def source_features(graph, source: str, seed: int, where) -> tuple[np.ndarray, str]:
    """(features, note) for ``features_source``: structural | onehot | a .npy file."""
    n = graph.num_nodes
    if source == "structural":
        return (structural_features(graph, seed=seed),
                f"structural ({1 + 2 * DEFAULT_K} columns: log-degree and 1-/2-hop random "
                f"projections, seed {seed})")
    if source == "onehot":
        if n > ONEHOT_MAX_NODES:
            raise DataError(f"{where}: --features-source onehot gives the first layer one "
                            f"weight row per node; {n:,} nodes is above the limit of "
                            f"{ONEHOT_MAX_NODES:,} (use structural or a feature file)")
        return (SparseFeatures(sp.identity(n, dtype=np.float32, format="csr")),
                f"onehot ({n} columns: one per node id, stored as CSR)")
    p = Path(source)
    if p.suffix.lower() != ".npy":
        raise DataError(f"{where}: --features-source {source!r}: expected structural, onehot "
                        f"or a .npy feature file (N x F)")
    return C.load_features(p, n), f"from {p}"


def featureless_features(graph, seed: int, options: dict, where) -> tuple[np.ndarray, dict]:
    """Features of a graph whose file has none: ``features_source`` when chosen, else
    structural ones, marked ``featureless`` so ``data info`` and the training log say so."""
    source = options.get("features_source")
    if source is not None:
        x, note = source_features(graph, source, seed, where)
        return x, {"features": note, "features_source": source}
    x, note = source_features(graph, "structural", seed, where)
    return x, {"features": note, "featureless": True}


def apply_features_source(ds, source: str, seed: int):
    """``ds`` with its features replaced as ``features_source`` asks (ds is modified)."""
    x, note = source_features(ds.graph, source, seed, ds.source or ds.name)
    ds.features = x
    ds.meta = {**ds.meta, "features": note, "features_source": source}
    ds.meta.pop("featureless", None)
    return ds
