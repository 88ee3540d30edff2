"""Every user mistake is one line and exit 2, through the real CLI (``scalegnn.cli.main``).

Each case builds its bad input under ``tmp_path`` and returns the argv to run; the command
must return 2 and print exactly one line, ``scalegnn: error: ...``, naming what the case lists.
``CASES`` holds them all (``len(CASES)`` is the number of bad inputs tried). OS failures that
root cannot see (read-only folders, chmod 000) and full disks are simulated by monkeypatching;
real chmod variants run only as a non-root user.
"""

from __future__ import annotations

import builtins
import errno
import gzip
import json
import os
import shutil
import subprocess
import sys
import tracemalloc
from pathlib import Path
from typing import Callable, NamedTuple

import numpy as np
import pytest

from conftest import make_tiny_dataset
from scalegnn.cli import main
from scalegnn.data import load_dataset
from scalegnn.data.graphsaint import save_graphsaint
from scalegnn.errors import DataError, PlanError


class Case(NamedTuple):
    name: str
    build: Callable  # (tmp_path, monkeypatch) -> argv
    needles: tuple   # substrings the error line must contain


CASES: list[Case] = []


def case(name: str, *needles: str):
    def register(fn):
        CASES.append(Case(name, fn, needles))
        return fn
    return register


# ----------------------------------------------------------------------------- helpers
def train(tmp, *extra) -> list:
    return ["train", "--data", "planted:nodes=100", "--out", str(tmp / "run"), *extra]


def write(path: Path, text) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    (path.write_bytes if isinstance(text, bytes) else path.write_text)(text)
    return path


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


def deny(monkeypatch, suffix: str, err=errno.EACCES, reason="Permission denied"):
    """Make builtins.open (used by json, csv, numpy) fail for paths ending in ``suffix``."""
    real = builtins.open

    def fake_open(file, *a, **kw):
        if isinstance(file, (str, os.PathLike)) and os.fspath(file).endswith(suffix):
            raise OSError(err, reason, os.fspath(file))
        return real(file, *a, **kw)
    monkeypatch.setattr(builtins, "open", fake_open)


def disk_full(monkeypatch):
    """Every file written through scalegnn.io fails with ENOSPC at its first write."""
    real = os.fdopen

    class Full:
        def __init__(self, f):
            self.f = f

        def write(self, *_):
            raise OSError(errno.ENOSPC, "No space left on device")

        def __getattr__(self, name):
            return getattr(self.f, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

    monkeypatch.setattr(os, "fdopen", lambda fd, *a, **kw: Full(real(fd, *a, **kw)))


def plan(tmp: Path, name="p", parts=2, seed=0, method="random") -> Path:
    from scalegnn.dist.partition import partition_dataset
    partition_dataset(make_tiny_dataset(n=60), parts, tmp / name, method=method, seed=seed)
    return tmp / name


def dist_train(tmp: Path, plan_dir: Path, nprocs=2) -> list:
    return ["dist-train", "--nprocs", str(nprocs), "--plan", str(plan_dir),
            "--out", str(tmp / "run")]


def edit_npy(path: Path, fn) -> None:
    arr = np.load(path)
    np.save(path, fn(arr))


# ----------------------------------------------------------------------------- 1. OS errors
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


@case("partition onto a full disk", "No space left on device", ".npy")
def _(tmp, mp):
    disk_full(mp)
    return ["partition", "planted:nodes=100", "--parts", "2", "--method", "random",
            "--out", str(tmp / "plan")]


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


@case("unreadable config file", "c.yml", "Permission denied")
def _(tmp, mp):
    write(tmp / "c.yml", "params:\n  - lr: 0.1\n")
    real = Path.read_bytes
    mp.setattr(Path, "read_bytes", lambda p: (_ for _ in ()).throw(
        PermissionError(errno.EACCES, "Permission denied", str(p))) if p.name == "c.yml"
        else real(p))
    return train(tmp, "--config", str(tmp / "c.yml"))


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


@case("config path is a folder", "cfg.yml", "folder")
def _(tmp, mp):
    (tmp / "cfg.yml").mkdir()
    return train(tmp, "--config", str(tmp / "cfg.yml"))


@case("labels CSV is a folder", "g_edges.csv", "no labels CSV")
def _(tmp, mp):
    write(tmp / "c" / "g_edges.csv", "0,1\n")
    (tmp / "c" / "g_target.csv").mkdir()
    return ["data", "info", str(tmp / "c" / "g_edges.csv")]


@case("plan rank file unreadable", "indptr.npy", "Permission denied")
def _(tmp, mp):
    p = plan(tmp)
    deny(mp, os.path.join("rank_1", "indptr.npy"))
    return dist_train(tmp, p)


# ----------------------------------------------------------------------------- 2. float ids/labels
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


# ----------------------------------------------------------------------------- 3. generator sizes
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


# ----------------------------------------------------------------------------- 4. plans
@case("plan rank folder missing", "rank_1")
def _(tmp, mp):
    p = plan(tmp)
    shutil.rmtree(p / "rank_1")
    return dist_train(tmp, p)


@case("plan rank file missing", "rank_0", "send_idx.npy")
def _(tmp, mp):
    p = plan(tmp)
    (p / "rank_0" / "send_idx.npy").unlink()
    return dist_train(tmp, p)


@case("plan rank file truncated", "features.npy")
def _(tmp, mp):
    p = plan(tmp)
    f = p / "rank_1" / "features.npy"
    f.write_bytes(f.read_bytes()[:200])
    return dist_train(tmp, p)


@case("plan rank file empty", "labels.npy")
def _(tmp, mp):
    p = plan(tmp)
    (p / "rank_0" / "labels.npy").write_bytes(b"")
    return dist_train(tmp, p)


@case("plan rank file corrupt", "owner.npy")
def _(tmp, mp):
    p = plan(tmp)
    (p / "rank_1" / "owner.npy").write_bytes(b"this is not numpy" * 10)
    return dist_train(tmp, p)


@case("plan rank file is an npz archive", "recv_idx.npy", "npz")
def _(tmp, mp):
    p = plan(tmp)
    with open(p / "rank_0" / "recv_idx.npy", "wb") as f:
        np.savez(f, a=np.arange(3))
    return dist_train(tmp, p)


@case("plan indptr of the wrong length", "indptr.npy", "length")
def _(tmp, mp):
    p = plan(tmp)
    edit_npy(p / "rank_0" / "indptr.npy", lambda a: a[:-1])
    return dist_train(tmp, p)


@case("plan indices out of range", "indices.npy", "out of range")
def _(tmp, mp):
    p = plan(tmp)
    edit_npy(p / "rank_1" / "indices.npy", lambda a: a + 10**6)
    return dist_train(tmp, p)


@case("plan features with missing rows", "features.npy", "rows")
def _(tmp, mp):
    p = plan(tmp)
    edit_npy(p / "rank_1" / "features.npy", lambda a: a[:-2])
    return dist_train(tmp, p)


@case("plan features of another width", "features.npy", "columns")
def _(tmp, mp):
    p = plan(tmp)
    for r in range(2):
        edit_npy(p / f"rank_{r}" / "features.npy", lambda a: a[:, :-1])
    return dist_train(tmp, p)


@case("plan mask of the wrong length", "val_mask.npy", "rows")
def _(tmp, mp):
    p = plan(tmp)
    edit_npy(p / "rank_0" / "val_mask.npy", lambda a: a[1:])
    return dist_train(tmp, p)


@case("plan send_ptr of the wrong length", "send_ptr.npy")
def _(tmp, mp):
    p = plan(tmp)
    edit_npy(p / "rank_0" / "send_ptr.npy", lambda a: np.r_[a, a[-1]])
    return dist_train(tmp, p)


@case("plan send_ptr not monotone", "send_ptr.npy")
def _(tmp, mp):
    p = plan(tmp, parts=3)
    edit_npy(p / "rank_0" / "send_ptr.npy", lambda a: np.r_[0, a[-1], a[2:]])
    return dist_train(tmp, p, nprocs=3)


@case("plan with rank folders from two plans", "rank_1", "part.json", "different plans")
def _(tmp, mp):
    a, b = plan(tmp, "a", seed=0), plan(tmp, "b", seed=1)
    shutil.rmtree(a / "rank_1")
    shutil.copytree(b / "rank_1", a / "rank_1")
    return dist_train(tmp, a)


@case("old-style plans mixed (no part.json)", "send_ptr.npy", "different plans")
def _(tmp, mp):
    a, b = plan(tmp, "a", seed=0), plan(tmp, "b", seed=1)
    for p in (a, b):
        meta = json.loads((p / "plan.json").read_text())
        meta.pop("plan_id")
        write(p / "plan.json", json.dumps(meta))
        for r in range(2):
            (p / f"rank_{r}" / "part.json").unlink()
    shutil.rmtree(a / "rank_1")
    shutil.copytree(b / "rank_1", a / "rank_1")
    return dist_train(tmp, a)


@case("plan rank folders swapped", "rank_0", "part.json", "rank")
def _(tmp, mp):
    p = plan(tmp)
    os.rename(p / "rank_0", p / "tmp")
    os.rename(p / "rank_1", p / "rank_0")
    os.rename(p / "tmp", p / "rank_1")
    return dist_train(tmp, p)


@case("plan.json not an object", "plan.json")
def _(tmp, mp):
    p = plan(tmp)
    write(p / "plan.json", "[1, 2]")
    return dist_train(tmp, p)


@case("plan.json with a bad part count", "plan.json", "parts")
def _(tmp, mp):
    p = plan(tmp)
    meta = json.loads((p / "plan.json").read_text())
    write(p / "plan.json", json.dumps({**meta, "parts": "two"}))
    return dist_train(tmp, p)


# ----------------------------------------------------------------------------- 5. configs
CONFIG_SETS = [
    ("params.lr=[1", "--set params.lr", "invalid YAML"),
    ("params.lr=", "params.lr=", "empty value"),
    ("=0.1", "empty key"),
    ("params.lr=nan", "params.lr", "nan"),
    ("params.lr=.inf", "params.lr", "inf"),
    ("params.lr=0", "params.lr", "> 0"),
    ("params.weight_decay=-1", "params.weight_decay", ">= 0"),
    ("params.weight_decay=.nan", "params.weight_decay", "nan"),
    ("network.dim=.inf", "network.dim", "inf"),
    ("network.dim=1e12", "network.dim", "1048576"),
    ("network.dim=true", "network.dim", "True"),
    ("params.grad_clip=.nan", "params.grad_clip", "nan"),
    ("params.dropout=.nan", "params.dropout", "nan"),
    ("params.sample_coverage=.inf", "params.sample_coverage", "inf"),
    ("params.eval_batch_rows=1e15", "params.eval_batch_rows"),
    ("params.pool_depth=100000", "params.pool_depth", "1024"),
    ("params.sampler_threads=1000000", "params.sampler_threads", "4096"),
    ("phase.end=100000000000", "phase[0].end", "10000000"),
    ("phase.num_root=0", "phase[0].num_root"),
    ("phase.num_root=1.5", "phase[0].num_root", "1.5"),
    ("phase.depth=true", "phase[0].depth", "True"),
    ("phase.size_subgraph=.nan", "phase[0].size_subgraph", "nan"),
    ("phase.size_frontier=-3", "phase[0].size_frontier"),
    ("phase.size_subg_edge=abc", "phase[0].size_subg_edge", "abc"),
    ("phase.max_deg=-1", "phase[0].max_deg"),
    ("phase.eta=.inf", "phase[0].eta", "inf"),
    ("phase.order=2.5", "phase[0].order", "2.5"),
    ("params.norm_loss=maybe", "params.norm_loss"),
    ("params.lr=2021-02-31", "--set params.lr", "YAML"),
    ("network.aggr=[1, 2]", "network.aggr"),
]
for _assign, *_needles in CONFIG_SETS:
    CASES.append(Case(f"--set {_assign}", lambda tmp, mp, a=_assign: train(tmp, "--set", a),
                      tuple(_needles)))

CONFIG_FILES = [
    ("config not UTF-8", b"network:\n  - dim: \xff\xfe\n", "c.yml", "UTF-8"),
    ("config invalid YAML", "network: [\n", "c.yml", "invalid YAML"),
    ("config phase: 3", "phase: 3\n", "c.yml", "phase"),
    ("config phase: [1, 2]", "phase: [1, 2]\n", "c.yml", "phase"),
    ("config phase end 'x'", "phase: [{end: 'x', sampler: 'rw'}]\n", "phase[0].end", "'x'"),
    ("config phase without end", "phase: [{sampler: 'rw'}]\n", "phase[0].end", "missing"),
    ("config lr .nan", "params: [{lr: .nan}]\n", "params.lr", "nan"),
    ("config dim 1e12", "network: [{dim: 1.0e+12}]\n", "network.dim"),
    ("config impossible date", "params: [{lr: 2021-02-31}]\n", "c.yml", "YAML"),
    ("config is a list", "- 1\n- 2\n", "c.yml", "mapping"),
]
for _name, _text, *_needles in CONFIG_FILES:
    CASES.append(Case(_name, lambda tmp, mp, t=_text: train(
        tmp, "--config", str(write(tmp / "c.yml", t))), tuple(_needles)))


# ----------------------------------------------------------------------------- the one test
@pytest.mark.parametrize("c", CASES, ids=[c.name for c in CASES])
def test_one_line_exit_2(c, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)                  # a default run folder would land here
    argv = c.build(tmp_path, monkeypatch)
    rc = main(argv)
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert rc == 2, (rc, err)
    assert len(lines) == 1, err
    assert lines[0].startswith("scalegnn: error: "), err
    assert "Traceback" not in err and not out.strip(), (out, err)
    for needle in c.needles:
        assert needle in lines[0], (needle, lines[0])


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


def test_old_plans_without_part_json_still_load(tmp_path):
    from scalegnn.dist.plan import PartitionPlan
    p = plan(tmp_path)
    meta = json.loads((p / "plan.json").read_text())
    meta.pop("plan_id")
    write(p / "plan.json", json.dumps(meta))
    for r in range(2):
        (p / f"rank_{r}" / "part.json").unlink()
    loaded = PartitionPlan.load(p, world_size=2)
    assert sum(loaded.rank(r).num_inner for r in range(2)) == 60
    (p / "rank_0" / "deg_full.npy").write_bytes(b"")
    with pytest.raises(PlanError, match="deg_full.npy"):
        PartitionPlan.load(p)


def _cli() -> str:
    exe = Path(sys.executable).parent / "scalegnn"
    return str(exe) if exe.is_file() else f"{sys.executable} -m scalegnn"


@pytest.mark.parametrize("reader", ["head -c 10", "head -c 0"])
def test_broken_pipe_is_quiet(reader):
    r = subprocess.run(f"{_cli()} data info planted:nodes=200 | {reader}", shell=True,
                       capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, PYTHONWARNINGS="ignore"))
    assert "Traceback" not in r.stderr and "BrokenPipe" not in r.stderr, r.stderr
    assert r.stderr.strip() == ""


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
