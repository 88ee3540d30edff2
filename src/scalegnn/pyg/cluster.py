"""Cluster-GCN with PyG's names: ``ClusterData`` (METIS parts by pymetis, seeded) and
``ClusterLoader`` (q parts per batch; the subgraph induced by their nodes, so the edges
between the chosen clusters are kept, as Cluster-GCN's stochastic multiple partitions).

Unlike PyG's, ``ClusterData`` does not permute ``data``: a batch lists its nodes in ascending
parent id with ``n_id`` (and ``e_id``) naming them, node and edge attributes sliced as in the
other loaders. The partition is of the undirected graph without self-loops (METIS needs a
symmetric pattern); ``edge_index`` itself may be directed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from scalegnn.errors import ConfigError, DataError
from scalegnn.io import atomic_save_npy, write_error
from scalegnn.pyg._common import (batch_data, check_data, check_flag, check_kwargs, epoch_order,
                                  num_batches, seed_of, target_csr)
from scalegnn.sampling.cluster import metis_parts
from scalegnn.sampling.sampler_base import check_int


class ClusterData:
    """``data`` cut into ``num_parts`` METIS parts (PyG's arguments; ``seed`` added, default
    0). ``part[v]`` is node v's part, ``node_perm`` the nodes ordered by part (ascending ids
    within one) and ``partptr`` where each part starts in it. ``save_dir`` keeps ``part`` in
    ``save_dir/part_<num_parts>[_recursive]/<filename or metis_<seed>.npy>``, read back next
    time. ``cluster_data[i]`` is the subgraph induced by part i."""

    def __init__(self, data, num_parts: int, recursive: bool = False, save_dir=None,
                 filename: str | None = None, log: bool = True,
                 keep_inter_cluster_edges: bool = False, sparse_format: str = "csr",
                 seed: int = 0):
        who = "ClusterData"
        self.data = check_data(data, who)
        self.csr = target_csr(data, who)
        n = self.csr.graph.num_nodes
        self.num_parts = check_int(f"{who}: num_parts", num_parts)
        if self.num_parts > max(n, 1):
            raise ConfigError(f"{who}: num_parts={self.num_parts} exceeds the {n} nodes")
        self.recursive = check_flag(recursive, f"{who}: recursive")
        if check_flag(keep_inter_cluster_edges, f"{who}: keep_inter_cluster_edges"):
            raise ConfigError(f"{who}: keep_inter_cluster_edges=True is not supported (a "
                              f"ClusterLoader batch keeps the edges between its parts)")
        if sparse_format not in ("csr", "csc"):
            raise ConfigError(f"{who}: sparse_format must be 'csr' or 'csc', got "
                              f"{sparse_format!r}"[:300])
        self.seed = seed_of(seed, who)
        path = None
        if save_dir is not None:
            sub = f"part_{self.num_parts}{'_recursive' if self.recursive else ''}"
            path = Path(save_dir) / sub / (filename or f"metis_{self.seed}.npy")
        if path is not None and path.is_file():
            self.part = self._read(path, n)
        else:
            self.part = metis_parts(self.csr.graph, self.num_parts, self.seed, self.recursive,
                                    who=who)
            if path is not None:
                try:
                    path.parent.mkdir(parents=True, exist_ok=True)
                except OSError as e:
                    raise write_error(path, e) from None
                atomic_save_npy(path, self.part)
        self.node_perm = np.argsort(self.part, kind="stable").astype(np.int64)
        self.partptr = np.zeros(self.num_parts + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.part, minlength=self.num_parts), out=self.partptr[1:])

    def _read(self, path: Path, n: int) -> np.ndarray:
        try:
            part = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as e:
            raise DataError(f"{path}: not a partition file ({type(e).__name__})") from None
        if part.shape != (n,) or part.dtype.kind not in "iu" or \
                (n and (part.min() < 0 or part.max() >= self.num_parts)):
            raise DataError(f"{path}: not a partition of these {n} nodes into "
                            f"{self.num_parts} parts")
        return part.astype(np.int32)

    def __len__(self) -> int:
        return self.num_parts

    def __repr__(self) -> str:
        return f"ClusterData({self.num_parts})"

    def nodes_of(self, parts) -> np.ndarray:
        """The nodes of ``parts`` (part ids), ascending."""
        parts = np.asarray(parts, dtype=np.int64).reshape(-1)
        chunks = [self.node_perm[self.partptr[p]:self.partptr[p + 1]] for p in parts]
        return np.unique(np.concatenate(chunks)) if chunks else np.empty(0, np.int64)

    def subgraph(self, parts):
        """The ``Data`` induced by the nodes of ``parts``: with ``n_id`` and ``e_id``."""
        nodes = self.nodes_of(parts)
        sub, pos = self.csr.graph.induced_subgraph(nodes)
        rows = np.repeat(np.arange(sub.num_nodes, dtype=np.int64), sub.degrees())
        edge_index = torch.stack([torch.from_numpy(sub.indices.astype(np.int64)),
                                  torch.from_numpy(rows)])
        return batch_data(self.data, torch.from_numpy(nodes), self.csr.edge_ids(pos),
                          edge_index)

    def __getitem__(self, idx: int):
        idx = check_int("ClusterData: part index", idx, 0)
        if idx >= self.num_parts:
            raise IndexError(f"ClusterData: part {idx} of {self.num_parts}")
        return self.subgraph([idx])


class ClusterLoader:
    """Batches of ``batch_size`` parts of a :class:`ClusterData` (PyG's arguments;
    ``shuffle`` draws the parts' order from (seed, epoch); ``seed`` added, None draws one from
    torch's generator). DataLoader arguments such as ``num_workers`` are accepted and
    ignored."""

    def __init__(self, cluster_data: ClusterData, batch_size: int = 1, shuffle: bool = False,
                 drop_last: bool = False, seed: int | None = None, **kwargs):
        who = "ClusterLoader"
        check_kwargs(kwargs, who)
        if not isinstance(cluster_data, ClusterData):
            raise ConfigError(f"{who}: expected a scalegnn.pyg.ClusterData, got "
                              f"{type(cluster_data).__name__}")
        self.cluster_data = cluster_data
        self.batch_size = check_int(f"{who}: batch_size", batch_size)
        self.shuffle = check_flag(shuffle, f"{who}: shuffle")
        self.drop_last = check_flag(drop_last, f"{who}: drop_last")
        self.seed = seed_of(seed, who)
        self.epoch = 0

    def __len__(self) -> int:
        return num_batches(len(self.cluster_data), self.batch_size, self.drop_last)

    def __iter__(self):
        epoch, self.epoch = self.epoch, self.epoch + 1
        order = epoch_order(len(self.cluster_data), self.shuffle, self.seed, epoch)
        for b in range(len(self)):
            yield self.cluster_data.subgraph(order[b * self.batch_size:(b + 1) * self.batch_size])
