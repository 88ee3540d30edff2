"""Structural pair labels (scalegnn.shadow.labels) against a plain-Python BFS, and the link mode
that feeds them to the model."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest

from scalegnn.config import Config
from scalegnn.errors import ConfigError
from scalegnn.shadow.batch import drop_pair_edges
from scalegnn.shadow.extract import KHopExtractor
from scalegnn.shadow.labels import label_onehot, num_labels, pair_labels
from scalegnn.train import Trainer
from test_train import planted


def _block_distances(subs, k, source):
    """Hops from stack row ``source`` to every row of block k, inside block k (None: none)."""
    lo, hi = int(subs.offsets[k]), int(subs.offsets[k + 1])
    dist = {source: 0}
    queue = deque([source])
    while queue:
        x = queue.popleft()
        for y in subs.indices[subs.indptr[x]:subs.indptr[x + 1]]:
            y = int(y)
            if lo <= y < hi and y not in dist:
                dist[y] = dist[x] + 1
                queue.append(y)
    return [dist.get(i) for i in range(lo, hi)]


def _pairs(ds, count):
    u = np.repeat(np.arange(ds.num_nodes), np.diff(ds.graph.indptr))
    v = ds.graph.indices
    pos = np.stack([u, v])[:, u < v][:, :count]
    rng = np.random.default_rng(1)
    neg = rng.integers(0, ds.num_nodes, (2, count))
    neg = neg[:, neg[0] != neg[1]]
    return np.concatenate([pos, neg], axis=1)


@pytest.mark.parametrize("cap", [1, 2, 3, 5])
def test_pair_labels_match_a_python_bfs(cap):
    ds = planted(n=300, p_in=0.04, p_out=0.004)
    pairs = _pairs(ds, 25)
    subs = drop_pair_edges(KHopExtractor(ds.graph, depth=2, budget=6).extract_pairs(
        pairs[0], pairs[1], seed=3))
    got = pair_labels(subs, cap)
    names = {}
    for a in range(cap + 2):
        for b in range(a, cap + 2):
            names[(a, b)] = len(names)
    assert len(names) == num_labels(cap)
    for k in range(pairs.shape[1]):
        du = _block_distances(subs, k, int(subs.center[k]))
        dv = _block_distances(subs, k, int(subs.center2[k]))
        lo = int(subs.offsets[k])
        for i, (a, b) in enumerate(zip(du, dv)):
            a = cap + 1 if a is None else min(a, cap + 1)
            b = cap + 1 if b is None else min(b, cap + 1)
            assert got[lo + i] == names[(min(a, b), max(a, b))]


def test_common_neighbours_get_the_one_one_label_and_ends_the_zero_labels():
    ds = planted(n=200, p_in=0.08)
    pairs = _pairs(ds, 30)
    subs = drop_pair_edges(KHopExtractor(ds.graph, depth=1, budget=-1).extract_pairs(
        pairs[0], pairs[1]))
    cap = 3
    lab = pair_labels(subs, cap)
    one_one = 1 * (cap + 2) + 0  # a = b = 1
    g = ds.graph
    for k in range(pairs.shape[1]):
        u, v = int(pairs[0, k]), int(pairs[1, k])
        cn = set(g.indices[g.indptr[u]:g.indptr[u + 1]]) & set(g.indices[g.indptr[v]:g.indptr[v + 1]])
        lo, hi = int(subs.offsets[k]), int(subs.offsets[k + 1])
        assert int((lab[lo:hi] == one_one).sum()) == len(cn - {u, v})
        # the ends have a = 0: labels 0..cap+1 (b = their distance to each other)
        assert lab[subs.center[k]] == lab[subs.center2[k]] < cap + 2
    onehot = label_onehot(lab, cap)
    assert onehot.shape == (lab.size, num_labels(cap)) and (onehot.sum(1) == 1).all()


def test_pair_labels_refuse_bad_caps_and_node_subgraphs():
    ds = planted(n=100, p_in=0.1)
    ex = KHopExtractor(ds.graph, depth=1, budget=4)
    with pytest.raises(ConfigError, match="pair_labels"):
        pair_labels(ex.extract_pairs([0], [1]), 0)
    with pytest.raises(ConfigError, match="pair_labels"):
        pair_labels(ex.extract([0, 1]), 2)


def _link_config(**shadow):
    cfg = Config()
    cfg.network.update(dim=32, arch="1-1")
    cfg.params.update(lr=0.01, transductive=True, standardize=False)
    cfg.phases = [{"end": 3, "sampler": "full"}]
    cfg.sections["shadow"] = {"extractors": [{"kind": "khop", "depth": 2, "budget": 8}],
                              "readout": "hadamard+sum", "batch_size": 64,
                              "eval_batch_size": 128, "cache_dir": "none", "task": "link",
                              "negatives": 300, **shadow}
    return cfg.validate()


def test_link_mode_appends_labels_and_can_drop_the_node_features(tmp_path):
    ds = planted(n=400, p_in=0.06, p_out=0.002)
    res = Trainer(ds, _link_config(pair_labels=2, node_features=False), tmp_path / "a",
                  seed=0, progress=False).fit()
    assert 0.0 <= res["test"]["mrr"] <= 1.0
    from scalegnn.shadow.mode import LinkMode
    mode = LinkMode(ds, _link_config(pair_labels=2))
    assert mode.num_features == ds.num_features + num_labels(2)
    batch = next(iter(mode.batches(0)))
    assert batch.x.shape[1] == mode.num_features
    assert (batch.x[:, ds.num_features:].sum(1) == 1).all()
    assert (batch.x[:, :ds.num_features].numpy() == ds.features[batch.nodes]).all()


def test_labels_only_without_labels_is_a_config_error():
    with pytest.raises(ConfigError, match="node_features"):
        _link_config(node_features=False)
    with pytest.raises(ConfigError, match="pair_labels"):
        _link_config(pair_labels=-1)
    with pytest.raises(ConfigError, match="adj_norm"):
        _link_config(pair_labels=2, adj_norm="rw")
    with pytest.raises(ConfigError, match="only for shadow.task: link"):
        _link_config(pair_labels=2, task="node")
    from scalegnn.shadow.batch import branch_batch
    ds = planted(n=60, p_in=0.1)
    subs = KHopExtractor(ds.graph, depth=1, budget=4).extract([0, 1])
    with pytest.raises(ConfigError, match="adj_norm"):
        branch_batch(subs, ds.features, "rw")


@pytest.mark.realdata
@pytest.mark.slow
def test_shipped_citeseer_link_config_beats_the_heuristics(shared_data, tmp_path):
    """The shipped configs/shared/citeseer_link.yml (labels only, 10 epochs, seed 0) beats
    common neighbours and Adamic-Adar on the same seeded split and negatives."""
    from pathlib import Path

    from scalegnn.data import load_dataset
    from scalegnn.shadow.link import heuristic_baseline
    ds = load_dataset(shared_data / "citeseer")
    cfg = Config.from_yaml(Path(__file__).resolve().parents[1] / "configs" / "shared"
                           / "citeseer_link.yml")
    cfg.sections["shadow"]["cache_dir"] = "none"
    res = Trainer(ds, cfg.validate(), tmp_path / "run", seed=0, progress=False).fit()
    for score in ("common_neighbours", "adamic_adar"):
        base = heuristic_baseline(ds, 0, score=score, num_negatives=10000)
        assert res["test"]["hits@50"] > base["test_hits@50"]
        assert res["test"]["mrr"] > base["test_mrr"]
