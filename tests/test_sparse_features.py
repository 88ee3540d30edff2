"""CSR input features (scalegnn.features) against the dense path they replace."""

import json

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from scalegnn.config import Config
from scalegnn.data.dataset import Dataset
from scalegnn.data.transforms import standardize_features
from scalegnn.errors import ConfigError, DataError
from scalegnn.features import (SPARSE_MAX_DENSITY, DenseFeatures, SparseFeatures,
                               as_feature_store, choose_representation)
from scalegnn.graph import Graph
from scalegnn.nn.models import build_model
from scalegnn.ops import SparseAdj
from scalegnn.engine.evaluate import full_graph_logits


def sparse_dataset(n=120, f=40, density=0.06, classes=3, seed=0):
    """A small graph with binary CSR features (some columns constant zero: std 0 -> 1)."""
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, n, 5 * n), rng.integers(0, n, 5 * n)
    g = Graph.from_edges(src, dst, n)
    x = sp.random(n, f, density=density, format="csr", dtype=np.float32, random_state=rng)
    x.data[:] = 1.0
    y = rng.integers(0, classes, n).astype(np.int64)
    y[:classes] = np.arange(classes)
    perm = rng.permutation(n)
    return Dataset(g, SparseFeatures(x), y, perm[:n // 2], perm[n // 2:3 * n // 4],
                   perm[3 * n // 4:], name="sparse-test", metric="accuracy").validate()


def dense_twin(ds):
    return Dataset(ds.graph, ds.features.to_dense(), ds.labels, ds.train_idx, ds.val_idx,
                   ds.test_idx, name=ds.name, metric=ds.metric)


# ---------------------------------------------------------------- the matrix itself
def test_roundtrip_rows_and_standardization_match_dense():
    ds = sparse_dataset()
    dense = ds.features.to_dense()
    assert np.array_equal(SparseFeatures.from_dense(dense, chunk=7).to_dense(), dense)
    rows = np.array([5, 0, 77, 5])
    assert np.array_equal(ds.features[rows].to_dense(), dense[rows])
    assert np.array_equal(ds.features[3:9].to_dense(), dense[3:9])
    std_sparse = standardize_features(ds)
    std_dense = standardize_features(dense_twin(ds))
    assert isinstance(std_sparse.features, SparseFeatures) and std_sparse.meta["standardized"]
    np.testing.assert_allclose(np.asarray(std_sparse.features), std_dense.features,
                               rtol=1e-5, atol=1e-5)
    assert std_sparse.features.nnz == ds.features.nnz      # never densified
    np.testing.assert_allclose(np.asarray(std_sparse.features[rows]), std_dense.features[rows],
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("standardized", [False, True])
def test_product_and_weight_gradient_equal_dense_autograd(standardized):
    ds = sparse_dataset(n=90, f=30)
    x = ds.features.standardize(ds.train_idx) if standardized else ds.features
    xd = torch.from_numpy(np.asarray(x)).double()
    w1 = torch.randn(30, 7, dtype=torch.float64, requires_grad=True)
    w2 = w1.detach().clone().requires_grad_(True)
    g = torch.randn(90, 7, dtype=torch.float64)
    ys, yd = x @ w1, xd @ w2
    torch.testing.assert_close(ys, yd, rtol=1e-6, atol=1e-5)
    ys.backward(g)
    yd.backward(g)
    torch.testing.assert_close(w1.grad, w2.grad, rtol=1e-6, atol=1e-5)
    rows = x[np.arange(0, 90, 3)]                                # gathered rows, same product
    torch.testing.assert_close(rows @ w1.detach(), yd.detach()[::3], rtol=1e-6, atol=1e-5)


def test_gradcheck_of_the_folded_product():
    x = sparse_dataset(n=20, f=9, density=0.2).features
    x = x.standardize(np.arange(12))
    w = torch.randn(9, 4, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda w: x @ w, (w,))


def test_dropout_drops_stored_entries_only_and_follows_the_seed():
    x = sparse_dataset(n=400, f=50, density=0.1).features.standardize(np.arange(200))
    torch.manual_seed(1)
    a = torch.nn.functional.dropout(x, 0.3, training=True)   # nn.Dropout's path
    torch.manual_seed(1)
    b = torch.nn.Dropout(0.3)(x)
    assert np.array_equal(a.csr.data, b.csr.data)
    assert np.array_equal(a.csr.indices, x.csr.indices)      # pattern kept, values zeroed
    kept = a.csr.data != 0
    np.testing.assert_allclose(a.csr.data[kept], x.csr.data[kept] / 0.7, rtol=1e-6)
    assert abs((~kept).mean() - 0.3) < 0.03
    assert np.array_equal(a.mean, x.mean) and np.array_equal(a.inv_std, x.inv_std)  # offset kept
    from scalegnn.nn.dropout import FastDropout
    torch.manual_seed(1)
    assert np.array_equal(FastDropout(0.3)(x).csr.data, a.csr.data)
    assert torch.nn.functional.dropout(x, 0.3, training=False) is x


def test_other_torch_ops_are_refused_by_name():
    x = sparse_dataset().features
    with pytest.raises(TypeError, match="does not support"):
        torch.relu(x)


# ---------------------------------------------------------------- every model family
FAMILIES = [("saint", {"arch": "1-0-1"}), ("saint", {"arch": "2-1", "aggr": "mean"}),
            ("saint", {"arch": "0-1"}), ("gcn", {"arch": "1-0-1"}), ("gat", {"layers": 2}),
            ("mixhop", {"layers": 2, "powers": "0-1-2"}), ("jk", {"layers": 2}),
            ("gin", {"layers": 2}), ("gin", {"layers": 1, "hidden": 64})]


@pytest.mark.parametrize("family,opts", FAMILIES)
def test_every_family_sparse_folded_equals_dense_standardized(family, opts):
    ds = sparse_dataset()
    sp_ds, de_ds = standardize_features(ds), standardize_features(dense_twin(ds))
    opts = {"hidden": 16, **opts}
    torch.manual_seed(0)
    model = build_model(ds.num_features, ds.num_classes, model=family, **opts).double()
    adj = SparseAdj.from_graph(ds.graph.row_normalized(), dtype=np.float64)
    xd = torch.from_numpy(np.asarray(de_ds.features)).double()
    model.eval()
    out_d = model(xd, adj)
    out_s = model(sp_ds.features, adj)
    torch.testing.assert_close(out_s, out_d, rtol=1e-5, atol=1e-5)
    model.train()   # dropout 0: the same graph; gradients of every weight must agree
    grads = []
    for x in (xd, sp_ds.features):
        model.zero_grad()
        model(x, adj).square().sum().backward()
        grads.append([p.grad.clone() for p in model.parameters() if p.grad is not None])
    assert len(grads[0]) == len(grads[1])
    for a, b in zip(*grads):
        torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-5)
    # layer-wise full-graph inference takes the CSR matrix as it is
    torch.testing.assert_close(
        full_graph_logits(model, ds.graph, sp_ds.features, batch_rows=37, adj=adj),
        full_graph_logits(model, ds.graph, xd, batch_rows=37, adj=adj), rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- representation choice
def test_auto_keeps_csr_when_sparse_and_dense_otherwise():
    ds = sparse_dataset()
    assert isinstance(choose_representation(ds.features, "auto"), SparseFeatures)
    dense = ds.features.to_dense()
    assert isinstance(choose_representation(dense, "auto"), SparseFeatures)  # 6% <= threshold
    full = np.ones((10, 4), np.float32)
    assert choose_representation(full, "auto").array is full           # kept, not copied
    assert isinstance(choose_representation(ds.features, "dense"), DenseFeatures)
    assert isinstance(choose_representation(full, "sparse"), SparseFeatures)
    assert SPARSE_MAX_DENSITY < 0.5
    with pytest.raises(ConfigError, match="params.feature_format"):
        choose_representation(full, "csr")


def test_config_validates_feature_format():
    cfg = Config()
    cfg.params["feature_format"] = "sparse"
    cfg.validate()
    cfg.params["feature_format"] = "compressed"
    with pytest.raises(ConfigError, match="params.feature_format"):
        cfg.validate()


def test_nan_in_csr_values_is_a_data_error():
    ds = sparse_dataset()
    bad = ds.features.csr.copy()
    bad.data[3] = np.nan
    with pytest.raises(DataError, match="NaN or inf"):
        Dataset(ds.graph, SparseFeatures(bad), ds.labels, ds.train_idx, ds.val_idx,
                ds.test_idx, name="bad").validate()


def test_info_reports_csr_storage_and_bytes():
    info = sparse_dataset().info()
    assert info["feature_storage"].startswith("csr")
    assert info["bytes"]["features"] < 120 * 40 * 4


# ---------------------------------------------------------------- loaders and batches
def test_json_features_load_as_csr(tmp_path):
    from scalegnn.data.csv import read_json_features
    p = tmp_path / "f.json"
    p.write_text(json.dumps({"0": [1, 3, 3], "2": [0], "1": []}))
    x = read_json_features(p, 4)
    ref = np.zeros((4, 4), np.float32)
    ref[0, [1, 3]] = 1
    ref[2, 0] = 1
    assert isinstance(x, SparseFeatures) and np.array_equal(x.to_dense(), ref)


def test_gnn_benchmark_npz_attr_stays_csr(tmp_path):
    from scalegnn.data.npz import load_gnn_benchmark
    ds = sparse_dataset()
    a = ds.graph.to_scipy().tocsr()
    x = ds.features.csr
    np.savez(tmp_path / "g.npz", adj_data=a.data, adj_indices=a.indices, adj_indptr=a.indptr,
             adj_shape=a.shape, attr_data=x.data, attr_indices=x.indices, attr_indptr=x.indptr,
             attr_shape=x.shape, labels=ds.labels)
    got = load_gnn_benchmark(tmp_path / "g.npz")
    assert isinstance(got.features, SparseFeatures)
    assert np.array_equal(got.features.to_dense(), ds.features.to_dense())


def test_loader_batches_carry_csr_rows():
    from scalegnn.sampling import GraphSAINTLoader
    ds = sparse_dataset(n=200)
    loader = GraphSAINTLoader(ds, "rw", {"num_root": 20, "depth": 2}, coverage=2,
                              pool_depth=0, transductive=True)
    b = loader.next_batch()
    assert isinstance(b.x, SparseFeatures)
    assert np.array_equal(b.x.to_dense(), ds.features.to_dense()[b.nodes])
    assert b.to("cpu").x is b.x
    loader.close()
    dense = as_feature_store(ds.features.to_dense()).gather(b.nodes)
    assert isinstance(dense, torch.Tensor) and torch.equal(dense, torch.from_numpy(
        b.x.to_dense()))


def test_shadow_branch_batch_and_appended_label_columns():
    from scalegnn.features import append_columns
    from scalegnn.shadow.batch import branch_batch
    from scalegnn.shadow.extract import KHopExtractor
    ds = standardize_features(sparse_dataset())
    subs = KHopExtractor(ds.graph, depth=2, budget=5).extract(np.array([0, 7, 9]), seed=0)
    b = branch_batch(subs, ds.features)
    assert isinstance(b.x, SparseFeatures)
    np.testing.assert_allclose(np.asarray(b.x), np.asarray(ds.features)[subs.nodes], atol=1e-6)
    extra = torch.eye(b.num_nodes, 3)
    both = append_columns(b.x, extra)
    np.testing.assert_allclose(np.asarray(both),
                               np.hstack([np.asarray(b.x), extra.numpy()]), atol=1e-6)


@pytest.mark.parametrize("fmt", ["sparse", "dense"])
def test_training_runs_on_either_representation(tmp_path, fmt):
    from scalegnn.train.trainer import Trainer
    cfg = Config()
    cfg.phases = [{"end": 2, "sampler": "rw", "num_root": 30, "depth": 2}]
    cfg.network.update(dim=16, arch="1-0")
    cfg.params.update(sample_coverage=3, transductive=True, dropout=0.2, feature_format=fmt)
    cfg.validate()
    res = Trainer(sparse_dataset(n=200), cfg, tmp_path / "run", seed=0, progress=False).fit()
    assert 0.0 <= res["test"]["accuracy"] <= 1.0


def test_sparse_and_dense_training_match_without_dropout(tmp_path):
    """With dropout 0 the two representations compute the same function: the same losses."""
    from scalegnn.train.trainer import Trainer
    losses = []
    for fmt in ("sparse", "dense"):
        cfg = Config()
        cfg.phases = [{"end": 2, "sampler": "rw", "num_root": 30, "depth": 2}]
        cfg.network.update(dim=16, arch="1-1")
        cfg.params.update(sample_coverage=3, transductive=True, feature_format=fmt)
        cfg.validate()
        Trainer(sparse_dataset(n=200), cfg, tmp_path / fmt, seed=0, progress=False).fit()
        recs = (tmp_path / fmt / "metrics.jsonl").read_text().splitlines()
        losses.append([json.loads(r)["loss"] for r in recs])
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-4)


@pytest.mark.realdata
def test_facebook_loads_as_csr(shared_data):
    from scalegnn.data import load_dataset
    ds = load_dataset(shared_data / "facebook")
    assert isinstance(ds.features, SparseFeatures)
    assert ds.features.shape == (22470, 4714)
    assert ds.info()["bytes"]["features"] < 8 << 20          # dense would be 404 MiB


def test_row_and_column_indexing_keeps_the_transform():
    x = sparse_dataset().features.standardize(np.arange(60))
    dense = np.asarray(x)
    np.testing.assert_allclose(np.asarray(x[:, :7]), dense[:, :7], atol=1e-6)
    np.testing.assert_allclose(np.asarray(x[[4, 2], [0, 5]]), dense[[4, 2]][:, [0, 5]],
                               atol=1e-6)


def test_convert_to_graphsaint_writes_the_dense_matrix(tmp_path):
    from scalegnn.data.graphsaint import load_graphsaint, save_graphsaint
    ds = sparse_dataset()
    save_graphsaint(ds, tmp_path / "gs")
    back = load_graphsaint(tmp_path / "gs")
    assert np.array_equal(np.asarray(back.features), ds.features.to_dense())


def test_distributed_plan_densifies_per_rank(tmp_path):
    from scalegnn.dist.partition import partition_dataset
    from scalegnn.dist.plan import PartitionPlan
    ds = sparse_dataset()
    partition_dataset(ds, 2, tmp_path / "p", method="random", seed=1)
    plan = PartitionPlan.load(tmp_path / "p", world_size=2)
    dense = ds.features.to_dense()
    for r in range(2):
        part = plan.rank(r)
        assert np.array_equal(np.asarray(part.features), dense[part.inner])
