r"""Use a trained model: class scores, metrics and embeddings from a run directory.

The script trains briefly into a run directory, then opens the run with ``scalegnn.load_run``.
It computes the test split's class scores, checks that their metrics equal the run's
``summary.json``, and takes the embeddings of a few nodes. The same from the command line::

    scalegnn train --data planted:nodes=3000,classes=5,features=24 --epochs 5 \
        --set phase.num_root=300 --set network.dim=64 --out RUN
    scalegnn predict RUN --split test --out test.csv     # node,label,score_0..score_4
    scalegnn predict RUN --out all.npy                   # every node: float32 (3000, 5)
    scalegnn embed RUN --split test --out test_emb.npy   # the classifier's input: (750, 64)
    printf '0\n1\n2\n' > ids.txt
    scalegnn embed RUN --nodes ids.txt --out some.csv    # node,emb_0..emb_{d-1}

(``python -m scalegnn`` works wherever the ``scalegnn`` command is not on the PATH.)

Run from the repository root (about 3 s on 2 cores; the first run after installing also
compiles and caches numba kernels, up to half a minute)::

    python examples/predict_embed.py [--out DIR]

``--out DIR``: the run directory is ``DIR/predict_embed/run`` and the written files go next to
it (default ``runs/examples``; replaced on every run).
"""
import argparse
import json
from pathlib import Path

import numpy as np

import scalegnn
from scalegnn.config import Config
from scalegnn.data import load_dataset
from scalegnn.train import Trainer

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("--out", default="runs/examples", help="folder for the run directory")
args = parser.parse_args()
out = Path(args.out) / "predict_embed"
run_dir = out / "run"

# ---------------------------------------------------------------------------------------------
# Train briefly. load_run reloads the data from the run's run.json, so record the spec it was
# loaded from (`scalegnn train --data SPEC` does this itself). A generator spec or a path works;
# a Dataset built in Python has nothing to reload: save it to a file first, or use
# load_run(run_dir, data=PATH).
# ---------------------------------------------------------------------------------------------
spec = "planted:nodes=3000,classes=5,features=24"
config = Config().override(["phase.end=5", "phase.num_root=300", "network.dim=64"])
Trainer(load_dataset(spec), config, out_dir=run_dir, seed=0, progress=False, overwrite=True,
        run_info={"data": spec}).fit()
summary = json.loads((run_dir / "summary.json").read_text())
metric = summary["metric"]
print(f"trained: best epoch {summary['best_epoch']}, test {metric} = "
      f"{summary['test'][metric]:.4f} (summary.json)")

# ---------------------------------------------------------------------------------------------
# Open the run: best.pt (the best-validation weights), config.yml and run.json.
# ---------------------------------------------------------------------------------------------
run = scalegnn.load_run(run_dir)
print(f"loaded {run_dir}: best epoch {run.best_epoch}, {run.dataset.num_nodes} nodes, "
      f"{run.num_classes} classes")

# Scores of the test split: one row per test node, softmax probabilities (multi-label runs:
# per-class sigmoid probabilities). They come from the same full-graph pass as the run's own
# evaluation, so the metrics equal summary.json's test metrics exactly.
test = run.select(split="test")                # node ids, in the split's order
scores = run.scores(test)                      # float32 (len(test), classes)
metrics = run.metrics(test, scores)
print(f"scores: {scores.shape[0]} test nodes x {scores.shape[1]} classes; "
      f"rows sum to 1: {bool(np.allclose(scores.sum(1), 1.0, atol=1e-5))}")
for name, value in metrics.items():
    print(f"test {name}: from the scores {value:.6f}, summary.json {summary['test'][name]:.6f}")
assert metrics == summary["test"], "the scores should reproduce summary.json exactly"
print("metrics equal summary.json: True")

predicted = scores.argmax(1)
print(f"first test nodes {test[:5].tolist()}: predicted {predicted[:5].tolist()}, "
      f"true {run.dataset.labels[test[:5]].tolist()}")

# Embeddings: the classifier's input (GraphSAINT: the L2-normalized last layer) of any nodes,
# rows in the order asked. A row does not depend on which other nodes were asked for.
some = [0, 1, 2, 2999]
emb = run.embeddings(some)
print(f"embeddings of nodes {some}: shape {emb.shape}, norms "
      f"{np.round(np.linalg.norm(emb, axis=1), 4).tolist()}")
np.save(out / "embeddings.npy", emb)
np.save(out / "test_scores.npy", scores)
print(f"wrote {out / 'test_scores.npy'} and {out / 'embeddings.npy'}")

# Another graph with the same feature width (inductive use): scalegnn.load_run(run_dir,
# data="path/or/spec") applies the run's own feature standardization to it.
