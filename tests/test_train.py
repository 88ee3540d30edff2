"""End-to-end GraphSAINT training on small hand-built datasets: run directory, determinism,
resume, CLI errors."""

import json

import numpy as np
import pytest

from scalegnn.config import Config
from scalegnn.data.dataset import Dataset
from scalegnn.graph import Graph
from scalegnn.train.trainer import Trainer


def planted(n=600, classes=3, f=16, p_in=0.05, p_out=0.004, noise=2.0, seed=0):
    """Small planted-partition graph whose labels are readable from neighbours' features."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, n)
    same = y[:, None] == y[None, :]
    prob = np.where(same, p_in, p_out)
    iu = np.triu_indices(n, 1)
    keep = rng.random(iu[0].size) < prob[iu]
    g = Graph.from_edges(iu[0][keep], iu[1][keep], n)
    centers = rng.normal(size=(classes, f))
    x = (centers[y] + noise * rng.normal(size=(n, f))).astype(np.float32)
    perm = rng.permutation(n)
    return Dataset(g, x, y.astype(np.int64), perm[: n // 2], perm[n // 2: 3 * n // 4],
                   perm[3 * n // 4:], name="planted-test", metric="accuracy").validate()


def small_config(sampler="rw", epochs=3, **over):
    cfg = Config()
    budgets = {"rw": {"num_root": 60, "depth": 2}, "node": {"size_subgraph": 150},
               "edge": {"size_subg_edge": 100}, "mrw": {"size_subgraph": 150, "size_frontier": 30},
               "full": {}}
    cfg.phases = [{"end": epochs, "sampler": sampler, **budgets[sampler]}]
    cfg.network.update(dim=32, arch="1-0-1-0")
    cfg.params.update(sample_coverage=5, **over)
    return cfg.validate()


@pytest.mark.parametrize("sampler", ["rw", "node", "edge", "mrw", "full"])
def test_every_sampler_trains_and_writes_run_dir(tmp_path, sampler):
    ds = planted()
    res = Trainer(ds, small_config(sampler), tmp_path / "run", seed=0, progress=False).fit()
    files = {p.name for p in (tmp_path / "run").iterdir()}
    assert {"config.yml", "run.json", "metrics.jsonl", "best.pt", "last.pt", "summary.json"} <= files
    recs = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["epoch"] for r in recs] == [1, 2, 3]
    assert all(np.isfinite(r["loss"]) and r["iterations"] >= 1 for r in recs)
    assert 0.0 <= res["test"]["accuracy"] <= 1.0
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["test"] == res["test"]


def test_same_seed_same_metrics(tmp_path):
    ds = planted()
    a = Trainer(ds, small_config(), tmp_path / "a", seed=3, progress=False).fit()
    b = Trainer(ds, small_config(), tmp_path / "b", seed=3, progress=False).fit()
    assert a["test"] == b["test"] and a["val"] == b["val"]


def test_resume_continues_from_last_checkpoint(tmp_path):
    ds = planted()
    Trainer(ds, small_config(epochs=2), tmp_path / "r", seed=1, progress=False).fit()
    cfg = small_config(epochs=4)
    res = Trainer(ds, cfg, tmp_path / "r", seed=1, progress=False, resume=True).fit()
    recs = [json.loads(x) for x in (tmp_path / "r" / "metrics.jsonl").read_text().splitlines()]
    assert [r["epoch"] for r in recs] == [1, 2, 3, 4]
    assert res["epochs"] == 4


def test_refuses_to_overwrite_a_run(tmp_path):
    from scalegnn.errors import ConfigError
    ds = planted()
    Trainer(ds, small_config(epochs=1), tmp_path / "r", progress=False).fit()
    with pytest.raises(ConfigError, match="already holds a run"):
        Trainer(ds, small_config(epochs=1), tmp_path / "r", progress=False)


def test_gnn_learns_graph_signal_better_than_mlp(tmp_path):
    ds = planted(n=800, noise=3.0, seed=2)
    gnn = Trainer(ds, small_config("rw", epochs=15), None, seed=0, progress=False).fit()
    mlp_cfg = small_config("rw", epochs=15)
    mlp_cfg.network["arch"] = "0-0"
    mlp = Trainer(ds, mlp_cfg, None, seed=0, progress=False).fit()
    assert gnn["test"]["accuracy"] >= mlp["test"]["accuracy"] + 0.10


def test_loss_mismatch_is_a_config_error():
    from scalegnn.errors import ConfigError
    cfg = small_config()
    cfg.network["loss"] = "sigmoid"
    with pytest.raises(ConfigError, match="network.loss"):
        Trainer(planted(), cfg, None, progress=False)
