"""A PyTorch Geometric model trained as a scalegnn model (needs ``torch_geometric``).

:class:`PyGNet` wraps any ``torch.nn.Module`` whose forward takes ``(x, edge_index)`` (PyG's
``GraphSAGE``, ``GCN``, ``GAT``, ``GIN``, a single conv such as ``SAGEConv``, or a module of
one's own) and gives it the interface of the model zoo (:mod:`scalegnn.nn.models`):
``model(x, adj)`` with a :class:`~scalegnn.ops.SparseAdj`, ``loss``, ``predict``, ``embed``.
The adjacency becomes ``edge_index`` (row ``i`` of ``adj`` aggregates column ``j``: the edge
``j -> i``, PyG's source-to-target flow) and, when the module's forward takes
``edge_weight``, its values: GraphSAINT's normalized aggregator values while training, the
row-normalized adjacency ``D⁻¹A`` in evaluation (PyG's ``GraphSAGE`` ignores them, ``GCN``
normalizes them again). CSR input features are densified per batch (PyG multiplies dense
tensors); that costs ``|V_s| x F`` floats per batch and ``n x F`` in evaluation.

A config builds one by name (:func:`network_model`)::

    network:
      - pyg: GraphSAGE           # a class of torch_geometric.nn.models or torch_geometric.nn
        pyg_args: {num_layers: 2, hidden_channels: 256}

``in_channels`` and ``out_channels`` come from the data; ``hidden_channels`` defaults to
``network.dim`` and ``dropout`` to ``params.dropout`` when the class takes them. The name is
looked up in those two namespaces only (no dotted paths are imported from a config).

PyG modules have no layer-wise form: evaluation runs the module once on the whole graph
(``layerwise = False``), which holds the input features, every layer's ``n x width`` output and
PyG's per-edge messages (``E x width`` floats for a layer that gathers ``x_j``).
"""

from __future__ import annotations

import inspect

import numpy as np
import torch
from torch import nn

from scalegnn.errors import ConfigError
from scalegnn.nn.models import MODEL_OPTIONS, NodeClassifier, build_model
from scalegnn.ops import SparseAdj

FILLED = ("in_channels", "out_channels")
"""Arguments the data fills (refused in ``network.pyg_args``)."""


def _namespaces():
    try:
        import torch_geometric.nn as pyg_nn
        import torch_geometric.nn.models as pyg_models
    except ImportError as e:
        raise ConfigError(f"network.pyg: needs torch_geometric (pip install scalegnn[pyg]): "
                          f"{e}") from None
    return pyg_models, pyg_nn


def resolve_class(name) -> type:
    """The PyG class ``name`` (of ``torch_geometric.nn.models``, else ``torch_geometric.nn``):
    a ``torch.nn.Module`` whose forward takes ``edge_index``; ConfigError naming
    ``network.pyg`` otherwise."""
    if not isinstance(name, str) or not name.isidentifier() or name.startswith("_"):
        raise ConfigError(f"network.pyg: expected a class name such as 'GraphSAGE', got "
                          f"{str(name)[:60]!r}")
    cls = None
    for ns in _namespaces():
        cls = getattr(ns, name, None)
        if cls is not None:
            break
    if not (isinstance(cls, type) and issubclass(cls, nn.Module)):
        raise ConfigError(f"network.pyg: {name!r} is not a model or layer class of "
                          f"torch_geometric.nn.models or torch_geometric.nn")
    if "edge_index" not in inspect.signature(cls.forward).parameters:
        raise ConfigError(f"network.pyg: {name}.forward takes no edge_index (a node model "
                          f"needs forward(x, edge_index, ...))")
    return cls


def _args(cls, network: dict, dropout: float) -> dict:
    """The constructor's keyword arguments from ``network.pyg_args`` and the defaults the
    module docstring names, checked against the class's signature."""
    given = network.get("pyg_args") or {}
    if not isinstance(given, dict) or not all(isinstance(k, str) for k in given):
        raise ConfigError(f"network.pyg_args: expected a mapping of {cls.__name__}'s keyword "
                          f"arguments, got {str(given)[:60]!r}")
    for key in FILLED:
        if key in given:
            raise ConfigError(f"network.pyg_args.{key}: set from the data, leave it out")
    params = inspect.signature(cls.__init__).parameters
    takes_any = any(p.kind is p.VAR_KEYWORD for p in params.values())
    for key in given:
        if key not in params and not takes_any:
            raise ConfigError(f"network.pyg_args.{key}: not an argument of {cls.__name__} "
                              f"(it takes {', '.join(k for k in params if k != 'self')})")
    args = dict(given)
    for key, value in (("hidden_channels", network.get("dim")), ("dropout", dropout)):
        if key in params and key not in args and value is not None:
            args[key] = value
    missing = [k for k, p in params.items() if k not in ("self", *FILLED) and k not in args
               and p.default is p.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    if missing:
        raise ConfigError(f"network.pyg_args.{missing[0]}: {cls.__name__} needs it")
    return args


def check_network(network: dict, dropout: float = 0.0) -> None:
    """Config validation of ``network.pyg`` / ``network.pyg_args`` (when ``pyg`` is set): the
    class and its arguments, built once on torch's meta device (no memory; 1 input channel,
    2 classes) so that an argument PyG refuses is refused when the config is read."""
    if network.get("pyg"):
        with torch.random.fork_rng(devices=[]), torch.device("meta"):
            pyg_model(network["pyg"], 1, 2, network=network, dropout=dropout)
    elif network.get("pyg_args"):
        raise ConfigError("network.pyg_args: given without network.pyg (the PyG class)")


def pyg_model(name: str, in_dim: int, num_classes: int, *, multilabel: bool = False,
              network: dict | None = None, dropout: float = 0.0) -> PyGNet:
    """``PyGNet`` of PyG class ``name`` built with ``network``'s ``pyg_args`` (one-line
    ConfigError naming the class and PyG's complaint when its constructor refuses them)."""
    network = {"pyg": name, **(network or {})}
    cls = resolve_class(name)
    args = _args(cls, network, dropout)
    try:
        module = cls(in_channels=int(in_dim), out_channels=int(num_classes), **args)
    except Exception as e:  # noqa: BLE001 - PyG raises TypeError, ValueError, KeyError, ...
        text = " ".join(str(e).split()) or type(e).__name__
        raise ConfigError(f"network.pyg_args: {name}(**{args}) refused them: {text}"[:300]) \
            from None
    return PyGNet(module, multilabel=multilabel, out_dim=int(num_classes))


def network_model(in_dim: int, num_classes: int, network: dict, dropout: float,
                  multilabel: bool) -> nn.Module:
    """The model of a config's ``network`` section: :func:`pyg_model` when ``network.pyg``
    is set, else the zoo's :func:`~scalegnn.nn.models.build_model`."""
    if network.get("pyg"):
        return pyg_model(network["pyg"], in_dim, num_classes, multilabel=multilabel,
                         network=network, dropout=dropout)
    return build_model(in_dim, num_classes, model=network["model"], hidden=network["dim"],
                       arch=network["arch"], aggr=network["aggr"], bias=network["bias"],
                       act=network["act"], dropout=dropout, multilabel=multilabel,
                       **{k: network[k] for k in MODEL_OPTIONS if k in network})


def edge_index(adj, device=None) -> torch.Tensor:
    """The entries of ``adj`` (a :class:`~scalegnn.ops.SparseAdj` or a CSR
    :class:`~scalegnn.graph.Graph`) as PyG's ``edge_index`` (2 x nnz, int64): row 0 the sources
    (the columns), row 1 the targets (the rows: row v aggregates its columns u)."""
    rows = np.repeat(np.arange(len(adj.indptr) - 1, dtype=np.int64), np.diff(adj.indptr))
    out = torch.from_numpy(np.stack([adj.indices.astype(np.int64, copy=False), rows]))
    return out if device is None else out.to(device)


def as_model(module: nn.Module, num_classes: int, multilabel: bool) -> nn.Module:
    """A model given from Python (``Trainer(model=...)``, ``load_run(model=...)``): a zoo-like
    model (with ``loss`` and ``predict``) as is, any other module wrapped in :class:`PyGNet`."""
    if not isinstance(module, nn.Module):
        raise ConfigError(f"model: expected a torch.nn.Module, got {type(module).__name__}")
    if hasattr(module, "loss") and hasattr(module, "predict"):
        return module
    return PyGNet(module, multilabel=multilabel, out_dim=num_classes)


class PyGNet(NodeClassifier):
    """A PyG node model with the zoo's interface (module docstring). ``out_dim``: the
    module's output width (the classes; ``embed_dim``)."""

    layerwise = False

    def __init__(self, module: nn.Module, *, multilabel: bool = False, out_dim: int | None = None):
        super().__init__()
        self.module = module
        self.multilabel = bool(multilabel)
        self.embed_dim = int(out_dim if out_dim is not None else
                             getattr(module, "out_channels", 0) or 0)
        forward = inspect.signature(module.forward).parameters
        self.takes_weight = "edge_weight" in forward
        self.layers = nn.ModuleList()  # no layer-wise form (the memory guard's widths below)

    def layer_widths(self) -> list[int]:
        """Output width of each message-passing layer, as far as the module tells (PyG's
        ``BasicGNN``: ``num_layers`` and ``hidden_channels``), the last one the classes."""
        m = self.module
        depth, hidden = getattr(m, "num_layers", 1), getattr(m, "hidden_channels", None)
        if not isinstance(depth, int) or not isinstance(hidden, int):
            return [self.embed_dim]
        return [hidden] * max(depth - 1, 0) + [self.embed_dim]

    def embed(self, x, adj: SparseAdj | None, exchange=None) -> torch.Tensor:
        """The module's output (for a PyG model: its logits; there is no separate classifier)."""
        if exchange is not None:
            raise ConfigError("network.pyg: a PyG model trains in one process (no boundary "
                              "exchange between its layers)")
        p = next(self.parameters(), None)
        device = p.device if p is not None else torch.device("cpu")
        if not isinstance(x, torch.Tensor):  # a CSR feature store: PyG multiplies dense rows
            x = torch.from_numpy(np.ascontiguousarray(x.to_dense()))
        x = x.to(device=device, dtype=p.dtype if p is not None else x.dtype)
        ei = edge_index(adj, device)
        if self.takes_weight:
            w = torch.from_numpy(adj.data).to(device=device, dtype=x.dtype)
            out = self.module(x, ei, edge_weight=w)
        else:
            out = self.module(x, ei)
        return out[:adj.num_rows]

    def forward(self, x, adj: SparseAdj | None, exchange=None) -> torch.Tensor:
        return self.embed(x, adj, exchange)

    def reset_parameters(self):
        if hasattr(self.module, "reset_parameters"):
            self.module.reset_parameters()
