"""PyG's GraphSAGE trained with ``scalegnn.pyg.NeighborLoader``: test accuracy at the best
validation epoch, per seed (the docs/pyg.md figures against scalegnn's GraphSAINT configs).

The dataset is read by ``scalegnn.data.load_dataset`` (its seeded split: the one
``scalegnn train --data`` uses) and turned into a PyG ``Data`` by ``scalegnn.pyg.to_data``.
Training: minibatches of ``--batch-size`` training seeds with ``--fanout`` neighbours per hop,
cross-entropy on the seeds, Adam. Evaluation after every epoch: one full-graph forward pass
(every neighbour, as scalegnn's evaluation), validation and test accuracy.

    python benchmarks/pyg_neighbor_sage.py --data ../shared/data/facebook --seeds 0,1,2 \\
        --epochs 20 --dropout 0.2 --weight-decay 0
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch_geometric.nn import GraphSAGE

from scalegnn.data import load_dataset
from scalegnn.pyg import NeighborLoader, to_data


def run(data, seed: int, args) -> dict:
    torch.manual_seed(seed)
    classes = int(data.y.max()) + 1
    loader = NeighborLoader(data, num_neighbors=args.fanout, batch_size=args.batch_size,
                            shuffle=True, input_nodes=data.train_mask, seed=seed)
    model = GraphSAGE(data.num_features, args.hidden, num_layers=len(args.fanout),
                      out_channels=classes, dropout=args.dropout)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    best = {"val": -1.0}
    t0 = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        model.train()
        for batch in loader:
            opt.zero_grad()
            out = model(batch.x, batch.edge_index)[:batch.batch_size]
            F.cross_entropy(out, batch.y[:batch.batch_size]).backward()
            opt.step()
        model.eval()
        with torch.no_grad():
            pred = model(data.x, data.edge_index).argmax(-1)
        acc = {s: float((pred[m] == data.y[m]).float().mean())
               for s, m in (("val", data.val_mask), ("test", data.test_mask))}
        if acc["val"] > best["val"]:
            best = {**acc, "epoch": epoch}
    best["wall_s"] = round(time.perf_counter() - t0, 1)
    return best


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True)
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--fanout", default="25,10")
    p.add_argument("--batch-size", type=int, default=512)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--dropout", type=float, default=0.5)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--weight-decay", type=float, default=5e-4)
    args = p.parse_args()
    args.fanout = [int(k) for k in args.fanout.split(",")]
    data = to_data(load_dataset(args.data))
    results = []
    for seed in (int(s) for s in args.seeds.split(",")):
        results.append({"seed": seed, **run(data, seed, args)})
        print(json.dumps(results[-1]), flush=True)
    test = np.array([r["test"] for r in results])
    print(f"test accuracy {test.mean():.3f} ± {test.std():.3f} over {len(test)} seeds "
          f"({' / '.join(f'{t:.3f}' for t in test)})")


if __name__ == "__main__":
    main()
