"""The per-layer output tail shared by the model families: ``norm(act(t + b))``.

``bias='norm'`` is GraphSAINT's learnable per-row feature normalization (as in
:mod:`scalegnn.nn.saint`)::

    y = (h - mean(h)) / sqrt(var(h) + 1e-9) * scale + offset,   h = act(t + b)

(mean/var over each row's features); it runs as the fused op
:func:`scalegnn.ops.fused.bias_act_norm` where that applies. ``bias='bias'`` is
``act(t + b)``; ``bias='none'`` is ``act(t)``.
"""

from __future__ import annotations

import torch
from torch import nn

from scalegnn.nn.saint import ACTIVATIONS, BIASES
from scalegnn.ops.fused import FUSED_ACTS, bias_act_norm


def fused_act(act: str):
    """The activation as the fused op takes it: a name it fuses, else the callable."""
    name = {"I": "identity"}.get(act, act)
    return name if name in FUSED_ACTS else ACTIVATIONS[act]


class LayerTail(nn.Module):
    """``norm(act(t + b))`` over ``dim`` features (see the module docstring)."""

    def __init__(self, dim: int, bias: str = "norm", act: str = "relu"):
        super().__init__()
        if bias not in BIASES:
            raise ValueError(f"bias must be one of {BIASES}, got {bias!r}")
        self.dim, self.mode, self.act_name = dim, bias, act
        self.act = ACTIVATIONS[act]
        self._fused = fused_act(act)
        self.bias = nn.Parameter(torch.zeros(dim)) if bias != "none" else None
        if bias == "norm":
            self.scale = nn.Parameter(torch.ones(dim))
            self.offset = nn.Parameter(torch.zeros(dim))
        self.reset_parameters()

    def reset_parameters(self):
        if self.bias is not None:
            nn.init.zeros_(self.bias)
        if self.mode == "norm":
            nn.init.ones_(self.scale)
            nn.init.zeros_(self.offset)

    def forward(self, t: torch.Tensor) -> torch.Tensor:
        if self.mode == "norm":
            return bias_act_norm(t, self.bias, self.scale, self.offset, self._fused)
        if self.bias is not None:
            t = t + self.bias
        return self.act(t)

    def extra_repr(self) -> str:
        return f"{self.dim}, bias={self.mode}, act={self.act_name}"
