"""Train on a graph built in Python, with no files involved.

The graph is made from numpy / torch / scipy arrays with ``Dataset.from_edge_index`` (a PyG-style
edge_index) and with ``Dataset.from_arrays`` (an N x N adjacency). Each dataset gets a split of
our own (index arrays, or boolean masks), is trained with ``Trainer``, and the test accuracy
is printed.

Run from the repository root (about 3 s on 2 cores; the first run after installing also
compiles and caches numba kernels, up to half a minute)::

    python examples/dataset_in_python.py [--out DIR]

``--out DIR``: run directories go to ``DIR/dataset_in_python/{edge_index,arrays}`` (default
``runs/examples``; replaced on every run).
"""
import argparse
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import torch

from scalegnn.config import Config
from scalegnn.data import Dataset
from scalegnn.train import Trainer

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("--out", default="runs/examples", help="folder for the run directories")
args = parser.parse_args()
out = Path(args.out) / "dataset_in_python"

# ---------------------------------------------------------------------------------------------
# A graph whose labels need the edges: 4 classes, 80% of each node's edges stay in its class,
# and the features are the class centroid buried in noise.
# ---------------------------------------------------------------------------------------------
rng = np.random.default_rng(0)
n, classes, f = 2000, 4, 16
y = rng.integers(0, classes, n)
by_class = [np.flatnonzero(y == c) for c in range(classes)]
src = rng.integers(0, n, 6 * n)
same_class = np.array([rng.choice(by_class[y[s]]) for s in src])
dst = np.where(rng.random(src.size) < 0.8, same_class, rng.integers(0, n, src.size))
centroids = rng.standard_normal((classes, f))
x = (centroids[y] + 3.0 * rng.standard_normal((n, f))).astype(np.float32)

# A split of our own: 60% train, 20% val, 20% test (without one, a seeded 50/25/25 split is made).
perm = rng.permutation(n)
train_idx, val_idx, test_idx = perm[:1200], perm[1200:1600], perm[1600:]

# A short, small training run: 8 epochs of random-walk subgraphs, hidden width 64. The graph is
# small, so sample it transductively (all nodes; loss on the training nodes only).
config = Config().override(["phase.end=8", "phase.num_root=300", "network.dim=64",
                            "params.transductive=true"])


def train(dataset, name):
    result = Trainer(dataset, config.copy(), out_dir=out / name, seed=0, progress=False,
                     overwrite=True).fit()
    print(f"{name}: test accuracy = {result['test']['accuracy']:.4f} "
          f"(best epoch {result['best_epoch']}, run directory {out / name})")
    return result


# ---------------------------------------------------------------------------------------------
# 1. Dataset.from_edge_index: a (2, E) torch edge_index (PyG's layout), torch labels, numpy
#    features, the split as index arrays. Edges are symmetrized, deduplicated and self-loops
#    dropped, as for every loader.
# ---------------------------------------------------------------------------------------------
edge_index = torch.from_numpy(np.stack([src, dst]))
ds1 = Dataset.from_edge_index(edge_index, torch.from_numpy(y), x, train=train_idx,
                              val=val_idx, test=test_idx, name="edge_index")
info = ds1.info()
print(f"edge_index: {info['nodes']} nodes, {info['edges']} undirected edges "
      f"({edge_index.shape[1]} given), {ds1.num_features} features, {ds1.num_classes} classes, "
      f"split {info['splits']['train']}/{info['splits']['val']}/{info['splits']['test']}")
train(ds1, "edge_index")

# ---------------------------------------------------------------------------------------------
# 2. Dataset.from_arrays: a scipy sparse adjacency (numpy and torch, dense or sparse, work too),
#    bag-of-words features as a scipy CSR matrix (kept sparse: at most 10% nonzero trains as
#    CSR), the split as boolean masks.
# ---------------------------------------------------------------------------------------------
adjacency = sp.coo_matrix((np.ones(src.size), (src, dst)), shape=(n, n)).tocsr()
vocabulary = 200        # each node uses 8 words; half of them from its class's 50 words
words = np.where(rng.random((n, 8)) < 0.5, y[:, None] * 50 + rng.integers(0, 50, (n, 8)),
                 rng.integers(0, vocabulary, (n, 8)))
bag_of_words = sp.csr_matrix((np.ones(words.size, np.float32),
                              (np.repeat(np.arange(n), 8), words.ravel())), shape=(n, vocabulary))
bag_of_words.data[:] = 1.0  # a word used twice is still one entry
masks = {name: np.isin(np.arange(n), idx)
         for name, idx in (("train", train_idx), ("val", val_idx), ("test", test_idx))}
ds2 = Dataset.from_arrays(adjacency, y, bag_of_words, **masks, name="arrays")
info = ds2.info()
print(f"arrays: {info['nodes']} nodes, {info['edges']} undirected edges, features stored as "
      f"{info['feature_storage']}, split {info['splits']['train']}/{info['splits']['val']}/"
      f"{info['splits']['test']}")
train(ds2, "arrays")

# Both datasets hold the same graph and split, whichever way they were given.
assert ds1.info()["edges"] == ds2.info()["edges"]
assert np.array_equal(np.sort(ds2.test_idx), np.sort(test_idx))

# ---------------------------------------------------------------------------------------------
# 3. No features at all: scalegnn computes structural ones (log-degree and 1-/2-hop random
#    projections); features_source="onehot" would use one column per node instead.
#    A dense torch adjacency works too.
# ---------------------------------------------------------------------------------------------
ds3 = Dataset.from_arrays(torch.from_numpy(adjacency.toarray()), y, None, seed=0,
                          name="structural")
info = ds3.info()
print(f"structural: {ds3.num_features} structural features; seeded split "
      f"{info['splits']['train']}/{info['splits']['val']}/{info['splits']['test']}")

# Mistakes are one-line errors naming the argument:
try:
    Dataset.from_arrays(adjacency, y[:-1], x)   # one label short
except Exception as e:  # scalegnn.DataError
    print(f"refused: {type(e).__name__}: {e}")
