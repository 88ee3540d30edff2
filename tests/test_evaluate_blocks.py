"""The neighbourhood path of full-graph inference equals the layer-wise path."""

import numpy as np
import pytest
import torch

from scalegnn.errors import DataError
from scalegnn.features import SparseFeatures
from scalegnn.graph import Graph
from scalegnn.nn import build_model
from scalegnn.ops import SparseAdj
from scalegnn.engine.evaluate import full_graph_logits, layerwise_bytes


def _graph(n=300, m=1500, seed=0):
    rng = np.random.default_rng(seed)
    # a few hubs so that the degree cache holds rows that most blocks use
    src = np.concatenate([rng.integers(0, n, m), np.zeros(60, dtype=np.int64)])
    dst = np.concatenate([rng.integers(0, n, m), rng.integers(0, n, 60)])
    return Graph.from_edges(src, dst, n)


def _model(arch, hidden, aggr, in_dim=20, classes=5):
    torch.manual_seed(0)
    model = build_model(in_dim, classes, hidden=hidden, arch=arch, aggr=aggr, dropout=0.3)
    for p in model.parameters():   # non-trivial norm scales/offsets and biases
        if p.dim() == 1:
            p.data.uniform_(0.5, 1.5)
    return model.eval()


CASES = [("1-1", 16, "concat"), ("1-1", 24, "mean"), ("1-0-1-0", 16, "concat"),
         ("1-0-1-0", 8, "mean"), ("0-1", 12, "concat"), ("1", 8, "concat"), ("2-1", 8, "concat"),
         ("1-2", 8, "concat"), ("0-0", 8, "mean"), ("1-1-1", 8, "concat")]


@pytest.mark.parametrize("arch, hidden, aggr", CASES)
@pytest.mark.parametrize("cache_bytes", [0, 4 * 48 * 40])
@pytest.mark.parametrize("embeddings", [False, True])
def test_neighbourhood_equals_layerwise(arch, hidden, aggr, cache_bytes, embeddings):
    g = _graph()
    model = _model(arch, hidden, aggr)
    x = torch.randn(300, 20).numpy()
    ref = full_graph_logits(model, g, x, batch_rows=37, path="layerwise",
                            embeddings=embeddings)
    stats = {}
    out = full_graph_logits(model, g, x, batch_rows=37, path="neighbourhood",
                            embeddings=embeddings, block_bytes=4 * 3 * 48 * 40,
                            cache_bytes=cache_bytes, stats=stats)
    assert stats["path"] == "neighbourhood" and stats["blocks"] > 1
    assert out.shape == ref.shape
    torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("arch, aggr", [("1-1", "concat"), ("1-0-1-0", "mean")])
def test_sparse_features_and_memmap(tmp_path, arch, aggr):
    g = _graph(seed=1)
    model = _model(arch, 16, aggr, in_dim=30)
    rng = np.random.default_rng(3)
    x = (rng.random((300, 30)) < 0.1).astype(np.float32) * rng.standard_normal((300, 30),
                                                                              dtype=np.float32)
    import scipy.sparse as sp
    ref = full_graph_logits(model, g, x, batch_rows=50, path="layerwise")
    sparse = SparseFeatures(sp.csr_matrix(x))
    out = full_graph_logits(model, g, sparse, batch_rows=50, path="neighbourhood",
                            block_bytes=4 * 3 * 64 * 50)
    torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-5)
    np.save(tmp_path / "x.npy", x)
    mm = np.load(tmp_path / "x.npy", mmap_mode="r", allow_pickle=False)
    out = full_graph_logits(model, g, mm, batch_rows=50, path="neighbourhood",
                            block_bytes=4 * 3 * 64 * 50)
    torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-5)


def test_whole_graph_forward_reference():
    """Both paths against the model's own forward pass on the whole graph."""
    g = _graph(seed=2)
    adj = SparseAdj.from_graph(g.row_normalized(), g.transpose_permutation())
    model = _model("1-1", 16, "concat")
    x = torch.randn(300, 20)
    with torch.no_grad():
        ref = model(x, adj)
    out = full_graph_logits(model, g, x.numpy(), path="neighbourhood", block_bytes=20000)
    torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-5)


def test_auto_picks_by_budget():
    g = _graph()
    model = _model("1-1", 16, "concat")
    x = torch.randn(300, 20).numpy()
    need = layerwise_bytes(model, 300)
    stats = {}
    full_graph_logits(model, g, x, budget=need, stats=stats)
    assert stats["path"] == "layerwise"
    full_graph_logits(model, g, x, budget=need - 1, stats=stats)
    assert stats["path"] == "neighbourhood"


def test_layer_that_must_be_held_but_does_not_fit():
    g = _graph()
    model = _model("1-1-1", 16, "concat")   # layer 2's input must be held for layer 3's bases
    x = torch.randn(300, 20).numpy()
    with pytest.raises(DataError, match="layer 2"):
        full_graph_logits(model, g, x, path="neighbourhood", budget=4 * 300 * 32 - 1)
