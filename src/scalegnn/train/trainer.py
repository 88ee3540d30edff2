"""The one training loop of every mode (GraphSAINT, distributed; shaDow-GNN plugs in the same way).

A :class:`~scalegnn.engine.mode.Mode` says where batches come from; this loop does the rest:
build the model (``scalegnn.nn``) and the optimizer, run the epochs (each batch: forward, loss
with the batch's loss weights, backward, the mode's gradient reduction, gradient clipping at
``grad_clip``, an Adam step), evaluate every ``eval_every`` epochs, keep the best validation
state, report test metrics for it at the end, and write the run directory. Each epoch's
learning rate comes from ``params.lr_schedule`` (:class:`~scalegnn.engine.optim.LRSchedule`);
training stops early once ``params.patience`` validation passes in a row bring no better
validation metric, or once ``params.time_budget`` training seconds are spent (the run's clock,
:mod:`scalegnn.engine.runclock`), and ``summary.json`` says why (``stopped``, ``epochs_run``).
With ``params.flush_denormal`` (default) the process computes with denormal floats flushed
to 0 from the trainer's construction until ``fit`` returns (``torch.set_flush_denormal``; torch
has no getter, so the end restores torch's default, off).

Exact resume: ``last.pt`` (:mod:`scalegnn.engine.checkpoint`) holds the model, the optimizer,
every rank's random-generator state, the batch stream's position, the learning-rate
schedule's and early stopping's state (plain numbers) and the running epoch's partial sums; it is written at every epoch end and, in modes that allow it, also mid-epoch once
``checkpoint_seconds`` have passed since the last one. A run killed at any point and resumed
from ``last.pt`` ends with the same numbers as the uninterrupted run (same seed and threads).

Epochs are numbered from 1 everywhere a user sees them (metrics.jsonl, summary.json, console):
epoch k is the k-th pass, and phase ``end: k`` trains through epoch k.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import numpy as np
import torch

from scalegnn.config import Config
from scalegnn.engine import checkpoint as ckpt
from scalegnn.engine.console import postfix, progress_bar
from scalegnn.engine.jitclock import compile_seconds, compile_since
from scalegnn.engine.mode import Mode
from scalegnn.engine.optim import Adam, LRSchedule
from scalegnn.engine.runclock import RunClock
from scalegnn.engine.rundir import RunDir, command_line, run_info
from scalegnn.errors import ConfigError, TrainingError
from scalegnn.faults import crash_point
from scalegnn.io import read_json_object
from scalegnn.report import report_after_run
from scalegnn.threads import keep_freed_memory, trim_heap
from scalegnn.train.build import build_run_model, guard_memory, resolve_device, seed_everything
from scalegnn.train.modes import mode_for

ZERO_TOTALS = {"sample_s": 0.0, "compute_s": 0.0, "eval_s": 0.0, "presample_s": 0.0}
"""The seconds a run adds up (a resumed run starts from its checkpoint's, missing ones 0)."""


class Trainer:
    """Train a GNN on ``source`` (a Dataset: GraphSAINT mode, or a :class:`Mode`) with
    ``config`` (None: the built-in default, :meth:`Config.builtin`); write the run directory
    ``out_dir`` (None: nothing is written).

        >>> result = Trainer(dataset, Config.from_yaml("configs/shared/cora_rw.yml"), "runs/cora").fit()
        >>> result["test"]["accuracy"]

    ``resume``: continue the run in ``out_dir`` from its ``last.pt`` (a run that died before its
    first checkpoint starts over); ``overwrite``: replace the run in ``out_dir``.
    ``run_info``: extra fields for run.json (the CLI records the data spec, split and threads).
    ``force``: train despite :func:`guard_memory`; ``model``: see :func:`build_run_model`.
    """

    def __init__(self, source, config: Config | None = None, out_dir=None, *, seed: int = 0,
                 device=None, progress: bool = True, resume: bool = False,
                 overwrite: bool = False, run_info: dict | None = None,
                 force: bool = False, model: torch.nn.Module | None = None):
        self.config = (config or Config.builtin()).validate()
        self.device = resolve_device(device)
        keep_freed_memory()  # activations are reused buffers, not fresh pages, every step
        # process-wide, like the malloc settings: Adam's second moments of tiny gradients are
        # denormal, and x86 computes on denormals ~100x slower (GPUs flush them by default)
        torch.set_flush_denormal(bool(self.config.params["flush_denormal"]))
        self.seed = int(seed)
        guard_memory(source, self.config, force)  # before the mode copies or samples anything
        self.mode = source if isinstance(source, Mode) else \
            mode_for(source, self.config, seed=self.seed)
        self.config.validate_for_mode(self.mode.name)
        net, params = self.config.network, self.config.params
        loss = net["loss"] or ("sigmoid" if self.mode.multilabel else "softmax")
        if (loss == "sigmoid") != self.mode.multilabel:
            kind = "multi" if self.mode.multilabel else "single"
            raise ConfigError(f"network.loss: {loss!r} does not fit {self.mode.dataset_name}, "
                              f"which is {kind}-label (use "
                              f"{'sigmoid' if self.mode.multilabel else 'softmax'})")
        net["loss"] = loss
        seed_everything(self.seed)
        self.model = build_run_model(self.mode, self.config, model)
        self.model.to(device=self.device, dtype=self.mode.dtype)
        self.mode.setup(self.model, self.seed)
        trim_heap()  # loading's freed temporaries: the never-trimmed heap would keep them
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer = Adam(self.params, lr=params["lr"], weight_decay=params["weight_decay"])
        self.schedule = LRSchedule.from_params(params, self.config.epochs)
        self.progress = progress and self.mode.is_writer
        self.out_dir = Path(out_dir) if out_dir is not None else None
        self.resume = bool(resume) and self.out_dir is not None
        self.extra_info = dict(run_info or {}, **({"python_model": type(model).__name__}
                                                  if model is not None else {}))
        self.run = None
        if self.out_dir is not None and self.mode.is_writer:
            self.run = RunDir(self.out_dir, resume=self.resume, overwrite=overwrite,
                              loggers=self.config.params["loggers"])
        self.history: list[dict] = []
        self.clock = RunClock(self.config.params["time_budget"], self.mode.gather)
        self._best_state = None
        self._identity = None

    def identity(self) -> dict:
        if self._identity is None:
            self._identity = self.mode.identity()
        return self._identity

    # ------------------------------------------------------------------ one step
    def train_step(self, batch) -> float:
        """Forward, loss, backward, reduction across ranks, clip, Adam step; the global loss."""
        self.model.train()
        batch.to(self.device)
        self.optimizer.zero_grad(set_to_none=True)
        logits = self.mode.forward(self.model, batch)
        loss = self.model.loss(logits, batch.y, batch.loss_weight)
        loss.backward()
        value = self.mode.reduce(self.params, loss)
        if math.isfinite(value):
            if self.config.params["grad_clip"] > 0:
                torch.nn.utils.clip_grad_norm_(self.params, self.config.params["grad_clip"])
            self.optimizer.step()
        return value

    def evaluate(self, splits=("val",)) -> dict:
        return self.mode.evaluate(self.model, splits)

    def run_epoch(self, epoch: int, skip: int = 0, partial: dict | None = None, on_batch=None,
                  checkpoint=None) -> dict:
        """One pass over the mode's batches of 0-based ``epoch`` (after ``skip`` done ones
        whose losses and times are in ``partial``). ``on_batch(batch)`` (benchmarks) sees each
        batch first; ``checkpoint(epoch, i, partial)`` is offered a save after each batch."""
        losses = list(partial["losses"]) if partial else []
        t_sample = partial["sample_s"] if partial else 0.0
        t_compute = partial["compute_s"] if partial else 0.0
        t_pre = time.perf_counter()
        total = self.mode.num_batches(epoch)  # may build the phase's loader (pre-sampling)
        t_pre = time.perf_counter() - t_pre
        it = self.mode.batches(epoch, skip)
        i = skip
        while True:
            t0 = time.perf_counter()
            batch = next(it, None)
            t1 = time.perf_counter()
            t_sample += t1 - t0
            if batch is None:
                break
            if on_batch is not None:
                on_batch(batch)
            loss = self.train_step(batch)
            t_compute += time.perf_counter() - t1
            if not math.isfinite(loss):
                raise TrainingError(
                    f"epoch {epoch + 1}, iteration {i + 1}: the training loss became {loss}; "
                    f"lower params.lr (now {self.config.params['lr']}), keep params.grad_clip > 0, "
                    f"or check the features for extreme values" + (
                        " (last.pt holds the last good checkpoint)" if self.out_dir is not None
                        and (self.out_dir / "last.pt").is_file() else ""))
            losses.append(loss)
            i += 1
            crash_point("batch")
            if checkpoint is not None and i < total:
                checkpoint(epoch, i, {"losses": losses, "sample_s": t_sample,
                                      "compute_s": t_compute})
        rec = {"epoch": epoch + 1, "loss": float(np.mean(losses)) if losses else float("nan"),
               "iterations": len(losses), "sample_s": t_sample, "compute_s": t_compute}
        if t_pre >= 0.01:
            rec["presample_s"] = t_pre
        return rec

    # ------------------------------------------------------------------ the loop
    def fit(self) -> dict:
        """Train all phases; return ``{"val": {...}, "test": {...}, "best_epoch": ..., ...}``."""
        try:
            return self._fit()
        finally:
            if self.config.params["flush_denormal"]:
                torch.set_flush_denormal(False)  # the caller's numerics are theirs again
            self.mode.close()
            if self.run is not None:
                self.run.close()

    def _fit(self) -> dict:
        cfg, run = self.config, self.run
        metric = self.mode.metric
        state = self._load_last() if self._has_checkpoint() else None
        if state is not None and (int(state["next_epoch"]) >= cfg.epochs
                                  or self._stops(state["best"])) \
                and (self.out_dir / "summary.json").is_file():  # the same answer on every rank
            return self._finished_summary()  # resuming a finished run changes nothing
        start = self._restore(state) if state is not None else None
        if start is None:
            start = {"next_epoch": 0, "next_iter": 0, "partial": None,
                     "best": {"epoch": 0, "value": -math.inf, "stale": 0}, "totals": None}
            if run is not None:  # a new run, or one that died before its first checkpoint
                for stale in ("best.pt", "summary.json", "report.png", "report.html"):
                    run.file(stale).unlink(missing_ok=True)
                run.write_text("config.yml", cfg.to_yaml())
                run.write_json("run.json", run_info(self.mode, self.seed, self.device, self.extra_info))
                run.truncate_metrics(0)
        best = start["best"]
        totals = start["totals"] or dict(ZERO_TOTALS)
        bar = progress_bar(cfg.epochs, start["next_epoch"], self.progress)
        t_fit = time.perf_counter()
        self.clock.start()
        last_save = [time.perf_counter()]
        every = cfg.params["checkpoint_seconds"]

        def mid_epoch(epoch, i, partial):
            if self.mode.mid_epoch_checkpoints and time.perf_counter() - last_save[0] >= every:
                self._save_last(epoch, i, partial, best, totals)
                last_save[0] = time.perf_counter()

        try:
            done = start["next_epoch"]
            for epoch in range(start["next_epoch"], cfg.epochs):
                if self._stops(best):  # also a resumed run that had already stopped
                    break
                self.optimizer.lr = self.schedule.lr_at(epoch)
                skip = start["next_iter"] if epoch == start["next_epoch"] else 0
                partial = start["partial"] if epoch == start["next_epoch"] else None
                jit0 = compile_seconds()  # numba compilation in this epoch, for the report
                rec = self.run_epoch(epoch, skip, partial, checkpoint=mid_epoch)
                totals["presample_s"] += rec.get("presample_s", 0.0)
                totals["sample_s"] += rec["sample_s"]
                totals["compute_s"] += rec["compute_s"]
                rec.update(self.mode.epoch_stats())
                last = self.clock.out_of_time()  # validated, so its val metric counts
                if (epoch + 1) % cfg.params["eval_every"] == 0 or epoch + 1 == cfg.epochs \
                        or last:
                    t0 = time.perf_counter()
                    rec["val"] = self.evaluate(("val",))["val"]
                    rec["eval_s"] = time.perf_counter() - t0
                    totals["eval_s"] += rec["eval_s"]
                    self.clock.add_eval(rec["eval_s"])
                    crash_point("eval")
                    value = rec["val"].get(metric, float("nan"))
                    if value > best["value"]:
                        best = {"epoch": epoch + 1, "value": value, "stale": 0}
                        self._save_best(epoch, rec["val"])
                    else:  # NaN counts as no improvement
                        best = {**best, "stale": best.get("stale", 0) + 1}
                    self.schedule.observe(value)
                if self.schedule.kind != "none":
                    rec["lr"] = self.optimizer.lr
                rec.update(compile_since(jit0))
                rec.update(self.clock.epoch_end())
                self.history.append(rec)
                if run is not None:
                    run.append_metrics(rec)
                crash_point("metrics")
                self._save_last(epoch + 1, 0, None, best, totals)
                last_save[0] = time.perf_counter()
                crash_point("epoch")
                done = epoch + 1
                bar.update(1)
                bar.set_postfix_str(postfix(rec, metric))
        finally:
            bar.close()
            self.mode.close()
        return self._finish(best, totals, time.perf_counter() - t_fit, done)

    def _stops(self, best: dict) -> bool:
        """Early stopping: ``params.patience`` validation passes in a row without a better
        validation metric (every rank sees the same gathered metric, so decides the same)."""
        patience = self.config.params["patience"]
        return (patience > 0 and best.get("stale", 0) >= patience) or self.clock.spent

    # ------------------------------------------------------------------ checkpoints
    def _has_checkpoint(self) -> bool:
        return self.resume and (self.out_dir / "last.pt").is_file()

    def _save_best(self, epoch: int, val: dict):
        if self.out_dir is None:
            self._best_state = {k: v.detach().clone() for k, v in self.model.state_dict().items()}
        elif self.run is not None:
            self.run.save("best.pt", {"format": ckpt.FORMAT, "identity": self.identity(),
                                      "model": self.model.state_dict(), "epoch": epoch + 1,
                                      "val": val})

    def _save_last(self, next_epoch, next_iter, partial, best, totals):
        rng = self.mode.gather(ckpt.rng_state())  # collective in distributed runs
        if self.run is None:
            return
        state = {"format": ckpt.FORMAT, "identity": self.identity(), "next_epoch": next_epoch,
                 "next_iter": next_iter, "model": self.model.state_dict(),
                 "optimizer": self.optimizer.state_dict(), "best": dict(best),
                 "totals": dict(totals), "mode": self.mode.state_dict(), "rng": rng,
                 "seed": self.seed, "partial": None, "schedule": self.schedule.state_dict()}
        if partial is not None:
            state["partial"] = {"losses": torch.tensor(partial["losses"], dtype=torch.float64),
                                "sample_s": partial["sample_s"], "compute_s": partial["compute_s"]}
        self.run.save("last.pt", state)

    def _load_last(self) -> dict:
        """``last.pt``, checked against this run (identity, ranks, parameter shapes: a config
        whose model does not fit is refused even when the run is finished); its weights are
        loaded into the model."""
        path = self.out_dir / "last.pt"
        state = ckpt.load_checkpoint(path)
        ckpt.check_identity(state, self.identity(), path)
        rng = state.get("rng")
        if not isinstance(rng, torch.Tensor) or rng.dim() != 2 or rng.shape[0] != self.mode.world:
            raise ConfigError(f"{path}: checkpoint's random states do not fit a run of "
                              f"{self.mode.world} rank(s)")
        ckpt.load_model_state(self.model, state["model"], path)
        return state

    def _restore(self, state: dict) -> dict:
        """Apply the rest of a loaded ``last.pt``; the loop's start position."""
        path = self.out_dir / "last.pt"
        try:
            self.optimizer.load_state_dict(state["optimizer"])
        except (ValueError, KeyError, TypeError) as e:
            raise ConfigError(f"{path}: optimizer state does not fit this model ({e})") from None
        try:
            ckpt.set_rng_state(state["rng"][self.mode.rank])
        except ValueError as e:
            raise ConfigError(f"{path}: {e}") from None
        try:
            self.mode.load_state_dict(state["mode"])
        except (KeyError, TypeError, ValueError, IndexError) as e:
            raise ConfigError(f"{path}: the batch stream's position does not fit this run "
                              f"(damaged? {type(e).__name__} {str(e)[:60]})") from None
        self.schedule.load_state_dict(state.get("schedule"))
        done = int(state["next_epoch"])  # epochs completed; the running one is rewritten
        if self.run is not None:
            self.run.truncate_metrics(done)
            self.history = self.run.read_metrics()
            self._note_resume(done)
            self.clock.restore(self.history[-1] if self.history else None)
        self.clock.out_of_time(self.clock.at_epoch_end["train_elapsed_s"])  # stays spent
        partial = state["partial"]
        if partial is not None:
            partial = {"losses": partial["losses"].tolist(), "sample_s": partial["sample_s"],
                       "compute_s": partial["compute_s"]}
        return {"next_epoch": done, "next_iter": int(state["next_iter"]), "partial": partial,
                "best": {"stale": 0, **state["best"]}, "totals": {**ZERO_TOTALS, **state["totals"]}}

    def _note_resume(self, done: int):
        info = self.run.file("run.json")
        data = read_json_object(info) if info.is_file() else \
            run_info(self.mode, self.seed, self.device, self.extra_info)
        data.setdefault("resumed", []).append({"time": time.strftime("%Y-%m-%dT%H:%M:%S"),
                                               "epochs_done": done, "argv": command_line()})
        self.run.write_json("run.json", data)

    def _finished_summary(self) -> dict:
        path = self.out_dir / "summary.json"
        try:
            return json.loads(path.read_text())
        except ValueError:
            raise ConfigError(f"{path}: damaged (not JSON); delete it and --resume again to "
                              f"re-run the final evaluation") from None

    # ------------------------------------------------------------------ the end
    def _load_best(self):
        if self.run is not None and self.run.file("best.pt").is_file():
            path = self.run.file("best.pt")
            state = ckpt.load_checkpoint(path)
            ckpt.check_identity(state, self.identity(), path)
            ckpt.load_model_state(self.model, state["model"], path)
        elif self._best_state is not None:
            self.model.load_state_dict(self._best_state)
        self.mode.sync_model(self.model)  # non-writing ranks take rank 0's best weights

    def _finish(self, best, totals, wall, done) -> dict:
        self._load_best()
        t0 = time.perf_counter()
        final = self.evaluate(("train", "val", "test"))
        totals["eval_s"] += time.perf_counter() - t0
        summary = {"mode": self.mode.name, "dataset": self.mode.dataset_name,
                   "metric": self.mode.metric, "best_epoch": best["epoch"],
                   "epochs": self.config.epochs, "epochs_run": done,
                   "stopped": self._stop_reason(best, done), "seed": self.seed, **final,
                   "time": {"wall_s": wall, **totals}, **self.mode.summary_extra()}
        if self.run is not None:
            self.run.write_json("summary.json", summary)
            report_after_run(self.run.path)  # never fails the run (a warning at most)
        return summary

    def _stop_reason(self, best, done) -> str:
        if done < self.config.epochs and self.clock.spent:
            return self.clock.reason(done)
        if done < self.config.epochs and self._stops(best):
            return (f"early stop at epoch {done}: no better val {self.mode.metric} in "
                    f"{best.get('stale', 0)} validation passes since epoch {best['epoch']} "
                    f"(params.patience {self.config.params['patience']})")
        return f"finished: all {self.config.epochs} epochs"
