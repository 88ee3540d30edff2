"""scalegnn.pyg's GraphSAINT loaders: inclusion frequencies against the samplers' formulas,
node_norm / edge_norm against SPEC §1.2 (exact on the pre-sample, unbiased on fresh batches
with tolerances from the sample counts), determinism, saved counts, errors."""

import numpy as np
import pytest

pytest.importorskip("torch_geometric")

import torch  # noqa: E402
from torch_geometric.data import Data  # noqa: E402

import scalegnn.pyg as P  # noqa: E402
from scalegnn.errors import ScaleGNNError  # noqa: E402
from scalegnn.graph import Graph  # noqa: E402

N_NODES = 150


@pytest.fixture(scope="module")
def clean():
    """An undirected skewed graph without duplicates or self-loops, as PyG's edge_index in a
    shuffled edge order (so CSR positions and edge ids differ)."""
    rng = np.random.default_rng(0)
    w = 1.0 / np.arange(1, N_NODES + 1) ** 0.7
    g = Graph.from_edges(rng.choice(N_NODES, 600, p=w / w.sum()),
                         rng.integers(0, N_NODES, 600), N_NODES)
    rows = np.repeat(np.arange(N_NODES), g.degrees())
    order = rng.permutation(g.num_edges)
    ei = torch.from_numpy(np.stack([g.indices.astype(np.int64), rows])[:, order])
    data = Data(x=torch.randn(N_NODES, 4), y=torch.arange(N_NODES), edge_index=ei,
                edge_attr=torch.arange(ei.shape[1], dtype=torch.float32))
    return data, g


def z_scores(hits, trials, p):
    keep = (p > 1e-9) & (p < 1 - 1e-9)
    return (hits[keep] - trials * p[keep]) / np.sqrt(trials * p[keep] * (1 - p[keep]))


def inclusion(loader, trials):
    hits = np.zeros(N_NODES)
    for _ in range(trials):
        hits[loader.next_batch().n_id.numpy()] += 1
    return hits


def test_node_sampler_inclusion_frequency(clean):
    data, g = clean
    k, trials = 30, 3000
    loader = P.GraphSAINTNodeSampler(data, batch_size=k, num_steps=trials, seed=2)
    p = g.degrees() / g.num_edges
    assert np.abs(z_scores(inclusion(loader, trials), trials, 1 - (1 - p) ** k)).max() < 5


def test_edge_sampler_inclusion_frequency(clean):
    data, g = clean
    m, trials = 20, 3000
    loader = P.GraphSAINTEdgeSampler(data, batch_size=m, num_steps=trials, seed=2)
    rows = np.repeat(np.arange(N_NODES), g.degrees())
    up = rows < g.indices
    u, v = rows[up], g.indices[up].astype(np.int64)
    inv = 1.0 / g.degrees()
    pe = inv[u] + inv[v]
    pe /= pe.sum()                                    # P(u, v) ∝ 1/deg(u) + 1/deg(v)
    q = np.bincount(u, pe, N_NODES) + np.bincount(v, pe, N_NODES)
    assert np.abs(z_scores(inclusion(loader, trials), trials, 1 - (1 - q) ** m)).max() < 5


def test_random_walk_sampler_inclusion_frequency(clean):
    data, g = clean
    r, trials = 25, 3000
    loader = P.GraphSAINTRandomWalkSampler(data, batch_size=r, walk_length=1,
                                           num_steps=trials, seed=2)
    rows = np.repeat(np.arange(N_NODES), g.degrees())
    step = np.bincount(g.indices, 1.0 / g.degrees()[rows], N_NODES)   # sum_u 1/deg(u)
    walk = (1.0 + step) / N_NODES                     # root v, or a step into v
    assert np.abs(z_scores(inclusion(loader, trials), trials, 1 - (1 - walk) ** r)).max() < 5


@pytest.mark.parametrize("cls,kw", [(P.GraphSAINTNodeSampler, {}),
                                    (P.GraphSAINTEdgeSampler, {}),
                                    (P.GraphSAINTRandomWalkSampler, {"walk_length": 2})])
def test_norms_are_the_spec_formula_on_the_presample(clean, cls, kw):
    """The first N batches are the N pre-sampled subgraphs: counting them gives C_v and C_e,
    and node_norm = N / C_v / |V|, edge_norm(u -> v) = C_v / C_e (SPEC §1.2)."""
    data, _ = clean
    loader = cls(data, batch_size=20, sample_coverage=10, seed=3, **kw)
    n = loader.norm.num_subgraphs
    assert loader.norm.num_kept == n
    batches = [loader.next_batch() for _ in range(n)]
    sizes = np.cumsum([b.num_nodes for b in batches])   # N: the first to reach coverage |V|
    assert sizes[-1] >= 10 * N_NODES and (n == 1 or sizes[-2] < 10 * N_NODES)
    cv = np.zeros(N_NODES)
    ce = np.zeros(data.edge_index.shape[1])
    for b in batches:
        cv[b.n_id.numpy()] += 1
        ce[b.e_id.numpy()] += 1
    target = data.edge_index[1].numpy()
    for b in batches:
        nid, eid = b.n_id.numpy(), b.e_id.numpy()
        assert np.allclose(b.node_norm.numpy(), n / cv[nid] / N_NODES, rtol=1e-6)
        assert np.allclose(b.edge_norm.numpy(), np.minimum(cv[target[eid]] / ce[eid], 1e4),
                           rtol=1e-6)
        assert torch.equal(b.edge_attr, data.edge_attr[b.e_id])


def test_node_sampler_norms_are_unbiased(clean):
    """C_v / N and C_e / N estimate the analytic inclusion probabilities (binomial
    tolerance), and on fresh batches the normalized 1-layer aggregation loss
    sum_v node_norm_v sum_(u->v) edge_norm x_u / deg(v) estimates its full-graph mean
    (tolerance: the batches' standard error and the counts' sampling error)."""
    data, g = clean
    k = 40
    loader = P.GraphSAINTNodeSampler(data, batch_size=k, sample_coverage=100, seed=1)
    n = loader.norm.num_subgraphs
    deg = g.degrees().astype(float)
    p = deg / deg.sum()
    pv = 1 - (1 - p) ** k
    rows = np.repeat(np.arange(N_NODES), g.degrees())
    pu, pw = p[rows], p[g.indices]
    pe = 1 - (1 - pu) ** k - (1 - pw) ** k + (1 - pu - pw) ** k
    norm = loader.norm     # counts by CSR position (row = target)
    assert np.abs(z_scores(norm.node_counts.astype(float), n, pv)).max() < 5
    assert np.abs(z_scores(norm.edge_counts.astype(float), n, pe)).max() < 5
    for _ in range(n):
        loader.next_batch()                          # past the pre-sample
    x = np.random.default_rng(5).standard_normal(N_NODES)
    term = x[g.indices] / (N_NODES * deg[rows])      # each edge's share of the mean
    truth = term.sum()
    rel = (1 - pe) / (n * pe)                        # relative variance of C_e
    trials = 3000
    est = np.empty(trials)
    for t in range(trials):
        b = loader.next_batch()
        nid = b.n_id.numpy()
        s, d = b.edge_index.numpy()
        agg = np.zeros(nid.size)
        np.add.at(agg, d, b.edge_norm.numpy() * x[nid[s]] / deg[nid[d]])
        est[t] = (b.node_norm.numpy() * agg).sum()
    se = est.std() / np.sqrt(trials)
    jensen = (term * rel).sum()                      # E[1/C] > 1/E[C]
    tol = 5 * np.sqrt(se ** 2 + (term ** 2 * rel).sum())
    assert abs(est.mean() - truth - jensen) < tol, (est.mean(), truth, jensen, tol)


def test_graphsaint_is_deterministic_and_continues_its_stream(clean):
    data, _ = clean

    def ids(seed, threads):
        loader = P.GraphSAINTRandomWalkSampler(data, 10, walk_length=2, num_steps=6,
                                               sample_coverage=5, seed=seed,
                                               num_threads=threads)
        return [b.n_id for _ in range(2) for b in loader]

    a, b = ids(9, 1), ids(9, 2)
    assert len(a) == 12 and all(torch.equal(x, y) for x, y in zip(a, b))
    assert not all(torch.equal(x, y) for x, y in zip(a, ids(10, 2)))
    assert not all(torch.equal(x, y) for x, y in zip(a[:6], a[6:]))


def test_saved_counts_are_read_back(clean, tmp_path):
    data, _ = clean
    a = P.GraphSAINTNodeSampler(data, 20, sample_coverage=5, save_dir=tmp_path, seed=4)
    files = list(tmp_path.iterdir())
    assert [f.name for f in files] == ["graphsaintnodesampler_20_5_4.npz"]
    b = P.GraphSAINTNodeSampler(data, 20, sample_coverage=5, save_dir=tmp_path, seed=4)
    assert np.array_equal(a.norm.loss_weight, b.norm.loss_weight)
    assert np.array_equal(a.norm.edge_multiplier, b.norm.edge_multiplier)
    assert a.norm.num_subgraphs == b.norm.num_subgraphs
    files[0].write_bytes(b"not a zip")
    with pytest.raises(ScaleGNNError, match="not a normalization file"):
        P.GraphSAINTNodeSampler(data, 20, sample_coverage=5, save_dir=tmp_path, seed=4)


def test_directed_graph_and_bad_arguments_are_one_line_errors(clean):
    data, _ = clean
    directed = Data(x=data.x, edge_index=data.edge_index[:, :100])
    for call, match in [
        (lambda: P.GraphSAINTNodeSampler(directed, 10), "need an undirected graph"),
        (lambda: P.GraphSAINTNodeSampler(data, 10, sample_coverage=-1), "sample_coverage"),
        (lambda: P.GraphSAINTRandomWalkSampler(data, 10, walk_length=-1), "walk_length"),
        (lambda: P.GraphSAINTEdgeSampler(data, 10, shuffle=True), "unknown argument"),
    ]:
        with pytest.raises(ScaleGNNError, match=match) as e:
            call()
        assert "\n" not in str(e.value)
