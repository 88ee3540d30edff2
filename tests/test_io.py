"""Atomic writers: content, no temporaries left behind, target untouched on failure."""

import json
import os

import numpy as np
import pytest

from scalegnn import io


def _leftovers(folder):
    return [p.name for p in folder.iterdir() if p.name.startswith(".")]


def test_write_bytes_text_json(tmp_path):
    io.atomic_write_bytes(tmp_path / "a.bin", b"\x00\x01")
    io.atomic_write_text(tmp_path / "a.txt", "héllo\n")
    io.atomic_write_json(tmp_path / "a.json", {"b": 1, "a": [1, 2]})
    assert (tmp_path / "a.bin").read_bytes() == b"\x00\x01"
    assert (tmp_path / "a.txt").read_text(encoding="utf-8") == "héllo\n"
    assert json.loads((tmp_path / "a.json").read_text()) == {"a": [1, 2], "b": 1}
    assert (tmp_path / "a.json").read_text().index('"a"') < (tmp_path / "a.json").read_text().index('"b"')
    assert oct((tmp_path / "a.txt").stat().st_mode & 0o777) == oct(0o644)
    assert _leftovers(tmp_path) == []


def test_overwrite_replaces(tmp_path):
    p = tmp_path / "f.txt"
    io.atomic_write_text(p, "old")
    io.atomic_write_text(p, "new")
    assert p.read_text() == "new"


def test_failure_keeps_old_file_and_cleans_temp(tmp_path):
    p = tmp_path / "f.txt"
    io.atomic_write_text(p, "old")
    with pytest.raises(RuntimeError):
        with io.atomic_open(p, "w") as f:
            f.write("partial")
            raise RuntimeError("boom")
    assert p.read_text() == "old"
    assert _leftovers(tmp_path) == []


def test_npy_npz_roundtrip(tmp_path):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    io.atomic_save_npy(tmp_path / "a.npy", a)
    np.testing.assert_array_equal(np.load(tmp_path / "a.npy"), a)
    io.atomic_save_npz(tmp_path / "b.npz", x=a, y=np.arange(3))
    io.atomic_save_npz(tmp_path / "c.npz", compressed=True, x=a)
    with np.load(tmp_path / "b.npz", allow_pickle=False) as z:
        np.testing.assert_array_equal(z["x"], a)
        np.testing.assert_array_equal(z["y"], np.arange(3))
    with np.load(tmp_path / "c.npz", allow_pickle=False) as z:
        np.testing.assert_array_equal(z["x"], a)
    assert not (tmp_path / "b.npz.npz").exists()


def test_object_arrays_refused(tmp_path):
    with pytest.raises(ValueError):
        io.atomic_save_npz(tmp_path / "o.npz", x=np.array([{"a": 1}], dtype=object))
    with pytest.raises(ValueError):
        io.atomic_save_npy(tmp_path / "o.npy", np.array([{"a": 1}], dtype=object))
    assert not (tmp_path / "o.npz").exists() and not (tmp_path / "o.npy").exists()
    assert _leftovers(tmp_path) == []


def test_atomic_folder(tmp_path):
    dst = tmp_path / "out"
    with io.atomic_folder(dst) as tmp:
        (tmp / "x.txt").write_text("1")
        assert not dst.exists()  # invisible until complete
    assert (dst / "x.txt").read_text() == "1"
    with pytest.raises(FileExistsError):
        with io.atomic_folder(dst):
            pass
    with pytest.raises(RuntimeError):
        with io.atomic_folder(dst, overwrite=True) as tmp:
            (tmp / "y.txt").write_text("2")
            raise RuntimeError("boom")
    assert sorted(os.listdir(dst)) == ["x.txt"]
    with io.atomic_folder(dst, overwrite=True) as tmp:
        (tmp / "y.txt").write_text("2")
    assert sorted(os.listdir(dst)) == ["y.txt"]
    assert _leftovers(tmp_path) == []
