"""``ShadowNet``: shaDow-GNN's model: per branch a backbone GNN from :mod:`scalegnn.nn` run on
the branch's block-diagonal stack of target subgraphs, a residual combination of its layer
outputs, ``F.normalize``, a readout per target; an attention ensemble over the branches; a
linear classifier.

For branch r (its own backbone, layer outputs ``H_r^(1..L)`` on ``(x_r, adj_r)``)::

    Z_r = normalize( residual(H_r^(1), …, H_r^(L)) )        (L2 per row)
    e_r = readout(Z_r, segment_r, center_r, center2_r)       (B, d_e)

Ensemble of R > 1 branches (shaDow-GNN's attention; one weight vector per target)::

    s_r = qᵀ tanh(W e_r + b),   w = softmax_r(s),   e = Σ_r w_r e_r

(R = 1: ``e = e_1``). Logits = ``classifier(e)``, an order-0 GraphSAINT layer with identity
activation and plain bias (as :meth:`scalegnn.nn.models.NodeClassifier.make_classifier`).

Every operation before the readout is row-local or propagates along ``adj``, which is
block-diagonal, and the readout pools within blocks: so target k's logits depend on block k
alone, and a batch of B blocks gives the same numbers as B batches of one block (the property
the tests check, and what makes minibatching over targets correct).

``residual='none'`` uses the backbone's own readout of its layer outputs (the last one; for
``jk`` its jumping-knowledge combination). ``layers=L > 0`` gives L graph layers for every
family (for ``saint``: arch ``1-1-…-1``), ``arch`` otherwise. L may exceed the hop count of
the extractor (e.g. 5 layers on 2-hop subgraphs).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from scalegnn.errors import ConfigError
from scalegnn.nn.models import MODEL_OPTIONS, GraphSAINTNet, build_model, weighted_loss
from scalegnn.nn.saint import SAINTLayer
from scalegnn.ops import spmm
from scalegnn.ops.fused import l2_normalize
from scalegnn.shadow.labels import num_labels
from scalegnn.shadow.readout import Readout, Residual


class BranchAttention(nn.Module):
    """``e = Σ_r softmax_r(qᵀ tanh(W e_r + b)) e_r`` over R branch vectors of width ``dim``."""

    def __init__(self, dim: int, att_dim: int | None = None):
        super().__init__()
        att_dim = int(att_dim or dim)
        self.proj = nn.Linear(dim, att_dim)
        self.query = nn.Parameter(torch.empty(att_dim))
        self.reset_parameters()

    def reset_parameters(self):
        nn.init.xavier_uniform_(self.proj.weight)
        nn.init.zeros_(self.proj.bias)
        bound = 1.0 / math.sqrt(self.query.shape[0])
        nn.init.uniform_(self.query, -bound, bound)

    def weights(self, vectors: torch.Tensor) -> torch.Tensor:
        """``vectors`` (B, R, d) -> attention weights (B, R), each row summing to 1."""
        return torch.softmax(torch.tanh(self.proj(vectors)) @ self.query, dim=1)

    def forward(self, vectors: torch.Tensor) -> torch.Tensor:
        """``vectors`` (B, R, d) -> (B, d)."""
        return (self.weights(vectors)[:, :, None] * vectors).sum(1)


def check_branches(branches) -> int:
    if isinstance(branches, bool) or not isinstance(branches, int) or branches < 1:
        raise ConfigError(f"shadow.branches: must be a positive integer, got {branches!r}")
    return branches


def expand_rows(x, inverse: torch.Tensor):
    """``x[inverse]``: the per-appearance rows of a batch whose ``x`` holds each node once
    (a tensor, or a feature store's CSR rows)."""
    return x[inverse] if isinstance(x, torch.Tensor) else x[inverse.cpu().numpy()]


def unique_first_layer(layer, x, inverse: torch.Tensor, adj):
    """The output of ``layer`` on the per-appearance rows ``x[inverse]``, with its ``X W_o``
    computed on the unique rows ``x`` and then gathered: the same numbers as
    ``layer(x[inverse], adj)`` (each row of ``X W`` depends on that row alone), less work by
    the scopes' overlap. None where that would not hold, and the caller expands instead: not a
    :class:`SAINTLayer`, an active dropout (masks are drawn per appearance), or a layer that
    aggregates before it transforms (``(Â X) W`` when ``out_dim >= in_dim``)."""
    if not isinstance(layer, SAINTLayer) or (layer.training and layer.dropout.p > 0):
        return None
    if isinstance(x, torch.Tensor) and layer.out_dim >= layer.in_dim:
        return None
    terms = []
    for o, weight in enumerate(layer.weights):
        h = (x @ weight)[inverse]
        for _ in range(o):
            h = spmm(adj, h)
        terms.append(h)
    return layer.combine(terms)


class ShadowNet(nn.Module):
    """shaDow-GNN model; ``forward(branches) -> logits (B, num_classes)`` where ``branches`` is
    a list of ``(x, adj, segment, center, center2[, inverse])``, one per branch (``center2``
    None unless ``pair``; ``inverse``: ``x`` has each node once, see :meth:`node_embeddings`). Family options (``heads``, ``powers``, ``jk_mode``, ``gin_weights``) go to
    :func:`scalegnn.nn.build_model`."""

    def __init__(self, in_dim: int, num_classes: int, *, branches: int = 1,
                 backbone: str = "saint", hidden: int = 256, arch="1-0-1-0", layers: int = 0,
                 readout: str = "center", residual: str = "none", aggr: str = "concat",
                 bias: str = "norm", act: str = "relu", dropout: float = 0.0,
                 multilabel: bool = False, pair: bool = False, **options):
        super().__init__()
        self.num_branches = check_branches(branches)
        self.multilabel, self.pair = multilabel, bool(pair)
        self.residual = Residual(residual)
        if int(layers) < 0:
            raise ConfigError(f"network.layers: must be >= 0 (0 = depth from network.arch), "
                              f"got {layers}")
        if backbone == "saint" and int(layers) > 0:
            arch = "-".join(["1"] * int(layers))
        self.backbones = nn.ModuleList()
        for _ in range(self.num_branches):
            net = build_model(in_dim, num_classes, model=backbone, hidden=hidden, arch=arch,
                              layers=layers, aggr=aggr, bias=bias, act=act, dropout=dropout,
                              multilabel=multilabel, **options)
            del net.classifier    # shaDow has its own head: no unused parameters
            self.backbones.append(net)
        dims = [layer.output_dim for layer in self.backbones[0].layers]
        node_dim = self.backbones[0].embed_dim if residual == "none" \
            else self.residual.output_dim(dims)
        self.readout = Readout(readout, node_dim, pair=self.pair)
        self.embed_dim = self.readout.output_dim
        self.attention = BranchAttention(self.embed_dim) if self.num_branches > 1 else None
        self.classifier = SAINTLayer(self.embed_dim, num_classes, 0, "concat", "bias",
                                     "identity", float(dropout))

    def node_embeddings(self, r: int, x: torch.Tensor, adj, inverse=None) -> torch.Tensor:
        """``Z_r``: branch r's L2-normalized node vectors after the residual combination.
        ``inverse``: ``x`` holds each node once and ``x[inverse]`` is the branch's rows
        (:func:`unique_first_layer`)."""
        net = self.backbones[r]
        outs = net.layer_outputs(x, adj) if inverse is None else \
            self._unique_layer_outputs(net, x, inverse, adj)
        if self.residual.mode == "none" and hasattr(net, "readout"):
            h = net.readout(outs)     # the family's own readout (JK's combination for jk)
        else:
            h = self.residual(outs)
        return l2_normalize(h)     # = F.normalize(h, p=2, dim=1), the backbones' own

    @staticmethod
    def _unique_layer_outputs(net, x, inverse, adj) -> list[torch.Tensor]:
        """``net.layer_outputs(x[inverse], adj)``, its first layer by
        :func:`unique_first_layer` where that gives the same numbers (GraphSAINT layers; the
        rest of the stack as :meth:`GraphSAINTNet.layer_outputs` runs it)."""
        first = unique_first_layer(net.layers[0], x, inverse, adj) \
            if type(net) is GraphSAINTNet else None
        if first is None:
            return net.layer_outputs(expand_rows(x, inverse), adj)
        h, outs = first, [first]
        for layer in net.layers[1:]:
            h = layer(h, adj, adj.num_rows) if layer.order > 0 else layer(h, None)
            outs.append(h)
        return outs

    def branch_vectors(self, branches) -> list[torch.Tensor]:
        """``[e_1, …, e_R]``: the readout of every branch, each (B, embed_dim)."""
        if len(branches) != self.num_branches:
            raise ConfigError(f"shadow.branches: the model has {self.num_branches} branch(es), "
                              f"the batch {len(branches)}")
        out = []
        for r, (x, adj, segment, center, center2, *inverse) in enumerate(branches):
            if self.pair and center2 is None:
                raise ConfigError("shadow.readout: a pair model needs center2 in every branch")
            z = self.node_embeddings(r, x, adj, inverse[0] if inverse else None)
            out.append(self.readout(z, segment, center, center2))
        return out

    def attention_weights(self, branches) -> torch.Tensor:
        """(B, R) ensemble weights (all ones for a single branch)."""
        vectors = self.branch_vectors(branches)
        if self.attention is None:
            return vectors[0].new_ones(vectors[0].shape[0], 1)
        return self.attention.weights(torch.stack(vectors, dim=1))

    def embed(self, branches) -> torch.Tensor:
        """(B, embed_dim): the target vectors the classifier reads."""
        vectors = self.branch_vectors(branches)
        if self.attention is None:
            return vectors[0]
        return self.attention(torch.stack(vectors, dim=1))

    def forward(self, branches) -> torch.Tensor:
        return self.classifier(self.embed(branches))

    def loss(self, logits: torch.Tensor, y: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        """Weighted sum of per-target losses ``Σ_v weight_v · L_v``."""
        return weighted_loss(logits, y, weight, self.multilabel)

    def predict(self, logits: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(logits) if self.multilabel else torch.softmax(logits, dim=1)

    def reset_parameters(self):
        for net in self.backbones:
            for layer in net.layers:
                layer.reset_parameters()
        if self.attention is not None:
            self.attention.reset_parameters()
        self.classifier.reset_parameters()


def shadow_dims(num_features: int, num_classes: int, multilabel: bool,
                settings: dict) -> tuple[int, int, bool, bool]:
    """(input width, classes, multilabel, pair) of the model a ``shadow:`` section
    (``settings``) trains on data of ``num_features`` features and ``num_classes`` classes: a
    link task scores pairs (one multi-label column) on the node features (unless
    ``node_features`` is false) plus the one-hot pair labels."""
    if settings["task"] != "link":
        return num_features, num_classes, multilabel, False
    width = (num_features if settings["node_features"] else 0) + num_labels(settings["pair_labels"])
    return width, 1, True, True


def shadow_net(in_dim: int, num_classes: int, network: dict, params: dict, settings: dict, *,
               multilabel: bool, pair: bool) -> ShadowNet:
    """The ShadowNet of a config's ``network``, ``params`` and ``shadow:`` section
    (``settings``): one branch per extractor."""
    specs = settings["extractors"]
    return ShadowNet(in_dim, num_classes, branches=1 if isinstance(specs, dict) else len(specs),
                     backbone=network["model"], hidden=network["dim"], arch=network["arch"],
                     aggr=network["aggr"], bias=network["bias"], act=network["act"],
                     dropout=params["dropout"], readout=settings["readout"],
                     residual=settings["residual"], multilabel=multilabel, pair=pair,
                     **{k: network[k] for k in MODEL_OPTIONS if k in network})
