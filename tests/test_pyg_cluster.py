"""scalegnn.pyg: Cluster-GCN batches (the induced edges of q parts), conversions between
PyG's Data and scalegnn's Dataset / Batch, the package staying out of ``import scalegnn``, and
PyG training scripts that run with only their import line changed."""

import ast
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch_geometric")

import torch  # noqa: E402
from torch_geometric.data import Data  # noqa: E402

import scalegnn.pyg as P  # noqa: E402
from scalegnn.data import load_dataset  # noqa: E402
from scalegnn.errors import ScaleGNNError  # noqa: E402
from scalegnn.sampling import GraphSAINTLoader  # noqa: E402

SRC = Path(__file__).resolve().parents[1] / "src" / "scalegnn"


@pytest.fixture(scope="module")
def planted():
    return P.to_data(load_dataset("planted:nodes=600,classes=4,features=8,degree=8"))


def test_to_data_of_a_dataset_and_back(planted):
    ds = load_dataset("planted:nodes=600,classes=4,features=8,degree=8")
    back = P.from_data(planted)
    assert np.array_equal(back.graph.indptr, ds.graph.indptr)
    assert np.array_equal(back.graph.indices, ds.graph.indices)
    assert np.array_equal(back.features.to_dense(), ds.features.to_dense())
    assert np.array_equal(back.labels, ds.labels)
    for a, b in [(back.train_idx, ds.train_idx), (back.val_idx, ds.val_idx),
                 (back.test_idx, ds.test_idx)]:
        assert np.array_equal(a, b)


def test_from_data_symmetrizes_and_takes_mask_columns():
    ei = torch.tensor([[0, 1, 2, 2, 3], [1, 2, 3, 3, 3]])   # directed, a duplicate, a loop
    masks = torch.zeros(4, 2, dtype=torch.bool)
    data = Data(x=torch.ones(4, 2), y=torch.tensor([0, 1, 0, 1]), edge_index=ei,
                train_mask=masks.clone(), val_mask=masks.clone(), test_mask=masks.clone())
    data.train_mask[[0, 1], 1] = True
    data.val_mask[2, 1] = True
    data.test_mask[3, 1] = True
    data.train_mask[0, 0] = data.val_mask[1, 0] = data.test_mask[2, 0] = True
    ds = P.from_data(data, split=1)
    assert ds.graph.is_symmetric() and ds.graph.num_edges == 6
    assert ds.train_idx.tolist() == [0, 1] and ds.test_idx.tolist() == [3]
    with pytest.raises(ScaleGNNError, match="split=2 but data.train_mask has 2 columns"):
        P.from_data(data, split=2)
    with pytest.raises(ScaleGNNError, match=r"no labels \(data.y\)"):
        P.from_data(Data(x=torch.ones(4, 2), edge_index=ei))


def test_to_data_of_a_graphsaint_batch():
    ds = load_dataset("planted:nodes=400,classes=3,features=6,degree=6")
    loader = GraphSAINTLoader(ds, "rw", {"num_root": 30, "depth": 2}, coverage=5,
                              pool_depth=0)
    batch = loader.next_batch()
    d = P.to_data(batch)
    full = ds.graph.to_scipy()
    u, v = d.n_id[d.edge_index[0]].numpy().copy(), d.n_id[d.edge_index[1]].numpy().copy()
    assert (np.asarray(full[v, u]).ravel() == 1).all()     # v aggregates u
    assert torch.equal(d.edge_weight, torch.from_numpy(batch.adj.data))
    assert torch.equal(d.x, batch.x) and torch.equal(d.node_norm, batch.loss_weight)
    assert torch.equal(d.e_id, torch.from_numpy(batch.edge_ids.astype(np.int64)))
    loader.close()


def test_cluster_batches_hold_the_induced_edges_of_their_parts(planted):
    cd = P.ClusterData(planted, num_parts=12)
    assert np.array_equal(cd.part, P.ClusterData(planted, num_parts=12).part)  # seeded
    assert cd.partptr[-1] == 600 and np.all(np.diff(cd.partptr) > 0)
    loader = P.ClusterLoader(cd, batch_size=5, shuffle=True, seed=1)
    assert len(loader) == 3
    ei = planted.edge_index
    nodes = []
    for b in loader:
        inside = torch.zeros(600, dtype=torch.bool)
        inside[b.n_id] = True
        want = torch.nonzero(inside[ei[0]] & inside[ei[1]]).view(-1)
        assert torch.equal(b.e_id.sort().values, want)        # every induced edge, once
        assert torch.equal(ei[0, b.e_id], b.n_id[b.edge_index[0]])
        assert torch.equal(ei[1, b.e_id], b.n_id[b.edge_index[1]])
        assert torch.equal(b.x, planted.x[b.n_id]) and torch.equal(b.y, planted.y[b.n_id])
        assert len(set(cd.part[b.n_id.numpy()])) <= 5
        nodes.append(b.n_id)
    assert torch.equal(torch.cat(nodes).sort().values, torch.arange(600))
    between = (cd.part[ei[0].numpy()] != cd.part[ei[1].numpy()])
    assert between.any()                                       # the batches kept some of them
    one = cd[3]
    assert set(cd.part[one.n_id.numpy()]) == {3}


def test_cluster_partition_is_saved_and_read_back(planted, tmp_path):
    a = P.ClusterData(planted, num_parts=6, save_dir=tmp_path, seed=2)
    assert (tmp_path / "part_6" / "metis_2.npy").is_file()
    b = P.ClusterData(planted, num_parts=6, save_dir=tmp_path, seed=2)
    assert np.array_equal(a.part, b.part)
    np.save(tmp_path / "part_6" / "metis_2.npy", np.full(600, 6))
    with pytest.raises(ScaleGNNError, match="not a partition of these 600 nodes into 6 parts"):
        P.ClusterData(planted, num_parts=6, save_dir=tmp_path, seed=2)
    with pytest.raises(ScaleGNNError, match="num_parts=601 exceeds the 600 nodes"):
        P.ClusterData(planted, num_parts=601)


def test_import_scalegnn_never_reaches_the_pyg_package():
    """Only scalegnn/pyg imports torch_geometric, and nothing outside it imports it (but
    scalegnn/nn/pyg.py, the PyG model adapter, inside its functions)."""
    for path in SRC.rglob("*.py"):
        if "pyg" in path.relative_to(SRC).parts:
            continue
        tree = ast.parse(path.read_text())
        nodes = tree.body if path.relative_to(SRC).parts == ("nn", "pyg.py") else ast.walk(tree)
        for node in nodes:
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            assert not any(n.startswith(("torch_geometric", "scalegnn.pyg")) for n in names), \
                path
    code = "import sys, scalegnn.train, scalegnn.sampling; print('torch_geometric' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "False"


SAGE_SCRIPT = '''
import torch
import torch.nn.functional as F
from torch_geometric.data import Data
from torch_geometric.loader import NeighborLoader
from torch_geometric.nn import GraphSAGE

torch.manual_seed(0)
n, c = 1500, 4
y = torch.randint(0, c, (n,))
src = torch.randint(0, n, (6 * n,))
same = torch.rand(6 * n) < 0.8                     # most edges inside a class
pool = [torch.nonzero(y == k).view(-1) for k in range(c)]
dst = torch.randint(0, n, (6 * n,))
for k in range(c):
    pick = same & (y[src] == k)
    dst[pick] = pool[k][torch.randint(0, len(pool[k]), (int(pick.sum()),))]
edge_index = torch.cat([torch.stack([src, dst]), torch.stack([dst, src])], 1)
x = F.one_hot(y, c).float() + 1.5 * torch.randn(n, c)  # weak features: the graph is needed
perm = torch.randperm(n)
train_mask = torch.zeros(n, dtype=torch.bool)
train_mask[perm[:n // 2]] = True
test_mask = ~train_mask
data = Data(x=x, y=y, edge_index=edge_index, train_mask=train_mask, test_mask=test_mask)

loader = NeighborLoader(data, num_neighbors=[10, 5], batch_size=128, shuffle=True,
                        input_nodes=data.train_mask, num_workers=0)
model = GraphSAGE(c, 32, num_layers=2, out_channels=c)
opt = torch.optim.Adam(model.parameters(), lr=0.01)
for epoch in range(8):
    model.train()
    for batch in loader:
        opt.zero_grad()
        out = model(batch.x, batch.edge_index)[:batch.batch_size]
        F.cross_entropy(out, batch.y[:batch.batch_size]).backward()
        opt.step()
model.eval()
test_loader = NeighborLoader(data, num_neighbors=[-1, -1], batch_size=500,
                             input_nodes=data.test_mask)
correct = 0
with torch.no_grad():
    for batch in test_loader:
        pred = model(batch.x, batch.edge_index)[:batch.batch_size].argmax(-1)
        correct += int((pred == batch.y[:batch.batch_size]).sum())
print(f"test accuracy {correct / int(data.test_mask.sum()):.4f}")
'''

SAINT_SCRIPT = '''
import torch
import torch.nn.functional as F
from torch_geometric.data import Data
from torch_geometric.loader import GraphSAINTRandomWalkSampler
from torch_geometric.nn import GraphConv
from torch_geometric.utils import degree

torch.manual_seed(0)
n, c = 999, 3
y = torch.arange(n) % c
src = torch.randint(0, n, (5 * n,))
dst = (src + c * torch.randint(0, n // c, (5 * n,))) % n   # same class
edge_index = torch.cat([torch.stack([src, dst]), torch.stack([dst, src])], 1)
data = Data(x=F.one_hot(y, c).float() + 2.0 * torch.randn(n, c), y=y, edge_index=edge_index)
row, col = data.edge_index
data.edge_weight = 1. / degree(col, data.num_nodes)[col]
loader = GraphSAINTRandomWalkSampler(data, batch_size=100, walk_length=2, num_steps=10,
                                     sample_coverage=100)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = GraphConv(c, 32, aggr="add")
        self.conv2 = GraphConv(32, c, aggr="add")

    def forward(self, x, edge_index, w):
        return self.conv2(F.relu(self.conv1(x, edge_index, w)), edge_index, w)


model = Net()
opt = torch.optim.Adam(model.parameters(), lr=0.01)
for epoch in range(10):
    for b in loader:
        opt.zero_grad()
        out = model(b.x, b.edge_index, b.edge_norm * b.edge_weight)
        loss = (F.cross_entropy(out, b.y, reduction="none") * b.node_norm).sum()
        loss.backward()
        opt.step()
with torch.no_grad():
    pred = model(data.x, data.edge_index, data.edge_weight).argmax(-1)
print(f"test accuracy {float((pred == data.y).float().mean()):.4f}")
'''


@pytest.mark.parametrize("script,loader", [(SAGE_SCRIPT, "NeighborLoader"),
                                           (SAINT_SCRIPT, "GraphSAINTRandomWalkSampler")])
def test_a_pyg_script_runs_with_only_its_import_line_changed(script, loader, tmp_path):
    line = f"from torch_geometric.loader import {loader}"
    assert line in script
    path = tmp_path / "train.py"
    path.write_text(script.replace(line, f"from scalegnn.pyg import {loader}"))
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    acc = float(done.stdout.split("test accuracy")[1])
    assert acc > 0.85, done.stdout        # features alone: about 0.5
