"""Full-graph inference in row blocks (never a dense adjacency), on one of two paths.

**Layer-wise** (``path="layerwise"``, what ``auto`` picks when it fits the memory budget):
layer by layer, each layer's whole output held. Memory: the features (CSR ones stay CSR: the
first layer multiplies them sparse x dense), the CSR with one float per edge, the current
layer's input and output, plus at most one propagated matrix per hop of order >= 2. Each
layer's output is computed for blocks of ``batch_rows`` rows:
``out[R] = combine(X[R] W_0, Â[R,:] (X W_1 or X) ...)``, so the per-hop intermediate terms exist
only for one block at a time.

**Neighbourhood** (``path="neighbourhood"``, what ``auto`` picks when the widest activation
does not fit: at 2^24 nodes one 1024-wide fp32 activation is 64 GiB): no activation wider than
the graph layers' narrow propagated inputs is ever held whole. A graph layer whose input ``H``
is held keeps only its bases ``B_o = Â^o H`` (or ``Â^o H W_o`` when that is narrower), so its
output rows are a row-wise function ``out[U] = combine(H[U] W_0, B_1[U] (W_1), ...)`` and are
computed on demand; dense (order-0) layers compose row-wise. The last graph layer (order 1) runs
per row block ``R`` of the final output::

    U = {u : Â[R, u] != 0}                  (from the CSR rows of R)
    out[R] = combine(H[R] W_0, (Â[R, U] H[U]) W_1)

with ``H[R]`` and ``H[U]`` recomputed on demand from the held bases, then the remaining dense
layers, the L2 normalize and the classifier for ``R``. For a 2-layer model ``1-1`` this holds
X and ÂX (input width each) and recomputes H1 rows per block; rows of the ``cache_bytes``
worth of highest-degree nodes, which fall in most blocks, are computed once and read in place
(:mod:`scalegnn.engine.neighbourhood`), so the recomputation is about the edge ends that miss
the cache. Blocks are cut so that ``nnz(Â[R, :])`` keeps the recomputed rows and their
temporaries near ``block_bytes``.
A layer that needs a lazy input held whole (a graph layer before the last, or a last one of
order >= 2) holds it if it fits the budget, else the call raises a DataError naming the layer.

Both paths give the same logits up to float rounding (GEMMs on different row sets, and
``(Â H) W`` instead of ``Â (H W)``, the cached and recomputed parts summed separately).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from scalegnn.engine.neighbourhood import memory_budget, neighbourhood_logits
from scalegnn.features import as_feature_store
from scalegnn.graph import Graph
from scalegnn.nn.saint import SAINTLayer
from scalegnn.ops import SparseAdj, spmm
from scalegnn.shard import SINGLE, Shard

DEFAULT_BATCH_ROWS = 65536
PATHS = ("auto", "layerwise", "neighbourhood")
BLOCK_BYTES = 1 << 30          # neighbourhood path: ~bytes of one block's recomputed rows
CACHE_BYTES = 2 << 30          # neighbourhood path: rows of the highest-degree nodes kept
                               # (at most half the memory budget left once the bases exist)


def _gathered(part: torch.Tensor, shard: Shard) -> torch.Tensor:
    """Every rank's rows of ``part`` stacked in rank order (``part`` itself on one rank)."""
    if shard.world == 1:
        return part
    return torch.from_numpy(shard.gather_rows(part.detach().cpu().numpy()))


def _mine(x, adj: SparseAdj, lo: int, hi: int):
    """Rows ``lo:hi`` of ``x`` (a tensor, a feature store or ``adj`` itself); all of it as is."""
    if (lo, hi) == (0, adj.num_rows):
        return x
    return adj.row_block(lo, hi) if x is adj else x[lo:hi]


def _layer_full(layer: SAINTLayer, h: torch.Tensor, adj: SparseAdj, batch_rows: int,
                shard: Shard = SINGLE) -> torch.Tensor:
    """The layer's output for every row; with several ranks each computes its block of rows
    (of the products the propagation needs too) and the blocks are gathered."""
    n = adj.num_rows
    lo, hi = shard.block(n)
    out = torch.empty(hi - lo, layer.output_dim, dtype=layer.weights[0].dtype)  # h may be CSR
    # CSR input (a store, not a tensor): always X W first (the sparse side is X itself)
    narrow = layer.out_dim < layer.in_dim or not isinstance(h, torch.Tensor)
    bases = []  # per hop o >= 1: the matrix whose rows the last Â of Â^o is applied to
    for o in range(1, layer.order + 1):
        b = _gathered(_mine(h, adj, lo, hi) @ layer.weights[o], shard) if narrow else h
        for _ in range(o - 1):
            b = _gathered(spmm(_mine(adj, adj, lo, hi), b), shard)
        bases.append(b)
    for s in range(lo, hi, batch_rows):
        e = min(hi, s + batch_rows)
        block = adj.row_block(s, e)
        terms = [h[s:e] @ layer.weights[0]]
        for o, b in enumerate(bases, start=1):
            t = spmm(block, b)
            terms.append(t if narrow else t @ layer.weights[o])
        out[s - lo:e - lo] = layer.combine(terms)
    return _gathered(out, shard)


def _dense_full(fn, h: torch.Tensor, batch_rows: int, shard: Shard = SINGLE) -> torch.Tensor:
    lo, hi = shard.block(h.shape[0])
    return _gathered(torch.cat([fn(h[s:min(hi, s + batch_rows)])
                                for s in range(lo, hi, batch_rows)]), shard)


def layerwise_bytes(model, num_nodes: int) -> int:
    """Bytes the layer-wise path holds beyond the graph and features: the largest over layers
    of ``N x (input + output + per-hop bases) x 4`` (float32)."""
    worst = 0
    for i, layer in enumerate(model.layers):
        inp = 0 if i == 0 else layer.in_dim   # layer 0 reads the features, already resident
        hops = layer.order * min(layer.in_dim, layer.out_dim)
        worst = max(worst, inp + layer.output_dim + hops)
    return 4 * num_nodes * worst


@torch.no_grad()
def full_graph_logits(model, graph: Graph, features, batch_rows: int = DEFAULT_BATCH_ROWS,
                      adj: SparseAdj | None = None, embeddings: bool = False, *,
                      path: str = "auto", budget: int | None = None,
                      block_bytes: int = BLOCK_BYTES, cache_bytes: int = CACHE_BYTES,
                      stats: dict | None = None, shard: Shard = SINGLE) -> torch.Tensor:
    """Logits of every node of ``graph`` (row-normalized adjacency ``D⁻¹A``, GraphSAINT's
    evaluation operator), computed in row blocks on the path of the module docstring;
    ``embeddings``: the classifier's input instead, ``model.embed`` (L2-normalized rows).

    ``path``: ``auto`` (layer-wise when :func:`layerwise_bytes` <= ``budget``, default
    :func:`memory_budget`), ``layerwise`` or ``neighbourhood``. Models whose layers are not all
    :class:`SAINTLayer` (``model.layerwise`` false: the other families of ``nn/``, PyG models)
    run ``model(features, adj)`` on the whole graph instead (no row blocking). ``stats`` (a
    dict) receives the path taken and, on the neighbourhood path, its progress, block count,
    rows recomputed and edge ends read from the cache. ``shard`` (data-parallel ranks): each rank computes a block of the rows of every
    layer (the neighbourhood path: of the last one) and the blocks are gathered, so every rank
    returns all the logits."""
    if path not in PATHS:
        raise ValueError(f"full_graph_logits: path must be one of {PATHS}, got {path!r}")
    was_training = model.training
    model.eval()
    try:
        if adj is None:
            adj = SparseAdj.from_graph(graph.row_normalized())
        h = as_feature_store(features).as_input()
        if not model.layerwise:
            # other families (GCN, GAT, MixHop, JK, GIN, PyG models): one whole-graph pass
            return model.embed(h, adj) if embeddings else model(h, adj)
        budget = memory_budget() if budget is None else budget
        if path == "auto":
            fits = budget is None or layerwise_bytes(model, adj.num_rows) <= budget
            # every rank takes the same path (their memory may differ)
            fits = not shard.all_reduce_sum(np.array([0 if fits else 1], np.int64))[0]
            path = "layerwise" if fits else "neighbourhood"
        if path == "neighbourhood":
            lo, hi = shard.block(adj.num_rows)
            return _gathered(neighbourhood_logits(
                model, adj, h, embeddings, batch_rows=batch_rows, budget=budget,
                block_bytes=block_bytes, cache_bytes=cache_bytes, stats=stats, rows=(lo, hi)),
                shard)
        if stats is not None:
            stats["path"] = "layerwise"
        for layer in model.layers:
            if layer.order == 0:
                h = _dense_full(layer, h, batch_rows, shard)
            else:
                h = _layer_full(layer, h, adj, batch_rows, shard)
        if embeddings:
            return _dense_full(lambda b: F.normalize(b, p=2, dim=1), h, batch_rows, shard)
        return _dense_full(lambda b: model.classifier(F.normalize(b, p=2, dim=1)), h,
                           batch_rows, shard)
    finally:
        model.train(was_training)
