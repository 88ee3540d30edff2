"""Synthetic generators against slow references and the properties the brief asks for."""

import numpy as np
import pytest
import torch

from scalegnn.data import _build, _rmat, load_dataset
from scalegnn.data.synthetic import (SYNTHETIC_DEFAULTS, kronecker_dataset, kronecker_graph,
                                     planted_dataset)
from scalegnn.graph import Graph


def _kernel_edges(seed, start, count, scale, perm, a=0.57, b=0.19, c=0.19):
    s = np.empty(count, np.int64)
    d = np.empty(count, np.int64)
    _rmat.rmat_edges(np.uint64(_rmat.splitmix64_py(seed)), start, count, scale,
                     *_rmat.thresholds(a, b, c), perm, s, d)
    return s, d


@pytest.mark.parametrize("scale", [1, 7, 10])
def test_rmat_kernel_matches_reference(scale):
    perm = np.random.default_rng(0).permutation(1 << scale)
    s, d = _kernel_edges(11, 1000, 300, scale, perm)
    rs, rd = _rmat.rmat_edges_reference(11, 1000, 300, scale, 0.57, 0.19, 0.19, perm)
    np.testing.assert_array_equal(s, rs)
    np.testing.assert_array_equal(d, rd)


def test_rmat_chunking_does_not_change_edges():
    perm = np.arange(1 << 12)
    s, d = _kernel_edges(3, 0, 5000, 12, perm)
    s2 = np.concatenate([_kernel_edges(3, a, b - a, 12, perm)[0]
                         for a, b in ((0, 1234), (1234, 1235), (1235, 5000))])
    np.testing.assert_array_equal(s, s2)


def test_rmat_quadrant_frequencies():
    """Top bit of (src, dst) follows the initiator: P(0,0)=a, P(0,1)=b, P(1,0)=c, P(1,1)=d."""
    m = 200_000
    s, d = _kernel_edges(5, 0, m, 10, np.arange(1 << 10), a=0.5, b=0.2, c=0.1)
    top_s, top_d = s >> 9, d >> 9
    freq = [np.mean((top_s == i) & (top_d == j)) for i, j in ((0, 0), (0, 1), (1, 0), (1, 1))]
    np.testing.assert_allclose(freq, [0.5, 0.2, 0.1, 0.2], atol=0.005)


def test_kronecker_graph_equals_from_edges_reference():
    scale, ef, seed = 11, 6, 4
    n, m = 1 << scale, ef << scale
    perm = np.random.default_rng([seed, 1]).permutation(n).astype(np.int32)
    s, d = _kernel_edges(seed, 0, m, scale, perm)
    ref = Graph.from_edges(s, d, n, symmetrize=True, deduplicate=True, remove_self_loops=True)
    g = kronecker_graph(scale, ef, seed=seed, chunk_edges=1000)  # many chunks
    np.testing.assert_array_equal(g.indptr, ref.indptr)
    np.testing.assert_array_equal(g.indices, ref.indices)
    assert g.indices.dtype == np.int32
    assert g.is_symmetric() and g.is_sorted()
    src, dst = g.edge_index()
    assert not np.any(src == dst)
    assert g.num_edges <= 2 * m
    # scipy reference of the same pattern
    import scipy.sparse as sp
    a = sp.coo_matrix((np.ones(m), (s, d)), shape=(n, n)).tocsr()
    a = ((a + a.T) > 0).astype(np.int8).tolil()
    a.setdiag(0)
    a = a.tocsr()
    a.eliminate_zeros()
    a.sort_indices()
    np.testing.assert_array_equal(g.indptr, a.indptr)
    np.testing.assert_array_equal(g.indices, a.indices)


def test_kronecker_seeded_and_skewed():
    g1 = kronecker_graph(12, 8, seed=1)
    g2 = kronecker_graph(12, 8, seed=1)
    g3 = kronecker_graph(12, 8, seed=2)
    np.testing.assert_array_equal(g1.indices, g2.indices)
    assert not np.array_equal(g1.indptr, g3.indptr)
    deg = g1.degrees()
    assert deg.max() > 10 * deg.mean()  # heavy-tailed, as R-MAT should be


def test_csr_from_edge_chunks_matches_from_edges():
    rng = np.random.default_rng(0)
    s, d = rng.integers(0, 50, 400), rng.integers(0, 50, 400)
    for sym, dedupe, loops in ((True, True, True), (False, False, False), (False, True, False)):
        g = _build.csr_from_edge_chunks(lambda i: (s[i * 100:(i + 1) * 100], d[i * 100:(i + 1) * 100]),
                                        4, 50, symmetrize=sym, deduplicate=dedupe,
                                        remove_self_loops=loops)
        ref = Graph.from_edges(s, d, 50, symmetrize=sym, deduplicate=dedupe,
                               remove_self_loops=loops)
        np.testing.assert_array_equal(g.indptr, ref.indptr)
        np.testing.assert_array_equal(g.indices, ref.indices)


def test_kronecker_dataset_defaults():
    ds = load_dataset("kronecker:10:8", seed=3)
    assert ds.num_nodes == 1024 and ds.num_features == 50 and ds.num_classes == 121
    assert ds.multilabel and ds.metric == "f1_micro"
    n = ds.num_nodes
    assert (ds.train_idx.size, ds.val_idx.size) == (int(0.66 * n), int(0.12 * n))
    assert ds.train_idx.size + ds.val_idx.size + ds.test_idx.size == n
    again = kronecker_dataset(10, 8, seed=3)
    np.testing.assert_array_equal(ds.features, again.features)
    np.testing.assert_array_equal(ds.labels, again.labels)
    assert 0.1 < ds.labels.mean() < 0.5
    ds2 = load_dataset("kronecker:9:4:features=7,labels=3,seed=1")
    assert (ds2.num_features, ds2.num_classes) == (7, 3)


# ------------------------------------------------------------------ planted partition
def _fit_eval(x, y, tr, te, multilabel, steps=100):
    """Logistic regression (softmax or per-label sigmoid) by L-BFGS; test accuracy / F1-micro."""
    torch.manual_seed(0)
    mu, sd = x[tr].mean(0), x[tr].std(0) + 1e-6
    x = torch.from_numpy((x - mu) / sd).float()
    yt = torch.from_numpy(y)
    out = y.shape[1] if multilabel else int(y.max()) + 1
    w = torch.zeros(x.shape[1], out, requires_grad=True)
    b = torch.zeros(out, requires_grad=True)
    opt = torch.optim.LBFGS([w, b], max_iter=steps, line_search_fn="strong_wolfe")
    loss_fn = (torch.nn.functional.binary_cross_entropy_with_logits if multilabel
               else torch.nn.functional.cross_entropy)

    def closure():
        opt.zero_grad()
        loss = loss_fn(x[tr] @ w + b, yt[tr]) + 1e-4 * (w ** 2).sum()
        loss.backward()
        return loss

    opt.step(closure)
    with torch.no_grad():
        z = x[te] @ w + b
    if not multilabel:
        return (z.argmax(1) == yt[te]).float().mean().item()
    pred, true = (z > 0).numpy(), y[te] > 0.5
    tp = np.sum(pred & true)
    return 2 * tp / (pred.sum() + true.sum())


@pytest.mark.parametrize("multilabel", [False, True])
def test_planted_labels_need_the_graph(multilabel):
    """LR on own features vs LR on [x, mean of neighbours' x]: the graph adds >= 10 points."""
    ds = load_dataset("synthetic") if not multilabel else \
        planted_dataset(multilabel=True, noise=4.0, seed=0)
    a = ds.graph.row_normalized().to_scipy()
    x = ds.features
    mlp = _fit_eval(x, ds.labels, ds.train_idx, ds.test_idx, multilabel)
    gnn = _fit_eval(np.hstack([x, a @ x]), ds.labels, ds.train_idx, ds.test_idx, multilabel)
    assert gnn >= mlp + 0.10, (mlp, gnn)
    assert mlp > (0.2 if not multilabel else 0.3)  # own features are weakly informative


def test_synthetic_default_shape_and_determinism():
    ds = load_dataset("synthetic")
    assert ds.num_nodes == SYNTHETIC_DEFAULTS["nodes"]
    assert ds.num_features == 32 and ds.num_classes == 8 and ds.metric == "accuracy"
    assert 10 <= ds.graph.degrees().mean() <= 15
    assert ds.graph.is_symmetric()
    again = load_dataset("synthetic")
    np.testing.assert_array_equal(ds.features, again.features)
    np.testing.assert_array_equal(ds.graph.indices, again.graph.indices)
    other = load_dataset("synthetic", seed=1)
    assert not np.array_equal(ds.labels, other.labels)
    # homophily close to p_in + (1 - p_in) / classes
    src, dst = ds.graph.edge_index()
    h = np.mean(ds.labels[src] == ds.labels[dst])
    assert abs(h - (0.7 + 0.3 / 8)) < 0.03


def test_planted_options_spec():
    ds = load_dataset("planted:nodes=500,classes=3,features=4,degree=6,multilabel=1,labels=5")
    assert ds.num_nodes == 500 and ds.num_features == 4 and ds.labels.shape == (500, 5)
    assert ds.metric == "f1_micro"


def test_kronecker_same_for_any_thread_count():
    import numba
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        g1 = kronecker_graph(11, 4, seed=9)
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
        g2 = kronecker_graph(11, 4, seed=9)
    finally:
        numba.set_num_threads(before)
    np.testing.assert_array_equal(g1.indptr, g2.indptr)
    np.testing.assert_array_equal(g1.indices, g2.indices)


def test_shrink_in_place_or_copy():
    a = np.arange(10, dtype=np.int32)
    b = _build.shrink(a, 4)
    np.testing.assert_array_equal(b, [0, 1, 2, 3])
    view = np.arange(10, dtype=np.int32)[2:]
    c = _build.shrink(view, 3)  # a view cannot be resized: copied instead
    np.testing.assert_array_equal(c, [2, 3, 4])
    assert c.base is None


@pytest.mark.parametrize("spec", ["planted:nodes=300,classes=3,multilabel=true,p_in=0.33333",
                                  "kronecker:8:4:classes=2,seed=3", "kronecker:8:4"])
def test_generated_source_regenerates_the_dataset(spec):
    """``Dataset.source`` of a generated graph is a spec that regenerates it (the load seed and
    every default included), so ``load_run`` of a run trained from Python finds its data."""
    a = load_dataset(spec, seed=2)
    b = load_dataset(a.source)
    assert a.name == b.name and np.array_equal(a.labels, b.labels)
    assert np.array_equal(a.graph.indices, b.graph.indices)
    assert np.array_equal(np.asarray(a.features), np.asarray(b.features))
