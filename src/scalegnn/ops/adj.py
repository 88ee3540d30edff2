"""``SparseAdj``: the sparse operand of propagation, with its transpose for the backward pass."""

from __future__ import annotations

import warnings
import weakref

import numpy as np
import torch

from scalegnn.graph import Graph


class SparseAdj:
    """A (rows x cols) CSR matrix with values, plus its transpose (cols x rows).

    For a symmetric pattern with sorted rows (every sampled subgraph) the transpose shares
    ``indptr``/``indices`` and only permutes the values (journal Alg. 6): pass
    ``transpose_perm``. Otherwise the transpose is built in O(|V|+|E|).
    Arrays are numpy (host) for the numba kernels; ``torch_csr()`` gives the torch tensors for
    CUDA or for torch's own kernels.

    A matrix holds its transpose strongly and the transpose holds it back only weakly
    (``transpose=`` is kept as a weak reference): a cycle would leave every training step's
    adjacency — a subgraph's indices, values and permuted values, and the sampler's group arrays
    they view — to Python's cyclic collector, which runs rarely when few Python objects are
    allocated, so dozens of them stayed resident (0.5-0.8 GB at 2^20 nodes, ``bench scale``).
    """

    __slots__ = ("indptr", "indices", "data", "num_rows", "num_cols", "_t", "_torch", "_cast",
                 "_bounds", "_pinned", "__weakref__")

    def __init__(self, indptr, indices, data, num_cols: int, *, transpose=None):
        self.indptr = np.ascontiguousarray(indptr, dtype=np.int64)
        self.indices = np.ascontiguousarray(indices)
        self.data = np.ascontiguousarray(data)
        self.num_rows = self.indptr.shape[0] - 1
        self.num_cols = int(num_cols)
        self._t = None if transpose is None else weakref.ref(transpose)  # see class doc
        self._torch = {}
        self._cast = {}     # numpy dtype -> data converted once for the numba kernels
        self._bounds = {}   # thread count -> nnz-balanced row chunk bounds
        self._pinned = {}   # torch dtype -> page-locked host (crow, col, values): see pin()

    def data_as(self, dtype) -> np.ndarray:
        """``data`` in ``dtype`` (converted once and cached)."""
        dtype = np.dtype(dtype)
        if self.data.dtype == dtype:
            return self.data
        if dtype not in self._cast:
            self._cast[dtype] = self.data.astype(dtype)
        return self._cast[dtype]

    def row_block(self, start: int, stop: int) -> "SparseAdj":
        """Rows ``start:stop`` as a rectangular SparseAdj sharing this one's arrays."""
        a, b = self.indptr[start], self.indptr[stop]
        return SparseAdj(self.indptr[start:stop + 1] - a, self.indices[a:b], self.data[a:b],
                         self.num_cols)

    @classmethod
    def from_graph(cls, g: Graph, transpose_perm=None, dtype=np.float32, *,
                   transpose: Graph | None = None) -> "SparseAdj":
        """From a Graph with ``data`` (ones if it has none); its transpose from
        ``transpose_perm`` (symmetric pattern) or a ready ``transpose`` Graph (with data)."""
        data = g.data if g.data is not None else np.ones(g.num_edges, dtype=dtype)
        data = np.asarray(data, dtype=dtype)
        adj = cls(g.indptr, g.indices, data, g.num_cols)
        if transpose_perm is not None:   # the same index arrays: see torch_csr
            adj._t = cls(adj.indptr, adj.indices, data[transpose_perm], g.num_nodes,
                         transpose=adj)
        elif transpose is not None:
            adj._t = cls(transpose.indptr, transpose.indices,
                         np.asarray(transpose.data, dtype=dtype), g.num_nodes, transpose=adj)
        return adj

    @property
    def shape(self):
        return self.num_rows, self.num_cols

    @property
    def nnz(self) -> int:
        return int(self.indices.shape[0])

    @property
    def dtype(self):
        return self.data.dtype

    def _known_t(self):
        """The transpose if it is built (and, for a back-reference, still alive), else None."""
        return self._t() if isinstance(self._t, weakref.ref) else self._t

    def t(self) -> "SparseAdj":
        """The transpose, built once and cached."""
        t = self._known_t()
        if t is None:   # never built, or the matrix this is the transpose of was freed
            gt = Graph(self.indptr, self.indices, self.num_cols, self.data, validate=False).transpose()
            t = SparseAdj(gt.indptr, gt.indices, gt.data, self.num_rows, transpose=self)
            self._t = t
        return t

    def astype(self, dtype) -> "SparseAdj":
        if self.data.dtype == dtype:
            return self
        out = SparseAdj(self.indptr, self.indices, self.data.astype(dtype), self.num_cols)
        t = self._known_t()
        if t is not None:
            out._t = SparseAdj(t.indptr, t.indices, t.data.astype(dtype),
                               self.num_rows, transpose=out)
        return out

    def torch_csr(self, device=None, dtype=None) -> torch.Tensor:
        """torch.sparse_csr_tensor of this matrix on ``device`` (cached per device/dtype).

        Its indices are int32 where they fit (torch's CPU kernel and cuSPARSE take either):
        half the bytes of int64 to move to a GPU, and no host conversion of the sampler's
        int32 column ids. A matrix and its transpose with one pattern (``transpose_perm``)
        share the device copy of their indptr and indices: only the values move twice. After
        :meth:`pin` the copies to a GPU are queued from page-locked memory.
        """
        device = torch.device("cpu") if device is None else torch.device(device)
        dtype = dtype or torch.from_numpy(self.data[:0]).dtype
        key = (str(device), dtype)
        if key not in self._torch:
            host = self._pinned.get(dtype) if device.type != "cpu" else None
            crow, col = self._torch_pattern(device, host)
            values = host[2] if host is not None else torch.from_numpy(self.data).to(dtype)
            with warnings.catch_warnings():   # "CSR support is in beta": once per process is noise
                warnings.simplefilter("ignore", UserWarning)
                self._torch[key] = torch.sparse_csr_tensor(
                    crow, col, values.to(device, non_blocking=True), size=self.shape,
                    check_invariants=False)
        return self._torch[key]

    def _torch_pattern(self, device: torch.device, host=None):
        """(crow_indices, col_indices) on ``device``: one already there for this matrix or for
        a transpose sharing its index arrays, else moved (from ``host``'s page-locked copies
        when given)."""
        t = self._known_t()
        shared = [self] + ([t] if t is not None and t.indices is self.indices
                           and t.indptr is self.indptr else [])
        for adj in shared:
            for (dev, _), m in adj._torch.items():
                if dev == str(device):
                    return m.crow_indices(), m.col_indices()
        if host is not None:
            crow, col = host[0], host[1]
        else:
            wide = max(self.nnz, self.num_rows, self.num_cols) >= 2**31
            idx = np.int64 if wide else np.int32
            crow = torch.from_numpy(self.indptr.astype(idx, copy=False))
            col = torch.from_numpy(self.indices.astype(idx, copy=False))
        return crow.to(device, non_blocking=True), col.to(device, non_blocking=True)

    def pin(self, dtype) -> None:
        """Page-lock the host operands of this matrix and of its transpose in ``dtype`` (the
        int32 pattern once where they share it): :meth:`torch_csr` on a GPU then only queues
        their copies, where a copy from pageable memory blocks the calling thread until it is
        done. For a loader's background thread; needs CUDA."""
        locked = {}

        def lock(t):
            if t.data_ptr() not in locked:
                locked[t.data_ptr()] = t.pin_memory()
            return locked[t.data_ptr()]

        pair = (self, self.t())
        for m in pair:
            h = m.torch_csr(None, dtype)
            m._pinned[dtype] = (lock(h.crow_indices()), lock(h.col_indices()), lock(h.values()))
        for m in pair:   # the host CSRs were only the way to build them
            m._torch.pop(("cpu", dtype), None)

    def to_dense(self) -> torch.Tensor:
        return self.torch_csr().to_dense()
