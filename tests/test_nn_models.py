"""Model families of SPEC §1.3 (GCN, MixHop, GAT, JK-Net, GIN): each layer against a slow dense
reference in float64 (values and gradients, square and rectangular Â), GAT gradcheck,
full-graph evaluation equal to the forward pass, distributed-style boundary exchange, config
validation, and end-to-end training with the Trainer."""

import json

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from test_train import planted, small_config

from scalegnn.config import Config
from scalegnn.errors import ConfigError, GraphError
from scalegnn.graph import Graph
from scalegnn.nn import (MODELS, GATLayer, GCNLayer, GINLayer, JumpingKnowledge, MixHopLayer,
                         build_model, gcn_norm)
from scalegnn.nn.gat import attention_spmm, edge_rows
from scalegnn.ops import SparseAdj
from scalegnn.ops.fused import bias_act_norm_reference
from scalegnn.engine.evaluate import full_graph_logits
from scalegnn.train.trainer import Trainer

FAMILIES = ["gcn", "gat", "mixhop", "jk", "gin"]
DT = torch.float64


def square_adj(n=24, m=70, seed=0):
    """Symmetric sorted pattern, values = D⁻¹ times random α-like multipliers (not symmetric)."""
    rng = np.random.default_rng(seed)
    g = Graph.from_edges(rng.integers(0, n, m), rng.integers(0, n, m), n)
    data = g.row_normalized(dtype=np.float64).data * rng.uniform(0.5, 2.0, g.num_edges)
    return SparseAdj.from_graph(g.with_data(data), g.transpose_permutation(), dtype=np.float64)


def rect_adj(rows=9, cols=20, m=50, seed=1):
    """Rows = the first ``rows`` nodes; columns beyond are boundary nodes; one diagonal entry."""
    rng = np.random.default_rng(seed)
    src = np.concatenate([rng.integers(0, rows, m), [2]])
    dst = np.concatenate([rng.integers(0, cols, m), [2]])
    g = Graph.from_edges(src, dst, cols, symmetrize=False, remove_self_loops=False)
    indptr = g.indptr[: rows + 1]
    indices = g.indices[: indptr[-1]]
    data = rng.uniform(0.1, 1.0, indices.shape[0])
    return SparseAdj(indptr, indices, data, cols)


def dense(adj):
    a = torch.zeros(adj.shape, dtype=DT)
    for v in range(adj.num_rows):
        for e in range(adj.indptr[v], adj.indptr[v + 1]):
            a[v, int(adj.indices[e])] += float(adj.data[e])
    return a


def tail_ref(t, tail):
    """Reference of nn.tail.LayerTail with the torch composition."""
    if tail.mode == "norm":
        return bias_act_norm_reference(t, tail.bias, tail.scale, tail.offset, tail.act)
    if tail.bias is not None:
        t = t + tail.bias
    return tail.act(t)


def randomize(module, seed=0):
    """Non-trivial values for every parameter (biases/scales/ε are 0/1 after reset)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(0.5 * torch.randn(p.shape, generator=g, dtype=p.dtype) + (p == 1) * 1.0)
    return module


def gcn_ref(layer, x, a):
    return tail_ref(a @ x @ layer.weight, layer.tail)


def mixhop_ref(layer, x, a):
    n = a.shape[0]
    out = []
    for w, tail, k in zip(layer.weights, layer.tails, layer.powers):
        h = x
        for _ in range(k):
            h = a @ h
        out.append(tail_ref(h[:n] @ w, tail))
    return torch.cat(out, dim=1)


def gin_ref(layer, x, a):
    n = a.shape[0]
    if layer.weights == "ones":
        a = (a != 0).to(DT)
    t = (1 + layer.eps) * x[:n] + a @ x
    h = layer.act(t @ layer.lin1.weight.t() + layer.lin1.bias)
    return tail_ref(h @ layer.lin2.weight.t(), layer.tail)


def gat_ref(layer, x, adj):
    """Explicit loops: per head, per destination row, softmax over its neighbour list."""
    n, heads, f = adj.num_rows, layer.heads, layer.out_dim
    z = (x @ layer.weight).view(-1, heads, f)
    rows = []
    for v in range(n):
        nbrs = [int(u) for u in adj.indices[adj.indptr[v]:adj.indptr[v + 1]]]
        if layer.self_loops:
            nbrs = [u for u in nbrs if u != v] + [v]
        per_head = []
        for k in range(heads):
            if not nbrs:
                per_head.append(torch.zeros(f, dtype=x.dtype))
                continue
            e = torch.stack([F.leaky_relu(layer.att_dst[k] @ z[v, k] + layer.att_src[k] @ z[u, k],
                                          layer.negative_slope) for u in nbrs])
            att = torch.exp(e) / torch.exp(e).sum()
            per_head.append(sum(att[i] * z[u, k] for i, u in enumerate(nbrs)))
        h = torch.stack(per_head)
        rows.append(h.reshape(-1) if layer.concat else h.mean(0))
    return tail_ref(torch.stack(rows), layer.tail)


def make_layer(kind, d_in, d_out, bias, **kw):
    if kind == "gcn":
        return GCNLayer(d_in, d_out, bias, "relu"), gcn_ref
    if kind == "mixhop":
        return MixHopLayer(d_in, d_out, kw.get("powers", (0, 1, 2)), bias, "relu"), mixhop_ref
    if kind == "gin":
        return GINLayer(d_in, d_out, bias, "relu", weights=kw.get("weights", "operator")), gin_ref
    return GATLayer(d_in, d_out, kw.get("heads", 3), kw.get("concat", True), bias, "elu",
                    self_loops=kw.get("self_loops", True)), None


def check_against_reference(layer, ref, adj, d_in, seed=0):
    layer = randomize(layer.to(DT), seed)
    x = torch.randn(adj.num_cols, d_in, dtype=DT, generator=torch.Generator().manual_seed(seed),
                    requires_grad=True)
    got = layer(x, adj)
    want = gat_ref(layer, x, adj) if ref is None else ref(layer, x, dense(adj))
    assert got.shape == (adj.num_rows, layer.output_dim)
    torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-10)
    g = torch.randn(got.shape, dtype=DT, generator=torch.Generator().manual_seed(seed + 1))
    params = [x] + list(layer.parameters())
    ga = torch.autograd.grad(got, params, g)
    gb = torch.autograd.grad(want, params, g)
    for a, b in zip(ga, gb):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-10)


# ----------------------------------------------------------------------------- layers
@pytest.mark.parametrize("bias", ["bias", "norm"])
@pytest.mark.parametrize("kind, kw", [("gcn", {}), ("mixhop", {}), ("mixhop", {"powers": (1, 3)}),
                                      ("gin", {}), ("gin", {"weights": "ones"}),
                                      ("gat", {}), ("gat", {"concat": False}),
                                      ("gat", {"self_loops": False})])
@pytest.mark.parametrize("d_in, d_out", [(5, 7), (9, 4)])   # both association orders
def test_layer_matches_dense_reference(kind, kw, bias, d_in, d_out):
    layer, ref = make_layer(kind, d_in, d_out, bias, **kw)
    check_against_reference(layer, ref, square_adj(), d_in)


@pytest.mark.parametrize("kind, kw", [("gcn", {}), ("mixhop", {"powers": (0, 1)}), ("gin", {}),
                                      ("gin", {"weights": "ones"}), ("gat", {})])
def test_layer_rectangular_adjacency(kind, kw):
    adj = rect_adj()
    layer, ref = make_layer(kind, 6, 5, "bias", **kw)
    check_against_reference(layer, ref, adj, 6, seed=3)


def test_mixhop_high_power_needs_square_adjacency():
    with pytest.raises(GraphError, match="square"):
        MixHopLayer(4, 3, (0, 2))(torch.randn(20, 4), rect_adj())


def test_gat_gradcheck():
    adj = square_adj(n=6, m=9, seed=4)
    layer = randomize(GATLayer(3, 2, heads=2, bias="bias", act="elu").to(DT), 5)
    x = torch.randn(6, 3, dtype=DT, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x, w, a, b: layer(x, adj), (x, layer.weight,
                                    layer.att_src, layer.att_dst), fast_mode=True)
    with torch.no_grad():
        torch.testing.assert_close(layer(x, adj), gat_ref(layer, x, adj), rtol=1e-10, atol=1e-10)
    big = square_adj(40, 200, 6)
    xb = 1e3 * torch.randn(40, 3, dtype=DT)            # large logits: max-subtraction keeps it finite
    assert torch.isfinite(layer(xb, big)).all()


@pytest.mark.parametrize("adj", [square_adj(12, 30, 8), rect_adj()], ids=["square", "rect"])
def test_attention_spmm_kernels_agree_with_gather(adj):
    """SpMM/SDDMM autograd function == gather + index_add (values and gradients)."""
    rows, cols = edge_rows(adj)
    g = torch.Generator().manual_seed(9)
    alpha = torch.rand(adj.nnz, 3, dtype=DT, generator=g, requires_grad=True)
    z = torch.randn(adj.num_cols, 3, 4, dtype=DT, generator=g, requires_grad=True)
    got = attention_spmm(adj, alpha, z, rows, cols)
    want = attention_spmm(adj, alpha, z, rows, cols, kernel="torch")
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    gy = torch.randn(got.shape, dtype=DT, generator=g)
    for a, b in zip(torch.autograd.grad(got, (alpha, z), gy), torch.autograd.grad(want, (alpha, z), gy)):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)


def test_gcn_norm_matches_formula():
    g = Graph.from_edges([0, 1, 2, 2], [1, 2, 3, 0], 5)   # node 4 isolated
    a = torch.from_numpy(g.to_scipy(np.float64).toarray()) + torch.eye(5, dtype=DT)
    d = a.sum(1).rsqrt()
    want = d[:, None] * a * d[None, :]
    got = torch.from_numpy(gcn_norm(g, np.float64).to_scipy(np.float64).toarray())
    torch.testing.assert_close(got, want)


def test_jumping_knowledge_modes():
    outs = [torch.randn(5, 4), torch.randn(5, 4)]
    assert torch.equal(JumpingKnowledge("concat")(outs), torch.cat(outs, 1))
    assert torch.equal(JumpingKnowledge("max")(outs), torch.maximum(*outs))
    with pytest.raises(ConfigError, match="network.jk_mode"):
        JumpingKnowledge("lstm")


# ----------------------------------------------------------------------------- models
def family_model(name, in_dim=8, **kw):
    torch.manual_seed(0)
    kw = {"hidden": 12, "arch": "1-0-1", "dropout": 0.2, "jk_mode": "max", **kw}
    return build_model(in_dim, 3, model=name, **kw)


@pytest.mark.parametrize("name", FAMILIES)
def test_full_graph_logits_equal_forward(name):
    rng = np.random.default_rng(0)
    g = Graph.from_edges(rng.integers(0, 120, 500), rng.integers(0, 120, 500), 120)
    model = family_model(name).eval()
    x = torch.randn(120, 8)
    adj = SparseAdj.from_graph(g.row_normalized(), g.transpose_permutation())
    with torch.no_grad():
        ref = model(x, adj)
    out = full_graph_logits(model, g, x.numpy(), batch_rows=37)
    assert not model.training and out.shape == (120, 3)
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", FAMILIES)
def test_boundary_exchange_reproduces_owned_rows(name):
    """Rows 0..r-1 owned, the rest boundary: with ``exchange`` appending the boundary rows of
    each graph layer's input, the owned logits equal the whole-graph ones."""
    adj = square_adj(30, 120, 7)
    r = 11
    own = SparseAdj(adj.indptr[: r + 1], adj.indices[: adj.indptr[r]], adj.data[: adj.indptr[r]],
                    adj.num_cols)
    model = family_model(name, hidden=8, arch="1-1", dropout=0.0, powers="0-1").to(DT).eval()
    x = torch.randn(30, 8, dtype=DT)
    inputs = {}
    hooks = [la.register_forward_pre_hook(lambda m, a, i=i: inputs.__setitem__(i, a[0]))
             for i, la in enumerate(model.layers)]
    full = model(x, adj)
    for h in hooks:
        h.remove()
    calls = []

    def exchange(h, i):
        calls.append(i)
        return torch.cat([h, inputs[i][h.shape[0]:]]) if h.shape[0] < 30 else h

    got = model(x, own, exchange)
    assert calls == [0, 1]
    torch.testing.assert_close(got, full[:r], rtol=1e-10, atol=1e-10)


def test_depth_from_arch_or_layers():
    m = build_model(8, 3, model="gcn", hidden=8, arch="1-0-1-0")
    assert [type(la).__name__ for la in m.layers] == ["GCNLayer", "SAINTLayer"] * 2
    m = build_model(8, 3, model="gin", hidden=8, arch="1-0", layers=3)
    assert [type(la).__name__ for la in m.layers] == ["GINLayer"] * 3
    m = build_model(8, 3, model="jk", hidden=8, arch="1-1-1", jk_mode="concat")
    assert m.classifier.in_dim == 24
    m = build_model(8, 3, model="gat", hidden=8, arch="1-1", heads=2)
    assert [la.output_dim for la in m.layers] == [8, 8]
    m = build_model(8, 3, model="mixhop", hidden=8, arch="1", powers="0-2")
    assert m.layers[0].output_dim == 16
    assert set(MODELS) >= {"saint", *FAMILIES}


@pytest.mark.parametrize("override, needle", [
    (["network.model=gcn", "network.arch=2-1"], "network.arch"),
    (["network.model=gat", "network.heads=5"], "network.heads"),
    (["network.jk_mode=lstm"], "network.jk_mode"),
    (["network.powers=0-x"], "network.powers"),
    (["network.gin_weights=sum"], "network.gin_weights"),
    (["network.layers=-1"], "network.layers"),
    (["network.model=gnn"], "network.model"),
])
def test_config_rejects_bad_family_options(override, needle):
    with pytest.raises(ConfigError) as e:
        Config().override(override)
    assert needle in str(e.value) and "\n" not in str(e.value)


# ----------------------------------------------------------------------------- training
@pytest.mark.parametrize("name", FAMILIES)
def test_family_trains_with_trainer_and_beats_chance(tmp_path, name):
    ds = planted(n=400, p_in=0.06, noise=1.5, seed=1)
    cfg = small_config("rw", epochs=2)
    cfg.network.update(model=name, arch="1-0-1", dim=16, heads=2)
    cfg.params.update(lr=0.02)
    res = Trainer(ds, cfg.validate(), tmp_path / "run", seed=0, progress=False).fit()
    recs = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["epoch"] for r in recs] == [1, 2]
    assert all(np.isfinite(r["loss"]) and r["iterations"] >= 1 for r in recs)
    # chance is 1/3; an MLP (arch 0-0, 4 epochs) reaches 0.72 here, the families 0.92-1.0
    assert res["test"]["accuracy"] > 0.8, res["test"]
