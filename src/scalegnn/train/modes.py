"""The modes a run trains with: :class:`GraphSAINTMode`; :func:`mode_for`, which picks the
single-process mode a config asks for (GraphSAINT, or shaDow-GNN for a ``shadow:`` section);
and :func:`rank_mode`, the mode of one rank of ``scalegnn dist-train`` from
``distributed.mode``. The protocol every mode implements is :class:`scalegnn.engine.mode.Mode`;
the one loop is :class:`scalegnn.train.Trainer`.

* :class:`GraphSAINTMode` — sampled node-induced subgraphs (one loader per phase, pre-sampled
  normalization), full-graph layer-wise evaluation.
* :class:`scalegnn.shadow.mode.ShadowMode` / :class:`~scalegnn.shadow.mode.LinkMode` —
  per-target subgraphs.
"""

from __future__ import annotations

import copy

import torch

from scalegnn.data import load_dataset
from scalegnn.data.transforms import prepared_dataset
from scalegnn.dist.data_parallel import DataParallelMode
from scalegnn.dist.minibatch import PartitionParallelMode
from scalegnn.dist.mode import DistributedMode
from scalegnn.dist.plan import PartitionPlan
from scalegnn.dist.shard import TorchShard
from scalegnn.engine.checkpoint import dataset_fingerprint
from scalegnn.engine.evaluate import full_graph_logits
from scalegnn.engine.metrics import compute_metrics
from scalegnn.engine.mode import Mode
from scalegnn.errors import ConfigError
from scalegnn.ops import SparseAdj
from scalegnn.sampling import GraphSAINTLoader, NeighbourLoader
from scalegnn.shadow.mode import LinkMode, ShadowMode
from scalegnn.shard import SINGLE, Shard
from scalegnn.train.transfer import TestGraph


class GraphSAINTMode(Mode):
    """GraphSAINT minibatches: one :class:`~scalegnn.sampling.GraphSAINTLoader` per phase (its
    stream continues across the phase's epochs; a :class:`~scalegnn.sampling.NeighbourLoader`
    for ``sampler: neighbour``), evaluation on the full graph."""

    name = "graphsaint"

    def __init__(self, dataset, config, *, seed: int = 0, test_dataset=None,
                 shard: Shard = SINGLE):
        raw = dataset
        self.shard = shard  # data-parallel: this rank's share of the stream and evaluation
        self.dataset, self.config, self.seed = prepared_dataset(dataset, config), config, int(seed)
        dataset = self.dataset
        self.num_features, self.num_classes = dataset.num_features, dataset.num_classes
        self.multilabel, self.metric = dataset.multilabel, dataset.metric
        self.dataset_name = dataset.name
        self._loader, self._phase, self._pending = None, None, None
        self._full_adj = None
        self._pin = None   # the model's dtype when it is on a GPU: loaders pin their batches
        self.test_graph, self._own_test = None, None  # --test-data: scalegnn.train.transfer
        if test_dataset is not None:
            self.test_graph = TestGraph(test_dataset, raw, self.dataset, config)

    def identity(self) -> dict:
        return {"mode": self.name, "dataset": dataset_fingerprint(self.dataset), "plan": None,
                "world": 1}

    def run_info(self) -> dict:
        return {"dataset": self.dataset.name, "source": str(self.dataset.source)}

    def setup(self, model, seed: int) -> None:
        p = next(model.parameters(), None)
        self._pin = p.dtype if p is not None and p.device.type == "cuda" else None

    # -------------------------------------------------------------- batches
    def phase_index(self, epoch: int) -> int:
        return next((i for i, p in enumerate(self.config.phases) if epoch < p["end"]),
                    len(self.config.phases) - 1)

    def make_loader(self, phase_index: int):
        params = self.config.params
        phase = self.config.phases[phase_index]
        threads = params["sampler_threads"] or torch.get_num_threads()
        if phase["sampler"] == NeighbourLoader.name:
            return NeighbourLoader(
                self.dataset, self.config.sampler_params(phase),
                transductive=params["transductive"], seed=self.seed + 1000 * phase_index,
                num_threads=threads, pool_depth=params["pool_depth"], shard=self.shard)
        return GraphSAINTLoader(
            self.dataset, phase["sampler"], self.config.sampler_params(phase),
            transductive=params["transductive"], coverage=params["sample_coverage"],
            normalize=params["norm_loss"] and params["norm_aggr"],
            seed=self.seed + 1000 * phase_index, num_threads=threads,
            pool_depth=params["pool_depth"], clip_multiple=params["clip_multiple"],
            shard=self.shard)

    def loader(self, epoch: int):
        """The loader of ``epoch``'s phase, positioned where the stream stands."""
        idx = self.phase_index(epoch)
        if idx != self._phase:
            self.close()
            self._loader, self._phase = self.make_loader(idx), idx
            self._loader.pin_dtype = self._pin
            if self._pending and self._pending["phase"] == idx:
                self._loader.seek(self._pending["position"])
            self._pending = None
        return self._loader

    def num_batches(self, epoch: int) -> int:
        """The epoch's batches (of this rank: the single-process epoch divided among the
        ranks, rounded up; the stream goes on across epochs, so no batch is drawn twice)."""
        return -(-len(self.loader(epoch)) // self.shard.world)

    def batches(self, epoch: int, skip: int = 0):
        loader = self.loader(epoch)
        for _ in range(self.num_batches(epoch) - skip):
            yield loader.next_batch()

    def state_dict(self) -> dict:
        if self._loader is None:
            return dict(self._pending or {})
        return {"phase": self._phase, "position": self._loader.position}

    def load_state_dict(self, state: dict) -> None:
        self.close()
        self._loader, self._phase = None, None
        self._pending = {"phase": int(state["phase"]), "position": int(state["position"])} \
            if state else None

    def close(self) -> None:
        if self._loader is not None:
            self._loader.close()

    # -------------------------------------------------------------- model
    def forward(self, model, batch) -> torch.Tensor:
        return model(batch.x, batch.sparse_adj())

    def full_adj(self) -> SparseAdj:
        if self._full_adj is None:
            self._full_adj = SparseAdj.from_graph(self.dataset.graph.row_normalized())
        return self._full_adj

    def _full_pass(self, model, embeddings: bool) -> torch.Tensor:
        """One layer-wise full-graph pass on the CPU: every node's logits or embeddings."""
        if next(model.parameters()).device.type != "cpu":
            model = copy.deepcopy(model).cpu()
        return full_graph_logits(model, self.dataset.graph, self.dataset.features,
                                 self.config.params["eval_batch_rows"], adj=self.full_adj(),
                                 embeddings=embeddings, shard=self.shard)

    def scores(self, model, nodes=None) -> torch.Tensor:
        """Class probabilities of ``nodes`` (default: every node), rows in that order; the
        numbers :meth:`evaluate` scores (``scalegnn predict`` writes them)."""
        scores = model.predict(self._full_pass(model, False))
        return scores if nodes is None else scores[torch.as_tensor(nodes)]

    def embeddings(self, model, nodes=None) -> torch.Tensor:
        """The classifier's input (L2-normalized) for ``nodes`` (default: every node)."""
        h = self._full_pass(model, True)
        return h if nodes is None else h[torch.as_tensor(nodes)]

    def evaluate(self, model, splits) -> dict:
        """Metrics per split from one layer-wise full-graph pass on the CPU."""
        scores = self.scores(model).numpy()
        ds = self.dataset
        out = {s: compute_metrics(ds.labels[getattr(ds, f"{s}_idx")],
                                  scores[getattr(ds, f"{s}_idx")], ds.multilabel)
               for s in splits}
        if self.test_graph is not None and "test" in out:  # the test metric is the other graph's
            self._own_test = out["test"]
            out["test"] = self.test_graph.metrics(model)
        return out

    def summary_extra(self) -> dict:
        if self.test_graph is None:
            return {}
        return {"test_data": {**self.test_graph.info(), "training_graph_test": self._own_test}}


def mode_for(dataset, config, *, seed: int = 0, test_dataset=None, shard: Shard = SINGLE) -> Mode:
    """The single-process mode a config asks for: shaDow-GNN when it has a ``shadow:`` section,
    GraphSAINT otherwise. ``test_dataset``: a separate test graph (GraphSAINT mode only);
    ``shard``: this rank's share of a data-parallel run's batches and evaluation."""
    if "shadow" in config.sections:
        link = config.section("shadow")["task"] == "link"
        if test_dataset is not None:
            raise ConfigError("--test-data: a separate test graph is supported in GraphSAINT "
                              "mode only; this config trains shaDow-GNN (its shadow: section)")
        return (LinkMode if link else ShadowMode)(dataset, config, seed=seed, shard=shard)
    return GraphSAINTMode(dataset, config, seed=seed, test_dataset=test_dataset, shard=shard)


def rank_mode(spec, plan_dir, rank: int, world: int, device) -> Mode:
    """The mode of rank ``rank`` of ``world`` in ``scalegnn dist-train`` for the resolved run
    ``spec``, by its config's ``distributed.mode``, once the process group is up:

    * ``full`` — partition-parallel full-graph training on the plan in ``plan_dir``
      (:class:`~scalegnn.dist.mode.DistributedMode`);
    * ``data`` — data-parallel minibatch training of the single-process mode the config asks
      for on ``spec.data`` (:class:`~scalegnn.dist.data_parallel.DataParallelMode`);
    * ``partition`` — partition-parallel GraphSAINT minibatches of ``spec.data`` on the plan
      (:class:`~scalegnn.dist.minibatch.PartitionParallelMode`).
    """
    config = spec.config
    settings = config.section("distributed")
    if settings["mode"] == "full":
        return DistributedMode(PartitionPlan.load(plan_dir, world_size=world), rank, world,
                               config, device=device)
    dataset = load_dataset(spec.data, split=spec.split, seed=0, options=spec.data_options)
    shard = TorchShard(device=device, timeout=settings["timeout"])
    if settings["mode"] == "data":
        return DataParallelMode(mode_for(dataset, config, seed=spec.seed, shard=shard), shard,
                                compression=settings["compression"])
    plan = PartitionPlan.load(plan_dir, world_size=world)
    plan.check_graph(dataset.graph, source=str(spec.data))
    return PartitionParallelMode(GraphSAINTMode(dataset, config, seed=spec.seed),
                                 plan.assignment(), shard, plan_id=plan.plan_id,
                                 settings=settings)


DISTRIBUTED_MODES = (DistributedMode.name, DataParallelMode.name, PartitionParallelMode.name)
"""The names of the modes of ``scalegnn dist-train`` runs (what ``run.json`` records)."""
