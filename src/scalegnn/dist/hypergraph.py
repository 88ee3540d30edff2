"""Column-net hypergraph partitioning (HP, Demirci et al.; SPEC §6) through Mt-KaHyPar.

Model of 1D row-wise SpMM ``Â H``: a vertex per row i, weighted by the nonzeros of row i of
``A + I`` (its SpMM work); a net per column j with pins ``{i : A_ij != 0} ∪ {j}`` (the self-loop
puts the owner of row j of H into its own net). Under a partition Π the owner of j sends row j
of H once to every other part holding a pin of net j, so

    Σ_j (λ(n_j) − 1)  =  rows sent per layer        (connectivity − 1, KM1)

exactly; minimizing KM1 at imbalance ε minimizes the communication volume under a compute
balance ``max part weight <= (1 + ε) · total / K``.

Memory: Mt-KaHyPar's Python API takes the nets as a list of Python lists (~36 bytes a pin: 4.6 GB
for the 128M pins of a 2^22-node Kronecker graph). The hypergraph is therefore streamed, a block
of rows at a time, into an hMETIS text file that Mt-KaHyPar reads natively (a few bytes a pin);
graphs over ``max_entries`` stored entries are sparsified first, as for METIS
(:func:`scalegnn.dist.graphs.sparsify_for_partitioning`), while the vertex weights always
come from the full graph.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np

from scalegnn.dist.graphs import sparsify_for_partitioning
from scalegnn.errors import ConfigError

PRESETS = ("deterministic", "default", "quality", "highest_quality")
_POW10 = 10 ** np.arange(19, dtype=np.int64)
_STATE: dict = {}


def format_ints(values: np.ndarray, line_ends: np.ndarray) -> bytes:
    """ASCII text of non-negative ints, each followed by ``'\\n'`` where ``line_ends`` is True and
    ``' '`` otherwise (vectorized: one pass per decimal digit instead of one Python call per
    number)."""
    v = np.asarray(values, dtype=np.int64)
    if v.size == 0:
        return b""
    if v.min() < 0:
        raise ValueError("format_ints: negative value")
    ndig = np.maximum(np.searchsorted(_POW10, v, side="right"), 1)
    ends = np.cumsum(ndig + 1)                       # one past each token's separator
    out = np.empty(int(ends[-1]), dtype=np.uint8)
    out[ends - 1] = np.where(line_ends, ord("\n"), ord(" "))
    for d in range(int(ndig.max())):
        m = ndig > d
        out[ends[m] - 2 - d] = (v[m] // _POW10[d]) % 10 + ord("0")
    return out.tobytes()


def vertex_weights(graph) -> np.ndarray:
    """Nonzeros of each row of ``A + I`` (an existing self-loop is not counted twice)."""
    deg = graph.degrees().astype(np.int64)
    self_loop = np.zeros(graph.num_nodes, dtype=bool)
    block = 1 << 18
    for s in range(0, graph.num_nodes, block):
        e = min(graph.num_nodes, s + block)
        rows = np.repeat(np.arange(s, e, dtype=np.int64), deg[s:e])
        hit = rows[graph.indices[graph.indptr[s]:graph.indptr[e]] == rows]
        self_loop[hit] = True
    return deg + (~self_loop)


def iter_nets(graph, block: int = 1 << 18):
    """Yield ``(net_ptr, pins)`` blocks of the column-net hypergraph: net j = column j of A plus
    j itself (first pin), nets with a single pin left out (they never cross parts).

    Columns of A are rows of Aᵀ; a symmetric graph (every undirected dataset) is used as is."""
    g = graph if graph.is_symmetric() else graph.transpose()
    deg = g.degrees()
    for s in range(0, g.num_nodes, block):
        e = min(g.num_nodes, s + block)
        rows = np.repeat(np.arange(s, e, dtype=np.int64), deg[s:e])
        cols = g.indices[g.indptr[s]:g.indptr[e]].astype(np.int64)
        other = cols != rows
        rows, cols = rows[other], cols[other]
        lens = np.bincount(rows - s, minlength=e - s)
        keep = lens > 0
        ids = np.arange(s, e, dtype=np.int64)[keep]
        lens = lens[keep] + 1
        ptr = np.zeros(ids.shape[0] + 1, dtype=np.int64)
        np.cumsum(lens, out=ptr[1:])
        pins = np.empty(int(ptr[-1]), dtype=np.int64)
        head = np.zeros(pins.shape[0], dtype=bool)
        head[ptr[:-1]] = True
        pins[ptr[:-1]] = ids
        pins[~head] = cols                           # rows sorted: cols stay grouped by net
        yield ptr, pins


def write_hmetis(path, nets, num_vertices: int, weights: np.ndarray) -> int:
    """Write an hMETIS hypergraph file (1-based pins, fmt 10 = vertex weights) from ``nets``, an
    iterable of ``(net_ptr, pins)`` blocks; return the number of nets. The header needs the net
    count, so the nets go to a body file first and the header is prepended by a copy."""
    path = Path(path)
    body = path.with_suffix(".body")
    count = 0
    with open(body, "wb") as f:
        for ptr, pins in nets:
            if pins.size == 0:
                continue
            ends = np.zeros(pins.shape[0], dtype=bool)
            ends[ptr[1:] - 1] = True
            f.write(format_ints(pins + 1, ends))
            count += ptr.shape[0] - 1
        f.write(format_ints(np.asarray(weights, dtype=np.int64),
                            np.ones(len(weights), dtype=bool)))
    with open(path, "wb") as out, open(body, "rb") as f:
        out.write(f"{count} {num_vertices} 10\n".encode())
        while chunk := f.read(1 << 24):
            out.write(chunk)
    body.unlink()
    return count


def _initializer(threads: int | None):
    """Mt-KaHyPar's thread pool is created once per process."""
    import mtkahypar
    if "init" not in _STATE:
        n = threads or len(os.sched_getaffinity(0))
        _STATE["init"] = mtkahypar.initialize(max(int(n), 1), False)
    return _STATE["init"]


def partition_hypergraph_file(path, num_vertices: int, parts: int, *, imbalance: float = 0.01,
                              seed: int = 0, preset: str = "deterministic",
                              threads: int | None = None) -> np.ndarray:
    """Mt-KaHyPar KM1 partition of an hMETIS file into ``parts`` blocks (int32 per vertex)."""
    try:
        import mtkahypar
    except ImportError:
        raise ConfigError("--method hp needs mtkahypar (pip install 'scalegnn[partition]'); "
                          "or use --method gp") from None
    if preset not in PRESETS:
        raise ConfigError(f"--preset: {preset!r} is not one of {list(PRESETS)}")
    if not 0.0 < imbalance < 1.0:
        raise ConfigError(f"--imbalance: must be in (0, 1), got {imbalance}")
    if parts == 1:
        return np.zeros(num_vertices, dtype=np.int32)
    init = _initializer(threads)
    mtkahypar.set_seed(int(seed))
    ctx = init.context_from_preset(getattr(mtkahypar.PresetType, preset.upper()))
    ctx.set_partitioning_parameters(int(parts), float(imbalance), mtkahypar.Objective.KM1)
    ctx.logging = False
    hg = init.hypergraph_from_file(str(path), ctx, mtkahypar.FileFormat.HMETIS)
    phg = hg.partition(ctx)
    return np.asarray(phg.get_partition(), dtype=np.int32)


def partition_nets(nets, weights: np.ndarray, parts: int, **kw) -> np.ndarray:
    """Partition the hypergraph given by ``nets`` blocks (see :func:`iter_nets`) and vertex
    ``weights`` through a temporary hMETIS file (removed afterwards)."""
    with tempfile.TemporaryDirectory(prefix="scalegnn-hp-") as tmp:
        path = Path(tmp) / "h.hgr"
        write_hmetis(path, nets, len(weights), weights)
        return partition_hypergraph_file(path, len(weights), parts, **kw)


def assign_hp(graph, parts: int, seed: int = 0, *, imbalance: float = 0.01,
              preset: str = "deterministic", max_entries: int = 1 << 25,
              threads: int | None = None) -> np.ndarray:
    """Column-net hypergraph partition of ``graph`` (KM1 = rows sent per layer), vertex weights
    nnz(row of A + I) of the full graph; graphs over ``max_entries`` entries are sparsified."""
    weights = vertex_weights(graph)
    if parts == 1:
        return np.zeros(graph.num_nodes, dtype=np.int32)
    g = sparsify_for_partitioning(graph, max_entries, seed)
    return partition_nets(iter_nets(g), weights, parts, imbalance=imbalance, seed=seed,
                          preset=preset, threads=threads)
