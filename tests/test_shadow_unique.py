"""shaDow-GNN inference on unique rows: a batch whose features hold each node once
(``branch_batch(unique=True)``) gives bit-identical outputs to the per-appearance batch; the
first layer's ``X W`` then runs once per node (scopes overlap)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from scalegnn.config import Config
from scalegnn.features import DenseFeatures, SparseFeatures, Statistics
from scalegnn.ops import SparseAdj
from scalegnn.shadow.batch import branch_batch
from scalegnn.shadow.mode import EVAL_SEED, ShadowMode
from scalegnn.shadow.model import ShadowNet, unique_first_layer
from scalegnn.shadow.ppr import PPRExtractor
from test_train import planted

FEATURES = 40


def stores(x: np.ndarray):
    rng = np.random.default_rng(3)
    sparse = np.where(rng.random(x.shape) < 0.2, x, 0).astype(np.float32)
    stats = Statistics(sparse.mean(0).astype(np.float64), sparse.std(0).astype(np.float64) + 1)
    return {"dense": DenseFeatures(x), "csr": SparseFeatures(sp.csr_matrix(sparse)),
            "csr_standardized": SparseFeatures(sp.csr_matrix(sparse), statistics=stats)}


def inputs(b):
    inv = b.meta.get("inverse")
    return [(b.x, SparseAdj.from_graph(b.adj), torch.from_numpy(b.segment),
             torch.from_numpy(b.targets), None)
            + (() if inv is None else (torch.from_numpy(inv),))]


@pytest.mark.parametrize("store", ["dense", "csr", "csr_standardized"])
@pytest.mark.parametrize("hidden,arch", [(16, "1-1-1"), (16, "0-1"), (8, "2-1"),
                                         (64, "1-1")])   # 64 >= 40: (ÂX)W, expanded instead
def test_unique_rows_give_bit_identical_outputs(store, hidden, arch):
    ds = planted(n=300, f=FEATURES)
    subs = PPRExtractor(ds.graph, k=12).extract(np.arange(0, 300, 3), seed=0)
    assert np.unique(subs.nodes).size < subs.nodes.size        # the scopes overlap
    feats = stores(ds.features.dense_rows(np.arange(300)))[store]
    torch.manual_seed(0)
    net = ShadowNet(FEATURES, 3, hidden=hidden, arch=arch, readout="center+mean",
                    dropout=0.3).eval()
    plain = branch_batch(subs, feats, "sym")
    uniq = branch_batch(subs, feats, "sym", unique=True)
    assert uniq.x.shape[0] == np.unique(subs.nodes).size
    with torch.no_grad():
        a, b = net(inputs(plain)), net(inputs(uniq))
    assert torch.equal(a, b)


def test_first_layer_declines_where_numbers_would_change():
    ds = planted(n=120, f=FEATURES)
    subs = PPRExtractor(ds.graph, k=8).extract(np.arange(10), seed=0)
    b = branch_batch(subs, ds.features, unique=True)
    inv, adj = torch.from_numpy(b.meta["inverse"]), SparseAdj.from_graph(b.adj)
    net = ShadowNet(FEATURES, 3, hidden=16, arch="1-1", dropout=0.5)
    layer = net.backbones[0].layers[0]
    assert unique_first_layer(layer, b.x, inv, adj) is None          # training: dropout masks
    layer.eval()
    assert unique_first_layer(layer, b.x, inv, adj) is not None
    wide = ShadowNet(FEATURES, 3, hidden=64, arch="1-1").eval().backbones[0].layers[0]
    assert unique_first_layer(wide, b.x, inv, adj) is None           # (ÂX)W first


def test_mode_scores_equal_the_per_appearance_batches():
    ds = planted(n=300, f=FEATURES)
    cfg = Config()
    cfg.network.update(dim=16, arch="1-1-1")
    cfg.params.update(dropout=0.2, transductive=True)
    cfg.phases = [{"end": 1, "sampler": "full"}]
    cfg.sections["shadow"] = {"extractors": [{"kind": "ppr", "k": 16}], "readout": "center+mean",
                              "adj_norm": "sym", "eval_batch_size": 64, "cache_dir": "none"}
    mode = ShadowMode(ds, cfg.validate(), seed=0)
    torch.manual_seed(0)
    model = mode.build_model(cfg.network, cfg.params).eval()
    idx = np.asarray(ds.val_idx, dtype=np.int64)
    new = mode.scores(model, idx)
    with torch.no_grad():
        old = torch.cat([model.predict(mode.forward(model, mode._make(
            idx[s:s + 64], mode.eval_extractors, EVAL_SEED))) for s in range(0, idx.size, 64)])
    assert torch.equal(new, old)
