"""Classification metrics (no scikit-learn needed): F1-micro/macro, accuracy, ROC-AUC; and the
link-prediction ranking metrics Hits@K and MRR (OGB's definitions, see :func:`hits_at_k`).

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


# ---------------------------------------------------------------------- link prediction
def _link_scores(pos_scores, neg_scores):
    pos = np.asarray(pos_scores, dtype=np.float64).reshape(-1)
    neg = np.asarray(neg_scores, dtype=np.float64)
    if neg.ndim == 2 and neg.shape[0] != pos.shape[0]:
        raise ValueError(f"per-positive negative scores have {neg.shape[0]} rows, expected "
                         f"{pos.shape[0]} (one per positive)")
    if neg.ndim not in (1, 2):
        raise ValueError(f"negative scores must be 1-D (shared) or 2-D (per positive), got "
                         f"shape {neg.shape}")
    return pos, neg


def link_ranks(pos_scores, neg_scores) -> np.ndarray:
    """Rank of each positive among its negatives, ties averaged (OGB's ``_eval_mrr``).

    ``rank_i = 1 + #{negatives > pos_i} + 0.5 * #{negatives == pos_i}``: the mean of the
    optimistic and the pessimistic rank, so a constant scorer earns no credit for ties.
    ``neg_scores`` is 1-D (one set of negatives shared by every positive, ogbl-collab style) or
    2-D of shape (P, K) (row i holds positive i's own negatives, ogbl-citation2 style).
    """
    pos, neg = _link_scores(pos_scores, neg_scores)
    if neg.ndim == 1:
        srt = np.sort(neg)
        below_or_equal = np.searchsorted(srt, pos, side="right")
        below = np.searchsorted(srt, pos, side="left")
        greater = srt.size - below_or_equal
        equal = below_or_equal - below
    else:
        col = pos[:, None]
        greater = (neg > col).sum(1)
        equal = (neg == col).sum(1)
    return 1.0 + greater + 0.5 * equal


def hits_at_k(pos_scores, neg_scores, k: int) -> float:
    """Hits@K: the fraction of positive edges ranked within the top K.

    Shared (1-D) negatives, OGB's ogbl-collab ``_eval_hits``: the fraction of positives scored
    *strictly* above the K-th highest negative score (ties with it count as misses); 1.0 when
    there are fewer than K negatives. Per-positive (2-D) negatives, OGB's ogbl-citation2 rule:
    the fraction of positives whose tie-averaged :func:`link_ranks` is <= K.
    """
    if int(k) < 1:
        raise ValueError(f"hits_at_k: k must be >= 1, got {k}")
    pos, neg = _link_scores(pos_scores, neg_scores)
    if pos.size == 0:
        return float("nan")
    if neg.ndim == 2:
        return float((link_ranks(pos, neg) <= k).mean())
    if neg.size < k:
        return 1.0
    kth = np.partition(neg, neg.size - k)[neg.size - k]  # K-th highest
    return float((pos > kth).mean())


def mrr(pos_scores, neg_scores_per_pos) -> float:
    """Mean reciprocal rank: mean over positives of ``1 / link_ranks`` (ties averaged, as OGB).

    With shared (1-D) negatives every positive is ranked against all of them; with a (P, K)
    matrix positive i is ranked against row i only.
    """
    ranks = link_ranks(pos_scores, neg_scores_per_pos)
    return float((1.0 / ranks).mean()) if ranks.size else float("nan")


def link_metrics(pos_scores, neg_scores, ks=(20, 50, 100)) -> dict:
    """``{"hits@20": ..., "hits@50": ..., "hits@100": ..., "mrr": ...}`` for one split."""
    out = {f"hits@{int(k)}": hits_at_k(pos_scores, neg_scores, int(k)) for k in ks}
    out["mrr"] = mrr(pos_scores, neg_scores)
    return out
