"""Plots of what happened in a run: ``report.png`` beside ``metrics.jsonl``.

Top: training loss per epoch; middle: validation metrics; bottom: time per epoch split into
sampling, compute and evaluation. Needs matplotlib (``pip install scalegnn[plot]``); without it,
:func:`plot_run` returns None and training is unaffected.
"""

from __future__ import annotations

from pathlib import Path

from scalegnn.errors import DataError
from scalegnn.io import atomic_open
from scalegnn.train.rundir import read_metrics_file


def plot_run(run_dir, out: str | None = None):
    """Write ``report.png`` for the run in ``run_dir``; return its path (None without matplotlib)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    run_dir = Path(run_dir)
    path = run_dir / "metrics.jsonl"
    if not path.is_file():
        raise DataError(f"{path}: not found (is {run_dir} a run directory?)")
    recs = read_metrics_file(path)
    if not recs:
        return None
    fig, axes = plt.subplots(3, 1, figsize=(7, 8), sharex=True)
    ep = [r["epoch"] for r in recs]
    axes[0].plot(ep, [r.get("loss", float("nan")) for r in recs], color="tab:blue")
    axes[0].set_ylabel("training loss")
    evals = [r for r in recs if "val" in r]
    for key in sorted({k for r in evals for k in r["val"]}):
        axes[1].plot([r["epoch"] for r in evals], [r["val"].get(key) for r in evals],
                     marker=".", label=key)
    axes[1].set_ylabel("validation")
    if evals:
        axes[1].legend(fontsize=8)
    bottom = [0.0] * len(recs)
    for key, color in (("sample_s", "tab:orange"), ("compute_s", "tab:green"), ("eval_s", "tab:red")):
        vals = [r.get(key, 0.0) for r in recs]
        axes[2].bar(ep, vals, bottom=bottom, color=color, label=key[:-2])
        bottom = [b + v for b, v in zip(bottom, vals)]
    axes[2].set_ylabel("seconds")
    axes[2].set_xlabel("epoch")
    axes[2].legend(fontsize=8)
    fig.suptitle(run_dir.name)
    fig.tight_layout()
    target = Path(out) if out else run_dir / "report.png"
    with atomic_open(target, "wb") as f:
        fig.savefig(f, format="png", dpi=100)
    plt.close(fig)
    return target
