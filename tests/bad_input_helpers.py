"""Shared by the ``test_bad_input_*.py`` files: the bad-input case registry, the one check every
case must pass (exit 2, exactly one ``scalegnn: error: ...`` line naming what the case lists),
and the helpers that write files or simulate OS failures (denied reads, full disks)."""

from __future__ import annotations

import builtins
import errno
import os
from pathlib import Path
from typing import Callable, NamedTuple

from scalegnn.cli import main


class Case(NamedTuple):
    name: str
    build: Callable  # (tmp_path, monkeypatch) -> argv
    needles: tuple   # substrings the error line must contain


def registrar(cases: list):
    """The ``@case(name, *needles)`` decorator of a test file: it appends the decorated builder
    to that file's ``cases`` list."""
    def case(name: str, *needles: str):
        def register(fn):
            cases.append(Case(name, fn, needles))
            return fn
        return register
    return case


def check_one_line_exit_2(c: Case, tmp_path, monkeypatch, capsys) -> None:
    """Build the case's bad input, run the CLI on it: exit 2 and one error line with the needles."""
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


def write(path: Path, text) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    (path.write_bytes if isinstance(text, bytes) else path.write_text)(text)
    return path


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
