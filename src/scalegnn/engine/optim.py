"""The one optimizer of every training mode: Adam with ``torch.optim.Adam``'s update (L2 weight
decay added to the gradient, bias-corrected moments, eps outside the square root; no amsgrad),
step for step the same numbers (tested); and :class:`LRSchedule`, the learning rate of each
epoch (``params.lr_schedule``).

Why not ``torch.optim.Adam``: constructing any torch optimizer imports ``torch._dynamo``
(``add_param_group`` is wrapped by ``torch._disable_dynamo``), 800+ modules with sympy, about
72 MB resident per process. A distributed rank's fixed memory is what keeps its peak from
falling with the partition size, and these few lines are all training needs. Its state is
tensors and an int, so checkpoints load with ``torch.load(weights_only=True)``.

On host float32/float64 tensors each parameter's update runs as one fused pass (numba,
:func:`scalegnn.ops._kernels.adam_update`) instead of ~6 torch elementwise ops: the optimizer
step was a large share of a training step's non-GEMM time on a shared 2-core machine, where
every extra pass and thread-team wake-up waits on the other processes (``bench step``). Other
parameters (on a GPU) are updated together by torch's multi-tensor (``_foreach``) ops.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from scalegnn.ops import _kernels as K
from scalegnn.ops.route import on_host
from scalegnn.ops.spmm import num_threads

LR_SCHEDULES = ("none", "step", "cosine", "plateau")
"""The values of ``params.lr_schedule`` (:class:`LRSchedule`)."""


class Adam:
    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0):
        self.params = list(params)
        self.lr, self.betas, self.eps, self.weight_decay = lr, tuple(betas), eps, weight_decay
        self.step_count = 0
        self.exp_avg = [torch.zeros_like(p) for p in self.params]
        self.exp_avg_sq = [torch.zeros_like(p) for p in self.params]

    def zero_grad(self, set_to_none: bool = True):
        for p in self.params:
            if set_to_none:
                p.grad = None
            elif p.grad is not None:
                p.grad.zero_()

    @torch.no_grad()
    def step(self):
        self.step_count += 1
        b1, b2 = self.betas
        bc1 = 1 - b1 ** self.step_count
        bc2_sqrt = (1 - b2 ** self.step_count) ** 0.5
        rest = []
        for p, m, v in zip(self.params, self.exp_avg, self.exp_avg_sq):
            if p.grad is None:
                continue
            if _fusable(p, p.grad, m, v):
                _fused_step(p, p.grad, m, v, self.lr / bc1, b1, b2, bc2_sqrt, self.eps,
                            self.weight_decay)
            else:
                rest.append((p, p.grad, m, v))
        if rest:
            _foreach_step(*map(list, zip(*rest)), self.lr / bc1, b1, b2, bc2_sqrt, self.eps,
                          self.weight_decay)

    def state_dict(self) -> dict:
        return {"step": self.step_count, "exp_avg": [t.clone() for t in self.exp_avg],
                "exp_avg_sq": [t.clone() for t in self.exp_avg_sq]}

    def load_state_dict(self, state: dict):
        if len(state["exp_avg"]) != len(self.params) or any(
                a.shape != p.shape for a, p in zip(state["exp_avg"], self.params)):
            raise ValueError(f"optimizer state has {len(state['exp_avg'])} tensors that do not "
                             f"match the model's {len(self.params)} parameters")
        self.step_count = int(state["step"])
        for dst, src in zip(self.exp_avg + self.exp_avg_sq, state["exp_avg"] + state["exp_avg_sq"]):
            dst.copy_(src)


_PARALLEL_MIN = 1 << 16   # elements: below this a thread team costs more than it saves
_chunks: dict = {}


def _fusable(*ts) -> bool:
    """Whether parameter, gradient and moments are host float tensors of one dtype and shape,
    dense and contiguous (what the fused kernel takes; anything else runs the torch ops)."""
    t0 = ts[0]
    return on_host(*ts) and t0.dtype in (torch.float32, torch.float64) and all(
        t.layout == torch.strided and t.dtype == t0.dtype
        and t.is_contiguous() and t.shape == t0.shape for t in ts)


def _foreach_step(ps, gs, ms, vs, step_size, b1, b2, bc2_sqrt, eps, wd):
    """The update of every parameter the fused kernel does not take (GPU tensors, other
    dtypes) as torch's multi-tensor ops: one op per stage for all of them. On a GPU that is
    ~8 kernel launches per step instead of ~7 per parameter; a GPU training step of the
    ``bench step`` model is bound by the host's launches (26 parameters)."""
    if wd:
        gs = torch._foreach_add(gs, ps, alpha=wd)
    torch._foreach_lerp_(ms, gs, 1 - b1)
    torch._foreach_mul_(vs, b2)
    torch._foreach_addcmul_(vs, gs, gs, value=1 - b2)
    denom = torch._foreach_sqrt(vs)
    torch._foreach_div_(denom, bc2_sqrt)
    torch._foreach_add_(denom, eps)
    torch._foreach_addcdiv_(ps, ms, denom, value=-step_size)


def _fused_step(p, g, m, v, step_size, b1, b2, bc2_sqrt, eps, wd):
    """One parameter's update in one pass (``ops._kernels.adam_update``): the update above,
    with the arithmetic in float64; one thread team for a large parameter, none for a small
    one (torch runs ~6 elementwise ops, each its own pass and thread team)."""
    arrays = [t.detach().view(-1).numpy() for t in (p, g, m, v)]
    n = arrays[0].shape[0]
    threads = num_threads()
    if n < _PARALLEL_MIN or threads == 1:
        K.adam_update_serial(*arrays, step_size, b1, b2, bc2_sqrt, eps, wd)
        return
    chunks = _chunks.get((n, threads))
    if chunks is None:
        chunks = _chunks[(n, threads)] = np.linspace(0, n, threads + 1).astype(np.int64)
    K.adam_update(*arrays, chunks, step_size, b1, b2, bc2_sqrt, eps, wd)


class LRSchedule:
    """The learning rate of each epoch (``params.lr_schedule``); ``base`` is ``params.lr``.

    For 0-based epoch ``e`` of ``E`` (``phase[-1].end``), decay ``γ`` (``lr_decay``), floor
    ``lr_min``::

        none     lr_e = base
        step     lr_e = max(base · γ^⌊e / lr_step⌋, lr_min)
        cosine   lr_e = lr_min + (base − lr_min) · (1 + cos(π e / E)) / 2
        plateau  lr ← max(lr · γ, lr_min) once ``lr_patience`` validation passes in a row
                 bring no improvement of the validation metric (then the count restarts)

    ``step`` and ``cosine`` are functions of the epoch; ``plateau`` carries its state (current
    rate, best value, passes without improvement) in :meth:`state_dict`, plain numbers, so that
    a resumed run continues with the same rates.
    """

    def __init__(self, kind: str = "none", base: float = 0.01, *, epochs: int = 1,
                 decay: float = 0.5, step: int = 10, lr_min: float = 0.0, patience: int = 2):
        if kind not in LR_SCHEDULES:
            raise ValueError(f"lr_schedule: {kind!r} is not one of {list(LR_SCHEDULES)}")
        self.kind, self.base, self.epochs = kind, float(base), max(1, int(epochs))
        self.decay, self.step, self.lr_min = float(decay), max(1, int(step)), float(lr_min)
        self.patience = max(1, int(patience))
        self.lr, self.best, self.bad = self.base, -math.inf, 0

    @classmethod
    def from_params(cls, params: dict, epochs: int) -> "LRSchedule":
        return cls(params["lr_schedule"], params["lr"], epochs=epochs, decay=params["lr_decay"],
                   step=params["lr_step"], lr_min=params["lr_min"],
                   patience=params["lr_patience"])

    def lr_at(self, epoch: int) -> float:
        """The rate of 0-based ``epoch`` (for ``plateau``: the current rate)."""
        if self.kind == "step":
            return max(self.base * self.decay ** (int(epoch) // self.step), self.lr_min)
        if self.kind == "cosine":
            frac = min(int(epoch), self.epochs) / self.epochs
            return self.lr_min + (self.base - self.lr_min) * (1 + math.cos(math.pi * frac)) / 2
        if self.kind == "plateau":
            return self.lr
        return self.base

    def observe(self, value: float) -> None:
        """A validation pass's metric (higher is better; NaN is no improvement)."""
        if self.kind != "plateau":
            return
        if value > self.best:
            self.best, self.bad = float(value), 0
            return
        self.bad += 1
        if self.bad >= self.patience:
            self.lr, self.bad = max(self.lr * self.decay, self.lr_min), 0

    def state_dict(self) -> dict:
        return {"kind": self.kind, "lr": self.lr, "best": self.best, "bad": self.bad}

    def load_state_dict(self, state: dict) -> None:
        """Restore a saved state; one of another kind (a changed config) is ignored."""
        if state and state.get("kind") == self.kind:
            self.lr, self.best, self.bad = float(state["lr"]), float(state["best"]), int(state["bad"])
