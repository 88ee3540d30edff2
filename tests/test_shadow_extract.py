"""shaDow extractors: equality with the slow references, budget and uniformity of the k-hop
draws, thread/batch invariance, PPR error bound and top-k sets, disk cache, pair unions."""

import numba
import numpy as np
import pytest
from scipy import stats

from scalegnn.errors import ConfigError, DataError
from scalegnn.graph import Graph
from scalegnn.ops._simd import VECTOR_FILL, W
from scalegnn.shadow import extract
from scalegnn.shadow import reference as R
from scalegnn.shadow._block_kernels import block_bounds, compact_blocks, induced_marked
from scalegnn.shadow.extract import KHopExtractor, graph_key
from scalegnn.shadow.ppr import PPRExtractor
from scalegnn.threads import set_threads


def random_graph(n=120, m=360, seed=0, num_nodes=None, spread=1):
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    return Graph.from_edges(src * spread, dst * spread, num_nodes or n)


@pytest.fixture(scope="module")
def g():
    return random_graph()


def check_against_reference(graph, ts, scopes, centers, centers2=None):
    """ts has block k = induced subgraph on scopes[k], center rows as given."""
    assert np.array_equal(ts.offsets, np.concatenate([[0], np.cumsum([len(s) for s in scopes])]))
    assert np.array_equal(ts.nodes, np.concatenate(scopes))
    indptr, indices = R.induced_blocks(graph, scopes)
    assert np.array_equal(ts.indptr, indptr) and np.array_equal(ts.indices, indices)
    for k, s in enumerate(scopes):
        assert ts.nodes[ts.center[k]] == centers[k]
        assert ts.offsets[k] <= ts.center[k] < ts.offsets[k + 1]
        if centers2 is not None:
            assert ts.nodes[ts.center2[k]] == centers2[k]
            assert ts.offsets[k] <= ts.center2[k] < ts.offsets[k + 1]
    assert (ts.center2 is None) == (centers2 is None)


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_khop_all_neighbours_is_the_bfs_ball(g, depth):
    t = np.arange(g.num_nodes)
    ts = KHopExtractor(g, depth=depth, budget=-1).extract(t, seed=3)
    check_against_reference(g, ts, [R.khop_ball(g, v, depth) for v in t], t)


def test_hashed_tables_on_a_large_sparse_id_space():
    """Beyond 2^16 nodes the kernels use growing hash tables instead of direct maps: the same
    component spread over 200k ids gives the same scopes (ids mapped) and PPR lists."""
    small = random_graph(300, 1500, seed=1)
    big = random_graph(300, 1500, seed=1, num_nodes=200_000, spread=613)
    t = np.arange(0, 300, 7)
    ks, kb = (KHopExtractor(x, depth=3, budget=-1) for x in (small, big))
    a, b = ks.extract(t), kb.extract(t * 613)
    assert np.array_equal(a.nodes * 613, b.nodes) and np.array_equal(a.indices, b.indices)
    check_against_reference(big, b, [R.khop_ball(big, v, 3) for v in t * 613], t * 613)
    ps, pb = (PPRExtractor(x, eps=1e-7, k=250) for x in (small, big))
    (p1, n1, s1), (p2, n2, s2) = ps.lists(t), pb.lists(t * 613)
    assert np.array_equal(p1, p2) and np.array_equal(n1 * 613, n2) and np.array_equal(s1, s2)
    assert (np.diff(p1) > 200).any()     # the tables grew well past their 256 first slots


def test_vector_one_pass_induction_writes_what_the_scalar_one_writes(monkeypatch):
    """The AVX-512 blocks of the one-pass induction (``_simd.mark_block``, 16 entries of a row
    at a time, masked row tails) give the blocks the scalar loop and the slow reference give,
    on rows of many blocks, on pair unions (repeated ids), and with int64 node ids (past
    2^31 nodes) passed to the kernel itself."""
    if not VECTOR_FILL:
        pytest.skip("host without AVX-512: the induction has only its scalar loop")
    dense = random_graph(400, 30_000, seed=7)          # mean degree ~150: blocks and tails
    t = np.arange(0, 400, 3)
    ex = KHopExtractor(dense, depth=1, budget=40)
    out = {}
    for vec in (True, False):
        monkeypatch.setattr(ex, "vector_fill", vec)
        out[vec] = (ex.extract(t, seed=2), ex.extract_pairs(t, t[::-1], seed=2))
    for a, b in zip(out[True], out[False]):
        for f in ("offsets", "nodes", "center", "indptr", "indices"):
            assert np.array_equal(getattr(a, f), getattr(b, f)), f
    scopes = [out[True][0].block(k)[0] for k in range(t.size)]
    check_against_reference(dense, out[True][0], scopes, t)
    ts = out[True][1]
    g = dense
    marks = np.full((2, g.num_nodes), -1, dtype=np.int32)
    bound = block_bounds(g.indptr, ts.nodes, ts.offsets, W)
    runs = []
    for ids in (g.indices, g.indices.astype(np.int64)):
        for vec in (True, False):
            tmp = np.empty(int(bound[-1]), dtype=np.int32)
            rowlen = np.empty(ts.nodes.size, dtype=np.int64)
            induced_marked(g.indptr, ids, ts.offsets, ts.nodes, bound, tmp, rowlen, marks, 2, vec)
            runs.append(compact_blocks(tmp, bound, rowlen, ts.offsets))
    for indptr, indices in runs:
        assert np.array_equal(indptr, ts.indptr) and np.array_equal(indices, ts.indices)
    assert (marks == -1).all()


@pytest.mark.parametrize("limit", ["_MARK_NODES", "_MARK_ENTRIES"])
def test_counted_induction_repeats_the_one_pass_one(g, monkeypatch, limit):
    """Past |V| or scratch limits the blocks are induced by a count pass then a fill pass."""
    ex = PPRExtractor(g, eps=1e-5, k=30)
    t = np.arange(0, g.num_nodes, 3)
    one = ex.extract_pairs(t, t[::-1])
    monkeypatch.setattr(extract, limit, 0)
    two = ex.extract_pairs(t, t[::-1])
    for f in ("offsets", "nodes", "center", "center2", "indptr", "indices"):
        assert np.array_equal(getattr(one, f), getattr(two, f)), f


def test_one_pass_maps_are_kept_clean_between_calls_and_threads(g):
    """The one-pass induction's per-worker maps belong to the extractor: all -1 after every
    call, and calls from several threads at once give what serial calls give."""
    from concurrent.futures import ThreadPoolExecutor
    ex = KHopExtractor(g, depth=2, budget=-1)
    batches = [np.arange(k, g.num_nodes, 5) for k in range(5)]
    serial = [ex.extract(t) for t in batches]
    assert ex._marks.size and (ex._marks == -1).all()
    check_against_reference(g, serial[0], [R.khop_ball(g, v, 2) for v in batches[0]], batches[0])
    with ThreadPoolExecutor(4) as pool:
        again = list(pool.map(ex.extract, batches * 4))
    for a, b in zip(again, serial * 4):
        assert np.array_equal(a.nodes, b.nodes) and np.array_equal(a.indices, b.indices)
    assert (ex._marks == -1).all()


def test_khop_two_pass_scopes_repeat_the_one_pass_ones(g, monkeypatch):
    """Past the buffer size, scopes are counted then filled by a second identical pass."""
    ex = KHopExtractor(g, depth=3, budget=3)
    t = np.arange(0, g.num_nodes, 2)
    one = ex.extract(t, seed=5)
    monkeypatch.setattr(extract, "_BUF_ENTRIES", 0)
    two = ex.extract(t, seed=5)
    for f in ("offsets", "nodes", "center", "indptr", "indices"):
        assert np.array_equal(getattr(one, f), getattr(two, f)), f


def test_khop_budget_and_uniform_draws_on_a_star():
    """Depth 1 from the centre of a 40-leaf star: exactly `budget` distinct leaves, each leaf
    equally likely (chi-square over 3000 seeds); budget > 64 takes the hashed Floyd path."""
    leaves = 40
    star = Graph.from_edges(np.zeros(leaves, np.int64), np.arange(1, leaves + 1))
    for budget, runs in ((5, 3000), (30, 600)):
        ex = KHopExtractor(star, depth=1, budget=budget)
        counts = np.zeros(leaves + 1)
        for seed in range(runs):
            nodes = ex.extract([0], seed=seed).nodes
            assert nodes.size == budget + 1 and nodes[0] == 0
            assert np.unique(nodes).size == nodes.size
            counts[nodes[1:]] += 1
        chi2 = ((counts[1:] - runs * budget / leaves) ** 2 / (runs * budget / leaves)).sum()
        assert chi2 < stats.chi2.ppf(0.999, leaves - 1)
    big = Graph.from_edges(np.zeros(300, np.int64), np.arange(1, 301))
    counts = np.zeros(301)
    for seed in range(200):
        nodes = KHopExtractor(big, depth=1, budget=100).extract([0], seed=seed).nodes
        assert nodes.size == 101 and np.unique(nodes).size == 101
        counts[nodes[1:]] += 1
    assert counts[1:].min() > 0 and abs(counts[1:].mean() - 200 * 100 / 300) < 1e-9
    assert stats.chisquare(counts[1:]).pvalue > 1e-3


def test_hub_rows_longer_than_64x_the_block_agree_with_scipy():
    """A 300-leaf star plus a leaf-leaf edge: the centre's row is searched, not scanned."""
    star = Graph.from_edges(np.append(np.zeros(300, np.int64), 5), np.append(np.arange(1, 301), 6))
    ex = KHopExtractor(star, depth=1, budget=2)
    for seed in range(20):
        ts = ex.extract([0, 5, 0], seed=seed)
        check_against_reference(star, ts, [ts.block(k)[0] for k in range(3)], [0, 5, 0])
        assert ts.block(0)[0].size == 3 and ts.num_edges >= 8


def test_khop_budget_per_frontier_node_on_a_tree():
    """Root, 10 children, 10 grandchildren each. Depth 2 budget 3: 3 children, and each
    grandchild hangs below a chosen child, at most 3 per child (the root may use a draw)."""
    kids = np.arange(1, 11)
    src = np.concatenate([np.zeros(10, np.int64), np.repeat(kids, 10)])
    dst = np.concatenate([kids, np.arange(11, 111)])
    tree = Graph.from_edges(src, dst)
    ex = KHopExtractor(tree, depth=2, budget=3)
    for seed in range(50):
        nodes = ex.extract([0], seed=seed).nodes
        chosen = nodes[(nodes >= 1) & (nodes <= 10)]
        grand = nodes[nodes > 10]
        assert chosen.size == 3
        parents = (grand - 11) // 10 + 1
        assert np.isin(parents, chosen).all()
        assert np.bincount(parents, minlength=11).max() <= 3


@pytest.mark.parametrize("make", [lambda g: KHopExtractor(g, depth=2, budget=4),
                                  lambda g: PPRExtractor(g, eps=1e-5, k=30)])
def test_same_output_at_1_and_2_threads_and_alone_or_in_a_batch(g, make):
    t = np.array([5, 17, 5, 99, 0, 42, 17, 63])
    outs = []
    before = numba.get_num_threads()
    for th in (1, 2):
        set_threads(th)
        try:
            outs.append(make(g).extract(t, seed=11))
        finally:
            set_threads(before)
    a, b = outs
    for f in ("offsets", "nodes", "center", "indptr", "indices"):
        assert np.array_equal(getattr(a, f), getattr(b, f)), f
    ex = make(g)
    for k, v in enumerate(t):
        one = ex.extract([v], seed=11)
        nodes, ip, ind = a.block(k)
        n1, ip1, ind1 = one.block(0)
        assert np.array_equal(nodes, n1) and np.array_equal(ip, ip1) and np.array_equal(ind, ind1)
    scopes = [a.block(k)[0] for k in range(t.size)]
    check_against_reference(g, a, scopes, t)


def test_ppr_push_within_bound_of_power_iteration(g):
    eps, alpha = 1e-8, 0.15
    deg = g.degrees()
    ex = PPRExtractor(g, alpha=alpha, eps=eps, k=g.num_nodes)
    targets = np.arange(0, g.num_nodes, 5)
    ptr, nodes, scores = ex.lists(targets)
    tested = 0
    for i, t in enumerate(targets):
        exact = R.ppr_exact(g, t, alpha)
        push = np.zeros(g.num_nodes)
        push[nodes[ptr[i]:ptr[i + 1]]] = scores[ptr[i]:ptr[i + 1]]
        assert nodes[ptr[i]] == t
        err = exact - push          # stored scores are float32: 1e-7 slack
        assert (err >= -1e-7).all() and (err <= eps * deg + 1e-7).all()
        others = np.sort(np.delete(exact, t))[::-1]
        for k in range(2, 60):      # k where the exact top-(k-1) is separated by > eps*maxdeg
            if others[k - 2] - others[k - 1] > 2 * eps * deg.max() and others[k - 2] > 0:
                got = PPRExtractor(g, alpha=alpha, eps=eps, k=k).lists([t])[1]
                want = R.ppr_topk_exact(exact, t, k)
                assert set(got) == set(want)
                tested += 1
                break
    assert tested >= 10


def test_ppr_ties_go_to_the_smaller_ids():
    """From a star's centre every leaf has the same score: top-4 = centre + leaves 1, 2, 3;
    from leaf 7: the centre, then the other leaves (tied) by id."""
    star = Graph.from_edges(np.zeros(10, np.int64), np.arange(1, 11))
    ex = PPRExtractor(star, eps=1e-9, k=4)
    assert ex.lists([0])[1].tolist() == [0, 1, 2, 3]
    assert ex.lists([7])[1].tolist() == [7, 0, 1, 2]


def test_ppr_threshold_keeps_a_prefix(g):
    full = PPRExtractor(g, eps=1e-6, k=50)
    cut = PPRExtractor(g, eps=1e-6, k=50, threshold=0.2)
    for t in range(0, g.num_nodes, 9):
        p, n, s = full.lists([t])
        pc, nc, sc = cut.lists([t])
        assert nc[0] == t and np.array_equal(nc, n[:nc.size])
        if n.size > 1:
            assert (sc[1:] >= 0.2 * s[1] * (1 - 1e-6)).all()
            assert nc.size == n.size or s[nc.size] < 0.2 * s[1] * (1 + 1e-6)


def test_ppr_disk_cache_hit_and_invalidation(g, tmp_path):
    t = np.arange(0, g.num_nodes, 3)
    first = PPRExtractor(g, k=20, cache_dir=tmp_path)
    assert not first.cache_hit and first.precompute(t) == t.size
    assert first.cache_path.is_file() and first.precompute_seconds > 0
    again = PPRExtractor(g, k=20, cache_dir=tmp_path)
    assert again.cache_hit and again.precompute(t) == 0 and again.num_computed == 0
    for a, b in zip(first.lists(t), again.lists(t)):
        assert np.array_equal(a, b)
    assert again.num_computed == 0
    other = PPRExtractor(g, k=21, cache_dir=tmp_path)
    assert not other.cache_hit and other.cache_path != first.cache_path
    assert not PPRExtractor(g, k=20, eps=2e-6, cache_dir=tmp_path).cache_hit
    src, dst = g.edge_index()
    changed = Graph.from_edges(np.append(src, 0), np.append(dst, 77), g.num_nodes)
    assert graph_key(changed) != graph_key(g)
    assert not PPRExtractor(changed, k=20, cache_dir=tmp_path).cache_hit
    first.cache_path.write_bytes(b"not a zip")
    with pytest.raises(DataError, match="unreadable PPR cache"):
        PPRExtractor(g, k=20, cache_dir=tmp_path)


def test_ppr_lists_computed_in_pieces_are_merged(g):
    ex = PPRExtractor(g, k=15)
    for a in range(0, g.num_nodes, 13):           # misses computed batch by batch
        ex.extract(np.arange(a, min(a + 13, g.num_nodes)))
    whole = PPRExtractor(g, k=15)
    whole.precompute(np.arange(g.num_nodes))
    assert len(ex._chunks) < 5 and ex.num_cached == g.num_nodes
    t = np.random.default_rng(0).permutation(g.num_nodes)[:40]
    for x, y in zip(ex.lists(t), whole.lists(t)):
        assert np.array_equal(x, y)


@pytest.mark.parametrize("make", [lambda g: KHopExtractor(g, depth=2, budget=3),
                                  lambda g: PPRExtractor(g, eps=1e-5, k=25)])
def test_pair_blocks_are_the_union_of_both_scopes(g, make):
    ex = make(g)
    rng = np.random.default_rng(4)
    src, dst = rng.integers(0, g.num_nodes, 30), rng.integers(0, g.num_nodes, 30)
    dst[0] = src[0]
    pairs = ex.extract_pairs(src, dst, seed=7)
    a, b = ex.extract(src, seed=7), ex.extract(dst, seed=7)
    scopes = [np.union1d(a.block(k)[0], b.block(k)[0]) for k in range(src.size)]
    check_against_reference(g, pairs, scopes, src, dst)


def test_isolated_target_gives_a_one_node_block():
    g = Graph.from_edges(np.array([0, 1]), np.array([1, 2]), 4)    # node 3 isolated
    for ex in (KHopExtractor(g, depth=3), PPRExtractor(g)):
        ts = ex.extract([3, 0])
        assert ts.offsets.tolist() == [0, 1, 4] and ts.nodes.tolist() == [3, 0, 1, 2]
        assert ts.center.tolist() == [0, 1] and ts.indptr[:2].tolist() == [0, 0]
    ptr, nodes, scores = PPRExtractor(g, alpha=0.2).lists([3])
    assert nodes.tolist() == [3] and scores[0] == pytest.approx(0.2)
    empty = KHopExtractor(g).extract(np.array([], np.int64))
    assert empty.num_targets == 0 and empty.offsets.tolist() == [0]


@pytest.mark.parametrize("call, name", [
    (lambda g: KHopExtractor(g, depth=0), "depth"),
    (lambda g: KHopExtractor(g, depth=1.5), "depth"),
    (lambda g: KHopExtractor(g, budget="x"), "budget"),
    (lambda g: PPRExtractor(g, alpha=0), "alpha"),
    (lambda g: PPRExtractor(g, alpha=1.0), "alpha"),
    (lambda g: PPRExtractor(g, eps=0), "eps"),
    (lambda g: PPRExtractor(g, eps=-1e-6), "eps"),
    (lambda g: PPRExtractor(g, k=0), "k"),
    (lambda g: PPRExtractor(g, threshold=1.5), "threshold"),
    (lambda g: KHopExtractor(g).extract([0, g.num_nodes]), "targets"),
    (lambda g: KHopExtractor(g).extract([-1]), "targets"),
    (lambda g: PPRExtractor(g).extract([0.5]), "targets"),
    (lambda g: KHopExtractor(g).extract_pairs([0, 1], [2]), "src"),
    (lambda g: PPRExtractor(g).extract_pairs([0], [g.num_nodes]), "dst"),
])
def test_bad_parameters_are_one_line_config_errors(g, call, name):
    with pytest.raises(ConfigError) as e:
        call(g)
    msg = str(e.value)
    assert msg.startswith(name) and "\n" not in msg


@pytest.mark.realdata
def test_facebook_extraction_matches_reference(shared_data):
    from scalegnn.data import load_dataset
    g = load_dataset(str(shared_data / "facebook")).graph
    t = np.random.default_rng(0).integers(0, g.num_nodes, 64)
    for ex in (KHopExtractor(g, depth=2, budget=20), PPRExtractor(g, eps=1e-5, k=100)):
        ts = ex.extract(t, seed=1)
        sizes = np.diff(ts.offsets)
        assert sizes.min() >= 1 and sizes.max() <= (421 if isinstance(ex, KHopExtractor) else 100)
        check_against_reference(g, ts, [ts.block(k)[0] for k in range(t.size)], t)
