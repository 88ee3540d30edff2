"""Link prediction pieces of shaDow-GNN: edge split, negatives, Hits@K / MRR, heuristics.

Every number is checked against a slow, obviously correct loop.
"""

import math

import numpy as np
import pytest

from scalegnn.engine.metrics import hits_at_k, link_metrics, link_ranks, mrr
from scalegnn.errors import ConfigError, GraphError
from scalegnn.graph import Graph
from scalegnn.shadow.link import (EdgeSplit, adamic_adar_scores, common_neighbours_scores,
                                  heuristic_baseline, sample_negatives, split_edges)


def random_graph(n=200, m=1200, seed=0, loops=5):
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    src = np.r_[src, np.arange(loops)]  # a few self loops, which the split must ignore
    dst = np.r_[dst, np.arange(loops)]
    return Graph.from_edges(src, dst, n, symmetrize=True, remove_self_loops=False)


def edge_set(graph):
    s, d = graph.edge_index()
    return {(int(a), int(b)) for a, b in zip(s, d)}


def undirected(pairs):
    return {(int(min(a, b)), int(max(a, b))) for a, b in zip(*pairs)}


# ---------------------------------------------------------------------- split
@pytest.fixture(scope="module")
def graph():
    return random_graph()


@pytest.fixture(scope="module")
def split(graph):
    return split_edges(graph, (0.85, 0.05, 0.10), seed=3, num_negatives=500)


def test_split_sizes_cover_every_undirected_edge_once(graph, split):
    full = {(u, v) for u, v in edge_set(graph) if u < v}
    e = len(full)
    assert split.val_pos.shape == (2, round(0.05 * e))
    assert split.test_pos.shape == (2, round(0.10 * e))
    parts = [undirected(p) for p in (split.train_pos, split.val_pos, split.test_pos)]
    assert sum(len(p) for p in parts) == e
    assert set().union(*parts) == full                     # disjoint and complete
    for p in (split.train_pos, split.val_pos, split.test_pos, split.val_neg, split.test_neg):
        assert p.dtype == np.int64 and np.all(p[0] < p[1])  # canonical, no loops


def test_train_graph_holds_exactly_the_train_edges(graph, split):
    tg = split.train_graph
    assert tg.num_nodes == graph.num_nodes and tg.is_symmetric()
    want = undirected(split.train_pos)
    assert edge_set(tg) == want | {(v, u) for u, v in want}
    for held in (split.val_pos, split.test_pos):           # no leakage, either direction
        assert not undirected(held) & {(min(u, v), max(u, v)) for u, v in edge_set(tg)}


def test_negatives_are_distinct_non_edges_of_the_full_graph(graph, split):
    full = edge_set(graph)
    for neg in (split.val_neg, split.test_neg):
        pairs = list(zip(neg[0].tolist(), neg[1].tolist()))
        assert len(pairs) == 500 == len(set(pairs))
        assert not any((u, v) in full or (v, u) in full or u == v for u, v in pairs)
    pos, neg = split.pairs("test")
    assert pos is split.test_pos and neg is split.test_neg


def test_split_is_deterministic_per_seed(graph, split):
    again = split_edges(graph, (0.85, 0.05, 0.10), seed=3, num_negatives=500)
    other = split_edges(graph, (0.85, 0.05, 0.10), seed=4, num_negatives=500)
    for name in ("train_pos", "val_pos", "test_pos", "val_neg", "test_neg"):
        assert np.array_equal(getattr(split, name), getattr(again, name))
    assert not np.array_equal(split.test_pos, other.test_pos)
    assert not np.array_equal(split.test_neg, other.test_neg)


@pytest.mark.parametrize("bad", [(0.9, 0.1, 0.1), (0.9, 0.1, 0.0), (1.2, -0.1, -0.1), (0.5, 0.5),
                                 "abc", (0.8, 0.1, float("nan"))])
def test_bad_fractions_raise_one_line_config_error(graph, bad):
    with pytest.raises(ConfigError, match="fractions") as e:
        split_edges(graph, bad)
    assert "\n" not in str(e.value)


def test_too_few_edges_or_too_many_negatives_are_one_line_errors():
    tiny = Graph.from_edges(np.array([0, 1]), np.array([1, 2]), 4)
    with pytest.raises(GraphError, match="too few"):
        split_edges(tiny)
    with pytest.raises(ConfigError, match="only 4 non-edge pairs"):
        sample_negatives(5, 4, tiny, 0)
    with pytest.raises(ConfigError, match="'val' or 'test'"):
        EdgeSplit.pairs(None, "train")


# ---------------------------------------------------------------------- negatives
def test_sample_negatives_can_take_every_non_edge_and_is_seeded():
    g = Graph.from_edges(np.array([0, 1, 2]), np.array([1, 2, 3]), 5)
    s, d = sample_negatives(7, 5, g, 0)                    # C(5,2) - 3 edges = all 7 non-edges
    assert undirected((s, d)) == {(u, v) for u in range(5) for v in range(u + 1, 5)} - \
        {(0, 1), (1, 2), (2, 3)}
    rng_a, rng_b = np.random.default_rng(9), np.random.default_rng(9)
    a = sample_negatives(50, 200, random_graph(), rng_a)
    b = sample_negatives(50, 200, random_graph(), rng_b)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])


def test_sample_negatives_is_roughly_uniform_over_non_edges():
    g = Graph.from_edges(np.array([0]), np.array([1]), 4)  # 5 non-edge pairs
    counts = {}
    for seed in range(400):
        s, d = sample_negatives(1, 4, g, seed)
        counts[(int(s[0]), int(d[0]))] = counts.get((int(s[0]), int(d[0])), 0) + 1
    assert set(counts) == {(0, 2), (0, 3), (1, 2), (1, 3), (2, 3)}
    assert all(50 <= c <= 110 for c in counts.values())    # 80 expected each


# ---------------------------------------------------------------------- metrics
def hits_reference(pos, neg, k):
    if len(neg) < k:
        return 1.0
    kth = sorted(neg, reverse=True)[k - 1]
    return sum(p > kth for p in pos) / len(pos)


def rank_reference(p, negs):
    return 1 + sum(q > p for q in negs) + 0.5 * sum(q == p for q in negs)


@pytest.mark.parametrize("k", [1, 5, 20, 50])
def test_hits_at_k_shared_negatives_match_loop(k):
    rng = np.random.default_rng(k)
    pos = np.round(rng.random(40), 1)                      # many ties with the k-th negative
    neg = np.round(rng.random(30) * 0.9, 1)
    assert hits_at_k(pos, neg, k) == pytest.approx(hits_reference(pos, neg, k))


def test_hits_counts_ties_with_the_kth_negative_as_misses():
    assert hits_at_k([1.0, 2.0, 3.0], [2.0, 0.0, 0.0], 1) == pytest.approx(1 / 3)
    assert hits_at_k([0.0], [5.0], 2) == 1.0               # fewer negatives than k: OGB gives 1


def test_mrr_shared_and_per_positive_match_loop():
    rng = np.random.default_rng(0)
    pos = np.round(rng.random(25), 1)
    shared = np.round(rng.random(60), 1)
    per = np.round(rng.random((25, 8)), 1)
    want_shared = np.mean([1 / rank_reference(p, shared) for p in pos])
    want_per = np.mean([1 / rank_reference(p, row) for p, row in zip(pos, per)])
    assert mrr(pos, shared) == pytest.approx(want_shared)
    assert mrr(pos, per) == pytest.approx(want_per)
    assert np.allclose(link_ranks(pos, per), [rank_reference(p, r) for p, r in zip(pos, per)])
    hits3 = np.mean([rank_reference(p, r) <= 3 for p, r in zip(pos, per)])
    assert hits_at_k(pos, per, 3) == pytest.approx(hits3)  # ogbl-citation2 rule for 2-D


def test_ties_are_averaged_so_a_constant_scorer_gets_no_credit():
    assert mrr(np.zeros(4), np.zeros(9)) == pytest.approx(1 / (1 + 4.5))
    assert mrr([3.0], [1.0, 2.0]) == 1.0


def test_link_metrics_keys_and_shape_errors():
    out = link_metrics(np.arange(5.0), np.arange(200.0) / 100)
    assert list(out) == ["hits@20", "hits@50", "hits@100", "mrr"]
    assert out["hits@50"] == pytest.approx(3 / 5)          # 2, 3, 4 beat the 50th best 1.50
    with pytest.raises(ValueError, match="one per positive"):
        mrr(np.zeros(3), np.zeros((2, 4)))


# ---------------------------------------------------------------------- heuristics
def test_common_neighbours_and_adamic_adar_match_set_loops():
    g = random_graph(n=80, m=500, seed=1, loops=0)
    rng = np.random.default_rng(2)
    src, dst = rng.integers(0, 80, 300), rng.integers(0, 80, 300)
    nbrs = [set(g.indices[g.indptr[u]:g.indptr[u + 1]].tolist()) for u in range(80)]
    cn = [len(nbrs[u] & nbrs[v]) for u, v in zip(src, dst)]
    aa = [sum(1 / math.log(len(nbrs[w])) for w in nbrs[u] & nbrs[v]) for u, v in zip(src, dst)]
    assert np.array_equal(common_neighbours_scores(g, src, dst), cn)
    assert np.allclose(adamic_adar_scores(g, src, dst), aa)


def test_common_neighbours_and_adamic_adar_by_hand():
    # edges 0-2 1-2 0-3 1-3 3-4: degrees 2, 2, 2, 3, 1
    g = Graph.from_edges(np.array([0, 1, 0, 1, 3]), np.array([2, 2, 3, 3, 4]), 5, symmetrize=True)
    src, dst = [0, 0, 2, 2, 4], [1, 4, 3, 4, 4]
    # (0, 1): {2, 3}; (0, 4): {3}; (2, 3): {0, 1}; (2, 4): none; (4, 4): {3} (a node with itself)
    assert common_neighbours_scores(g, src, dst).tolist() == [2.0, 1.0, 2.0, 0.0, 1.0]
    ln2, ln3 = math.log(2), math.log(3)
    assert np.allclose(adamic_adar_scores(g, src, dst),
                       [1 / ln2 + 1 / ln3, 1 / ln3, 2 / ln2, 0.0, 1 / ln3])


def test_common_neighbours_on_unsorted_duplicated_rows():
    # rows [2, 1, 2] and [1, 2]: duplicates must not be counted twice
    g = Graph(np.array([0, 3, 3, 3, 5]), np.array([2, 1, 2, 1, 2]), 4)
    assert common_neighbours_scores(g, [0], [3]).tolist() == [2.0]
    with pytest.raises(GraphError, match="node ids"):
        common_neighbours_scores(g, [0], [4])


@pytest.mark.parametrize("score, fn", [("common_neighbours", common_neighbours_scores),
                                       ("adamic_adar", adamic_adar_scores)])
def test_heuristic_baseline_scores_the_seeded_split_with_train_neighbours(score, fn):
    g = random_graph(n=300, m=3000, seed=5, loops=0)
    out = heuristic_baseline(g, seed=1, score=score, num_negatives=1000)
    split = split_edges(g, seed=1, num_negatives=1000)
    for which in ("val", "test"):
        pos, neg = split.pairs(which)
        # neighbours and (Adamic-Adar) degrees from the train graph, never the held-out positives
        want = link_metrics(fn(split.train_graph, *pos), fn(split.train_graph, *neg))
        assert out[f"{which}_hits@50"] == want["hits@50"] and out[f"{which}_mrr"] == want["mrr"]
        leaky = link_metrics(fn(g, *pos), fn(g, *neg))
        assert out[f"{which}_mrr"] != leaky["mrr"]
    assert out["score"] == score
    loops_free = {(u, v) for u, v in undirected(g.edge_index()) if u != v}
    assert out["num_negatives"] == 1000 and out["num_edges"] == len(loops_free)
    with pytest.raises(ConfigError, match="score must be one of"):
        heuristic_baseline(g, score="katz")


@pytest.mark.realdata
def test_common_neighbours_beat_chance_on_citeseer(shared_data):
    from scalegnn.data import load_dataset
    out = heuristic_baseline(load_dataset(shared_data / "citeseer"), seed=0)
    # 100,000 shared negatives: chance Hits@50 is 50 / 100,000 and chance MRR ~ 1e-4
    assert out["num_negatives"] == 100_000
    assert out["test_hits@50"] > 0.05 and out["test_mrr"] > 0.01
