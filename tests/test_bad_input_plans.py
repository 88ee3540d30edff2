"""Every mistake in a partition plan (or in writing one) is one line and exit 2, through the real
CLI (``scalegnn.cli.main``): missing, truncated, corrupt, inconsistent or mixed rank files and
plan.json; and old plans without part.json still load.

Each case builds a plan under ``tmp_path``, damages it and returns the argv to run; the command
must return 2 and print exactly one line, ``scalegnn: error: ...``, naming what the case lists
(:func:`bad_input_helpers.check_one_line_exit_2`). ``CASES`` holds this file's cases
(``len(CASES)`` is the number of bad inputs tried). Data and config mistakes:
``test_bad_input_data.py``, ``test_bad_input_config.py``.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from bad_input_helpers import Case, check_one_line_exit_2, deny, disk_full, registrar, write
from conftest import make_tiny_dataset
from scalegnn.dist.partition import partition_dataset
from scalegnn.dist.plan import PartitionPlan
from scalegnn.errors import PlanError

CASES: list[Case] = []
case = registrar(CASES)


# ----------------------------------------------------------------------------- helpers
def plan(tmp: Path, name="p", parts=2, seed=0, method="random") -> Path:
    partition_dataset(make_tiny_dataset(n=60), parts, tmp / name, method=method, seed=seed)
    return tmp / name


def dist_train(tmp: Path, plan_dir: Path, nprocs=2) -> list:
    return ["dist-train", "--nprocs", str(nprocs), "--plan", str(plan_dir),
            "--out", str(tmp / "run")]


def edit_npy(path: Path, fn) -> None:
    arr = np.load(path)
    np.save(path, fn(arr))


# ----------------------------------------------------------------------------- OS errors
@case("partition onto a full disk", "No space left on device", ".npy")
def _(tmp, mp):
    disk_full(mp)
    return ["partition", "planted:nodes=100", "--parts", "2", "--method", "random",
            "--out", str(tmp / "plan")]


@case("plan rank file unreadable", "indptr.npy", "Permission denied")
def _(tmp, mp):
    p = plan(tmp)
    deny(mp, os.path.join("rank_1", "indptr.npy"))
    return dist_train(tmp, p)


# ----------------------------------------------------------------------------- plans
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


# ----------------------------------------------------------------------------- the one test
@pytest.mark.parametrize("c", CASES, ids=[c.name for c in CASES])
def test_one_line_exit_2(c, tmp_path, monkeypatch, capsys):
    check_one_line_exit_2(c, tmp_path, monkeypatch, capsys)


# ----------------------------------------------------------------------------- beyond the CLI
def test_old_plans_without_part_json_still_load(tmp_path):
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
