"""sampler: cluster (ClusterGCN): subgraphs are the induced subgraphs of q distinct METIS parts,
parts drawn uniformly, thread-count independent; budgets checked; trains and resumes."""

import json
import sys

import numpy as np
import pytest

from scalegnn.config import Config
from scalegnn.errors import ConfigError
from scalegnn.graph import Graph
from scalegnn.sampling import GraphSAINTLoader, Sampler, make_sampler
from scalegnn.sampling.cluster import metis_parts
from scalegnn.train.trainer import Trainer
from test_train import planted, small_config


def random_graph(n=400, m=2000, seed=0):
    rng = np.random.default_rng(seed)
    return Graph.from_edges(rng.integers(0, n, m), rng.integers(0, n, m), n)


def parts_of(sampler) -> list[np.ndarray]:
    """Each part's parent nodes, from the sampler's ``part`` table (slow reference)."""
    return [np.sort(sampler.nodes[sampler.part == c]).astype(np.int64)
            for c in range(sampler.num_parts)]


@pytest.mark.parametrize("every", [1, 3])   # transductive (all nodes) and a node subset
def test_subgraphs_are_induced_unions_of_q_distinct_parts(every):
    g = random_graph()
    nodes = np.arange(0, g.num_nodes, every)
    s = make_sampler("cluster", g, nodes, {"num_parts": 10, "parts_per_batch": 3})
    parts = parts_of(s)
    assert sum(p.size for p in parts) == nodes.size
    np.testing.assert_array_equal(np.sort(np.concatenate(parts)), nodes)
    owner = np.full(g.num_nodes, -1)
    for c, p in enumerate(parts):
        owner[p] = c
    for sub in s.sample(20, seed=4, num_threads=2):
        chosen = np.unique(owner[sub.nodes])
        assert chosen.size == 3 and chosen[0] >= 0
        np.testing.assert_array_equal(sub.nodes, np.sort(np.concatenate([parts[c]
                                                                         for c in chosen])))
        ref, eids = g.induced_subgraph(sub.nodes)
        np.testing.assert_array_equal(sub.graph.indptr, ref.indptr)
        np.testing.assert_array_equal(sub.graph.indices, ref.indices)
        np.testing.assert_array_equal(sub.edge_ids, eids)
        src, dst = sub.graph.edge_index()
        assert np.any(owner[sub.nodes[src]] != owner[sub.nodes[dst]])  # between-part edges kept


def test_part_inclusion_frequency_is_q_over_p():
    g = random_graph(seed=1)
    p, q, trials = 12, 4, 3000
    s = make_sampler("cluster", g, np.arange(g.num_nodes), {"num_parts": p, "parts_per_batch": q})
    first = np.array([part[0] for part in parts_of(s)])   # one node names its part
    hits = np.zeros(p)
    for sub in s.sample(trials, seed=9):
        hits += np.isin(first, sub.nodes)
    freq, prob = hits / trials, q / p
    sd = np.sqrt(prob * (1 - prob) / trials)
    assert np.all(np.abs(freq - prob) <= 5 * sd), (freq, prob, sd)


def test_same_subgraphs_at_any_thread_count(monkeypatch):
    monkeypatch.setattr(Sampler, "MIN_WORK", 1)   # really use 2 workers on this small graph
    g = random_graph(seed=2)
    s = make_sampler("cluster", g, np.arange(0, g.num_nodes, 2),
                     {"num_parts": 9, "parts_per_batch": 2})
    a = s.sample(12, seed=5, num_threads=1)
    b = s.sample(12, seed=5, num_threads=2)
    c = s.sample(5, seed=5, num_threads=2) + s.sample(7, seed=5, num_threads=1, start=5)
    for x, y, z in zip(a, b, c):
        for other in (y, z):
            np.testing.assert_array_equal(x.nodes, other.nodes)
            np.testing.assert_array_equal(x.graph.indices, other.graph.indices)
    d = s.sample(12, seed=6, num_threads=2)
    assert any(not np.array_equal(x.nodes, y.nodes) for x, y in zip(a, d))
    again = make_sampler("cluster", g, np.arange(0, g.num_nodes, 2),
                         {"num_parts": 9, "parts_per_batch": 2})
    np.testing.assert_array_equal(again.part, s.part)   # METIS is seeded: the same parts


def test_epoch_size_cap_and_expected_size():
    g = random_graph(seed=3)
    s = make_sampler("cluster", g, np.arange(g.num_nodes), {"num_parts": 10, "parts_per_batch": 3})
    sizes = np.array([p.size for p in parts_of(s)])
    assert s.batches_per_epoch(17) == s.batches_per_epoch(10**6) == 4   # ceil(10 / 3)
    assert s.cap == np.sort(sizes)[-3:].sum()
    assert s.expected_size == pytest.approx(g.num_nodes * 3 / 10)
    assert make_sampler("cluster", g, np.arange(g.num_nodes), {"num_parts": 5}).q == 1
    one = make_sampler("cluster", g, np.arange(g.num_nodes), {"num_parts": 4,
                                                               "parts_per_batch": 4})
    assert all(sub.num_nodes == g.num_nodes for sub in one.sample(2, seed=0))


@pytest.mark.parametrize("budget, match", [
    ({}, "missing budget key 'num_parts'"),
    ({"num_parts": 0}, "num_parts must be an integer >= 1"),
    ({"num_parts": 2.5}, "num_parts must be an integer"),
    ({"num_parts": "4"}, "num_parts must be an integer"),
    ({"num_parts": 4, "parts_per_batch": 0}, "parts_per_batch must be an integer >= 1"),
    ({"num_parts": 4, "parts_per_batch": 5}, r"parts_per_batch \(5\) must not exceed num_parts"),
    ({"num_parts": 201}, r"num_parts \(201\) exceeds the 200 nodes"),
    ({"num_parts": 4, "size_subgraph": 10}, "unknown budget key 'size_subgraph'"),
])
def test_bad_budgets_are_one_line_config_errors(budget, match):
    g = random_graph()
    with pytest.raises(ConfigError, match=match) as e:
        make_sampler("cluster", g, np.arange(0, g.num_nodes, 2), budget)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("phase, match", [
    ({"num_parts": 4, "parts_per_batch": 5}, r"phase\[0\].parts_per_batch: must not exceed"),
    ({"parts_per_batch": 2}, r"phase\[0\].num_parts: missing"),
    ({"num_parts": 0}, r"phase\[0\].num_parts"),
    ({"num_parts": 4, "num_root": 3}, r"phase\[0\].num_root: sampler cluster does not take it"),
])
def test_config_checks_the_cluster_keys(phase, match):
    raw = {"phase": [{"end": 2, "sampler": "cluster", **phase}]}
    with pytest.raises(ConfigError, match=match):
        Config.from_dict(raw).validate_for_mode("graphsaint")


def test_missing_pymetis_is_one_line_naming_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "pymetis", None)   # import pymetis -> ImportError
    with pytest.raises(ConfigError, match=r"sampler 'cluster' needs pymetis \(pip install "
                                          r"'scalegnn\[partition\]'\)"):
        make_sampler("cluster", random_graph(), np.arange(400), {"num_parts": 4})
    assert metis_parts(random_graph(), 1, 0).tolist() == [0] * 400   # 1 part: no METIS


def test_loader_epoch_is_ceil_p_over_q():
    ds = planted(n=300)
    loader = GraphSAINTLoader(ds, "cluster", {"num_parts": 8, "parts_per_batch": 3},
                              transductive=True, normalize=False, pool_depth=0)
    assert len(loader) == 3
    batch = next(iter(loader))
    assert batch.loss_weight.sum().item() == pytest.approx(1.0)   # a plain mean, no presampling
    assert loader.stats["presample_subgraphs"] == 0
    loader.close()


def cluster_config(epochs, **over):
    cfg = small_config("rw", epochs=epochs, **over)
    cfg.phases = [{"end": epochs, "sampler": "cluster", "num_parts": 6, "parts_per_batch": 2}]
    return cfg.validate()


@pytest.mark.parametrize("norm", [True, False])
def test_trains_and_resumes_like_an_uninterrupted_run(tmp_path, norm):
    ds = planted()
    over = {"norm_loss": norm, "norm_aggr": norm}
    full = Trainer(ds, cluster_config(4, **over), tmp_path / "full", seed=2,
                   progress=False).fit()
    Trainer(ds, cluster_config(2, **over), tmp_path / "r", seed=2, progress=False).fit()
    res = Trainer(ds, cluster_config(4, **over), tmp_path / "r", seed=2, progress=False,
                  resume=True).fit()
    recs = [json.loads(x) for x in (tmp_path / "r" / "metrics.jsonl").read_text().splitlines()]
    ref = [json.loads(x) for x in (tmp_path / "full" / "metrics.jsonl").read_text().splitlines()]
    assert [r["epoch"] for r in recs] == [1, 2, 3, 4]
    assert all(r["iterations"] == 3 for r in recs)   # ceil(6 / 2) subgraphs an epoch
    assert [r["loss"] for r in recs] == [r["loss"] for r in ref]
    assert res["test"] == full["test"] and 0.0 <= res["test"]["accuracy"] <= 1.0
