"""One place for I/O errors (``scalegnn.io``): a failed write is one WriteError line naming the
file the user asked for (never the hidden temporary), with nothing torn: the temporary is gone
and the old file is as it was. A damaged user file read is one line naming it. Plus the
``report --out`` suffix rule, the warning for skipped metrics lines and ``--resume`` with
``--overwrite``. Real full and read-only disks (tmpfs): ``test_full_disk.py``."""

from __future__ import annotations

import errno
import json
import os
import random
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest
import scipy.io as sio_mat
import scipy.sparse as sp
import torch

from bad_input_helpers import disk_full
from conftest import make_tiny_dataset
from scalegnn import io as sio
from scalegnn.cli import main
from scalegnn.data.graphsaint import save_graphsaint
from scalegnn.errors import WriteError


def one_line(capsys, rc, *needles, absent=(".tmp",)) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and lines[0].startswith("scalegnn: error: "), (rc, err)
    assert "Traceback" not in err and len(lines[0]) <= 300, err
    for n in needles:
        assert n in lines[0], (n, lines[0])
    for n in absent:
        assert n not in lines[0], (n, lines[0])
    return lines[0]


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith((".tmp", ".old")))


# ----------------------------------------------------------------------------- writers
def test_torch_save_onto_a_full_disk_names_the_file_and_keeps_the_old_one(tmp_path, monkeypatch):
    target = tmp_path / "last.pt"
    target.write_bytes(b"old checkpoint")
    disk_full(monkeypatch)
    with pytest.raises(WriteError, match=r"last\.pt: cannot write \(No space left on device\)"), \
            sio.atomic_open(target) as f:
        torch.save({"w": torch.zeros(1000)}, f)
    assert target.read_bytes() == b"old checkpoint" and leftovers(tmp_path) == []


def test_torch_serializer_failure_without_a_cause_is_a_write_error(tmp_path, monkeypatch):
    """torch's zip writer reports a short write as ``RuntimeError: [enforce fail at
    inline_container.cc:672] . unexpected pos ...``; on a full disk that is the reason given."""
    monkeypatch.setattr(sio, "_free_bytes", lambda folder: 0)
    with pytest.raises(WriteError) as e, sio.atomic_open(tmp_path / "best.pt"):
        raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 80704 vs "
                           "80656")
    assert str(e.value) == f"{tmp_path / 'best.pt'}: cannot write (No space left on device)"
    assert list(tmp_path.iterdir()) == []


def test_numpy_short_write_names_the_file(tmp_path, monkeypatch):
    """``ndarray.tofile`` on a full disk raises ``OSError: 1386496 requested and 16352 written``
    (no errno, no file name)."""
    monkeypatch.setattr(sio, "_free_bytes", lambda folder: 0)
    with pytest.raises(WriteError, match=r"e\.npy: cannot write \(No space left on device\)"), \
            sio.atomic_open(tmp_path / "e.npy"):
        raise OSError("1386496 requested and 16352 written")
    assert list(tmp_path.iterdir()) == []


def test_read_only_folder_names_the_target_not_the_temporary(tmp_path, monkeypatch):
    def refuse(prefix="", suffix="", dir=None):
        raise OSError(errno.EROFS, "Read-only file system", f"{dir}/{prefix}dvmc8ngx{suffix}")
    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    for write in (lambda p: sio.atomic_write_text(p, "x"), lambda p: sio.atomic_save_npy(p, [1])):
        with pytest.raises(WriteError) as e:
            write(tmp_path / "x.csv")
        assert str(e.value) == f"{tmp_path / 'x.csv'}: cannot write (Read-only file system)"


def test_other_errors_inside_a_writer_are_not_write_errors(tmp_path):
    """A read of another file failing inside the writer keeps its own message."""
    with pytest.raises(FileNotFoundError), sio.atomic_open(tmp_path / "out.bin") as f:
        f.write((tmp_path / "missing.bin").read_bytes())
    with pytest.raises(ValueError, match="bug"), sio.atomic_open(tmp_path / "out.bin"):
        raise ValueError("bug")
    assert list(tmp_path.iterdir()) == []


def test_a_failed_append_is_cut_off(tmp_path, monkeypatch):
    log = tmp_path / "metrics.jsonl"
    sio.append_text(log, '{"epoch": 1}\n')
    real = os.write

    def half(fd, data):
        if len(data) > 4:
            real(fd, bytes(data[:4]))
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, data)
    monkeypatch.setattr(os, "write", half)
    with pytest.raises(WriteError, match=r"metrics\.jsonl: cannot write \(No space left"):
        sio.append_text(log, '{"epoch": 2}\n')
    assert log.read_text() == '{"epoch": 1}\n'


def test_atomic_folder_names_the_file_under_the_users_folder(tmp_path, monkeypatch):
    disk_full(monkeypatch)
    with pytest.raises(WriteError) as e, sio.atomic_folder(tmp_path / "out") as tmp:
        (tmp / "sub").mkdir()
        sio.atomic_write_text(tmp / "sub" / "a.json", "{}")
    assert str(e.value) == f"{tmp_path / 'out' / 'sub' / 'a.json'}: cannot write (No space " \
                           f"left on device)"
    assert list(tmp_path.iterdir()) == []


def test_write_npy_blocks_is_atomic(tmp_path):
    path = tmp_path / "x.npy"
    sio.write_npy_blocks(path, (4, 2), [np.ones((2, 2)), np.zeros((2, 2))])
    assert np.load(path).tolist() == [[1, 1], [1, 1], [0, 0], [0, 0]]
    with pytest.raises(ValueError, match="3 rows written"):
        sio.write_npy_blocks(path, (4, 2), [np.ones((3, 2))])
    assert np.load(path).shape == (4, 2) and leftovers(tmp_path) == []


# ----------------------------------------------------------------------------- readers
def test_corrupt_npy_header_is_one_line(tmp_path, capsys):
    """The reported case: 30 random bytes at offset 10 of feats.npy (numpy's header parser
    raised tokenize.TokenError); any seed gives one line naming the file."""
    save_graphsaint(make_tiny_dataset(), tmp_path / "gs")
    feats = tmp_path / "gs" / "feats.npy"
    good = feats.read_bytes()
    for seed in range(12):
        data = bytearray(good)
        data[10:40] = random.Random(seed).randbytes(30)
        feats.write_bytes(bytes(data))
        rc = main(["data", "info", str(tmp_path / "gs")])
        one_line(capsys, rc, str(feats), "not a readable .npy file")


def _corrupt(path: Path, seed: int) -> None:
    r = random.Random(seed)
    data = bytearray(path.read_bytes())
    if seed % 3 == 0:
        data = data[:r.randrange(len(data))]
    else:
        off = r.randrange(min(len(data), 300))
        data[off:off + 30] = r.randbytes(min(30, len(data) - off))
    path.write_bytes(bytes(data))


def _dataset_files(folder: Path) -> None:
    """The tiny dataset as a GraphSAINT folder (gs/), an .npz, a .mat and a CSV folder (c/)."""
    ds = make_tiny_dataset()
    save_graphsaint(ds, folder / "gs")
    a = ds.graph.to_scipy()
    np.savez(folder / "g.npz", adj_data=a.data, adj_indices=a.indices, adj_indptr=a.indptr,
             adj_shape=np.array(a.shape), attr_matrix=ds.features, labels=ds.labels)
    sio_mat.savemat(folder / "g.mat", {"network": sp.csc_matrix(a.astype(np.float64)),
                                        "group": sp.csc_matrix(np.eye(3)[ds.labels])})
    (folder / "c").mkdir()
    src, dst = ds.graph.edge_index()
    (folder / "c" / "g_edges.csv").write_text(
        "id_1,id_2\n" + "".join(f"{u},{v}\n" for u, v in zip(src, dst) if u < v))
    (folder / "c" / "g_target.csv").write_text(
        "id,label\n" + "".join(f"{i},{y}\n" for i, y in enumerate(ds.labels)))


@pytest.mark.parametrize("name", ["gs/feats.npy", "gs/adj_full.npz", "gs/role.json",
                                  "gs/class_map.json", "g.npz", "g.mat", "c/g_edges.csv",
                                  "c/g_target.csv"])
def test_damaged_dataset_files_are_one_line(tmp_path, capsys, name):
    _dataset_files(tmp_path / "ref")
    spec = name.split("/")[0] if "/" in name else name
    for seed in range(4):
        shutil.rmtree(tmp_path / "w", ignore_errors=True)
        shutil.copytree(tmp_path / "ref", tmp_path / "w")
        _corrupt(tmp_path / "w" / name, seed)
        rc = main(["data", "info", str(tmp_path / "w" / spec)])
        if rc != 0:
            one_line(capsys, rc, str(tmp_path / "w"))  # a file of the data
        capsys.readouterr()


@pytest.mark.parametrize("name,argv", [
    ("last.pt", ["train", "--resume", "{run}", "--epochs", "5", "--no-progress"]),
    ("best.pt", ["predict", "{run}", "--out", "{tmp}/p.npy"]),
    ("run.json", ["predict", "{run}", "--out", "{tmp}/p.npy"]),
    ("summary.json", ["report", "{run}", "--out", "{tmp}/r.html"]),
    ("config.yml", ["report", "{run}", "--out", "{tmp}/r.html"]),
])
def test_damaged_run_files_are_one_line(run_copy, tmp_path, capsys, name, argv):
    keep = (run_copy / name).read_bytes()
    for seed in (1, 3):
        (run_copy / name).write_bytes(keep)
        _corrupt(run_copy / name, seed)
        rc = main([a.format(run=run_copy, tmp=tmp_path) for a in argv])
        if rc != 0:
            one_line(capsys, rc)
        capsys.readouterr()


# ----------------------------------------------------------------------------- report, resume
def test_report_format_follows_the_suffix(run_copy, tmp_path, capsys):
    rc = main(["report", str(run_copy), "--out", str(tmp_path / "r.txt")])
    one_line(capsys, rc, f"--out {tmp_path / 'r.txt'}", ".png", ".html")
    assert not list(tmp_path.glob("r.*"))
    assert main(["report", str(run_copy), "--out", str(tmp_path / "page.html")]) == 0
    assert sorted(p.name for p in tmp_path.glob("page.*")) == ["page.html"]
    assert (tmp_path / "page.html").read_text().lstrip().lower().startswith("<!doctype html")
    assert main(["report", str(run_copy), "--out", str(tmp_path / "plot.png")]) == 0
    assert (tmp_path / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "plot.html").is_file()
    capsys.readouterr()


def test_report_warns_about_skipped_metrics_lines(run_copy, capsys):
    path = run_copy / "metrics.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text(lines[0] + '{"epoch": 2, "lo\x00\n' + "".join(lines[1:]) + '{"epo')
    assert main(["report", str(run_copy)]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("scalegnn: warning: "), err
    assert str(path) in err and "skipped 2 damaged line(s)" in err
    path.write_text("".join(lines))  # whole again: no warning
    assert main(["report", str(run_copy)]) == 0
    assert capsys.readouterr().err == ""


def test_resume_with_overwrite_is_refused(run_copy, capsys):
    before = json.loads((run_copy / "summary.json").read_text())
    rc = main(["train", "--resume", str(run_copy), "--overwrite"])
    one_line(capsys, rc, "--overwrite", "--resume")
    assert json.loads((run_copy / "summary.json").read_text()) == before
