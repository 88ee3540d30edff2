"""The feature-store protocol: the three representations of one matrix give the same rows,
statistics, standardized values, first-layer products and batch inputs."""

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from scalegnn.features import (DenseFeatures, FeatureStore, MappedFeatures, SparseFeatures,
                               Statistics, append_columns, as_feature_store,
                               choose_representation)


@pytest.fixture
def stores(tmp_path):
    """(raw dense matrix, {name: store of it}) for a 0/1-and-values matrix with a constant column."""
    rng = np.random.default_rng(0)
    x = (rng.random((300, 11)) < 0.3).astype(np.float32) * rng.standard_normal((300, 11))
    x = x.astype(np.float32)
    x[:, 4] = 0.0                                   # constant: std 0 -> 1
    np.save(tmp_path / "x.npy", x)
    mm = np.load(tmp_path / "x.npy", mmap_mode="r")
    return x, {"dense": DenseFeatures(x.copy()), "mapped": MappedFeatures(mm),
               "sparse": SparseFeatures(sp.csr_matrix(x))}


def test_as_feature_store_picks_the_representation(tmp_path):
    x = np.ones((3, 2), np.float32)
    np.save(tmp_path / "a.npy", x)
    assert isinstance(as_feature_store(x), DenseFeatures)
    assert isinstance(as_feature_store(np.load(tmp_path / "a.npy", mmap_mode="r")), MappedFeatures)
    assert isinstance(as_feature_store(sp.csr_matrix(x)), SparseFeatures)
    assert isinstance(as_feature_store(torch.ones(3, 2)), DenseFeatures)
    store = DenseFeatures(x)
    assert as_feature_store(store) is store
    for s in (as_feature_store(x), SparseFeatures(sp.csr_matrix(x))):
        assert isinstance(s, FeatureStore) and s.shape == (3, 2) and len(s) == 3


def test_rows_and_blocks_agree(stores):
    x, all_ = stores
    idx = np.array([299, 3, 150, 3, 0])
    for name, s in all_.items():
        assert s.shape == x.shape and s.num_features == 11, name
        np.testing.assert_array_equal(s.dense_rows(idx), x[idx], err_msg=name)
        np.testing.assert_array_equal(s.dense_rows(slice(10, 20)), x[10:20], err_msg=name)
        np.testing.assert_array_equal(np.asarray(s), x, err_msg=name)
        blocks = list(s.row_blocks(64))
        assert [b for b, _ in blocks] == [0, 64, 128, 192, 256]
        np.testing.assert_array_equal(np.concatenate([r for _, r in blocks]), x, err_msg=name)
        g = s.gather(idx)
        dense = g.to_dense() if isinstance(g, SparseFeatures) else g.numpy()
        np.testing.assert_array_equal(dense, x[idx], err_msg=name)
        assert s.all_finite()


def test_standardization_is_the_same_numbers_in_every_representation(stores):
    x, all_ = stores
    nodes = np.arange(0, 300, 2)
    fit = x[nodes].astype(np.float64)
    mean, std = fit.mean(0), fit.std(0)
    std[std == 0] = 1
    want = ((x.astype(np.float64) - mean) / std).astype(np.float32)
    for name, s in all_.items():
        st = s.fit_statistics(nodes)
        np.testing.assert_allclose(st.mean, mean, rtol=1e-12, atol=1e-12, err_msg=name)
        np.testing.assert_allclose(st.std, std, rtol=1e-12, err_msg=name)
        z = s.standardize(nodes)
        assert type(z) is type(s) and z.standardized and not s.standardized, name
        np.testing.assert_allclose(np.asarray(z), want, rtol=1e-6, atol=1e-6, err_msg=name)
        assert z.statistics is not None
    # what each keeps: an in-memory copy, nothing new for a mapped file, the same CSR
    assert all_["dense"].standardize(nodes).resident_bytes == x.nbytes
    assert all_["mapped"].standardize(nodes).resident_bytes == 0
    assert np.shares_memory(all_["sparse"].standardize(nodes).csr.data, all_["sparse"].csr.data)
    with pytest.raises(ValueError, match="standardized already"):
        all_["dense"].standardize(nodes).standardize(nodes)


def test_statistics_carry_over_to_another_graph(stores):
    """The training graph's statistics applied to other rows (``--test-data``, predict on a
    new graph) give the same numbers whichever store holds the other rows."""
    x, all_ = stores
    stats = all_["dense"].fit_statistics(np.arange(100))
    other = x[::-1].copy()
    want = ((other.astype(np.float64) - stats.mean) / stats.std).astype(np.float32)
    for s in (DenseFeatures(other), SparseFeatures(sp.csr_matrix(other))):
        np.testing.assert_allclose(np.asarray(s.with_statistics(stats)), want, rtol=1e-6,
                                   atol=1e-6)


def test_first_layer_product_and_input(stores):
    x, all_ = stores
    w = torch.randn(11, 5, dtype=torch.float32)
    want = torch.from_numpy(x) @ w
    for name, s in all_.items():
        z = s.standardize(np.arange(300))
        zw = torch.from_numpy(np.asarray(z)) @ w
        torch.testing.assert_close(s @ w, want, rtol=1e-5, atol=1e-5, msg=name)
        torch.testing.assert_close(z @ w, zw, rtol=1e-5, atol=1e-5, msg=name)
        inp = z.as_input()
        assert (inp is z) if s.sparse else isinstance(inp, torch.Tensor), name
        with pytest.raises(TypeError, match="W must be"):
            s @ torch.randn(3, 5)


def test_bytes(stores):
    x, all_ = stores
    assert all_["dense"].nbytes == all_["dense"].resident_bytes == x.nbytes
    assert all_["mapped"].nbytes == x.nbytes and all_["mapped"].resident_bytes == 0
    assert all_["mapped"].mapped and not all_["dense"].mapped and all_["sparse"].sparse
    c = all_["sparse"].csr
    assert all_["sparse"].nbytes == c.data.nbytes + c.indices.nbytes + c.indptr.nbytes
    assert all_["dense"].row_bytes == all_["mapped"].row_bytes == 4 * 11
    assert all_["sparse"].row_bytes == pytest.approx(all_["sparse"].nbytes / 300)


def test_to_device_moves_what_is_gathered(stores):
    _, all_ = stores
    for s in all_.values():
        assert s.to("cpu") is s                   # already there
    dev = "cuda" if torch.cuda.is_available() else "meta"
    moved = all_["dense"].to(dev)
    assert moved.gather(np.array([1, 2])).device.type == dev
    assert all_["dense"].gather(np.array([1, 2])).device.type == "cpu"   # the original stays
    assert all_["sparse"].to(dev) is all_["sparse"]  # CSR stays on the host (SpMM caches it)


def test_nan_is_found_in_rows_and_statistics(tmp_path):
    x = np.ones((5, 3), np.float32)
    x[2, 1] = np.nan
    np.save(tmp_path / "n.npy", x)
    for s in (DenseFeatures(x), MappedFeatures(np.load(tmp_path / "n.npy", mmap_mode="r")),
              SparseFeatures(sp.csr_matrix(x))):
        assert not s.all_finite()
    ok = DenseFeatures(np.ones((5, 3), np.float32))
    assert not MappedFeatures(ok.array, statistics=Statistics(np.zeros(3), np.full(3, np.nan))) \
        .all_finite()


def test_choose_representation_and_append_columns(stores):
    x, all_ = stores
    assert isinstance(choose_representation(x, "sparse"), SparseFeatures)
    back = choose_representation(all_["sparse"], "dense")
    assert isinstance(back, DenseFeatures) and np.array_equal(back.array, x)
    assert choose_representation(all_["mapped"], "dense") is all_["mapped"]   # stays mapped
    block = torch.ones(4, 2)
    for rows in (all_["dense"].gather(np.arange(4)), all_["sparse"].gather(np.arange(4))):
        both = append_columns(rows, block)
        np.testing.assert_array_equal(np.asarray(both), np.hstack([x[:4], np.ones((4, 2))]))
