"""Memory guard: estimate a training run's peak memory before it starts, and refuse early.

:func:`estimate_training_memory` adds up named terms for a GraphSAINT-mode run of ``config`` on
``dataset`` (n nodes, E CSR entries, E_t entries of the training graph, F features, C label
columns, |V_s| the largest phase's subgraph size, P model parameters, 4-byte floats):

====================== =====================================================================
graph                  the CSR: 8(n+1) + E·itemsize
training graph         inductive runs: the train-train CSR (GraphSAINT's adj_train), 0 when
                       ``params.transductive``
normalization          evaluation's row-normalized values 4E, 1/deg 4n; with GraphSAINT
                       normalization (``norm_loss`` and ``norm_aggr``) also the aggregator
                       multipliers and pre-sampling counts 8E_t and per-node loss weights and
                       counts 12n
features               dense in memory: 4nF, twice when ``params.standardize`` makes a
                       standardized copy; CSR: its arrays; memory-mapped: 0 (the page cache
                       holds what is read; a batch's gathered rows are in *sampler pool*)
labels                 the label array
sampler pool           batches in flight: (pool_depth + one production chunk) x |V_s| x
                       (gathered feature row + ids/label/weight) plus their subgraph CSRs
                       (|V_s| x min(mean degree, |V_s|) entries of 24 bytes: index, value,
                       edge id, transpose permutation); plus the pre-sampled subgraphs kept for
                       reuse (at most ``GraphSAINTLoader.PRESAMPLE_KEEP_BYTES``)
model and optimizer    4P floats: weights, gradients, Adam's two moments; P counted on a model
                       built on torch's meta device (shapes only: :func:`shape_model`)
iteration activations  per layer |V_s| x output width x 4 floats (output, aggregation,
                       pre-activation, gradient); the input rows are in *sampler pool*
evaluation activations full-graph pass (``engine/evaluate.py``): the layer-wise path's largest
                       layer, n x (input + output + propagated matrices) floats, or the
                       neighbourhood path's held inputs and buffers when smaller (see
                       :func:`_evaluation_bytes`)
====================== =====================================================================

A PyG model (``network.pyg``, :mod:`scalegnn.nn.pyg`) adds PyG's per-edge messages to the
iteration activations (2 x subgraph edges x each layer's width, plus the densified batch rows
of CSR features), and its evaluation is one whole-graph pass: (E + 2n) x the widest layer,
plus the densified features when they are CSR or memory-mapped.

A config with a ``shadow:`` section is estimated by :func:`estimate_shadow_memory` instead: the
same graph, training graph, features and labels, then the PPR lists kept per target, one
training and one evaluation batch of per-target scopes, and the model (the run's
``ShadowNet`` on the meta device, which ``scalegnn.train.build.shape_run_model`` builds).

The subgraph's edge count is a rough upper-bound-style guess (a biased sampler on a power-law
graph can exceed the mean degree); the pool is seldom the largest term at scale. What the
estimate is compared with: ``available_memory()`` (MemAvailable, cgroup-limited) plus the
dataset arrays already resident when the check runs (they are counted in the estimate and
already absent from MemAvailable).

What a process really holds (for comparing with these terms) is read by
:mod:`scalegnn.memory`.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import torch

from scalegnn.engine import evaluate as E
from scalegnn.errors import DataError
from scalegnn.memory import available_memory, human_bytes
from scalegnn.nn.pyg import network_model
from scalegnn.nn.saint import SAINTLayer
from scalegnn.sampling.loader import GraphSAINTLoader

FLOAT = 4


@dataclass
class MemoryEstimate:
    """Named byte counts (see the module docstring) and what was available."""

    terms: dict = field(default_factory=dict)
    resident: int = 0
    """Bytes of the estimate already allocated when it was made (the loaded dataset)."""

    @property
    def total(self) -> int:
        return int(sum(self.terms.values()))

    @property
    def largest(self) -> tuple[str, int]:
        name = max(self.terms, key=self.terms.get)
        return name, int(self.terms[name])

    def to_dict(self, available: int | None = None) -> dict:
        out = {"total": self.total, "terms": {k: int(v) for k, v in self.terms.items()},
               "largest": self.largest[0], "resident": int(self.resident)}
        if available is not None:
            out["available"] = int(available)
        return out

    def lines(self, available: int | None = None) -> list[str]:
        """A few human lines: the total, then every term, largest first."""
        head = f"training needs about {human_bytes(self.total)}"
        if available is not None:
            head += f" ({human_bytes(available)} available)"
        order = sorted(self.terms.items(), key=lambda kv: -kv[1])
        return [head] + [f"  {k:<23}{human_bytes(v):>10}" for k, v in order]


def phase_nodes(phase: dict, dataset, train_nodes: int) -> int:
    """The expected |V_s| of one phase's sampler (its budget)."""
    kind = phase["sampler"]
    if kind == "full":
        s = train_nodes
    elif kind == "edge":
        s = 2 * phase.get("size_subg_edge", 0)
    elif kind == "rw":
        s = phase.get("num_root", 0) * (phase.get("depth", 0) + 1)
    else:  # node, mrw (frontier)
        s = phase.get("size_subgraph", 0)
    return min(max(int(s), 1), dataset.num_nodes)


def _subgraph_nodes(config, dataset, train_nodes: int) -> int:
    """The largest expected |V_s| over the config's phases (the samplers' budgets)."""
    sizes = [phase_nodes(phase, dataset, train_nodes) for phase in config.phases]
    return max(sizes) if sizes else min(train_nodes, dataset.num_nodes)


def shape_model(dataset, config):
    """The zoo model ``config.network`` builds for ``dataset``, on torch's meta device: every
    parameter has its shape and no storage, so the count of a model far larger than memory
    (``network.dim: 100000``) costs nothing (the estimate never allocates what it estimates)."""
    with meta_device():
        return network_model(dataset.num_features, max(dataset.num_classes, 1),
                             config.network, config.params["dropout"], dataset.multilabel)


@contextmanager
def meta_device():
    """Build modules on the meta device (shapes only), the caller's random stream untouched."""
    with torch.random.fork_rng(devices=[]), torch.device("meta"):
        yield


def _model_shape(model, in_dim: int, product_first: bool) -> tuple[int, list[tuple]]:
    """Parameter count of ``model`` (built by :func:`shape_model`, or a mode's own model on the
    meta device) and, per layer of its graph stack (classifier last), (input width, output
    width, width of the propagated matrices, width of the narrowest bases).

    Propagated matrices as ``engine/evaluate.py`` makes them: per hop o >= 1 of a layer, an
    n x out_dim product ``X W_o`` when the layer narrows (out < in, or ``product_first``: CSR
    or memory-mapped input features, multiplied before propagating), else the input itself
    for hop 1 (nothing new) and an n x in_dim matrix per further hop. The neighbourhood path
    holds per hop the narrower of ``Â^o H`` and ``Â^o H W_o``: min(in_dim, out_dim) wide."""
    n_params = sum(p.numel() for p in model.parameters())
    if not hasattr(model, "classifier"):  # a PyG model (nn/pyg.py): its layers' widths
        widths = model.layer_widths()
        return int(n_params), [(w_in, w, w, w) for w_in, w in zip([in_dim] + widths, widths)]
    stack = model.backbones[0] if hasattr(model, "backbones") else model  # shaDow: a branch
    layers = []
    width = in_dim
    for layer in list(stack.layers) + [model.classifier]:
        if isinstance(layer, SAINTLayer):
            out, hops = layer.output_dim, layer.order
            narrow = layer.out_dim < layer.in_dim or (product_first and not layers)
            extra = hops * layer.out_dim if narrow else max(hops - 1, 0) * layer.in_dim
            bases = hops * min(layer.in_dim, layer.out_dim)
        else:  # other families: a width-sized output, one propagated matrix
            out = int(getattr(layer, "output_dim", getattr(layer, "out_dim", width)))
            extra = bases = out
        layers.append((width, out, extra, bases))
        width = out
    return int(n_params), layers


def _data_terms(dataset, config) -> tuple[dict, int, float, bool, int]:
    """The terms every mode shares (graph, training graph, features, labels): (terms, E_t,
    bytes of one gathered feature row, whether the features are CSR or memory-mapped (the
    first layer's product then comes first), resident bytes)."""
    p = config.params
    g = dataset.graph
    n, e = g.num_nodes, g.num_edges
    x = dataset.features
    train = int(dataset.train_idx.size)
    inductive = not p["transductive"]
    t = {"graph": g.nbytes}
    if inductive and dataset.has_train_graph:  # read now if on disk: training reads it anyway
        t["training graph"] = dataset.train_graph.nbytes
        e_train = dataset.train_graph.num_edges
    elif inductive:  # a random split keeps about (train share)^2 of the entries
        e_train = int(e * (train / max(n, 1)) ** 2)
        t["training graph"] = 8 * (n + 1) + e_train * g.indices.itemsize
    else:
        e_train = e
        t["training graph"] = 0
    # an in-memory dense matrix is copied when standardized; CSR folds the statistics in and
    # a mapped one applies them on read
    copy = not (x.sparse or x.mapped) and p["standardize"] and not dataset.meta.get("standardized")
    t["features"] = x.resident_bytes * (2 if copy else 1)
    t["labels"] = int(np.asarray(dataset.labels).nbytes)
    resident = g.nbytes + t["labels"] + x.resident_bytes
    if inductive and dataset.has_train_graph:
        resident += dataset.train_graph.nbytes
    return t, e_train, x.row_bytes, x.mapped or x.sparse, resident


def estimate_training_memory(dataset, config, model=None) -> MemoryEstimate:
    """Peak-memory terms of training ``dataset`` with ``config`` (module docstring); a config
    with a ``shadow:`` section gets :func:`estimate_shadow_memory`. ``model``: the run's model
    on the meta device (``scalegnn.train.build.shape_run_model``); default: the zoo model of
    ``config.network`` (:func:`shape_model`). Nothing is allocated for the model."""
    if "shadow" in config.sections:
        return estimate_shadow_memory(dataset, config, model)
    p = config.params
    g = dataset.graph
    n, e = g.num_nodes, g.num_edges
    train = int(dataset.train_idx.size)
    inductive = not p["transductive"]
    t, e_train, row_bytes, product_first, resident = _data_terms(dataset, config)
    normalize = p["norm_loss"] and p["norm_aggr"]  # else no multipliers, no pre-sampling
    t["normalization"] = FLOAT * e + (8 * e_train + 12 * n if normalize else 0) + 4 * n
    vs = _subgraph_nodes(config, dataset, train if inductive else n)
    mean_deg = (e_train if inductive else e) / max(train if inductive else n, 1)
    sub_edges = vs * min(mean_deg, vs)
    label_bytes = t["labels"] / max(n, 1)
    batch = vs * (row_bytes + 8 + label_bytes + FLOAT) + 24 * sub_edges
    threads = p["sampler_threads"] or len(os.sched_getaffinity(0))
    in_flight = p["pool_depth"] + max(4 * threads, p["pool_depth"])
    presampled = 0
    if normalize:
        count = p["sample_coverage"] * train / max(vs, 1)
        presampled = min(GraphSAINTLoader.PRESAMPLE_KEEP_BYTES,
                         count * (8 * vs + 24 * sub_edges))
    t["sampler pool"] = int(in_flight * batch + presampled)
    n_params, layers = _model_shape(shape_model(dataset, config) if model is None else model,
                                    dataset.num_features, product_first)
    t["model and optimizer"] = 4 * FLOAT * n_params
    t["iteration activations"] = int(sum(4 * FLOAT * vs * w_out for _, w_out, _, _ in layers))
    # standardized mapped rows are read into memory for evaluation (evaluate.as_tensor)
    x = dataset.features
    read_in = x.mapped and (x.standardized or
                            (p["standardize"] and not dataset.meta.get("standardized")))
    t["evaluation activations"] = _evaluation_bytes(n, layers, dataset.num_classes) \
        + (FLOAT * n * dataset.num_features if read_in else 0)
    if config.network.get("pyg"):  # PyG: per-edge messages; dense input; one whole-graph pass
        widest = max(w_out for _, w_out, _, _ in layers)
        dense = FLOAT * dataset.num_features * (n if x.sparse or read_in else 0)
        t["iteration activations"] += int(2 * FLOAT * sub_edges * sum(w for _, w, _, _ in layers)
                                          + (FLOAT * vs * dataset.num_features if x.sparse else 0))
        t["evaluation activations"] = int(FLOAT * (e + 2 * n) * widest + dense)
    return MemoryEstimate({k: int(v) for k, v in t.items()}, int(resident))


def _scope_nodes(spec: dict, n: int, max_degree: int) -> int:
    """Most nodes one extractor's scope holds: k for PPR, 1 + b + ... + b^depth for k-hop (b:
    the budget, the largest degree when it is -1 or larger), at most n (``spec`` is checked
    by the config: known keys, ranged integers)."""
    if spec.get("kind") == "ppr":
        return min(int(spec.get("k", 200)), n)
    b, depth = int(spec.get("budget", 20)), int(spec.get("depth", 2))
    b = max_degree if b < 0 else min(b, max_degree)
    total = level = 1
    for _ in range(depth):
        level = min(level * b, n)
        total = min(total + level, n)
    return max(total, 1)


def estimate_shadow_memory(dataset, config, model=None) -> MemoryEstimate:
    """Peak-memory terms of a shaDow-GNN run (``shadow:`` section): the shared data terms,
    the PPR lists kept for every target (k node ids and float32 scores each, twice while
    chunks merge), the training graph a link task builds from its training edges, the
    model, one training batch (``batch_size`` targets, each with one scope per extractor:
    gathered rows, scope CSR, 4 floats per output width) and one evaluation batch
    (``eval_batch_size`` targets, 2 floats per width: no gradients), and the evaluation
    outputs. ``model``: the ShadowNet on the meta device (default: one zoo model per
    extractor, a close approximation)."""
    p, sh = config.params, config.section("shadow")
    g = dataset.graph
    n = g.num_nodes
    max_degree = int(g.degrees().max(initial=0))
    t, _, row_bytes, product_first, resident = _data_terms(dataset, config)
    link = sh["task"] == "link"
    if link:  # Graph.from_edges of the training share of the edges, and the pair lists
        t["training graph"] = 8 * (n + 1) + int(g.num_edges * sh["edge_split"][0]) \
            * g.indices.itemsize + 16 * g.num_edges // 2
    targets = n if link else int(dataset.train_idx.size + dataset.val_idx.size
                                 + dataset.test_idx.size)
    specs = [sh["extractors"]] if isinstance(sh["extractors"], dict) else sh["extractors"]
    per_target = 2 if link else 1
    scopes = [_scope_nodes(s, n, max_degree) for s in specs]
    scope = sum(scopes) * per_target
    t["scope lists"] = int(sum(2 * (k * (g.indices.itemsize + FLOAT) + 16) * targets
                               for s, k in zip(specs, scopes) if s.get("kind") == "ppr"))
    n_params, layers = _model_shape(shape_model(dataset, config) if model is None else model,
                                    dataset.num_features, product_first)
    t["model and optimizer"] = 4 * FLOAT * n_params * (1 if model is not None else len(specs))
    mean_deg = g.num_edges / max(n, 1)
    scope_edges = scope * min(mean_deg, scope / max(len(specs) * per_target, 1))
    widths = sum(w_out for _, w_out, _, _ in layers)
    rows, eval_rows = sh["batch_size"] * scope, sh["eval_batch_size"] * scope
    batch = rows * (row_bytes + 16) + 12 * sh["batch_size"] * scope_edges
    t["sampler pool"] = int((p["pool_depth"] + 1) * batch)
    t["iteration activations"] = int(4 * FLOAT * rows * widths)
    t["evaluation activations"] = int(eval_rows * (row_bytes + 2 * FLOAT * widths)
                                      + 12 * sh["eval_batch_size"] * scope_edges
                                      + FLOAT * targets * max(dataset.num_classes, 1))
    return MemoryEstimate({k: int(v) for k, v in t.items()}, int(resident))


def _evaluation_bytes(n: int, layers, num_classes: int) -> int:
    """Full-graph evaluation (``engine/evaluate.py``): the layer-wise path's largest layer
    (input + output + propagated matrices, n rows), or, when the neighbourhood path needs
    less, what that path holds: the bases of every graph layer before the last (``ÂX`` or
    ``ÂXW``: X itself is the features) and the inputs of those after the first, its block and
    cache buffers and the (n, classes) output; the last graph layer's input is recomputed."""
    layerwise = max(FLOAT * n * ((w_in if i else 0) + w_out + extra)
                    for i, (w_in, w_out, extra, _) in enumerate(layers))
    graph = [(i, w_in, bases) for i, (w_in, _, _, bases) in enumerate(layers) if bases]
    held = sum((w_in if i else 0) + bases for i, w_in, bases in graph[:-1])
    neighbourhood = FLOAT * n * (held + num_classes) \
        + E.BLOCK_BYTES + E.CACHE_BYTES
    return int(min(layerwise, neighbourhood))


def _short(value, limit: int = 24) -> str:
    text = str(value)
    return text if len(text) <= limit else f"{text[:limit - 3]}..."


def term_settings(term: str, dataset, config) -> str:
    """The config values (or the data) that size the estimate's ``term``, for a message."""
    net, p = config.network, config.params
    dim = f"network.dim={net['dim']}"
    if "shadow" in config.sections:
        sh = config.section("shadow")
        batch = f"shadow.batch_size={sh['batch_size']}"
        evals = f"shadow.eval_batch_size={sh['eval_batch_size']}"
    else:
        i, phase = max(enumerate(config.phases),
                       key=lambda ph: phase_nodes(ph[1], dataset, dataset.num_nodes))
        batch = ", ".join(f"phase[{i}].{k}={v}" for k, v in phase.items()
                          if k not in ("end", "sampler")) or f"phase[{i}].sampler=full"
        evals = f"{dataset.num_nodes} nodes"
    data = (f"the data ({dataset.num_nodes} nodes, {dataset.graph.num_edges} edges, "
            f"{dataset.num_features} features)")
    return {"model and optimizer": f"{dim}, network.arch={_short(net['arch'])}",
            "iteration activations": f"{batch}, {dim}",
            "evaluation activations": f"{evals}, {dim}",
            "sampler pool": f"params.pool_depth={p['pool_depth']}, {batch}",
            "scope lists": "shadow.extractors (ppr k)"}.get(term, data)


def check_training_memory(dataset, config, *, force: bool = False,
                          available: int | None = None, model=None) -> MemoryEstimate:
    """The estimate; DataError (one line: total, largest term, available) when it exceeds the
    available memory plus what is already resident, unless ``force``."""
    est = estimate_training_memory(dataset, config, model)
    avail = available_memory() if available is None else available
    if avail is not None and not force and est.total > avail + est.resident:
        name, size = est.largest
        raise DataError(
            f"memory: training needs about {human_bytes(est.total)} (largest: {name} "
            f"{human_bytes(size)}, set by {term_settings(name, dataset, config)}), "
            f"{human_bytes(avail + est.resident)} available "
            f"({human_bytes(est.resident)} of it already loaded); use --force to train anyway")
    return est

