"""GraphSAINT minibatch training: sampled subgraphs in, full-graph evaluation out.

An epoch is ``|V_train| / |V_s|`` iterations (the loader's length). Each iteration runs the
complete model on one sampled subgraph with the normalized adjacency and loss weights of
SPEC §1.2, clips the gradient norm at ``grad_clip`` and takes an Adam step. Every
``eval_every`` epochs the model is evaluated on the full graph (layer by layer, row blocks);
the best validation state is kept, and test metrics are reported for it at the end.
"""

from __future__ import annotations

import os
import platform
import sys
import time

import numpy as np
import torch

from scalegnn.config import Config
from scalegnn.data.transforms import standardize_features
from scalegnn.errors import ConfigError
from scalegnn.nn import build_model
from scalegnn.nn.models import MODEL_OPTIONS
from scalegnn.ops import SparseAdj
from scalegnn.threads import keep_freed_memory
from scalegnn.train.evaluate import full_graph_logits
from scalegnn.train.metrics import compute_metrics
from scalegnn.train.rundir import RunDir


def seed_everything(seed: int):
    np.random.seed(seed % (2**32))
    torch.manual_seed(seed)


class Trainer:
    """Train a GNN on ``dataset`` with ``config``; write the run directory ``out_dir``.

    >>> result = Trainer(dataset, Config.from_yaml("configs/cora_rw.yml"), "runs/cora").fit()
    >>> result["test"]["accuracy"]
    """

    def __init__(self, dataset, config: Config | None = None, out_dir=None, *, seed: int = 0,
                 device=None, progress: bool = True, resume: bool = False):
        self.config = (config or Config()).validate()
        keep_freed_memory()  # activations are reused buffers, not fresh pages, every step
        if self.config.params["standardize"] and not dataset.meta.get("standardized"):
            dataset = standardize_features(dataset)
        self.dataset = dataset
        self.seed = int(seed)
        self.device = torch.device(device or "cpu")
        self.progress = progress
        self.run = RunDir(out_dir, resume=resume) if out_dir is not None else None
        self.resume = resume
        net, params = self.config.network, self.config.params
        loss = net["loss"] or ("sigmoid" if dataset.multilabel else "softmax")
        if (loss == "sigmoid") != dataset.multilabel:
            raise ConfigError(f"network.loss: {loss!r} does not fit {dataset.name}, which is "
                              f"{'multi' if dataset.multilabel else 'single'}-label "
                              f"(use {'sigmoid' if dataset.multilabel else 'softmax'})")
        net["loss"] = loss
        seed_everything(self.seed)
        self.model = build_model(dataset.num_features, dataset.num_classes, model=net["model"],
                                 hidden=net["dim"], arch=net["arch"], aggr=net["aggr"],
                                 bias=net["bias"], act=net["act"], dropout=params["dropout"],
                                 multilabel=dataset.multilabel,
                                 **{k: net[k] for k in MODEL_OPTIONS if k in net}).to(self.device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=params["lr"],
                                          weight_decay=params["weight_decay"])
        self._full_adj = None
        self.history: list[dict] = []

    # ------------------------------------------------------------------ evaluation
    def full_adj(self) -> SparseAdj:
        if self._full_adj is None:
            self._full_adj = SparseAdj.from_graph(self.dataset.graph.row_normalized())
        return self._full_adj

    def evaluate(self, splits=("val",)) -> dict:
        """Metrics per split from one full-graph inference pass (on the CPU)."""
        model = self.model if self.device.type == "cpu" else _cpu_copy(self.model)
        logits = full_graph_logits(model, self.dataset.graph, self.dataset.features,
                                   self.config.params["eval_batch_rows"], adj=self.full_adj())
        scores = model.predict(logits).numpy()
        out = {}
        for split in splits:
            idx = getattr(self.dataset, f"{split}_idx")
            out[split] = compute_metrics(self.dataset.labels[idx], scores[idx], self.dataset.multilabel)
        return out

    # ------------------------------------------------------------------ training
    def _loader(self, phase_index: int):
        from scalegnn.sampling import GraphSAINTLoader  # noqa: PLC0415 (numba compile on first use)
        params = self.config.params
        phase = self.config.phases[phase_index]
        threads = params["sampler_threads"] or torch.get_num_threads()
        return GraphSAINTLoader(
            self.dataset, phase["sampler"], self.config.sampler_params(phase),
            transductive=params["transductive"], coverage=params["sample_coverage"],
            normalize=params["norm_loss"] and params["norm_aggr"], seed=self.seed + 1000 * phase_index,
            num_threads=threads, pool_depth=params["pool_depth"],
            clip_multiple=params["clip_multiple"])

    def train_step(self, batch) -> float:
        self.model.train()
        adj = SparseAdj.from_graph(batch.adj, batch.adj_t_perm)
        batch.to(self.device)
        self.optimizer.zero_grad(set_to_none=True)
        logits = self.model(batch.x, adj)
        loss = self.model.loss(logits, batch.y, batch.loss_weight)
        loss.backward()
        if self.config.params["grad_clip"] > 0:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.config.params["grad_clip"])
        self.optimizer.step()
        return float(loss.detach())

    def fit(self) -> dict:
        """Train all phases; return ``{"val": {...}, "test": {...}, "best_epoch": ..., ...}``."""
        cfg, run = self.config, self.run
        metric = self.dataset.metric
        start_epoch, best = 0, {"epoch": -1, "value": -np.inf}
        if self.resume:
            start_epoch, best = self._restore()
        elif run is not None:
            run.write_text("config.yml", cfg.to_yaml())
            run.write_json("run.json", self._run_info())
        bar = _progress(cfg.epochs, start_epoch, self.progress)
        t_fit = time.perf_counter()
        totals = {"sample_s": 0.0, "compute_s": 0.0, "eval_s": 0.0, "presample_s": 0.0}
        phase_idx, loader = None, None
        try:
            for epoch in range(start_epoch, cfg.epochs):
                idx = next(i for i, p in enumerate(cfg.phases) if epoch < p["end"])
                if idx != phase_idx:
                    if loader is not None:
                        loader.close()
                    loader, phase_idx = self._loader(idx), idx
                    totals["presample_s"] += loader.presample_seconds
                rec = self._epoch(epoch, loader)
                totals["sample_s"] += rec["sample_s"]
                totals["compute_s"] += rec["compute_s"]
                if (epoch + 1) % cfg.params["eval_every"] == 0 or epoch + 1 == cfg.epochs:
                    t0 = time.perf_counter()
                    rec["val"] = self.evaluate(("val",))["val"]
                    rec["eval_s"] = time.perf_counter() - t0
                    totals["eval_s"] += rec["eval_s"]
                    value = rec["val"].get(metric, float("nan"))
                    if value > best["value"]:
                        best = {"epoch": epoch, "value": value}
                        if run is not None:
                            run.save("best.pt", {"model": self.model.state_dict(), "epoch": epoch,
                                                 "val": rec["val"]})
                        else:
                            self._best_state = _clone_state(self.model)
                self.history.append(rec)
                if run is not None:
                    run.append_metrics(rec)
                    run.save("last.pt", self._state(epoch, best))
                bar.update(1)
                bar.set_postfix_str(_postfix(rec, metric))
        finally:
            bar.close()
            if loader is not None:
                loader.close()
        return self._finish(best, totals, time.perf_counter() - t_fit)

    def _epoch(self, epoch: int, loader, on_batch=None) -> dict:
        """One pass over ``loader``; ``on_batch(batch)`` (benchmarks) sees each batch first."""
        losses, t_sample, t_compute = [], 0.0, 0.0
        it = iter(loader)
        while True:
            t0 = time.perf_counter()
            batch = next(it, None)
            t1 = time.perf_counter()
            t_sample += t1 - t0
            if batch is None:
                break
            if on_batch is not None:
                on_batch(batch)
            losses.append(self.train_step(batch))
            t_compute += time.perf_counter() - t1
        return {"epoch": epoch, "loss": float(np.mean(losses)) if losses else float("nan"),
                "iterations": len(losses), "sample_s": t_sample, "compute_s": t_compute}

    # ------------------------------------------------------------------ state
    def _state(self, epoch, best) -> dict:
        return {"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
                "epoch": epoch, "best": best, "seed": self.seed,
                "torch_rng": torch.get_rng_state(), "numpy_rng": np.random.get_state()}

    def _restore(self):
        state = self.run.load("last.pt")
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        torch.set_rng_state(state["torch_rng"])
        np.random.set_state(state["numpy_rng"])
        self.run.truncate_metrics(state["epoch"])
        self.history = self.run.read_metrics()
        return state["epoch"] + 1, state["best"]

    def _finish(self, best, totals, wall) -> dict:
        if self.run is not None and self.run.file("best.pt").exists():
            self.model.load_state_dict(self.run.load("best.pt")["model"])
        elif getattr(self, "_best_state", None) is not None:
            self.model.load_state_dict(self._best_state)
        t0 = time.perf_counter()
        final = self.evaluate(("train", "val", "test"))
        totals["eval_s"] += time.perf_counter() - t0
        summary = {"dataset": self.dataset.name, "metric": self.dataset.metric,
                   "best_epoch": best["epoch"], "epochs": self.config.epochs, "seed": self.seed,
                   **final, "time": {"wall_s": wall, **totals}}
        if self.run is not None:
            self.run.write_json("summary.json", summary)
            from scalegnn.report import plot_run  # noqa: PLC0415 (matplotlib is optional)
            plot_run(self.run.path)
        return summary

    def _run_info(self) -> dict:
        return {"dataset": self.dataset.name, "source": str(self.dataset.source), "seed": self.seed,
                "torch_threads": torch.get_num_threads(), "device": str(self.device),
                "python": platform.python_version(), "torch": torch.__version__,
                "argv": sys.argv, "pid": os.getpid()}


def _cpu_copy(model):
    import copy  # noqa: PLC0415
    return copy.deepcopy(model).cpu()


def _clone_state(model) -> dict:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def _progress(total, initial, enabled):
    from tqdm.auto import tqdm  # noqa: PLC0415
    return tqdm(total=total, initial=initial, disable=not enabled, unit="epoch", dynamic_ncols=True,
                file=sys.stderr)


def _postfix(rec, metric) -> str:
    s = f"loss={rec['loss']:.4f}"
    if "val" in rec:
        s += f" val_{metric}={rec['val'].get(metric, float('nan')):.4f}"
    s += f" sample={rec['sample_s']:.1f}s compute={rec['compute_s']:.1f}s"
    if "eval_s" in rec:
        s += f" eval={rec['eval_s']:.1f}s"
    return s
