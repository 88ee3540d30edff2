"""Streamed class_map.json / role.json readers (scalegnn.data._json_stream) against json.load."""

from __future__ import annotations

import json
import zlib

import numpy as np
import pytest
from conftest import make_tiny_dataset

from scalegnn.data import _byte_stream
from scalegnn.data import graphsaint as gs
from scalegnn.data._json_stream import read_class_map, read_roles
from scalegnn.errors import DataError


def json_path_labels(path, n, monkeypatch):
    """The reference: the loader's json.load path (fast path switched off)."""
    with monkeypatch.context() as m:
        m.setattr(gs, "read_class_map", lambda *a: None)
        return gs._labels_from_class_map(path, n)


def json_path_roles(path, n, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(gs, "read_roles", lambda *a: None)
        return gs._roles(path, n)


def spaced(text: str, rng) -> str:
    """``text`` with random JSON whitespace after every structural character."""
    out = []
    for ch in text:
        out.append(ch)
        if ch in "{}[],:" and rng.random() < 0.5:
            out.append("".join(rng.choice([" ", "\t", "\n", "\r\n", "  "], size=3)))
    return " \n" + "".join(out) + "\n\n"


def dumps(obj, style: str, rng) -> str:
    if style == "compact":
        return json.dumps(obj, separators=(",", ":"))
    if style == "indent":
        return json.dumps(obj, indent=2)
    if style == "spaced":
        return spaced(json.dumps(obj, separators=(",", ":")), rng)
    return json.dumps(obj)


@pytest.mark.parametrize("block", [5, 64, 1 << 22])
@pytest.mark.parametrize("style", ["default", "compact", "indent", "spaced"])
@pytest.mark.parametrize("multi", [False, True])
def test_class_map_equals_json_path(tmp_path, monkeypatch, block, style, multi):
    rng = np.random.default_rng(zlib.crc32(repr((block, style, multi)).encode()))
    n = int(rng.integers(1, 300))
    y = rng.integers(0, 2, size=(n, 5)) if multi else rng.integers(0, 1000, size=n)
    order = rng.permutation(n)
    cmap = {str(i): y[i].tolist() if multi else int(y[i]) for i in order}
    path = tmp_path / "class_map.json"
    path.write_text(dumps(cmap, style, rng))
    monkeypatch.setattr(_byte_stream, "BLOCK", block)
    got = read_class_map(path, n)
    want = json_path_labels(path, n, monkeypatch)
    assert got is not None and got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    assert got.dtype == (np.float32 if multi else np.int64)


@pytest.mark.parametrize("block", [3, 64, 1 << 22])
@pytest.mark.parametrize("style", ["default", "compact", "indent", "spaced"])
def test_roles_equal_json_path(tmp_path, monkeypatch, block, style):
    rng = np.random.default_rng(zlib.crc32(repr((block, style)).encode()))
    n = int(rng.integers(3, 500))
    perm = rng.permutation(n)
    a, b = sorted(rng.choice(np.arange(1, n), size=2, replace=False))
    role = {"tr": perm[:a].tolist(), "va": perm[a:b].tolist(), "te": perm[b:].tolist()}
    keys = list(role)
    rng.shuffle(keys)
    path = tmp_path / "role.json"
    path.write_text(dumps({k: role[k] for k in keys}, style, rng))
    monkeypatch.setattr(_byte_stream, "BLOCK", block)
    got = read_roles(path, n)
    want = json_path_roles(path, n, monkeypatch)
    assert got is not None
    for g, w in zip(got, want):
        assert g.dtype == np.int64
        np.testing.assert_array_equal(g, w)


def test_empty_lists_and_writer_output(tmp_path, monkeypatch):
    path = tmp_path / "role.json"
    gs.write_roles(path, np.arange(4), np.zeros(0, np.int64), np.array([9, 5]))
    got = read_roles(path, 10)
    assert [g.tolist() for g in got] == [[0, 1, 2, 3], [], [9, 5]]
    path.write_text('{"tr":[],"va":[],"te":[]}')
    assert [g.size for g in read_roles(path, 3)] == [0, 0, 0]
    labels = np.array([[0, 1, 1], [1, 0, 0]], np.float32)
    gs.write_class_map(tmp_path / "c.json", labels, step=1)
    np.testing.assert_array_equal(read_class_map(tmp_path / "c.json", 2), labels)


@pytest.mark.parametrize("text", [
    '{"0": 1.0, "1": 0}',           # float values: json path accepts them as integers
    '{"0": 1, "1": 0.0}',
    '{"0": 1, "1": 1e0}',
    '{"0": "1", "1": 0}',           # string labels
    '{"0": 1, "01": 0}',            # leading zero in a key
    '{"0": 1, "1": 00}',            # invalid JSON
    '{"0": -1, "1": 0}',            # negative label
    '{"0": [1, 0], "1": [1.0, 0]}',
    '{"0": [1, 0], "1": [1, 0, 1]}',  # ragged
    '{"0": [1, 0], "1": [1]}',
    '{"0": [1, 0], "1": 1}',
    '{"0": [1, 2], "1": [0, 0]}',   # not 0/1
    '{"0": [true, false], "1": [0, 0]}',
    '{"0": {"a": 1}, "1": 0}',      # nested
    '\ufeff{"0": 1, "1": 0}',       # BOM
    '{"0": 1, "1": 0',              # truncated
    '{"0": 1, "1": 0} x',           # extra data
    '{"0": 1, "1": 0,}',            # trailing comma
    '[1, 0]',
])
def test_class_map_fallbacks(tmp_path, monkeypatch, text):
    path = tmp_path / "class_map.json"
    path.write_text(text, encoding="utf-8")
    for block in (4, 1 << 22):
        monkeypatch.setattr(_byte_stream, "BLOCK", block)
        assert read_class_map(path, 2) is None
    try:
        want = json_path_labels(path, 2, monkeypatch)
    except DataError as e:
        with pytest.raises(DataError, match="class_map.json") as got:
            gs._labels_from_class_map(path, 2)
        assert str(got.value) == str(e)
    else:
        np.testing.assert_array_equal(gs._labels_from_class_map(path, 2), want)


@pytest.mark.parametrize("text", [
    '{"tr": [0, 1.0], "va": [2], "te": [3]}',
    '{"tr": [0, 1], "va": [-2], "te": [3]}',
    '{"tr": [0, 1], "va": ["2"], "te": [3]}',
    '{"tr": [0, 1], "va": [2], "te": [3], "xx": [4]}',  # extra key: json path ignores it
    '{"tr": [0, 1], "va": [2], "tr": [3], "te": [3]}',  # repeated key: json keeps the last
    '{"tr": [0, 1], "va": [2]}',
    '{"tr": [0, 1], "va": [[2]], "te": [3]}',
    '{"tr": [0, 1], "va": 2, "te": [3]}',
    '{"tr": [0, 01], "va": [2], "te": [3]}',
    '{"tr": [0, 1,], "va": [2], "te": [3]}',
    '{"tr": [0, 1], "va": [2], "te": [3]',
])
def test_roles_fallbacks(tmp_path, monkeypatch, text):
    path = tmp_path / "role.json"
    path.write_text(text)
    for block in (4, 1 << 22):
        monkeypatch.setattr(_byte_stream, "BLOCK", block)
        assert read_roles(path, 5) is None
    try:
        want = json_path_roles(path, 5, monkeypatch)
    except DataError as e:
        with pytest.raises(DataError, match="role.json") as got:
            gs._roles(path, 5)
        assert str(got.value) == str(e)
    else:
        for g, w in zip(gs._roles(path, 5), want):
            np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("text,message", [
    ('{"0": 1, "1": 0, "0": 1}', "node id 0 appears twice"),
    ('{"0": [1], "1": [0], "1": [1]}', "node id 1 appears twice"),
    ('{"0": 1, "1": 0, "3": 1}', "node id 3 is out of range for 3 nodes"),
    ('{"0": 1, "2": 0}', "has labels for 2 nodes, the graph has 3"),
    ('{"0": [1], "2": [0]}', "has labels for 2 nodes, the graph has 3"),
])
def test_class_map_errors(tmp_path, monkeypatch, text, message):
    path = tmp_path / "class_map.json"
    path.write_text(text)
    for block in (4, 1 << 22):
        monkeypatch.setattr(_byte_stream, "BLOCK", block)
        with pytest.raises(DataError, match=message) as e:
            gs._labels_from_class_map(path, 3)
        assert str(path) in str(e.value) and "\n" not in str(e.value)


def test_roles_out_of_range(tmp_path):
    path = tmp_path / "role.json"
    path.write_text('{"tr": [0, 1], "va": [7, 2], "te": [3]}')
    with pytest.raises(DataError, match=r"node id 7 in 'va' is out of range for 5 nodes"):
        gs._roles(path, 5)


def test_loader_uses_fast_path(tmp_path, monkeypatch):
    ref = make_tiny_dataset()
    folder = gs.save_graphsaint(ref, tmp_path / "saint")
    calls, real = [], gs._load_json
    monkeypatch.setattr(gs, "_load_json", lambda p: calls.append(p) or real(p))
    ds = gs.load_graphsaint(folder)
    assert all(p.name == "scalegnn.json" for p in calls)  # neither big file went to json
    np.testing.assert_array_equal(ds.labels, ref.labels)
    for got, want in ((ds.train_idx, ref.train_idx), (ds.val_idx, ref.val_idx),
                      (ds.test_idx, ref.test_idx)):
        np.testing.assert_array_equal(got, want)


@pytest.mark.realdata
def test_real_cora_and_multilabel_blogcatalog(shared_data, tmp_path, monkeypatch):
    cora = shared_data / "cora"
    n = 2708
    np.testing.assert_array_equal(read_class_map(cora / "class_map.json", n),
                                  json_path_labels(cora / "class_map.json", n, monkeypatch))
    for g, w in zip(read_roles(cora / "role.json", n),
                    json_path_roles(cora / "role.json", n, monkeypatch)):
        np.testing.assert_array_equal(g, w)
    from scalegnn.data import load_dataset
    blog = load_dataset(str(shared_data / "blogcatalog"))
    assert blog.labels.ndim == 2  # 39 classes, multi-label
    path = tmp_path / "class_map.json"
    gs.write_class_map(path, blog.labels)
    got = read_class_map(path, blog.num_nodes)
    assert got is not None
    np.testing.assert_array_equal(got, json_path_labels(path, blog.num_nodes, monkeypatch))
    np.testing.assert_array_equal(got, blog.labels)
