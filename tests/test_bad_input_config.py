"""Every mistake in a config or on the command line is one line and exit 2, through the real CLI
(``scalegnn.cli.main``): unreadable or misplaced config files, bad ``--set`` values, bad YAML
configs; and a closed output pipe is quiet.

Each case returns the argv to run; the command must return 2 and print exactly one line,
``scalegnn: error: ...``, naming what the case lists
(:func:`bad_input_helpers.check_one_line_exit_2`). ``CASES`` holds this file's cases
(``len(CASES)`` is the number of bad inputs tried). Data and plan mistakes:
``test_bad_input_data.py``, ``test_bad_input_plans.py``.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bad_input_helpers import Case, check_one_line_exit_2, registrar, write

CASES: list[Case] = []
case = registrar(CASES)


# ----------------------------------------------------------------------------- helpers
def train(tmp, *extra) -> list:
    return ["train", "--data", "planted:nodes=100", "--out", str(tmp / "run"), *extra]


# ----------------------------------------------------------------------------- OS errors
@case("unreadable config file", "c.yml", "Permission denied")
def _(tmp, mp):
    write(tmp / "c.yml", "params:\n  - lr: 0.1\n")
    real = Path.read_bytes
    mp.setattr(Path, "read_bytes", lambda p: (_ for _ in ()).throw(
        PermissionError(errno.EACCES, "Permission denied", str(p))) if p.name == "c.yml"
        else real(p))
    return train(tmp, "--config", str(tmp / "c.yml"))


@case("config path is a folder", "cfg.yml", "folder")
def _(tmp, mp):
    (tmp / "cfg.yml").mkdir()
    return train(tmp, "--config", str(tmp / "cfg.yml"))


# ----------------------------------------------------------------------------- configs
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
    check_one_line_exit_2(c, tmp_path, monkeypatch, capsys)


# ----------------------------------------------------------------------------- beyond the CLI
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
