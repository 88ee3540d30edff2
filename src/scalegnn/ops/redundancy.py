"""Redundancy reduction in neighbour aggregation (SPEC §3.1, thesis §4.3, Algorithms 3-5).

If destinations v1, v2, ... all aggregate both x_u and x_w, the partial sum x_u + x_w can be
computed once as a *virtual node* and read instead of the pair. One round:

1. aggregation graph (Alg. 3): over the columns of Â, pair (u, w) gets weight +1 for every row
   v holding both u and w **with equal values** ``Â[v,u] == Â[v,w]``;
2. greedy matching (Alg. 4): pairs by decreasing weight (ties: smaller (u, w) first), taken
   while weight > θ and neither endpoint is matched yet;
3. rewrite (Alg. 5): each matched pair becomes a new column z = x_u + x_w; in every row where
   both appear with equal value a, the two entries a·x_u + a·x_w become one entry a·x_z.

Rounds repeat on the rewritten matrix (virtual nodes can pair again) up to ``rounds`` times or
until nothing is matched. Then ``Â·X == Â_red · [X; V]`` with ``V = C·X`` (C: the virtual-node
construction matrix, 0/1 rows listing each virtual node's original nodes), computed cheaply
round by round as one addition per virtual node.

**Restriction**: a pair merges only in rows where its two values are equal, so the savings
are real for unit weights (A) or uniform-per-row weights (D⁻¹A, GraphSAINT's operator);
symmetric normalizations D^-1/2 A D^-1/2 or α multipliers make values differ and the method
finds little. With equal values the rewrite is exact in real arithmetic; in floating point
``a·(x_u + x_w)`` may differ from ``a·x_u + a·x_w`` in the last bit (exact for unit weights
and integer-valued features).

Reduction rates (thesis): with numRead = Σ deg, numAdd = Σ_{deg≥1} (deg - 1) and M the
matchings of all rounds, ``γ_read = (numRead(Â_red) + 2Σ|M|) / numRead(Â)`` and
``γ_add = (numAdd(Â_red) + Σ|M|) / numAdd(Â)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numba
import numba as nb
import numpy as np
import torch

from scalegnn.errors import ConfigError
from scalegnn.graph import Graph
from scalegnn.ops.adj import SparseAdj
from scalegnn.ops.spmm import spmm

_JIT = dict(nogil=True, cache=True)


@nb.njit(parallel=True, **_JIT)
def _heavy_pairs(indptr, indices, data, tptr, trow, tpos, theta, bounds, counts, offsets,
                 out_u, out_w, out_wt, fill):
    """Alg. 3 without a hash table: for each column u, walk the rows v holding u (transposed
    CSR: ``trow``, with ``tpos`` the entry's position in row v) and count, in a dense per-thread
    counter, every w > u of row v with ``Â[v,w] == Â[v,u]``. Pairs of weight > θ only are
    kept: count pass (``fill`` False) writes ``counts[u]``; fill pass writes them at
    ``offsets[u]``. Work Σ_v deg(v)², memory O(num_cols) per thread."""
    num_cols = tptr.shape[0] - 1
    for k in nb.prange(bounds.shape[0] - 1):
        cnt = np.zeros(num_cols, dtype=np.int64)
        touched = np.empty(num_cols, dtype=np.int64)
        for u in range(bounds[k], bounds[k + 1]):
            nt = 0
            for q in range(tptr[u], tptr[u + 1]):
                v = trow[q]
                val = data[tpos[q]]
                for e in range(indptr[v], indptr[v + 1]):
                    w = indices[e]
                    if w > u and data[e] == val:
                        if cnt[w] == 0:
                            touched[nt] = w
                            nt += 1
                        cnt[w] += 1
            c = 0
            for t in range(nt):
                w = touched[t]
                if cnt[w] > theta:
                    if fill:
                        out_u[offsets[u] + c] = u
                        out_w[offsets[u] + c] = w
                        out_wt[offsets[u] + c] = cnt[w]
                    c += 1
                cnt[w] = 0
            counts[u] = c


def aggregation_pairs(indptr, indices, data, num_cols: int, theta: float):
    """(u, w, weight) of every aggregation-graph edge with weight > θ, u < w."""
    gt = Graph(indptr, indices, num_cols, np.arange(indices.shape[0], dtype=np.int64),
               validate=False).transpose()
    p = max(1, numba.get_num_threads())
    bounds = np.linspace(0, num_cols, p + 1).astype(np.int64)
    counts = np.zeros(num_cols, dtype=np.int64)
    e64, ei = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    _heavy_pairs(indptr, indices, data, gt.indptr, gt.indices, gt.data, theta, bounds, counts,
                 counts, e64, ei, e64, False)
    offsets = np.zeros(num_cols, dtype=np.int64)
    np.cumsum(counts[:-1], out=offsets[1:])
    total = int(counts.sum())
    u, w, wt = (np.empty(total, dtype=np.int64) for _ in range(3))
    _heavy_pairs(indptr, indices, data, gt.indptr, gt.indices, gt.data, theta, bounds, counts,
                 offsets, u, w, wt, True)
    return u, w, wt


@nb.njit(**_JIT)
def _greedy_match(u, w, order, num_cols):
    """Alg. 4 over pairs in ``order`` (weight desc, then (u, w) asc); returns (k, 2) pairs."""
    used = np.zeros(num_cols, dtype=np.bool_)
    out = np.empty((order.shape[0], 2), dtype=np.int64)
    k = 0
    for t in range(order.shape[0]):
        i = order[t]
        if used[u[i]] or used[w[i]]:
            continue
        used[u[i]] = True
        used[w[i]] = True
        out[k, 0] = u[i]
        out[k, 1] = w[i]
        k += 1
    return out[:k]


@nb.njit(**_JIT)
def _rewrite(indptr, indices, data, num_cols, pairs):
    """Alg. 5: replace (u, w) by virtual column num_cols + k in rows holding both equally."""
    n = indptr.shape[0] - 1
    partner = np.full(num_cols, -1, dtype=np.int64)
    pair_id = np.full(num_cols, -1, dtype=np.int64)
    for k in range(pairs.shape[0]):
        u, w = pairs[k, 0], pairs[k, 1]
        partner[u], partner[w] = w, u
        pair_id[u], pair_id[w] = k, k
    new_ptr = np.zeros(n + 1, dtype=np.int64)
    new_idx = np.empty(indices.shape[0], dtype=np.int64)
    new_val = np.empty(data.shape[0], dtype=data.dtype)
    drop = np.zeros(indices.shape[0], dtype=np.bool_)
    pos = np.full(num_cols, -1, dtype=np.int64)     # column -> its entry in the current row
    m = 0
    for v in range(n):
        a, b = indptr[v], indptr[v + 1]
        for p in range(a, b):
            pos[indices[p]] = p
        start = m
        for p in range(a, b):
            if drop[p]:
                continue
            u = indices[p]
            w = partner[u]
            q = pos[w] if w >= 0 else -1
            if q >= 0 and q != p and not drop[q] and data[q] == data[p]:
                drop[q] = True
                new_idx[m] = num_cols + pair_id[u]
            else:
                new_idx[m] = u
            new_val[m] = data[p]
            m += 1
        for p in range(a, b):
            pos[indices[p]] = -1
        # keep rows sorted by column (virtual ids sort after all earlier columns)
        order = np.argsort(new_idx[start:m], kind="mergesort")
        new_idx[start:m] = new_idx[start:m][order]
        new_val[start:m] = new_val[start:m][order]
        new_ptr[v + 1] = m
    return new_ptr, new_idx[:m].copy(), new_val[:m].copy()


def num_reads(indptr) -> int:
    """Vector reads of a traversal of the neighbour lists: Σ deg."""
    return int(indptr[-1])


def num_adds(indptr) -> int:
    """Vector additions: Σ_{deg ≥ 1} (deg − 1)."""
    deg = np.diff(indptr)
    return int(np.maximum(deg - 1, 0).sum())


@dataclass
class ReducedAdj:
    """``Â`` rewritten over ``[X; V]``: ``adj`` is rows x (num_cols + K); ``pairs[r]`` lists round
    r's virtual nodes as (k_r, 2) ids into the columns that existed before round r;
    ``construction`` is the K x num_cols 0/1 matrix with V = C·X."""
    adj: SparseAdj
    pairs: list
    construction: SparseAdj
    num_cols: int
    gamma_read: float
    gamma_add: float
    matched_per_round: list = field(default_factory=list)

    @property
    def num_virtual(self) -> int:
        return self.adj.num_cols - self.num_cols

    def extend(self, x: torch.Tensor) -> torch.Tensor:
        """``[X; V]``, one vector addition per virtual node (differentiable)."""
        for pr in self.pairs:
            idx = torch.from_numpy(pr).to(x.device)
            x = torch.cat([x, x.index_select(0, idx[:, 0]) + x.index_select(0, idx[:, 1])])
        return x

    def apply(self, x: torch.Tensor) -> torch.Tensor:
        """``Â·X`` through the reduced matrix."""
        return spmm(self.adj, self.extend(x))


def reduce_redundancy(adj: SparseAdj, theta: float = 2, rounds: int = 5) -> ReducedAdj:
    """Rewrite ``adj`` with virtual nodes for heavy neighbour pairs (module docstring).

    Cost per round O(Σ_v deg(v)²) time (the aggregation graph is never stored: only pairs of
    weight > θ are materialized) and O(num_cols) memory per thread."""
    if rounds < 0:
        raise ConfigError(f"reduce_redundancy: rounds must be >= 0, got {rounds}")
    indptr, indices, data = adj.indptr, adj.indices.astype(np.int64), adj.data
    cols = adj.num_cols
    all_pairs, matched = [], []
    for _ in range(rounds):
        u, w, wt = aggregation_pairs(indptr, indices, data, cols, theta)
        if u.size == 0:
            break
        pairs = _greedy_match(u, w, np.lexsort((w, u, -wt)), cols)
        indptr, indices, data = _rewrite(indptr, indices, data, cols, pairs)
        all_pairs.append(pairs)
        matched.append(int(pairs.shape[0]))
        cols += pairs.shape[0]
    num_m = sum(matched)
    reads0, adds0 = num_reads(adj.indptr), num_adds(adj.indptr)
    gamma_read = (num_reads(indptr) + 2 * num_m) / reads0 if reads0 else 1.0
    gamma_add = (num_adds(indptr) + num_m) / adds0 if adds0 else 1.0
    red = SparseAdj(indptr, indices.astype(adj.indices.dtype), data, cols)
    return ReducedAdj(red, all_pairs, _construction(adj.num_cols, all_pairs, adj.data.dtype),
                      adj.num_cols, gamma_read, gamma_add, matched)


def _construction(num_cols: int, all_pairs: list, dtype) -> SparseAdj:
    """K x num_cols matrix whose row k sums the original nodes under virtual node k."""
    virtual, rows = {}, []

    def leaves(i):
        return virtual[i] if i >= num_cols else np.array([i])

    for pairs in all_pairs:
        for u, w in pairs:
            lv = np.sort(np.concatenate([leaves(u), leaves(w)]))
            virtual[num_cols + len(rows)] = lv
            rows.append(lv)
    indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    if rows:
        indptr[1:] = np.cumsum([r.size for r in rows])
        idx = np.concatenate(rows)
    else:
        idx = np.zeros(0, dtype=np.int64)
    return SparseAdj(indptr, idx.astype(np.int32), np.ones(idx.size, dtype=dtype), num_cols)
