"""``PartitionPlan``: the on-disk contract between a partitioner and the distributed trainer.

A plan is a folder::

    PLAN/plan.json        format, dataset fingerprint, method, parts, task metadata, per-part stats
    PLAN/assignment.npy   node -> part (int32, length N): all a partitioner has to produce
    PLAN/rank_<i>/        one folder per rank; a rank reads only its own folder and plan.json

Each ``rank_<i>/`` holds (``.npy``, never pickled; ``n_in`` inner rows, ``n_bd`` boundary columns):

=================  ==========  ==================================================================
file               shape       meaning
=================  ==========  ==================================================================
inner.npy          (n_in,)     global ids of the inner nodes, ascending (local row r = inner[r])
indptr.npy         (n_in+1,)   local CSR rows (int64)
indices.npy        (nnz,)      local columns: ``< n_in`` inner, ``n_in + b`` boundary node b
boundary.npy       (n_bd,)     global ids of the boundary nodes, sorted by (owner, global id)
owner.npy          (n_bd,)     owning rank of each boundary node (int32)
send_ptr.npy       (K+1,)      ``send_idx[send_ptr[j]:send_ptr[j+1]]`` = my inner rows peer j needs,
send_idx.npy                   in the order of peer j's boundary block from me
recv_ptr.npy       (K+1,)      ``recv_idx[recv_ptr[j]:recv_ptr[j+1]]`` = my boundary positions
recv_idx.npy                   (0-based in boundary.npy) that peer j sends
features.npy       (n_in, F)   features of the inner nodes
labels.npy         (n_in,)/(n_in, C)
train/val/test_mask.npy (n_in,) bool split masks of the inner nodes
deg_full.npy       (n_in,)     degree of each inner node in the FULL graph (Â[v,u] = 1/deg_full(v))
=================  ==========  ==================================================================

The format depends on nothing but the node -> part map, so any partitioner (METIS, random, a
hypergraph partitioner) produces it with :func:`scalegnn.dist.partition.write_plan`.
``plan.json`` is written last: a folder without it is not a plan.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from scalegnn.errors import PlanError
from scalegnn.io import atomic_save_npy, atomic_write_json, atomic_write_text

FORMAT = "scalegnn-plan/1"
RANK_FILES = ("inner", "indptr", "indices", "boundary", "owner", "send_ptr", "send_idx",
              "recv_ptr", "recv_idx", "features", "labels", "train_mask", "val_mask",
              "test_mask", "deg_full")


# ---------------------------------------------------------------------------- atomic writes
save_npy = atomic_save_npy
write_text = atomic_write_text


def write_json(path, obj) -> None:
    atomic_write_json(path, obj, indent=1)


# ---------------------------------------------------------------------------- fingerprint
def fingerprint(graph) -> dict:
    """Identity of a graph: sizes plus a blake2b hash of ``indptr`` and ``indices`` (chunked,
    so a graph of 10^8 edges is hashed without a copy)."""
    h = hashlib.blake2b(digest_size=16)
    step = 1 << 22
    for arr in (graph.indptr, graph.indices):
        for s in range(0, arr.shape[0], step):  # int64 per chunk: same hash for int32/int64 ids
            h.update(np.ascontiguousarray(arr[s:s + step], dtype=np.int64).tobytes())
    return {"num_nodes": int(graph.num_nodes), "num_edges": int(graph.num_edges),
            "hash": h.hexdigest()}


# ---------------------------------------------------------------------------- one rank's part
@dataclass
class RankPart:
    """Everything one rank needs (see the module docstring for each array's meaning)."""

    rank: int
    parts: int
    inner: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    boundary: np.ndarray
    owner: np.ndarray
    send_ptr: np.ndarray
    send_idx: np.ndarray
    recv_ptr: np.ndarray
    recv_idx: np.ndarray
    features: np.ndarray
    labels: np.ndarray
    train_mask: np.ndarray
    val_mask: np.ndarray
    test_mask: np.ndarray
    deg_full: np.ndarray

    @property
    def num_inner(self) -> int:
        return int(self.inner.shape[0])

    @property
    def num_boundary(self) -> int:
        return int(self.boundary.shape[0])

    def send_rows(self, peer: int) -> np.ndarray:
        return self.send_idx[self.send_ptr[peer]:self.send_ptr[peer + 1]]

    def recv_positions(self, peer: int) -> np.ndarray:
        return self.recv_idx[self.recv_ptr[peer]:self.recv_ptr[peer + 1]]

    def save(self, folder) -> None:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        for name in RANK_FILES:
            save_npy(folder / f"{name}.npy", getattr(self, name))

    @classmethod
    def load(cls, folder, rank: int, parts: int, mmap: bool = False) -> "RankPart":
        folder = Path(folder)
        arrays = {}
        for name in RANK_FILES:
            f = folder / f"{name}.npy"
            if not f.is_file():
                raise PlanError(f"{folder}: missing {f.name}; re-run `scalegnn partition`")
            try:
                arrays[name] = np.load(f, allow_pickle=False, mmap_mode="r" if mmap else None)
            except ValueError as e:
                raise PlanError(f"{f}: unreadable array ({e})") from None
        part = cls(rank=rank, parts=parts, **arrays)
        part.validate(str(folder))
        return part

    def validate(self, where: str) -> "RankPart":
        n_in, n_bd, k = self.num_inner, self.num_boundary, self.parts

        def bad(msg):
            raise PlanError(f"{where}: {msg}")
        if self.indptr.shape != (n_in + 1,) or self.indptr[0] != 0 \
                or self.indptr[-1] != self.indices.shape[0]:
            bad("indptr does not match inner.npy / indices.npy")
        if self.indices.size and (self.indices.min() < 0 or self.indices.max() >= n_in + n_bd):
            bad(f"local column id out of range [0, {n_in + n_bd})")
        if self.owner.shape != (n_bd,) or (n_bd and (self.owner.min() < 0 or self.owner.max() >= k
                                                     or (self.owner == self.rank).any())):
            bad("owner.npy must give a peer rank (not this rank) for every boundary node")
        for nm, ptr, idx, hi in (("send", self.send_ptr, self.send_idx, n_in),
                                 ("recv", self.recv_ptr, self.recv_idx, n_bd)):
            if ptr.shape != (k + 1,) or ptr[0] != 0 or ptr[-1] != idx.shape[0] or (np.diff(ptr) < 0).any():
                bad(f"{nm}_ptr.npy must have {k + 1} monotone offsets ending at len({nm}_idx)")
            if idx.size and (idx.min() < 0 or idx.max() >= hi):
                bad(f"{nm}_idx.npy has an index out of range [0, {hi})")
        for nm in ("features", "labels", "train_mask", "val_mask", "test_mask", "deg_full"):
            if getattr(self, nm).shape[0] != n_in:
                bad(f"{nm}.npy has {getattr(self, nm).shape[0]} rows, expected {n_in}")
        return self


# ---------------------------------------------------------------------------- the plan
class PartitionPlan:
    """A loaded plan folder: ``meta`` is plan.json; ``rank(i)`` loads rank i's folder."""

    def __init__(self, root, meta: dict):
        self.root = Path(root)
        self.meta = meta

    @property
    def parts(self) -> int:
        return int(self.meta["parts"])

    @property
    def num_train(self) -> int:
        """Training nodes in the WHOLE graph (the loss normalizer every rank shares)."""
        return int(self.meta["task"]["num_train"])

    @property
    def task(self) -> dict:
        return self.meta["task"]

    @classmethod
    def create(cls, dataset, assignment, out, *, method: str = "custom", seed: int = 0) -> "PartitionPlan":
        """Write the plan of any node -> part ``assignment`` (e.g. from a hypergraph
        partitioner) to ``out``; see :func:`scalegnn.dist.partition.write_plan`."""
        from scalegnn.dist.partition import write_plan
        return write_plan(dataset, assignment, out, method=method, seed=seed)

    def rank_dir(self, i: int) -> Path:
        return self.root / f"rank_{i}"

    @classmethod
    def load(cls, root, world_size: int | None = None) -> "PartitionPlan":
        """Read plan.json and check that every rank folder is there (files are checked by
        :meth:`rank`, which each rank calls for its own folder only)."""
        root = Path(root)
        meta_path = root / "plan.json"
        if not meta_path.is_file():
            raise PlanError(f"{root}: not a partition plan (no plan.json); create one with "
                            f"`scalegnn partition DATA --parts K --out {root}`")
        try:
            meta = json.loads(meta_path.read_text())
        except (OSError, json.JSONDecodeError) as e:
            raise PlanError(f"{meta_path}: unreadable ({e})") from None
        if meta.get("format") != FORMAT:
            raise PlanError(f"{meta_path}: format {meta.get('format')!r} is not {FORMAT!r}")
        for key in ("parts", "fingerprint", "task", "stats"):
            if key not in meta:
                raise PlanError(f"{meta_path}: missing key {key!r}")
        plan = cls(root, meta)
        missing = [i for i in range(plan.parts) if not (plan.rank_dir(i) / "inner.npy").is_file()]
        if missing:
            raise PlanError(f"{root}: plan has {plan.parts} parts but rank folder(s) "
                            f"{', '.join(f'rank_{i}' for i in missing)} are missing or incomplete")
        if world_size is not None and world_size != plan.parts:
            raise PlanError(f"{root}: plan has {plan.parts} parts but {world_size} ranks were "
                            f"started; use --nprocs {plan.parts} or re-partition")
        return plan

    def rank(self, i: int, mmap: bool = False) -> RankPart:
        if not 0 <= i < self.parts:
            raise PlanError(f"{self.root}: rank {i} out of range for {self.parts} parts")
        return RankPart.load(self.rank_dir(i), i, self.parts, mmap=mmap)

    def assignment(self) -> np.ndarray:
        return np.load(self.root / "assignment.npy", allow_pickle=False)

    def check_graph(self, graph, source: str = "data") -> None:
        """Refuse a plan made for another graph (sizes or structure hash differ)."""
        fp = fingerprint(graph)
        mine = self.meta["fingerprint"]
        if fp != mine:
            raise PlanError(f"{self.root}: plan was made for a graph with {mine['num_nodes']} nodes/"
                            f"{mine['num_edges']} edges (hash {mine['hash'][:8]}), but {source} has "
                            f"{fp['num_nodes']}/{fp['num_edges']} (hash {fp['hash'][:8]}); "
                            f"re-run `scalegnn partition`")
