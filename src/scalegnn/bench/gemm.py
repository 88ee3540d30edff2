"""The GEMM floor of training: a step's dense matrix products, recorded once and replayed alone.

A training step's products (``aten::mm``, ``aten::addmm``, ``aten::bmm``, forward and
backward) are recorded with torch.profiler. Their shapes depend on the batch only through its
row count ``n`` (the weights' shapes are fixed), so two recorded steps on batches of different
``n`` give a :class:`GemmTemplate`: each dimension is either a constant or ``n``. The template
replays the products of a batch of any ``n`` on operands of those shapes, back to back, with
nothing else in between: the time the step would take if everything but its GEMMs were free.

Operands come from one buffer per product, filled once with uniform values in [0, 1) (GEMM
speed does not depend on the values as long as none is denormal or NaN) and viewed at the
replayed shape, so a replay allocates only the products' outputs, as the step itself does.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time

import numpy as np
import torch

from scalegnn.bench.measure import Clock

GEMM_OPS = ("aten::mm", "aten::addmm", "aten::bmm")


def record_gemms(step):
    """Run ``step()`` once under torch.profiler: ``(calls, inside_s, prof)`` with ``calls`` the
    ``(op, [input shapes])`` of every dense product in call order, ``inside_s`` the seconds
    they took inside the step (profiler overhead included) and ``prof`` the profile. Kineto
    writes a ``profiler_start`` / ``profiler_stop`` line to the process's stderr whatever its
    log level: those are dropped (:func:`quiet_stderr`), the command's stderr stays its own."""
    from torch.profiler import ProfilerActivity, profile
    with quiet_stderr(), profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        step()
    calls, inside = [], 0.0
    for ev in prof.events():
        if ev.name in GEMM_OPS and ev.input_shapes:
            calls.append((ev.name, [tuple(s) for s in ev.input_shapes if s]))
            inside += ev.cpu_time_total * 1e-6
    return calls, inside, prof


@contextlib.contextmanager
def quiet_stderr():
    """File descriptor 2 points at /dev/null inside (what C++ libraries print there is
    dropped); Python's exceptions still propagate, and are printed after."""
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def profile_top(prof, k: int = 8) -> list:
    """``[op, self ms]`` of the ``k`` ops with the most self CPU time in a profile."""
    rows = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    return [[e.key, e.self_cpu_time_total * 1e-3] for e in rows[:k]]


def gemm_flops(calls) -> float:
    """Floating-point operations of recorded products: 2·m·k·p each (batched: times the batch)."""
    total = 0
    for name, shapes in calls:
        if name == "aten::addmm":
            shapes = shapes[1:]
        total += 2 * int(np.prod(shapes[0])) * int(shapes[1][-1])
    return float(total)


class GemmTemplate:
    """Recorded products with each dimension a constant or the batch's row count (None)."""

    def __init__(self, calls: list):
        self.calls = calls              # [(op, [shape with ints and None])]

    @classmethod
    def from_two(cls, calls_a, n_a: int, calls_b, n_b: int) -> GemmTemplate:
        """From the recordings of two steps on batches of ``n_a != n_b`` rows: a dimension
        that is ``n_a`` in one and ``n_b`` in the other is the row count, one that is equal in
        both a constant. ValueError if the two do not line up that way."""
        if n_a == n_b:
            raise ValueError("GemmTemplate.from_two: the two batches have the same row count")
        if [c[0] for c in calls_a] != [c[0] for c in calls_b] or \
                [len(s) for _, s in calls_a] != [len(s) for _, s in calls_b]:
            raise ValueError("GemmTemplate.from_two: the two steps ran different products")
        out = []
        for (name, sa), (_, sb) in zip(calls_a, calls_b):
            shapes = []
            for a, b in zip(sa, sb):
                if len(a) != len(b):
                    raise ValueError("GemmTemplate.from_two: operand ranks differ")
                dims = []
                for da, db in zip(a, b):
                    if da == db:
                        dims.append(int(da))
                    elif (da, db) == (n_a, n_b):
                        dims.append(None)
                    else:
                        raise ValueError(f"GemmTemplate.from_two: dimension {da} vs {db} is "
                                         f"neither constant nor the row count")
                shapes.append(tuple(dims))
            out.append((name, shapes))
        return cls(out)

    def calls_for(self, n: int) -> list:
        """The products of a batch of ``n`` rows."""
        return [(name, [tuple(n if d is None else d for d in s) for s in shapes])
                for name, shapes in self.calls]


class GemmReplay:
    """Replays products on per-product operand buffers (grown to the largest shape seen)."""

    def __init__(self, dtype=torch.float32):
        self.dtype = dtype
        self._buffers: dict = {}        # (call index, operand index) -> flat buffer

    def _operand(self, key, shape):
        size = int(np.prod(shape))
        buf = self._buffers.get(key)
        if buf is None or buf.numel() < size:
            gen = torch.Generator().manual_seed(len(self._buffers))
            buf = torch.rand(size, generator=gen, dtype=self.dtype)
            self._buffers[key] = buf
        return buf[:size].view(shape)

    def prepare(self, calls):
        """A closure running ``calls`` once on this replay's operands."""
        ops = []
        for i, (name, shapes) in enumerate(calls):
            args = [self._operand((i, j), s) for j, s in enumerate(shapes)]
            if name == "aten::addmm":
                ops.append((torch.addmm, args[:3]))
            elif name == "aten::bmm":
                ops.append((torch.bmm, args[:2]))
            else:
                ops.append((torch.mm, args[:2]))

        def run():
            for fn, a in ops:
                fn(*a)
        return run

    def seconds(self, calls, repeat: int = 1) -> float:
        """Median wall seconds of ``repeat`` back-to-back runs of ``calls`` (one untimed first)."""
        run = self.prepare(calls)
        run()
        times = []
        for _ in range(max(1, repeat)):
            t = time.perf_counter()
            run()
            times.append(time.perf_counter() - t)
        return float(np.median(times))

    def floor_seconds(self, template: GemmTemplate, rows) -> float:
        """Wall seconds of the products of batches of ``rows`` rows each, replayed one batch
        after another (each batch's operands prepared outside the timing)."""
        return self.floor_times(template, rows)[0]

    def floor_times(self, template: GemmTemplate, rows) -> tuple[float, float]:
        """(wall seconds, process CPU seconds) of :meth:`floor_seconds`' replay. CPU time
        counts every thread's work and hardly grows when other processes share the cores."""
        clock = Clock()
        for n in rows:
            run = self.prepare(template.calls_for(int(n)))
            with clock:
                run()
        return clock.wall_s, clock.cpu_s
