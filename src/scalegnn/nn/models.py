"""Complete GNNs: a stack of graph layers, L2-normalized embeddings, a linear classifier.

``GraphSAINTNet`` follows the reference GraphSAINT model: layers from an architecture string such
as ``1-0-1-0`` (one token per layer, the token is the layer's order: ``1`` = graph convolution,
``0`` = dense self-only layer), then ``F.normalize(h, p=2, dim=1)``, then a linear classifier
(an order-0 layer with identity activation and plain bias).

Every model shares one forward signature, ``model(x, adj, exchange=None)``:
``x`` has one row per column of ``adj`` (a :class:`~scalegnn.ops.SparseAdj`); the output has one
row per row of ``adj``. ``exchange(h, layer_index)``, used by distributed training, returns ``h``
with the boundary rows appended before each graph layer.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from scalegnn.errors import ConfigError
from scalegnn.nn.saint import ACTIVATIONS, AGGREGATIONS, BIASES, SAINTLayer
from scalegnn.ops import SparseAdj


def parse_arch(arch) -> list[int]:
    """``'1-0-1-0'`` -> ``[1, 0, 1, 0]``; ints and lists pass through."""
    if isinstance(arch, int):
        arch = str(arch)
    tokens = arch.split("-") if isinstance(arch, str) else list(arch)
    try:
        orders = [int(t) for t in tokens]
    except (TypeError, ValueError):
        raise ConfigError(f"network.arch: expected layer orders like '1-0-1-0', got {arch!r}") from None
    if not orders or min(orders) < 0:
        raise ConfigError(f"network.arch: expected non-negative layer orders like '1-0-1-0', got {arch!r}")
    return orders


def _check_choice(key, value, allowed):
    if value not in allowed:
        raise ConfigError(f"network.{key}: {value!r} is not one of {sorted(allowed)}")


class GraphSAINTNet(nn.Module):
    def __init__(self, in_dim: int, num_classes: int, *, hidden: int = 256, arch="1-0-1-0",
                 aggr: str = "concat", bias: str = "norm", act: str = "relu",
                 dropout: float = 0.0, multilabel: bool = False):
        super().__init__()
        _check_choice("aggr", aggr, AGGREGATIONS)
        _check_choice("bias", bias, BIASES)
        _check_choice("act", act, ACTIVATIONS)
        if not 0.0 <= float(dropout) < 1.0:
            raise ConfigError(f"params.dropout: must be in [0, 1), got {dropout}")
        if int(hidden) <= 0:
            raise ConfigError(f"network.dim: must be a positive integer, got {hidden}")
        self.orders = parse_arch(arch)
        self.multilabel = multilabel
        self.layers = nn.ModuleList()
        d = in_dim
        for order in self.orders:
            layer = SAINTLayer(d, int(hidden), order, aggr, bias, act, float(dropout))
            self.layers.append(layer)
            d = layer.output_dim
        self.embed_dim = d
        self.classifier = SAINTLayer(d, num_classes, 0, "concat", "bias", "identity", float(dropout))

    def embed(self, x: torch.Tensor, adj: SparseAdj | None, exchange=None) -> torch.Tensor:
        h = x
        for i, layer in enumerate(self.layers):
            if layer.order > 0:
                if exchange is not None:
                    h = exchange(h, i)
                h = layer(h, adj, adj.num_rows)
            else:
                h = layer(h, None)
        return F.normalize(h, p=2, dim=1)

    def forward(self, x: torch.Tensor, adj: SparseAdj | None, exchange=None) -> torch.Tensor:
        return self.classifier(self.embed(x, adj, exchange))

    def loss(self, logits: torch.Tensor, y: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        """Weighted sum of per-node losses: ``Σ_v weight_v · L_v`` (GraphSAINT's normalized loss)."""
        return weighted_loss(logits, y, weight, self.multilabel)

    def predict(self, logits: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(logits) if self.multilabel else torch.softmax(logits, dim=1)


def weighted_loss(logits, y, weight, multilabel: bool) -> torch.Tensor:
    """sigmoid + BCE (multi-label) or softmax + CE (single-label), weighted per node and summed."""
    if multilabel:
        per = F.binary_cross_entropy_with_logits(logits, y.to(logits.dtype), reduction="none").sum(1)
    else:
        per = F.cross_entropy(logits, y, reduction="none")
    return (weight.to(per.dtype) * per).sum()


MODELS = {"saint": GraphSAINTNet}


def build_model(in_dim: int, num_classes: int, *, model: str = "saint", **kwargs) -> nn.Module:
    """Build a model by family name (``saint``) with the network keys of the config."""
    if model not in MODELS:
        raise ConfigError(f"network.model: {model!r} is not one of {sorted(MODELS)}")
    return MODELS[model](in_dim, num_classes, **kwargs)
