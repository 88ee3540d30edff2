"""``compare.png``: validation metric against training time, one line per method (GraphSAINT's
Figure 2), from a ``scalegnn compare`` table (:mod:`scalegnn.compare`).

Each method that ran is a line (colour, dash and marker differ, as the report's validation
panel) labelled with its best validation metric and its time to the target; the target (99% of
the best validation metric of all methods) is a dashed horizontal line and each method's first
point at or above it a star. Methods that did not run are named under the plot with the reason.
Needs matplotlib; the caller handles its absence.
"""

from __future__ import annotations

import math

from scalegnn.report.plot import MARKERS, STYLES


def draw_compare(table: dict, plt):
    """The comparison figure of ``table`` (a matplotlib Figure; the caller saves and closes)."""
    fig, ax = plt.subplots(figsize=(9, 5.4), dpi=100)
    metric = table.get("metric", "metric")
    target = (table.get("target") or {}).get("value")
    ran = [m for m in table.get("methods", []) if (m.get("curve") or {}).get("val")]
    values = []
    for i, m in enumerate(ran):
        t, v = m["curve"]["train_s"], m["curve"]["val"]
        values += v
        reach = m.get("time_to_target_s")
        label = f"{m['method']}: best {max(v):.4f}, " + \
            (f"target at {reach:.1f} s" if reach is not None else "target not reached")
        ax.plot(t, v, color=f"C{i % 10}", ls=STYLES[i % len(STYLES)],
                marker=MARKERS[i % len(MARKERS)], ms=3.5 if len(t) <= 60 else 0,
                markevery=max(1, len(t) // 40), lw=1.7, label=label)
        if reach is not None:
            ax.plot([reach], [v[t.index(reach)]], marker="*", ms=13, color=f"C{i % 10}",
                    markeredgecolor="black", markeredgewidth=0.6, zorder=5, ls="none")
    if target is not None:
        ax.axhline(target, color="0.35", lw=0.9, ls=(0, (4, 3)), zorder=0)
        ax.text(1.0, target, f" {table['target']['fraction']:.0%} of the best ",
                transform=ax.get_yaxis_transform(), fontsize=8, va="bottom", ha="right",
                color="0.3")
    if values:
        top, low = max(values), min(values)
        span = max(top - low, 1e-3)
        ax.set_ylim(max(low, top - 0.4 * max(abs(top), 1e-3)) - 0.03 * span, top + 0.05 * span)
    else:
        ax.text(0.5, 0.5, "no method finished an epoch", ha="center", va="center",
                transform=ax.transAxes, color="0.4")
    ax.set_xlabel("training time (s; wall clock of the epochs, validation passes left out)")
    ax.set_ylabel(f"validation {metric}")
    ax.grid(alpha=0.3)
    if ran:
        ax.legend(fontsize=8, loc="lower right")
    ax.set_title(_title(table), fontsize=10)
    missing = [m for m in table.get("methods", []) if m not in ran]
    if missing:
        text = "; ".join(f"{m['method']} not run: {_short(m.get('skipped') or m.get('failed'))}"
                         for m in missing)
        fig.text(0.01, 0.01, text, fontsize=7.5, color="0.35", va="bottom", wrap=True)
    # fixed margins: tight_layout warns on stderr when a long title leaves it no room
    fig.subplots_adjust(left=0.09, right=0.98, top=0.88, bottom=0.17 if missing else 0.11)
    return fig


def _title(table: dict) -> str:
    n, train = table.get("nodes"), table.get("train_nodes")
    size = f"{n:,} nodes, {train:,} training" if isinstance(n, int) and isinstance(train, int) \
        else ""
    setting = "transductive" if table.get("transductive") else "inductive"
    budget = table.get("budget_s")
    budget = f"{budget:g} s each" if isinstance(budget, (int, float)) and math.isfinite(budget) \
        else "?"
    return (f"{table.get('dataset', '?')} ({size}, {setting}): validation "
            f"{table.get('metric', '')} against training time\nbudget {budget}, seed "
            f"{table.get('seed', 0)}, {table.get('machine', {}).get('cpus', '?')} CPUs")


def _short(text, limit: int = 90) -> str:
    text = str(text or "?")
    return text if len(text) <= limit else text[:limit - 3] + "..."
