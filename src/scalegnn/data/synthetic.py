"""Seeded synthetic graphs: Kronecker/R-MAT (for scale) and planted partition (for accuracy).

**Kronecker / R-MAT** (:func:`kronecker_graph`, :func:`kronecker_dataset`): ``2^scale`` nodes,
``edge_factor * 2^scale`` edge draws from the initiator [[a, b], [c, d]] (default
a, b, c = 0.57, 0.19, 0.19, d = 1 - a - b - c), symmetrized, deduplicated, self-loops dropped,
so the graph has at most ``2 * edge_factor * 2^scale`` directed entries. Edges are generated in
chunks by a counter-based numba kernel (:mod:`scalegnn.data._rmat`) and streamed twice into the
CSR (:func:`scalegnn.data._build.csr_from_edge_chunks`), so the edge list is never held whole.
The benchmark dataset adds ``features`` Gaussian columns and ``num_labels`` multi-labels
(PPI-like: 50 features, 121 labels, 66/12/22 split); label j of node v is
``[(Â X W)_{vj} > 0.5 σ_j]`` for a seeded Gaussian W, so labels are learnable and use the graph
(``Â = D⁻¹A``, each row's mean summed in float64). With ``classes=C`` the task is single-label:
the class of v is the quantile bucket of ``h_v = (Â X w)_v`` for one seeded Gaussian w (C
balanced classes: rank buckets, ties such as isolated nodes' h = 0 broken by node id; the
journal's scaling runs use C = 2). With ``out=DIR`` the dataset is written straight to a
GraphSAINT folder, features in row blocks with plain file writes, so memory holds the CSR and
(n, labels) matrices but never the (n, F) features.

**Planted partition** (:func:`planted_dataset`): community y_v uniform over ``classes``;
``degree * n / 2`` edge draws, each from a uniform node u to a node of u's community with
probability ``p_in``, else to a uniform node. Features x_v = μ_{y_v} + noise·ε_v with
μ_c ~ N(0, I_F), ε ~ N(0, I_F): with large noise a node's own features are weakly
informative, while the mean over its ~degree neighbours (a fraction ≈ p_in of them in the same
community) has noise/√degree, so neighbourhood averaging (any GNN) beats an MLP by a wide
margin. Multi-label: each community has a random 0/1 prototype over ``num_labels`` labels
(density 0.3); a node takes its community's prototype with each bit flipped w.p. 0.05.

:data:`SYNTHETIC_DEFAULTS` is the built-in ``synthetic`` dataset (what ``scalegnn train`` uses).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from scalegnn.data import _build
from scalegnn.data import _common as C
from scalegnn.data import _rmat
from scalegnn.data import graphsaint as G
from scalegnn.data.dataset import Dataset
from scalegnn.errors import DataError
from scalegnn.features import BLOCK_BYTES, block_rows
from scalegnn.graph import Graph
from scalegnn.io import read_npy_blocks, write_npy_blocks
from scalegnn.memory import require_memory

KRONECKER_DEFAULTS = dict(a=0.57, b=0.19, c=0.19, features=50, num_labels=121,
                          split=(0.66, 0.12, 0.22))
SYNTHETIC_DEFAULTS = dict(nodes=12000, classes=8, features=32, degree=12.0, p_in=0.7,
                          noise=4.0, multilabel=False, num_labels=20)
CHUNK_EDGES = 1 << 21


def _check(cond, msg):
    if not cond:
        raise DataError(msg)


def _finite(**values) -> None:
    for k, v in values.items():
        _check(math.isfinite(v), f"{k} must be a finite number, got {v}")


def kronecker_bytes(scale: int, edge_factor: int, features: int = 50,
                    num_labels: int = 121) -> int:
    """Estimated peak bytes of :func:`kronecker_dataset`: the CSR while it is built (indptr,
    cursor, 2·EF·2^scale indices before deduplication, the id permutation), the row-normalized
    copy's values, Gaussian features and three (N, labels) float32 matrices (XW, ÂXW, labels)."""
    n = 1 << scale
    m = edge_factor * n
    isz = 4 if n <= np.iinfo(np.int32).max else 8
    graph = 16 * (n + 1) + 2 * m * isz + n * isz + 2 * m * 4
    return graph + 4 * n * features + 12 * n * num_labels


def planted_bytes(nodes: int, degree: float, features: int = 32, multilabel: bool = False,
                  num_labels: int = 20) -> float:
    """Estimated peak bytes of :func:`planted_dataset`: the degree·N/2 edge draws with their
    temporaries (~49 bytes each), the CSR (two int32 entries per draw plus indptr), float64
    features with noise before the float32 cast, and the labels."""
    m = degree * nodes / 2
    labels = 6 * nodes * num_labels if multilabel else 8 * nodes
    return 49.0 * m + 8 * m + 24 * nodes + 20 * nodes * features + labels


def kronecker_graph(scale: int, edge_factor: int = 16, *, a: float = 0.57, b: float = 0.19,
                    c: float = 0.19, seed: int = 0, permute: bool = True,
                    chunk_edges: int = CHUNK_EDGES) -> Graph:
    """Symmetric, deduplicated, self-loop-free R-MAT graph on 2^scale nodes (see module doc)."""
    _check(1 <= scale <= 40, f"kronecker: scale must be in 1..40, got {scale}")
    _check(edge_factor >= 1, f"kronecker: edge_factor must be >= 1, got {edge_factor}")
    _check(seed >= 0, f"kronecker: seed must be >= 0, got {seed}")
    _finite(**{"kronecker: a": a, "kronecker: b": b, "kronecker: c": c})
    require_memory(f"kronecker:{scale}:{edge_factor}", kronecker_bytes(scale, edge_factor, 0, 0))
    d = 1.0 - a - b - c
    _check(min(a, b, c) >= 0 and d >= -1e-12,
           f"kronecker: initiator a, b, c must be >= 0 with a+b+c <= 1, got {a}, {b}, {c}")
    n = 1 << scale
    m = edge_factor * n
    idt = np.int32 if n <= np.iinfo(np.int32).max else np.int64
    perm = (np.random.default_rng([seed, 1]).permutation(n).astype(idt) if permute
            else np.arange(n, dtype=idt))
    key = np.uint64(_rmat.splitmix64_py(seed))
    ta, tab, tabc = _rmat.thresholds(a, b, c)
    num_chunks = (m + chunk_edges - 1) // chunk_edges
    src = np.empty(min(chunk_edges, m), dtype=idt)
    dst = np.empty_like(src)

    def make_chunk(i):
        start = i * chunk_edges
        cnt = min(chunk_edges, m - start)
        _rmat.rmat_edges(key, start, cnt, scale, ta, tab, tabc, perm, src, dst)
        return src[:cnt], dst[:cnt]

    return _build.csr_from_edge_chunks(make_chunk, num_chunks, n)


def kronecker_dataset(scale: int, edge_factor: int = 16, *, seed: int = 0,
                      features: int = 50, num_labels: int = 121, classes: int | None = None,
                      split=(0.66, 0.12, 0.22), a: float = 0.57, b: float = 0.19,
                      c: float = 0.19, spec: str | None = None, out=None,
                      overwrite: bool = False) -> Dataset:
    """R-MAT graph plus Gaussian features, graph-dependent labels and a seeded split.

    Labels: ``num_labels`` multi-labels ``[(Â X W)_{vj} > 0.5 σ_j]`` (module docstring), or with
    ``classes=C`` one class per node, the quantile bucket of ``h = Â X w`` (one seeded Gaussian
    ``w``): C balanced classes that need the graph.

    ``out``: write a GraphSAINT folder there instead of holding the features in memory — the
    CSR, then feats.npy filled in row blocks of about 32 MiB, then the labels from ``X w``
    computed block by block (an (n, labels) matrix) and the CSR; the folder appears
    atomically. The returned Dataset's ``features`` is a read-only memmap of ``out/feats.npy``
    (what ``load_dataset(out, mmap=True)`` gives), all other arrays equal the in-memory
    result's for the same arguments.

    Refused with a DataError naming ``spec`` (default ``kronecker:SCALE:EF``) before anything
    is allocated when :func:`kronecker_bytes` exceeds the available memory.
    """
    _check(1 <= scale <= 40, f"kronecker: scale must be in 1..40, got {scale}")
    _check(edge_factor >= 1, f"kronecker: edge_factor must be >= 1, got {edge_factor}")
    _check(features >= 1, f"kronecker: features must be >= 1, got {features}")
    _check(num_labels >= 1, f"kronecker: labels must be >= 1, got {num_labels}")
    _check(classes is None or classes >= 2, f"kronecker: classes must be >= 2, got {classes}")
    if out is not None and Path(out).exists() and not overwrite:  # before any work
        raise DataError(f"{out}: already exists (pass overwrite to replace it)")
    width = num_labels if classes is None else 1
    require_memory(spec or f"kronecker:{scale}:{edge_factor}",
                     kronecker_bytes(scale, edge_factor, 0 if out is not None else features,
                                     width))
    graph = kronecker_graph(scale, edge_factor, a=a, b=b, c=c, seed=seed)
    n = graph.num_nodes
    tr, va, te = C.seeded_split(n, seed, split)
    name = f"kronecker-{scale}-{edge_factor}" + ("" if classes is None else f"-c{classes}")
    metric = "f1_micro" if classes is None else "accuracy"
    meta = {"format": "synthetic", "generator": "kronecker", "seed": seed,
            "initiator": [a, b, c, 1 - a - b - c]}
    if out is None:
        x = np.empty((n, features), dtype=np.float32)
        labels = _kronecker_features_labels(graph, seed, features, width, classes, x=x)
        source = (f"kronecker:{scale}:{edge_factor}:a={a!r},b={b!r},c={c!r},features={features},"
                  + (f"labels={num_labels}" if classes is None else f"classes={classes}")
                  + f",seed={seed}")   # regenerates this graph (load_run of a Python run)
        ds = Dataset(graph, x, labels, tr, va, te, name=name, source=source, metric=metric,
                     meta=meta)
        return C.finish(ds)
    with G.writing_folder(out, overwrite) as tmp:
        G.write_adj(tmp / "adj_full.npz", graph)
        G.write_adj(tmp / "adj_train.npz", graph, tr)
        G.write_roles(tmp / "role.json", tr, va, te)
        labels = _kronecker_features_labels(graph, seed, features, width, classes,
                                            path=tmp / "feats.npy")
        G.write_class_map(tmp / "class_map.json", labels)
        G.write_meta(tmp, name, metric)
    # validated with a zero-stride stand-in: the features are ours and finite, and reading
    # them through the mapping would pull the whole file into this process's resident set
    ds = Dataset(graph, np.broadcast_to(np.float32(0), (n, features)), labels, tr, va, te,
                 name=name, source=str(out), metric=metric, meta={**meta, "folder": str(out)})
    C.finish(ds)
    ds.features = C.load_npy(Path(out) / "feats.npy", "features", mmap=True)
    return ds


def _kronecker_features_labels(graph: Graph, seed: int, features: int, width: int,
                               classes: int | None, x=None, path=None) -> np.ndarray:
    """Seeded Gaussian features into the array ``x`` or the .npy file ``path``, and the labels
    (module docstring). Everything runs in row blocks of about 32 MiB: the normals are drawn
    block by block (the same stream as one (n, F) draw), then ``X W`` is computed from the
    same blocks read back (from ``x``, or from the file with plain reads), so only (n, width)
    matrices and one block are held in memory."""
    n, f = graph.num_nodes, features
    rng = np.random.default_rng([seed, 2])
    step = block_rows(f, target=BLOCK_BYTES // 2)  # the peak is CSR + this block + labels work
    if x is not None:
        for s in range(0, n, step):
            rng.standard_normal(out=x[s:s + step], dtype=np.float32)
        blocks = ((s, x[s:s + step]) for s in range(0, n, step))
    else:
        buf = np.empty((min(step, n), f), dtype=np.float32)

        def drawn():
            for s in range(0, n, step):
                yield rng.standard_normal(out=buf[:min(step, n - s)], dtype=np.float32)

        write_npy_blocks(path, (n, f), drawn())
        blocks = read_npy_blocks(path, step, buf)
    w = rng.standard_normal((f, width), dtype=np.float32)
    xw = np.empty((n, width), dtype=np.float32)
    for s, block in blocks:
        np.matmul(block, w, out=xw[s:s + block.shape[0]])
    h = np.empty_like(xw)
    _build.neighbour_mean(graph.indptr, graph.indices, xw, h)
    del xw
    if classes is None:
        return (h > 0.5 * h.std(axis=0, keepdims=True)).astype(np.float32)
    # rank buckets, ties (isolated nodes: h = 0) broken by node id, so classes are balanced
    order = np.argsort(h[:, 0], kind="stable")
    labels = np.empty(n, dtype=np.int64)
    labels[order] = np.arange(n, dtype=np.int64) * classes // max(n, 1)
    return labels


def planted_edges(y: np.ndarray, degree: float, p_in: float, rng) -> tuple[np.ndarray, np.ndarray]:
    """Edge draws of the planted-partition model (vectorized; see module docstring)."""
    n = y.shape[0]
    m = int(round(degree * n / 2))
    order = np.argsort(y, kind="stable")
    sizes = np.bincount(y, minlength=int(y.max()) + 1)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    src = rng.integers(0, n, size=m)
    same = rng.random(m) < p_in
    cls = y[src]
    within = order[starts[cls] + (rng.random(m) * sizes[cls]).astype(np.int64)]
    dst = np.where(same, within, rng.integers(0, n, size=m))
    return src, dst


def planted_dataset(nodes: int = 12000, classes: int = 8, features: int = 32,
                    degree: float = 12.0, p_in: float = 0.7, noise: float = 4.0,
                    multilabel: bool = False, num_labels: int = 20, seed: int = 0,
                    split=C.DEFAULT_SPLIT, name: str = "planted",
                    spec: str | None = None) -> Dataset:
    """Planted-partition dataset whose labels need the graph (see module docstring).

    Refused with a DataError naming ``spec`` (default ``planted:nodes=N,...``) before anything
    is allocated when :func:`planted_bytes` exceeds the available memory.
    """
    _finite(**{"planted: degree": degree, "planted: p_in": p_in, "planted: noise": noise})
    _check(nodes >= 8, f"planted: nodes must be >= 8, got {nodes}")
    _check(2 <= classes <= nodes, f"planted: classes must be in 2..nodes, got {classes}")
    _check(features >= 1, f"planted: features must be >= 1, got {features}")
    _check(degree > 0, f"planted: degree must be > 0, got {degree}")
    _check(0.0 <= p_in <= 1.0, f"planted: p_in must be in [0, 1], got {p_in}")
    _check(noise >= 0, f"planted: noise must be >= 0, got {noise}")
    _check(num_labels >= 1, f"planted: num_labels must be >= 1, got {num_labels}")
    _check(seed >= 0, f"planted: seed must be >= 0, got {seed}")
    require_memory(spec or f"planted:nodes={nodes},degree={degree:g},features={features}",
                     planted_bytes(nodes, degree, features, multilabel, num_labels))
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, size=nodes)
    src, dst = planted_edges(y, degree, p_in, rng)
    graph = Graph.from_edges(src, dst, nodes, symmetrize=True, deduplicate=True,
                             remove_self_loops=True)
    mu = rng.standard_normal((classes, features))
    x = (mu[y] + noise * rng.standard_normal((nodes, features))).astype(np.float32)
    if multilabel:
        proto = rng.random((classes, num_labels)) < 0.3
        flip = rng.random((nodes, num_labels)) < 0.05
        labels = (proto[y] ^ flip).astype(np.float32)
        metric = "f1_micro"
    else:
        labels = y.astype(np.int64)
        metric = "accuracy"
    tr, va, te = C.seeded_split(nodes, seed, split)
    params = dict(nodes=nodes, classes=classes, features=features, degree=degree, p_in=p_in,
                  noise=noise, multilabel=multilabel, num_labels=num_labels, seed=seed)
    source = name if name == "synthetic" else "planted:" + ",".join(   # regenerates this graph
        f"{'labels' if k == 'num_labels' else k}={_spec_value(v)}" for k, v in params.items())
    ds = Dataset(graph, x, labels, tr, va, te, name=name, source=source, metric=metric,
                 meta={"format": "synthetic", "generator": "planted", "params": params})
    return C.finish(ds)


def _spec_value(v) -> str:
    """A generator option as a spec reads it back exactly (floats by repr)."""
    return str(v).lower() if isinstance(v, bool) else repr(v)


def synthetic_dataset(seed: int = 0) -> Dataset:
    """The built-in default dataset (``load_dataset("synthetic")``)."""
    return planted_dataset(**SYNTHETIC_DEFAULTS, seed=seed, name="synthetic")
