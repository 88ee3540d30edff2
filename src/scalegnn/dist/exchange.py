"""Boundary exchange with boundary-node sampling (BNS-GCN), as an autograd Function.

Per epoch (:meth:`BoundaryExchange.sample`): rank i keeps each of its boundary nodes v with
probability p, independently: ``keep = hash(seed, epoch, i, v) < p`` (:func:`boundary_keep`, a
counter-based draw). The owner of v evaluates the same function on the rows it would send to
i, so both sides agree on the kept rows without a message: two synchronising rounds per
epoch fewer than telling the owners (a network round trip each between machines; on one
2-core host the difference was within noise). Then rank i builds the epoch's local adjacency
over ``inner + kept boundary`` columns::

    Â_epoch[v, c] = 1 / deg_full(v)        c inner
    Â_epoch[v, c] = 1 / (p · deg_full(v))  c a kept boundary column

so E[Â_epoch X] = Â X for every row (unbiased for the mean aggregator). p = 1 reproduces the
full-graph rows exactly; p = 0 keeps only inner columns.

Per graph layer (:meth:`BoundaryExchange.__call__`, the model's ``exchange`` hook): forward
posts ``isend`` of the requested inner rows to every owner-peer and ``irecv`` of the kept
boundary rows, waits (with the configured timeout) and returns ``[h_inner; h_boundary]``;
backward sends the gradients of the boundary rows back to their owners and ``index_add``s the
gradients it receives into its inner rows. A dead or silent peer becomes a one-line DistError.
"""

from __future__ import annotations

import re
import time
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist

from scalegnn.errors import DistError
from scalegnn.faults import exchange_delay
from scalegnn.nn.dropout import SPLITMIX_GAMMA, splitmix64
from scalegnn.ops import SparseAdj

_TAG_LAYER = 100


def boundary_keep(seed: int, epoch: int, receiver: int, nodes: np.ndarray, p: float) -> np.ndarray:
    """Whether ``receiver`` keeps each global node id of ``nodes`` as a boundary row in
    ``epoch``: independent Bernoulli(p) draws, a pure function of (seed, epoch, receiver,
    node), so the receiver and the owner of a node compute the same answer (p resolved to
    2^-53)."""
    nodes = np.asarray(nodes)
    if p >= 1.0:
        return np.ones(nodes.shape[0], dtype=bool)
    with np.errstate(over="ignore"):
        key = np.array([seed, epoch, receiver], dtype=np.uint64)
        k = splitmix64(splitmix64(splitmix64(key[:1] * SPLITMIX_GAMMA) ^ key[1:2]) ^ key[2:3])
        u = splitmix64(nodes.astype(np.uint64) * SPLITMIX_GAMMA + k) >> np.uint64(11)
    return u < np.uint64(round(p * 2.0 ** 53))


def peer_error(rank: int, what: str, exc: Exception, timeout: float) -> DistError:
    """One-line DistError for a failed communication (gloo's source-path prefix stripped)."""
    try:  # some torch exception types cannot even be printed: never let that mask the failure
        msg = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    except Exception:
        msg = type(exc).__name__
    msg = re.sub(r"^\[[^\]]*\]\s*", "", msg)
    return DistError(f"rank {rank}: {what} failed (a peer died or did not answer within "
                     f"--timeout {timeout:g}s): {msg[:200]}")


class CommStats:
    """Wall time in exchanges, time blocked in ``wait``, bytes sent and received."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.comm_s = 0.0
        self.wait_s = 0.0
        self.bytes_sent = 0
        self.bytes_recv = 0
        self.overlap_s = 0.0   # compute done while forward messages were in flight
        self.fwd_wait_s = 0.0  # blocked waiting for forward rows (the part compute did not hide)
        self.rows_sent = 0     # forward rows sent (= the plan's volume per layer at p = 1)


def _nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


class RowExchange:
    """The communication of a partitioned graph layer: rank ``rank`` owns ``n_in`` inner rows;
    per graph layer it sends peer j the inner rows ``send_rows[j]`` and receives
    ``recv_counts[j]`` boundary rows from every peer j of ``recv_peers`` (in that order: the
    local adjacency's boundary columns are sorted by owner). ``adj`` (= ``[Â_in | Â_bd]``) and
    ``split`` (the two halves) are the local adjacency the forward multiplies. Calling it is the
    model's exchange hook; subclasses set the maps (a plan's, or one minibatch's)."""

    def __init__(self, rank: int, *, device, dtype, timeout: float):
        self.rank = rank
        self.device, self.dtype = torch.device(device), dtype
        self.timeout = timedelta(seconds=float(timeout))
        self.stats = CommStats()
        self.n_in = 0
        self.recv_peers, self.send_peers = [], []
        self.send_rows, self.recv_counts = {}, {}
        self.split = None

    @property
    def num_kept(self) -> int:
        """Boundary rows received per layer."""
        return int(sum(self.recv_counts.values()))

    # ------------------------------------------------------------------ requests with timeout
    def _wait(self, reqs, what: str):
        t0 = time.perf_counter()
        try:
            for r in reqs:
                r.wait(self.timeout)
        except Exception as e:  # gloo/NCCL raise RuntimeError subclasses on peer loss/timeout
            raise peer_error(self.rank, what, e, self.timeout.total_seconds()) from None
        self.stats.wait_s += time.perf_counter() - t0

    def _post(self, sends: dict, recvs: dict, tag: int, what: str) -> list:
        """Post every irecv then every isend; return the requests."""
        reqs = []
        try:
            for j, buf in recvs.items():
                if buf.numel():
                    reqs.append(dist.irecv(buf, src=j, tag=tag))
                    self.stats.bytes_recv += _nbytes(buf)
            for j, t in sends.items():
                if t.numel():
                    reqs.append(dist.isend(t, dst=j, tag=tag))
                    self.stats.bytes_sent += _nbytes(t)
        except Exception as e:
            raise peer_error(self.rank, what, e, self.timeout.total_seconds()) from None
        return reqs

    def _swap(self, sends: dict, recvs: dict, tag: int, what: str):
        """Post every irecv then every isend, wait for all."""
        self._wait(self._post(sends, recvs, tag, what), what)

    # ------------------------------------------------------------------ per-layer swaps
    def post_forward(self, h: torch.Tensor, layer: int):
        """Post irecv of the kept boundary rows and isend of the requested inner rows of ``h``;
        return a handle for :meth:`finish_forward` (compute may run in between)."""
        t0 = time.perf_counter()
        recv = torch.empty(self.num_kept, h.shape[1], dtype=h.dtype, device=h.device)
        views, off = {}, 0
        for j in self.recv_peers:                 # boundary is sorted by owner: contiguous blocks
            views[j] = recv[off:off + self.recv_counts[j]]
            off += self.recv_counts[j]
        sends = {j: h.index_select(0, self.send_rows[j]).contiguous() for j in self.send_peers}
        self.stats.rows_sent += sum(t.shape[0] for t in sends.values())
        exchange_delay(self.rank)                # test hook: a late sender (no-op otherwise)
        what = f"forward exchange of layer {layer}"
        reqs = self._post(sends, views, _TAG_LAYER + 2 * layer, what)
        self.stats.comm_s += time.perf_counter() - t0
        return recv, reqs, sends, what

    def finish_forward(self, handle) -> torch.Tensor:
        recv, reqs, _sends, what = handle        # _sends kept alive until the sends complete
        t0 = time.perf_counter()
        self._wait(reqs, what)
        self.stats.fwd_wait_s += time.perf_counter() - t0
        self.stats.comm_s += time.perf_counter() - t0
        return recv

    def forward_rows(self, h: torch.Tensor, layer: int) -> torch.Tensor:
        """Send requested inner rows, receive kept boundary rows (in column order)."""
        return self.finish_forward(self.post_forward(h, layer))

    def backward_rows(self, grad_boundary: torch.Tensor, grad_inner: torch.Tensor, layer: int):
        """Return boundary-row gradients to their owners; add the ones received into inner rows."""
        t0 = time.perf_counter()
        f = grad_inner.shape[1]
        sends, off = {}, 0
        for j in self.recv_peers:
            sends[j] = grad_boundary[off:off + self.recv_counts[j]].contiguous()
            off += self.recv_counts[j]
        recvs = {j: torch.empty(self.send_rows[j].shape[0], f, dtype=grad_inner.dtype,
                                device=grad_inner.device) for j in self.send_peers}
        self._swap(sends, recvs, _TAG_LAYER + 2 * layer + 1, f"backward exchange of layer {layer}")
        for j, buf in recvs.items():
            if buf.numel():
                grad_inner.index_add_(0, self.send_rows[j], buf)
        self.stats.comm_s += time.perf_counter() - t0

    def __call__(self, h: torch.Tensor, layer: int) -> torch.Tensor:
        if h.shape[0] != self.n_in:
            raise ValueError(f"exchange: expected {self.n_in} inner rows, got {h.shape[0]}")
        return _Exchange.apply(h, self, layer)


class BoundaryExchange(RowExchange):
    """Holds one rank's static maps (from its :class:`~scalegnn.dist.plan.RankPart`) and the
    current epoch's sampled state; calling it is the model's exchange hook."""

    def __init__(self, part, *, device, dtype, timeout: float, seed: int = 0):
        super().__init__(part.rank, device=device, dtype=dtype, timeout=timeout)
        self.part = part
        self.parts = part.parts
        self.n_in = part.num_inner
        self.seed = int(seed)
        self.recv_peers = [j for j in range(self.parts) if part.recv_ptr[j + 1] > part.recv_ptr[j]]
        self.send_peers = [j for j in range(self.parts) if part.send_ptr[j + 1] > part.send_ptr[j]]
        self._inv_deg = np.where(part.deg_full > 0, 1.0 / np.maximum(part.deg_full, 1), 0.0)
        self._rows = np.repeat(np.arange(self.n_in, dtype=np.int64), np.diff(part.indptr))
        self.full_adj = self._build_adj(np.ones(part.num_boundary, dtype=bool), 1.0)
        self.full_split = split_adj(self.full_adj, self.n_in)
        self._bd_t = self.full_split[1].t()   # boundary x inner: sampling selects its rows
        self.split = self.full_split
        self._adj, self._keep, self._p = self.full_adj, None, 1.0  # _keep/_p: lazy `adj`
        self._set_state({j: torch.as_tensor(part.send_rows(j), device=self.device)
                         for j in self.send_peers},
                        {j: int(part.recv_ptr[j + 1] - part.recv_ptr[j]) for j in self.recv_peers})
        self.full_state = (self.send_rows, self.recv_counts, self.full_adj, self.full_split)
        # global ids of the rows each peer may request, in that peer's boundary order
        self._send_nodes = {j: np.asarray(part.inner)[part.send_rows(j)] for j in self.send_peers}

    # ------------------------------------------------------------------ per-epoch sampling
    def _build_adj(self, keep: np.ndarray, p: float) -> SparseAdj:
        """Local Â over inner + kept boundary columns, boundary entries scaled by 1/p."""
        part, n_in = self.part, self.n_in
        colmap = np.full(n_in + part.num_boundary, -1, dtype=np.int64)
        colmap[:n_in] = np.arange(n_in)
        kept = np.flatnonzero(keep)
        colmap[n_in + kept] = n_in + np.arange(kept.shape[0])
        cols = colmap[part.indices]
        ok = cols >= 0
        rows = self._rows[ok]
        cols = cols[ok]
        data = self._inv_deg[rows]
        if p > 0:
            data = np.where(cols >= n_in, data / p, data)
        indptr = np.zeros(n_in + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=n_in), out=indptr[1:])
        np_dtype = torch.empty(0, dtype=self.dtype).numpy().dtype
        return SparseAdj(indptr, cols.astype(np.int32), data.astype(np_dtype), n_in + kept.shape[0])

    def _set_state(self, send_rows: dict, recv_counts: dict):
        self.send_rows = send_rows
        self.recv_counts = recv_counts

    @property
    def adj(self) -> SparseAdj:
        """The current local Â = [Â_in | Â_bd] in one matrix (the non-overlapped forward);
        built on first use in an epoch, the overlapped path only needs ``split``."""
        if self._adj is None:
            self._adj = self._build_adj(self._keep, self._p)
        return self._adj

    def use_full(self):
        """Exact exchange (every boundary row), used for evaluation."""
        self.send_rows, self.recv_counts, self._adj, self.split = self.full_state

    def sample(self, epoch: int, p: float):
        """Draw this epoch's kept boundary nodes and the rows each peer keeps of ours (the
        same :func:`boundary_keep` draws on both sides, no message), rebuild the boundary
        part of the adjacency."""
        if p >= 1.0:
            self.use_full()
            return
        part = self.part
        keep = boundary_keep(self.seed, epoch, self.rank, part.boundary, p)
        full_rows = self.full_state[0]
        sends = {}
        for j in self.send_peers:
            mine = boundary_keep(self.seed, epoch, j, self._send_nodes[j], p)
            sends[j] = full_rows[j][torch.as_tensor(mine, device=self.device)]
        self._set_state(sends, {j: int(np.count_nonzero(keep[part.recv_ptr[j]:part.recv_ptr[j + 1]]))
                                for j in self.recv_peers})
        self._release_sampled()
        self._adj, self._keep, self._p = None, keep, p
        self.split = (self.full_split[0], self._sampled_boundary(keep, p))

    def _sampled_boundary(self, keep: np.ndarray, p: float) -> SparseAdj:
        """Â_bd restricted to the kept columns, scaled by 1/p (0 entries if p = 0).

        Â_in never changes, and the kept columns of Â_bd are the kept rows of its transpose,
        contiguous segments: O(kept nnz + inner rows) per epoch instead of O(local nnz)."""
        bt = self._bd_t
        kept = np.flatnonzero(keep)
        starts, lens = bt.indptr[kept], bt.indptr[kept + 1] - bt.indptr[kept]
        ptr = np.zeros(kept.shape[0] + 1, dtype=np.int64)
        np.cumsum(lens, out=ptr[1:])
        pos = np.arange(ptr[-1], dtype=np.int64) + np.repeat(starts - ptr[:-1], lens)
        data = bt.data[pos] / bt.data.dtype.type(p) if p > 0 else bt.data[pos]
        return SparseAdj(ptr, bt.indices[pos], data, self.n_in).t()

    def _release_sampled(self):
        """Free the previous epoch's adjacencies now: a SparseAdj and its cached transpose
        point at each other, a cycle that refcounting never frees (and the cyclic GC rarely
        runs here, so sampled matrices piled up epoch after epoch)."""
        full = (self.full_adj, *self.full_split)
        for a in (self._adj, *self.split):
            if a is None:
                continue
            if all(a is not f for f in full):
                a._t = None
                a._torch.clear()

def split_adj(adj: SparseAdj, n_in: int) -> tuple[SparseAdj, SparseAdj]:
    """``[Â_in | Â_bd]``: the inner columns (n_in x n_in) and the boundary columns
    (n_in x (cols - n_in)) of a local adjacency, so ``Â h = Â_in h_in + Â_bd h_bd``."""
    rows = np.repeat(np.arange(adj.num_rows, dtype=np.int64), np.diff(adj.indptr))
    inner = adj.indices < n_in
    out = []
    for m, lo, ncols in ((inner, 0, n_in), (~inner, n_in, adj.num_cols - n_in)):
        ptr = np.zeros(adj.num_rows + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows[m], minlength=adj.num_rows), out=ptr[1:])
        out.append(SparseAdj(ptr, (adj.indices[m] - lo).astype(np.int32), adj.data[m], ncols))
    return out[0], out[1]


class BoundaryRows(torch.autograd.Function):
    """Second half of an overlapped exchange: wait for the rows posted by
    :meth:`BoundaryExchange.post_forward` of ``src``; backward returns their gradients to the
    owners and scatters the received ones into ``src``'s rows."""

    @staticmethod
    def forward(ctx, src, ex: BoundaryExchange, handle, layer: int):
        ctx.ex, ctx.layer, ctx.n = ex, layer, src.shape[0]
        return ex.finish_forward(handle)

    @staticmethod
    def backward(ctx, grad):
        ex = ctx.ex
        grad_src = torch.zeros(ctx.n, grad.shape[1], dtype=grad.dtype, device=grad.device)
        ex.backward_rows(grad.contiguous(), grad_src, ctx.layer)
        return grad_src, None, None, None


class _Exchange(torch.autograd.Function):
    """y = [h ; B h_remote]; dy/dh routes boundary-row gradients back to their owners."""

    @staticmethod
    def forward(ctx, h, ex: BoundaryExchange, layer: int):
        ctx.ex, ctx.layer = ex, layer
        return torch.cat([h, ex.forward_rows(h.detach(), layer)], 0)

    @staticmethod
    def backward(ctx, grad):
        ex = ctx.ex
        grad_inner = grad[:ex.n_in].clone()
        ex.backward_rows(grad[ex.n_in:], grad_inner, ctx.layer)
        return grad_inner, None, None
