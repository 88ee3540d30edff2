"""Cost model that picks the SpMM kernel (row-parallel vs feature-partitioned) per call.

The seeds' feature partitioning (SPEC §3) targets private caches smaller than X: with
``Q_f = max{p, s·n·f / S_cache}`` column blocks (s = bytes per value; the seeds write 8 for
doubles) each thread's block of X stays in its private cache while the CSR is streamed Q_f
times. On a machine whose shared L3 holds X, the row-parallel kernel reads X from L3 once per
edge and streams the CSR once, which is usually cheaper. Neither is assumed: both are costed
from the cache sizes (read from sysfs) and a few bandwidth/latency constants, and
``scalegnn bench spmm`` reports the prediction next to the measured times.

Predicted time: every (edge, column slice) pair is one *visit* that gathers a slice of
``w·s`` bytes of one X row, costing

    c_edge  +  latency(level) / 4  +  w·s / bandwidth(level)          (4: the 4-unrolled rows
                                                                        are in flight at once)

where the level holding X's slices is L2 if the concurrently used part of X fits half the
private L2s, L3 if it fits half the shared L3, else a mix of L3 and DRAM in proportion to the
fraction that fits (software prefetch halves the DRAM latency term). The row kernel makes
``ceil(f/tile)`` visits per edge, the feature kernel ``Q_f`` (plus Q_f streams of the CSR);
visits are split over p threads; DRAM bandwidth is shared by all threads. Narrow slices pay
the latency and ``c_edge`` many times for few bytes - that is what the seeds' scheme trades
for private-cache residency, and what decides between the kernels here. ``c_edge`` differs
per kernel: the row kernel's untiled rows cost ~1 ns of overhead per visit, the feature
kernel's 16-64-column slices ~6 ns (fitted to ``bench spmm`` on Zen 4, 2 threads).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

_SYS_CACHE = "/sys/devices/system/cpu/cpu0/cache"
_FALLBACK = {1: 32 << 10, 2: 1 << 20, 3: 8 << 20}
LINE = 64  # bytes per cache line; column blocks are cut at line boundaries
PREFETCH_LINES = 8
MIN_SLICE = 4096  # bytes: narrowest column slice the row kernel tiles to (see row_tile)


@dataclass(frozen=True)
class Caches:
    """Data-cache sizes in bytes; ``l3_sharing`` = CPUs that share the L3."""
    l1: int = _FALLBACK[1]
    l2: int = _FALLBACK[2]
    l3: int = _FALLBACK[3]
    l3_sharing: int = 1
    source: str = "fallback"


def _parse_size(text: str) -> int:
    text = text.strip().upper()
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
    return int(text.rstrip("KMGB") or 0) * mult


def _count_cpus(cpu_list: str) -> int:
    n = 0
    for part in cpu_list.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        n += int(hi or lo) - int(lo) + 1
    return max(n, 1)


def read_caches(root: str = _SYS_CACHE) -> Caches:
    """Data/unified cache sizes of cpu0 from sysfs; fallbacks for anything unreadable."""
    sizes, sharing = dict(_FALLBACK), 1
    found = False
    try:
        entries = sorted(e for e in os.listdir(root) if e.startswith("index"))
    except OSError:
        entries = []
    for e in entries:
        d = os.path.join(root, e)
        try:
            with open(os.path.join(d, "type")) as fh:
                kind = fh.read().strip()
            if kind not in ("Data", "Unified"):
                continue
            with open(os.path.join(d, "level")) as fh:
                level = int(fh.read())
            with open(os.path.join(d, "size")) as fh:
                size = _parse_size(fh.read())
        except (OSError, ValueError):
            continue
        if level in sizes and size > 0:
            sizes[level] = size
            found = True
            if level == 3:
                try:
                    with open(os.path.join(d, "shared_cpu_list")) as fh:
                        sharing = _count_cpus(fh.read())
                except (OSError, ValueError):
                    pass
    return Caches(sizes[1], sizes[2], sizes[3], sharing, "sysfs" if found else "fallback")


@dataclass(frozen=True)
class Machine:
    """Constants of the model (seconds, bytes/s). Bandwidths are per thread except DRAM (whole
    machine); ``bench spmm`` measures DRAM bandwidth and checks the model's picks."""
    caches: Caches = field(default_factory=read_caches)
    bw_l2: float = 60e9
    bw_l3: float = 40e9
    bw_dram: float = 20e9
    lat_l2: float = 5e-9
    lat_l3: float = 12e-9
    lat_dram: float = 100e-9
    c_edge: float = 1e-9   # per visit of the row kernel: index + value load, loop overhead
    c_edge_blocks: float = 6e-9  # per visit of the feature kernel (narrow column slices)
    c_row: float = 4e-9    # per output row slice


@dataclass(frozen=True)
class Plan:
    """The chosen kernel and its parameters; ``predicted`` maps kernel name -> seconds."""
    kernel: str                 # "rows" or "features"
    tile: int                   # rows kernel: column tile width
    width: int                  # features kernel: block width (columns)
    q_f: int                    # features kernel: number of blocks (multiple of p)
    threads: int
    predicted: dict
    prefetch: int = 0           # rows kernel: lines of each upcoming neighbour row to prefetch
    blocked: bool = False       # features kernel: copy each block of X contiguous first


def seeds_q_f(n_cols: int, f: int, itemsize: int, p: int, s_cache: int) -> int:
    """``Q_f = max{p, s·n·f / S_cache}`` rounded up to a multiple of p (SPEC §3)."""
    q = max(p, math.ceil(itemsize * n_cols * f / max(s_cache, 1)))
    return -(-q // p) * p


def feature_blocks(f: int, itemsize: int, q_f: int, p: int) -> tuple[int, int]:
    """(width, q_f): block width rounded *down* to whole cache lines (at least one; so a block
    never outgrows the cache it was sized for and blocks never share a line), then q_f
    recomputed so that q_f·width covers f and q_f is a multiple of p."""
    per_line = max(LINE // itemsize, 1)
    width = max(max(-(-f // q_f), 1) // per_line * per_line, per_line)
    q = -(-f // width) if f else p
    return width, -(-q // p) * p


def _visit_time(visits: float, slice_bytes: float, per_thread_ws: float, shared_ws: float,
                m: Machine, p: int, prefetch: bool, c_visit: float) -> float:
    """Wall time of ``visits`` gathers of ``slice_bytes`` each, split over p threads. Each
    thread needs ``per_thread_ws`` bytes of X in its private cache; all threads together use
    ``shared_ws`` bytes of the shared one."""
    c = m.caches
    if per_thread_ws <= c.l2 / 2:
        per = m.lat_l2 / 4 + slice_bytes / m.bw_l2
    elif shared_ws <= c.l3 / 2:
        per = m.lat_l3 / 4 + slice_bytes / m.bw_l3
    else:
        hit = (c.l3 / 2) / shared_ws
        lat_dram = m.lat_dram / (2 if prefetch else 1)
        per = (hit * m.lat_l3 + (1 - hit) * lat_dram) / 4 + slice_bytes * hit / m.bw_l3
        per += slice_bytes * (1 - hit) / (m.bw_dram / p)   # threads share DRAM bandwidth
    return visits * (per + c_visit) / p


def predict_rows(n_rows, n_cols, nnz, f, itemsize, p, tile, m: Machine, prefetch=True) -> float:
    tile = min(tile, f)
    passes = -(-f // tile) if f else 0
    ws = n_cols * tile * itemsize    # every thread gathers rows from all of X's tile
    t = _visit_time(passes * nnz, tile * itemsize, ws, ws, m, p, prefetch, m.c_edge)
    t += passes * n_rows * m.c_row / p
    t += 2 * n_rows * f * itemsize / m.bw_dram          # write-allocate + write-back of out
    return t


def predict_features(n_rows, n_cols, nnz, f, itemsize, p, width, q_f, m: Machine) -> float:
    width = min(width, f)
    # each thread holds its own block; the p blocks together live in the shared cache
    block = n_cols * width * itemsize
    t = _visit_time(q_f * nnz, width * itemsize, block, p * block, m, p, False, m.c_edge_blocks)
    csr = nnz * 8 + n_rows * 8                          # index + value (+ indptr) per sweep
    t += q_f * csr / (m.bw_l3 * p if csr <= m.caches.l3 / 2 else m.bw_dram)
    t += q_f * n_rows * m.c_row / p
    t += 2 * n_rows * f * itemsize / m.bw_dram
    if width * itemsize < 4 * LINE:                     # blocks copied contiguous first
        t += 2 * n_cols * f * itemsize / min(m.bw_dram, m.bw_l3 * p)
    return t


def row_tile(n_cols: int, f: int, itemsize: int, m: Machine) -> int:
    """Column tile of the row kernel: f if X fits half the shared L3, else the widest tile whose
    slice of X does, but never narrower than ``MIN_SLICE`` bytes.

    Why the floor: measured on Zen 4 (32 MiB L3, 2 cores, shared with other jobs), 512-byte
    slices made n=50000, f=512 2x slower than untiled 2 KiB rows - the hardware prefetcher
    streams whole rows, so a narrow slice drags the neighbouring columns in and wastes the
    bandwidth the tiling was meant to save, and each slice pays a fresh miss latency.
    """
    l3 = m.caches.l3 / 2
    if n_cols * f * itemsize <= l3 or f == 0:
        return max(f, 1)
    per_line = max(LINE // itemsize, 1)
    tile = int(l3 // max(n_cols * itemsize, 1)) // per_line * per_line
    return min(f, max(tile, MIN_SLICE // itemsize))


def plan_spmm(n_rows: int, n_cols: int, nnz: int, f: int, itemsize: int, threads: int,
              machine: Machine | None = None, force: str | None = None) -> Plan:
    """Choose the kernel for ``out(n_rows x f) = A(n_rows x n_cols, nnz) · X(n_cols x f)``."""
    m = machine or default_machine()
    p = max(int(threads), 1)
    tile = row_tile(n_cols, f, itemsize, m)
    # S_cache = half the private L2: the model counts a block as resident at that size (the
    # other half holds the streamed CSR and the output rows)
    q_f = seeds_q_f(n_cols, f, itemsize, p, m.caches.l2 // 2)
    width, q_f = feature_blocks(f, itemsize, q_f, p)
    npf = PREFETCH_LINES if n_cols * min(tile, f) * itemsize > m.caches.l3 / 2 else 0
    pred = {"rows": predict_rows(n_rows, n_cols, nnz, f, itemsize, p, tile, m, npf > 0),
            "features": predict_features(n_rows, n_cols, nnz, f, itemsize, p, width, q_f, m)}
    kernel = force or min(pred, key=pred.get)
    # copy narrow blocks contiguous first (measured under load, n=8000/50000, f=512, 2 threads:
    # 16-column blocks 1.3-1.5x faster copied; 64+ columns slower copied - the copy then costs
    # more than the partly used lines it saves)
    blocked = width * itemsize < 4 * LINE
    # npf: gathers from DRAM are latency-bound, so prefetch the upcoming rows (measured
    # 1.3-1.6x at n=50000, f=512 on Zen 4); from L3 prefetching only costs instructions
    return Plan(kernel, tile, width, q_f, p, pred, npf, blocked)


_MACHINE: Machine | None = None


def default_machine() -> Machine:
    """The process-wide Machine (cache sizes read once)."""
    global _MACHINE
    if _MACHINE is None:
        _MACHINE = Machine()
    return _MACHINE


def set_machine(machine: Machine | None) -> None:
    """Replace the model's constants (e.g. with a measured DRAM bandwidth); None resets."""
    global _MACHINE
    _MACHINE = machine
