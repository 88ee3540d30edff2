"""The neighbourhood path of full-graph inference (see :mod:`scalegnn.engine.evaluate`).

A matrix that is never held whole is a :class:`Rows`: its width and a function giving any set
of its rows. Held matrices (the features, a layer's bases ``Â^o H``) are gathered from;
row-wise layers compose; the last graph layer runs per row block ``R`` on ``U = R ∪ N(R)``::

    out[R] = combine(H[R] W_0, (Â[R, C] H_C + Â[R, M] H[M]) W_1)

``H_C``: the rows of the highest-degree nodes ``C`` (those in most neighbourhoods; on R-MAT
graphs the top 6% of nodes hold ~80% of the edge ends), computed once into a cache of
``cache_bytes``; ``M``: the block's other neighbours, whose rows are recomputed for the block
(as are ``H[R]``). The two SpMMs read the cache and the block's rows in place.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from scalegnn import memory
from scalegnn.errors import DataError
from scalegnn.nn.saint import SAINTLayer
from scalegnn.ops import SparseAdj, spmm

BUDGET_FRACTION = 0.7   # of the available memory, for what the evaluation itself holds
_TEMPS = 3   # a recomputed row exists ~3 times at once (hop terms, their tails, the concat)


def memory_budget() -> int | None:
    """:data:`BUDGET_FRACTION` of the available memory (None: unknown, anything fits)."""
    avail = memory.available_memory()
    return None if avail is None else int(BUDGET_FRACTION * avail)


class Rows:
    """``width`` columns of ``num_rows`` rows; ``fn(idx)`` returns rows ``idx`` (sorted int64
    array) as a tensor; ``held`` is the whole matrix when it exists."""

    def __init__(self, width: int, fn, held=None):
        self.width, self.fn, self.held = int(width), fn, held

    @classmethod
    def of(cls, h) -> Rows:
        return cls(h.shape[1], lambda idx: _gather(h, idx), held=h)


def _gather(h, idx: np.ndarray):
    """Rows ``idx`` of a held input: a tensor, or a feature store (CSR rows stay CSR)."""
    if isinstance(h, torch.Tensor):
        return h.index_select(0, torch.from_numpy(idx))
    return h.gather(idx)


def _gib(b: float) -> str:
    return f"{b / 2**30:.1f} GiB"


def hold(src: Rows, n: int, batch_rows: int, budget: int | None, what: str):
    """The whole matrix of ``src`` (computed in row blocks when it is not held yet); a
    DataError naming ``what`` when it exceeds ``budget`` bytes."""
    if src.held is not None:
        return src.held
    need = 4 * n * src.width
    if budget is not None and need > budget:
        raise DataError(f"full-graph evaluation: {what} ({n} x {src.width} float32, "
                        f"{_gib(need)}) must be held whole but exceeds the memory budget "
                        f"({_gib(budget)}); only the input of the last graph layer (order 1) "
                        f"is recomputed per block")
    out = torch.empty(n, src.width)
    for s in range(0, n, batch_rows):
        out[s:s + batch_rows] = src.fn(np.arange(s, min(n, s + batch_rows), dtype=np.int64))
    return out


def dense(layer: SAINTLayer, src: Rows) -> Rows:
    """An order-0 layer applied row-wise on demand."""
    return Rows(layer.output_dim, lambda idx: layer(src.fn(idx)))


def graph_rows(layer: SAINTLayer, h, adj: SparseAdj, budget: int | None) -> Rows:
    """A graph layer over a held input ``h``: its bases ``B_o = Â^o h`` (or ``Â^o h W_o`` when
    narrower) are held, its output rows ``combine(h[U] W_0, B_o[U] (W_o))`` made on demand."""
    narrow = layer.out_dim < layer.in_dim or not isinstance(h, torch.Tensor)  # CSR: X W first
    width = layer.out_dim if narrow else h.shape[1]
    need = 4 * adj.num_rows * width * layer.order
    if budget is not None and need > budget:
        raise DataError(f"full-graph evaluation: the propagated inputs of a {layer.in_dim}->"
                        f"{layer.out_dim} layer of order {layer.order} ({_gib(need)}) exceed the "
                        f"memory budget ({_gib(budget)})")
    bases = []
    for o in range(1, layer.order + 1):
        b = h @ layer.weights[o] if narrow else h
        for _ in range(o):
            b = spmm(adj, b)
        bases.append(b)

    def fn(idx):
        ti = torch.from_numpy(idx)
        terms = [_gather(h, idx) @ layer.weights[0]]
        for o, b in enumerate(bases, start=1):
            t = b.index_select(0, ti)
            terms.append(t if narrow else t @ layer.weights[o])
        return layer.combine(terms)

    return Rows(layer.output_dim, fn)


class _Cache:
    """Rows of ``src`` for the ``cache_bytes`` worth of highest-degree nodes, computed once;
    ``slot[v]`` is v's row in ``rows`` (-1: not cached)."""

    def __init__(self, src: Rows, adj: SparseAdj, cache_bytes: int, batch_rows: int):
        n = adj.num_rows
        k = min(n, max(0, int(cache_bytes) // (4 * src.width)))
        self.rows, self.slot = None, None
        if k == 0:
            return
        deg = np.diff(adj.indptr)
        hubs = np.arange(n) if k == n else np.sort(np.argpartition(-deg, k - 1)[:k])
        self.rows = torch.empty(k, src.width)
        for s in range(0, k, batch_rows):
            self.rows[s:s + batch_rows] = src.fn(hubs[s:s + batch_rows].astype(np.int64))
        self.slot = np.full(n, -1, dtype=np.int64)
        self.slot[hubs] = np.arange(k)


def _propagate(block: SparseAdj, src: Rows, cache: _Cache, stats: dict) -> torch.Tensor:
    """``Â[R, :] H`` for a row block: entries whose column is cached multiply the cache
    directly; the other columns' rows ``H[M]`` (M unique) are computed for this block."""
    cols, data, dtype = block.indices, block.data, block.indices.dtype
    if cache.rows is None:
        hit = np.zeros(cols.size, dtype=bool)
    else:
        slot = cache.slot[cols]
        hit = slot >= 0
    out = None
    if hit.any():
        c = np.concatenate([[0], np.cumsum(hit)])
        sub = SparseAdj(c[block.indptr], slot[hit].astype(dtype), data[hit], cache.rows.shape[0])
        out = spmm(sub, cache.rows)
        stats["cached_rows"] += int(c[-1])
        miss = ~hit
        indptr = block.indptr - c[block.indptr]
        mcols, mdata = cols[miss], data[miss]
    else:
        indptr, mcols, mdata = block.indptr, cols, data
    if mcols.size:
        uniq = np.unique(mcols)
        sub = SparseAdj(indptr, np.searchsorted(uniq, mcols).astype(dtype), mdata, uniq.size)
        part = spmm(sub, src.fn(uniq.astype(np.int64)))
        stats["recomputed_rows"] += int(uniq.size)
        out = part if out is None else out.add_(part)
    if out is None:
        out = torch.zeros(block.num_rows, src.width)
    return out


def _block_stops(indptr: np.ndarray, nnz_budget: int, batch_rows: int, lo: int = 0,
                 hi: int | None = None):
    """(start, stop) row blocks of rows ``lo:hi`` (default all) with ``nnz <= nnz_budget`` (at
    least one row) and at most ``batch_rows`` rows each."""
    n, s = indptr.shape[0] - 1 if hi is None else hi, lo
    while s < n:
        e = int(np.searchsorted(indptr, indptr[s] + nnz_budget, side="right")) - 1
        e = min(max(e, s + 1), n, s + batch_rows)
        yield s, e
        s = e


def neighbourhood_logits(model, adj: SparseAdj, h, embeddings: bool, *, batch_rows: int,
                         budget: int | None, block_bytes: int, cache_bytes: int,
                         stats: dict | None = None, rows: tuple[int, int] | None = None
                         ) -> torch.Tensor:
    """Logits (or embeddings) of every row of ``adj`` on the neighbourhood path (module doc);
    ``stats`` receives the block count, the rows recomputed and the edge ends read from the
    cache, and ``rows_done`` of ``rows`` as the blocks finish. ``rows`` = ``(lo, hi)``: only
    those output rows (one data-parallel rank's block), in order."""
    layers, n = list(model.layers), adj.num_rows
    lo, hi = rows or (0, n)
    st = stats if stats is not None else {}   # updated as blocks finish (progress)
    st.update(path="neighbourhood", blocks=0, recomputed_rows=0, cached_rows=0, cache_rows=0,
              rows_done=0, rows=hi - lo)
    graph_idx = [i for i, layer in enumerate(layers) if layer.order > 0]
    last = graph_idx[-1] if graph_idx else len(layers)
    src = Rows.of(h)
    for i, layer in enumerate(layers[:last]):
        if layer.order == 0:
            src = dense(layer, src)
        else:
            held = hold(src, n, batch_rows, budget, f"the input of layer {i + 1}")
            src = graph_rows(layer, held, adj, budget)
    tail = layers[last + 1:]

    def finish(z):
        for layer in tail:
            z = layer(z)
        z = F.normalize(z, p=2, dim=1)
        return z if embeddings else model.classifier(z)

    out = None

    def put(s, e, z):
        nonlocal out
        if out is None:
            out = torch.empty(hi - lo, z.shape[1], dtype=z.dtype)
        out[s - lo:e - lo] = z

    g = layers[last] if last < len(layers) else None
    if g is not None and (g.order > 1 or src.held is not None):
        src = graph_rows(g, hold(src, n, batch_rows, budget, f"the input of layer {last + 1}"),
                         adj, budget)
        g = None
    if g is None:  # every remaining layer is row-wise
        for s in range(lo, hi, batch_rows):
            idx = np.arange(s, min(hi, s + batch_rows), dtype=np.int64)
            put(s, idx[-1] + 1, finish(src.fn(idx)))
            st["blocks"] += 1
            st["rows_done"] = int(idx[-1]) + 1 - lo
    else:
        if budget is None:  # what is left now that the bases exist
            live = memory_budget()
            if live is not None:
                cache_bytes = min(cache_bytes, live // 2)
        cache = _Cache(src, adj, cache_bytes, batch_rows)
        st["cache_rows"] = 0 if cache.rows is None else cache.rows.shape[0]
        nnz_budget = max(1, int(block_bytes) // (4 * _TEMPS * src.width))
        for s, e in _block_stops(adj.indptr, nnz_budget, batch_rows, lo, hi):
            own = src.fn(np.arange(s, e, dtype=np.int64))
            st["recomputed_rows"] += e - s
            hop = _propagate(adj.row_block(s, e), src, cache, st)
            z = g.combine([own @ g.weights[0], hop @ g.weights[1]])
            put(s, e, finish(z))
            st["blocks"] += 1
            st["rows_done"] = e - lo
    return out

