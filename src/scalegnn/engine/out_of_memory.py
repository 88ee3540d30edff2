"""Running out of memory while training, as one line: a MemoryError or torch's allocator
failing (``--force`` past the memory guard, or an estimate that was too low) becomes a
:class:`~scalegnn.errors.DataError` naming what was asked for, the estimate
(:mod:`scalegnn.engine.memory_guard`) and the settings that size its largest term
(``network.dim=100000``)."""

from __future__ import annotations

import re
from contextlib import contextmanager

from scalegnn.engine.memory_guard import estimate_training_memory, term_settings
from scalegnn.errors import DataError
from scalegnn.memory import human_bytes

OUT_OF_MEMORY = re.compile(r"can't allocate memory|cannot allocate memory|out of memory|"
                           r"bad_alloc", re.IGNORECASE)
_TRIED = re.compile(r"allocate (\d+) bytes|[Tt]ried to allocate ([\d.]+ [KMGTP]?i?B)")


def is_out_of_memory(error: BaseException) -> bool:
    """A MemoryError, or torch's allocator failing (``DefaultCPUAllocator: can't allocate
    memory``, ``CUDA out of memory``: RuntimeErrors)."""
    return isinstance(error, MemoryError) or (
        isinstance(error, RuntimeError) and bool(OUT_OF_MEMORY.search(str(error))))


def out_of_memory_error(error: BaseException, dataset, config, model=None) -> DataError:
    """One line for running out of memory while training (``--force`` past the guard, or an
    estimate too low): how much was asked for when the allocator says, the estimate's total
    and largest term, and the settings that size that term (``network.dim=100000``)."""
    tried = _tried(error)
    est = estimate_training_memory(dataset, config, model)
    name, size = est.largest
    return DataError(f"memory: out of memory{tried} while training (estimated need "
                     f"{human_bytes(est.total)}; largest: {name} {human_bytes(size)}, set by "
                     f"{term_settings(name, dataset, config)}); lower it")


def out_of_memory_in(error: BaseException, what: str) -> DataError:
    """One line for running out of memory in ``what`` (a command) outside training's guard:
    how much was asked for when the allocator says."""
    return DataError(f"memory: out of memory{_tried(error)} in {what}; choose smaller sizes or "
                     f"free memory")


def _tried(error: BaseException) -> str:
    found = _TRIED.search(str(error))
    return "" if found is None else (
        f" allocating {human_bytes(int(found[1]))}" if found[1] else f" allocating {found[2]}")


@contextmanager
def out_of_memory_as_error(dataset, config, model=None):
    """Turn running out of memory inside the block (:func:`is_out_of_memory`) into
    :func:`out_of_memory_error`'s one line; other errors pass unchanged."""
    try:
        yield
    except (MemoryError, RuntimeError) as e:
        if not is_out_of_memory(e):
            raise
        raise out_of_memory_error(e, dataset, config, model) from None
