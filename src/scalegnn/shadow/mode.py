"""``ShadowMode``: shaDow-GNN training run by the one training loop (:class:`scalegnn.train.Trainer`).

An epoch visits the training targets in a seeded random order, ``batch_size`` at a time; each
minibatch extracts every target's subgraph with each configured extractor (one branch per
extractor) and trains :class:`~scalegnn.shadow.model.ShadowNet` on the block-diagonal batch with
loss weight ``1 / B`` per target. Minibatch ``i`` of epoch ``e`` depends only on (seed, e, i), so
a resumed run continues exactly (the trainer saves the epoch and the iteration).

Inference is minibatched over targets too (``eval_batch_size`` at a time, a fixed extraction
seed): memory depends on the batch, not on the graph, and no full-graph pass is made.

Config (``shadow:`` section of the one schema, :mod:`scalegnn.config`)::

    shadow:
      extractors:                    # one branch per entry; several = an attention ensemble
        - {kind: ppr, k: 200, alpha: 0.15, eps: 1.0e-6, threshold: 0.0}
        - {kind: khop, depth: 2, budget: 20}
      readout: center+mean           # center | sum | mean | max | sort:K | center+POOL
      residual: none                 # none | max | concat (combine every layer's output)
      adj_norm: mean                 # mean (D⁻¹A) | sym (GCN's (D+I)^-1/2 (A+I) (D+I)^-1/2)
      batch_size: 64                 # training targets per minibatch
      eval_batch_size: 512           # targets per inference minibatch
      cache_dir: auto                # PPR lists on disk: auto (~/.cache/scalegnn), none, or a folder
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import torch

from scalegnn.data.transforms import prepared_dataset
from scalegnn.engine.checkpoint import dataset_fingerprint
from scalegnn.engine.metrics import compute_metrics, link_metrics
from scalegnn.engine.mode import Mode
from scalegnn.errors import ConfigError
from scalegnn.features import DenseFeatures, append_columns
from scalegnn.ops import SparseAdj
from scalegnn.shadow.batch import branch_batch, drop_pair_edges, ensemble_batch, prefetch
from scalegnn.shadow.extract import KHopExtractor
from scalegnn.shadow.labels import label_onehot, pair_labels
from scalegnn.shadow.link import sample_negatives, split_edges
from scalegnn.shadow.model import shadow_dims, shadow_net
from scalegnn.shadow.ppr import PPRExtractor
from scalegnn.shard import SINGLE, Shard

EXTRACTOR_KEYS = {"khop": {"depth": int, "budget": int},
                  "ppr": {"k": int, "alpha": float, "eps": float, "threshold": float}}
EVAL_SEED = 0x5AD0  # extraction seed of every inference pass (a fixed scope per target)


def cache_folder(setting: str):
    """``auto`` -> ~/.cache/scalegnn/ppr (or $XDG_CACHE_HOME), ``none``/'' -> no disk cache."""
    if setting in ("", "none", None):
        return None
    if setting == "auto":
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        return Path(base) / "scalegnn" / "ppr"
    return Path(setting)


def make_extractors(specs, graph, cache_dir=None) -> list:
    """Extractor objects from the config's ``shadow.extractors`` list (one-line errors)."""
    if isinstance(specs, dict):
        specs = [specs]
    if not isinstance(specs, list) or not specs:
        raise ConfigError("shadow.extractors: expected a non-empty list of mappings like "
                          "{kind: ppr, k: 200} or {kind: khop, depth: 2, budget: 20}")
    out = []
    for i, spec in enumerate(specs):
        where = f"shadow.extractors[{i}]"
        if not isinstance(spec, dict) or spec.get("kind") not in EXTRACTOR_KEYS:
            raise ConfigError(f"{where}: expected a mapping with kind: ppr or kind: khop, got "
                              f"{spec!r}")
        allowed = EXTRACTOR_KEYS[spec["kind"]]
        kw = {}
        for key, value in spec.items():
            if key == "kind":
                continue
            if key not in allowed:
                raise ConfigError(f"{where}.{key}: unknown key for kind {spec['kind']}; allowed: "
                                  f"{sorted(allowed)}")
            typ = allowed[key]
            ok = isinstance(value, (int, float)) and not isinstance(value, bool) and \
                math.isfinite(value) and (typ is float or float(value).is_integer())
            if not ok:
                raise ConfigError(f"{where}.{key}: expected a finite {typ.__name__}, got {value!r}")
            kw[key] = typ(value)
        try:
            if spec["kind"] == "ppr":
                out.append(PPRExtractor(graph, cache_dir=cache_dir, **kw))
            else:
                out.append(KHopExtractor(graph, **kw))
        except ConfigError as e:
            raise ConfigError(f"{where}: {e}") from None
    return out


class ShadowMode(Mode):
    name = "shadow"
    pair = False  # a target is one node (LinkMode: a pair of nodes)

    def __init__(self, dataset, config, *, seed: int = 0, shard: Shard = SINGLE):
        self._common(dataset, config, seed, shard)
        dataset = self.dataset
        self.num_features, self.num_classes = dataset.num_features, dataset.num_classes
        self.multilabel, self.metric = dataset.multilabel, dataset.metric
        self.dataset_name = dataset.name
        cache = cache_folder(self.settings["cache_dir"])
        specs = self.settings["extractors"]
        self.eval_extractors = make_extractors(specs, dataset.graph, cache)
        self.train_extractors = self.eval_extractors if config.params["transductive"] else \
            make_extractors(specs, dataset.train_graph, cache)
        self.train_idx = np.asarray(dataset.train_idx, dtype=np.int64)
        self._prepared = False

    def _common(self, dataset, config, seed, shard):
        self.dataset, self.config, self.seed = prepared_dataset(dataset, config), config, int(seed)
        self.settings = config.section("shadow")
        self.shard = shard  # data-parallel: this rank's share of the batches and evaluation

    def identity(self) -> dict:
        return {"mode": self.name, "dataset": dataset_fingerprint(self.dataset), "plan": None,
                "world": 1}

    def run_info(self) -> dict:
        return {"dataset": self.dataset.name, "source": str(self.dataset.source),
                "extractors": self.settings["extractors"]}

    def build_model(self, network: dict, params: dict):
        return shadow_net(self.num_features, self.num_classes, network, params, self.settings,
                          multilabel=self.multilabel, pair=self.pair)

    # -------------------------------------------------------------- batches
    def _prepare(self):
        """One-off work before the first batch (PPR lists of every target), timed by the
        trainer as pre-sampling."""
        if self._prepared:
            return
        ds = self.dataset
        evals = np.unique(np.concatenate([ds.val_idx, ds.test_idx]).astype(np.int64))
        for extractors, targets in ((self.train_extractors, self.train_idx),
                                    (self.eval_extractors, evals)):
            for ex in extractors:
                if hasattr(ex, "precompute"):  # PPR: top-k lists, from the disk cache if there
                    ex.precompute(targets)
        self._prepared = True

    def epoch_batches(self, epoch: int) -> int:
        """The single-process epoch's minibatches."""
        self._prepare()
        return max(1, math.ceil(self.train_idx.size / self.settings["batch_size"]))

    def num_batches(self, epoch: int) -> int:
        return -(-self.epoch_batches(epoch) // self.shard.world)

    def positions(self, epoch: int, skip: int = 0) -> list[int]:
        """This rank's minibatches of ``epoch`` (after ``skip``): positions r, r + W, ... of
        the single-process epoch, wrapping past its end so that every rank takes as many."""
        n, w, r = self.epoch_batches(epoch), self.shard.world, self.shard.rank
        return [(r + k * w) % n for k in range(skip, self.num_batches(epoch))]

    def _sharded(self, n: int, fn) -> torch.Tensor:
        """``fn(lo, hi)`` (rows of a result of ``n``) for this rank's block, gathered."""
        lo, hi = self.shard.block(n)
        part = fn(lo, hi)
        if self.shard.world == 1:
            return part
        return torch.from_numpy(self.shard.gather_rows(part.numpy()))

    def _order(self, epoch: int) -> np.ndarray:
        rng = np.random.default_rng([self.seed, epoch, 0x5AD0])
        return self.train_idx[rng.permutation(self.train_idx.size)]

    def _make(self, targets, extractors, seed, unique: bool = False) -> "object":
        """The batch of ``targets``; ``unique`` (inference): each node's features once per
        branch, so the first layer transforms them once (``branch_batch``)."""
        branches = [branch_batch(ex.extract(targets, seed=seed), self.dataset.features,
                                 self.settings["adj_norm"], unique=unique) for ex in extractors]
        y = torch.from_numpy(np.ascontiguousarray(self.dataset.labels[targets]))
        w = torch.full((targets.shape[0],), 1.0 / max(targets.shape[0], 1), dtype=torch.float32)
        return ensemble_batch(branches, y, w, targets)

    def batches(self, epoch: int, skip: int = 0):
        order = self._order(epoch)
        bs = self.settings["batch_size"]
        jobs = [(i, order[i * bs:(i + 1) * bs]) for i in self.positions(epoch, skip)]
        seed = int(np.random.default_rng([self.seed, epoch]).integers(1 << 62))

        def produce(job):
            return self._make(job[1], self.train_extractors, seed + job[0])
        yield from prefetch(produce, jobs, depth=2)

    # -------------------------------------------------------------- model
    def forward(self, model, batch) -> torch.Tensor:
        return model(self.branch_inputs(model, batch))

    def embed(self, model, batch) -> torch.Tensor:
        """The classifier's input of every target of ``batch`` (``ShadowNet.embed``)."""
        return model.embed(self.branch_inputs(model, batch))

    def branch_inputs(self, model, batch) -> list:
        """``ShadowNet``'s input: per branch ``(x, adj, segment, center, center2)`` on the
        model's device, and ``inverse`` after them for a batch of unique rows."""
        dev = next(model.parameters()).device
        parts = []
        for b in batch.meta["branches"]:
            c2, inv = b.meta.get("center2"), b.meta.get("inverse")
            parts.append((b.x.to(dev), SparseAdj.from_graph(b.adj),
                          torch.from_numpy(b.segment).to(dev), torch.from_numpy(b.targets).to(dev),
                          None if c2 is None else torch.from_numpy(c2).to(dev))
                         + (() if inv is None else (torch.from_numpy(inv).to(dev),)))
        return parts

    @torch.no_grad()
    def infer(self, model, make, jobs, head=None) -> torch.Tensor:
        """Logits (``head(model, batch)`` instead: e.g. :meth:`embed`) of the batches
        ``make(job)`` builds (in the background), stacked: inference memory is one batch, not
        the graph."""
        head = head or self.forward
        was = model.training
        model.eval()
        try:
            out = [head(model, b).cpu() for b in prefetch(make, jobs, depth=2)]
        finally:
            model.train(was)
        width = self.num_classes if head == self.forward else model.embed_dim
        return torch.cat(out) if out else torch.zeros(0, width)

    def scores(self, model, targets: np.ndarray) -> torch.Tensor:
        """Class probabilities of ``targets``, minibatched (each rank a block of them)."""
        bs = self.settings["eval_batch_size"]

        def block(lo, hi):
            jobs = [targets[s:min(hi, s + bs)] for s in range(lo, hi, bs)]
            return model.predict(self.infer(
                model, lambda t: self._make(t, self.eval_extractors, EVAL_SEED, True), jobs))
        return self._sharded(targets.shape[0], block)

    def embeddings(self, model, targets: np.ndarray) -> torch.Tensor:
        """The classifier's input for ``targets`` (the same minibatches as :meth:`scores`)."""
        bs = self.settings["eval_batch_size"]
        jobs = [targets[s:s + bs] for s in range(0, targets.shape[0], bs)]
        return self.infer(model, lambda t: self._make(t, self.eval_extractors, EVAL_SEED, True),
                          jobs, head=self.embed)

    def evaluate(self, model, splits) -> dict:
        ds = self.dataset
        out = {}
        for split in splits:
            idx = np.asarray(getattr(ds, f"{split}_idx"), dtype=np.int64)
            out[split] = compute_metrics(ds.labels[idx], self.scores(model, idx).numpy(),
                                         ds.multilabel)
        return out


class LinkMode(ShadowMode):
    """Link prediction with shaDow-GNN (``shadow.task: link``; thesis Table 5.6, ogbl-collab
    style). The graph's undirected edges are split (``shadow.edge_split``, seeded by
    ``shadow.split_seed``) into training, validation and test positives; extractors run on the
    training graph only. An epoch visits the training positives (or a fresh random subset of
    ``pairs_per_epoch`` of them). A minibatch is ``batch_size`` positives and as many fresh
    uniform negatives (non-edges of the training graph, drawn from (seed, epoch, batch)); the
    subgraph of a pair is the union of its two ends' scopes without the edge between the two ends
    (:func:`~scalegnn.shadow.batch.drop_pair_edges`), read out by ``shadow.readout``
    (``hadamard`` / ``concat`` of the two centers, optionally ``+POOL``), scored by one logit
    with a binary cross-entropy loss. ``shadow.pair_labels: D`` appends each node's one-hot
    distance label relative to the two ends (:mod:`scalegnn.shadow.labels`) to its input, and
    ``shadow.node_features: false`` leaves the dataset's features out (labels only).
    Evaluation ranks each held-out positive against
    ``shadow.negatives`` shared negatives: Hits@20/50/100 and MRR (``scalegnn.engine.metrics``).
    """

    name = "link"
    pair = True

    def __init__(self, dataset, config, *, seed: int = 0, shard: Shard = SINGLE):
        self._common(dataset, config, seed, shard)
        dataset = self.dataset
        frac = self.settings["edge_split"]
        if not isinstance(frac, (list, tuple)) or len(frac) != 3:
            raise ConfigError(f"shadow.edge_split: expected [train, val, test] fractions, got "
                              f"{frac!r}")
        self.split = split_edges(dataset.graph, tuple(frac), seed=self.settings["split_seed"],
                                 num_negatives=self.settings["negatives"])
        self.label_cap = self.settings["pair_labels"]
        self.use_features = bool(self.settings["node_features"])
        self.num_features, self.num_classes, self.multilabel, _ = shadow_dims(
            dataset.num_features, dataset.num_classes, dataset.multilabel, self.settings)
        self.metric = "hits@50"
        self.dataset_name = dataset.name
        cache = cache_folder(self.settings["cache_dir"])
        self.train_extractors = make_extractors(self.settings["extractors"],
                                                self.split.train_graph, cache)
        self.eval_extractors = self.train_extractors
        self.train_idx = np.arange(self.split.train_pos.shape[1], dtype=np.int64)
        self._prepared = False

    def run_info(self) -> dict:
        return {**super().run_info(), "task": "link",
                "edges": {k: int(getattr(self.split, f"{k}_pos").shape[1])
                          for k in ("train", "val", "test")},
                "negatives": int(self.split.val_neg.shape[1])}

    def _prepare(self):
        if self._prepared:
            return
        nodes = np.arange(self.split.num_nodes, dtype=np.int64)
        for ex in self.train_extractors:
            if hasattr(ex, "precompute"):  # PPR lists of every node (pairs touch any node)
                ex.precompute(nodes)
        self._prepared = True

    def _order(self, epoch: int) -> np.ndarray:
        """This epoch's training positives (a fresh subset when ``pairs_per_epoch`` > 0)."""
        order = super()._order(epoch)
        cap = self.settings["pairs_per_epoch"]
        return order[:cap] if cap > 0 else order

    def epoch_batches(self, epoch: int) -> int:
        self._prepare()
        return max(1, math.ceil(self._order(epoch).size / self.settings["batch_size"]))

    def _branch(self, subs):
        """One branch of a pair batch: node features and/or the structural labels
        (:mod:`scalegnn.shadow.labels`) as the input columns."""
        subs = drop_pair_edges(subs)
        features = self.dataset.features if self.use_features else \
            DenseFeatures(np.zeros((self.split.num_nodes, 0), np.float32))  # labels only
        b = branch_batch(subs, features, self.settings["adj_norm"])
        if self.label_cap > 0:
            b.x = append_columns(b.x, label_onehot(pair_labels(subs, self.label_cap),
                                                   self.label_cap))   # CSR x stays CSR
        return b

    def _pairs(self, src, dst, label, seed) -> "object":
        branches = [self._branch(ex.extract_pairs(src, dst, seed=seed))
                    for ex in self.train_extractors]
        y = torch.from_numpy(np.asarray(label, dtype=np.float32).reshape(-1, 1))
        w = torch.full((src.shape[0],), 1.0 / max(src.shape[0], 1), dtype=torch.float32)
        return ensemble_batch(branches, y, w, src)

    def batches(self, epoch: int, skip: int = 0):
        order = self._order(epoch)
        bs = self.settings["batch_size"]
        pos = self.split.train_pos
        seed = int(np.random.default_rng([self.seed, epoch]).integers(1 << 62))

        def produce(i):
            idx = order[i * bs:(i + 1) * bs]
            ns, nd = sample_negatives(idx.shape[0], self.split.num_nodes, self.split.train_graph,
                                      np.random.default_rng([self.seed, epoch, i]))
            src = np.concatenate([pos[0, idx], ns])
            dst = np.concatenate([pos[1, idx], nd])
            label = np.concatenate([np.ones(idx.shape[0]), np.zeros(ns.shape[0])])
            return self._pairs(src, dst, label, seed + i)
        yield from prefetch(produce, self.positions(epoch, skip), depth=2)

    def pair_scores(self, model, pairs: np.ndarray) -> np.ndarray:
        """One logit per pair, minibatched (each rank a block of them)."""
        bs = self.settings["eval_batch_size"]

        def block(lo, hi):
            make = lambda s: self._pairs(  # noqa: E731
                pairs[0, s:min(hi, s + bs)], pairs[1, s:min(hi, s + bs)],
                np.zeros(min(hi, s + bs) - s), EVAL_SEED)
            return self.infer(model, make, range(lo, hi, bs)).reshape(-1, 1)
        return self._sharded(pairs.shape[1], block).reshape(-1).numpy()

    def evaluate(self, model, splits) -> dict:
        out = {}
        for split in splits:
            if split == "train":  # ranked against the validation negatives (a sample of them)
                k = min(self.split.train_pos.shape[1], self.split.val_pos.shape[1])
                pos, neg = self.split.train_pos[:, :k], self.split.val_neg
            else:
                pos, neg = self.split.pairs(split)
            out[split] = link_metrics(self.pair_scores(model, pos), self.pair_scores(model, neg))
        return out
