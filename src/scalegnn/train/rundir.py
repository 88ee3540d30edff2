"""The run directory every training mode writes.

::

    config.yml       resolved configuration (after --set overrides and defaults)
    run.json         dataset, seed, threads, versions, command line
    metrics.jsonl    one JSON object per evaluated epoch (appended, flushed per line)
    best.pt          model state with the best validation metric
    last.pt          model + optimizer + RNG state + epoch, for --resume
    summary.json     final validation/test metrics, timings
    report.png       loss and validation curves (when matplotlib is installed)

Checkpoints and JSON files are written atomically, so an interrupted run never leaves a
half-written file behind.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from scalegnn.errors import ConfigError
from scalegnn.io import atomic_open, atomic_write_json, atomic_write_text


class RunDir:
    def __init__(self, path, *, resume: bool = False):
        self.path = Path(path)
        if self.path.exists() and not self.path.is_dir():
            raise ConfigError(f"--out {self.path}: exists and is not a directory")
        if resume and not (self.path / "last.pt").is_file():
            raise ConfigError(f"--resume {self.path}: no last.pt checkpoint to resume from")
        if not resume and (self.path / "metrics.jsonl").exists():
            raise ConfigError(f"--out {self.path}: already holds a run (metrics.jsonl); choose a new "
                              f"folder or pass --resume to continue it")
        self.path.mkdir(parents=True, exist_ok=True)

    def file(self, name: str) -> Path:
        return self.path / name

    def write_text(self, name: str, text: str):
        atomic_write_text(self.file(name), text)

    def write_json(self, name: str, obj):
        atomic_write_json(self.file(name), obj, indent=2)

    def append_metrics(self, record: dict):
        with open(self.file("metrics.jsonl"), "a", encoding="utf-8") as f:
            f.write(json.dumps(record, sort_keys=True) + "\n")
            f.flush()

    def read_metrics(self) -> list[dict]:
        p = self.file("metrics.jsonl")
        if not p.exists():
            return []
        return [json.loads(line) for line in p.read_text().splitlines() if line.strip()]

    def truncate_metrics(self, last_epoch: int):
        """Drop records after ``last_epoch`` (a resumed run repeats the epochs after last.pt)."""
        keep = [r for r in self.read_metrics() if r.get("epoch", 0) <= last_epoch]
        self.write_text("metrics.jsonl", "".join(json.dumps(r, sort_keys=True) + "\n" for r in keep))

    def save(self, name: str, state: dict):
        with atomic_open(self.file(name), "wb") as f:
            torch.save(state, f)

    def load(self, name: str) -> dict:
        p = self.file(name)
        if not p.is_file():
            raise ConfigError(f"{p}: checkpoint not found")
        return torch.load(p, map_location="cpu", weights_only=False)
