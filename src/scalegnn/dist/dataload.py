"""Dataset access for the distributed tools: ``scalegnn.data.load_dataset`` when it exists,
otherwise a minimal local fallback (MUSAE-style CSV folders such as ``facebook`` and the
``kronecker:SCALE:EF`` generator) so partitioning and benchmarks work on their own.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from scalegnn.data.dataset import Dataset
from scalegnn.errors import DataError
from scalegnn.graph import Graph


def load(spec: str, seed: int = 0) -> Dataset:
    """Load ``spec`` (a path or a generator spec) as a validated Dataset."""
    try:
        from scalegnn.data import load_dataset  # the data engineer's loader, when present
    except ImportError:
        load_dataset = None
    if load_dataset is not None:
        return load_dataset(spec)
    if spec.startswith("kronecker:"):
        parts = spec.split(":")
        try:
            scale, ef = int(parts[1]), int(parts[2]) if len(parts) > 2 else 16
        except (IndexError, ValueError):
            raise DataError(f"{spec}: expected kronecker:SCALE:EF, e.g. kronecker:17:16") from None
        return kronecker_dataset(scale, ef, seed=seed)
    path = Path(spec)
    if path.is_dir() and any(path.glob("*_edges.csv")):
        return musae_folder(path, seed=seed)
    raise DataError(f"{spec}: cannot load (scalegnn.data.load_dataset is not available; the "
                    f"fallback reads MUSAE CSV folders and kronecker:SCALE:EF)")


def random_split(n: int, seed: int, fractions=(0.5, 0.25, 0.25)):
    perm = np.random.default_rng(seed).permutation(n)
    a = int(fractions[0] * n)
    b = a + int(fractions[1] * n)
    return np.sort(perm[:a]), np.sort(perm[a:b]), np.sort(perm[b:])


def musae_folder(path: Path, seed: int = 0) -> Dataset:
    """MUSAE folder: ``*_edges.csv`` (id_1,id_2), ``*.json`` (node -> active feature ids),
    ``*_target.csv`` (last column = class name). Seeded 50/25/25 split."""
    edges_f = next(path.glob("*_edges.csv"))
    target_f = next(path.glob("*_target.csv"))
    feats_f = next(p for p in path.glob("*.json"))
    e = np.loadtxt(edges_f, delimiter=",", skiprows=1, dtype=np.int64)
    import csv
    with open(target_f, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    header, rows = rows[0], rows[1:]
    ids = np.array([int(r[0]) for r in rows])
    names = [r[-1] for r in rows]
    classes = sorted(set(names))
    n = int(max(ids.max(), e.max())) + 1
    labels = np.zeros(n, dtype=np.int64)
    labels[ids] = [classes.index(c) for c in names]
    feats = json.loads(feats_f.read_text())
    nf = 1 + max(max(v) for v in feats.values() if v)
    x = np.zeros((n, nf), dtype=np.float32)
    for k, v in feats.items():
        x[int(k), v] = 1.0
    g = Graph.from_edges(e[:, 0], e[:, 1], n, symmetrize=True)
    tr, va, te = random_split(n, seed)
    return Dataset(g, x, labels, tr, va, te, name=path.name, source=str(path),
                   metric="f1_micro").validate()


def rmat_edges(scale: int, edge_factor: int, seed: int, abcd=(0.57, 0.19, 0.19, 0.05),
               chunk: int = 1 << 22):
    """Graph500 R-MAT/Kronecker edge list: ``edge_factor * 2^scale`` edges, vertex ids
    permuted (seeded) so that id order carries no structure."""
    rng = np.random.default_rng(seed)
    m = edge_factor << scale
    src = np.empty(m, dtype=np.int64)
    dst = np.empty(m, dtype=np.int64)
    a, b, c, _ = abcd
    for s in range(0, m, chunk):
        k = min(chunk, m - s)
        u = np.zeros(k, dtype=np.int64)
        v = np.zeros(k, dtype=np.int64)
        for bit in range(scale):
            r = rng.random(k)
            ubit = r >= a + b          # quadrants c, d: source bit set
            vbit = ((r >= a) & (r < a + b)) | (r >= a + b + c)  # quadrants b, d
            u |= ubit.astype(np.int64) << bit
            v |= vbit.astype(np.int64) << bit
        src[s:s + k] = u
        dst[s:s + k] = v
    perm = rng.permutation(1 << scale)
    return perm[src], perm[dst]


def kronecker_dataset(scale: int, edge_factor: int = 16, seed: int = 0, num_features: int = 32,
                      num_classes: int = 4) -> Dataset:
    """Kronecker graph with Gaussian features and labels that depend on the neighbourhood:
    ``y = argmax((Â X + X) R)`` for a fixed random R, so the graph carries signal."""
    n = 1 << scale
    src, dst = rmat_edges(scale, edge_factor, seed)
    g = Graph.from_edges(src, dst, n, symmetrize=True)
    del src, dst
    rng = np.random.default_rng(seed + 1)
    x = rng.standard_normal((n, num_features), dtype=np.float32)
    agg = _csr_mean(g, x, np.empty_like(x))
    r = rng.standard_normal((num_features, num_classes)).astype(np.float32)
    labels = ((agg + 0.5 * x) @ r).argmax(1).astype(np.int64)
    tr, va, te = random_split(n, seed)
    return Dataset(g, x, labels, tr, va, te, name=f"kronecker{scale}", source=f"kronecker:{scale}:"
                   f"{edge_factor}", metric="f1_micro").validate()


def _csr_mean(g: Graph, x: np.ndarray, out: np.ndarray, rows: int = 1 << 14):
    """out = D^-1 A x by row blocks through scipy (bounded temporaries)."""
    a = g.to_scipy(np.float32)
    deg = np.maximum(g.degrees(), 1).astype(np.float32)
    for s in range(0, g.num_nodes, rows):
        out[s:s + rows] = (a[s:s + rows] @ x) / deg[s:s + rows, None]
    return out
