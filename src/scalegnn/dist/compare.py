"""``scalegnn partition compare``: partition quality of HP / GP / RP over part counts.

Each (method, K) row holds the exact accounting of :func:`scalegnn.dist.accounting.comm_report`
(volume = rows sent per layer, avg/max over ranks; messages avg/max; compute imbalance) and the
partitioning time. Ratios to GP and RP are per K, summarized by their geometric mean over K
(the statistic Demirci et al. report).
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np

from scalegnn.dist.accounting import comm_report
from scalegnn.dist.partition import GP_OBJECTIVES, assign, canonical
from scalegnn.errors import ConfigError
from scalegnn.io import atomic_open, atomic_write_json

COLUMNS = ("method", "parts", "volume_avg", "volume_max", "messages_avg", "messages_max",
           "compute_imbalance", "partition_s")


def parse_list(text: str, what: str, cast=str) -> list:
    try:
        out = [cast(x.strip()) for x in str(text).split(",") if x.strip()]
    except ValueError:
        raise ConfigError(f"{what}: expected a comma-separated list, got {text!r}") from None
    if not out:
        raise ConfigError(f"{what}: empty list")
    return out


def method_spec(token: str) -> tuple[str, dict]:
    """``hp`` | ``gp`` | ``rp`` (or an alias), or ``gp:cut`` / ``gp:vol`` (METIS objective):
    the row label and the extra keyword arguments of :func:`assign`."""
    name, _, opt = token.partition(":")
    m = canonical(name)
    if opt and m != "gp":
        raise ConfigError(f"--methods: {token!r}: only gp takes an option (gp:cut, gp:vol)")
    if opt and opt not in GP_OBJECTIVES:
        raise ConfigError(f"--methods: {token!r}: gp objective must be one of {list(GP_OBJECTIVES)}")
    return (f"{m}:{opt}" if opt else m), ({"gp_objective": opt} if opt else {})


def report_row(graph, method: str, parts: int, *, seed: int = 0, **kw) -> tuple[dict, np.ndarray]:
    """Partition ``graph`` into ``parts`` with ``method`` (see :func:`method_spec`); its
    accounting row and assignment."""
    label, extra = method_spec(method)
    t0 = time.perf_counter()
    a = assign(graph, parts, label.split(":")[0], seed, **{**kw, **extra})
    secs = time.perf_counter() - t0
    rep = comm_report(graph, a, parts)
    return {"method": label, "parts": parts, "partition_s": round(secs, 3),
            **{k: v for k, v in rep.items() if k not in ("parts",)}}, a


def geomean(x) -> float:
    x = [float(v) for v in x]
    return math.exp(sum(math.log(max(v, 1e-300)) for v in x) / len(x)) if x else float("nan")


def ratios(rows: list[dict]) -> dict:
    """Geometric means over K of method/baseline volume ratios (avg and max), for every method
    against ``gp`` and ``rp`` when present."""
    by = {(r["method"], r["parts"]): r for r in rows}
    methods = sorted({r["method"] for r in rows})
    ks = sorted({r["parts"] for r in rows})
    out = {}
    for m in methods:
        for base in ("gp", "gp:vol", "gp:cut", "rp"):
            if m == base or base not in methods:
                continue
            for stat in ("volume_avg", "volume_max"):
                rs = [by[m, k][stat] / by[base, k][stat] for k in ks
                      if (m, k) in by and (base, k) in by and by[base, k][stat] > 0]
                if rs:
                    out[f"{m}/{base}_{stat}"] = geomean(rs)
    return out


def compare(dataset, methods, parts_list, *, seed: int = 0, log=None, **kw) -> dict:
    """Rows for every method and part count (the table ``partition compare`` writes)."""
    g = dataset.graph
    rows = []
    for k in parts_list:
        for m in methods:
            row, _ = report_row(g, m, k, seed=seed, **kw)
            rows.append(row)
            if log:
                log(row)
    return {"dataset": getattr(dataset, "name", ""), "num_nodes": int(g.num_nodes),
            "num_entries": int(g.num_edges), "seed": seed, "settings": {k: v for k, v in kw.items()
                                                                      if v is not None},
            "rows": rows, "geomean_ratios": ratios(rows)}


def format_table(rows: list[dict]) -> str:
    """Fixed-width text table of the :data:`COLUMNS` of ``rows``."""
    head = f"{'method':<7}{'K':>4}{'vol avg':>12}{'vol max':>10}{'msg avg':>9}{'msg max':>8}" \
           f"{'imbal':>8}{'time s':>9}"
    lines = [head]
    for r in rows:
        lines.append(f"{r['method']:<7}{r['parts']:>4}{r['volume_avg']:>12.1f}{r['volume_max']:>10}"
                     f"{r['messages_avg']:>9.2f}{r['messages_max']:>8}"
                     f"{r['compute_imbalance']:>8.3f}{r['partition_s']:>9.2f}")
    return "\n".join(lines)


def write_json(result: dict, path) -> None:
    atomic_write_json(Path(path), result, indent=1)


def plot(result: dict, path) -> Path | None:
    """Average and maximum volume against K per method (log scales); None without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    rows = result["rows"]
    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    for m in sorted({r["method"] for r in rows}):
        rs = sorted((r for r in rows if r["method"] == m), key=lambda r: r["parts"])
        ks = [r["parts"] for r in rs]
        for ax, key in zip(axes, ("volume_avg", "volume_max", "messages_max")):
            ax.plot(ks, [r[key] for r in rs], marker="o", label=m.upper())
    for ax, title in zip(axes, ("volume avg (rows sent / layer / rank)",
                                "volume max (rows sent / layer, worst rank)",
                                "messages max (per layer, worst rank)")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("parts K")
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=8)
    fig.suptitle(f"{result.get('dataset', '')}: {result['num_nodes']} nodes, "
                 f"{result['num_entries']} entries")
    fig.tight_layout()
    path = Path(path)
    with atomic_open(path, "wb") as f:
        fig.savefig(f, format="png", dpi=100)
    plt.close(fig)
    return path
