"""CLI: ``scalegnn partition make ... --report`` (also as ``partition DATA ...``), ``partition
compare`` (JSON + PNG), ``partition shp``, their help and their one-line refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scalegnn.cli import main as cli_main
from scalegnn.dist.plan import PartitionPlan

DATA = "planted:nodes=400,classes=3,features=8"


def test_partition_report(tmp_path, capsys):
    rc = cli_main(["partition", DATA, "--parts", "3", "--method", "rp", "--out",
                   str(tmp_path / "p"), "--report"])
    assert rc == 0
    lines = capsys.readouterr().out.strip().splitlines()
    out = json.loads(lines[0])
    plan = PartitionPlan.load(tmp_path / "p", world_size=3)
    rep = out["report"]
    assert rep["volume_total"] == plan.meta["totals"]["comm_volume"] == out["comm_volume"]
    assert rep["volume_max"] == max(s["send_volume"] for s in plan.meta["stats"])
    assert {"volume_avg", "messages_avg", "messages_max", "compute_imbalance",
            "partition_s"} <= set(rep)
    assert lines[1].split()[:2] == ["method", "K"] and lines[2].split()[:2] == ["rp", "3"]
    rc = cli_main(["partition", DATA, "--parts", "2", "--method", "random", "--report"])
    assert rc == 0 and "plan" not in json.loads(capsys.readouterr().out.splitlines()[0])


def test_partition_compare(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    methods = "gp,gp:cut,rp"
    try:
        import mtkahypar  # noqa: F401
        methods = "hp," + methods
    except ImportError:
        pass
    rc = cli_main(["partition", "compare", DATA, "--methods", methods, "--parts", "2,4",
                   "--out", str(tmp_path / "t.json"), "--plot", str(tmp_path / "t.png")])
    assert rc == 0
    res = json.loads((tmp_path / "t.json").read_text())
    assert [(r["method"], r["parts"]) for r in res["rows"]] == \
        [(m, k) for k in (2, 4) for m in methods.split(",")]
    assert (tmp_path / "t.png").read_bytes()[:4] == b"\x89PNG"
    by = {(r["method"], r["parts"]): r for r in res["rows"]}
    assert res["geomean_ratios"]["gp/rp_volume_avg"] == pytest.approx(
        (by["gp", 2]["volume_avg"] / by["rp", 2]["volume_avg"]
         * by["gp", 4]["volume_avg"] / by["rp", 4]["volume_avg"]) ** 0.5)
    assert "geomean_ratios" in capsys.readouterr().out


def test_partition_shp_cli(tmp_path, capsys):
    pytest.importorskip("mtkahypar")
    rc = cli_main(["partition", "shp", DATA, "--parts", "2", "--sampler", "rw",
                   "--budget", "num_root=20,depth=2", "--theta", "0.2", "--eval-batches", "10",
                   "--json", str(tmp_path / "s.json"), "--out", str(tmp_path / "plan")])
    assert rc == 0
    res = json.loads((tmp_path / "s.json").read_text())
    (row,) = res["rows"]
    assert row["nets"] >= row["nets_needed"] and row["hp_volume"] >= 0 and row["shp_volume"] >= 0
    plan = PartitionPlan.load(tmp_path / "plan", world_size=2)       # the SHP partition as a plan
    assert plan.meta["method"].startswith("shp/rw") and plan.assignment().max() == 1
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["plan"] == str(tmp_path / "plan")


def test_make_is_the_default_subcommand(tmp_path, capsys):
    """``partition DATA ...`` (options before or after DATA) is ``partition make DATA ...``."""
    outs = []
    for argv in (["partition", "make", DATA, "--parts", "2", "--method", "rp", "--report"],
                 ["partition", DATA, "--parts", "2", "--method", "rp", "--report"],
                 ["partition", "--parts", "2", DATA, "--method", "rp", "--report"]):
        assert cli_main(argv) == 0
        outs.append(json.loads(capsys.readouterr().out.splitlines()[0]))
    assert outs[0]["report"]["volume_total"] == outs[1]["report"]["volume_total"] \
        == outs[2]["report"]["volume_total"]


@pytest.mark.parametrize("form", ["make", "compare", "shp"])
def test_each_subcommand_has_its_help(form, capsys):
    with pytest.raises(SystemExit) as e:
        cli_main(["partition", form, "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: scalegnn partition {form}") and "--parts" in out
    assert ("--methods" in out) == (form == "compare") and ("--theta" in out) == (form == "shp")


def test_partition_alone_lists_its_subcommands(capsys):
    assert cli_main(["partition"]) == 2
    assert "{make,compare,shp}" in capsys.readouterr().out


@pytest.mark.parametrize("argv,msg", [
    (["partition", DATA, "--parts", "2", "--method", "kahip", "--out", "x"], "--method"),
    (["partition", DATA, "--parts", "2"], "--out"),
    (["partition", DATA, "--parts", "2,4", "--report"], "--parts"),
    (["partition", "compare", DATA, "--methods", "hp:cut", "--parts", "2"], "--methods"),
    (["partition", "compare", "--parts", "2"], "missing DATA"),
    (["partition", "make", "--parts", "2", "--report"], "missing DATA"),
    (["partition", "shp", DATA, "--parts", "2", "--budget", "num_root"], "--budget"),
    (["partition", "shp", DATA, "--parts", "2", "--theta", "0"], "--theta"),
    (["partition", "shp", DATA, "--parts", "2,4", "--out", "p"], "single --parts"),
])
def test_partition_cli_refusals(argv, msg, capsys):
    assert cli_main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and msg in err[0]


# ----------------------------------------------------------------------------- --out PLAN rules
def _files(folder):
    """Every file under ``folder`` with its bytes (a plan, a run, anything)."""
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


def _make(out, *extra, parts="2"):
    return ["partition", "make", DATA, "--parts", parts, "--method", "rp", "--out", str(out),
            *extra]


def _shp(out, *extra):
    return ["partition", "shp", DATA, "--parts", "2", "--budget", "num_root=20,depth=2",
            "--min-batches", "4", "--eval-batches", "4", "--out", str(out), *extra]


def _refused(capsys, *needles) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("scalegnn: error: --out "), err
    assert all(n in err[0] for n in needles), err[0]
    return err[0]


@pytest.mark.parametrize("form", ["make", "shp"])
def test_a_plan_is_replaced_only_with_overwrite(form, tmp_path, capsys):
    """Like ``train --out``: a second plan into a plan folder is refused in one line naming the
    folder (the old plan untouched); ``--overwrite`` replaces it whole (no stale rank folder)."""
    if form == "shp":
        pytest.importorskip("mtkahypar")
    out = tmp_path / "plan"
    argv = _make if form == "make" else _shp
    assert cli_main(argv(out, *(["--parts", "3"] if form == "make" else []))) == 0
    capsys.readouterr()
    before = _files(out)
    assert cli_main(argv(out)) == 2
    _refused(capsys, str(out), "already holds a plan", "--overwrite")
    assert _files(out) == before
    assert cli_main(argv(out, "--overwrite")) == 0
    capsys.readouterr()
    plan = PartitionPlan.load(out, world_size=2)
    assert sorted(p.name for p in out.iterdir()) == ["assignment.npy", "plan.json", "rank_0",
                                                     "rank_1"]
    assert plan.meta["plan_id"] != json.loads(before[Path("plan.json")])["plan_id"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]   # no temporaries


@pytest.mark.parametrize("form", ["make", "shp"])
@pytest.mark.parametrize("overwrite", [[], ["--overwrite"]], ids=["", "overwrite"])
@pytest.mark.parametrize("kind,needle", [("run", "holds a run directory (config.yml)"),
                                         ("other", "folder is not empty ('notes.txt')"),
                                         ("plan+other", "folder is not empty ('notes.txt')")])
def test_a_folder_that_is_not_a_plan_is_never_written(form, overwrite, kind, needle, tmp_path,
                                                      capsys):
    """A run directory, or a folder with other files (even beside a plan), is refused with or
    without --overwrite, before any data is read, and stays as it was: no plan file mixed in."""
    out = tmp_path / "folder"
    out.mkdir()
    if kind == "run":
        (out / "config.yml").write_text("network: {dim: 8}\n")
        (out / "metrics.jsonl").write_text('{"epoch": 1}\n')
    else:
        (out / "notes.txt").write_text("mine\n")
    if kind == "plan+other":
        assert cli_main(_make(tmp_path / "p")) == 0
        for p in (tmp_path / "p").iterdir():
            p.rename(out / p.name)
        (tmp_path / "p").rmdir()
    capsys.readouterr()
    before = _files(out)
    argv = (_make if form == "make" else _shp)(out, *overwrite)
    argv[argv.index(DATA)] = str(tmp_path / "no-such-data")  # refused before the data is read
    assert cli_main(argv) == 2
    _refused(capsys, str(out), needle, "choose another folder")
    assert _files(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folder"]


def test_an_empty_folder_or_a_new_path_is_written(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    for out in (tmp_path / "empty", tmp_path / "new" / "plan"):
        assert cli_main(_make(out)) == 0
        assert PartitionPlan.load(out, world_size=2).parts == 2
    (tmp_path / "file").write_text("x")
    capsys.readouterr()
    assert cli_main(_make(tmp_path / "file", "--overwrite")) == 2
    _refused(capsys, "exists and is not a folder")
    assert (tmp_path / "file").read_text() == "x"


@pytest.mark.parametrize("kind,needle", [("plan", "already holds a plan"),
                                         ("other", "folder is not empty ('notes.txt')")])
def test_dist_train_parts_writes_its_plan_by_the_same_rules(kind, needle, tmp_path, capsys):
    """``dist-train --data D --parts K --plan P`` partitions into P like ``partition make --out
    P``: an existing plan or a folder of other files is refused before anything is read."""
    plan = tmp_path / "plan"
    if kind == "plan":
        assert cli_main(_make(plan)) == 0
    else:
        plan.mkdir()
        (plan / "notes.txt").write_text("mine\n")
    capsys.readouterr()
    before = _files(plan)
    assert cli_main(["dist-train", "--nprocs", "2", "--data", DATA, "--parts", "2", "--plan",
                     str(plan), "--out", str(tmp_path / "run"), "--epochs", "1"]) == 2
    _refused(capsys, str(plan), needle)
    assert _files(plan) == before and not (tmp_path / "run").exists()
