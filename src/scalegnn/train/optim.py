"""The one optimizer of every training mode: Adam with ``torch.optim.Adam``'s update (L2 weight
decay added to the gradient, bias-corrected moments, eps outside the square root; no amsgrad),
step for step the same numbers (tested).

Why not ``torch.optim.Adam``: constructing any torch optimizer imports ``torch._dynamo``
(``add_param_group`` is wrapped by ``torch._disable_dynamo``), 800+ modules with sympy, about
72 MB resident per process. A distributed rank's fixed memory is what keeps its peak from
falling with the partition size, and these few lines are all training needs. Its state is
tensors and an int, so checkpoints load with ``torch.load(weights_only=True)``.
"""

from __future__ import annotations

import torch


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
        for p, m, v in zip(self.params, self.exp_avg, self.exp_avg_sq):
            if p.grad is None:
                continue
            g = p.grad if self.weight_decay == 0 else p.grad.add(p, alpha=self.weight_decay)
            m.lerp_(g, 1 - b1)
            v.mul_(b2).addcmul_(g, g, value=1 - b2)
            denom = (v.sqrt() / bc2_sqrt).add_(self.eps)
            p.addcdiv_(m, denom, value=-self.lr / bc1)

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
