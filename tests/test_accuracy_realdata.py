"""Accuracy on the real datasets with the shipped configs (one seed each; the three-seed means
are produced by benchmarks/accuracy.py and reported in the README).

Thresholds sit a little below the issue's targets so that one unlucky seed does not fail CI,
while a broken sampler, normalization or model (which lands far lower) does.
"""

from pathlib import Path

import pytest

from scalegnn.config import Config
from scalegnn.data import load_dataset
from scalegnn.train import Trainer

CONFIGS = Path(__file__).resolve().parents[1] / "configs" / "shared"

pytestmark = [pytest.mark.slow, pytest.mark.realdata]


def _fit(shared_data, name, config, overrides=(), seed=0):
    ds = load_dataset(str(shared_data / name))
    cfg = Config.from_yaml(CONFIGS / config).override(list(overrides))
    return ds, Trainer(ds, cfg, None, seed=seed, progress=False).fit()


def test_cora_rw_transductive(shared_data):
    ds, res = _fit(shared_data, "cora", "cora_rw.yml")
    assert res["test"]["accuracy"] >= 0.78  # 3-seed mean 0.81 (target 0.80); GCN paper 0.815


def test_tolokers_rw_roc_auc(shared_data):
    ds, res = _fit(shared_data, "tolokers", "tolokers_rw.yml", ["phase.end=60", "params.eval_every=10"])
    assert ds.metric == "roc_auc"
    assert res["test"]["roc_auc"] >= 0.78  # 150 epochs: 0.82 (target 0.80)


def test_facebook_rw_short(shared_data):
    ds, res = _fit(shared_data, "facebook", "facebook_rw.yml",
                   ["phase.end=8", "network.dim=64", "params.eval_every=4"])
    assert res["test"]["accuracy"] >= 0.88  # full config: 0.94 (target 0.91)
