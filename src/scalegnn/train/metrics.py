"""Classification metrics (no scikit-learn needed): F1-micro/macro, accuracy, ROC-AUC.

``compute_metrics(y_true, scores, multilabel)`` takes labels (int class ids, or a 0/1 matrix for
multi-label tasks) and scores (probabilities or logits, one column per class) and returns a plain
dict. Single-label predictions are the arg-max; multi-label predictions threshold the
probabilities at 0.5 (GraphSAINT's convention). ROC-AUC is reported for binary tasks (score of
class 1) and, for multi-label tasks, as the mean over labels that have both classes present.
"""

from __future__ import annotations

import numpy as np


def _f1_from_counts(tp, fp, fn):
    denom = 2 * tp + fp + fn
    return np.where(denom > 0, 2 * tp / np.maximum(denom, 1), 0.0)


def f1_scores(true_onehot: np.ndarray, pred_onehot: np.ndarray) -> tuple[float, float]:
    """(micro, macro) F1 over a 0/1 indicator matrix (rows = samples, cols = classes)."""
    t = true_onehot.astype(bool)
    p = pred_onehot.astype(bool)
    tp = (t & p).sum(0).astype(np.float64)
    fp = (~t & p).sum(0).astype(np.float64)
    fn = (t & ~p).sum(0).astype(np.float64)
    micro = float(_f1_from_counts(tp.sum(), fp.sum(), fn.sum()))
    present = (t.sum(0) + p.sum(0)) > 0  # sklearn-style macro over labels seen in truth or prediction
    macro = float(_f1_from_counts(tp, fp, fn)[present].mean()) if present.any() else 0.0
    return micro, macro


def roc_auc(y_true: np.ndarray, score: np.ndarray) -> float:
    """Area under the ROC curve for binary labels (Mann–Whitney U with tie-averaged ranks)."""
    y = np.asarray(y_true).astype(bool)
    s = np.asarray(score, dtype=np.float64)
    n_pos = int(y.sum())
    n_neg = y.size - n_pos
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    order = np.argsort(s, kind="mergesort")
    ranks = np.empty(s.size, dtype=np.float64)
    sorted_s = s[order]
    # average ranks over ties
    starts = np.flatnonzero(np.r_[True, sorted_s[1:] != sorted_s[:-1]])
    ends = np.r_[starts[1:], s.size]
    avg = (starts + ends + 1) / 2.0  # 1-based average rank of each tie group
    ranks[order] = np.repeat(avg, ends - starts)
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def compute_metrics(y_true: np.ndarray, scores: np.ndarray, multilabel: bool) -> dict:
    """All metrics for one split. ``scores``: (n, C) probabilities or logits."""
    scores = np.asarray(scores)
    y_true = np.asarray(y_true)
    n, c = scores.shape
    if n == 0:
        return {}
    if multilabel:
        pred = scores > (0.5 if scores.min() >= 0 and scores.max() <= 1 else 0.0)
        micro, macro = f1_scores(y_true, pred)
        aucs = [roc_auc(y_true[:, j], scores[:, j]) for j in range(c)]
        aucs = [a for a in aucs if not np.isnan(a)]
        return {"f1_micro": micro, "f1_macro": macro,
                "accuracy": float((pred == y_true.astype(bool)).all(1).mean()),
                "roc_auc": float(np.mean(aucs)) if aucs else float("nan")}
    pred = scores.argmax(1)
    onehot_t = np.zeros((n, c), dtype=bool)
    onehot_t[np.arange(n), y_true] = True
    onehot_p = np.zeros((n, c), dtype=bool)
    onehot_p[np.arange(n), pred] = True
    micro, macro = f1_scores(onehot_t, onehot_p)
    out = {"f1_micro": micro, "f1_macro": macro, "accuracy": float((pred == y_true).mean())}
    if c == 2:
        out["roc_auc"] = roc_auc(y_true == 1, scores[:, 1] - scores[:, 0])
    return out
