"""Where a sampler's (or a PPR push's) time goes, against a roofline (issue 25 item 1).

A subgraph's work is memory access, so its CPU time has a lower bound: the bytes it streams
at the machine's streaming read rate plus the cache lines it fetches at random at the random
read rate, both measured by :func:`scalegnn.ops.membw.read_probe` on an array the size of the
graph's CSR (the same cache level or DRAM the sampler reads from) with the bench's thread
count, per CPU second::

    bound_cpu_s = stream_bytes / stream_Bps_per_thread + random_lines * ns_per_line

Traffic of one subgraph with k nodes, S scanned parent-row entries (the sum of the parent
degrees of its nodes), M induced edges and the sampler's draws (``sample_lines``):

* sampling: node sampler 3 lines per draw (alias probability, alias, node id); edge sampler 4
  per edge (probability, alias, both ends); rw 1 per root and 2 per step (row bounds, the
  neighbour); frontier 2 per initial node (id, degree) and 4 per step (the probed slot's pin
  range, the popped node's row bounds, its neighbour, the new node's degree).
* induction as implemented (``sampling._induce_kernels.fill_induced``): one scan of the k
  parent rows, 2 random lines per row (``indptr[u]``, the row's first line) + 4·S streamed
  bytes; the edge values of every scanned entry (4·S, loaded 16 at a time); writes of 16·M
  bytes (local id, parent edge id, value, transpose position) + 16·k (node ids, row
  pointers); and the transpose pass reads the M local ids again (4·M).
* the minimum any induced-subgraph builder must move (``min_*``): the sampling lines, the
  scan, the values of the kept entries only (4·M) and the outputs (16·M + 16·k).

Per-worker state (the |V|-bit membership map, its rank table, the |V| int32 map the draws
de-duplicate with, and the frontier's Dashboard) is reported as ``state_bytes``; its accesses
stay in the private caches for graphs up to a few million nodes and are not counted.
``cpu_over_bound`` is the measured CPU per subgraph over ``bound_cpu_ms`` (implementation
traffic); ``cpu_over_min_bound`` over the minimum.
"""

from __future__ import annotations

import numpy as np

from scalegnn.ops.membw import read_probe

def sample_lines(name: str, budget: dict) -> int:
    """Random cache lines the sampling phase (before induction) fetches per subgraph."""
    if name == "node":
        return 3 * int(budget["size_subgraph"])
    if name == "edge":
        return 4 * int(budget["size_subg_edge"])
    if name == "rw":
        r, h = int(budget["num_root"]), int(budget["depth"])
        return r + 2 * r * h
    if name == "mrw":
        m, n = int(budget["size_frontier"]), int(budget["size_subgraph"])
        return 2 * m + 4 * max(n - m, 0)
    return 0   # full / cluster: the node set is given


def sampler_traffic(name: str, budget: dict, nodes: float, scanned: float, induced: float,
                    num_nodes: int, values: bool = True) -> dict:
    """Bytes and random lines of one subgraph (means over the measured ones), implemented
    and minimum, and the per-worker state (module docstring)."""
    k, s, m = float(nodes), float(scanned), float(induced)
    lines = float(sample_lines(name, budget))
    return {
        "stream_bytes": 4 * s + (4 * s if values else 0.0) + 16 * m + 16 * k + 4 * m,
        "random_lines": lines + 2 * k,
        "min_stream_bytes": 4 * s + (4 * m if values else 0.0) + 16 * m + 16 * k,
        "min_random_lines": lines + 2 * k,
        "state_bytes": num_nodes // 8 + 4 * num_nodes,
        "draw_random_lines": lines,
    }


def ppr_traffic(pushes: float, updates: float, swept: float, touched: float) -> dict:
    """Bytes and random lines of one target's PPR push (means over the targets; the kernel
    counts them, ``PPRExtractor.push_work``): every push reads its row bounds and its row's
    first line at random and streams the row (4 bytes per neighbour); every neighbour update
    adds to a residual in the per-thread tables (one line, at random); a sweep streams the row
    bounds and residuals of every id it visits (16 bytes each). The minimum: the CSR part
    alone (row bounds, rows). ``state_bytes``: the touched nodes' table entries (id, p, r,
    queue flag, touched list: 33 bytes each)."""
    p, u, sw, t = float(pushes), float(updates), float(swept), float(touched)
    return {"stream_bytes": 4 * u + 16 * sw, "random_lines": 2 * p + u,
            "min_stream_bytes": 4 * u, "min_random_lines": 2 * p, "state_bytes": 33 * t}


def probe_for(nbytes: int, threads: int) -> dict:
    """:func:`read_probe` at ``nbytes`` (at least 1 MiB) on ``threads`` threads."""
    return read_probe(max(int(nbytes), 1 << 20), threads)


def bound(traffic: dict, probe: dict, cpu_s: float | None = None,
          phase_cpu_s: dict | None = None) -> dict:
    """The CPU-time bounds (ms) of ``traffic`` at ``probe``'s rates, and the measured
    ``cpu_s`` (per unit) over them. A sampler's traffic (``draw_random_lines``) also splits
    its bound into the draws' (their random lines) and the induction's (the rest); with
    ``phase_cpu_s`` (``{"draw": s, "induce": s}`` per unit) each phase's CPU over its bound."""
    bps = probe["stream_GBps_per_thread"] * 1e9
    ns = probe["random_ns_per_line"]
    b = traffic["stream_bytes"] / bps + traffic["random_lines"] * ns * 1e-9
    mb = traffic["min_stream_bytes"] / bps + traffic["min_random_lines"] * ns * 1e-9
    out = {"stream_MB": round(traffic["stream_bytes"] / 1e6, 3),
           "random_lines": int(traffic["random_lines"]),
           "min_stream_MB": round(traffic["min_stream_bytes"] / 1e6, 3),
           "min_random_lines": int(traffic["min_random_lines"]),
           "state_MB": round(traffic["state_bytes"] / 1e6, 3),
           "bound_cpu_ms": round(1e3 * b, 6), "min_bound_cpu_ms": round(1e3 * mb, 6),
           "probe": probe}
    if cpu_s is not None:
        out["cpu_over_bound"] = round(cpu_s / b, 3) if b > 0 else None
        out["cpu_over_min_bound"] = round(cpu_s / mb, 3) if mb > 0 else None
    if "draw_random_lines" in traffic:
        draw = traffic["draw_random_lines"] * ns * 1e-9
        out["draw_bound_cpu_ms"] = round(1e3 * draw, 6)
        out["induce_bound_cpu_ms"] = round(1e3 * (b - draw), 6)
        phases = (("draw", draw), ("induce", b - draw)) if phase_cpu_s is not None else ()
        for phase, pb in phases:
            out[f"{phase}_cpu_ms"] = round(1e3 * phase_cpu_s[phase], 6)
            out[f"{phase}_over_bound"] = round(phase_cpu_s[phase] / pb, 3) if pb > 0 else None
    return out


def scanned_entries(indptr: np.ndarray, nodes: np.ndarray) -> int:
    """S: the parent-row entries an induction over ``nodes`` scans (their degrees' sum)."""
    return int((indptr[nodes + 1] - indptr[nodes]).sum())
