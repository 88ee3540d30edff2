"""Partition-parallel minibatch training (``distributed.mode: partition``; Demirci et al.'s
mini-batch setting): every rank draws the same GraphSAINT subgraph from one seeded stream,
computes the rows of it that the plan gives it, and exchanges only the subgraph's boundary rows.

Per step, with the subgraph's nodes V_s (local ids 0..m-1) and the plan's owner of each:

* rank r's inner rows are its nodes of V_s; its local adjacency keeps its rows of the
  normalized subgraph adjacency (GraphSAINT's α/deg values), columns = its inner nodes, then
  the boundary: the other ranks' nodes its rows reference, sorted by (owner, local id);
* every rank computes every rank's send lists from the subgraph it already holds (node u goes
  from its owner to each other part whose rows reference u), so no handshake is needed and
  the rows sent per graph layer are ``Σ_u (λ_u − 1)``, the connectivity-1 cut of the
  subgraph's column-net hypergraph: the volume ``scalegnn partition shp`` predicts;
* forward posts the boundary rows before each graph layer (the same overlapped exchange as
  full-graph training) and backward returns their gradients; the loss is Σ_v λ_v L_v over the
  rank's rows with weight W λ_v, and DistributedDataParallel averages the weight gradients (on
  a process group of their own), so the step equals single-process GraphSAINT on the same
  subgraph.

Evaluation: the layer-wise full-graph pass, a block of rows per rank, gathered (every rank holds
the graph). Each epoch record carries every step's rows and bytes sent (summed over ranks).
"""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist

from scalegnn.batch import Batch
from scalegnn.dist.ddp import GradientSync
from scalegnn.dist.exchange import RowExchange, split_adj
from scalegnn.dist.forward import overlapped_forward
from scalegnn.dist.shard import TorchShard
from scalegnn.dist.wrapped import WrappedMode
from scalegnn.engine.evaluate import full_graph_logits
from scalegnn.engine.metrics import compute_metrics
from scalegnn.errors import PlanError
from scalegnn.ops import SparseAdj


class SubgraphExchange(RowExchange):
    """The exchange maps and local adjacency of one rank for one subgraph (module docstring)."""

    def set_subgraph(self, owner: np.ndarray, adj, parts: int) -> np.ndarray:
        """Maps for the subgraph whose local CSR is ``adj`` (rows = columns = its nodes, with
        values) and whose node owners are ``owner``; returns this rank's inner local ids."""
        r, m = self.rank, owner.shape[0]
        own = np.flatnonzero(owner == r)
        pos = np.full(m, -1, dtype=np.int64)
        pos[own] = np.arange(own.shape[0])
        rows = np.repeat(np.arange(m, dtype=np.int64), np.diff(adj.indptr))
        cols = np.asarray(adj.indices, dtype=np.int64)
        cross = owner[rows] != owner[cols]
        pairs = np.unique(owner[rows[cross]].astype(np.int64) * m + cols[cross])  # (part, col)
        part_of, col_of = pairs // m, pairs % m
        mine = part_of == r                                   # columns I receive
        bd = col_of[mine]
        bd = bd[np.argsort(owner[bd], kind="stable")]          # by owner, then local id
        counts = np.bincount(owner[bd], minlength=parts)
        self.recv_peers = [q for q in range(parts) if counts[q]]
        self.recv_counts = {q: int(counts[q]) for q in self.recv_peers}
        send = owner[col_of] == r                             # columns I own that others need
        self.send_peers, self.send_rows = [], {}
        for q in np.unique(part_of[send]):
            idx = pos[col_of[send & (part_of == q)]]
            self.send_peers.append(int(q))
            self.send_rows[int(q)] = torch.as_tensor(idx, device=self.device)
        self.volume = int(pairs.shape[0])                     # rows sent per layer, all ranks
        # local adjacency: my rows; inner columns, then boundary columns
        colmap = pos.copy()
        colmap[bd] = own.shape[0] + np.arange(bd.shape[0])
        sel = owner[rows] == r
        np_dtype = torch.empty(0, dtype=self.dtype).numpy().dtype
        indptr = np.zeros(own.shape[0] + 1, dtype=np.int64)
        np.cumsum(np.diff(adj.indptr)[own], out=indptr[1:])
        self.n_in = own.shape[0]
        self.adj = SparseAdj(indptr, colmap[cols[sel]].astype(np.int32),
                             np.asarray(adj.data, dtype=np_dtype)[sel], own.shape[0] + bd.shape[0])
        self.split = split_adj(self.adj, self.n_in)
        return own


class PartitionParallelMode(WrappedMode):
    """Rank ``shard.rank`` of partition-parallel minibatch training: ``inner`` is the
    single-process GraphSAINT mode (its stream, normalization and dataset; the same on every
    rank), ``assignment`` the plan's node -> part."""

    name = "partition-parallel"

    def __init__(self, inner, assignment: np.ndarray, shard: TorchShard, *, plan_id=None,
                 settings: dict):
        if assignment.shape[0] != inner.dataset.num_nodes:
            raise PlanError(f"plan: {assignment.shape[0]} nodes assigned, the dataset has "
                            f"{inner.dataset.num_nodes}")
        if int(assignment.max(initial=0)) + 1 != shard.world:
            raise PlanError(f"plan: {int(assignment.max(initial=0)) + 1} parts but "
                            f"{shard.world} ranks run")
        # the gradients' all-reduces (and every other collective) on a group of their own:
        # they run while backward's boundary exchanges (the default group) are in flight
        timeout = settings["timeout"]
        grads = TorchShard(group=dist.new_group(timeout=timedelta(seconds=timeout)),
                           device=shard.device, timeout=timeout)
        super().__init__(inner, grads, settings["compression"])
        self.grads, self.assignment, self.plan_id = grads, np.asarray(assignment), plan_id
        self.settings = settings
        self.ex = SubgraphExchange(self.rank, device=shard.device, dtype=torch.float32,
                                   timeout=timeout)
        self._steps = []

    def identity(self) -> dict:
        return {**super().identity(), "plan": {"parts": self.world, "assignment": self.plan_id}}

    def setup(self, model, seed: int) -> None:
        torch.manual_seed(seed * 1000 + 7919 * (self.rank + 1))  # dropout masks differ per rank
        self.sync = GradientSync(model, self.grads, compression=self.compression,
                                 forward=self._forward)

    def _forward(self, model, x):
        if self.settings["overlap"]:
            return overlapped_forward(model, x, self.ex)
        return model(x, self.ex.adj, exchange=self.ex)

    # ---------------------------------------------------------------- steps
    def batches(self, epoch: int, skip: int = 0):
        self.ex.stats.reset()
        self.sync.reset()
        self._steps = []
        for batch in self.inner.batches(epoch, skip):
            own = self.ex.set_subgraph(self.assignment[batch.nodes], batch.adj, self.world)
            sel = torch.from_numpy(own)
            x = batch.x[own] if not isinstance(batch.x, torch.Tensor) else batch.x[sel]
            yield Batch(nodes=batch.nodes[own], adj=batch.adj, x=x, y=batch.y[sel],
                        loss_weight=batch.loss_weight[sel] * self.world,
                        meta={"stream_index": batch.meta.get("stream_index"),
                              "volume": self.ex.volume})

    def forward(self, model, batch) -> torch.Tensor:
        return self.sync.module(batch.x)

    def reduce(self, params, loss) -> float:
        self.sync.step_done()
        st = self.ex.stats
        self._steps.append((st.rows_sent, st.bytes_sent))   # this rank's running totals
        return self.grads.mean(float(loss.detach()))

    def epoch_stats(self) -> dict:
        st = self.ex.stats
        mine = [st.rows_sent, st.bytes_sent, st.comm_s, st.fwd_wait_s, self.sync.busy_s,
                self.sync.exposed_s]
        ranks = self.grads.gather_tensor(torch.tensor(mine, dtype=torch.float64)).numpy()
        totals = np.asarray(self._steps, dtype=np.float64).reshape(-1, 2)
        per_step = np.diff(totals, axis=0, prepend=np.zeros((1, 2)))
        steps = self.grads.gather_tensor(torch.from_numpy(per_step)).numpy().sum(0)
        busy = float(ranks[:, 4].sum())
        return {"step_rows_sent": [int(v) for v in steps[:, 0]],
                "step_bytes_sent": [int(v) for v in steps[:, 1]],
                "allreduce_hidden_share": min(1.0, max(0.0, 1 - float(ranks[:, 5].sum()) / busy))
                if busy else 0.0,
                "ranks": [{"rows_sent": float(r[0]), "bytes_sent": float(r[1]),
                           "comm_s": float(r[2]), "fwd_wait_s": float(r[3]),
                           "allreduce_s": float(r[4]), "allreduce_exposed_s": float(r[5])}
                          for r in ranks]}

    # ---------------------------------------------------------------- evaluation, ranks
    def evaluate(self, model, splits) -> dict:
        ds = self.inner.dataset
        logits = full_graph_logits(model, ds.graph, ds.features,
                                   self.inner.config.params["eval_batch_rows"],
                                   adj=self.inner.full_adj(), shard=self.grads)
        scores = model.predict(logits).numpy()
        return {s: compute_metrics(ds.labels[getattr(ds, f"{s}_idx")],
                                   scores[getattr(ds, f"{s}_idx")], ds.multilabel)
                for s in splits}
