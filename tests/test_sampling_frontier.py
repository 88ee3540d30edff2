"""Dashboard frontier sampler vs the frontier definition and the simple O(m) reference."""

import math
from collections import Counter

import numpy as np
import pytest
from scipy import stats

from scalegnn.graph import Graph
from scalegnn.sampling import make_sampler
from scalegnn.sampling import reference as R
from scalegnn.sampling._frontier_kernels import frontier_trace


def skewed_graph(n=120, m=500, seed=0):
    """Random graph with a heavy-tailed degree distribution (preferential-ish endpoints)."""
    rng = np.random.default_rng(seed)
    w = 1.0 / np.arange(1, n + 1) ** 0.8
    w /= w.sum()
    return Graph.from_edges(rng.choice(n, m, p=w), rng.integers(0, n, m), n)


def torus(k):
    ids = np.arange(k * k).reshape(k, k)
    src = np.concatenate([ids.ravel(), ids.ravel()])
    dst = np.concatenate([np.roll(ids, 1, axis=0).ravel(), np.roll(ids, 1, axis=1).ravel()])
    return Graph.from_edges(src, dst, k * k)


def pit_values(g, entries, pops, m, max_deg, rng):
    """Probability integral transform of each pop under P(u) ∝ pins(u) over the current frontier
    (a multiset); uniform on [0, 1) iff the pops follow the frontier rule. Also checks that the
    popped node is in the frontier and the added node is one of its neighbours."""
    deg = g.degrees()
    pins = np.minimum(deg, max_deg) if max_deg else deg
    fs = Counter(entries[:m].tolist())
    out = []
    for t, u in enumerate(pops.tolist()):
        assert fs[u] > 0, "popped a node that is not in the frontier"
        keys = sorted(fs)
        w = np.array([fs[v] * pins[v] for v in keys], dtype=float)
        cum = np.concatenate([[0.0], np.cumsum(w)])
        j = keys.index(u)
        out.append((cum[j] + rng.random() * w[j]) / cum[-1])
        new = int(entries[m + t])
        assert new in g.indices[g.indptr[u]:g.indptr[u + 1]]
        fs[u] -= 1
        if fs[u] == 0:
            del fs[u]
        fs[new] += 1
    return np.array(out)


@pytest.mark.parametrize("max_deg", [0, 4])
def test_dashboard_pops_follow_degree_at_every_step(max_deg):
    g = skewed_graph()
    params = {"size_subgraph": 300, "size_frontier": 15}
    if max_deg:
        params["max_deg"] = max_deg
    s = make_sampler("mrw", g, np.arange(g.num_nodes), params)
    rng = np.random.default_rng(0)
    u = np.concatenate([pit_values(g, *s.trace(seed), 15, max_deg, rng) for seed in range(40)])
    assert u.size == 40 * 285
    assert stats.kstest(u, "uniform").pvalue > 1e-3


def test_dashboard_cleanup_path_keeps_the_distribution():
    """eta close to 1 forces a CLEANUP every few steps (torus: every node has 4 pins)."""
    g = torus(12)
    s = make_sampler("mrw", g, np.arange(g.num_nodes), {"size_subgraph": 400,
                                                         "size_frontier": 30})
    s.eta = 1.05
    s.db_size = int(math.ceil(s.eta * 30 * 4))
    rng = np.random.default_rng(1)
    u = np.concatenate([pit_values(g, *s.trace(seed), 30, 0, rng) for seed in range(30)])
    assert stats.kstest(u, "uniform").pvalue > 1e-3


def test_dashboard_pop_frequencies_match_simple_reference():
    g = skewed_graph(n=40, m=90, seed=3)
    nodes = np.arange(g.num_nodes)
    m, n, runs = 6, 30, 1500
    s = make_sampler("mrw", g, nodes, {"size_subgraph": n, "size_frontier": m})
    fast = np.zeros(g.num_nodes)
    for seed in range(runs):
        _, pops = s.trace(seed)
        fast += np.bincount(pops, minlength=g.num_nodes)
    rng = np.random.default_rng(0)
    slow = np.zeros(g.num_nodes)
    for _ in range(runs):
        _, pops = R.frontier_sample(g, nodes, m, n, rng)
        slow += np.bincount(pops, minlength=g.num_nodes)
    keep = (fast + slow) > 0
    table = np.vstack([fast[keep], slow[keep]])
    assert stats.chi2_contingency(table).pvalue > 1e-4


def test_subgraph_nodes_are_frontier_union_added():
    g = skewed_graph()
    s = make_sampler("mrw", g, np.arange(0, 120, 3), {"size_subgraph": 200, "size_frontier": 25})
    entries, pops = s.trace(7)
    (sub,) = s.sample(1, seed=7)
    np.testing.assert_array_equal(sub.nodes, np.unique(entries))
    assert len(set(entries[:25].tolist())) == 25  # initial frontier without replacement
    assert np.all(np.isin(entries[:25], np.arange(0, 120, 3)))
    assert entries.size == 200 and pops.size == 175


def test_isolated_frontier_stops_early():
    g = Graph.from_edges(np.array([0, 1]), np.array([1, 2]), 8)  # nodes 3..7 isolated
    s = make_sampler("mrw", g, np.arange(3, 8), {"size_subgraph": 50, "size_frontier": 3})
    entries, pops = s.trace(0)
    assert entries.size == 3 and pops.size == 0
    # a mixed frontier never pops an isolated node
    s = make_sampler("mrw", g, np.arange(8), {"size_subgraph": 60, "size_frontier": 6})
    for seed in range(20):
        entries, pops = s.trace(seed)
        assert np.all(g.degrees()[pops] > 0)


def test_huge_degree_node_gets_remaining_slots():
    """A hub with more pins than DB holds: sampling still completes with valid pops."""
    hub = 0
    leaves = np.arange(1, 400)
    g = Graph.from_edges(np.full(leaves.size, hub), leaves, 400)
    s = make_sampler("mrw", g, np.arange(400), {"size_subgraph": 300, "size_frontier": 10})
    for seed in range(20):
        entries, pops = s.trace(seed)
        assert entries.size == 300
        for t, u in enumerate(pops):
            assert entries[10 + t] in g.indices[g.indptr[u]:g.indptr[u + 1]]


def _written_pin_dashboard(indptr, indices, nodes, m, n, max_deg, eta, db_size, seed):
    """The journal's Dashboard with its DB written out (Alg. 3/4: every pin holds its tile
    id), in plain Python on numba's generator (MT19937 seeded as numpy's legacy one, so the
    draws are the kernel's): (buf, pops) for comparison with the kernel's implicit DB."""
    rs = np.random.RandomState(seed)

    def randint(k):
        return min(int(rs.random_sample() * k), k - 1)

    def pins(v):
        d = int(indptr[v + 1] - indptr[v])
        return min(d, max_deg) if max_deg > 0 and d > max_deg else d

    nn = len(nodes)
    buf, chosen = [], set()
    if 2 * m <= nn:
        while len(buf) < m:
            v = int(nodes[randint(nn)])
            if v not in chosen:
                chosen.add(v)
                buf.append(v)
    else:
        perm = list(range(nn))
        for j in range(m):
            t = j + randint(nn - j)
            perm[j], perm[t] = perm[t], perm[j]
            buf.append(int(nodes[perm[j]]))
    size = max(db_size, int(eta * sum(pins(v) for v in buf)) + 1)
    db = []                 # tile id per used slot
    tiles = []              # [node, start, end, alive]
    for v in buf:
        p = pins(v)
        tiles.append([v, len(db), len(db) + p, p > 0])
        db += [len(tiles) - 1] * p
    live, pops = len(db), []
    for _ in range(n - m):
        if live == 0:
            break
        while True:
            r = randint(len(db))
            t = db[r]
            if tiles[t][3] and tiles[t][1] <= r < tiles[t][2]:
                break
        vpop = tiles[t][0]
        live -= tiles[t][2] - tiles[t][1]
        tiles[t][3] = False
        pops.append(vpop)
        vnew = int(indices[indptr[vpop] + randint(int(indptr[vpop + 1] - indptr[vpop]))])
        buf.append(vnew)
        p = pins(vnew)
        if len(db) + p > size or len(db) + p > eta * (live + p):   # CLEANUP: live pins, in order
            new, seen = [], set()
            for r, tt in enumerate(db):
                if tiles[tt][3] and tiles[tt][1] <= r < tiles[tt][2] and tt not in seen:
                    seen.add(tt)
                    w = tiles[tt][2] - tiles[tt][1]
                    tiles[tt][1:3] = [len(new), len(new) + w]
                    new += [tt] * w
            db = new
            p = min(p, size - len(db))
        tiles[t] = [vnew, len(db), len(db) + p, p > 0]
        db += [t] * p
        live += p
    return np.array(buf), np.array(pops, dtype=np.int64)


@pytest.mark.parametrize("budget,db_size", [((90, 30, 0), None), ((90, 30, 4), None),
                                            ((200, 10, 0), 1), ((40, 40, 0), None)])
def test_implicit_dashboard_is_the_written_pin_dashboard(budget, db_size):
    """The kernel finds a probed slot's node by binary search over the pin ranges instead of
    reading a written-out DB: the same seeds give the journal's runs, pop for pop (also with
    max_deg, a frontier of the whole node set, and a DB too small for the frontier, which
    exercises CLEANUP and the "all remaining slots" rule)."""
    g = skewed_graph()
    n, m, max_deg = budget
    b = {"size_subgraph": n, "size_frontier": m, **({"max_deg": max_deg} if max_deg else {})}
    s = make_sampler("mrw", g, np.arange(g.num_nodes), b)
    size = s.db_size if db_size is None else db_size
    mark = np.full(g.num_nodes, -1, dtype=np.int32)
    for seed in range(12):
        got = frontier_trace(g.indptr, g.indices, s.nodes, s.m, s.n, s.max_deg, s.eta, size,
                             seed, mark)
        want = _written_pin_dashboard(g.indptr, g.indices, s.nodes, s.m, s.n, s.max_deg, s.eta,
                                      size, seed)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
