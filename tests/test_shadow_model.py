"""shaDow-GNN readouts, model and ensemble against slow, obviously correct references: every
readout vs a Python loop over blocks (values; gradients by gradcheck in float64), block-diagonal
equivalence (a batch of B blocks = B batches of one block), the attention ensemble, training of
every backbone family, and one-line ConfigErrors. Inputs are built by hand here (scipy
block_diag of small graphs, data = 1 / in-block degree), independent of the extractors."""

import numpy as np
import pytest
import scipy.sparse as sp
import torch
import torch.nn.functional as F

from scalegnn.errors import ConfigError
from scalegnn.graph import Graph
from scalegnn.ops import SparseAdj
from scalegnn.shadow.model import ShadowNet
from scalegnn.shadow.readout import Readout, Residual, parse_readout

DT = torch.float64
FAMILIES = ["saint", "gcn", "gat", "mixhop", "jk", "gin"]
NODE_SPECS = ["center", "sum", "mean", "max", "sort:1", "sort:3", "sort:9", "center+sum",
              "center+mean", "center+max", "center+sort:2"]
PAIR_SPECS = ["hadamard", "concat", "hadamard+sum", "hadamard+max", "concat+mean",
              "concat+sort:3", "mean", "sort:2"]


# ---------------------------------------------------------------- hand-built block-diagonal inputs

def two_hop_block(rng, n1, n2):
    """A 2-hop scope around local node 0: n1 neighbours of 0, n2 nodes at distance 2, and a
    few extra edges among the neighbours. Returns (Graph, center row, second end row)."""
    src, dst = list(np.zeros(n1, dtype=int)), list(range(1, n1 + 1))
    for j in range(n2):
        src.append(int(rng.integers(1, n1 + 1)))
        dst.append(n1 + 1 + j)
    if n1 > 1:
        src.append(1)
        dst.append(n1)
    n = 1 + n1 + n2
    return Graph.from_edges(np.array(src), np.array(dst), n), 0, int(rng.integers(1, n))


def stack(blocks, feats, dtype=np.float64):
    """Blocks (graph, c, c2) + per-block features -> (x, adj, segment, center, center2) of the
    block-diagonal stack; adj data = 1 / in-block degree."""
    mats = [sp.csr_matrix(g.to_scipy(dtype)) for g, _, _ in blocks]
    a = sp.csr_matrix(sp.block_diag(mats, format="csr"))
    a.sort_indices()
    deg = np.diff(a.indptr)
    a.data = np.repeat(1.0 / np.maximum(deg, 1), deg).astype(dtype)
    sizes = [g.num_nodes for g, _, _ in blocks]
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    adj = SparseAdj(a.indptr, a.indices.astype(np.int64), a.data, a.shape[1])
    segment = torch.from_numpy(np.repeat(np.arange(len(blocks)), sizes))
    center = torch.tensor([o + c for o, (_, c, _) in zip(offsets, blocks)])
    center2 = torch.tensor([o + c2 for o, (_, _, c2) in zip(offsets, blocks)])
    x = torch.cat(feats).to(torch.float64 if dtype == np.float64 else torch.float32)
    return x, adj, segment, center, center2


def make_blocks(seed, num=5, dim=4):
    rng = np.random.default_rng(seed)
    blocks = [two_hop_block(rng, int(rng.integers(1, 4)), int(rng.integers(0, 5)))
              for _ in range(num)]
    gen = torch.Generator().manual_seed(seed)
    feats = [torch.randn(g.num_nodes, dim, generator=gen, dtype=DT) for g, _, _ in blocks]
    return blocks, feats


def batch(blocks, feats, pair=False, dtype=np.float64):
    x, adj, seg, c, c2 = stack(blocks, feats, dtype)
    return x, adj, seg, c, (c2 if pair else None)


# ---------------------------------------------------------------- readouts vs a loop over blocks

def readout_ref(spec, h, segment, center, center2):
    """One block at a time, the definitions of shadow/readout.py spelled out."""
    base, pool = parse_readout(spec)
    rows_out = []
    for k in range(center.shape[0]):
        rows = [i for i in range(h.shape[0]) if int(segment[i]) == k]
        hk = h[rows] if rows else h.new_zeros(0, h.shape[1])
        parts = []
        if base == "center":
            parts.append(h[int(center[k])])
        elif base == "hadamard":
            parts.append(h[int(center[k])] * h[int(center2[k])])
        elif base == "concat":
            parts += [h[int(center[k])], h[int(center2[k])]]
        if pool is not None:
            name, kk = pool
            if name == "sum":
                parts.append(hk.sum(0))
            elif name == "mean":
                parts.append(hk.mean(0) if rows else h.new_zeros(h.shape[1]))
            elif name == "max":
                parts.append(hk.max(0).values if rows else h.new_zeros(h.shape[1]))
            else:
                order = sorted(range(len(rows)), key=lambda i: -float(hk[i, -1].detach()))[:kk]
                top = [hk[i] for i in order] + [h.new_zeros(h.shape[1])] * (kk - len(order))
                parts.append(torch.cat(top))
        rows_out.append(torch.cat(parts))
    return torch.stack(rows_out)


def readout_inputs(seed, shuffle=False, empty=False):
    gen = torch.Generator().manual_seed(seed)
    sizes = [3, 1, 5, 2] + ([0] if empty else [])
    segment = torch.repeat_interleave(torch.arange(len(sizes)), torch.tensor(sizes))
    if shuffle:
        segment = segment[torch.randperm(segment.shape[0], generator=gen)]
    n = segment.shape[0]
    h = torch.randn(n, 3, generator=gen, dtype=DT, requires_grad=True)
    firsts = [int((segment == k).nonzero()[0]) if s else 0 for k, s in enumerate(sizes)]
    center = torch.tensor(firsts)
    center2 = torch.tensor([int((segment == k).nonzero()[-1]) if s else 0
                            for k, s in enumerate(sizes)])
    return h, segment, center, center2


@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("spec,pair", [(s, False) for s in NODE_SPECS] + [(s, True) for s in PAIR_SPECS])
def test_readout_matches_loop_and_gradcheck(spec, pair, shuffle):
    h, segment, center, center2 = readout_inputs(3, shuffle)
    ro = Readout(spec, 3, pair=pair)
    c2 = center2 if pair else None
    out = ro(h, segment, center, c2)
    ref = readout_ref(spec, h, segment, center, center2)
    assert out.shape == (4, ro.output_dim)
    torch.testing.assert_close(out, ref, rtol=0, atol=1e-14)
    g = torch.randn_like(out)
    (gh,) = torch.autograd.grad(out, h, g)
    (gr,) = torch.autograd.grad(ref, h, g)
    torch.testing.assert_close(gh, gr, rtol=0, atol=1e-14)
    assert torch.autograd.gradcheck(lambda t: ro(t, segment, center, c2), (h,))


@pytest.mark.parametrize("spec", ["sum", "mean", "max", "sort:2"])
def test_pool_of_empty_block_is_zero(spec):
    h, segment, center, center2 = readout_inputs(4, empty=True)
    out = Readout(spec, 3)(h, segment, center)
    torch.testing.assert_close(out, readout_ref(spec, h, segment, center, center2))
    assert not out[-1].any()


def test_sort_pool_ties_keep_row_order():
    h = torch.tensor([[1.0, 0.5], [2.0, 0.5], [3.0, 0.9], [4.0, 0.5]], dtype=DT)
    seg = torch.tensor([0, 0, 0, 0])
    out = Readout("sort:3", 2)(h, seg, torch.tensor([0]))
    assert out.tolist() == [[3.0, 0.9, 1.0, 0.5, 2.0, 0.5]]


def test_residual_modes():
    gen = torch.Generator().manual_seed(0)
    outs = [torch.randn(5, 3, generator=gen) for _ in range(3)]
    torch.testing.assert_close(Residual("none")(outs), outs[-1])
    torch.testing.assert_close(Residual("concat")(outs), torch.cat(outs, 1))
    ref = torch.stack([torch.stack([max(o[i, j] for o in outs) for j in range(3)])
                       for i in range(5)])
    torch.testing.assert_close(Residual("max")(outs), ref)
    assert Residual("concat").output_dim([3, 4]) == 7 and Residual("max").output_dim([3, 3]) == 3


# ---------------------------------------------------------------- block-diagonal equivalence

def shadow(seed=0, **kw):
    torch.manual_seed(seed)
    kw = {"hidden": 6, "arch": "1-0-1", "heads": 2, "dropout": 0.0, **kw}
    return ShadowNet(4, 3, **kw).double()


def assert_batch_equals_blocks(model, branch_blocks, branch_feats, pair=False):
    """One block list (and feature list) per branch, all with the same targets."""
    full = model([batch(b, f, pair) for b, f in zip(branch_blocks, branch_feats)])
    for k in range(len(branch_blocks[0])):
        one = model([batch(b[k:k + 1], f[k:k + 1], pair)
                     for b, f in zip(branch_blocks, branch_feats)])
        torch.testing.assert_close(full[k:k + 1], one, rtol=1e-12, atol=1e-12)
    return full


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("readout,residual", [("center+max", "none"), ("sort:3", "concat"),
                                              ("center+mean", "max")])
def test_batch_of_blocks_equals_each_block_alone(family, readout, residual):
    arch = "1-1" if residual == "max" else "1-0-1"
    model = shadow(backbone=family, arch=arch, readout=readout, residual=residual)
    blocks, feats = make_blocks(1)
    full = assert_batch_equals_blocks(model, [blocks], [feats])
    assert full.shape == (5, 3) and torch.isfinite(full).all()


def test_ensemble_and_pair_batch_equals_each_block_alone():
    blocks, feats = make_blocks(2)
    blocks2, feats2 = make_blocks(5)     # a second extractor: other scopes, same targets
    model = shadow(backbone="gat", branches=2, readout="hadamard+sum", pair=True)
    assert_batch_equals_blocks(model, [blocks, blocks2], [feats, feats2], pair=True)


def test_deep_backbone_on_two_hop_scopes():
    """5 layers on 2-hop blocks: depth decoupled from scope, batching still exact."""
    model = shadow(backbone="saint", layers=5, readout="center+mean", residual="concat")
    assert [la.order for la in model.backbones[0].layers] == [1] * 5
    blocks, feats = make_blocks(3, num=4)
    assert_batch_equals_blocks(model, [blocks], [feats])


@pytest.mark.parametrize("family", FAMILIES)
def test_center_readout_is_backbone_embedding(family):
    """residual none + center = the backbone's own normalized embedding at the target rows."""
    model = shadow(backbone=family, readout="center")
    x, adj, seg, c, _ = batch(*make_blocks(4))
    torch.testing.assert_close(model.embed([(x, adj, seg, c, None)]),
                               model.backbones[0].embed(x, adj)[c], rtol=0, atol=0)


# ---------------------------------------------------------------- ensemble

def test_attention_weights_and_formula():
    model = shadow(branches=3, readout="center+sum")
    blocks, feats = make_blocks(6)
    data = [batch(blocks, feats) for _ in range(3)]
    w = model.attention_weights(data)
    assert w.shape == (5, 3) and (w > 0).all()
    torch.testing.assert_close(w.sum(1), torch.ones(5, dtype=DT))
    e = model.branch_vectors(data)
    att = model.attention
    ref = []
    for k in range(5):
        s = torch.stack([att.query @ torch.tanh(att.proj.weight @ e[r][k] + att.proj.bias)
                         for r in range(3)])
        wk = torch.exp(s) / torch.exp(s).sum()
        ref.append(sum(wk[r] * e[r][k] for r in range(3)))
    torch.testing.assert_close(model.embed(data), torch.stack(ref))
    torch.testing.assert_close(model(data), model.classifier(torch.stack(ref)))


def test_two_identical_branches_equal_one_branch():
    one = shadow(seed=0, backbone="gcn", readout="center+max")
    two = shadow(seed=1, backbone="gcn", readout="center+max", branches=2)
    for net in two.backbones:
        net.load_state_dict(one.backbones[0].state_dict())
    two.classifier.load_state_dict(one.classifier.state_dict())
    x = batch(*make_blocks(7))
    torch.testing.assert_close(two([x, x]), one([x]), rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("branches", [1, 2])
def test_every_parameter_gets_a_gradient(branches):
    model = shadow(backbone="jk", branches=branches, readout="center+sort:2")
    x = batch(*make_blocks(8))
    model([x] * branches).sum().backward()
    assert not hasattr(model.backbones[0], "classifier")
    missing = [n for n, p in model.named_parameters() if p.grad is None]
    assert missing == []


# ---------------------------------------------------------------- training every family

@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_learns_planted_task(family):
    """Label of a target = sign of the mean first feature over its scope (needs the scope)."""
    blocks, feats = make_blocks(9, num=24)
    y = torch.tensor([int(f[:, 0].mean() > 0) for f in feats])
    x, adj, seg, c, _ = batch(blocks, [f.float() for f in feats], dtype=np.float32)
    torch.manual_seed(0)
    model = ShadowNet(4, 2, backbone=family, hidden=8, arch="1-1", heads=2,
                      readout="center+mean", bias="bias")
    opt = torch.optim.Adam(model.parameters(), lr=0.02)
    weight = torch.full((24,), 1 / 24)
    losses = []
    for _ in range(25):
        opt.zero_grad()
        loss = model.loss(model([(x, adj, seg, c, None)]), y, weight)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.7 * losses[0]
    prob = model.predict(model([(x, adj, seg, c, None)]))
    torch.testing.assert_close(prob.sum(1), torch.ones(24))


def test_multilabel_loss_and_predict():
    model = shadow(multilabel=True)
    logits = model([batch(*make_blocks(10))])
    y = torch.ones_like(logits)
    torch.testing.assert_close(model.predict(logits), torch.sigmoid(logits))
    ref = F.binary_cross_entropy_with_logits(logits, y, reduction="none").sum(1).mean()
    torch.testing.assert_close(model.loss(logits, y, torch.full((5,), 0.2, dtype=DT)), ref)


# ---------------------------------------------------------------- errors

@pytest.mark.parametrize("kw,key", [
    ({"readout": "centre"}, "shadow.readout"), ({"readout": "sort:0"}, "shadow.readout"),
    ({"readout": "sort:x"}, "shadow.readout"), ({"readout": "center+"}, "shadow.readout"),
    ({"readout": "center+center"}, "shadow.readout"), ({"readout": "sum+mean"}, "shadow.readout"),
    ({"readout": 3}, "shadow.readout"), ({"readout": "hadamard"}, "shadow.readout"),
    ({"readout": "center+mean", "pair": True}, "shadow.readout"),
    ({"residual": "sum"}, "shadow.residual"),
    ({"residual": "max", "arch": "1-0"}, "shadow.residual"),
    ({"branches": 0}, "shadow.branches"), ({"branches": 1.5}, "shadow.branches"),
    ({"branches": "2"}, "shadow.branches"), ({"branches": True}, "shadow.branches"),
    ({"layers": -1}, "network.layers"),
])
def test_bad_values_raise_one_line_config_error(kw, key):
    with pytest.raises(ConfigError) as err:
        shadow(**kw)
    msg = str(err.value)
    assert msg.startswith(key) and "\n" not in msg


def test_branch_count_mismatch_and_missing_center2():
    x = batch(*make_blocks(11))
    with pytest.raises(ConfigError, match="^shadow.branches"):
        shadow(branches=2)([x])
    with pytest.raises(ConfigError, match="^shadow.readout"):
        shadow(readout="concat", pair=True)([x])


def test_branch_batch_sym_norm_is_gcn_operator_of_each_block():
    """``adj_norm: sym``: every block's operator is (D+I)^-1/2 (A+I) (D+I)^-1/2 of that block
    alone (a dense per-block reference), and ``mean`` stays D⁻¹A."""
    from scalegnn.shadow.batch import branch_batch
    from scalegnn.shadow.extract import KHopExtractor
    rng = np.random.default_rng(0)
    n = 60
    a = np.triu(rng.random((n, n)) < 0.08, 1)
    src, dst = np.nonzero(a)
    g = Graph.from_edges(src, dst, n, symmetrize=True)
    subs = KHopExtractor(g, depth=2, budget=4).extract(np.arange(0, n, 7), seed=1)
    feats = rng.normal(size=(n, 3)).astype(np.float32)
    sym = branch_batch(subs, feats, "sym").adj.to_scipy(np.float64).toarray()
    mean = branch_batch(subs, feats, "mean").adj.to_scipy(np.float64).toarray()
    for k in range(subs.num_targets):
        lo, hi = int(subs.offsets[k]), int(subs.offsets[k + 1])
        blk = np.zeros((hi - lo, hi - lo))
        for r in range(lo, hi):
            blk[r - lo, subs.indices[subs.indptr[r]:subs.indptr[r + 1]] - lo] = 1.0
        deg = blk.sum(1)
        hat = blk + np.eye(hi - lo)
        ref = hat / np.sqrt(np.outer(deg + 1, deg + 1))
        np.testing.assert_allclose(sym[lo:hi, lo:hi], ref, rtol=1e-6)
        np.testing.assert_allclose(mean[lo:hi, lo:hi], blk / np.maximum(deg, 1)[:, None],
                                   rtol=1e-6)
    off = np.ones_like(sym, dtype=bool)
    for k in range(subs.num_targets):
        off[subs.offsets[k]:subs.offsets[k + 1], subs.offsets[k]:subs.offsets[k + 1]] = False
    assert not sym[off].any()
