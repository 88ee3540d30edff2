"""Memory of this process and of the machine: what can still be allocated, what is held.

* :func:`available_memory` — MemAvailable, lowered to the cgroup limit;
  :func:`require_memory` refuses (one line) an allocation estimated beyond it.
* :func:`rss_bytes`, :func:`peak_rss_bytes`, :func:`reset_peak_rss` — what the process holds
  now and at its peak (the benchmarks compare them with the training estimate of
  :mod:`scalegnn.engine.memory_guard`).
"""

from __future__ import annotations

import os
import resource
import sys
from pathlib import Path

from scalegnn.errors import DataError


def available_memory() -> int | None:
    """Bytes this process can still allocate: MemAvailable of /proc/meminfo, lowered to the
    cgroup (v2) limit minus usage when there is one; os.sysconf free pages elsewhere; None
    when nothing tells."""
    avail = None
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    avail = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    if avail is None:
        try:
            avail = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, AttributeError):
            return None
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        used = int(Path("/sys/fs/cgroup/memory.current").read_text().strip())
        if limit.isdigit():
            avail = min(avail, max(int(limit) - used, 0))
    except (OSError, ValueError):
        pass
    return avail


def human_bytes(b: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if b < 1024 or unit == "PiB":
            return f"{b:.0f} {unit}" if unit == "B" else f"{b:.1f} {unit}"
        b /= 1024
    return ""


def require_memory(what: str, nbytes: float) -> None:
    """DataError naming ``what`` when an estimated ``nbytes`` exceed the available memory."""
    avail = available_memory()
    if avail is not None and nbytes > avail:
        raise DataError(f"{what}: needs about {human_bytes(nbytes)} of memory, but only "
                        f"{human_bytes(avail)} is available; use a smaller size")


def rss_bytes() -> int:
    """Resident bytes of this process now (``/proc/self/statm``); the peak where there is
    no /proc."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return peak_rss_bytes()


def peak_rss_bytes() -> int:
    """Peak resident bytes of this process so far: ``VmHWM`` of /proc/self/status, which starts
    afresh at exec and again at :func:`reset_peak_rss` (Linux carries ``ru_maxrss`` over from
    the forking parent, so a child of a large process would report the parent's size);
    ``ru_maxrss`` where there is no /proc."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kb * (1 if sys.platform == "darwin" else 1024)


def reset_peak_rss() -> None:
    """Restart the kernel's high-water mark at the current RSS (Linux >= 4.0; elsewhere a
    no-op), so a peak read afterwards belongs to what follows."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass
