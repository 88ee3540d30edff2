"""What every training mode shows on the terminal: the progress bar and the final summary."""

from __future__ import annotations

import sys


def progress_bar(total, initial, enabled):
    """The tqdm bar every mode shows (on stderr; only the writing rank enables it)."""
    from tqdm.auto import tqdm  # noqa: PLC0415
    return tqdm(total=total, initial=initial, disable=not enabled, unit="epoch", dynamic_ncols=True,
                file=sys.stderr)


def postfix(rec, metric) -> str:
    """The bar's text after an epoch: loss, validation metric, time split."""
    s = f"loss={rec['loss']:.4f}"
    if "val" in rec:
        s += f" val_{metric}={rec['val'].get(metric, float('nan')):.4f}"
    s += f" sample={rec['sample_s']:.1f}s compute={rec['compute_s']:.1f}s"
    if "eval_s" in rec:
        s += f" eval={rec['eval_s']:.1f}s"
    return s


def format_summary(result: dict, run_dir=None) -> str:
    """The console summary every mode prints at the end of a run."""
    metric = result["metric"]
    ran = result.get("epochs_run", result["epochs"])
    why = "time budget: stopped" if str(result.get("stopped")).startswith("time budget") \
        else "early stop"
    stopped = f" ({why} at {ran})" if ran < result["epochs"] else ""
    lines = [f"dataset {result['dataset']} ({result.get('mode', 'graphsaint')}): best epoch "
             f"{result['best_epoch']}/{result['epochs']}{stopped}, "
             f"wall {result['time']['wall_s']:.1f}s"]
    for split in ("val", "test"):
        m = result.get(split) or {}
        keys = [k for k in ("f1_micro", "f1_macro", "accuracy", "roc_auc", "hits@20", "hits@50",
                            "hits@100", "mrr") if k in m]
        lines.append(f"  {split:5s} " + "  ".join(f"{k}={m[k]:.4f}" for k in keys))
    other = result.get("test_data")
    if other:  # --test-data: say which graph "test" means, and the training graph's own score
        own = (other.get("training_graph_test") or {}).get(metric, float("nan"))
        lines.append(f"  test is on {other['source']} ({other['test_nodes']:,} nodes: "
                     f"{other['test_nodes_from']}); the training graph's test split: "
                     f"{metric}={own:.4f}")
    where = f"; run directory: {run_dir}" if run_dir is not None else ""
    lines.append(f"  test {metric} = {(result.get('test') or {}).get(metric, float('nan')):.4f}"
                 f"{where}")
    return "\n".join(lines)
