"""Metrics against slow, obviously correct references."""

import itertools

import numpy as np
import pytest

from scalegnn.engine.metrics import compute_metrics, f1_scores, roc_auc


def auc_bruteforce(y, s):
    pos, neg = s[y], s[~y]
    total = sum(1.0 if p > q else 0.5 if p == q else 0.0 for p, q in itertools.product(pos, neg))
    return total / (len(pos) * len(neg))


def f1_reference(t, p):
    """Per-class F1 by explicit counting; micro from pooled counts."""
    tps = fps = fns = 0
    per = []
    for j in range(t.shape[1]):
        tp = int(np.sum(t[:, j] & p[:, j]))
        fp = int(np.sum(~t[:, j] & p[:, j]))
        fn = int(np.sum(t[:, j] & ~p[:, j]))
        tps, fps, fns = tps + tp, fps + fp, fns + fn
        if tp + fp + fn:
            per.append(2 * tp / (2 * tp + fp + fn))
    return 2 * tps / (2 * tps + fps + fns), float(np.mean(per))


def test_roc_auc_matches_pairwise_count_with_ties():
    rng = np.random.default_rng(0)
    y = rng.random(60) < 0.4
    s = np.round(rng.random(60), 1)  # many ties
    assert roc_auc(y, s) == pytest.approx(auc_bruteforce(y, s))


def test_f1_micro_macro_match_reference():
    rng = np.random.default_rng(1)
    t = rng.random((50, 6)) < 0.3
    p = rng.random((50, 6)) < 0.3
    assert f1_scores(t, p) == pytest.approx(f1_reference(t, p))


def test_single_label_micro_f1_equals_accuracy_and_binary_auc():
    rng = np.random.default_rng(2)
    y = rng.integers(0, 2, 40)
    scores = rng.random((40, 2))
    m = compute_metrics(y, scores, multilabel=False)
    assert m["f1_micro"] == pytest.approx(m["accuracy"])
    assert m["accuracy"] == pytest.approx(np.mean(scores.argmax(1) == y))
    assert m["roc_auc"] == pytest.approx(auc_bruteforce(y == 1, scores[:, 1] - scores[:, 0]))


def test_multilabel_thresholds_probabilities_at_half():
    y = np.array([[1, 0], [0, 1], [1, 1]])
    probs = np.array([[0.9, 0.2], [0.4, 0.6], [0.7, 0.1]])
    m = compute_metrics(y, probs, multilabel=True)
    # predictions [[1,0],[0,1],[1,0]]: tp=3 fp=0 fn=1 -> micro 6/7
    assert m["f1_micro"] == pytest.approx(6 / 7)
