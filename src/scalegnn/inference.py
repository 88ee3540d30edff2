"""Inference from a run directory: the trained model of a ``scalegnn train`` run, its config and
its data, and the class scores / embeddings it gives any set of nodes.

>>> run = load_run("runs/cora")                       # best.pt, config.yml, run.json
>>> p = run.scores(run.select(split="test"))          # (1000, 7) float32 probabilities
>>> z = run.embeddings()                              # every node: the classifier's input

The numbers are the evaluation's own: the mode's ``scores`` / ``embeddings`` (GraphSAINT: the
layer-wise full-graph pass of :mod:`scalegnn.engine.evaluate`, memory bounded by
``params.eval_batch_rows``; shaDow-GNN: per-target subgraphs, ``shadow.eval_batch_size`` targets
at a time, the fixed inference extraction seed). So ``compute_metrics`` of the test rows equals
the run's ``summary.json`` test metrics, and a node's row does not depend on the other nodes
asked for (shaDow: up to float rounding of differently sized batches).

``data``: another graph with the run's feature width (inductive use). Its features go through
the run's preprocessing: ``params.standardize`` applies the statistics of the run's own training
nodes (so the run's recorded data is loaded too), as GraphSAINT treats unseen nodes; its
labels, if any, are not used. ``data`` with the run's dataset fingerprint (its graph moved or
copied) is the run's own data. A different feature width, or the run's own data changed on disk
(fingerprint), is refused in one line.

Files (:func:`write_scores`, :func:`write_embeddings`; the type from the extension), one row per
selected node in selection order (``--nodes`` file order, a split's order, or node id order):

* ``.npy``: the float32 matrix only: scores (n, C) (softmax probabilities, or per-class sigmoid
  probabilities for multi-label tasks), or embeddings (n, d).
* ``.csv``: header ``node,label,score_0..score_{C-1}`` (label = arg-max); multi-label
  ``node,label_0..label_{C-1},score_0..`` (label_j = 1 where score_j > 0.5, the metrics'
  threshold); embeddings ``node,emb_0..emb_{d-1}``. Scores are written with 9 significant
  digits, so float32 values read back exactly.
* ``.parquet``: the same columns (node int64, labels int64/int8, scores float32); needs pyarrow.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from scalegnn.config import Config
from scalegnn.data import load_dataset
from scalegnn.data.options import check_options
from scalegnn.data.transforms import prepared_dataset, standardized_like
from scalegnn.engine import checkpoint as ckpt
from scalegnn.engine.metrics import compute_metrics
from scalegnn.engine.rundir import read_run_info
from scalegnn.errors import ConfigError, DataError
from scalegnn.io import atomic_open, atomic_save_npy, read_json_object, same_path
from scalegnn.train.build import build_run_model, resolve_device
from scalegnn.train.modes import mode_for

OUTPUT_TYPES = (".npy", ".csv", ".parquet")
SPLITS = ("train", "val", "test")
_CSV_ROWS = 1 << 16  # rows formatted at a time


@dataclass
class TrainedRun:
    """A run's best model, ready for inference on its own data or on ``data`` of the same
    feature width. ``dataset`` is as the run's mode prepared it (standardized)."""

    path: Path
    config: object
    info: dict
    data: str
    split: int
    data_options: dict | None
    mode: object
    model: object
    best_epoch: int
    new_data: bool = False
    summary: dict | None = field(default=None, repr=False)

    @property
    def dataset(self):
        return self.mode.dataset

    @property
    def multilabel(self) -> bool:
        return bool(self.mode.multilabel)

    @property
    def num_classes(self) -> int:
        return int(self.mode.num_classes)

    def select(self, nodes=None, split: str | None = None) -> np.ndarray:
        """Node ids (int64) to infer: ``split`` (train / val / test of the data), ``nodes``
        (ids, a file of ids: see :func:`read_nodes`), or every node in id order."""
        n = self.dataset.num_nodes
        if split is not None:
            if split not in SPLITS:
                raise ConfigError(f"--split: {split!r} is not one of {list(SPLITS)}")
            return np.asarray(getattr(self.dataset, f"{split}_idx"), dtype=np.int64)
        if nodes is None:
            return np.arange(n, dtype=np.int64)
        if isinstance(nodes, (str, Path)):
            return read_nodes(nodes, n, self.dataset.name)
        idx = np.asarray(nodes)
        if idx.ndim != 1 or idx.size == 0 or not np.issubdtype(idx.dtype, np.integer):
            raise DataError(f"nodes: expected a non-empty 1-D array of integer node ids, got "
                            f"shape {idx.shape}, dtype {idx.dtype}")
        _check_range(idx, n, "nodes", self.dataset.name)
        return idx.astype(np.int64)

    def scores(self, nodes=None) -> np.ndarray:
        """(n, C) float32 class probabilities of ``nodes`` (default: every node)."""
        import torch  # noqa: PLC0415
        idx = self.select(nodes)
        with torch.no_grad():
            return self.mode.scores(self.model, idx).numpy().astype(np.float32, copy=False)

    def embeddings(self, nodes=None) -> np.ndarray:
        """(n, d) float32 classifier inputs of ``nodes`` (GraphSAINT and the zoo models: the
        L2-normalized last layer; shaDow-GNN: the readout / ensemble of each target)."""
        import torch  # noqa: PLC0415
        idx = self.select(nodes)
        with torch.no_grad():
            return self.mode.embeddings(self.model, idx).numpy().astype(np.float32, copy=False)

    def metrics(self, nodes, scores) -> dict:
        """The evaluation's metrics of ``scores`` against the data's labels of ``nodes``."""
        return compute_metrics(self.dataset.labels[nodes], scores, self.dataset.multilabel)


def load_run(run_dir, data=None, *, device="cpu", options=None, model=None) -> TrainedRun:
    """The best model of the run in ``run_dir`` (its ``best.pt``, loaded with
    ``weights_only``), with the run's config and dataset spec; the dataset is loaded again from
    ``run.json``'s record (``data``, ``split``, ``data_options``) or from ``data`` (a path or
    generator spec of the same feature width). ``options`` (the loader options of
    :mod:`scalegnn.data.options`, as ``train`` takes them) load ``data``; given for the run's
    own data, they replace the recorded ones they name (a different choice makes it new data).
    GraphSAINT and shaDow-GNN node classification runs; anything else is refused in one
    line. ``model``: the module a run trained from Python (``Trainer(model=...)``, recorded as
    ``python_model``) was given, built again by the caller; such a run needs it."""

    path = Path(run_dir)
    if not path.is_dir():
        raise ConfigError(f"{path}: no such run directory")
    for name in ("config.yml", "run.json"):
        if not (path / name).is_file():
            raise ConfigError(f"{path}: no {name} (not a run directory)")
    best = path / "best.pt"
    if not best.is_file():
        raise ConfigError(f"{best}: missing (the run ended before its first validation pass)")
    info = read_run_info(path / "run.json")
    if info.get("python_model") and model is None:
        raise ConfigError(f"{path}: its model ({info['python_model']}) was passed to Trainer "
                          f"from Python; load it with scalegnn.load_run(RUN, model=...) and the "
                          f"same module")
    kind = info.get("mode")
    if kind == "distributed":
        raise ConfigError(f"{path}: a dist-train run in full-graph mode (its model computes on "
                          f"the plan's ranks); predict and embed serve GraphSAINT and shaDow-GNN "
                          f"runs, also data- or partition-parallel ones")
    parallel = kind in ("data-parallel", "partition-parallel")  # the single-process model
    if (info.get("inner_mode") if parallel else kind) == "link":
        raise ConfigError(f"{path}: a link-prediction run (shadow.task: link); predict and "
                          f"embed serve node classification runs")
    config = Config.from_yaml(path / "config.yml")
    dev = resolve_device(device)
    state = ckpt.load_checkpoint(best)
    trained = (state.get("identity") or {}).get("dataset") or {}
    recorded = info.get("data", info.get("source"))
    moved = data is not None and not same_path(str(data), recorded)
    spec = str(data) if moved else recorded
    if spec is None:
        raise ConfigError(f"{path / 'run.json'}: records no data; give --data")
    was = info.get("data_options") or {}
    given = check_options(options, "data options")
    options = (given if moved else {**was, **given}) or None
    new = moved or (options or {}) != was  # the run's own data with other choices: other data
    kw = {"options": options} if options else {}
    try:
        dataset = load_dataset(spec, split=int(info.get("split") or 0), seed=0, **kw)
    except DataError as e:
        if new:
            raise
        raise DataError(f"{e} (the data recorded in {path / 'run.json'}; give --data to point "
                        f"at it)") from None
    if new and ckpt.dataset_fingerprint(dataset) == trained:
        new = False  # the run's own graph under another name or place (moved, copied)
    if new and dataset.num_features != trained.get("features"):
        raise DataError(f"{spec}: {dataset.num_features} features per node, the run in {path} "
                        f"was trained on {trained.get('features')} ({trained.get('name')!r}); "
                        f"predict needs the same feature width")
    if new and config.params["standardize"]:
        dataset = _scaled_like_run(dataset, recorded, config, info, path)
    mode = mode_for(dataset, config, seed=int(info.get("seed") or 0))
    if new:  # the run's task, not the new labels' (which may be absent or differ)
        mode.num_classes = int(trained.get("classes", mode.num_classes))
        loss = config.network.get("loss")
        mode.multilabel = (loss == "sigmoid") if loss else mode.multilabel
    else:
        mine = mode.identity().get("dataset")
        if mine != trained:
            raise DataError(f"{spec}: not the data the run in {path} was trained on (now "
                            f"{ckpt._short(mine)}, then {ckpt._short(trained)}); pass --data to "
                            f"use it as new data")
        if parallel:   # trained by several ranks: the same model as one process's
            theirs = (state.get("identity") or {}).get("inner", "graphsaint")
            if theirs != mode.name:
                raise ConfigError(f"{best}: checkpoint is for a {theirs} model, the config "
                                  f"builds a {mode.name} one")
        else:
            ckpt.check_identity(state, mode.identity(), best)
    model = build_run_model(mode, config, model)
    model.to(device=dev, dtype=mode.dtype)
    ckpt.load_model_state(model, state["model"], best)
    model.eval()
    summary = None
    if (path / "summary.json").is_file():
        summary = read_json_object(path / "summary.json")
    return TrainedRun(path=path, config=config, info=info, data=spec,
                      split=int(info.get("split") or 0), data_options=options, mode=mode,
                      model=model, best_epoch=int(state.get("epoch", 0)), new_data=new,
                      summary=summary)


# ---------------------------------------------------------------------------- node ids
def read_nodes(path, num_nodes: int, name: str = "data") -> np.ndarray:
    """Node ids from ``path``: a ``.npy`` integer vector, or text (ids separated by white space
    or commas; ``#`` starts a comment). One-line DataError for anything else or an id outside
    ``[0, num_nodes)``."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: node id file not found")
    if path.suffix.lower() == ".npy":
        try:
            idx = np.load(path, allow_pickle=False)
        except (ValueError, OSError, EOFError) as e:
            raise DataError(f"{path}: not a readable .npy array ({str(e).splitlines()[0]})") \
                from None
        if idx.ndim == 2 and 1 in idx.shape:
            idx = idx.reshape(-1)
        if idx.ndim != 1 or not np.issubdtype(idx.dtype, np.integer):
            raise DataError(f"{path}: expected a 1-D integer array of node ids, got shape "
                            f"{idx.shape}, dtype {idx.dtype}")
    else:
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise DataError(f"{path}: not UTF-8 text (expected node ids, one per line)") \
                from None
        ids = []
        for number, line in enumerate(text.splitlines(), start=1):
            for token in line.split("#", 1)[0].replace(",", " ").split():
                try:
                    ids.append(int(token))
                except ValueError:
                    raise DataError(f"{path}: line {number}: {token[:40]!r} is not a node id "
                                    f"(an integer)") from None
        idx = np.asarray(ids, dtype=np.int64)
    if idx.size == 0:
        raise DataError(f"{path}: no node ids")
    _check_range(idx, num_nodes, str(path), name)
    return idx.astype(np.int64)


def _check_range(idx: np.ndarray, n: int, where: str, name: str) -> None:
    bad = idx[(idx < 0) | (idx >= n)]
    if bad.size:
        raise DataError(f"{where}: node id {int(bad[0])} is out of range [0, {n}) of "
                        f"{name!r} ({bad.size} such ids)")


# ---------------------------------------------------------------------------- files
def check_output(path) -> Path:
    """Refuse an output path whose type or folder is wrong before any work is done."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in OUTPUT_TYPES:
        raise ConfigError(f"--out {path}: unknown file type {suffix or '(none)'!r}; expected "
                          f"{', '.join(OUTPUT_TYPES)}")
    if not path.parent.is_dir():
        raise ConfigError(f"--out {path}: folder {path.parent} does not exist")
    if path.is_dir():
        raise ConfigError(f"--out {path}: is a folder")
    if not os.access(path.parent, os.W_OK | os.X_OK):  # read-only, or not ours: say so now
        raise ConfigError(f"--out {path}: cannot write into {path.parent} (read-only or no "
                          f"permission)")
    if suffix == ".parquet":
        try:
            import pyarrow  # noqa: F401, PLC0415
        except ImportError:
            raise ConfigError(f"--out {path}: writing .parquet needs the pyarrow package "
                              f"(pip install pyarrow); or write .csv / .npy") from None
    return path


def write_scores(path, nodes: np.ndarray, scores: np.ndarray, multilabel: bool) -> Path:
    """Class scores of ``nodes`` to ``path`` (schema in the module docstring), atomically."""
    scores = np.asarray(scores, dtype=np.float32)
    c = scores.shape[1]
    if multilabel:
        labels = [(f"label_{j}", (scores[:, j] > 0.5).astype(np.int8)) for j in range(c)]
    else:
        labels = [("label", scores.argmax(1).astype(np.int64))]
    cols = [("node", np.asarray(nodes, dtype=np.int64)), *labels,
            *[(f"score_{j}", scores[:, j]) for j in range(c)]]
    return _write(path, scores, cols)


def write_embeddings(path, nodes: np.ndarray, emb: np.ndarray) -> Path:
    """Embeddings of ``nodes`` to ``path`` (schema in the module docstring), atomically."""
    emb = np.asarray(emb, dtype=np.float32)
    cols = [("node", np.asarray(nodes, dtype=np.int64)),
            *[(f"emb_{j}", emb[:, j]) for j in range(emb.shape[1])]]
    return _write(path, emb, cols)


def _write(path, matrix: np.ndarray, cols: list) -> Path:
    path = check_output(path)
    suffix = path.suffix.lower()
    if suffix == ".npy":
        atomic_save_npy(path, matrix)
    elif suffix == ".csv":
        fmt = ["%d" if np.issubdtype(a.dtype, np.integer) else "%.9g" for _, a in cols]
        with atomic_open(path, "w") as f:
            f.write(",".join(name for name, _ in cols) + "\n")
            for s in range(0, matrix.shape[0], _CSV_ROWS):
                block = np.column_stack([a[s:s + _CSV_ROWS].astype(np.float64) for _, a in cols])
                np.savetxt(f, block, fmt=fmt, delimiter=",")
    else:
        import pyarrow as pa  # noqa: PLC0415
        import pyarrow.parquet as pq  # noqa: PLC0415
        table = pa.table({name: a for name, a in cols})
        with atomic_open(path, "wb") as f:
            pq.write_table(table, f)
    return path


# ---------------------------------------------------------------------------- helpers
def _scaled_like_run(dataset, recorded, config, info: dict, path: Path):
    """``dataset`` prepared as the run's own data was: its feature layout and, with
    ``params.standardize``, the statistics of the run's training nodes, not the new graph's
    (the preparation of ``--test-data``, :mod:`scalegnn.train.transfer`)."""

    options = info.get("data_options") or None
    try:
        ref = load_dataset(recorded, split=int(info.get("split") or 0), seed=0,
                           **({"options": options} if options else {}))
    except DataError as e:
        raise DataError(f"{path}: the run's data is needed for its feature statistics "
                        f"(params.standardize) and does not load: {e}") from None
    prepared = prepared_dataset(ref, config)
    features = standardized_like(dataset.features, ref, prepared)
    return dataclasses.replace(dataset, features=features,
                               meta={**dataset.meta, "standardized": True})
