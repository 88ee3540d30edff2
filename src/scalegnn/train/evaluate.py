"""Full-graph inference, layer by layer in row blocks (never a dense adjacency).

Memory: the features (CSR ones stay CSR: the first layer multiplies them sparse x dense),
the CSR with one float per edge, the current layer's input and output,
plus at most one propagated matrix per hop of order >= 2. Each layer's output is computed for
blocks of ``batch_rows`` rows: ``out[R] = combine(X[R] W_0, Â[R,:] (X W_1 or X) ...)``, so the
per-hop intermediate terms exist only for one block at a time.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch
import torch.nn.functional as F

from scalegnn.features import SparseFeatures
from scalegnn.graph import Graph
from scalegnn.nn.saint import SAINTLayer
from scalegnn.ops import SparseAdj, spmm

DEFAULT_BATCH_ROWS = 65536


def row_block(adj: SparseAdj, start: int, stop: int) -> SparseAdj:
    """Rows ``start:stop`` of ``adj`` as a rectangular SparseAdj sharing its arrays."""
    a, b = adj.indptr[start], adj.indptr[stop]
    return SparseAdj(adj.indptr[start:stop + 1] - a, adj.indices[a:b], adj.data[a:b], adj.num_cols)


def as_tensor(features) -> torch.Tensor | SparseFeatures:
    """Zero-copy tensor over a numpy array or read-only memmap (never written to); CSR
    features are the model's input as they are."""
    if isinstance(features, SparseFeatures):
        return features
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # read-only memmap: we only read it
        return torch.from_numpy(np.asarray(features))


def _layer_full(layer: SAINTLayer, h: torch.Tensor, adj: SparseAdj, batch_rows: int) -> torch.Tensor:
    n = adj.num_rows
    out = torch.empty(n, layer.output_dim, dtype=layer.weights[0].dtype)  # h may be CSR
    # CSR input: always X W first (the sparse side of the product is X itself)
    narrow = layer.out_dim < layer.in_dim or isinstance(h, SparseFeatures)
    bases = []  # per hop o >= 1: the matrix whose rows the last Â of Â^o is applied to
    for o in range(1, layer.order + 1):
        b = h @ layer.weights[o] if narrow else h
        for _ in range(o - 1):
            b = spmm(adj, b)
        bases.append(b)
    for s in range(0, n, batch_rows):
        e = min(n, s + batch_rows)
        block = row_block(adj, s, e)
        terms = [h[s:e] @ layer.weights[0]]
        for o, b in enumerate(bases, start=1):
            t = spmm(block, b)
            terms.append(t if narrow else t @ layer.weights[o])
        out[s:e] = layer.combine(terms)
    return out


def _dense_full(fn, h: torch.Tensor, batch_rows: int) -> torch.Tensor:
    return torch.cat([fn(h[s:s + batch_rows]) for s in range(0, h.shape[0], batch_rows)])


@torch.no_grad()
def full_graph_logits(model, graph: Graph, features, batch_rows: int = DEFAULT_BATCH_ROWS,
                      adj: SparseAdj | None = None, embeddings: bool = False) -> torch.Tensor:
    """Logits of every node of ``graph`` (row-normalized adjacency ``D⁻¹A``, GraphSAINT's
    evaluation operator), computed layer by layer in blocks of ``batch_rows`` rows;
    ``embeddings``: the classifier's input instead, ``model.embed`` (L2-normalized rows).

    Models whose layers are not all :class:`SAINTLayer` (the other families of ``nn/``) run
    ``model(features, adj)`` on the whole graph instead (no row blocking)."""
    was_training = model.training
    model.eval()
    try:
        if adj is None:
            adj = SparseAdj.from_graph(graph.row_normalized())
        h = as_tensor(features)
        if not all(isinstance(layer, SAINTLayer) for layer in model.layers):
            # other families (GCN, GAT, MixHop, JK, GIN): one whole-graph forward pass
            return model.embed(h, adj) if embeddings else model(h, adj)
        for layer in model.layers:
            if layer.order == 0:
                h = _dense_full(layer, h, batch_rows)
            else:
                h = _layer_full(layer, h, adj, batch_rows)
        if embeddings:
            return _dense_full(lambda b: F.normalize(b, p=2, dim=1), h, batch_rows)
        return _dense_full(lambda b: model.classifier(F.normalize(b, p=2, dim=1)), h, batch_rows)
    finally:
        model.train(was_training)
