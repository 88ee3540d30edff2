"""Write a.npz (3,000 nodes) and b.npz (2,000 nodes): two planted-partition graphs whose
features come from the same class centroids, i.e. one feature space (for ``--test-data``).

Run from any folder: ``python examples/make_two_graphs.py`` writes the files into the current one.
"""
import numpy as np
from scalegnn.data import Dataset

rng = np.random.default_rng(0)
classes, f = 4, 16
mu = 2.0 * rng.standard_normal((classes, f))
for name, n in (("a", 3000), ("b", 2000)):
    y = rng.integers(0, classes, n)
    src = rng.integers(0, n, 8 * n)
    by_class = [np.flatnonzero(y == c) for c in range(classes)]
    within = np.array([rng.choice(by_class[y[s]]) for s in src])
    dst = np.where(rng.random(src.size) < 0.6, within, rng.integers(0, n, src.size))
    x = (mu[y] + 8.0 * rng.standard_normal((n, f))).astype(np.float32)
    ds = Dataset.from_edge_index(np.stack([src, dst]), y, x, name=name)
    a = ds.graph.to_scipy()
    np.savez(f"{name}.npz", adj_data=a.data, adj_indices=a.indices, adj_indptr=a.indptr,
             adj_shape=np.array(a.shape), attr_matrix=x, labels=y)
