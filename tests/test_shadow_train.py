"""shaDow-GNN through the one training engine: node classification and link prediction, run
directory, determinism, exact resume, minibatched inference, CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from scalegnn.config import Config
from scalegnn.train import Trainer
from test_train import planted

KHOP = {"kind": "khop", "depth": 2, "budget": 8}
PPR = {"kind": "ppr", "k": 24, "alpha": 0.15, "eps": 1e-5}


def shadow_config(extractors=(KHOP,), epochs=3, readout="center+mean", **shadow):
    cfg = Config()
    cfg.network.update(dim=32, arch="1-1-1")
    cfg.params.update(lr=0.01, dropout=0.1, transductive=True, standardize=False)
    cfg.phases = [{"end": epochs, "sampler": "full"}]
    cfg.sections["shadow"] = {"extractors": [dict(e) for e in extractors], "readout": readout,
                              "batch_size": 64, "eval_batch_size": 128, "cache_dir": "none",
                              **shadow}
    return cfg.validate()


@pytest.mark.parametrize("extractors", [(KHOP,), (PPR,), (PPR, KHOP)], ids=["khop", "ppr", "ensemble"])
def test_shadow_trains_and_writes_the_run_dir(tmp_path, extractors):
    ds = planted(n=400, noise=2.0)
    res = Trainer(ds, shadow_config(extractors, epochs=4), tmp_path / "run", seed=0,
                  progress=False).fit()
    run = tmp_path / "run"
    assert {"config.yml", "run.json", "metrics.jsonl", "best.pt", "last.pt", "summary.json"} <= \
        {p.name for p in run.iterdir()}
    assert json.loads((run / "run.json").read_text())["mode"] == "shadow"
    recs = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["epoch"] for r in recs] == [1, 2, 3, 4]
    assert recs[-1]["loss"] < recs[0]["loss"]
    assert res["test"]["accuracy"] > 0.6            # 3 balanced classes: chance is 1/3
    assert Config.from_yaml(run / "config.yml").section("shadow")["extractors"] == \
        [dict(e) for e in extractors]


def test_same_seed_same_numbers_and_deeper_than_scope(tmp_path):
    ds = planted(n=300)
    cfg = shadow_config((KHOP,), epochs=2)
    cfg.network["arch"] = "1-1-1-1-1"               # 5 layers on a 2-hop scope
    a = Trainer(ds, cfg.copy(), None, seed=4, progress=False).fit()
    b = Trainer(ds, cfg.copy(), None, seed=4, progress=False).fit()
    assert a["test"] == b["test"] and a["val"] == b["val"]


def test_inference_is_minibatched_over_targets():
    """Scores of a split do not depend on the inference batch size (each target's scope is
    extracted with the fixed evaluation seed)."""
    ds = planted(n=300)
    tr = Trainer(ds, shadow_config((KHOP,), epochs=1), None, seed=0, progress=False)
    tr.fit()
    idx = np.asarray(ds.test_idx)
    small = tr.mode.scores(tr.model, idx).numpy()
    tr.mode.settings["eval_batch_size"] = 7
    np.testing.assert_allclose(tr.mode.scores(tr.model, idx).numpy(), small, rtol=1e-5, atol=1e-6)


def test_link_prediction_runs_through_the_engine(tmp_path):
    ds = planted(n=400, p_in=0.06, p_out=0.002)
    cfg = shadow_config((KHOP,), epochs=3, readout="hadamard+mean", task="link", negatives=300)
    res = Trainer(ds, cfg, tmp_path / "link", seed=0, progress=False).fit()
    assert res["mode"] == "link" and res["metric"] == "hits@50"
    assert {"hits@20", "hits@50", "hits@100", "mrr"} <= set(res["test"])
    assert all(0.0 <= res[s]["mrr"] <= 1.0 for s in ("train", "val", "test"))
    recs = [json.loads(x) for x in (tmp_path / "link" / "metrics.jsonl").read_text().splitlines()]
    assert recs[-1]["loss"] < recs[0]["loss"]


def test_pair_subgraphs_lose_only_the_edge_between_the_ends():
    """A training positive's own edge is removed from its subgraph (held-out and negative
    pairs never have it), every other edge stays."""
    from scalegnn.shadow.batch import drop_pair_edges
    from scalegnn.shadow.extract import KHopExtractor
    ds = planted(n=200, p_in=0.1)
    src, dst = ds.graph.indptr, ds.graph.indices
    u = np.repeat(np.arange(ds.num_nodes), np.diff(src))
    pairs = np.stack([u, dst])[:, u < dst][:, :20]
    subs = KHopExtractor(ds.graph, depth=1, budget=-1).extract_pairs(pairs[0], pairs[1])
    out = drop_pair_edges(subs)

    def edges(s):
        rows = np.repeat(np.arange(s.nodes.shape[0]), np.diff(s.indptr))
        return {(int(s.nodes[r]), int(s.nodes[c]), int(np.searchsorted(s.offsets, r, "right")))
                for r, c in zip(rows, s.indices)}
    before, after = edges(subs), edges(out)
    removed = before - after
    assert after <= before and len(removed) == 2 * pairs.shape[1]
    for a, b, k in removed:
        assert {a, b} == {int(pairs[0, k - 1]), int(pairs[1, k - 1])}


def _cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "scalegnn", *args], capture_output=True,
                          text=True, timeout=300, env=env)


def _numbers(run):
    recs = [{k: v for k, v in json.loads(x).items() if not k.endswith("_s")}
            for x in (run / "metrics.jsonl").read_text().splitlines()]
    s = json.loads((run / "summary.json").read_text())
    return recs, s["val"], s["test"], s["best_epoch"]


def test_cli_shadow_run_resumes_exactly_after_sigkill(tmp_path):
    """A shaDow run killed mid-epoch resumes bit-identically (random k-hop scopes and dropout
    depend only on seed, epoch and minibatch index)."""
    cfg = shadow_config((KHOP,), epochs=3)
    cfg.params["checkpoint_seconds"] = 0.0
    (tmp_path / "c.yml").write_text(cfg.to_yaml())
    args = ["train", "--data", "planted:nodes=300,classes=3,features=8", "--config",
            str(tmp_path / "c.yml"), "--threads", "2", "--no-progress", "--seed", "1"]
    ref = _cli(*args, "--out", str(tmp_path / "ref"))
    assert ref.returncode == 0, ref.stderr
    env = dict(os.environ, SCALEGNN_TEST_KILL_AT="batch:4")
    killed = _cli(*args, "--out", str(tmp_path / "k"), env=env)
    assert killed.returncode != 0
    resumed = _cli("train", "--resume", str(tmp_path / "k"), "--no-progress")
    assert resumed.returncode == 0, resumed.stderr
    assert _numbers(tmp_path / "k") == _numbers(tmp_path / "ref")
