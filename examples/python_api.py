"""The Python API in two parts.

Part 1 uses the training engine. It loads a dataset, adjusts a Config and trains with
``Trainer`` into a run directory. It then prints the test metric and the files the run wrote.

Part 2 builds the same kind of training from the pieces with plain PyTorch: a
``GraphSAINTLoader`` yields sampled subgraphs, ``build_model`` makes a GNN, and the loop with
``torch.optim.Adam`` is ours.

Run from the repository root (about 3 s on 2 cores; the first run after installing also
compiles and caches numba kernels, up to half a minute)::

    python examples/python_api.py                       # built-in synthetic dataset
    python examples/python_api.py --data ../shared/data/cora --config configs/shared/cora_rw.yml

``--out DIR`` is where the run directory goes (default: ``runs/examples``; the example's own
run folder ``DIR/python_api`` is replaced on every run).
"""
import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from scalegnn.config import Config
from scalegnn.data import load_dataset
from scalegnn.nn import build_model
from scalegnn.ops import SparseAdj
from scalegnn.sampling import GraphSAINTLoader
from scalegnn.train import Trainer

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("--data", default="synthetic",
                    help="dataset path or generator spec (default: the built-in 'synthetic', "
                         "12,000 nodes, 8 classes)")
parser.add_argument("--config", help="a config YAML (default: the built-in config, adjusted)")
parser.add_argument("--epochs", type=int, default=6, help="epochs to train (default 6)")
parser.add_argument("--out", default="runs/examples", help="folder for the run directory")
args = parser.parse_args()

# ---------------------------------------------------------------------------------------------
# Part 1: the training engine
# ---------------------------------------------------------------------------------------------
# load_dataset takes a path (GraphSAINT/OGB folder, .npz, .mat, edge list...) or a generator
# spec such as "synthetic", "planted:nodes=2000,classes=4" or "kronecker:12:8:classes=2".
dataset = load_dataset(args.data, seed=0)
info = dataset.info()
print(f"dataset {info['name']}: {info['nodes']:,} nodes, {info['edges']:,} edges, "
      f"{info['features']} features, {info['classes']} classes, metric {dataset.metric}")

# Config() holds GraphSAINT's network / params / phase sections with their defaults;
# Config.builtin() adds what `scalegnn train` uses without --config (early stopping), and
# Config.from_yaml("configs/shared/cora_rw.yml") reads a file. override() takes the same
# key=value strings as `scalegnn train --set` and checks every value.
if args.config:
    config = Config.from_yaml(args.config)
else:
    config = Config.builtin().override([
        "phase.sampler=rw",     # random-walk sampler (the last phase; phase.0.KEY names one)
        "phase.num_root=1000",  # 1000 roots ...
        "phase.depth=2",        # ... walks of length 2 -> one subgraph per iteration
        "network.dim=64",       # hidden width
        "params.lr=0.01",
    ])
config.override([f"phase.end={args.epochs}"])   # = scalegnn train --epochs N
# Sections are plain dicts too: config.network["dim"], config.params["dropout"], ...
print("config:", {"epochs": config.epochs, "dim": config.network["dim"],
                  "arch": config.network["arch"], "sampler": config.phases[-1]["sampler"]})

run_dir = Path(args.out) / "python_api"
t0 = time.perf_counter()
# out_dir=None would train without writing anything; overwrite=True replaces an earlier run of
# this example (without it an existing run directory is refused: resume=True continues it).
trainer = Trainer(dataset, config, out_dir=run_dir, seed=0, progress=False, overwrite=True)
result = trainer.fit()   # the summary; also written to run_dir/summary.json
metric = result["metric"]
print(f"trained {result['epochs_run']} epochs in {time.perf_counter() - t0:.1f} s; "
      f"best epoch {result['best_epoch']}")
print(f"engine: val {metric} = {result['val'][metric]:.4f}")
print(f"engine: test {metric} = {result['test'][metric]:.4f}")
files = sorted(p.name for p in run_dir.iterdir() if not p.name.startswith("."))
print(f"run directory {run_dir}: {', '.join(files)}")
# metrics.jsonl has one JSON record per epoch: loss, validation metrics, times
epochs = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
print("loss per epoch:", " ".join(f"{e['loss']:.3f}" for e in epochs))

# ---------------------------------------------------------------------------------------------
# Part 2: the same pieces with plain PyTorch
# ---------------------------------------------------------------------------------------------
# The engine standardizes the features with the training nodes' statistics; here we do it
# ourselves on a dense copy (fine for a small graph: np.asarray also densifies CSR features).
x = np.asarray(dataset.features, dtype=np.float32)
train = dataset.train_idx
x = ((x - x[train].mean(0)) / (x[train].std(0) + 1e-8)).astype(np.float32)
dataset.features = x      # what the loader gathers batch rows from

torch.manual_seed(0)
# The config's sampler (rw: random walks) on the training graph (inductive: only train-train
# edges; params.transductive samples the full graph and puts the loss on training nodes only).
# The loader pre-samples subgraphs to estimate the aggregator / loss normalization
# (coverage: how often each node is sampled on average), then keeps sampling in a
# background thread. len(loader) batches make one epoch.
phase = config.phases[-1]
loader = GraphSAINTLoader(dataset, phase["sampler"], config.sampler_params(phase),
                          transductive=config.params["transductive"], coverage=10, seed=0)

# The config's model ("saint" is GraphSAINT's; also "gcn", "gat", "gin", "jk", "mixhop").
net = config.network
model = build_model(dataset.num_features, dataset.num_classes, model=net["model"],
                    hidden=net["dim"], arch=net["arch"], aggr=net["aggr"], bias=net["bias"],
                    act=net["act"], dropout=config.params["dropout"],
                    multilabel=dataset.multilabel)
optimizer = torch.optim.Adam(model.parameters(), lr=config.params["lr"],
                             weight_decay=config.params["weight_decay"])

steps = 3 * len(loader)      # three epochs' worth of subgraphs
model.train()
for step in range(steps):
    batch = loader.next_batch()     # a Batch: one sampled subgraph
    # batch.adj is the subgraph's CSR with normalized edge weights; SparseAdj makes it the
    # model's sparse operator (adj_t_perm gives its transpose for the backward pass).
    adj = SparseAdj.from_graph(batch.adj, batch.adj_t_perm)
    logits = model(batch.x, adj)
    # GraphSAINT's normalized loss: sum_v loss_weight[v] * L_v (0 for nodes without a loss)
    loss = model.loss(logits, batch.y, batch.loss_weight)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % len(loader) == 0 or step == steps - 1:
        print(f"plain PyTorch: step {step + 1}/{steps}: {batch.num_nodes} nodes, "
              f"{batch.num_edges} edges, loss {loss.item():.4f}")
loader.close()                      # stops the background sampler thread

# Full-graph inference: every node, the full graph's row-normalized adjacency (1/deg).
model.eval()
with torch.no_grad():
    full_adj = SparseAdj.from_graph(dataset.graph.row_normalized())
    pred = model(torch.from_numpy(x), full_adj).argmax(1).numpy()
if dataset.multilabel:
    print("plain PyTorch: multi-label data; see the engine's f1_micro above")
else:
    for split in ("val", "test"):
        idx = getattr(dataset, f"{split}_idx")
        acc = float((pred[idx] == dataset.labels[idx]).mean())
        print(f"plain PyTorch: {split} accuracy = {acc:.4f}")
