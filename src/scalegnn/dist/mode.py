"""``DistributedMode``: one rank of partition-parallel full-graph training (BNS-GCN), driven by
the one training loop (:class:`scalegnn.train.Trainer`).

Each rank owns the rows of its plan folder; its "batch" is the partition as a
:class:`~scalegnn.batch.Batch` with a rectangular adjacency (inner columns, then boundary
columns owned by other ranks). Per epoch (one step): sample boundary nodes (``boundary_p``),
forward with the boundary exchange before every graph layer, loss over the rank's training nodes
with weight ``W / |V_train|`` of the WHOLE graph (W ranks), backward (boundary gradients go back
to their owners) while torch's DistributedDataParallel averages the weight gradients in buckets
as they become ready (:class:`~scalegnn.dist.ddp.GradientSync`, on a process group of its own),
so the average is the SUM of the ranks' 1/|V_train|-weighted gradients and

    mean_ranks loss_r = (1/|V_train|) Σ_{v ∈ V_train} L_v = the single-process full-batch loss

and every rank applies the same update. Evaluation runs the exact exchange (p = 1, no dropout)
and gathers every rank's predictions to every rank, so all ranks agree on the best epoch.
Each epoch's metrics record carries every rank's compute / communication / wait / all-reduce
time, bytes, forward rows sent and peak memory (``ranks``), and the overlapped share of the
forward exchanges (``overlap_share``: local compute / (local compute + blocked)).
"""

from __future__ import annotations

import time
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist

from scalegnn.batch import Batch
from scalegnn.dist.ddp import GradientSync
from scalegnn.dist.exchange import BoundaryExchange, peer_error
from scalegnn.dist.forward import overlapped_forward
from scalegnn.dist.plan import PartitionPlan
from scalegnn.dist.shard import TorchShard
from scalegnn.engine.metrics import compute_metrics
from scalegnn.engine.mode import Mode
from scalegnn.errors import PlanError
from scalegnn.graph import Graph
from scalegnn.memory import peak_rss_bytes, rss_bytes

RANK_FIELDS = ("epoch_s", "compute_s", "comm_s", "wait_s", "allreduce_s", "bytes_sent",
               "bytes_recv", "kept_boundary", "peak_rss_mb", "cuda_peak_mb", "base_rss_mb",
               "overlap_s", "fwd_wait_s", "rows_sent", "overlap_share", "allreduce_exposed_s")


def peak_rss_mb() -> float:
    """This rank's peak resident MiB (:func:`scalegnn.memory.peak_rss_bytes`: its own
    high-water mark, not one carried over from the process that started it)."""
    return peak_rss_bytes() / 2**20


def current_rss_mb() -> float:
    """Resident MiB now (:func:`scalegnn.memory.rss_bytes`)."""
    return rss_bytes() / 2**20


def _share(overlap_s: float, wait_s: float) -> float:
    return overlap_s / (overlap_s + wait_s) if overlap_s + wait_s > 0 else 0.0


class DistributedMode(Mode):
    name = "distributed"
    mid_epoch_checkpoints = False  # one step per epoch; ranks save together at epoch ends

    def __init__(self, plan: PartitionPlan, rank: int, world: int, config, device=None):
        if world != plan.parts:
            raise PlanError(f"{plan.root}: plan has {plan.parts} parts but {world} ranks run")
        self.base_rss_mb = current_rss_mb()  # interpreter + torch, before this rank's data
        self.plan, self.rank, self.world, self.config = plan, rank, world, config
        self.settings = config.section("distributed")
        self.device = torch.device(device or "cpu")
        self.dtype = torch.float64 if self.settings["dtype"] == "float64" else torch.float32
        task = plan.task
        self.num_features, self.num_classes = int(task["num_features"]), int(task["num_classes"])
        self.multilabel = bool(task["multilabel"])
        self.metric = task.get("metric", "f1_micro")
        self.dataset_name = plan.meta.get("dataset", {}).get("name") or str(plan.root)
        self.part = part = plan.rank(rank)
        x = torch.as_tensor(np.asarray(part.features), dtype=self.dtype, device=self.device)
        if config.params["standardize"]:
            x = self._standardize(x, np.asarray(part.train_mask))
        lab = np.asarray(part.labels)
        y = torch.as_tensor(lab, device=self.device,
                            dtype=self.dtype if self.multilabel else torch.int64)
        # W / |V_train|: DDP averages over the W ranks, which makes the SUM of 1/|V_train| losses
        w = np.asarray(part.train_mask, dtype=np.float64) * world / max(plan.num_train, 1)
        n_in = part.num_inner
        self.batch = Batch(
            nodes=np.asarray(part.inner), x=x, y=y,
            adj=Graph(np.asarray(part.indptr), np.asarray(part.indices),  # no copy
                      num_cols=n_in + part.num_boundary, validate=False),  # RankPart checked it
            col_nodes=np.concatenate([np.asarray(part.inner), np.asarray(part.boundary)]),
            loss_weight=torch.as_tensor(w, dtype=self.dtype, device=self.device),
            meta={"rank": rank})
        self.ex = BoundaryExchange(part, device=self.device, dtype=self.dtype,
                                   timeout=self.settings["timeout"])  # seed: setup()
        # the gradients' all-reduces on a group of their own: they run while backward's
        # boundary exchanges (point-to-point on the default group) are in flight
        timeout = self.settings["timeout"]
        self.shard = TorchShard(group=dist.new_group(timeout=timedelta(seconds=timeout)),
                                device=self.device, timeout=timeout)
        self.sync = None
        self._t_epoch = None

    def identity(self) -> dict:
        fp = self.plan.meta["fingerprint"]
        task = self.plan.task
        return {"mode": self.name,
                "dataset": {"name": self.dataset_name, "nodes": int(fp["num_nodes"]),
                            "edges": int(fp["num_edges"]), "features": self.num_features,
                            "classes": self.num_classes, "hash": fp["hash"]},
                "plan": {"parts": self.plan.parts, "method": self.plan.meta.get("method"),
                         "train": int(task["num_train"]),
                         "assignment": self.plan.meta.get("plan_id") or
                         self.plan.meta["totals"].get("comm_volume")},
                "world": self.world}

    def run_info(self) -> dict:
        return {"dataset": self.dataset_name, "plan": str(self.plan.root),
                "source": self.plan.meta.get("dataset", {}).get("source", ""),
                "backend": dist.get_backend() if dist.is_initialized() else None,
                "boundary_p": self.settings["boundary_p"]}

    def setup(self, model, seed: int) -> None:
        self.ex.seed = int(seed)  # boundary draws hash (seed, epoch, receiver, node)
        torch.manual_seed(seed * 1000 + 7919 * (self.rank + 1))  # dropout masks differ per rank
        self.sync = GradientSync(model, self.shard, compression=self.settings["compression"],
                                 forward=self._forward)

    # ------------------------------------------------------------------ collectives
    def _collective(self, fn, what: str) -> float:
        t0 = time.perf_counter()
        try:
            fn()
        except Exception as e:
            raise peer_error(self.rank, what, e, self.settings["timeout"]) from None
        return time.perf_counter() - t0

    def all_gather_rows(self, t: torch.Tensor) -> torch.Tensor:
        """Concatenate every rank's rows of ``t`` (rank order); shapes may differ in rows."""
        n = torch.tensor([t.shape[0]], dtype=torch.int64, device=self.device)
        ns = [torch.zeros_like(n) for _ in range(self.world)]
        self._collective(lambda: dist.all_gather(ns, n), "gather of row counts")
        m = int(max(int(v.item()) for v in ns))
        pad = torch.zeros((m,) + tuple(t.shape[1:]), dtype=t.dtype, device=self.device)
        pad[:t.shape[0]] = t
        outs = [torch.empty_like(pad) for _ in range(self.world)]
        self._collective(lambda: dist.all_gather(outs, pad), "gather of rows")
        return torch.cat([o[:int(k.item())] for o, k in zip(outs, ns)], 0)

    def gather(self, t: torch.Tensor) -> torch.Tensor:
        t = t.to(self.device)
        outs = [torch.empty_like(t) for _ in range(self.world)]
        self._collective(lambda: dist.all_gather(outs, t), "gather of checkpoint state")
        return torch.stack([o.cpu() for o in outs])

    def sync_model(self, model) -> None:
        for v in model.state_dict().values():
            self._collective(lambda v=v: dist.broadcast(v, src=0), "broadcast of the best model")

    def _standardize(self, x: torch.Tensor, train_mask: np.ndarray) -> torch.Tensor:
        """Features -> z-scores by the WHOLE graph's training-node statistics (all-reduced)."""
        xt = x[torch.as_tensor(train_mask, device=self.device)].to(torch.float64)
        s = torch.stack([xt.sum(0), (xt * xt).sum(0)])
        s = torch.cat([s.reshape(-1), torch.tensor([xt.shape[0]], dtype=torch.float64,
                                                   device=self.device)])
        self._collective(lambda: dist.all_reduce(s, op=dist.ReduceOp.SUM),
                         "all-reduce of feature statistics")
        f = x.shape[1]
        n = max(float(s[-1]), 1.0)
        mean = s[:f] / n
        std = (s[f:2 * f] / n - mean * mean).clamp_min(0).sqrt()
        std[std == 0] = 1.0
        return ((x.to(torch.float64) - mean) / std).to(self.dtype)

    # ------------------------------------------------------------------ one step per epoch
    def num_batches(self, epoch: int) -> int:
        return 1

    def batches(self, epoch: int, skip: int = 0):
        if skip:
            return
        self.ex.stats.reset()
        self.sync.reset()
        if self.device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(self.device)
        self._t_epoch = time.perf_counter()
        self.ex.sample(epoch, self.settings["boundary_p"])
        yield self.batch

    def _forward(self, model, x) -> torch.Tensor:
        if self.settings["overlap"]:
            return overlapped_forward(model, x, self.ex)
        return model(x, self.ex.adj, exchange=self.ex)

    def forward(self, model, batch) -> torch.Tensor:
        if torch.is_grad_enabled():    # training: through DDP (gradients averaged in backward)
            return self.sync.module(batch.x)
        return self._forward(model, batch.x)

    def reduce(self, params, loss: torch.Tensor) -> float:
        """DDP has averaged the gradients in backward; the step's loss is the ranks' mean."""
        self.sync.step_done()
        return self.shard.mean(float(loss.detach()))

    def epoch_stats(self) -> dict:
        epoch_s = time.perf_counter() - self._t_epoch if self._t_epoch else 0.0
        st = self.ex.stats
        exposed = self.sync.exposed_s
        mine = [epoch_s, epoch_s - st.comm_s - exposed, st.comm_s, st.wait_s,
                self.sync.busy_s, st.bytes_sent, st.bytes_recv, self.ex.num_kept, peak_rss_mb(),
                torch.cuda.max_memory_allocated(self.device) / 2**20
                if self.device.type == "cuda" else 0.0, self.base_rss_mb, st.overlap_s,
                st.fwd_wait_s, st.rows_sent, _share(st.overlap_s, st.fwd_wait_s), exposed]
        ranks = self.gather(torch.tensor(mine, dtype=torch.float64)).numpy()
        # overlapped share: of the time forward rows were in flight, the part local compute
        # filled (the rest is fwd_wait_s, blocked); 0 without the overlapped forward
        share = _share(float(ranks[:, RANK_FIELDS.index("overlap_s")].sum()),
                       float(ranks[:, RANK_FIELDS.index("fwd_wait_s")].sum()))
        busy = float(ranks[:, RANK_FIELDS.index("allreduce_s")].sum())
        hidden = 1 - float(ranks[:, RANK_FIELDS.index("allreduce_exposed_s")].sum()) / busy \
            if busy > 0 else 0.0
        return {"p": self.settings["boundary_p"], "overlap_share": share,
                "allreduce_hidden_share": min(1.0, max(0.0, hidden)),
                "ranks": [dict(zip(RANK_FIELDS, map(float, r))) for r in ranks]}

    def summary_extra(self) -> dict:
        peaks = self.gather(torch.tensor([peak_rss_mb()], dtype=torch.float64)).reshape(-1)
        return {"world_size": self.world, "boundary_p": self.settings["boundary_p"],
                "plan": str(self.plan.root), "peak_rss_mb": [float(v) for v in peaks]}

    def close(self) -> None:
        """Release DDP (before the process group goes; evaluation runs without it)."""
        self.sync = None

    # ------------------------------------------------------------------ evaluation
    @torch.no_grad()
    def evaluate(self, model, splits) -> dict:
        """Full-graph evaluation (exact exchange, no dropout), metrics on every rank."""
        model.eval()
        self.ex.use_full()
        logits = self.forward(model, self.batch)
        out = {}
        for split in splits:
            mask = torch.as_tensor(np.asarray(getattr(self.part, f"{split}_mask")),
                                   device=self.device)
            scores = self.all_gather_rows(model.predict(logits[mask]).to(torch.float64))
            ys = self.all_gather_rows(self.batch.y[mask].to(
                torch.float64 if self.multilabel else torch.int64))
            y = ys.cpu().numpy()
            out[split] = compute_metrics(y if self.multilabel else y.astype(np.int64),
                                         scores.cpu().numpy(), self.multilabel)
        return out
