"""The distributed benchmarks' shaped network (benchmarks/_shaped.py, shared by dist_bns.py and
dist_minibatch.py): the tc command, and a clean skip where namespaces or tc are unavailable."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def bench():
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "_shaped.py"
    spec = importlib.util.spec_from_file_location("_shaped_under_test", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_shape_command(bench):
    assert bench.shape_command("1gbit", "1mb") == (
        "ip link set lo up && tc qdisc add dev lo root tbf rate 1gbit burst 1mb latency 50ms")


def test_shaped_run_skips_without_tools(bench, monkeypatch, capsys):
    monkeypatch.setattr(bench.shutil, "which", lambda name: None)
    assert bench.run_shaped("dist_bns.py", "1gbit", "1mb", "50ms", ["--data", "x"]) == 0
    line = json.loads(capsys.readouterr().out.strip())
    assert line["kind"] == "skip" and "tc" in line["reason"]
