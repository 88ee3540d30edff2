"""Complete GNNs: a stack of layers, L2-normalized embeddings, a linear classifier.

``GraphSAINTNet`` follows the reference GraphSAINT model: layers from an architecture string such
as ``1-0-1-0`` (one token per layer, the token is the layer's order: ``1`` = graph convolution,
``0`` = dense self-only layer), then ``F.normalize(h, p=2, dim=1)``, then a linear classifier
(an order-0 layer with identity activation and plain bias).

The other families of SPEC §1.3 (``gcn``, ``gat``, ``mixhop``, ``jk``, ``gin``; layers in
``nn/<family>.py``) share that frame (:class:`GraphStackNet`): the architecture string gives the
depth, token ``0`` a dense layer ``tail(H W)`` and token ``1`` one graph layer of the family
(``layers=L`` instead: ``L`` graph layers, ``arch`` ignored), then the same normalize +
classifier. ``aggr`` is GraphSAINT's hop combination and is ignored by the other families.

Every model shares one forward signature, ``model(x, adj, exchange=None)``:
``x`` has one row per column of ``adj`` (a :class:`~scalegnn.ops.SparseAdj`); the output has one
row per row of ``adj``. ``exchange(h, layer_index)``, used by distributed training, returns ``h``
with the boundary rows appended before each graph layer. ``loss``/``predict``/``multilabel``
come from :class:`NodeClassifier`.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from scalegnn.errors import ConfigError
from scalegnn.nn.gat import GATLayer
from scalegnn.nn.gcn import GCNLayer
from scalegnn.nn.gin import GIN_WEIGHTS, GINLayer
from scalegnn.nn.jk import JK_MODES, JumpingKnowledge
from scalegnn.nn.mixhop import MixHopLayer, parse_powers
from scalegnn.nn.saint import ACTIVATIONS, AGGREGATIONS, BIASES, SAINTLayer
from scalegnn.ops import SparseAdj
from scalegnn.ops.fused import l2_normalize

# network keys beyond GraphSAINT's (defaults; each family takes the ones in its OPTIONS)
MODEL_OPTIONS = {"layers": 0, "heads": 4, "jk_mode": "concat", "powers": "0-1-2",
                 "gin_weights": "operator"}


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


def _check_common(hidden, bias, act, dropout):
    _check_choice("bias", bias, BIASES)
    _check_choice("act", act, ACTIVATIONS)
    if not 0.0 <= float(dropout) < 1.0:
        raise ConfigError(f"params.dropout: must be in [0, 1), got {dropout}")
    if int(hidden) <= 0:
        raise ConfigError(f"network.dim: must be a positive integer, got {hidden}")


class NodeClassifier(nn.Module):
    """Shared head of every model: ``classifier(embed(x, adj))``, weighted loss, predict.

    Subclasses set ``self.layers``, ``self.multilabel`` and call :meth:`make_classifier`; their
    ``embed`` returns the L2-normalized node embeddings."""

    def make_classifier(self, dim: int, num_classes: int, dropout: float):
        """The linear classifier: an order-0 layer with identity activation and plain bias."""
        self.embed_dim = dim
        self.classifier = SAINTLayer(dim, num_classes, 0, "concat", "bias", "identity",
                                     float(dropout))

    @property
    def layerwise(self) -> bool:
        """Full-graph evaluation may run layer by layer in row blocks (``engine/evaluate.py``):
        every layer is a :class:`SAINTLayer`; else one whole-graph ``model(x, adj)``."""
        return all(isinstance(layer, SAINTLayer) for layer in self.layers)

    def embed(self, x: torch.Tensor, adj: SparseAdj | None, exchange=None) -> torch.Tensor:
        raise NotImplementedError

    def forward(self, x: torch.Tensor, adj: SparseAdj | None, exchange=None) -> torch.Tensor:
        return self.classifier(self.embed(x, adj, exchange))

    def loss(self, logits: torch.Tensor, y: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        """Weighted sum of per-node losses: ``Σ_v weight_v · L_v`` (GraphSAINT's normalized loss)."""
        return weighted_loss(logits, y, weight, self.multilabel)

    def predict(self, logits: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(logits) if self.multilabel else torch.softmax(logits, dim=1)


class GraphSAINTNet(NodeClassifier):
    OPTIONS = ()

    def __init__(self, in_dim: int, num_classes: int, *, hidden: int = 256, arch="1-0-1-0",
                 aggr: str = "concat", bias: str = "norm", act: str = "relu",
                 dropout: float = 0.0, multilabel: bool = False):
        super().__init__()
        _check_choice("aggr", aggr, AGGREGATIONS)
        _check_common(hidden, bias, act, dropout)
        self.orders = parse_arch(arch)
        self.multilabel = multilabel
        self.layers = nn.ModuleList()
        d = in_dim
        for order in self.orders:
            layer = SAINTLayer(d, int(hidden), order, aggr, bias, act, float(dropout))
            self.layers.append(layer)
            d = layer.output_dim
        self.make_classifier(d, num_classes, dropout)

    def layer_outputs(self, x: torch.Tensor, adj: SparseAdj | None,
                      exchange=None) -> list[torch.Tensor]:
        """``[H^(1), …, H^(L)]``: every layer's output, before the normalize (shaDow's
        residual readouts combine them)."""
        h, outs = x, []
        for i, layer in enumerate(self.layers):
            if layer.order > 0:
                if exchange is not None:
                    h = exchange(h, i)
                h = layer(h, adj, adj.num_rows)
            else:
                h = layer(h, None)
            outs.append(h)
        return outs

    def embed(self, x: torch.Tensor, adj: SparseAdj | None, exchange=None) -> torch.Tensor:
        return l2_normalize(self.layer_outputs(x, adj, exchange)[-1])  # = F.normalize, fused


def layer_plan(arch, layers: int, model: str) -> list[int]:
    """Per layer: 1 = graph layer of the family, 0 = dense layer (from ``arch`` or ``layers``)."""
    if int(layers) < 0:
        raise ConfigError(f"network.layers: must be >= 0 (0 = depth from network.arch), got {layers}")
    if int(layers) > 0:
        return [1] * int(layers)
    orders = parse_arch(arch)
    if max(orders) > 1:
        raise ConfigError(f"network.arch: model {model!r} takes tokens 0 (dense) and 1 (graph "
                          f"layer), got {arch!r}")
    return orders


class GraphStackNet(NodeClassifier):
    """Graph layers of one family (and dense layers for ``0`` tokens), a readout of the layer
    outputs (the last one; JK-Net overrides), then ``F.normalize`` and the classifier.

    Subclasses implement ``graph_layer(d_in)`` returning a layer with ``output_dim`` whose
    forward is ``layer(h, adj)``."""

    family = ""
    OPTIONS = ("layers",)

    def __init__(self, in_dim: int, num_classes: int, *, hidden: int = 256, arch="1-0-1-0",
                 layers: int = 0, aggr: str = "concat", bias: str = "norm", act: str = "relu",
                 dropout: float = 0.0, multilabel: bool = False):
        super().__init__()
        _check_common(hidden, bias, act, dropout)
        self.hidden, self.bias, self.act, self.drop = int(hidden), bias, act, float(dropout)
        self.multilabel = multilabel
        self.plan = layer_plan(arch, layers, self.family)
        self.layers = nn.ModuleList()
        d = in_dim
        for kind in self.plan:
            layer = self.graph_layer(d) if kind else \
                SAINTLayer(d, self.hidden, 0, "concat", bias, act, self.drop)
            self.layers.append(layer)
            d = layer.output_dim
        self.make_classifier(self.readout_dim([la.output_dim for la in self.layers]),
                             num_classes, dropout)

    def graph_layer(self, d_in: int) -> nn.Module:
        raise NotImplementedError

    def readout_dim(self, dims: list[int]) -> int:
        return dims[-1]

    def readout(self, outs: list[torch.Tensor]) -> torch.Tensor:
        return outs[-1]

    def layer_outputs(self, x: torch.Tensor, adj: SparseAdj | None,
                      exchange=None) -> list[torch.Tensor]:
        """``[H^(1), …, H^(L)]``: every layer's output, before the readout and normalize."""
        h, outs = x, []
        for i, (kind, layer) in enumerate(zip(self.plan, self.layers)):
            if kind:
                if exchange is not None:
                    h = exchange(h, i)
                h = layer(h, adj)
            else:
                h = layer(h, None)
            outs.append(h)
        return outs

    def embed(self, x: torch.Tensor, adj: SparseAdj | None, exchange=None) -> torch.Tensor:
        return l2_normalize(self.readout(self.layer_outputs(x, adj, exchange)))

    def reset_parameters(self):
        for m in list(self.layers) + [self.classifier]:
            m.reset_parameters()


class GCNNet(GraphStackNet):
    """GCN layers ``tail(Â H W)`` (:mod:`scalegnn.nn.gcn`)."""
    family = "gcn"

    def graph_layer(self, d_in):
        return GCNLayer(d_in, self.hidden, self.bias, self.act, self.drop)


class GATNet(GraphStackNet):
    """GAT layers (:mod:`scalegnn.nn.gat`): ``heads`` heads of width ``hidden // heads``,
    concatenated (``concat_last=False``: the last graph layer averages its heads)."""
    family = "gat"
    OPTIONS = ("layers", "heads")

    def __init__(self, in_dim, num_classes, *, heads: int = 4, concat_last: bool = True, **kw):
        self.heads, self.concat_last = check_heads(heads, kw.get("hidden", 256)), concat_last
        plan = layer_plan(kw.get("arch", "1-0-1-0"), kw.get("layers", 0), self.family)
        self._last_graph = max(i for i, k in enumerate(plan) if k) if any(plan) else -1
        super().__init__(in_dim, num_classes, **kw)

    def graph_layer(self, d_in):
        last = len(self.layers) == self._last_graph
        concat = self.concat_last or not last
        width = self.hidden // self.heads if concat else self.hidden
        return GATLayer(d_in, width, self.heads, concat, self.bias, self.act, self.drop)


class MixHopNet(GraphStackNet):
    """MixHop layers (:mod:`scalegnn.nn.mixhop`): ``len(powers) · hidden`` wide each."""
    family = "mixhop"
    OPTIONS = ("layers", "powers")

    def __init__(self, in_dim, num_classes, *, powers="0-1-2", **kw):
        self.powers = parse_powers(powers)
        super().__init__(in_dim, num_classes, **kw)

    def graph_layer(self, d_in):
        return MixHopLayer(d_in, self.hidden, self.powers, self.bias, self.act, self.drop)


class JKNet(GraphStackNet):
    """GCN layers whose outputs are all combined by :class:`~scalegnn.nn.jk.JumpingKnowledge`
    (``jk_mode``: concat or max) before the classifier."""
    family = "jk"
    OPTIONS = ("layers", "jk_mode")

    def __init__(self, in_dim, num_classes, *, jk_mode: str = "concat", **kw):
        self.jk_mode = jk_mode
        super().__init__(in_dim, num_classes, **kw)

    def graph_layer(self, d_in):
        return GCNLayer(d_in, self.hidden, self.bias, self.act, self.drop)

    def readout_dim(self, dims):
        self.jk = JumpingKnowledge(self.jk_mode)
        return self.jk.output_dim(dims)

    def readout(self, outs):
        return self.jk(outs)


class GINNet(GraphStackNet):
    """GIN layers (:mod:`scalegnn.nn.gin`); ``gin_weights``: operator (default) or ones."""
    family = "gin"
    OPTIONS = ("layers", "gin_weights")

    def __init__(self, in_dim, num_classes, *, gin_weights: str = "operator", **kw):
        self.gin_weights = gin_weights
        super().__init__(in_dim, num_classes, **kw)

    def graph_layer(self, d_in):
        return GINLayer(d_in, self.hidden, self.bias, self.act, self.drop, self.gin_weights)


def propagation_hops(network: dict) -> int:
    """How deep a model of the config's ``network`` reads the graph: the propagations over the
    adjacency between a node's input and its output (saint: the sum of the layer orders;
    mixhop: the largest power per graph layer; the other families: one per graph layer)."""
    if network.get("pyg"):  # PyG (nn/pyg.py): BasicGNN's num_layers convs; one for a conv
        return int((network.get("pyg_args") or {}).get("num_layers", 1))
    model = network.get("model", "saint")
    arch = network.get("arch", "1-0-1-0")
    if model == "saint":
        return sum(parse_arch(arch))
    per = max(parse_powers(network.get("powers", "0-1-2"))) if model == "mixhop" else 1
    return sum(layer_plan(arch, network.get("layers", 0), model)) * per


def check_heads(heads, hidden) -> int:
    if int(heads) < 1 or int(hidden) % int(heads):
        raise ConfigError(f"network.heads: must be >= 1 and divide network.dim={hidden}, "
                          f"got {heads}")
    return int(heads)


def weighted_loss(logits, y, weight, multilabel: bool) -> torch.Tensor:
    """sigmoid + BCE (multi-label) or softmax + CE (single-label), weighted per node and summed."""
    if multilabel:
        per = F.binary_cross_entropy_with_logits(logits, y.to(logits.dtype), reduction="none").sum(1)
    else:
        per = F.cross_entropy(logits, y, reduction="none")
    return (weight.to(per.dtype) * per).sum()


MODELS = {"saint": GraphSAINTNet, "gcn": GCNNet, "gat": GATNet, "mixhop": MixHopNet,
          "jk": JKNet, "gin": GINNet}


def validate_options(network: dict) -> None:
    """Check the family options of a config's ``network`` mapping (ConfigError naming the key)."""
    model = network.get("model", "saint")
    if int(network.get("layers", 0)) < 0:
        raise ConfigError(f"network.layers: must be >= 0 (0 = depth from network.arch), "
                          f"got {network['layers']}")
    _check_choice("jk_mode", network.get("jk_mode", "concat"), JK_MODES)
    _check_choice("gin_weights", network.get("gin_weights", "operator"), GIN_WEIGHTS)
    parse_powers(network.get("powers", "0-1-2"))
    if model == "gat":
        check_heads(network.get("heads", 4), network.get("dim", 256))
    if model != "saint":
        layer_plan(network.get("arch", "1-0-1-0"), network.get("layers", 0), model)


def build_model(in_dim: int, num_classes: int, *, model: str = "saint", **kwargs) -> nn.Module:
    """Build a model by family name (a key of :data:`MODELS`) with the network keys of the
    config; options of :data:`MODEL_OPTIONS` that the family does not use are dropped."""
    if model not in MODELS:
        raise ConfigError(f"network.model: {model!r} is not one of {sorted(MODELS)}")
    cls = MODELS[model]
    kwargs = {k: v for k, v in kwargs.items() if k not in MODEL_OPTIONS or k in cls.OPTIONS}
    return cls(in_dim, num_classes, **kwargs)
