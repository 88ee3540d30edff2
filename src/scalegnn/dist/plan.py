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

Each ``rank_<i>/part.json`` records ``{"plan_id", "rank", "parts", "graph_hash"}``; ``plan_id``
(random, also in plan.json) tells rank folders of two different plans apart. Plans written
before part.json existed have no ``plan_id`` and are accepted without the check.

:meth:`PartitionPlan.load` refuses a damaged or mixed plan with a one-line PlanError naming
the file, cheaply: it reads every rank's array headers (memory-mapped, no data), checks their
shapes and dtypes, and checks that what rank i sends to rank j (``send_ptr``) is what j expects
from i (``recv_ptr``). :meth:`RankPart.load` then checks the values of one rank's arrays.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from scalegnn.errors import PlanError
from scalegnn.io import atomic_save_npy, atomic_write_json

FORMAT = "scalegnn-plan/1"
RANK_FILES = ("inner", "indptr", "indices", "boundary", "owner", "send_ptr", "send_idx",
              "recv_ptr", "recv_idx", "features", "labels", "train_mask", "val_mask",
              "test_mask", "deg_full")
PART_FILE = "part.json"
_INT_FILES = ("inner", "indptr", "indices", "boundary", "owner", "send_ptr", "send_idx",
              "recv_ptr", "recv_idx", "deg_full")
_ROW_FILES = ("features", "labels", "train_mask", "val_mask", "test_mask", "deg_full")
_REPARTITION = "re-run `scalegnn partition`"


# ---------------------------------------------------------------------------- atomic writes
save_npy = atomic_save_npy  # scalegnn.io names the file in a write error (a full disk)


def write_json(path, obj) -> None:
    atomic_write_json(path, obj, indent=1)


def new_plan_id() -> str:
    return uuid.uuid4().hex


def write_part_json(folder, plan_id: str, rank: int, parts: int, graph_hash: str) -> None:
    write_json(Path(folder) / PART_FILE, {"plan_id": plan_id, "rank": rank, "parts": parts,
                                          "graph_hash": graph_hash})


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
        """Read and check one rank folder (every file, shapes and values); PlanError naming the
        file for a missing, truncated, corrupt, pickled or inconsistent array."""
        part = cls.open(folder, rank, parts, mmap=mmap)
        part.validate(str(folder))
        return part

    @classmethod
    def open(cls, folder, rank: int, parts: int, mmap: bool = True) -> "RankPart":
        """The arrays of a rank folder with only their shapes and dtypes checked; with
        ``mmap`` nothing but the .npy headers is read."""
        folder = Path(folder)
        arrays = {name: load_rank_array(folder / f"{name}.npy", mmap) for name in RANK_FILES}
        part = cls(rank=rank, parts=parts, **arrays)
        part.check_shapes(str(folder))
        return part

    def check_shapes(self, where: str) -> "RankPart":
        """Lengths and dtypes of every array agree with inner.npy and the number of parts
        (reads only the K+1 offsets and the ends of indptr)."""
        n_in, n_bd, k = self.num_inner, self.num_boundary, self.parts

        def bad(name, msg):
            raise PlanError(f"{where}/{name}.npy: {msg}; {_REPARTITION}")
        for name in _INT_FILES:
            arr = getattr(self, name)
            if arr.ndim != 1 or arr.dtype.kind not in "iu":
                bad(name, f"expected a 1-D integer array, got {arr.dtype} {tuple(arr.shape)}")
        if self.indptr.shape != (n_in + 1,):
            bad("indptr", f"has length {self.indptr.shape[0]}, expected {n_in + 1} "
                          f"(inner nodes + 1)")
        if self.indptr[0] != 0 or self.indptr[-1] != self.indices.shape[0]:
            bad("indptr", f"must run from 0 to len(indices.npy) = {self.indices.shape[0]}")
        if self.owner.shape != (n_bd,):
            bad("owner", f"has length {self.owner.shape[0]}, expected {n_bd} (boundary nodes)")
        for nm, ptr, idx in (("send", self.send_ptr, self.send_idx),
                             ("recv", self.recv_ptr, self.recv_idx)):
            ptr = np.asarray(ptr)
            if ptr.shape != (k + 1,) or ptr[0] != 0 or ptr[-1] != idx.shape[0] \
                    or (np.diff(ptr) < 0).any():
                bad(f"{nm}_ptr", f"must hold {k + 1} increasing offsets from 0 to "
                                 f"len({nm}_idx.npy) = {idx.shape[0]}")
        for name in _ROW_FILES:
            rows = getattr(self, name).shape[0] if getattr(self, name).ndim else -1
            if rows != n_in:
                bad(name, f"has {rows} rows, expected {n_in} (inner nodes)")
        if self.features.ndim != 2 or self.features.dtype.kind != "f":
            bad("features", f"expected a 2-D float matrix, got {self.features.dtype} "
                            f"{tuple(self.features.shape)}")
        if self.labels.ndim not in (1, 2) or self.labels.dtype.kind not in "iuf":
            bad("labels", f"expected class ids or a 0/1 matrix, got {self.labels.dtype}")
        for name in ("train_mask", "val_mask", "test_mask"):
            if getattr(self, name).ndim != 1 or getattr(self, name).dtype != bool:
                bad(name, f"expected a 1-D bool array, got {getattr(self, name).dtype}")
        return self

    def validate(self, where: str) -> "RankPart":
        """:meth:`check_shapes` plus the values: monotone indptr, ids in range, owners."""
        self.check_shapes(where)
        n_in, n_bd, k = self.num_inner, self.num_boundary, self.parts

        def bad(name, msg):
            raise PlanError(f"{where}/{name}.npy: {msg}; {_REPARTITION}")
        if n_in and (np.diff(self.indptr) < 0).any():
            bad("indptr", "offsets are not monotone")
        if self.indices.size and (self.indices.min() < 0 or self.indices.max() >= n_in + n_bd):
            bad("indices", f"local column id out of range [0, {n_in + n_bd})")
        if n_bd and (self.owner.min() < 0 or self.owner.max() >= k
                     or (self.owner == self.rank).any()):
            bad("owner", "must give a peer rank (not this rank) for every boundary node")
        for nm, idx, hi in (("send_idx", self.send_idx, n_in), ("recv_idx", self.recv_idx, n_bd)):
            if idx.size and (idx.min() < 0 or idx.max() >= hi):
                bad(nm, f"has an index out of range [0, {hi})")
        return self  # features are not re-read: partitioning took a validated dataset


def load_rank_array(f: Path, mmap: bool = False) -> np.ndarray:
    """One rank file, never unpickled; PlanError naming it when it is missing, truncated or
    corrupt. It is memory-mapped first, so a header that promises more than the file holds is
    refused before anything is allocated."""
    if not f.is_file():
        raise PlanError(f"{f.parent}: missing {f.name}; {_REPARTITION}")
    try:
        x = np.load(f, allow_pickle=False, mmap_mode="r")
        if isinstance(x, np.ndarray) and not mmap:
            x = np.array(x)
    except (ValueError, EOFError, OSError, MemoryError) as e:
        why = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise PlanError(f"{f}: unreadable or truncated array ({why}); {_REPARTITION}") from None
    if not isinstance(x, np.ndarray):
        x.close()
        raise PlanError(f"{f}: expected one .npy array, found an .npz archive; {_REPARTITION}")
    return x


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

    def rank_dir(self, i: int) -> Path:
        return self.root / f"rank_{i}"

    @classmethod
    def load(cls, root, world_size: int | None = None) -> "PartitionPlan":
        """Read plan.json and check, cheaply, that the rank folders form one intact plan:
        every folder present and from this plan (part.json), every array readable with
        consistent shapes (headers only, memory-mapped), and what rank i sends to rank j is
        what j expects from i. Values are checked by :meth:`rank`, which each rank calls for
        its own folder only."""
        root = Path(root)
        plan = cls(root, _read_meta(root))
        missing = [i for i in range(plan.parts) if not plan.rank_dir(i).is_dir()]
        if missing:
            raise PlanError(f"{root}: plan has {plan.parts} parts but rank folder(s) "
                            f"{', '.join(f'rank_{i}' for i in missing)} are missing or incomplete")
        if world_size is not None and world_size != plan.parts:
            raise PlanError(f"{root}: plan has {plan.parts} parts but {world_size} ranks were "
                            f"started; use --nprocs {plan.parts} or re-partition")
        sends, recvs, inner = [], [], 0
        for i in range(plan.parts):
            plan.check_part_id(i)
            part = RankPart.open(plan.rank_dir(i), i, plan.parts, mmap=True)
            width = plan.task.get("num_features")
            if width is not None and part.features.shape[1] != width:
                raise PlanError(f"{plan.rank_dir(i)}/features.npy: has {part.features.shape[1]} "
                                f"columns, plan.json says {width}; {_REPARTITION}")
            sends.append(np.diff(np.asarray(part.send_ptr)))
            recvs.append(np.diff(np.asarray(part.recv_ptr)))
            inner += part.num_inner
        _check_counts(root, sends, recvs)
        nodes = plan.task.get("num_nodes")
        if nodes is not None and inner != nodes:
            raise PlanError(f"{root}: the rank folders own {inner} nodes, plan.json says "
                            f"{nodes}; {_REPARTITION}")
        return plan

    @property
    def plan_id(self) -> str | None:
        """Random id of this plan (None for plans written before ids existed)."""
        return self.meta.get("plan_id")

    def check_part_id(self, i: int) -> None:
        """Refuse a rank folder of another plan (its part.json names another plan id, rank,
        part count or graph). Plans without an id (older ones) are not checked."""
        folder = self.rank_dir(i)
        f = folder / PART_FILE
        if self.plan_id is None:
            if f.exists():
                raise PlanError(f"{f}: this rank folder belongs to a newer plan than "
                                f"{self.root / 'plan.json'}; {_REPARTITION}")
            return
        if not f.is_file():
            raise PlanError(f"{folder}: missing {PART_FILE} (folder from an older or an "
                            f"unfinished plan); {_REPARTITION}")
        try:
            info = json.loads(f.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise PlanError(f"{f}: unreadable ({str(e).splitlines()[0]}); {_REPARTITION}") \
                from None
        want = {"plan_id": self.plan_id, "rank": i, "parts": self.parts,
                "graph_hash": self.meta["fingerprint"].get("hash")}
        got = {k: info.get(k) for k in want} if isinstance(info, dict) else {}
        for key, value in want.items():
            if got.get(key) != value:
                raise PlanError(f"{f}: {key} is {got.get(key)!r}, plan.json expects {value!r}: "
                                f"rank folders from different plans; {_REPARTITION}")

    def rank(self, i: int, mmap: bool = False) -> RankPart:
        if not 0 <= i < self.parts:
            raise PlanError(f"{self.root}: rank {i} out of range for {self.parts} parts")
        self.check_part_id(i)
        return RankPart.load(self.rank_dir(i), i, self.parts, mmap=mmap)

    def assignment(self) -> np.ndarray:
        a = load_rank_array(self.root / "assignment.npy")
        if a.ndim != 1 or a.dtype.kind not in "iu":
            raise PlanError(f"{self.root / 'assignment.npy'}: expected a 1-D integer array; "
                            f"{_REPARTITION}")
        return a

    def check_graph(self, graph, source: str = "data") -> None:
        """Refuse a plan made for another graph (sizes or structure hash differ)."""
        fp = fingerprint(graph)
        mine = self.meta["fingerprint"]
        if fp != mine:
            raise PlanError(f"{self.root}: plan was made for a graph with {mine['num_nodes']} nodes/"
                            f"{mine['num_edges']} edges (hash {mine['hash'][:8]}), but {source} has "
                            f"{fp['num_nodes']}/{fp['num_edges']} (hash {fp['hash'][:8]}); "
                            f"re-run `scalegnn partition`")


# ---------------------------------------------------------------------------- plan checks
def _read_meta(root: Path) -> dict:
    """plan.json as a dict with the keys every reader needs; PlanError naming it otherwise."""
    meta_path = root / "plan.json"
    if not meta_path.is_file():
        raise PlanError(f"{root}: not a partition plan (no plan.json); create one with "
                        f"`scalegnn partition make DATA --parts K --out {root}`")
    try:
        meta = json.loads(meta_path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        why = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise PlanError(f"{meta_path}: unreadable ({why})") from None
    if not isinstance(meta, dict):
        raise PlanError(f"{meta_path}: expected a JSON object")
    if meta.get("format") != FORMAT:
        raise PlanError(f"{meta_path}: format {meta.get('format')!r} is not {FORMAT!r}")
    for key in ("parts", "fingerprint", "task", "stats"):
        if key not in meta:
            raise PlanError(f"{meta_path}: missing key {key!r}")
    parts = meta["parts"]
    if isinstance(parts, bool) or not isinstance(parts, int) or parts < 1:
        raise PlanError(f"{meta_path}: parts must be a positive integer, got {parts!r}")
    if not isinstance(meta["task"], dict) or not isinstance(meta["fingerprint"], dict):
        raise PlanError(f"{meta_path}: 'task' and 'fingerprint' must be JSON objects")
    return meta


def _check_counts(root: Path, sends: list, recvs: list) -> None:
    """Rank i sends rank j exactly the rows j expects from i (send_ptr_i vs recv_ptr_j)."""
    for i, sent in enumerate(sends):
        for j, expected in enumerate(recvs):
            if sent[j] != expected[i]:
                raise PlanError(f"{root / f'rank_{i}' / 'send_ptr.npy'}: rank {i} sends "
                                f"{sent[j]} rows to rank {j}, but rank_{j}/recv_ptr.npy "
                                f"expects {expected[i]}: rank folders from different plans; "
                                f"{_REPARTITION}")
