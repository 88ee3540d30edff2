"""The run directory every training mode writes.

::

    config.yml       resolved configuration (after --set overrides and defaults)
    run.json         mode, data source, split, seed, threads, device, versions, command line
    metrics.jsonl    one JSON object per epoch (appended, flushed per line)
    best.pt          model state with the best validation metric
    last.pt          everything --resume needs (scalegnn.engine.checkpoint)
    summary.json     final validation/test metrics, timings
    report.png       loss, validation metrics, time split (when matplotlib is installed)
    report.html      the same plus tables of the summary, config, run facts and every epoch
    metrics.csv      params.loggers: csv (scalegnn.engine.loggers); tensorboard/ likewise
    .lock            held (flock) by the process writing the run

Rules: checkpoints and JSON files are written atomically (an interrupted run never leaves a
half-written one). A folder holding a run is not written again without ``resume`` (continue it)
or ``overwrite`` (delete its run files first); a folder with other files is not made a run
folder without ``overwrite``. One process at a time writes a run directory. ``metrics.jsonl``
may end in a torn line (SIGKILL mid-write; a failed append, a full disk, is cut off again):
readers skip lines that do not parse, and a resumed run rewrites the file with the records
before its checkpoint. A failed write (a full disk, a read-only folder) is one
:class:`~scalegnn.errors.WriteError` line naming the file; the files before it stay whole, so
the run resumes once there is room.
"""

from __future__ import annotations

import fcntl
import json
import os
import platform
import sys
import time
from pathlib import Path

import numba
import numpy as np
import torch

import scalegnn
from scalegnn.engine.checkpoint import load_checkpoint
from scalegnn.engine.loggers import open_loggers
from scalegnn.errors import ConfigError, DataError
from scalegnn.faults import crash_point
from scalegnn.io import append_text, atomic_open, atomic_write_text, read_json_object, write_error

RUN_FILES = ("config.yml", "run.json", "metrics.jsonl", "best.pt", "last.pt", "summary.json",
             "report.png", "report.html", "metrics.csv")
LOCK = ".lock"
LOCK_ENV = "SCALEGNN_RUN_LOCKED"  # set by a launcher that holds the lock for its workers
COMMAND_ENV = "SCALEGNN_COMMAND"  # set by launchers: the user's command line, \x1f-separated


# what the readers of run.json (resume, predict, embed, dist-train) take from it, and what each
# must be when present (None: not recorded): a damaged value is one line, not a TypeError later
RUN_INFO_TEXT = ("mode", "inner_mode", "data", "source", "test_data", "plan", "device_arg",
                 "features", "python_model")
RUN_INFO_INTS = {"split": 2**31 - 1, "seed": 2**32 - 1, "threads": 4096, "world_size": 2**31 - 1}


def holds_run(path) -> bool:
    path = Path(path)
    return path.is_dir() and any((path / f).exists() for f in RUN_FILES)


def check_output_folder(out, overwrite: bool, kind: str, owned, marker: str | None = None):
    """``--out`` of a command that writes a ``kind`` of folder (a plan, a comparison) may be
    written by the rules of ``train --out``: new, an empty folder, or, with ``overwrite``, a
    folder holding only a ``kind`` (every entry ``owned(name, path)``, ``marker`` among them
    when given). A run directory or a folder with other files is refused even with
    ``overwrite``: nothing is mixed into it, and replacing it would delete them."""
    out = Path(out)
    if not out.exists():
        return
    if not out.is_dir():
        raise ConfigError(f"--out {out}: exists and is not a folder")
    entries = sorted(p.name for p in out.iterdir())
    if not entries:
        return
    rule = (f"a {kind} is written only to a new or empty folder, or over a {kind} with "
            f"--overwrite; choose another folder")
    run = [name for name in RUN_FILES if name in entries]
    if run:
        raise ConfigError(f"--out {out}: holds a run directory ({run[0]}), not a {kind}; {rule}")
    other = [name for name in entries if not owned(name, out / name)]
    if other or (marker is not None and marker not in entries):
        name = (other or entries)[0]
        more = f" and {len(other) - 1} more" if len(other) > 1 else ""
        raise ConfigError(f"--out {out}: folder is not empty ({name[:60]!r}{more}) and holds "
                          f"no {kind}; {rule}")
    if not overwrite:
        raise ConfigError(f"--out {out}: already holds a {kind}; pass --overwrite to replace "
                          f"it, or choose a new folder")


def read_run_info(path, *, missing_ok: bool = False) -> dict:
    """The JSON object of a run's ``run.json`` with the values its readers use checked
    (:data:`RUN_INFO_TEXT` text, :data:`RUN_INFO_INTS` integers in range, ``data_options`` a
    mapping of option names to numbers or text); anything else is one DataError line naming
    the file and the key."""
    path = Path(path)
    info = read_json_object(path, missing_ok=missing_ok)

    def damaged(key, expected):
        value = repr(info[key])
        value = value if len(value) <= 40 else f"{value[:37]}..."
        return DataError(f"{path}: damaged ({key} is {value}, expected {expected})")

    for key in RUN_INFO_TEXT:
        if info.get(key) is not None and not isinstance(info[key], str):
            raise damaged(key, "text")
    for key, hi in RUN_INFO_INTS.items():
        v = info.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= hi):
            raise damaged(key, f"an integer in [0, {hi}]")
    options = info.get("data_options")
    if options is not None and not (isinstance(options, dict) and all(
            isinstance(v, (str, int, float)) and not isinstance(v, bool) or v is None
            for v in options.values())):
        raise damaged("data_options", "a mapping of option names to values")
    return info


def read_metrics_file(path) -> list[dict]:
    """Records of a metrics.jsonl, skipping lines that do not parse (a torn last line)."""
    return read_metrics_lines(path)[0]


def read_metrics_lines(path) -> tuple[list[dict], int]:
    """``(records, skipped)`` of a metrics.jsonl: the JSON objects of its lines, and how many
    non-empty lines were skipped because they are not one (torn or damaged)."""
    path = Path(path)
    if not path.is_file():
        return [], 0
    out, skipped = [], 0
    for line in path.read_bytes().decode("utf-8", errors="replace").splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError):
            rec = None
        if isinstance(rec, dict):
            out.append(rec)
        else:
            skipped += 1
    return out, skipped


class RunDir:
    """A run directory opened for writing (see the module docstring for the rules)."""

    def __init__(self, path, *, resume: bool = False, overwrite: bool = False, lock: bool = True,
                 loggers: str = "none"):
        self.path = Path(path)
        self._lock_fd = None   # the lock's descriptor (lock_fd): launchers pass it to ranks
        self.logger_spec, self.loggers = loggers, []  # opened by truncate_metrics
        flag = "--resume" if resume else "--out"
        if self.path.exists() and not self.path.is_dir():
            raise ConfigError(f"{flag} {self.path}: exists and is not a directory")
        if resume:
            if not (self.path / "config.yml").is_file():
                raise ConfigError(f"--resume {self.path}: no config.yml (not a run directory)")
        elif self.path.is_dir() and not overwrite:
            if holds_run(self.path):
                raise ConfigError(f"--out {self.path}: already holds a run; pass --resume "
                                  f"{self.path} to continue it, --overwrite to replace it, or "
                                  f"choose a new folder")
            others = [p.name for p in self.path.iterdir() if p.name != LOCK]
            if others:
                raise ConfigError(f"--out {self.path}: folder is not empty ({others[0]!r}, ...) "
                                  f"and holds no run; choose a new folder or pass --overwrite")
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as e:  # a read-only or full disk, a file on the way
            raise write_error(self.path, e) from None
        if lock and os.environ.get(LOCK_ENV) != str(self.path.resolve()):
            self.lock()
        if overwrite and not resume:
            for name in RUN_FILES:
                (self.path / name).unlink(missing_ok=True)
        if self._lock_fd is not None:  # temporaries of writes killed before their rename
            for tmp in self.path.glob(".*.tmp"):
                if any(tmp.name.startswith(f".{name}.") for name in RUN_FILES):
                    tmp.unlink(missing_ok=True)

    # -------------------------------------------------------------- lock
    def lock(self):
        """Take the run's lock (non-blocking); one line naming the holder when it is taken."""
        try:
            fd = os.open(self.path / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:  # a read-only or forbidden folder
            raise write_error(self.path / LOCK, e) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise ConfigError(f"{self.path}: another scalegnn process (pid {holder}) is writing "
                              f"this run directory") from None
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except OSError as e:  # a full disk
            os.close(fd)
            raise write_error(self.path / LOCK, e) from None
        self._lock_fd = fd

    @property
    def lock_fd(self) -> int | None:
        """The descriptor holding this run directory's lock (None: not locked); a launcher
        passes it to its ranks so the lock lasts until the last of them is gone."""
        return self._lock_fd

    def close(self):
        """Close the loggers; release the lock (the OS also releases it when the process ends,
        even on SIGKILL)."""
        for logger in self.loggers:
            logger.close()
        self.loggers = []
        if self._lock_fd is not None:
            try:
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            finally:
                os.close(self._lock_fd)
                self._lock_fd = None

    # -------------------------------------------------------------- files
    def file(self, name: str) -> Path:
        return self.path / name

    def write_text(self, name: str, text: str):
        atomic_write_text(self.file(name), text)

    def write_json(self, name: str, obj):
        self.write_text(name, json.dumps(obj, indent=2, sort_keys=True) + "\n")

    def append_metrics(self, record: dict):
        """One line per record; the file holds whole lines only, since every run first rewrites
        it with :meth:`truncate_metrics` (a torn line is never appended to)."""
        append_text(self.file("metrics.jsonl"), json.dumps(record, sort_keys=True) + "\n")
        for logger in self.loggers:
            logger.log(record)

    def read_metrics(self) -> list[dict]:
        return read_metrics_file(self.file("metrics.jsonl"))

    def truncate_metrics(self, epochs_done: int):
        """Keep the records of epochs 1..``epochs_done`` (a resumed run repeats the rest)."""
        keep = [r for r in self.read_metrics() if r.get("epoch", 0) <= epochs_done]
        self.write_text("metrics.jsonl", "".join(json.dumps(r, sort_keys=True) + "\n" for r in keep))
        for logger in self.loggers:  # every run starts here: (re)open them on the kept records
            logger.close()
        self.loggers = open_loggers(self.logger_spec, self.path, keep, epochs_done)

    def save(self, name: str, state: dict):
        with atomic_open(self.file(name), "wb") as f:
            torch.save(state, f)
            crash_point("save")  # tests: killed after the write, before the rename

    def load(self, name: str) -> dict:
        return load_checkpoint(self.file(name))


def command_line() -> list[str]:
    """The user's command: a launcher's (``SCALEGNN_COMMAND``) or this process's argv."""
    cmd = os.environ.get(COMMAND_ENV)
    return cmd.split("\x1f") if cmd else list(sys.argv)


def run_info(mode, seed: int, device, extra: dict) -> dict:
    """``run.json`` of a new run: mode, seed, threads, device, versions, host, command line,
    the mode's own fields and ``extra`` (the CLI's data spec, split, threads...)."""
    return {"mode": mode.name, "seed": seed, "torch_threads": torch.get_num_threads(),
            "device": str(device), "world_size": mode.world,
            "python": platform.python_version(), "torch": torch.__version__,
            "numpy": np.__version__, "numba": numba.__version__,
            "scalegnn": scalegnn.__version__, "host": platform.node(),
            "started": time.strftime("%Y-%m-%dT%H:%M:%S"), "argv": command_line(),
            "pid": os.getpid(), **mode.run_info(), **extra}
