"""``report.png``: one figure a person can read a run from.

Panels, top to bottom (all share the epoch axis except the last ones):

1. training loss per epoch (log scale when it spans more than 20x), best epoch marked;
2. every validation metric as its own line (colour, dash and marker differ, so metrics that
   coincide, like accuracy = f1_micro, stay visible and are labelled so), best epoch marked with
   its validation value and the final test score of that epoch's weights;
3. time per epoch, stacked: pre-sampling, sampling, compute, validation; numba compilation
   (which happens inside those) drawn over them hatched; epochs far above the rest (the first
   one, usually) are clipped and their total written on them;
4. the whole run's time split: pre-sampling, sampling, compute, validation, final evaluation
   and other (wall - the per-epoch phases: checkpoints, logging), plus the first epoch against
   a typical one;
5. distributed runs: per rank, mean seconds per epoch split into compute / exchange / wait /
   all-reduce, and mean megabytes sent and received per epoch.

The title names the dataset, mode, model and key settings, and the test score at the best
epoch. Needs matplotlib; the caller handles its absence.
"""

from __future__ import annotations

import math

from scalegnn.report.rundata import (RunData, num, rank_totals, steady_records,
                                     title_lines)

PHASE_COLORS = {"presample_s": ("pre-sampling", "tab:purple"),
                "sample_s": ("sampling", "tab:orange"),
                "compute_s": ("compute", "tab:green"), "eval_s": ("validation", "tab:red"),
                "final_eval_s": ("final evaluation", "tab:pink"),
                "other_s": ("other (checkpoints, logging)", "tab:gray")}
RANK_COLORS = {"compute_s": ("compute", "tab:green"), "exchange_s": ("exchange", "tab:blue"),
               "wait_s": ("wait for peers", "tab:olive"), "allreduce_s": ("all-reduce", "tab:cyan")}
STYLES = ("-", "--", "-.", ":")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


def draw_report(data: RunData, plt):
    """The report figure of ``data`` (a matplotlib Figure; the caller saves and closes it)."""
    dist = data.distributed
    heights = [2.0, 2.6, 2.2, 1.9] + ([2.2] if dist else [])
    tall = sum(heights) + 2.2  # inches: panels + title + gaps
    fig = plt.figure(figsize=(11, tall), dpi=100)
    grid = fig.add_gridspec(len(heights), 2, height_ratios=heights, hspace=0.42, wspace=0.3,
                            left=0.08, right=0.92, top=1 - 0.85 / tall, bottom=0.5 / tall)
    ax_loss = fig.add_subplot(grid[0, :])
    ax_val = fig.add_subplot(grid[1, :], sharex=ax_loss)
    ax_time = fig.add_subplot(grid[2, :], sharex=ax_loss)
    ax_total = fig.add_subplot(grid[3, :])
    best = data.best_epoch
    _loss(ax_loss, data, best)
    _validation(ax_val, data, best)
    _epoch_times(ax_time, data)
    _run_split(ax_total, data)
    if dist:
        _ranks(fig.add_subplot(grid[4, 0]), data)
        _bytes(fig.add_subplot(grid[4, 1]), data)
    first, second = title_lines(data)
    fig.suptitle(f"{first}\n{second}", fontsize=10.5, y=1 - 0.12 / tall, va="top")
    return fig


def plt_formatter(fmt: str):
    from matplotlib.ticker import FormatStrFormatter  # noqa: PLC0415 (matplotlib is optional)
    return FormatStrFormatter(fmt)


def _mark_best(ax, best):
    if best:
        ax.axvline(best, color="0.35", lw=0.9, ls=(0, (4, 3)), zorder=0)


def _loss(ax, data: RunData, best):
    ep, loss = data.epochs, data.series("loss")
    few = len(ep) <= 60
    ax.plot(ep, loss, color="tab:blue", lw=1.6, marker="o" if few else None, ms=3,
            label="training loss")
    finite = [v for v in loss if math.isfinite(v)]
    if finite and min(finite) > 0 and max(finite) / min(finite) > 20:
        ax.set_yscale("log")
    _mark_best(ax, best)
    ax.set_ylabel("training loss")
    ax.grid(alpha=0.3)
    lr = data.series("lr")
    if any(math.isfinite(v) for v in lr):  # a learning-rate schedule ran: show it
        twin = ax.twinx()
        twin.step(ep, lr, where="mid", color="tab:gray", lw=1.1, ls="--")
        twin.set_ylabel("learning rate (dashed)", color="tab:gray", fontsize=8)
        twin.tick_params(axis="y", colors="tab:gray", labelsize=7.5)
        twin.yaxis.set_major_formatter(plt_formatter("%.2g"))
    if best:
        late = best > 0.8 * max(ep)  # keep the label inside the panel
        ax.text(best, 1.0, f" best epoch {best} ", transform=ax.get_xaxis_transform(),
                fontsize=8, va="bottom", ha="right" if late else "left", color="0.25")
    ax.tick_params(labelbottom=False)


def _validation(ax, data: RunData, best):
    keys = data.val_keys
    if not keys:
        ax.text(0.5, 0.5, "no validation pass recorded", ha="center", va="center",
                transform=ax.transAxes, color="0.4")
        ax.set_ylabel("validation")
        ax.tick_params(labelbottom=False)
        return
    metric = data.metric
    seen = {}
    for i, key in enumerate(sorted(keys, key=lambda k: (k != metric, k))):
        ep, vals = data.val_series(key)
        same = next((k for k, v in seen.items() if _same(v, vals)), None)
        label = f"{key} (= {same})" if same else key
        ax.plot(ep, vals, color=f"C{i % 10}", ls=STYLES[i % len(STYLES)],
                marker=MARKERS[i % len(MARKERS)], ms=4 if len(ep) <= 60 else 0,
                markevery=max(1, len(ep) // 40), lw=2.2 if key == metric else 1.3,
                label=f"val {label}", zorder=3 if key == metric else 2)
        seen[key] = vals
    _mark_best(ax, best)
    val_best = num(((data.record(best) or {}).get("val") or {}).get(metric)) if best else math.nan
    test = data.summary.get("test") if isinstance(data.summary.get("test"), dict) else {}
    test_best = num(test.get(metric))
    if math.isfinite(val_best):
        ax.plot([best], [val_best], marker="*", ms=15, color="gold", mec="black", zorder=5,
                ls="none", label=f"best epoch {best}: val {metric} {val_best:.4f}")
    if math.isfinite(test_best):
        ax.plot([best], [test_best], marker="X", ms=10, color="crimson", mec="black", zorder=5,
                ls="none", label=f"test {metric} {test_best:.4f} (best epoch's weights)")
    ax.set_ylabel("validation")
    ax.grid(alpha=0.3)
    # above the panel, in the gap under the loss panel: never over a line
    ax.legend(fontsize=7.5, loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=4,
              frameon=False, borderaxespad=0.2, handlelength=2.6)
    ax.tick_params(labelbottom=False)


def _same(a, b) -> bool:
    return len(a) == len(b) and all(
        (x == y) or (math.isnan(x) and math.isnan(y)) or abs(x - y) <= 1e-12 for x, y in zip(a, b))


def _epoch_times(ax, data: RunData):
    ep = data.epochs
    bottom = [0.0] * len(ep)
    for key in ("presample_s", "sample_s", "compute_s", "eval_s"):
        vals = [v if math.isfinite(v) else 0.0 for v in data.series(key)]
        if max(vals, default=0.0) < 1e-3:  # nothing to see (e.g. sampling of full-graph steps)
            continue
        label, color = PHASE_COLORS[key]
        ax.bar(ep, vals, bottom=bottom, color=color, width=0.8, label=label, lw=0)
        bottom = [b + v for b, v in zip(bottom, vals)]
    comp = [v if math.isfinite(v) else 0.0 for v in data.series("compile_s")]
    if any(comp):
        ax.bar(ep, comp, width=0.8, fill=False, hatch="////", edgecolor="black", lw=0.6,
               label="of which numba compile")
    ax.set_ylim(0, 1.3 * max(max(bottom), max(comp, default=0.0), 1e-3))  # room for the legend
    # a few epochs far above the rest (the first: compilation, pre-sampling) would flatten the
    # others; clip them when at most ~2% of the epochs stand 3x above the next-largest bar
    desc = sorted(bottom, reverse=True)
    ref = desc[min(max(1, len(desc) // 50), len(desc) - 1)]
    if len(ep) >= 3 and ref > 0 and desc[0] > 3 * ref:
        top = 1.6 * max(b for b in bottom if b <= 3 * ref)
        ax.set_ylim(0, top)
        for e, b in zip(ep, bottom):
            if b > top:
                ax.text(e, top * 0.97, f"{b:.1f}s\u2191", ha="center", va="top", fontsize=7.5,
                        rotation=90 if len(ep) > 30 else 0,
                        bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.8))
    ax.set_ylabel("seconds per epoch")
    ax.set_xlabel("epoch")
    ax.grid(alpha=0.3, axis="y")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7.5, loc="upper right", ncol=5, framealpha=0.85)
    if len(ep) <= 30:
        ax.set_xticks(ep)


def _run_split(ax, data: RunData):
    tot = data.time_totals()
    keys = [k for k in ("presample_s", "sample_s", "compute_s", "eval_s", "final_eval_s",
                        "other_s") if tot.get(k, 0.0) >= 0.0005]
    whole = sum(tot[k] for k in keys) or 1.0
    left = 0.0
    for key in keys:
        label, color = PHASE_COLORS[key]
        v = tot[key]
        ax.barh([0], [v], left=left, color=color, height=0.6,
                label=f"{label} {v:.2f}s ({100 * v / whole:.0f}%)")
        if v / whole > 0.07:
            ax.text(left + v / 2, 0, f"{v:.1f}s", ha="center", va="center", fontsize=8,
                    color="white", fontweight="bold")
        left += v
    if tot.get("compile_s", 0.0) > 0:
        ax.barh([0.45], [tot["compile_s"]], color="none", hatch="////", edgecolor="black",
                height=0.18, lw=0.6,
                label=f"numba compile {tot['compile_s']:.2f}s (inside the above)")
    ax.set_yticks([])
    ax.set_ylim(-1.45, 0.6)  # the legend sits under the bar, inside the panel
    ax.set_xlim(0, whole * 1.001)
    ax.set_xlabel("seconds")
    head = f"whole run: wall {tot['wall_s']:.1f}s" if "wall_s" in tot else \
        "whole run so far (no summary.json: the run did not finish)"
    if "final_eval_s" in tot:
        head += f" + final evaluation {tot['final_eval_s']:.1f}s"
    fo = data.first_epoch_overhead()
    if fo:
        head += (f"   |   epoch {fo['epoch']} trained in {fo['first_s']:.2f}s vs "
                 f"{fo['typical_s']:.2f}s typical (+{fo['extra_s']:.2f}s first-epoch warm-up")
        head += f", numba compile {fo['compile_s']:.2f}s)" if fo["compile_s"] > 0 else ")"
    ax.set_title(head, fontsize=8.5, loc="left")
    ax.legend(fontsize=7.5, loc="lower center", ncol=4, frameon=False)
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)


def _span(data: RunData) -> str:
    recs = steady_records(data)
    return f"epochs {recs[0]['epoch']}-{recs[-1]['epoch']}" if len(recs) > 1 else \
        f"epoch {recs[0]['epoch']}"


def _ranks(ax, data: RunData):
    totals = rank_totals(data, steady_records(data))
    for i, acc in enumerate(totals):
        n = max(acc["epochs"], 1)
        left = 0.0
        for key, (label, color) in RANK_COLORS.items():
            v = acc[key] / n
            ax.barh([i], [v], left=left, color=color, height=0.6, label=label if i == 0 else None)
            left += v
        ax.text(left, i, f" {left:.3f}s", va="center", fontsize=7.5)
    ax.set_yticks(range(len(totals)), [f"rank {i}" for i in range(len(totals))])
    ax.invert_yaxis()
    ax.set_xlabel(f"mean seconds per epoch ({_span(data)})")
    ax.set_title("per rank: compute / communication / wait", fontsize=9, loc="left")
    ax.set_xlim(0, 1.55 * max(sum(a[k] for k in RANK_COLORS) / max(a["epochs"], 1)
                              for a in totals) or 1.0)
    ax.legend(fontsize=7, loc="center right", framealpha=0.85)
    ax.grid(alpha=0.3, axis="x")


def _bytes(ax, data: RunData):
    totals = rank_totals(data, steady_records(data))
    idx = range(len(totals))
    sent = [a["bytes_sent"] / max(a["epochs"], 1) / 2**20 for a in totals]
    recv = [a["bytes_recv"] / max(a["epochs"], 1) / 2**20 for a in totals]
    ax.barh([i - 0.18 for i in idx], sent, height=0.34, color="tab:blue", label="sent")
    ax.barh([i + 0.18 for i in idx], recv, height=0.34, color="tab:orange", label="received")
    for i, (s, r) in enumerate(zip(sent, recv)):
        ax.text(s, i - 0.18, f" {s:.2f}", va="center", fontsize=7)
        ax.text(r, i + 0.18, f" {r:.2f}", va="center", fontsize=7)
    ax.set_yticks(list(idx), [f"rank {i}" for i in idx])
    ax.invert_yaxis()
    total = sum(a["bytes_sent"] for a in rank_totals(data)) / 2**20
    ax.set_xlabel(f"mean MiB per epoch ({_span(data)})")
    ax.set_title(f"boundary traffic (all ranks sent {total:.1f} MiB in total)", fontsize=9,
                 loc="left")
    ax.set_xlim(0, 1.5 * max(sent + recv) or 1.0)
    ax.legend(fontsize=7, loc="center right", framealpha=0.85)
    ax.grid(alpha=0.3, axis="x")
