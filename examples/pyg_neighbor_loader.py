"""A PyTorch Geometric training script on scalegnn's samplers: GraphSAGE with NeighborLoader.

The script is plain PyG (``torch_geometric.data.Data``, ``torch_geometric.nn.GraphSAGE``); only
its loader import is ``from scalegnn.pyg import NeighborLoader`` instead of
``from torch_geometric.loader import NeighborLoader``, which needs pyg-lib or torch-sparse
(compiled extensions without wheels for every torch). The graph is scalegnn's built-in
``synthetic`` dataset (12,000 nodes, 8 classes whose features need the neighbourhood) turned
into a ``Data`` by ``scalegnn.pyg.to_data``. With a ``seed`` the loader gives the same batches
on every run, which the script checks.

Needs ``torch_geometric`` (``pip install 'scalegnn[pyg]'``). Run from the repository root
(about 15 s on 2 cores)::

    python examples/pyg_neighbor_loader.py [--epochs N]
"""
import argparse
import sys
import time

import torch
import torch.nn.functional as F

try:
    from torch_geometric.nn import GraphSAGE
except ImportError:
    sys.exit("this example needs torch_geometric: pip install 'scalegnn[pyg]'")

from scalegnn.data import load_dataset
from scalegnn.pyg import NeighborLoader, to_data

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("--epochs", type=int, default=4, help="training epochs (default 4)")
args = parser.parse_args()

torch.manual_seed(0)
data = to_data(load_dataset("synthetic"))      # x, y, edge_index, train/val/test_mask
print(f"data: {data}")

# --- the PyG script: only the loader import above differs ---------------------------------
train_loader = NeighborLoader(data, num_neighbors=[10, 5], batch_size=512, shuffle=True,
                              input_nodes=data.train_mask, seed=0)
test_loader = NeighborLoader(data, num_neighbors=[-1, -1], batch_size=2048,
                             input_nodes=data.test_mask, seed=0)
model = GraphSAGE(data.num_features, 64, num_layers=2, out_channels=int(data.y.max()) + 1)
opt = torch.optim.Adam(model.parameters(), lr=0.01)

for epoch in range(1, args.epochs + 1):
    model.train()
    t0, total, seeds = time.perf_counter(), 0.0, 0
    for batch in train_loader:
        opt.zero_grad()
        out = model(batch.x, batch.edge_index)[:batch.batch_size]
        loss = F.cross_entropy(out, batch.y[:batch.batch_size])
        loss.backward()
        opt.step()
        total += float(loss.detach()) * batch.batch_size
        seeds += batch.batch_size
    print(f"epoch {epoch}: loss {total / seeds:.4f} ({seeds / (time.perf_counter() - t0):.0f} "
          f"seed nodes/s, sampling and training)")


@torch.no_grad()
def test_accuracy():
    model.eval()
    correct = 0
    for batch in test_loader:
        pred = model(batch.x, batch.edge_index)[:batch.batch_size].argmax(-1)
        correct += int((pred == batch.y[:batch.batch_size]).sum())
    return correct / int(data.test_mask.sum())


print(f"test accuracy = {test_accuracy():.4f}")

# --- the same seed, the same batches: a second loader replays the first epoch --------------
again = NeighborLoader(data, num_neighbors=[10, 5], batch_size=512, shuffle=True,
                       input_nodes=data.train_mask, seed=0)
first = next(iter(NeighborLoader(data, num_neighbors=[10, 5], batch_size=512, shuffle=True,
                                 input_nodes=data.train_mask, seed=0)))
same = next(iter(again))
equal = torch.equal(first.n_id, same.n_id) and torch.equal(first.edge_index, same.edge_index)
print(f"same seed, same first batch: {equal} ({first.num_nodes} nodes, "
      f"{first.edge_index.shape[1]} edges)")
