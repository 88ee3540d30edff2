"""shaDow-GNN link prediction on a small generated graph: Hits@K and MRR.

A ``shadow:`` section in the config switches ``scalegnn train`` (and ``Trainer``) to
shaDow-GNN. Every target gets its own small subgraph (here: the 1-hop neighbourhoods of both
ends of a candidate edge), and a GNN runs on it. With ``task: link`` the data's edges are split
85/5/10 (seeded). The held-out edges are removed from the graph the model sees. Each validation
or test edge is then ranked against shared random non-edges, the negatives.

The same run from the command line, with the config below saved as ``link.yml``::

    scalegnn train --data planted:nodes=2000,classes=40,degree=10,p_in=0.9 \
        --config link.yml --out RUN

Run from the repository root (about 6 s on 2 cores; the first run after installing also
compiles and caches numba kernels, up to half a minute)::

    python examples/shadow_link.py [--out DIR]

``--out DIR``: the run directory is ``DIR/shadow_link`` (default ``runs/examples``; replaced on
every run).
"""
import argparse
import json
from pathlib import Path

import numpy as np

from scalegnn.config import Config
from scalegnn.data import load_dataset
from scalegnn.train import Trainer

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("--out", default="runs/examples", help="folder for the run directory")
args = parser.parse_args()
run_dir = Path(args.out) / "shadow_link"

# A planted-partition graph: 40 communities of ~50 nodes, 90% of the edges inside a community.
# Two nodes of the same community share neighbours, which is what a link predictor can learn.
spec = "planted:nodes=2000,classes=40,degree=10,p_in=0.9"
dataset = load_dataset(spec)
print(f"graph {spec}: {dataset.num_nodes} nodes, {dataset.info()['edges']} edges")

# The config as a dict in the YAML file's shape (Config.from_yaml reads the same from a file).
NEGATIVES = 1000
config = Config.from_dict({
    "network": {"dim": 64, "arch": "1-1", "aggr": "concat"},    # 2 graph layers
    "params": {"lr": 0.005, "dropout": 0.1,
               "transductive": True,     # no node split: the targets are edges
               "standardize": False},
    # shaDow-GNN extracts its own subgraphs: the GraphSAINT sampler is "full" (unused).
    "phase": [{"end": 3, "sampler": "full"}],
    "shadow": {
        "task": "link",
        "edge_split": [0.85, 0.05, 0.10],   # train / val / test share of the edges
        "split_seed": 0,
        "negatives": NEGATIVES,             # non-edges each held-out edge is ranked against
        # one subgraph per pair: both ends' neighbours up to 1 hop, at most 32 per node
        "extractors": [{"kind": "khop", "depth": 1, "budget": 32}],
        "readout": "hadamard+sum",    # combine the two ends (hadamard) and the whole scope (sum)
        "pair_labels": 3,             # each node's distances to both ends (capped at 3) as input
        "node_features": False,       # the labels alone (the features describe communities,
                                      # not links)
        "adj_norm": "sym",            # GCN's symmetric operator inside each subgraph
        "batch_size": 128,            # training pairs per minibatch
        "eval_batch_size": 512,
        "cache_dir": "none",          # PPR extractors cache their lists; khop needs nothing
    },
})

# Link runs write the usual run directory (config.yml, metrics.jsonl, best.pt, summary.json).
# scalegnn predict / embed (and load_run) serve node-classification runs, not link runs.
result = Trainer(dataset, config, out_dir=run_dir, seed=0, progress=False,
                 overwrite=True).fit()
print(f"mode {result['mode']}: best epoch {result['best_epoch']} by validation "
      f"{result['metric']}")
for split in ("val", "test"):
    m = result[split]
    print(f"{split:5} hits@20 = {m['hits@20']:.4f}  hits@50 = {m['hits@50']:.4f}  "
          f"hits@100 = {m['hits@100']:.4f}  mrr = {m['mrr']:.4f}")

# What ranking the positives at random among the negatives would give, for scale: a positive's
# rank is uniform over 1..NEGATIVES+1.
ranks = np.arange(1, NEGATIVES + 2)
print(f"random scores: hits@50 = {50 / (NEGATIVES + 1):.4f}  mrr = {np.mean(1.0 / ranks):.4f}")

# metrics.jsonl: one record per epoch, with the validation metrics of that epoch
epochs = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
print("validation hits@50 per epoch:", " ".join(f"{e['val']['hits@50']:.4f}" for e in epochs))
print(f"run directory: {run_dir}")
