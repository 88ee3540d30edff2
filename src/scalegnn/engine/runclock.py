"""A run's clock and its time budget (``params.time_budget``), shared by every mode's loop.

Each epoch record gets the run's clock at the epoch's end: ``elapsed_s``, wall seconds since the
run's first epoch began (validation passes included), and ``train_elapsed_s``, the same without
the validation passes: the training time that ``params.time_budget`` counts and that
``scalegnn compare`` plots its curves against. A resumed run continues both from its last
record (the unfinished epoch's time before the crash is not counted).

The budget is checked after each epoch's training, before its validation pass: the epoch
during which it ran out is the last one, and it is validated (its validation metric counts for
the best epoch) whatever ``params.eval_every`` says. Every rank keeps its own clock, so a
distributed run takes rank 0's reading (one gather per epoch, only when a budget is set).
"""

from __future__ import annotations

import math
import time

import torch

FIELDS = ("elapsed_s", "train_elapsed_s")


class RunClock:
    """``budget``: training seconds (0: none); ``gather``: the mode's gather of a tensor from
    every rank (``Mode.gather``)."""

    def __init__(self, budget: float, gather):
        self.budget = float(budget)
        self.gather = gather
        self.at_epoch_end = dict.fromkeys(FIELDS, 0.0)
        self.spent = False  # the budget ran out (set by :meth:`out_of_time`)
        self._t0, self._start, self._eval = time.perf_counter(), dict(self.at_epoch_end), 0.0

    def restore(self, record: dict | None) -> None:
        """Continue from a resumed run's last epoch record (a damaged value reads as 0)."""
        record = record or {}
        self.at_epoch_end = {k: _seconds(record.get(k)) for k in FIELDS}

    def start(self) -> None:
        """The loop starts (again): time from here adds to the restored clock."""
        self._t0, self._start, self._eval = time.perf_counter(), dict(self.at_epoch_end), 0.0

    def add_eval(self, seconds: float) -> None:
        self._eval += seconds

    def trained(self) -> float:
        """Training seconds so far (validation passes left out)."""
        return self._start["train_elapsed_s"] + time.perf_counter() - self._t0 - self._eval

    def out_of_time(self, trained: float | None = None) -> bool:
        """Whether the budget is spent after ``trained`` seconds (default: now, or the restored
        clock before :meth:`start`); remembered in :attr:`spent`."""
        if self.budget <= 0:
            return False
        seconds = self.trained() if trained is None else trained
        seconds = float(self.gather(torch.tensor([seconds], dtype=torch.float64))[0, 0])
        self.spent = seconds >= self.budget
        return self.spent

    def epoch_end(self) -> dict:
        """The clock fields of the epoch that just ended (also kept in :attr:`at_epoch_end`)."""
        now = time.perf_counter() - self._t0
        self.at_epoch_end = {"elapsed_s": self._start["elapsed_s"] + now,
                             "train_elapsed_s": self._start["train_elapsed_s"] + now - self._eval}
        return dict(self.at_epoch_end)

    def reason(self, done: int) -> str:
        """``summary.json``'s ``stopped`` for a run the budget stopped after epoch ``done``."""
        return (f"time budget: stopped after epoch {done}, "
                f"{self.at_epoch_end['train_elapsed_s']:.1f} s of training "
                f"(params.time_budget {self.budget:g} s)")


def _seconds(value) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and \
        math.isfinite(value) and value >= 0
    return float(value) if ok else 0.0
