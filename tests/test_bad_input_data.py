"""Every mistake in the data a user points scalegnn at is one line and exit 2, through the real
CLI (``scalegnn.cli.main``): unreadable or misplaced dataset files, fractional ids and labels in
every format, generator sizes beyond memory.

Each case builds its bad input under ``tmp_path`` and returns the argv to run; the command
must return 2 and print exactly one line, ``scalegnn: error: ...``, naming what the case lists
(:func:`bad_input_helpers.check_one_line_exit_2`). ``CASES`` holds this file's cases
(``len(CASES)`` is the number of bad inputs tried). OS failures that root cannot see (read-only
folders, chmod 000) and full disks are simulated by monkeypatching; real chmod variants run only
as a non-root user. Config and plan mistakes: ``test_bad_input_config.py``,
``test_bad_input_plans.py``.
"""

from __future__ import annotations

import errno
import gzip
import json
import os
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from bad_input_helpers import Case, check_one_line_exit_2, deny, disk_full, registrar, write
from conftest import make_tiny_dataset
from scalegnn.cli import main
from scalegnn.data import load_dataset
from scalegnn.data.graphsaint import save_graphsaint
from scalegnn.errors import DataError

CASES: list[Case] = []
case = registrar(CASES)


# ----------------------------------------------------------------------------- helpers
def graphsaint_folder(tmp: Path) -> Path:
    save_graphsaint(make_tiny_dataset(), tmp / "gs")
    return tmp / "gs"


def csv_folder(tmp: Path, edges="id_1,id_2\n0,1\n1,2\n2,3\n",
               labels="id,label\n" + "".join(f"{i},{i % 2}\n" for i in range(8))) -> Path:
    write(tmp / "c" / "g_edges.csv", edges)
    write(tmp / "c" / "g_target.csv", labels)
    return tmp / "c"


def ogb_folder(tmp: Path, **replace) -> Path:
    ds = make_tiny_dataset()
    src, dst = ds.graph.edge_index()
    files = {"raw/edge.csv.gz": "".join(f"{u},{v}\n" for u, v in zip(src, dst) if u < v),
             "raw/node-label.csv.gz": "".join(f"{y}\n" for y in ds.labels),
             "split/s/train.csv.gz": "".join(f"{i}\n" for i in ds.train_idx),
             "split/s/valid.csv.gz": "".join(f"{i}\n" for i in ds.val_idx),
             "split/s/test.csv.gz": "".join(f"{i}\n" for i in ds.test_idx)}
    files.update(replace)
    for name, text in files.items():
        write(tmp / "o" / name, gzip.compress(text.encode()))
    return tmp / "o"


def npz_file(tmp: Path, **replace) -> Path:
    ds = make_tiny_dataset()
    a = ds.graph.to_scipy()
    arrays = dict(adj_data=a.data, adj_indices=a.indices, adj_indptr=a.indptr,
                  adj_shape=np.array(a.shape), attr_matrix=ds.features, labels=ds.labels)
    arrays.update(replace)
    np.savez(tmp / "g.npz", **arrays)
    return tmp / "g.npz"


# ----------------------------------------------------------------------------- OS errors
@case("synth into a read-only folder", "ro", "Permission denied")
def _(tmp, mp):
    (tmp / "ro").mkdir()
    import tempfile

    def refuse(*a, dir=None, **kw):
        raise PermissionError(errno.EACCES, "Permission denied", str(dir))
    mp.setattr(tempfile, "mkdtemp", refuse)
    return ["data", "synth", "planted", "--nodes", "100", "--out", str(tmp / "ro" / "x")]


@case("synth onto a full disk", "full", "No space left on device")
def _(tmp, mp):
    disk_full(mp)
    return ["data", "synth", "planted", "--nodes", "100", "--out", str(tmp / "full")]


@case("convert onto a full disk", "out", "No space left on device")
def _(tmp, mp):
    disk_full(mp)
    return ["data", "convert", "planted:nodes=100", "--to", "graphsaint", str(tmp / "out")]


@case("synth --out inside a file", "afile", "cannot write")
def _(tmp, mp):
    write(tmp / "afile", "x")
    return ["data", "synth", "planted", "--nodes", "100", "--out", str(tmp / "afile" / "x")]


@case("unreadable role.json", "role.json", "Permission denied")
def _(tmp, mp):
    folder = graphsaint_folder(tmp)
    deny(mp, "role.json")
    return ["data", "info", str(folder)]


@case("unreadable feats.npy", "feats.npy", "Permission denied")
def _(tmp, mp):
    folder = graphsaint_folder(tmp)
    deny(mp, "feats.npy")
    return ["data", "info", str(folder)]


@case("unreadable labels CSV", "g_target.csv", "Permission denied")
def _(tmp, mp):
    folder = csv_folder(tmp)
    deny(mp, "g_target.csv")
    return ["data", "info", str(folder)]


@case("unreadable dataset folder", "locked", "Permission denied")
def _(tmp, mp):
    (tmp / "locked").mkdir()
    real = Path.iterdir

    def iterdir(p):
        if p.name == "locked":
            raise PermissionError(errno.EACCES, "Permission denied", str(p))
        return real(p)
    mp.setattr(Path, "iterdir", iterdir)
    return ["data", "info", str(tmp / "locked")]


@case("feats.npy is a folder", "feats.npy", "found a folder")
def _(tmp, mp):
    folder = graphsaint_folder(tmp)
    (folder / "feats.npy").unlink()
    (folder / "feats.npy").mkdir()
    return ["data", "info", str(folder)]


@case("labels CSV is a folder", "no labels CSV", "--labels")
def _(tmp, mp):
    write(tmp / "c" / "g_edges.csv", "0,1\n")
    (tmp / "c" / "g_target.csv").mkdir()
    return ["data", "info", str(tmp / "c")]


# ----------------------------------------------------------------------------- float ids/labels
@case("edge list with a float node id", "g_edges.csv", "'1.5'")
def _(tmp, mp):
    return ["data", "info", str(csv_folder(tmp, edges="id_1,id_2\n0,1\n1,1.5\n"))]


@case("edge list whose first line has a float id", "g_edges.csv", "'2.5'")
def _(tmp, mp):
    return ["data", "info", str(csv_folder(tmp, edges="0,2.5\n1,2\n"))]


@case("labels CSV with a fractional label", "g_target.csv", "'2.7'")
def _(tmp, mp):
    labels = "id,label\n" + "".join(f"{i},{i % 2}\n" for i in range(7)) + "7,2.7\n"
    return ["data", "info", str(csv_folder(tmp, labels=labels))]


@case("labels CSV with a fractional node id", "g_target.csv", "'3.5'")
def _(tmp, mp):
    labels = "id,label\n0,1\n1,0\n2,1\n3.5,0\n"
    return ["data", "info", str(csv_folder(tmp, labels=labels))]


@case("npz with fractional float labels", "g.npz", "2.7")
def _(tmp, mp):
    y = make_tiny_dataset().labels.astype(np.float64)
    y[5] = 2.7
    return ["data", "info", str(npz_file(tmp, labels=y))]


@case("npz with an absurd class id", "g.npz", "class id 1000000000000")
def _(tmp, mp):
    y = make_tiny_dataset().labels.copy()
    y[0] = 10**12
    return ["data", "info", str(npz_file(tmp, labels=y))]


@case("npz with a fractional adjacency shape", "g.npz", "shape", "2.5")
def _(tmp, mp):
    return ["data", "info", str(npz_file(tmp, adj_shape=np.array([40.0, 2.5])))]


@case("OGB edge.csv.gz with float ids", "edge.csv.gz", "1.5")
def _(tmp, mp):
    return ["data", "info", str(ogb_folder(tmp, **{"raw/edge.csv.gz": "0,1\n1,1.5\n"}))]


@case("OGB node-label.csv.gz with a fractional label", "node-label.csv.gz", "2.7")
def _(tmp, mp):
    labels = "".join(f"{y}\n" for y in make_tiny_dataset().labels[:-1]) + "2.7\n"
    return ["data", "info", str(ogb_folder(tmp, **{"raw/node-label.csv.gz": labels}))]


@case("GraphSAINT class_map with a fractional label", "class_map.json", "2.7")
def _(tmp, mp):
    folder = graphsaint_folder(tmp)
    cmap = json.loads((folder / "class_map.json").read_text())
    cmap["3"] = 2.7
    write(folder / "class_map.json", json.dumps(cmap))
    return ["data", "info", str(folder)]


@case("GraphSAINT role.json with a fractional node id", "role.json", "1.5")
def _(tmp, mp):
    folder = graphsaint_folder(tmp)
    role = json.loads((folder / "role.json").read_text())
    role["te"][0] = 1.5
    write(folder / "role.json", json.dumps(role))
    return ["data", "info", str(folder)]


@case("features JSON with a fractional feature id", "g_feats.json", "1.5")
def _(tmp, mp):
    folder = csv_folder(tmp)
    write(folder / "g_feats.json", json.dumps({str(i): [0, 1.5] for i in range(8)}))
    return ["data", "info", str(folder)]


# ----------------------------------------------------------------------------- generator sizes
def little_memory(mp, nbytes=1 << 30):
    mp.setattr("scalegnn.memory.available_memory", lambda: nbytes)


@case("kronecker scale beyond memory", "kronecker:24:16", "1.0 GiB", "memory")
def _(tmp, mp):
    little_memory(mp)
    return ["data", "info", "kronecker:24:16"]


@case("planted nodes beyond memory", "planted:nodes=100000000", "1.0 GiB")
def _(tmp, mp):
    little_memory(mp)
    return ["data", "info", "planted:nodes=100000000"]


@case("kronecker beyond any machine", "kronecker:36:16", "TiB")
def _(tmp, mp):
    return ["data", "info", "kronecker:36:16"]


@case("synth kronecker beyond memory", "kronecker:26:16", "1.0 GiB")
def _(tmp, mp):
    little_memory(mp)
    return ["data", "synth", "kronecker", "--scale", "26", "--out", str(tmp / "k")]


@case("train on a planted spec beyond memory", "planted:nodes=100000000,features=512")
def _(tmp, mp):
    little_memory(mp)
    return ["train", "--data", "planted:nodes=100000000,features=512", "--out",
            str(tmp / "run")]


@case("planted with an infinite degree", "degree", "inf")
def _(tmp, mp):
    return ["data", "info", "planted:degree=inf"]


# ----------------------------------------------------------------------------- the one test
@pytest.mark.parametrize("c", CASES, ids=[c.name for c in CASES])
def test_one_line_exit_2(c, tmp_path, monkeypatch, capsys):
    check_one_line_exit_2(c, tmp_path, monkeypatch, capsys)


# ----------------------------------------------------------------------------- beyond the CLI
def test_memory_check_comes_before_allocating(monkeypatch):
    little_memory(monkeypatch, 64 << 20)
    tracemalloc.start()
    try:
        with pytest.raises(DataError, match="kronecker:22:16"):
            load_dataset("kronecker:22:16")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20


def test_whole_number_floats_are_accepted(tmp_path):
    labels = "id,label\n" + "".join(f"{i}.0,{i % 2}.0\n" for i in range(8))
    ds = load_dataset(str(csv_folder(tmp_path, labels=labels)))
    assert ds.labels.tolist() == [i % 2 for i in range(8)]
    y = make_tiny_dataset().labels
    assert np.array_equal(load_dataset(str(npz_file(tmp_path, labels=y.astype(float)))).labels, y)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads and writes through chmod")
def test_real_chmod_000_and_read_only_out(tmp_path, capsys):
    folder = graphsaint_folder(tmp_path)
    (folder / "role.json").chmod(0)
    (tmp_path / "ro").mkdir()
    (tmp_path / "ro").chmod(0o500)
    try:
        for argv, needle in ((["data", "info", str(folder)], "role.json"),
                             (["data", "synth", "planted", "--nodes", "100", "--out",
                               str(tmp_path / "ro" / "x")], "ro")):
            assert main(argv) == 2
            err = capsys.readouterr().err
            assert err.count("\n") == 1 and needle in err and "Permission denied" in err
    finally:
        (tmp_path / "ro").chmod(0o700)
