"""Optional per-epoch logs beside ``metrics.jsonl``: ``metrics.csv`` and TensorBoard events.

Chosen by the config key ``params.loggers``: ``none`` (default), ``csv``, ``tensorboard`` or
``csv+tensorboard``. The run directory (:class:`scalegnn.engine.rundir.RunDir`) feeds every
epoch record it appends to ``metrics.jsonl`` to these loggers too, so every mode gets them.

* ``csv``: ``metrics.csv``, one row per epoch, one column per flattened field
  (:func:`flatten_record`: ``val_accuracy``, ``rank1_comm_s``, ...); rewritten atomically
  after every epoch from all records, so its columns are the union of every epoch's fields
  and a resumed run's file holds exactly the epochs of its ``metrics.jsonl``.
* ``tensorboard``: event files under ``tensorboard/`` (tags ``loss``, ``val/accuracy``,
  ``time/compute_s``, ``rank0/comm_s``...; step = epoch). Needs the ``tensorboard`` package;
  asking for it without the package is a one-line ConfigError when the config is read.
  A resumed run purges the events of the epochs it repeats (``purge_step``).
"""

from __future__ import annotations

import csv
import importlib.util
import io
import math
from pathlib import Path

from scalegnn.errors import ConfigError
from scalegnn.io import atomic_write_text

LOGGERS = ("csv", "tensorboard")
CSV_FILE = "metrics.csv"
TB_DIR = "tensorboard"
TIME_FIELDS = ("presample_s", "sample_s", "compute_s", "eval_s", "compile_s")


def parse_loggers(spec, *, check_installed: bool = True) -> tuple[str, ...]:
    """``'csv+tensorboard'`` -> ``('csv', 'tensorboard')``; ``'none'`` / ``''`` -> ``()``.

    ConfigError naming ``params.loggers`` for an unknown name, or for ``tensorboard`` when the
    package is not importable (``check_installed``)."""
    if not isinstance(spec, str):
        raise ConfigError(f"params.loggers: expected none, csv, tensorboard or "
                          f"csv+tensorboard, got {spec!r}")
    names = [s.strip().lower() for s in spec.replace(",", "+").split("+") if s.strip()]
    names = [n for n in names if n != "none"]
    for n in names:
        if n not in LOGGERS:
            raise ConfigError(f"params.loggers: {n!r} is not one of none, csv, tensorboard "
                              f"(join several with +, e.g. csv+tensorboard)")
    if check_installed and "tensorboard" in names and \
            importlib.util.find_spec("tensorboard") is None:
        raise ConfigError("params.loggers: tensorboard is not installed (pip install "
                          "tensorboard), or use params.loggers=csv")
    return tuple(dict.fromkeys(names))


def flatten_record(rec: dict, sep: str = "_") -> dict:
    """One epoch record as flat ``name -> number``: nested ``val`` metrics become
    ``val<sep>metric``, distributed ``ranks`` become ``rank<i><sep>field``; values that are not
    numbers are left out."""
    out = {}
    for key, value in rec.items():
        if key == "ranks" and isinstance(value, list):
            for i, rank in enumerate(value):
                if isinstance(rank, dict):
                    for k, v in rank.items():
                        _put(out, f"rank{i}{sep}{k}", v)
        elif isinstance(value, dict):
            for k, v in value.items():
                _put(out, f"{key}{sep}{k}", v)
        else:
            _put(out, key, value)
    return out


def _put(out: dict, key: str, value):
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        out[key] = value


class CSVLogger:
    """``metrics.csv`` of all records so far (see the module docstring)."""

    def __init__(self, run_path: Path, records: list[dict]):
        self.path = Path(run_path) / CSV_FILE
        self.records = [flatten_record(r) for r in records]
        self._write()

    def log(self, rec: dict):
        self.records.append(flatten_record(rec))
        self._write()

    def _write(self):
        first = ["epoch", "loss", "iterations"]
        seen = {}
        for r in self.records:
            seen.update(dict.fromkeys(r))
        cols = [c for c in first if c in seen] + sorted(c for c in seen if c not in first)
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(cols)
        for r in self.records:
            w.writerow(["" if r.get(c) is None else repr(r[c]) if isinstance(r[c], float)
                        else r[c] for c in cols])
        atomic_write_text(self.path, buf.getvalue())

    def close(self):
        pass


class TensorBoardLogger:
    """Scalars of every epoch record under ``tensorboard/`` (step = epoch)."""

    def __init__(self, run_path: Path, epochs_done: int):
        from torch.utils.tensorboard import SummaryWriter  # noqa: PLC0415 (optional package)
        folder = Path(run_path) / TB_DIR
        if epochs_done == 0 and folder.is_dir():  # a new run: the old run's events go
            for f in folder.glob("events.out.tfevents.*"):
                f.unlink(missing_ok=True)
        self.writer = SummaryWriter(log_dir=str(folder), purge_step=epochs_done + 1)

    def log(self, rec: dict):
        step = int(rec.get("epoch", 0))
        for key, value in flatten_record(rec, "/").items():
            if key == "epoch" or not math.isfinite(float(value)):
                continue
            tag = f"time/{key}" if key in TIME_FIELDS else key
            self.writer.add_scalar(tag, float(value), step)
        self.writer.flush()

    def close(self):
        self.writer.close()


def open_loggers(spec, run_path, records: list[dict], epochs_done: int) -> list:
    """The loggers ``spec`` names for the run in ``run_path``, holding its kept ``records``."""
    made = []
    for name in parse_loggers(spec):
        if name == "csv":
            made.append(CSVLogger(run_path, records))
        else:
            made.append(TensorBoardLogger(run_path, epochs_done))
    return made
