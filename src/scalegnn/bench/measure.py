"""The cost fields every ``scalegnn bench`` JSON line carries: wall and CPU seconds, and the
load average.

A :class:`Clock` is a context manager that adds the wall seconds (``time.perf_counter``) and
the process CPU seconds (``time.process_time``: every thread of the process, user + system)
of each block it times; one clock used around several blocks (the repeats of a measurement)
sums them. ``Clock(children=True)`` also counts the CPU time of child processes that ended
and were waited for inside the block (``getrusage(RUSAGE_CHILDREN)``), for a parent whose
work runs in child processes. :meth:`Clock.fields` gives a record's fields::

    wall_s, cpu_s                   seconds of the timed work
    <unit>s_timed                   units of work they cover (targets, subgraphs, iterations...)
    wall_per_<unit>, cpu_per_<unit> seconds per unit
    load_avg                        os.getloadavg() when the fields are made: [1, 5, 15 min]

CPU time counts the work the process did and hardly grows when other processes share the
cores, where wall time does; cpu / wall above 1 is the parallelism the work got. It misses
the time a thread sleeps (waiting on a lock, a serial section of another thread).
"""

from __future__ import annotations

import os
import resource
import time
from typing import Self


def load_avg() -> list[float]:
    """``os.getloadavg()`` as a list, rounded to 0.01."""
    return [round(v, 2) for v in os.getloadavg()]


def cpu_seconds(children: bool = False) -> float:
    """Process CPU seconds so far (with ``children``: plus those of waited-for children)."""
    t = time.process_time()
    if children:
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        t += ru.ru_utime + ru.ru_stime
    return t


class Clock:
    """Sums the wall and CPU seconds of the blocks it times (``with clock: ...``);
    ``last_wall_s`` / ``last_cpu_s`` are those of the latest block."""

    def __init__(self, children: bool = False):
        self.children = children
        self.wall_s = self.cpu_s = 0.0
        self.last_wall_s = self.last_cpu_s = 0.0

    def __enter__(self) -> Self:
        self._cpu0 = cpu_seconds(self.children)
        self._wall0 = time.perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        self.last_wall_s = time.perf_counter() - self._wall0
        self.last_cpu_s = cpu_seconds(self.children) - self._cpu0
        self.wall_s += self.last_wall_s
        self.cpu_s += self.last_cpu_s

    def fields(self, units: int | None = None, unit: str | None = None) -> dict:
        """The record fields of the module docstring (per-unit ones when ``unit`` is given)."""
        return cost_fields(self.wall_s, self.cpu_s, units, unit)


def cost_fields(wall_s: float, cpu_s: float, units: int | None = None,
                unit: str | None = None) -> dict:
    """``wall_s``, ``cpu_s``, with ``unit``: ``<unit>s_timed``, ``wall_per_<unit>``,
    ``cpu_per_<unit>``; then ``load_avg`` now."""
    out = {"wall_s": float(wall_s), "cpu_s": float(cpu_s)}
    if unit is not None:
        n = int(units or 0)
        out[f"{unit}s_timed"] = n
        out[f"wall_per_{unit}"] = wall_s / n if n else None
        out[f"cpu_per_{unit}"] = cpu_s / n if n else None
    out["load_avg"] = load_avg()
    return out
