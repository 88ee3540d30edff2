"""``DistTrainer``: one rank of partition-parallel full-graph training (BNS-GCN).

Each rank owns the rows of its plan folder. Per epoch: sample boundary nodes (p), forward
with the boundary exchange before every graph layer, loss over the rank's training nodes with
weight ``1 / |V_train|`` of the WHOLE graph, backward (boundary gradients go back to their
owners), one all-reduce (SUM) of the flattened weight gradients together with the loss, so

    Σ_ranks loss_r = (1/|V_train|) Σ_{v ∈ V_train} L_v = the single-process full-batch loss

and every rank applies the same update. Evaluation runs the exact exchange (p = 1), no dropout.
Rank 0 writes the run directory: config.yml, metrics.jsonl (one line per epoch with per-rank
compute / communication / wait / all-reduce time, bytes and peak memory), checkpoint.pt,
summary.json.
"""

from __future__ import annotations

import json
import os
import resource
import time
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist

from scalegnn.dist.exchange import BoundaryExchange, peer_error
from scalegnn.dist.forward import overlapped_forward
from scalegnn.dist.optim import Adam
from scalegnn.dist.plan import PartitionPlan, write_json, write_text
from scalegnn.errors import PlanError
from scalegnn.io import atomic_open
from scalegnn.nn.models import build_model

RANK_FIELDS = ("epoch_s", "compute_s", "comm_s", "wait_s", "allreduce_s", "bytes_sent",
               "bytes_recv", "kept_boundary", "peak_rss_mb", "cuda_peak_mb", "base_rss_mb", "overlap_s")


def compute_metrics(y_true: np.ndarray, scores: np.ndarray, multilabel: bool) -> dict:
    """The lead's ``scalegnn.train.metrics`` when present, else accuracy + F1 micro/macro."""
    try:
        from scalegnn.train.metrics import compute_metrics as cm
        return cm(y_true, scores, multilabel)
    except ImportError:
        pass
    if multilabel:
        pred = scores > 0
        t = y_true.astype(bool)
        tp, fp, fn = (t & pred).sum(), (~t & pred).sum(), (t & ~pred).sum()
        return {"f1_micro": float(2 * tp / max(2 * tp + fp + fn, 1))}
    pred = scores.argmax(1)
    acc = float((pred == y_true).mean()) if y_true.size else 0.0
    f1s = []
    for c in range(scores.shape[1]):
        tp = ((pred == c) & (y_true == c)).sum()
        den = (pred == c).sum() + (y_true == c).sum()
        if den:
            f1s.append(2 * tp / den)
    return {"f1_micro": acc, "accuracy": acc, "f1_macro": float(np.mean(f1s)) if f1s else 0.0}


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def current_rss_mb() -> float:
    """Resident set size now (Linux /proc), 0 where unavailable."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return 0.0


class DistTrainer:
    def __init__(self, plan: PartitionPlan, rank: int, world: int, cfg, device=None):
        if world != plan.parts:
            raise PlanError(f"{plan.root}: plan has {plan.parts} parts but {world} ranks run")
        self.plan, self.rank, self.world, self.cfg = plan, rank, world, cfg
        self.base_rss_mb = current_rss_mb()  # interpreter + torch, before this rank's data
        self.device = torch.device(device or "cpu")
        self.dtype = torch.float64 if cfg.dtype == "float64" else torch.float32
        part = plan.rank(rank)
        self.part = part
        task = plan.task
        self.multilabel = bool(task["multilabel"])
        self.x = torch.as_tensor(np.asarray(part.features), dtype=self.dtype, device=self.device)
        lab = np.asarray(part.labels)
        self.y = torch.as_tensor(lab, device=self.device, dtype=self.dtype if self.multilabel else torch.int64)
        self.labels_np = lab
        w = np.asarray(part.train_mask, dtype=np.float64) / max(plan.num_train, 1)
        self.train_w = torch.as_tensor(w, dtype=self.dtype, device=self.device)
        torch.manual_seed(cfg.seed)               # same init on every rank
        self.model = build_model(int(task["num_features"]), int(task["num_classes"]),
                                 multilabel=self.multilabel, **cfg.model_kwargs())
        self.model.to(device=self.device, dtype=self.dtype)
        torch.manual_seed(cfg.seed * 1000 + 7919 * (rank + 1))  # dropout masks differ per rank
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        self.optim = Adam(self.params, lr=cfg.lr, weight_decay=cfg.weight_decay)
        self.ex = BoundaryExchange(part, device=self.device, dtype=self.dtype,
                                   timeout=cfg.timeout, seed=cfg.seed)
        self.allreduce_s = 0.0

    # ------------------------------------------------------------------ collectives
    def _collective(self, fn, what: str):
        t0 = time.perf_counter()
        try:
            fn()
        except Exception as e:
            raise peer_error(self.rank, what, e, self.cfg.timeout) from None
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
        self._collective(lambda: dist.all_gather(outs, pad), "gather of predictions")
        return torch.cat([o[:int(k.item())] for o, k in zip(outs, ns)], 0)

    # ------------------------------------------------------------------ one step
    def forward(self) -> torch.Tensor:
        """Logits of the inner rows under the exchange's current (sampled or full) state."""
        if self.cfg.overlap:
            return overlapped_forward(self.model, self.x, self.ex)
        return self.model(self.x, self.ex.adj, exchange=self.ex)

    def train_step(self, epoch: int) -> float:
        """Sample, forward, backward, all-reduce. Leaves the reduced (clipped) gradients in
        ``.grad``; returns the global loss. The optimizer step is the caller's."""
        self.ex.sample(epoch, self.cfg.boundary_p)
        self.model.train()
        self.optim.zero_grad(set_to_none=False)
        logits = self.forward()
        loss = self.model.loss(logits, self.y, self.train_w)
        loss.backward()
        flat = torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1)
                          for p in self.params] + [loss.detach().reshape(1)])
        self.allreduce_s += self._collective(lambda: dist.all_reduce(flat, op=dist.ReduceOp.SUM),
                                             "all-reduce of gradients")
        off = 0
        for p in self.params:
            k = p.numel()
            if p.grad is None:
                p.grad = torch.zeros_like(p)
            p.grad.copy_(flat[off:off + k].view_as(p))
            off += k
        if self.cfg.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(self.params, self.cfg.grad_clip)
        return float(flat[-1].item())

    @torch.no_grad()
    def evaluate(self) -> dict:
        """Full-graph evaluation (exact exchange, no dropout); metrics on rank 0, {} elsewhere."""
        self.model.eval()
        self.ex.use_full()
        logits = self.forward()
        out = {}
        for split in ("val", "test"):
            mask = torch.as_tensor(np.asarray(getattr(self.part, f"{split}_mask")), device=self.device)
            scores = self.all_gather_rows(logits[mask].to(torch.float64))
            ys = self.all_gather_rows(self.y[mask].to(torch.float64 if self.multilabel else torch.int64))
            if self.rank == 0:
                y = ys.cpu().numpy()
                out[split] = compute_metrics(y if self.multilabel else y.astype(np.int64),
                                             scores.cpu().numpy(), self.multilabel)
        return out

    # ------------------------------------------------------------------ checkpoints
    def state(self, epoch: int, extra: dict) -> dict:
        return {"epoch": epoch, "model": self.model.state_dict(), "optim": self.optim.state_dict(),
                "fingerprint": self.plan.meta["fingerprint"]["hash"], **extra}

    def load_checkpoint(self, path) -> dict:
        path = Path(path)
        if not path.is_file():
            raise PlanError(f"--resume: {path} not found")
        ck = torch.load(path, map_location=self.device, weights_only=True)
        if ck.get("fingerprint") != self.plan.meta["fingerprint"]["hash"]:
            raise PlanError(f"--resume: {path} was trained on another graph than plan {self.plan.root}")
        self.model.load_state_dict(ck["model"])
        self.optim.load_state_dict(ck["optim"])
        return ck

    # ------------------------------------------------------------------ the loop
    def fit(self, out, resume: str | None = None, log=None) -> dict:
        cfg, rank = self.cfg, self.rank
        out = Path(out)
        start, best = 0, {"val": None, "epoch": -1, "test": None}
        if resume:
            ck = self.load_checkpoint(Path(resume) / "checkpoint.pt")
            start, best = int(ck["epoch"]) + 1, json.loads(ck.get("best", "{}")) or best
        if rank == 0:
            out.mkdir(parents=True, exist_ok=True)
            write_text(out / "config.yml", _yaml({"config": cfg.to_dict(), "plan": str(self.plan.root),
                                                  "world_size": self.world,
                                                  "device": str(self.device)}))
        metrics_f = open(out / "metrics.jsonl", "a", encoding="utf-8") if rank == 0 else None
        key = self.plan.task.get("metric", "f1_micro")
        last_eval = {}
        try:
            for epoch in range(start, cfg.epochs):
                self.ex.stats.reset()
                self.allreduce_s = 0.0
                if self.device.type == "cuda":
                    torch.cuda.reset_peak_memory_stats(self.device)
                t0 = time.perf_counter()
                loss = self.train_step(epoch)
                self.optim.step()
                epoch_s = time.perf_counter() - t0
                st = self.ex.stats
                mine = [epoch_s, epoch_s - st.comm_s - self.allreduce_s, st.comm_s, st.wait_s,
                        self.allreduce_s, st.bytes_sent, st.bytes_recv, self.ex.num_kept,
                        peak_rss_mb(), torch.cuda.max_memory_allocated(self.device) / 2**20
                        if self.device.type == "cuda" else 0.0, self.base_rss_mb, st.overlap_s]
                ranks = self.all_gather_rows(torch.tensor([mine], dtype=torch.float64,
                                                          device=self.device)).cpu().numpy()
                rec = {"epoch": epoch, "loss": loss, "p": cfg.boundary_p,
                       "ranks": [dict(zip(RANK_FIELDS, map(float, r))) for r in ranks]}
                if (epoch + 1) % cfg.eval_every == 0 or epoch + 1 == cfg.epochs:
                    last_eval = self.evaluate()
                    rec.update(last_eval)
                    if rank == 0:
                        v = last_eval["val"].get(key, last_eval["val"].get("f1_micro"))
                        if best["val"] is None or v > best["val"]:
                            best = {"val": v, "epoch": epoch, "test": last_eval["test"]}
                        self._save_checkpoint(out, epoch, best)
                if rank == 0:
                    metrics_f.write(json.dumps(rec) + "\n")
                    metrics_f.flush()
                    if log:
                        log(rec)
        finally:
            if metrics_f:
                metrics_f.close()
        summary = {}
        if rank == 0:
            summary = {"epochs": cfg.epochs, "world_size": self.world, "boundary_p": cfg.boundary_p,
                       "final": last_eval, "best": best, "peak_rss_mb": peak_rss_mb(),
                       "plan": str(self.plan.root)}
            write_json(out / "summary.json", summary)
        return summary

    def _save_checkpoint(self, out: Path, epoch: int, best: dict):
        with atomic_open(out / "checkpoint.pt", "wb") as f:
            torch.save(self.state(epoch, {"best": json.dumps(best)}), f)


def _yaml(obj) -> str:
    import yaml
    return yaml.safe_dump(obj, sort_keys=False)
