"""Readouts of shaDow-GNN: pool each block's rows of a block-diagonal stack into one vector per
target, and the residual combination of layer outputs that comes before.

Inputs, for B blocks (the contract of :mod:`scalegnn.shadow`)::

    h        (n, d)  node embeddings of the stacked blocks
    segment  (n,)    int64 block id of each row (0..B-1)
    center   (B,)    int64 stack row of each target
    center2  (B,)    int64 stack row of the second end of each pair (pair tasks), else None

Pools over the rows ``S_k = {i : segment_i = k}`` of block k (vectorized over blocks)::

    sum     p_k = Σ_{i∈S_k} h_i
    mean    p_k = (1/|S_k|) Σ_{i∈S_k} h_i                (an empty block gives 0)
    max     p_k,j = max_{i∈S_k} h_ij                     (an empty block gives 0)
    sort:K  SortPooling (Zhang et al., DGCNN 2018): sort S_k's rows by their last channel
            h_{i,d-1} descending (ties keep row order), keep the first K rows, zero-pad a block
            smaller than K, flatten row-major -> K·d

Readout specs (the string ``shadow.readout``), ``c = center``, ``c2 = center2``::

    center              h_c                                    width d
    POOL                p_k (sum | mean | max | sort:K)         d, or K·d for sort:K
    center+POOL         [h_c ‖ p_k]                            d + width(POOL)
    hadamard            h_c ⊙ h_c2            (pairs)          d
    concat              [h_c ‖ h_c2]          (pairs)          2d
    hadamard+POOL, concat+POOL: the pair vector ‖ p_k

Residual combination of the layer outputs ``H^(1..L)`` (``shadow.residual``)::

    none    H^(L)
    max     H_ij = max_l H^(l)_ij          (all layer widths equal, else a ConfigError)
    concat  H = H^(1) ‖ … ‖ H^(L)          (width Σ_l d_l)
"""

from __future__ import annotations

import torch
from torch import nn

from scalegnn.errors import ConfigError

POOLS = ("sum", "mean", "max", "sort:K")
EDGE_READOUTS = ("hadamard", "concat")
RESIDUALS = ("none", "max", "concat")
SPECS = ("center", *POOLS, *(f"center+{p}" for p in POOLS), *EDGE_READOUTS,
         *(f"{e}+{p}" for e in EDGE_READOUTS for p in POOLS))


def segment_sum(h: torch.Tensor, segment: torch.Tensor, num_blocks: int) -> torch.Tensor:
    """``(B, d)``: row k = Σ of the rows of block k."""
    return h.new_zeros(num_blocks, h.shape[1]).index_add(0, segment, h)


def block_sizes(segment: torch.Tensor, num_blocks: int) -> torch.Tensor:
    return torch.bincount(segment, minlength=num_blocks)


def segment_mean(h: torch.Tensor, segment: torch.Tensor, num_blocks: int) -> torch.Tensor:
    """``(B, d)``: row k = mean of the rows of block k (0 for an empty block)."""
    size = block_sizes(segment, num_blocks).clamp_(min=1).to(h.dtype)
    return segment_sum(h, segment, num_blocks) / size[:, None]


def segment_max(h: torch.Tensor, segment: torch.Tensor, num_blocks: int) -> torch.Tensor:
    """``(B, d)``: element-wise max over the rows of block k (0 for an empty block). The
    gradient goes to the maximal entry (split evenly between exact ties)."""
    idx = segment[:, None].expand(-1, h.shape[1])
    return h.new_zeros(num_blocks, h.shape[1]).scatter_reduce(0, idx, h, reduce="amax",
                                                              include_self=False)


def sort_pool(h: torch.Tensor, segment: torch.Tensor, num_blocks: int, k: int) -> torch.Tensor:
    """``(B, k·d)``: SortPooling. Two stable sorts give the rows ordered by (block ascending,
    last channel descending, row ascending); a row's rank in its block is its position minus
    the block's first position; ranks < k are scattered into a zero (B, k, d) tensor."""
    n, d = h.shape
    out = h.new_zeros(num_blocks, k, d)
    if n == 0:
        return out.reshape(num_blocks, k * d)
    by_key = torch.sort(h[:, -1].detach(), descending=True, stable=True).indices
    order = by_key[torch.sort(segment[by_key], stable=True).indices]
    seg = segment[order]
    start = torch.cumsum(block_sizes(segment, num_blocks), 0) - block_sizes(segment, num_blocks)
    rank = torch.arange(n, device=h.device) - start[seg]
    keep = rank < k
    out = out.index_put((seg[keep], rank[keep]), h[order[keep]])
    return out.reshape(num_blocks, k * d)


def _parse_pool(token: str, spec: str):
    """``'sum'`` -> ('sum', 0); ``'sort:K'`` -> ('sort', K); anything else a ConfigError."""
    if token in ("sum", "mean", "max"):
        return token, 0
    if token.startswith("sort:"):
        try:
            k = int(token[5:])
        except ValueError:
            k = 0
        if k >= 1:
            return "sort", k
        raise ConfigError(f"shadow.readout: sort:K needs a positive integer K, got {spec!r}")
    return None


def parse_readout(spec) -> tuple[str, tuple[str, int] | None]:
    """``spec`` -> (base, pool): base is ``'center'``, ``'hadamard'``, ``'concat'`` or ``''``
    (pool only); pool is ``(name, K)`` or None."""
    if not isinstance(spec, str):
        raise ConfigError(f"shadow.readout: expected a string like 'center+mean', got {spec!r}")
    s = spec.strip()
    head, plus, tail = s.partition("+")
    if head in ("center", *EDGE_READOUTS):
        if not plus:
            return head, None
        pool = _parse_pool(tail, spec)
    else:
        pool = _parse_pool(s, spec)
        head = ""
    if pool is None:
        raise ConfigError(f"shadow.readout: {spec!r} is not one of center, sum, mean, max, "
                          f"sort:K, center+POOL, hadamard[+POOL], concat[+POOL]")
    return head, pool


def readout_for_task(spec, pair: bool) -> tuple[str, tuple[str, int] | None]:
    """:func:`parse_readout`, and the readout fits the task: a pair task (link prediction)
    reads two centers or a pool, a node task one center or a pool (ConfigError otherwise)."""
    base, pool = parse_readout(spec)
    if pair and base == "center":
        raise ConfigError(f"shadow.readout: {spec!r} reads one center; a pair task takes "
                          f"hadamard[+POOL], concat[+POOL] or a pool")
    if not pair and base in EDGE_READOUTS:
        raise ConfigError(f"shadow.readout: {spec!r} combines two centers: only for pair "
                          f"tasks (link prediction)")
    return base, pool


class Readout(nn.Module):
    """``Readout(spec, dim)(h, segment, center, center2=None) -> (B, output_dim)`` (no
    parameters). ``pair``: whether the task gives a second center (edge readouts need one;
    center readouts refuse one)."""

    def __init__(self, spec: str, dim: int, pair: bool = False):
        super().__init__()
        self.spec, self.dim, self.pair = spec, int(dim), bool(pair)
        self.base, self.pool = readout_for_task(spec, pair)

    @property
    def output_dim(self) -> int:
        width = {"": 0, "center": self.dim, "hadamard": self.dim, "concat": 2 * self.dim}
        out = width[self.base]
        if self.pool is not None:
            out += self.dim * (self.pool[1] if self.pool[0] == "sort" else 1)
        return out

    def pooled(self, h, segment, num_blocks):
        name, k = self.pool
        if name == "sort":
            return sort_pool(h, segment, num_blocks, k)
        return {"sum": segment_sum, "mean": segment_mean, "max": segment_max}[name](
            h, segment, num_blocks)

    def forward(self, h: torch.Tensor, segment: torch.Tensor, center: torch.Tensor,
                center2: torch.Tensor | None = None) -> torch.Tensor:
        parts = []
        if self.base == "center":
            parts.append(h[center])
        elif self.base:
            if center2 is None:
                raise ConfigError(f"shadow.readout: {self.spec!r} needs center2 (a pair batch)")
            parts.append(h[center] * h[center2] if self.base == "hadamard"
                         else torch.cat([h[center], h[center2]], dim=1))
        if self.pool is not None:
            parts.append(self.pooled(h, segment, center.shape[0]))
        return torch.cat(parts, dim=1) if len(parts) > 1 else parts[0]

    def extra_repr(self) -> str:
        return f"{self.spec!r}, dim={self.dim}"


class Residual(nn.Module):
    """Combine the per-layer outputs ``[H^(1), …, H^(L)]`` by ``mode`` (none, max, concat)."""

    def __init__(self, mode: str = "none"):
        super().__init__()
        if mode not in RESIDUALS:
            raise ConfigError(f"shadow.residual: {mode!r} is not one of {list(RESIDUALS)}")
        self.mode = mode

    def output_dim(self, dims: list[int]) -> int:
        if self.mode == "max" and len(set(dims)) > 1:
            raise ConfigError(f"shadow.residual: 'max' needs equal layer widths, got {dims} "
                              f"(use 'concat', or an arch whose layers have one width)")
        return {"none": dims[-1], "max": dims[0], "concat": sum(dims)}[self.mode]

    def forward(self, outs: list[torch.Tensor]) -> torch.Tensor:
        if self.mode == "none":
            return outs[-1]
        if self.mode == "concat":
            return torch.cat(outs, dim=1)
        return torch.stack(outs).amax(dim=0)

    def extra_repr(self) -> str:
        return f"mode={self.mode}"
