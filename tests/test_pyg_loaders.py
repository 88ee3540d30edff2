"""scalegnn.pyg's NeighborLoader and the CSR by target it samples.

Fanout against a slow reference (exactly min(deg, k) distinct in-neighbours per node and hop,
first-seen numbering), uniform draws, PyG's batch fields, determinism at any thread count,
one-line errors. GraphSAINT: test_pyg_saint.py; Cluster-GCN, conversions and PyG training
scripts run with only their import line changed: test_pyg_cluster.py."""

import numpy as np
import pytest

pytest.importorskip("torch_geometric")

import torch  # noqa: E402
from torch_geometric.data import Data  # noqa: E402

import scalegnn.pyg as P  # noqa: E402
from scalegnn.errors import ScaleGNNError  # noqa: E402
from scalegnn.graph import Graph  # noqa: E402
from scalegnn.pyg._common import target_csr  # noqa: E402
from scalegnn.sampling.neighbour import NeighbourSampler  # noqa: E402


def skewed_data(n=300, m=2500, seed=0, undirected=True, isolated=5, features=8):
    """Hubs, isolated nodes, duplicates and self-loops; edge_attr = edge position."""
    rng = np.random.default_rng(seed)
    w = 1.0 / np.arange(1, n - isolated + 1) ** 0.8
    src = rng.choice(n - isolated, m, p=w / w.sum())
    dst = rng.integers(0, n - isolated, m)
    ei = torch.from_numpy(np.stack([src, dst]))
    if undirected:
        ei = torch.cat([ei, ei.flip(0)], 1)
    return Data(x=torch.randn(n, features, generator=torch.Generator().manual_seed(seed)),
                y=torch.from_numpy(rng.integers(0, 3, n)), edge_index=ei,
                edge_attr=torch.arange(ei.shape[1], dtype=torch.float32))


def assert_edges_map_back(data, b):
    """Every local edge is the parent edge e_id, edge attributes sliced at e_id."""
    ei = data.edge_index
    assert torch.equal(ei[0, b.e_id], b.n_id[b.edge_index[0]])
    assert torch.equal(ei[1, b.e_id], b.n_id[b.edge_index[1]])
    assert torch.equal(b.edge_attr, data.edge_attr[b.e_id])
    assert torch.equal(b.x, data.x[b.n_id]) and torch.equal(b.y, data.y[b.n_id])


# ------------------------------------------------------------------ CSR by target
def test_target_csr_matches_a_stable_lexsort_and_is_cached():
    data = skewed_data(undirected=False)
    csr = target_csr(data, "t")
    ei = data.edge_index.numpy()
    order = np.lexsort((ei[0], ei[1]))          # by target, then source, then edge order
    assert np.array_equal(csr.perm, order)
    assert np.array_equal(csr.graph.indices, ei[0][order])
    assert np.array_equal(csr.graph.indptr, np.r_[0, np.cumsum(np.bincount(ei[1], minlength=300))])
    assert target_csr(data, "t") is csr              # built once per edge_index
    data.edge_index[0, 0] = 7                        # modified in place: rebuilt
    assert target_csr(data, "t") is not csr


# ------------------------------------------------------------------ neighbour sampling
def neighbour_reference(graph, seeds, fanouts, replace, s):
    """The textbook multi-hop sampler replayed on the sampler's draws: checks that frontier
    node v gets exactly min(deg, k) (k if replace; deg if k = -1) entries of its own row,
    distinct unless replace, and rebuilds the numbering (seeds first, then first seen)."""
    indptr = graph.indptr
    nodes = list(seeds)
    local = {}
    for t, v in enumerate(seeds):
        local.setdefault(int(v), t)
    src, dst, j = [], [], 0
    lo, hi = 0, len(nodes)
    for k in fanouts:
        for i in range(lo, hi):
            v = nodes[i]
            d = int(indptr[v + 1] - indptr[v])
            c = d if k < 0 else (k if d > 0 else 0) if replace else min(d, k)
            pos = s.edge_ids[j:j + c]
            assert ((pos >= indptr[v]) & (pos < indptr[v + 1])).all()
            if not replace:
                assert np.unique(pos).size == c
            for p in pos:
                u = int(graph.indices[p])
                if u not in local:
                    local[u] = len(nodes)
                    nodes.append(u)
                src.append(local[u])
                dst.append(i)
            j += c
        lo, hi = hi, len(nodes)
    assert j == s.edge_ids.size
    assert np.array_equal(s.nodes, nodes)
    assert np.array_equal(s.src, src) and np.array_equal(s.dst, dst)


@pytest.mark.parametrize("fanouts,replace,undirected", [
    ([3, 2], False, False), ([-1, 0, 5], False, False), ([4, 3], True, False),
    ([1, 1, 1, 1], False, False), ([40, 33], False, True), ([60, 2], False, True)])
def test_fanout_per_node_and_hop_is_exactly_min_deg_k(fanouts, replace, undirected):
    """Undirected: hub rows of 100-300 entries reach Fisher-Yates (d <= 4k) and the hashed
    Floyd draw (d > 4k) besides Floyd's small-k one."""
    data = skewed_data(undirected=undirected)
    graph = target_csr(data, "t").graph
    if undirected:
        assert graph.degrees().max() > 4 * 40 and ((graph.degrees() > 60) &
                                                   (graph.degrees() <= 240)).any()
    sampler = NeighbourSampler(graph, fanouts, replace)
    rng = np.random.default_rng(1)
    for index in range(4):
        seeds = rng.choice(300, 40, replace=False)
        seeds[5] = seeds[6]          # a repeated seed keeps its own slot
        s = sampler.sample(seeds, seed=3, index=index)
        neighbour_reference(graph, seeds, fanouts, replace, s)
        assert s.num_sampled_edges == [int(x) for x in np.bincount(
            np.searchsorted(np.cumsum(s.num_sampled_nodes), s.dst, side="right"),
            minlength=len(fanouts))[:len(fanouts)]]


@pytest.mark.parametrize("deg,k", [(10, 3), (100, 40), (1000, 40)])  # the three algorithms
def test_draws_without_replacement_are_uniform(deg, k):
    g = Graph.from_edges(np.zeros(deg, np.int64), np.arange(1, deg + 1), deg + 1,
                         symmetrize=False)
    sampler = NeighbourSampler(g, [k])
    trials = 3000
    hits = np.zeros(g.num_nodes)
    for i in range(trials):
        s = sampler.sample([0], seed=11, index=i)
        assert s.nodes.size == k + 1 and np.unique(s.nodes).size == k + 1
        hits[s.nodes[1:]] += 1
    p = k / deg
    z = (hits[1:] - trials * p) / np.sqrt(trials * p * (1 - p))
    assert np.abs(z).max() < 5, z


def test_neighbor_loader_batches_follow_pygs_contract():
    data = skewed_data()
    mask = torch.zeros(300, dtype=torch.bool)
    mask[::3] = True
    loader = P.NeighborLoader(data, num_neighbors=[5, 3], batch_size=32, input_nodes=mask,
                              shuffle=True, seed=4, num_workers=4)
    assert len(loader) == -(-100 // 32)
    seen = []
    for b in loader:
        assert torch.equal(b.n_id[:b.batch_size], torch.arange(300)[mask][b.input_id])
        assert b.num_sampled_nodes[0] == b.batch_size and sum(b.num_sampled_nodes) == b.num_nodes
        assert sum(b.num_sampled_edges) == b.edge_index.shape[1]
        assert b.n_id.unique().numel() == b.n_id.numel()
        assert_edges_map_back(data, b)
        seen.append(b.input_id)
    assert torch.equal(torch.cat(seen).sort().values, torch.arange(100))


def test_neighbor_loader_is_deterministic_at_any_thread_count():
    data = skewed_data()

    def batches(seed, threads):
        loader = P.NeighborLoader(data, [4, 4], batch_size=50, shuffle=True, seed=seed,
                                  num_threads=threads)
        return [(b.n_id, b.edge_index, b.e_id) for _ in range(2) for b in loader]

    a, b, c = batches(7, 1), batches(7, 2), batches(8, 2)
    assert all(torch.equal(x, y) for p, q in zip(a, b) for x, y in zip(p, q))
    assert not all(torch.equal(p[0], q[0]) for p, q in zip(a, c))
    half = len(a) // 2                                  # epoch 2 differs from epoch 1
    assert not all(torch.equal(p[0], q[0]) for p, q in zip(a[:half], a[half:]))


def test_seed_none_follows_torch_manual_seed():
    data = skewed_data()
    torch.manual_seed(5)
    a = next(iter(P.NeighborLoader(data, [3], batch_size=20, shuffle=True)))
    torch.manual_seed(5)
    b = next(iter(P.NeighborLoader(data, [3], batch_size=20, shuffle=True)))
    assert torch.equal(a.n_id, b.n_id)


@pytest.mark.parametrize("kwargs,match", [
    ({"num_neighbors": [-2]}, r"num_neighbors\[0\] must be an integer >= -1"),
    ({"num_neighbors": "5"}, "num_neighbors must be a list"),
    ({"num_neighbors": [2], "batch_size": 0}, "batch_size must be"),
    ({"num_neighbors": [2], "bogus": 1}, "unknown argument 'bogus'"),
    ({"num_neighbors": [2], "disjoint": True}, "disjoint=True is not supported"),
    ({"num_neighbors": [2], "input_nodes": torch.tensor([300])}, "input_nodes has an id"),
])
def test_bad_neighbor_loader_arguments_are_one_line_errors(kwargs, match):
    with pytest.raises(ScaleGNNError, match=match) as e:
        P.NeighborLoader(skewed_data(), **kwargs)
    assert "\n" not in str(e.value) and len(str(e.value)) <= 300


def test_bad_edge_index_is_a_one_line_error():
    data = skewed_data()
    data.edge_index = data.edge_index.clone()
    data.edge_index[1, 3] = 300
    with pytest.raises(ScaleGNNError, match="node id 300, out of range for data.num_nodes=300"):
        P.NeighborLoader(data, [2])


def test_the_csr_is_the_only_copy_of_the_edge_list():
    """Building the CSR by target allocates its sources and edge positions (int32 each: half
    of edge_index's int64 pair) plus the row pointers, nothing edge-sized besides."""
    import tracemalloc
    rng = np.random.default_rng(0)
    n, e = 50_000, 1_000_000
    data = Data(x=torch.zeros(n, 1), edge_index=torch.from_numpy(rng.integers(0, n, (2, e))))
    target_csr(Data(x=torch.zeros(4, 1), edge_index=torch.tensor([[0, 1], [1, 0]])), "warm-up")
    tracemalloc.start()
    csr = target_csr(data, "t")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert csr.graph.indices.dtype == np.int32 and csr.perm.dtype == np.int32
    need = 8 * e + 2 * 8 * (n + 1)          # indices + perm, indptr + the scatter cursor
    assert peak <= need * 1.05 + (1 << 20), (peak, need)
