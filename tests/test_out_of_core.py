"""Out-of-core features: the streaming Kronecker generator, block-wise GraphSAINT writing,
MappedFeatures (standardized on read) and training on memory-mapped features."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
from conftest import make_tiny_dataset

from scalegnn.cli import main
from scalegnn.config import Config
from scalegnn.data import _build, load_dataset
from scalegnn.data.graphsaint import save_graphsaint, write_class_map, write_roles
from scalegnn.data.synthetic import kronecker_dataset
from scalegnn.data.transforms import standardize_features
from scalegnn.errors import ConfigError, DataError
from scalegnn.features import (MappedFeatures, SparseFeatures, apply_statistics,
                               check_mmap_features, column_statistics, should_map)
from scalegnn.graph import Graph


def assert_same_data(a, b):
    np.testing.assert_array_equal(a.graph.indptr, b.graph.indptr)
    np.testing.assert_array_equal(a.graph.indices, b.graph.indices)
    np.testing.assert_array_equal(a.labels, b.labels)
    np.testing.assert_array_equal(np.asarray(a.features), np.asarray(b.features))
    for s in ("train_idx", "val_idx", "test_idx"):
        np.testing.assert_array_equal(getattr(a, s), getattr(b, s))
    np.testing.assert_array_equal(a.train_graph.indptr, b.train_graph.indptr)
    np.testing.assert_array_equal(a.train_graph.indices, b.train_graph.indices)
    assert a.metric == b.metric


@pytest.mark.parametrize("kw", [dict(classes=2), dict(classes=3), dict(num_labels=6)])
def test_kronecker_out_matches_in_memory(tmp_path, kw):
    ref = kronecker_dataset(9, 6, seed=4, features=11, **kw)
    out = kronecker_dataset(9, 6, seed=4, features=11, out=tmp_path / "k", **kw)
    assert out.features.mapped and not out.features.array.flags.writeable
    assert_same_data(ref, out)
    assert_same_data(ref, load_dataset(str(tmp_path / "k"), mmap=True))
    back = load_dataset(str(tmp_path / "k"))
    assert_same_data(ref, back)
    assert back.name == ref.name
    if "classes" in kw:  # balanced rank buckets of a graph score
        counts = np.bincount(ref.labels, minlength=kw["classes"])
        assert counts.max() - counts.min() <= 1 and ref.metric == "accuracy"


def test_kronecker_labels_use_the_graph():
    """Class = rank bucket of h = D^-1 A X w (recomputed here with scipy)."""
    ds = kronecker_dataset(8, 8, seed=1, features=5, classes=2)
    rng = np.random.default_rng([1, 2])
    x = rng.standard_normal((ds.num_nodes, 5), dtype=np.float32)
    w = rng.standard_normal((5, 1), dtype=np.float32)
    np.testing.assert_array_equal(x, ds.features)
    a = ds.graph.to_scipy(np.float64)
    deg = np.maximum(np.asarray(a.sum(1)).ravel(), 1)
    h = (a @ (x.astype(np.float64) @ w.astype(np.float64))).ravel() / deg
    hi, lo = h[ds.labels == 1], h[ds.labels == 0]
    assert hi.min() >= lo.max() - 1e-5


def test_kronecker_out_refuses_existing_folder(tmp_path):
    (tmp_path / "k").mkdir()
    with pytest.raises(DataError, match="already exists"):
        kronecker_dataset(6, 4, out=tmp_path / "k")
    ds = kronecker_dataset(6, 4, classes=2, out=tmp_path / "k", overwrite=True)
    assert (tmp_path / "k" / "feats.npy").is_file() and ds.num_nodes == 64
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp left


def test_restrict_to_nodes_matches_edge_list():
    g = kronecker_dataset(8, 8, seed=2, features=2, classes=2).graph
    nodes = np.random.default_rng(0).choice(g.num_nodes, 100, replace=False)
    mask = np.zeros(g.num_nodes, bool)
    mask[nodes] = True
    src, dst = g.edge_index()
    keep = mask[src] & mask[dst]
    ref = Graph.from_edges(src[keep], dst[keep], g.num_nodes, symmetrize=False,
                           remove_self_loops=False)
    got = _build.restrict_to_nodes(g, nodes)
    np.testing.assert_array_equal(got.indptr, ref.indptr)
    np.testing.assert_array_equal(got.indices, ref.indices)


def test_streamed_adjacency_files(tmp_path):
    """adj_full / adj_train written in pieces are scipy save_npz files with the right CSR."""
    import scipy.sparse as sp

    from scalegnn.data.graphsaint import write_adj
    g = kronecker_dataset(9, 8, seed=2, features=2, classes=2).graph
    nodes = np.random.default_rng(1).choice(g.num_nodes, 300, replace=False)
    ref = _build.restrict_to_nodes(g, nodes)
    for entries in (1, 5, 333, 1 << 22):  # row blocks smaller than a row, several, one
        indptr, pieces = _build.restricted_pieces(g, nodes, entries=entries)
        np.testing.assert_array_equal(indptr, ref.indptr)
        np.testing.assert_array_equal(np.concatenate([p.copy() for p in pieces()]),
                                      ref.indices)
    write_adj(tmp_path / "t.npz", g, nodes)
    write_adj(tmp_path / "f.npz", g)
    for path, want in (("t.npz", ref), ("f.npz", g)):
        m = sp.load_npz(tmp_path / path)
        np.testing.assert_array_equal(m.indptr, want.indptr)
        np.testing.assert_array_equal(m.indices, want.indices)
        assert m.dtype == np.float32 and (m.data == 1).all() and m.shape == (g.num_nodes,) * 2


def test_streamed_json_equals_json_dumps(tmp_path):
    labels = np.array([3, 0, 2, 1, 1])
    multi = np.array([[0, 1], [1, 1], [0, 0]], dtype=np.float32)
    for y in (labels, multi):
        write_class_map(tmp_path / "c.json", y, step=2)
        want = {str(i): v for i, v in enumerate(y.astype(np.int64).tolist())}
        assert json.loads((tmp_path / "c.json").read_text()) == want
    tr, va, te = np.arange(5), np.array([7]), np.zeros(0, np.int64)
    write_roles(tmp_path / "r.json", tr, va, te)
    assert json.loads((tmp_path / "r.json").read_text()) == \
        {"tr": [0, 1, 2, 3, 4], "va": [7], "te": []}


def test_save_graphsaint_streams_every_feature_kind(tmp_path):
    ref = make_tiny_dataset()
    x = np.asarray(ref.features, dtype=np.float32)
    save_graphsaint(ref, tmp_path / "a")
    mapped = load_dataset(str(tmp_path / "a"), mmap=True)
    assert mapped.features.mapped and not mapped.features.standardized
    save_graphsaint(mapped, tmp_path / "b")     # memmap source
    np.testing.assert_array_equal(np.load(tmp_path / "b" / "feats.npy"), x)
    std = standardize_features(mapped)           # MappedFeatures: standardized rows written
    assert isinstance(std.features, MappedFeatures)
    save_graphsaint(std, tmp_path / "c")
    np.testing.assert_array_equal(np.load(tmp_path / "c" / "feats.npy"),
                                  standardize_features(ref).features)
    sp_ds = standardize_features(ref.__class__(**{**ref.__dict__, "features":
                                                  SparseFeatures.from_dense(x)}))
    save_graphsaint(sp_ds, tmp_path / "d")      # CSR source: densified block by block
    np.testing.assert_allclose(np.load(tmp_path / "d" / "feats.npy"),
                               sp_ds.features.to_dense(), rtol=0, atol=0)


def test_convert_cli_keeps_features(tmp_path, capsys):
    kronecker_dataset(7, 4, seed=3, features=6, classes=2, out=tmp_path / "k")
    assert main(["data", "convert", str(tmp_path / "k"), "--to", "graphsaint",
                 str(tmp_path / "c")]) == 0
    assert_same_data(load_dataset(str(tmp_path / "k")), load_dataset(str(tmp_path / "c")))


def test_fit_statistics_blocks_match_numpy():
    x = np.random.default_rng(0).standard_normal((1000, 7)).astype(np.float32) * 3 + 1
    x[:, 2] = 5.0  # constant column -> std 1
    nodes = np.random.default_rng(1).choice(1000, 600, replace=False)
    m1, s1 = column_statistics(x, nodes).mean, column_statistics(x, nodes).std
    m2, s2 = column_statistics(x, nodes, block=37).mean, column_statistics(x, nodes, block=37).std
    fit = x[np.sort(nodes)].astype(np.float64)
    np.testing.assert_array_equal(m1, fit.mean(0))  # one block: numpy's own numbers
    np.testing.assert_allclose(m2, m1, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(s2, s1, rtol=1e-12)
    assert s1[2] == 1.0 and s2[2] == 1.0


def test_mapped_features_equal_the_in_memory_copy(tmp_path):
    x = np.random.default_rng(0).standard_normal((500, 9)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    mm = np.load(tmp_path / "x.npy", mmap_mode="r")
    stats = column_statistics(mm, np.arange(0, 500, 3))
    dense = apply_statistics(x, stats)
    np.testing.assert_array_equal(apply_statistics(x, stats, chunk=7), dense)  # any chunking
    mf = MappedFeatures(mm, statistics=stats)
    mf.block_rows = 64  # several blocks
    assert mf.shape == (500, 9) and mf.dtype == np.float32 and mf.mapped and len(mf) == 500
    np.testing.assert_array_equal(mf.dense_rows(slice(10, 90)), dense[10:90])
    idx = np.array([499, 3, 250, 3, 0])
    np.testing.assert_array_equal(mf[idx], dense[idx])
    np.testing.assert_array_equal(mf[idx, [1, 4]], dense[idx][:, [1, 4]])
    np.testing.assert_array_equal(mf[dense[:, 0] > 0], dense[dense[:, 0] > 0])
    np.testing.assert_array_equal(mf.gather(idx).numpy(), dense[idx])
    np.testing.assert_array_equal(np.asarray(mf), dense)
    w = torch.randn(9, 4)
    torch.testing.assert_close(mf @ w, torch.from_numpy(dense) @ w, rtol=1e-5, atol=1e-5)
    assert mf.all_finite()
    plain = MappedFeatures(mm)
    np.testing.assert_array_equal(plain[idx], x[idx])


def test_mmap_features_setting():
    assert check_mmap_features(True) == "true" and check_mmap_features("AUTO") == "auto"
    with pytest.raises(ConfigError, match="params.mmap_features"):
        check_mmap_features("sometimes")
    assert should_map("auto", 300, 1000) and not should_map("auto", 200, 1000)
    assert not should_map("auto", None, 1000) and should_map("true", None, None)
    assert not should_map("false", 10**12, 1)
    cfg = Config.builtin()
    cfg.params["mmap_features"] = False  # YAML false
    assert cfg.validate().params["mmap_features"] == "false"
    cfg.override(["params.mmap_features=true"])
    assert cfg.validate().params["mmap_features"] == "true"


def test_train_maps_large_feature_files(tmp_path, monkeypatch):
    """`scalegnn train --data DIR` memory-maps feats.npy over a quarter of the available memory
    (params.mmap_features: auto), or as the setting says."""
    from types import SimpleNamespace

    from scalegnn.cli.train import map_features
    from scalegnn import memory
    save_graphsaint(make_tiny_dataset(), tmp_path / "gs")   # feats.npy: 40 x 6 x 4 = 960 B
    cfg = Config.builtin().validate()
    spec = SimpleNamespace(config=cfg, data=str(tmp_path / "gs"))
    monkeypatch.setattr(memory, "available_memory", lambda: 4000)
    assert not map_features(spec)
    monkeypatch.setattr(memory, "available_memory", lambda: 3000)
    assert map_features(spec)
    cfg.params["mmap_features"] = "false"
    assert not map_features(spec)
    cfg.params["mmap_features"] = "true"
    assert map_features(SimpleNamespace(config=cfg, data="synthetic"))
    cfg.params["mmap_features"] = "auto"
    assert not map_features(SimpleNamespace(config=cfg, data="synthetic"))  # no feats.npy


def _losses(ds, seed=0):
    from scalegnn.train.trainer import Trainer
    cfg = Config.builtin()
    cfg.override(["phase.end=2", "params.eval_every=2", "params.pool_depth=1",
                  "params.sampler_threads=1"])
    trainer = Trainer(ds, cfg, None, seed=seed, progress=False)
    trainer.fit()
    return [r["loss"] for r in trainer.history if "loss" in r], trainer


def test_training_on_memmap_matches_in_memory(tmp_path):
    kronecker_dataset(9, 8, seed=5, features=12, classes=2, out=tmp_path / "k")
    ram = load_dataset(str(tmp_path / "k"))
    mapped = load_dataset(str(tmp_path / "k"), mmap=True)
    torch.set_num_threads(1)
    a, _ = _losses(ram)
    b, trainer = _losses(mapped)
    assert isinstance(trainer.mode.dataset.features, MappedFeatures)  # no (n, F) copy made
    assert trainer.mode.dataset.features.array is mapped.features.array
    assert len(a) == 2 and a == b


@pytest.mark.slow
def test_synth_scale_20_peak_memory(tmp_path):
    """Peak RSS of `data synth kronecker --scale 20 --out` minus that of a tiny run (imports,
    numba) stays below the CSR plus half the features: the features never sit in memory."""
    def peak(scale, out):
        # VmHWM, not ru_maxrss: Linux carries ru_maxrss over from the forking parent, so
        # under a large pytest process both runs would report pytest's peak
        code = ("import sys; from scalegnn.cli import main; "
                "from scalegnn.memory import peak_rss_bytes; "
                f"rc = main(['data', 'synth', 'kronecker', '--scale', '{scale}', '--classes', "
                f"'2', '--out', r'{out}']); "
                "print(peak_rss_bytes()); sys.exit(rc)")
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env={**os.environ, "OMP_NUM_THREADS": "2"}, check=True)
        return int(r.stdout.split()[-1])
    base = peak(6, tmp_path / "tiny")
    big = peak(20, tmp_path / "k20")
    ds = load_dataset(str(tmp_path / "k20"), mmap=True)
    bound = ds.graph.nbytes + 0.5 * ds.features.nbytes
    assert big - base < bound, (big - base, bound)
