"""Writes onto a real full or read-only disk (a small tmpfs mounted for the test): every command
that writes ends in one line naming the user's file (never a hidden temporary), exit 2, with
nothing torn (no temporary left, earlier files whole); a run stopped by a full disk resumes,
once there is room, to exactly the metrics of an uninterrupted run.

Mounting needs root (CAP_SYS_ADMIN); where it is not permitted the tests are skipped with the
reason. Every mount is unmounted by the fixture, whatever the test does. Simulated failures
(monkeypatched writes) are in ``test_io_errors.py``.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess

import pytest

from run_helpers import RUN, outcome
from scalegnn.cli import main

SMALL = ["--data", "planted:nodes=300,classes=3,features=8", "--epochs", "2", "--no-progress"]


@pytest.fixture
def disk(tmp_path):
    """``disk(size, name, ro=False)`` mounts a tmpfs of ``size`` at ``tmp_path/name``;
    ``disk.resize(folder, size)`` gives it more room. All are unmounted at the end."""
    mounted = []

    def mount(size: str = "2m", name: str = "disk", ro: bool = False):
        folder = tmp_path / name
        folder.mkdir()
        opts = f"size={size}" + (",ro" if ro else "")
        try:
            r = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(folder)],
                               check=False, capture_output=True, text=True)
        except OSError as e:  # no mount command
            pytest.skip(f"cannot mount a tmpfs here: {e}")
        if r.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip() or 'not permitted'}")
        mounted.append(folder)
        return folder

    def resize(folder, size: str):
        subprocess.run(["mount", "-o", f"remount,size={size}", str(folder)], check=True)

    mount.resize = resize
    try:
        yield mount
    finally:
        for folder in reversed(mounted):
            subprocess.run(["umount", "-l", str(folder)], check=False)


def fill(folder) -> None:
    """Take every free byte of ``folder``'s file system."""
    fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        for size in (1 << 20, 1 << 12, 1):
            try:
                while True:
                    os.write(fd, b"\0" * size)
            except OSError as e:
                assert e.errno == errno.ENOSPC, e
    finally:
        os.close(fd)


def error_line(capsys, rc, path, reason="No space left on device") -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and lines[0].startswith("scalegnn: error: "), (rc, err)
    assert str(path) in lines[0] and reason in lines[0] and "Traceback" not in err, err
    assert ".tmp" not in lines[0], lines[0]
    return lines[0]


def temporaries(folder) -> list[str]:
    return [str(p) for p in folder.rglob("*") if p.name.endswith((".tmp", ".old"))]


def whole_records(run) -> list[dict]:
    raw = (run / "metrics.jsonl").read_bytes()
    assert raw == b"" or raw.endswith(b"\n"), raw[-80:]
    return [json.loads(line) for line in raw.decode().splitlines()]


# ----------------------------------------------------------------------------- training
def test_train_and_resume_on_a_full_disk(disk, capsys):
    """2 MiB: the first last.pt does not fit (the reported torch traceback); a resume on the
    still-full disk is one line too; the files written before stay whole."""
    d = disk("2m")
    rc = main(["train", *SMALL, "--out", str(d / "run")])
    line = error_line(capsys, rc, d / "run")
    assert ".pt: cannot write" in line and not temporaries(d)
    assert whole_records(d / "run") and (d / "run" / "config.yml").is_file()
    rc = main(["train", "--resume", str(d / "run"), "--no-progress"])
    error_line(capsys, rc, d / "run")
    assert not temporaries(d)


def test_resume_after_freeing_space_is_bit_identical(disk, tmp_path, capsys):
    """9 MiB holds epoch 1's best.pt and last.pt but not epoch 2's last.pt beside the old one:
    the run stops there in one line, and once the disk is larger ``--resume`` ends with the
    metrics.jsonl and summary of the uninterrupted run."""
    assert main(["train", *RUN, "--out", str(tmp_path / "reference")]) == 0
    d = disk("9m")
    rc = main(["train", *RUN, "--out", str(d / "run")])
    error_line(capsys, rc, d / "run" / "last.pt")
    assert [r["epoch"] for r in whole_records(d / "run")] == [1, 2] and not temporaries(d)
    disk.resize(d, "64m")
    assert main(["train", "--resume", str(d / "run"), "--no-progress"]) == 0
    assert outcome(d / "run") == outcome(tmp_path / "reference")
    capsys.readouterr()


# ----------------------------------------------------------------------------- other writers
@pytest.fixture
def finished_run(tmp_path):
    assert main(["train", *SMALL, "--out", str(tmp_path / "run")]) == 0
    return tmp_path / "run"


@pytest.mark.parametrize("argv,name", [
    (["predict", "{run}", "--out", "{d}/p.npy"], "p.npy"),
    (["predict", "{run}", "--out", "{d}/p.csv"], "p.csv"),
    (["embed", "{run}", "--out", "{d}/e.npy"], "e.npy"),
    (["report", "{run}", "--out", "{d}/r.png"], "r.png"),
    (["partition", "planted:nodes=300", "--parts", "2", "--method", "random", "--out",
      "{d}/plan"], "plan"),
    (["data", "convert", "planted:nodes=300", "--to", "graphsaint", "{d}/conv"], "conv"),
    (["data", "synth", "planted", "--nodes", "300", "--out", "{d}/syn"], "syn"),
], ids=lambda v: v[0] if isinstance(v, list) else None)
def test_writers_on_a_full_disk(disk, finished_run, capsys, argv, name):
    d = disk("2m")
    capsys.readouterr()
    fill(d)
    rc = main([a.format(run=finished_run, d=d) for a in argv])
    error_line(capsys, rc, d / name)
    assert sorted(p.name for p in d.iterdir()) == ["filler"]  # nothing torn, nothing left
    (d / "filler").unlink()
    rc = main([a.format(run=finished_run, d=d) for a in argv])  # room again: it is written
    assert rc == 0 and (d / name).exists()
    capsys.readouterr()


def test_old_file_kept_when_the_new_one_does_not_fit(disk, finished_run, capsys):
    d = disk("2m")
    assert main(["predict", str(finished_run), "--out", str(d / "p.csv")]) == 0
    before = (d / "p.csv").read_bytes()
    capsys.readouterr()
    fill(d)
    rc = main(["predict", str(finished_run), "--out", str(d / "p.csv")])
    error_line(capsys, rc, d / "p.csv")
    assert (d / "p.csv").read_bytes() == before and not temporaries(d)


@pytest.mark.parametrize("command,name", [("predict", "p.csv"), ("embed", "e.npy"),
                                          ("report", "r.png"), ("report", "r.html")])
def test_read_only_out_names_the_users_path(disk, finished_run, capsys, command, name):
    d = disk("1m", ro=True)
    capsys.readouterr()
    rc = main([command, str(finished_run), "--out", str(d / name)])
    line = error_line(capsys, rc, d / name, reason="")
    assert "read-only" in line.lower() and f".{name}." not in line


def test_a_run_folder_on_a_read_only_disk(disk, capsys):
    d = disk("1m", ro=True)
    rc = main(["train", *SMALL, "--out", str(d / "run")])
    error_line(capsys, rc, d / "run", reason="Read-only file system")
    shutil.rmtree(d / "run", ignore_errors=True)
