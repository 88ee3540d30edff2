"""Jumping-knowledge readout (Xu et al., JK-Net, 2018) over per-layer outputs ``H^(1..L)``::

    concat:  H = H^(1) ‖ H^(2) ‖ … ‖ H^(L)          (width Σ_l d_l)
    max:     H_vj = max_l H^(l)_vj                    (element-wise; all d_l equal)

The JK-Net model (:class:`scalegnn.nn.models.JKNet`) stacks graph layers (GCN layers, see
:mod:`scalegnn.nn.gcn`), keeps each layer's output and feeds this readout to the classifier, so
every node picks its own effective neighbourhood range. (The LSTM-attention mode is left out.)
"""

from __future__ import annotations

import torch
from torch import nn

from scalegnn.errors import ConfigError

JK_MODES = ("concat", "max")


class JumpingKnowledge(nn.Module):
    """Combine a list of (n x d_l) layer outputs by ``mode`` (``concat`` or ``max``)."""

    def __init__(self, mode: str = "concat"):
        super().__init__()
        if mode not in JK_MODES:
            raise ConfigError(f"network.jk_mode: {mode!r} is not one of {list(JK_MODES)}")
        self.mode = mode

    def output_dim(self, dims: list[int]) -> int:
        if self.mode == "max" and len(set(dims)) > 1:
            raise ConfigError(f"network.jk_mode: 'max' needs equal layer widths, got {dims}")
        return sum(dims) if self.mode == "concat" else dims[0]

    def reset_parameters(self):
        pass   # no parameters in concat/max

    def forward(self, outs: list[torch.Tensor]) -> torch.Tensor:
        if self.mode == "concat":
            return torch.cat(outs, dim=1)
        return torch.stack(outs).amax(dim=0)

    def extra_repr(self) -> str:
        return f"mode={self.mode}"
