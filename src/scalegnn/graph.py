"""The one graph type: a CSR adjacency pattern, optionally with per-edge values.

``Graph`` serves every mode: a whole graph, a sampled subgraph, a block-diagonal batch of
per-target subgraphs, and a partition's rectangular local matrix whose extra columns
(``num_cols > num_nodes``) are boundary nodes owned by other ranks.

Invariants (checked by :meth:`Graph.validate`): ``indptr`` is int64, monotone, starts at 0 and
ends at ``len(indices)``; ``indices`` are int32 when ``num_cols`` fits, else int64, and lie in
``[0, num_cols)``; ``data``, when present, has one float per edge.
"""

from __future__ import annotations

import numpy as np

from scalegnn import _graph_kernels as K
from scalegnn.errors import GraphError

_INT32_MAX = np.iinfo(np.int32).max


def index_dtype(num_cols: int):
    """int32 where every column id fits, else int64."""
    return np.int32 if num_cols <= _INT32_MAX else np.int64


class Graph:
    """CSR graph with ``num_nodes`` rows and ``num_cols`` columns (square unless stated)."""

    __slots__ = ("indptr", "indices", "data", "num_cols")

    def __init__(self, indptr, indices, num_cols: int | None = None, data=None, *,
                 validate: bool = True, name: str = "graph"):
        indptr = np.ascontiguousarray(indptr, dtype=np.int64)
        n = indptr.shape[0] - 1
        if indptr.ndim != 1 or n < 0:
            raise GraphError(f"{name}: indptr must be a 1-D array of length num_nodes+1")
        self.num_cols = int(n if num_cols is None else num_cols)
        want = index_dtype(self.num_cols)
        indices = np.asarray(indices)
        if indices.dtype != want:
            if not np.issubdtype(indices.dtype, np.integer):
                raise GraphError(f"{name}: indices must be integers, got {indices.dtype}")
            if validate and indices.size and indices.itemsize > np.dtype(want).itemsize:
                hi = int(indices.max())  # check before narrowing: a cast would wrap it
                if hi >= self.num_cols:
                    raise GraphError(f"{name}: node id {hi} out of range for "
                                     f"{self.num_cols} columns")
            indices = indices.astype(want)
        self.indptr = indptr
        self.indices = np.ascontiguousarray(indices)
        self.data = None if data is None else np.ascontiguousarray(data)
        if validate:
            self.validate(name)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_edges(cls, src, dst, num_nodes: int | None = None, *, symmetrize: bool = True,
                   deduplicate: bool = True, remove_self_loops: bool = True,
                   name: str = "edges") -> "Graph":
        """Build a sorted CSR from an edge list (u -> v for each pair).

        Memory: the result's indices plus the row counters; the edge list itself is not copied
        when it already has an integer dtype.
        """
        src = np.asarray(src)
        dst = np.asarray(dst)
        if src.shape != dst.shape or src.ndim != 1:
            raise GraphError(f"{name}: source and destination arrays must be 1-D of equal length, "
                             f"got {src.shape} and {dst.shape}")
        for arr in (src, dst):
            if arr.size and not np.issubdtype(arr.dtype, np.integer):
                if not np.all(np.mod(arr, 1) == 0):
                    raise GraphError(f"{name}: node ids must be integers")
        src = src.astype(np.int64, copy=False) if not np.issubdtype(src.dtype, np.integer) else src
        dst = dst.astype(np.int64, copy=False) if not np.issubdtype(dst.dtype, np.integer) else dst
        lo = min(int(src.min()), int(dst.min())) if src.size else 0
        hi = max(int(src.max()), int(dst.max())) if src.size else -1
        if lo < 0:
            raise GraphError(f"{name}: negative node id {lo}")
        if num_nodes is None:
            num_nodes = hi + 1
        elif hi >= num_nodes:
            raise GraphError(f"{name}: node id {hi} out of range for {num_nodes} nodes")
        indptr = np.zeros(num_nodes + 1, dtype=np.int64)
        K.add_degree_counts(src, dst, indptr, symmetrize)
        np.cumsum(indptr, out=indptr)
        indices = np.empty(indptr[-1], dtype=index_dtype(num_nodes))
        K.scatter_with_cursor(src, dst, indptr[:-1].copy(), indices, symmetrize)
        g = cls(indptr, indices, num_nodes, validate=False)
        return g._sorted_inplace(deduplicate, remove_self_loops)

    @classmethod
    def from_scipy(cls, mat, *, name: str = "matrix", keep_data: bool = False) -> "Graph":
        """From any scipy.sparse matrix (converted to CSR); values kept only if ``keep_data``."""
        import scipy.sparse as sp
        if not sp.issparse(mat):
            raise GraphError(f"{name}: expected a scipy.sparse matrix, got {type(mat).__name__}")
        csr = mat.tocsr()
        if keep_data:
            csr = csr.copy()
            csr.sum_duplicates()
        elif not csr.has_sorted_indices:
            if csr is mat:  # never sort the caller's matrix in place
                csr = csr.copy()
            csr.sort_indices()
        mat = csr
        data = np.asarray(mat.data) if keep_data else None
        return cls(mat.indptr, mat.indices, mat.shape[1], data, name=name) \
            .check_rows(mat.shape[0], name)

    @classmethod
    def from_torch(cls, t, num_nodes: int | None = None, **kw) -> "Graph":
        """From a 2 x E ``edge_index`` tensor or a torch sparse (COO/CSR) tensor."""
        import torch
        keep_data = kw.pop("keep_data", False)
        t = t.detach().cpu()  # CUDA tensors too
        if t.layout == torch.sparse_csr:
            return cls(t.crow_indices().numpy(), t.col_indices().numpy(), t.shape[1],
                       t.values().numpy() if keep_data else None)
        if t.layout == torch.sparse_coo:
            t = t.coalesce()
            idx = t.indices().numpy()
            return cls.from_edges(idx[0], idx[1], t.shape[0], symmetrize=False,
                                  deduplicate=True, remove_self_loops=False)
        t = t.numpy()
        if t.ndim != 2 or t.shape[0] != 2:
            raise GraphError(f"edge_index must have shape (2, E), got {tuple(t.shape)}")
        return cls.from_edges(t[0], t[1], num_nodes, **kw)

    def check_rows(self, n: int, name: str) -> "Graph":
        if self.num_nodes != n:
            raise GraphError(f"{name}: has {self.num_nodes} rows, expected {n}")
        return self

    # ------------------------------------------------------------------ properties
    @property
    def num_nodes(self) -> int:
        """Number of rows (the nodes this graph owns)."""
        return self.indptr.shape[0] - 1

    @property
    def num_edges(self) -> int:
        """Number of stored (directed) entries."""
        return int(self.indices.shape[0])

    @property
    def shape(self) -> tuple[int, int]:
        return self.num_nodes, self.num_cols

    @property
    def nbytes(self) -> int:
        b = self.indptr.nbytes + self.indices.nbytes
        return b + (self.data.nbytes if self.data is not None else 0)

    def degrees(self) -> np.ndarray:
        """Row lengths (out-degrees) as a new int64 array. Not cached: at 2^24 nodes a kept
        copy is 128 MiB that only setup code (samplers, normalization) reads, once."""
        return np.diff(self.indptr)

    def __repr__(self) -> str:
        rect = "" if self.num_cols == self.num_nodes else f", num_cols={self.num_cols}"
        return f"Graph(num_nodes={self.num_nodes}, num_edges={self.num_edges}{rect})"

    # ------------------------------------------------------------------ validation
    def validate(self, name: str = "graph") -> "Graph":
        if self.indptr[0] != 0:
            raise GraphError(f"{name}: indptr must start at 0, got {self.indptr[0]}")
        if self.indptr[-1] != self.indices.shape[0]:
            raise GraphError(f"{name}: indptr ends at {self.indptr[-1]} but there are "
                             f"{self.indices.shape[0]} indices")
        if self.indices.ndim != 1:
            raise GraphError(f"{name}: indices must be 1-D")
        code, pos = K.check_csr(self.indptr, self.indices, self.num_cols)
        if code == 1:
            raise GraphError(f"{name}: indptr is not monotone at row {pos}")
        if code == 2:
            raise GraphError(f"{name}: negative node id {self.indices[pos]} at entry {pos}")
        if code == 3:
            raise GraphError(f"{name}: node id {self.indices[pos]} at entry {pos} out of range "
                             f"for {self.num_cols} columns")
        if self.data is not None and self.data.shape != self.indices.shape:
            raise GraphError(f"{name}: data has shape {self.data.shape}, expected "
                             f"{self.indices.shape}")
        return self

    def is_sorted(self) -> bool:
        """True if every neighbour list is sorted ascending."""
        return bool(K.rows_sorted(self.indptr, self.indices))

    def is_symmetric(self) -> bool:
        """True for a square pattern where (u, v) in E implies (v, u) in E."""
        if self.num_cols != self.num_nodes:
            return False
        g = self if self.is_sorted() else self.sort_indices()
        return bool(K.is_symmetric_pattern(g.indptr, g.indices))

    # ------------------------------------------------------------------ transformations
    def _sorted_inplace(self, dedupe: bool, drop_self_loops: bool) -> "Graph":
        if self.data is not None:
            raise GraphError("sorting/deduplicating a graph with edge data is not supported; "
                             "use from_scipy(keep_data=True)")
        lengths = K.sort_dedupe_rows(self.indptr, self.indices, dedupe, drop_self_loops)
        self.indptr = K.compact_rows(self.indptr, self.indices, lengths)
        if self.indptr[-1] != self.indices.shape[0]:
            self.indices = self.indices[: self.indptr[-1]].copy()
        return self

    def _copy_pattern(self) -> "Graph":
        return Graph(self.indptr.copy(), self.indices.copy(), self.num_cols, validate=False)

    def sort_indices(self) -> "Graph":
        """Copy with each neighbour list sorted (edge data dropped)."""
        return self._copy_pattern()._sorted_inplace(False, False)

    def deduplicate(self) -> "Graph":
        """Copy with sorted neighbour lists and duplicate edges removed."""
        return self._copy_pattern()._sorted_inplace(True, False)

    def remove_self_loops(self) -> "Graph":
        return self._copy_pattern()._sorted_inplace(False, True)

    def add_self_loops(self) -> "Graph":
        """Copy with exactly one (u, u) entry per row (square graphs only)."""
        self._require_square("add_self_loops")
        src, dst = self.edge_index()
        n = self.num_nodes
        diag = np.arange(n, dtype=src.dtype)
        return Graph.from_edges(np.concatenate([src, diag]), np.concatenate([dst, diag]), n,
                                symmetrize=False, deduplicate=True, remove_self_loops=False)

    def symmetrize(self) -> "Graph":
        """Copy with (v, u) added for every (u, v); sorted and deduplicated."""
        self._require_square("symmetrize")
        src, dst = self.edge_index()
        return Graph.from_edges(src, dst, self.num_nodes, symmetrize=True, deduplicate=True,
                                remove_self_loops=False)

    def _require_square(self, what: str):
        if self.num_cols != self.num_nodes:
            raise GraphError(f"{what} needs a square graph, got shape {self.shape}")

    def with_data(self, data) -> "Graph":
        """Same pattern (shared arrays) with new per-edge values."""
        g = Graph(self.indptr, self.indices, self.num_cols, data, validate=False)
        if g.data.shape != g.indices.shape:
            raise GraphError(f"edge data has shape {g.data.shape}, expected {g.indices.shape}")
        return g

    def row_normalized(self, degrees=None, dtype=np.float32) -> "Graph":
        """Same pattern with data = 1/deg(row); ``degrees`` defaults to the row lengths."""
        deg = self.degrees() if degrees is None else np.asarray(degrees)
        inv = np.zeros(self.num_nodes, dtype=dtype)
        nz = deg > 0
        inv[nz] = 1.0 / deg[nz]
        return self.with_data(np.repeat(inv, np.diff(self.indptr)))

    def induced_subgraph(self, nodes) -> tuple["Graph", np.ndarray]:
        """Subgraph induced by ``nodes`` (made sorted and unique) and each edge's parent id.

        Returns ``(sub, edge_ids)``: ``sub`` has local ids in the order of ``np.unique(nodes)``,
        and ``edge_ids[e]`` is the position in this graph of the subgraph's edge ``e`` (so
        ``self.indices[edge_ids] == nodes[sub.indices]``). Edge data, if any, is carried over.
        """
        self._require_square("induced_subgraph")
        nodes = np.unique(np.asarray(nodes, dtype=np.int64))
        if nodes.size and (nodes[0] < 0 or nodes[-1] >= self.num_nodes):
            raise GraphError(f"induced_subgraph: node ids must lie in [0, {self.num_nodes})")
        nodes = nodes.astype(self.indices.dtype)
        indptr, indices, eids = K.induced_subgraph(self.indptr, self.indices, nodes)
        data = None if self.data is None else self.data[eids]
        return Graph(indptr, indices, nodes.shape[0], data, validate=False), eids

    def transpose_permutation(self) -> np.ndarray:
        """``perm`` with ``data_T = data[perm]`` for a symmetric pattern with sorted rows.

        The transpose then shares ``indptr``/``indices`` with this graph (journal Alg. 6).
        """
        return K.symmetric_transpose_perm(self.indptr, self.indices)

    def transpose(self) -> "Graph":
        """The transpose (num_cols x num_nodes), data permuted along; O(|V| + |E|)."""
        indptr, indices, perm = K.general_transpose(self.indptr, self.indices, self.num_cols)
        data = None if self.data is None else self.data[perm]
        return Graph(indptr, indices, self.num_nodes, data, validate=False)

    # ------------------------------------------------------------------ conversion
    def edge_index(self) -> tuple[np.ndarray, np.ndarray]:
        """(src, dst) arrays of every stored entry, row-major."""
        src = np.repeat(np.arange(self.num_nodes, dtype=self.indices.dtype), self.degrees())
        return src, self.indices.copy()

    def to_scipy(self, dtype=np.float32):
        """scipy.sparse.csr_matrix (data = stored values, or ones).

        Shares ``indices`` with this graph only when rows are sorted and duplicate-free:
        scipy sums duplicates / sorts *in place* on many operations, which would corrupt a
        shared non-canonical pattern, so then it gets copies.
        """
        import scipy.sparse as sp
        data = self.data if self.data is not None else np.ones(self.num_edges, dtype=dtype)
        indptr, indices = self.indptr, self.indices
        if not K.rows_strictly_sorted(indptr, indices):
            indptr, indices, data = indptr.copy(), indices.copy(), np.array(data, copy=True)
        return sp.csr_matrix((data, indices, indptr), shape=self.shape)

    def to_torch(self, dtype=None, device=None):
        """torch sparse CSR tensor (values = stored data, or ones)."""
        import torch
        data = self.data if self.data is not None else np.ones(self.num_edges, dtype=np.float32)
        vals = torch.from_numpy(np.ascontiguousarray(data))
        if dtype is not None:
            vals = vals.to(dtype)
        t = torch.sparse_csr_tensor(torch.from_numpy(self.indptr),
                                    torch.from_numpy(self.indices.astype(np.int64)), vals,
                                    size=self.shape, check_invariants=False)  # validated
        return t if device is None else t.to(device)
