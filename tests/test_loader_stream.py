"""Streaming loaders (scalegnn.data._stream / _parse): the same graphs and numbers as the
simple whole-array path (Graph.from_edges, Python's float), exact floats, one-line errors, and
(slow) peak memory <= 2x the loaded CSR + features for every format."""

import gzip
import importlib.util
import random
from pathlib import Path

import numpy as np
import pytest
import scipy.io as sio
import scipy.sparse as sp

from scalegnn.data import _byte_stream as B
from scalegnn.data import _stream as S
from scalegnn.data import load_dataset
from scalegnn.data.csv import read_edge_csv
from scalegnn.errors import DataError
from scalegnn.graph import Graph

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of a few dozen bytes, so lines straddle block and gzip-read boundaries."""
    monkeypatch.setattr(B, "BLOCK", 37)
    monkeypatch.setattr(B, "_READ", 11)


def _edges(n=300, m=2000, seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(0, n, m), rng.integers(0, n, m), n


def _write(path: Path, text: str):
    data = text.encode()
    path.write_bytes(gzip.compress(data) if path.suffix == ".gz" else data)
    return path


def _same_graph(g: Graph, ref: Graph):
    assert np.array_equal(g.indptr, ref.indptr)
    assert np.array_equal(g.indices, ref.indices)
    assert g.indices.dtype == ref.indices.dtype


@pytest.mark.parametrize("sep,header,crlf,extra,suffix", [
    (",", True, False, False, ".csv"), ("\t", False, True, False, ".tsv"),
    (" ", False, False, True, ".txt"), (";", True, True, True, ".csv.gz"),
    (",", False, False, False, ".csv.gz")])
@pytest.mark.parametrize("blocks", ["default", "small"])
def test_edge_list_equals_from_edges(tmp_path, request, sep, header, crlf, extra, suffix,
                                     blocks):
    if blocks == "small":
        request.getfixturevalue("small_blocks")
    src, dst, n = _edges()
    end = "\r\n" if crlf else "\n"
    lines = ["# a comment", "% another"] + (["source" + sep + "target"] if header else [])
    for i, (u, v) in enumerate(zip(src, dst)):
        pad = "  " if i % 7 == 0 and sep != " " else ""
        lines.append(f"{pad}{u}{pad}{sep}{pad}{v}" + (f"{sep}0.5" if extra else ""))
        if i % 500 == 0:
            lines.append("")
    path = _write(tmp_path / f"g_edges{suffix}", end.join(lines) + ("" if crlf else end))
    keys, stats = read_edge_csv(path)
    g = S.edge_list_graph(keys, stats, n, path)
    _same_graph(g, Graph.from_edges(src, dst, n))
    assert stats[2] == len(src) and stats[3] == int((src == dst).sum())


def test_csv_gz_dataset_and_detect(tmp_path):
    src, dst, n = _edges(n=50, m=300)
    d = tmp_path / "c"
    d.mkdir()
    _write(d / "x_edges.csv.gz", "id_1,id_2\n" + "".join(f"{u},{v}\n" for u, v in zip(src, dst)))
    _write(d / "x_target.csv", "id,label\n" + "".join(f"{i},{i % 3}\n" for i in range(n)))
    for spec in (d, d / "x_edges.csv.gz"):  # a file: its labels by name
        named = None if spec == d else {"labels": str(d / "x_target.csv")}
        ds = load_dataset(str(spec), options=named)
        _same_graph(ds.graph, Graph.from_edges(src, dst, n))
        assert ds.name == "x" or spec == d


def _tokens(rng, count):
    out = []
    for _ in range(count):
        r = rng.random()
        if r < 0.25:
            out.append(f"{rng.standard_normal():.6f}")
        elif r < 0.45:
            out.append(repr(float(rng.standard_normal() * 10.0 ** rng.integers(-40, 39))))
        elif r < 0.6:
            out.append("%.18e" % (rng.standard_normal() * 10.0 ** rng.integers(-47, 40)))
        elif r < 0.7:
            out.append(str(int(rng.integers(-10**9, 10**9))))
        elif r < 0.9:  # near a float32 rounding midpoint: where double rounding could bite
            f = np.float32(rng.standard_normal() * 10.0 ** rng.integers(-30, 30))
            mid = (float(f) + float(np.nextafter(f, np.float32(np.inf)))) / 2
            out.append(repr(float(mid + int(rng.integers(-3, 4)) * np.spacing(mid))))
        else:
            out.append(random.Random(int(rng.integers(1 << 30))).choice(
                ["nan", "-inf", "Infinity", "NaN", "+inf", "1e-50", "3.5e38", "1.4e-45",
                 "7e-46", "0.0", "-0", "1E5", ".5", "5.", "-.25e+2", "1e400", "2e-400",
                 "123456789012345678901234567890", "0.000000000000000000000000001234"]))
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_floats_exact(tmp_path, dtype, small_blocks):
    rng = np.random.default_rng(1)
    toks = _tokens(rng, 4000)
    rows = [toks[i:i + 5] for i in range(0, len(toks), 5)]
    path = _write(tmp_path / "f.csv.gz", "\n".join(",".join(r) for r in rows) + "\n")
    x = S.read_table(path, "features", dtype)
    with np.errstate(over="ignore"):
        ref = np.array([[dtype(float(t)) for t in r] for r in rows], dtype)
    same = (x == ref) | (np.isnan(x) & np.isnan(ref))
    assert same.all(), [rows[i][j] for i, j in np.argwhere(~same)[:5]]
    assert (np.signbit(x) == np.signbit(ref)).all()
    assert np.array_equal(S.read_table(path, "features", dtype, rows=len(rows)), x,
                          equal_nan=True)


def test_table_errors(tmp_path):
    p = _write(tmp_path / "t.csv", "1,2\n3,4\n5,x\n")
    with pytest.raises(DataError, match=r"t\.csv: bad node features, line 3 has 'x'"):
        S.read_table(p, "node features")
    _write(p, "1,2\n3,4,5\n")
    with pytest.raises(DataError, match="line 2 does not have 2 values"):
        S.read_table(p, "node features")
    _write(p, "1,2\n,4\n")
    with pytest.raises(DataError, match="line 2 has an empty value"):
        S.read_table(p, "node features")
    _write(p, "1,2\n3,4\n5,6\n")
    with pytest.raises(DataError, match="more than 2 rows"):
        S.read_table(p, "node features", rows=2)
    with pytest.raises(DataError, match="have 3 rows, expected 4"):
        S.read_table(p, "node features", rows=4)


def test_edge_errors_name_line_and_token(tmp_path):
    p = _write(tmp_path / "e.csv", "# c\na,b\n0,1\n\n1,1.5\n")
    with pytest.raises(DataError, match=r"e\.csv: bad edge list.*line 5 has '1\.5'"):
        read_edge_csv(p)
    _write(p, "0,1\n2\n")
    with pytest.raises(DataError, match="line 2 does not have 2 values"):
        read_edge_csv(p)
    _write(p, "0,1\n1,2,3\n")  # a third column is a weight for csv files ...
    assert read_edge_csv(p)[1][2] == 2
    with pytest.raises(DataError, match="line 2 does not have 2 values"):  # ... not for OGB
        S.read_edges(p, extra_ok=False)


def test_gzip_members_and_truncation(tmp_path, small_blocks):
    p = tmp_path / "e.csv.gz"
    p.write_bytes(gzip.compress(b"0,1\n1,2\n") + gzip.compress(b"2,3\n3,4\n"))
    keys, stats = S.read_edges(p)
    assert stats[2] == 4 and keys.size == 4
    whole = gzip.compress(("".join(f"{i},{i + 1}\n" for i in range(500))).encode())
    p.write_bytes(whole[:len(whole) // 2])
    with pytest.raises(DataError, match=r"e\.csv\.gz: unreadable edge list"):
        S.read_edges(p)
    p.write_bytes(b"not gzip at all\n")
    with pytest.raises(DataError, match="unreadable edge list"):
        S.read_edges(p)


def test_growable_keeps_data():
    b = B.Growable(np.int64, 3)
    b.array()[:] = [1, 2, 3]
    b.resize(1 << 20)
    a = b.array()
    assert a[:3].tolist() == [1, 2, 3] and a.size == 1 << 20
    a[-1] = 7
    del a
    b.resize(2)
    assert b.array().tolist() == [1, 2]


def test_ogb_folder_matches_reference(tmp_path):
    rng = np.random.default_rng(3)
    src, dst, n = _edges(n=120, m=700, seed=3)
    x = rng.standard_normal((n, 7)).astype(np.float32)
    y = rng.integers(0, 4, n).astype(float)
    y[[5, 9]] = np.nan  # unlabelled, outside the splits
    root = tmp_path / "ogbn_t"
    (root / "raw").mkdir(parents=True)
    (root / "split" / "s").mkdir(parents=True)
    _write(root / "raw" / "edge.csv.gz", "".join(f"{u},{v}\n" for u, v in zip(src, dst)))
    _write(root / "raw" / "node-feat.csv.gz",
           "".join(",".join(repr(float(v)) for v in r) + "\n" for r in x))
    _write(root / "raw" / "node-label.csv.gz", "".join(f"{v}\n" for v in y))
    idx = np.setdiff1d(np.arange(n), [5, 9])
    for name, part in zip(("train", "valid", "test"), np.array_split(idx, 3)):
        _write(root / "split" / "s" / f"{name}.csv.gz", "".join(f"{i}\n" for i in part))
    ds = load_dataset(str(root))
    _same_graph(ds.graph, Graph.from_edges(src, dst, n))
    assert np.array_equal(ds.features, x)
    assert np.array_equal(ds.labels, np.nan_to_num(y).astype(np.int64))
    assert ds.meta["unlabelled"] == 2


def test_hetero_npz_streamed_and_fallback(tmp_path):
    src, dst, n = _edges(n=80, m=400, seed=4)
    rng = np.random.default_rng(4)
    ids = np.arange(n)
    base = {"node_features": rng.standard_normal((n, 3)), "node_labels": rng.integers(0, 2, n),
            "train_masks": ids < 40, "val_masks": (ids >= 40) & (ids < 60),
            "test_masks": ids >= 60}
    ref = Graph.from_edges(src, dst, n)
    for edges in (np.stack([src, dst], 1), np.stack([src, dst], 1).astype(np.int32),
                  np.asfortranarray(np.stack([src, dst], 1)),
                  np.stack([src, dst], 1).astype(np.float64)):
        np.savez_compressed(tmp_path / "h.npz", edges=edges, **base)
        _same_graph(load_dataset(str(tmp_path / "h.npz")).graph, ref)
    bad = np.r_[np.stack([src, dst], 1), [[3, n]]]
    np.savez(tmp_path / "h.npz", edges=bad, **base)
    with pytest.raises(DataError, match=f"node id {n} in the edge list is out of range"):
        load_dataset(str(tmp_path / "h.npz"))


@pytest.mark.parametrize("layout", ["csc", "csr", "dense"])
def test_mat_adjacency_layouts(tmp_path, layout):
    src, dst, n = _edges(n=60, m=300, seed=5)
    a = sp.coo_matrix((np.ones(src.size), (src, dst)), shape=(n, n))  # not symmetric
    a = {"csc": a.tocsc(), "csr": a.tocsr(), "dense": a.toarray()}[layout]
    y = np.arange(n) % 3
    sio.savemat(tmp_path / "m.mat", {"network": a, "group": y[:, None],
                                     "features": np.ones((n, 2), np.float32)})
    ds = load_dataset(str(tmp_path / "m.mat"))
    _same_graph(ds.graph, Graph.from_edges(src, dst, n))


def _bench():
    spec = importlib.util.spec_from_file_location("loader_speed",
                                                  REPO / "benchmarks" / "loader_speed.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
def test_peak_memory_at_most_twice_the_data(tmp_path):
    """Every format, 2^18 nodes x 16 edge draws, 16 features: peak RSS above the warmed-up
    baseline <= 2 x (CSR + features)."""
    bench = _bench()
    records = list(bench.run(18, 16, 16, bench.FORMATS, tmp_path))
    assert [r["format"] for r in records] == list(bench.FORMATS)
    for r in records:
        assert r["ratio"] <= 2.0, r


@pytest.mark.parametrize("name,text", [
    ("t_target.csv", "id,label\n2,1\n0,0\n1,3\n"),
    ("t_target.csv", "page_type\n1\n0\n2\n"),
    ("t_target.csv", "id,other,class\n0,5,1\n1,6,0\n2,7,1\n"),
    ("labels.txt", "# comment\n0\t2\n2\t1\n1\t0\n"),
    ("labels.txt", "0 1.0\n1 0\n2 1\n")])
def test_numeric_labels_fast_path_equals_csv_module(tmp_path, monkeypatch, name, text):
    from scalegnn.data import labels as labmod
    path = _write(tmp_path / name, text)
    ids, values, col = labmod.read_labels_csv(path)
    assert isinstance(values, np.ndarray)  # took the fast path
    monkeypatch.setattr(labmod, "_numeric_labels", lambda *a: None)
    ids2, values2, col2 = labmod.read_labels_csv(path)
    assert col == col2
    assert (ids is None and ids2 is None) or np.array_equal(ids, ids2)
    assert np.array_equal(labmod.label_ids(values, path)[0], labmod.label_ids(values2, path)[0])
