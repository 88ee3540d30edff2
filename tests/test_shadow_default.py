"""shaDow-GNN's shipped default config (src/scalegnn/configs/methods/shadow.yml): it ships
inside the package, loads, is dataset-free, and trains with early stopping."""

from __future__ import annotations

import importlib.resources
import subprocess
import sys
import tomllib
from fnmatch import fnmatch
from pathlib import Path

from scalegnn.config import Config
from scalegnn.data.synthetic import planted_dataset
from scalegnn.train import Trainer

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = importlib.resources.files("scalegnn") / "configs" / "methods" / "shadow.yml"


def test_shipped_default_is_package_data():
    assert SHIPPED.is_file()
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    globs = meta["tool"]["setuptools"]["package-data"]["scalegnn"]
    rel = "configs/methods/shadow.yml"
    # setuptools' ** spans folders: configs/**/*.yml takes configs/methods/shadow.yml
    assert any(fnmatch(rel, g.replace("**/", "*/")) or fnmatch(rel, g) for g in globs)


def test_shipped_default_is_generic_and_stops_early():
    cfg = Config.from_yaml(str(SHIPPED))
    sh = cfg.section("shadow")
    assert sh["task"] == "node" and cfg.params["patience"] >= 5
    assert cfg.epochs >= 100                      # a cap, not the schedule: early stopping ends it
    assert not cfg.params["transductive"]         # as GraphSAINT's built-in default
    assert sh["extractors"][0]["kind"] == "ppr"
    assert len(cfg.network["arch"].split("-")) == 3   # deeper than the scope needs


def test_shipped_default_trains_briefly_on_a_tiny_graph(tmp_path):
    ds = planted_dataset(nodes=300, classes=3, features=8, degree=8.0, noise=1.0, seed=1)
    cfg = Config.from_yaml(str(SHIPPED)).override(["phase.end=3", "shadow.cache_dir=none"])
    res = Trainer(ds, cfg, tmp_path / "run", seed=0, progress=False).fit()
    assert res["epochs_run"] == 3 and res["test"]["accuracy"] > 0.5   # chance: 1/3


def test_shipped_default_by_path_on_the_cli(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "scalegnn", "train", "--data",
         "planted:nodes=200,classes=3,features=8,noise=1.0", "--config", str(SHIPPED),
         "--epochs", "2", "--set", "shadow.cache_dir=none", "--out", str(tmp_path / "r"),
         "--no-progress", "--threads", "1"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "(shadow)" in out.stdout
