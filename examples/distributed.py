r"""Distributed full-graph training: partition a graph, train 2 ranks with gloo on this host.

The script runs the two commands below, then reads the run directory. It also repeats the
training in one process (plain full-batch PyTorch) to show that, with every boundary node kept
(``boundary_p: 1``), the 2 ranks compute the same losses as full-batch training::

    scalegnn partition make planted:nodes=2000,classes=4,features=16 --parts 2 --method gp \
        --out PLAN --report
    scalegnn dist-train --nprocs 2 --plan PLAN --config dist.yml --out RUN --no-progress

``dist-train`` starts the ranks on this host and connects them over loopback
(127.0.0.1, a free port). When a rank fails, it stops the others and prints that rank's error.
``torchrun --nproc-per-node 2 -m scalegnn.dist --plan PLAN --config dist.yml --out RUN`` runs
the same ranks under torchrun.

Run from the repository root (about 10 s on 2 cores; the first run after installing also
compiles and caches numba kernels, up to half a minute)::

    python examples/distributed.py [--out DIR]

``--out DIR``: the plan, config and run directory go to ``DIR/distributed`` (default
``runs/examples``; replaced on every run).
"""
import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch

from scalegnn.config import Config
from scalegnn.data import load_dataset
from scalegnn.dist import PartitionPlan
from scalegnn.nn import build_model
from scalegnn.ops import SparseAdj

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("--out", default="runs/examples", help="folder for plan and run directory")
args = parser.parse_args()
out = Path(args.out) / "distributed"
shutil.rmtree(out, ignore_errors=True)   # this example's own folder: start afresh
out.mkdir(parents=True)

DATA = "planted:nodes=2000,classes=4,features=16"   # any dataset path or generator spec
RANKS, EPOCHS, SEED = 2, 20, 0


def scalegnn_cli(*argv):
    """Run `scalegnn ARGV...` (as `python -m scalegnn`, so no PATH setup is needed)."""
    env = dict(os.environ)
    env.setdefault("GLOO_SOCKET_IFNAME", "lo")   # gloo on the loopback interface only
    done = subprocess.run([sys.executable, "-m", "scalegnn", *map(str, argv)], env=env,
                          capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"scalegnn {argv[0]} failed:\n{done.stderr}")
    return done.stdout


# ---------------------------------------------------------------------------------------------
# 1. Partition. gp = METIS (needs pymetis: pip install 'scalegnn[partition]'), hp = hypergraph
#    partitioning (Mt-KaHyPar, same extra), rp = random (no extra package).
# ---------------------------------------------------------------------------------------------
method = "gp" if importlib.util.find_spec("pymetis") else "rp"
plan_dir = out / "plan"
printed = scalegnn_cli("partition", "make", DATA, "--parts", RANKS, "--method", method,
                       "--out", plan_dir, "--report")
totals = json.loads(printed.splitlines()[0])   # first line: JSON; then the --report table
print(f"partition ({method}): {RANKS} parts, rows exchanged per graph layer: "
      f"{totals['comm_volume']} in all, {totals['comm_volume_max']} at most per rank")

plan = PartitionPlan.load(plan_dir, world_size=RANKS)   # what each rank will load
for s in plan.meta["stats"]:
    print(f"  rank {s['rank']}: {s['inner']} own nodes, {s['boundary']} boundary nodes "
          f"(other ranks' rows it receives), sends {s['send_volume']} rows per layer")

# ---------------------------------------------------------------------------------------------
# 2. Train. The config is the one schema of every mode; in a distributed run each epoch is one
#    full-graph step (the phase's sampler is not used) and the distributed: section adds
#    boundary-node sampling (boundary_p < 1 sends fewer rows; 1 = exact). float64 and no
#    dropout make the comparison in step 4 exact to rounding.
# ---------------------------------------------------------------------------------------------
config = Config.from_dict({
    "network": {"dim": 32, "arch": "1-0-1-0"},
    "params": {"lr": 0.01, "dropout": 0.0, "grad_clip": 0.0, "standardize": False,
               "eval_every": 5},
    "phase": [{"end": EPOCHS, "sampler": "full"}],
    "distributed": {"boundary_p": 1.0, "dtype": "float64", "timeout": 60},
})
(out / "dist.yml").write_text(config.to_yaml())
run_dir = out / "run"
printed = scalegnn_cli("dist-train", "--nprocs", RANKS, "--plan", plan_dir,
                       "--config", out / "dist.yml", "--out", run_dir, "--seed", SEED,
                       "--no-progress")
print("dist-train:", *("  " + line for line in printed.strip().splitlines()), sep="\n")

# ---------------------------------------------------------------------------------------------
# 3. Results: summary.json (as for `scalegnn train`), and per epoch and rank in metrics.jsonl.
# ---------------------------------------------------------------------------------------------
summary = json.loads((run_dir / "summary.json").read_text())
epochs = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
print(f"distributed: {summary['world_size']} ranks, best epoch {summary['best_epoch']}, "
      f"test accuracy = {summary['test']['accuracy']:.4f}")
last = epochs[-1]
for r, rank in enumerate(last["ranks"]):
    # two graph layers (arch 1-0-1-0): each sends the plan's rows once per epoch
    print(f"  rank {r}, epoch {last['epoch']}: sent {rank['rows_sent']:.0f} rows "
          f"(= 2 graph layers x {plan.meta['stats'][r]['send_volume']}), "
          f"{rank['bytes_sent'] / 1e3:.1f} kB; compute {rank['compute_s'] * 1e3:.1f} ms, "
          f"communication {rank['comm_s'] * 1e3:.1f} ms")

# ---------------------------------------------------------------------------------------------
# 4. The same training in one process: full-batch GraphSAINT model on the whole graph with the
#    same initial weights (same seed), loss on the training nodes, Adam. With boundary_p = 1 the
#    ranks' all-reduced gradients are the full-batch gradients, so the losses agree.
# ---------------------------------------------------------------------------------------------
dataset = load_dataset(DATA)
net = config.network
torch.manual_seed(SEED)
model = build_model(dataset.num_features, dataset.num_classes, hidden=net["dim"],
                    arch=net["arch"], aggr=net["aggr"], bias=net["bias"]).double()
adj = SparseAdj.from_graph(dataset.graph.row_normalized(dtype=np.float64), dtype=np.float64)
x = torch.as_tensor(np.asarray(dataset.features), dtype=torch.float64)
y = torch.as_tensor(dataset.labels)
weight = torch.zeros(dataset.num_nodes, dtype=torch.float64)
weight[dataset.train_idx] = 1.0 / len(dataset.train_idx)     # mean over training nodes
optimizer = torch.optim.Adam(model.parameters(), lr=config.params["lr"])
full_batch = []
for _ in range(EPOCHS):
    optimizer.zero_grad()
    loss = model.loss(model(x, adj), y, weight)
    loss.backward()
    optimizer.step()
    full_batch.append(loss.item())

distributed = np.array([e["loss"] for e in epochs])
diff = np.abs(distributed - np.array(full_batch)).max()
print("epoch  distributed loss  full-batch loss")
for e in (0, 1, 2, EPOCHS - 1):
    print(f"{e + 1:5d}  {distributed[e]:16.10f}  {full_batch[e]:15.10f}")
print(f"largest loss difference over {EPOCHS} epochs: {diff:.2e}")
