"""The train config's schema: every key of every section, declared once.

A :class:`Key` holds a key's default (its type is the type values are coerced to), a
one-sentence description, and what it allows: a :class:`Range` of numbers, a tuple of choices,
or a :class:`Ref` to a choice set that another module owns (imported from it, never copied). Validation
(:mod:`scalegnn.config.checks`, :meth:`scalegnn.config.Config.validate`) reads these
declarations, ``docs/generate.py`` renders them as ``docs/reference/config.md``, and the plain
dicts at the end (``NETWORK_DEFAULTS``, ``SECTIONS``, ...) are derived from them.

To add a key: add a ``Key`` to its section below (with a ``range=`` or ``choices=`` when it has
one; a new mode section also goes into :data:`SCHEMA`), then run ``python docs/generate.py``.
A rule that is more than a range or a choice (``lr_min <= lr``, ``shadow.edge_split``) is code
in :mod:`scalegnn.config.checks`; say it in the key's ``also=`` so the reference shows it.

The file is over 400 lines because it is the one table of every key; split, the declarations
of one config would be scattered over several files.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Any

from scalegnn import features, sampling
from scalegnn.dist import ddp, partition
from scalegnn.engine import loggers
from scalegnn.engine.optim import LR_SCHEDULES
from scalegnn.nn import gin, jk, models, saint
from scalegnn.shadow import batch as shadow_batch
from scalegnn.shadow import mode as shadow_mode
from scalegnn.shadow import readout as shadow_readout

INT32_MAX = 2**31 - 1
SEED_MAX = 2**32 - 1
MAX_EPOCHS = 10**7
MAX_ARCH_LAYERS = 256
MAX_ARCH_ORDER = 64
MAX_EXTRACTORS = 64
MAX_TIMEOUT_S = 10**7
SAMPLERS = tuple(sampling.PHASE_SAMPLERS)   # the phase.sampler names scalegnn.sampling implements


@dataclass(frozen=True)
class Ref:
    """A choice set owned by another module: ``values`` is the owner's own object, ``owner``
    where it lives (``module.NAME``, for the reference page). The owner's function or set is
    what validation checks these keys with."""

    values: Any
    owner: str

    @classmethod
    def of(cls, module: ModuleType, name: str) -> "Ref":
        return cls(getattr(module, name), f"{module.__name__}.{name}")

    def resolve(self):
        return self.values

    def __str__(self) -> str:
        return self.owner


def _num(x) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


@dataclass(frozen=True)
class Range:
    """Numbers from ``lo`` to ``hi`` (None: unbounded on that side; ``*_open``: that end
    excluded). ``typed`` ranges word their error like ``must be an integer in [1, 1024]`` (the
    type from ``lo``); the others ``must be in [1, 1024]`` plus ``note``; ``says`` replaces
    the generated wording."""

    lo: float | int | None = None
    hi: float | int | None = None
    lo_open: bool = False
    hi_open: bool = False
    typed: bool = True
    note: str = ""
    says: str | None = None

    def contains(self, value) -> bool:
        return (self.lo is None or (value > self.lo if self.lo_open else value >= self.lo)) and \
            (self.hi is None or (value < self.hi if self.hi_open else value <= self.hi))

    def text(self) -> str:
        """The requirement as error messages and the reference word it (``in [0, 1)``)."""
        if self.says is not None:
            return self.says
        lo, hi = _num(self.lo), _num(self.hi)
        if self.lo is not None and self.hi is not None and not self.lo_open:
            text = f"in [{lo}, {hi}{')' if self.hi_open else ']'}"
        elif self.lo is not None:
            text = f"{'>' if self.lo_open else '>='} {lo}" + \
                (f" and <= {hi}" if self.hi is not None else "")
        else:
            text = f"<= {hi}"
        return f"{text} {self.note}" if self.note else text


@dataclass(frozen=True)
class Key:
    """One config key. ``kind`` types keys without a default (phase keys); ``required``: the
    key has no default and must be given; ``also``: what else the key allows or needs, in words
    (shown in the reference); ``bools_as_text``: YAML true/false become 'true'/'false'."""

    name: str
    default: Any
    help: str
    kind: type | None = None
    range: Range | None = None
    choices: tuple | Ref | None = None
    also: str = ""
    required: bool = False
    bools_as_text: bool = False

    @property
    def like(self):
        """The value whose type a given value is coerced to (``checks.coerce``)."""
        return self.default if self.kind is None else self.kind()

    @property
    def type_name(self) -> str:
        return "any" if self.like is None else type(self.like).__name__


@dataclass(frozen=True)
class Section:
    """A top-level config section. ``mode``: an optional section of one training mode (the
    others are GraphSAINT's ``network`` / ``params`` / ``phase``)."""

    name: str
    help: str
    keys: tuple[Key, ...]
    mode: bool = False

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(k.name for k in self.keys)

    def __getitem__(self, name: str) -> Key:
        for key in self.keys:
            if key.name == name:
                return key
        raise KeyError(f"{self.name}.{name}")

    def defaults(self) -> dict:
        return {k.name: k.default for k in self.keys if not k.required}


NETWORK = Section("network", "The model: family, depth, widths and layer options.", (
    Key("dim", 256, "Hidden width: the output width of each hop of a layer (an order-k layer "
        "with aggr concat outputs (k+1)·dim).", range=Range(1, 2**20)),
    Key("aggr", "concat", "How a GraphSAINT layer combines its hops: concat (H_0 ‖ … ‖ H_k) or "
        "mean (their sum); the other families ignore it.",
        choices=Ref.of(saint, "AGGREGATIONS")),
    Key("loss", None, "sigmoid (multi-label) or softmax (single-label); null takes the one the "
        "dataset's labels need (a mismatch is refused when training starts).",
        choices=("sigmoid", "softmax"), also="null: from the labels"),
    Key("arch", "1-0-1-0", "One token per layer, its order k: a GraphSAINT layer over hops "
        "0..k (0: a dense self-only layer); the other families read 1 as one of their graph "
        "layers.",
        also=f"dash-separated orders >= 0; at most {MAX_ARCH_LAYERS} layers of order <= "
             f"{MAX_ARCH_ORDER}; families other than saint take 0 and 1"),
    Key("act", "relu", "Activation of each hidden layer (I is GraphSAINT's spelling of "
        "identity).", choices=Ref.of(saint, "ACTIVATIONS")),
    Key("bias", "norm", "Layer tail: norm (a bias, then GraphSAINT's per-node feature "
        "normalization with learnable scale and offset), bias (the bias alone) or none.",
        choices=Ref.of(saint, "BIASES")),
    Key("model", "saint", "Model family: saint (GraphSAINT) or gcn, gat, mixhop, jk, gin; each "
        "is a stack of layers, then L2 normalization and a linear classifier.",
        choices=Ref.of(models, "MODELS")),
    Key("layers", 0, "Families other than saint: this many graph layers instead of the depth "
        "from arch (0: from arch).", range=Range(0, 256)),
    Key("heads", 4, "gat: attention heads per layer.", range=Range(1, 1024),
        also="must divide dim"),
    Key("jk_mode", "concat", "jk: how the layers' outputs are combined: concatenated or their "
        "element-wise max.", choices=Ref.of(jk, "JK_MODES")),
    Key("powers", "0-1-2", "mixhop: the adjacency powers each layer mixes, dash-separated.",
        also="distinct integers >= 0"),
    Key("gin_weights", "operator", "gin: neighbour weights of the sum: operator (the "
        "normalized adjacency's values) or ones (a plain sum).",
        choices=Ref.of(gin, "GIN_WEIGHTS")),
    Key("pyg", "", "A PyTorch Geometric model instead of network.model: a class name of "
        "torch_geometric.nn.models or torch_geometric.nn whose forward takes (x, edge_index), "
        "e.g. GraphSAGE (scalegnn.nn.pyg; needs torch_geometric); '': the zoo's model.",
        also="in_channels and out_channels come from the data; not with shadow: or "
             "distributed.mode full or partition"),
    Key("pyg_args", {}, "pyg: the class's keyword arguments, e.g. {num_layers: 2, "
        "hidden_channels: 256}; hidden_channels defaults to dim, dropout to params.dropout.",
        also="a mapping; checked against the class's signature"),
))

PARAMS = Section("params", "Training: optimizer, normalization, evaluation, loading and "
                 "logging.", (
    Key("lr", 0.01, "Adam's learning rate (the starting rate under an lr_schedule).",
        range=Range(0.0, None, lo_open=True)),
    Key("dropout", 0.0, "Dropout probability on each layer's input while training.",
        range=Range(0.0, 1.0, hi_open=True, typed=False)),
    Key("weight_decay", 0.0, "Adam's weight decay (an L2 penalty on every parameter).",
        range=Range(0.0, None)),
    Key("sample_coverage", 50, "Pre-sampling for the GraphSAINT normalizations: draw subgraphs "
        "until their node counts add up to this many times the nodes sampled from.",
        range=Range(0, 10**5), also="> 0 when the normalizations are on"),
    Key("norm_loss", True, "GraphSAINT's loss normalization λ_v from the pre-sampled counts "
        "(SPEC §1.2); both normalizations are on only when norm_loss and norm_aggr are true."),
    Key("norm_aggr", True, "GraphSAINT's aggregator normalization α_uv from the pre-sampled "
        "counts; false (or norm_loss false): a plain mean loss and no pre-sampling."),
    Key("q_threshold", 50, "Reference GraphSAINT key (queueing of its C++ sampler): accepted "
        "and unused."),
    Key("q_offset", 0, "Reference GraphSAINT key (queueing of its C++ sampler): accepted and "
        "unused."),
    Key("transductive", False, "Sample the full graph, with the loss on the training nodes "
        "(false: sample the subgraph of the training nodes)."),
    Key("standardize", True, "Features become z-scores by training-node statistics "
        "(GraphSAINT's preprocessing): an in-memory copy, applied on read for memory-mapped "
        "features, folded into the first layer for CSR features."),
    Key("feature_format", "auto", "Input features as CSR (sparse) or a dense matrix; auto: CSR "
        "when they are sparse enough (scalegnn.features).",
        choices=Ref.of(features, "FEATURE_FORMATS")),
    Key("mmap_features", "auto", "Memory-map a dense feats.npy instead of reading it (auto: "
        "when it is over a quarter of the available memory).",
        choices=Ref.of(features, "MMAP_FEATURES"), also="YAML true/false too",
        bools_as_text=True),
    Key("eval_every", 1, "Epochs between validation passes.", range=Range(1, MAX_EPOCHS)),
    Key("grad_clip", 5.0, "Clip the gradients' total norm to this before each step (0: no "
        "clipping).", range=Range(0.0, None)),
    Key("flush_denormal", True, "Treat denormal floats as 0 while training, as GPUs do (Adam's "
        "second moments of tiny gradients; x86 is ~100x slower on them)."),
    Key("eval_batch_rows", 65536, "Rows per block of the layer-wise full-graph evaluation "
        "pass (bounds its memory).", range=Range(1, INT32_MAX)),
    Key("sampler_threads", 0, "Sampler threads (0: as many as torch uses).",
        range=Range(0, 4096)),
    Key("pool_depth", 4, "Minibatches sampled ahead of the training step (by a background "
        "thread, which also page-locks them when the model is on a GPU).",
        range=Range(1, 1024)),
    Key("clip_multiple", 0, "Clip each subgraph's node count to a multiple of this (16: cache "
        "lines; 0: no clipping).", range=Range(0, 2**20)),
    Key("loggers", "none", "Per-epoch logs written beside metrics.jsonl.",
        choices=Ref.of(loggers, "LOGGERS"),
        also="none, or several joined with + (csv+tensorboard)"),
    Key("checkpoint_seconds", 300.0, "Also save last.pt mid-epoch once this many seconds have "
        "passed since the last save (0: after every iteration); every epoch end saves anyway.",
        range=Range(0.0, None)),
    Key("patience", 0, "Stop after this many validation passes without a better validation "
        "metric (0: never stop early).", range=Range(0, MAX_EPOCHS)),
    Key("time_budget", 0.0, "Stop after the epoch during which the run's training time (wall "
        "clock of its epochs, validation passes left out) reached this many seconds; that epoch "
        "is validated (0: no limit).", range=Range(0.0, None)),
    Key("lr_schedule", "none", "Learning-rate schedule over the epochs (lr_decay, lr_step, "
        "lr_min and lr_patience shape it).", choices=LR_SCHEDULES),
    Key("lr_decay", 0.5, "step, plateau: the factor of each decay.",
        range=Range(0.0, 1.0, lo_open=True)),
    Key("lr_step", 10, "step: epochs between decays.", range=Range(1, MAX_EPOCHS)),
    Key("lr_min", 0.0, "cosine: the final rate; step, plateau: the floor.",
        range=Range(0.0, None), also="<= lr when lr_schedule is not none"),
    Key("lr_patience", 2, "plateau: validation passes without a better validation metric "
        "before each decay.", range=Range(1, MAX_EPOCHS)),
))

PHASE = Section("phase", "The sampling schedule: a list of phases, each training with its "
                "own sampler until its end epoch.", (
    Key("end", None, "Epoch at which this phase ends: it trains the epochs from the previous "
        "phase's end on; the last phase's end is the number of epochs.", kind=int,
        range=Range(0, MAX_EPOCHS, lo_open=True), also="> the previous phase's end",
        required=True),
    Key("sampler", None, "This phase's sampler: a GraphSAINT subgraph sampler, node, edge, rw "
        "(random walks), mrw (multi-dimensional random walk), full (the whole graph) or "
        "cluster (ClusterGCN: METIS parts); or neighbour (GraphSAGE fanout batches).", kind=str,
        choices=SAMPLERS, required=True),
    Key("num_root", None, "rw: random-walk roots per subgraph.", kind=int,
        range=Range(1, INT32_MAX)),
    Key("depth", None, "rw: steps of each random walk.", kind=int, range=Range(0, 10**4)),
    Key("size_subgraph", None, "node: nodes drawn per subgraph; mrw: node budget (repeats "
        "count).", kind=int, range=Range(1, INT32_MAX)),
    Key("size_frontier", None, "mrw: frontier size (<= size_subgraph).", kind=int,
        range=Range(1, INT32_MAX)),
    Key("size_subg_edge", None, "edge: edges drawn per subgraph.", kind=int,
        range=Range(1, INT32_MAX)),
    Key("num_parts", None, "cluster: METIS parts of the graph sampled from (ClusterGCN's "
        "P; at most its nodes).", kind=int, range=Range(1, INT32_MAX)),
    Key("parts_per_batch", None, "cluster: distinct parts per subgraph, drawn uniformly (q; "
        "default 1).", kind=int, range=Range(1, INT32_MAX), also="<= num_parts"),
    Key("max_deg", None, "mrw: clip the degree that weights a frontier node's pop to this (0: "
        "no clip).", kind=int, range=Range(0, INT32_MAX)),
    Key("fanouts", None, "neighbour: neighbours drawn per node at each hop, the seeds' hop "
        "first (-1: all of them), without replacement.", kind=list,
        also="a list of integers >= 1 or -1, one per propagation of the model (the sum of the "
             "arch orders for saint)"),
    Key("batch_size", None, "neighbour: seed (training) nodes per minibatch; an epoch is every "
        "training node once.", kind=int, range=Range(1, INT32_MAX)),
    Key("order", None, "Reference GraphSAINT key: the config accepts it, no sampler takes it "
        "(refused before a run that samples reads its data).",
        kind=int, range=Range(0, 64)),
    Key("eta", None, "Reference GraphSAINT key: the config accepts it, no sampler takes it "
        "(refused before a run that samples reads its data; mrw's dashboard factor is fixed "
        "at 2).", kind=float, range=Range(1e-6, 1e6)),
))

DISTRIBUTED = Section("distributed", "scalegnn dist-train: how the ranks share the work "
                      "(distributed.mode). In full-graph mode phase[-1].end is the number of "
                      "epochs (one full-graph step each) and the phases' sampler settings are "
                      "not used.", (
    Key("mode", "full", "full: partition-parallel full-graph training on a plan (BNS-GCN); "
        "data: data-parallel minibatch training of any single-process config (GraphSAINT or "
        "shaDow-GNN), every rank holding the whole graph; partition: partition-parallel "
        "GraphSAINT minibatches on a plan (every rank computes its rows of the same subgraph "
        "and exchanges the subgraph's boundary rows).", choices=("full", "data", "partition")),
    Key("compression", "none", "Gradients' type on the wire of the bucketed all-reduce "
        "(DistributedDataParallel): none (the parameters' own), fp16 or bf16.",
        choices=Ref.of(ddp, "COMPRESSIONS")),
    Key("boundary_p", 1.0, "Probability of keeping each boundary node per epoch (BNS-GCN; 1: "
        "exact).", range=Range(0.0, 1.0, typed=False)),
    Key("timeout", 120.0, "Seconds for init_process_group and for every exchange wait before "
        "a silent peer is an error.",
        range=Range(0.0, MAX_TIMEOUT_S, lo_open=True, typed=False,
                    says=f"a positive number of seconds, at most {MAX_TIMEOUT_S}")),
    Key("overlap", True, "Split Â = [Â_in | Â_bd] and run Â_in·h while the boundary rows are "
        "in flight."),
    Key("dtype", "float32", "Floating-point type of each rank's features and boundary "
        "messages.", choices=("float32", "float64")),
    Key("parts", 0, "Number of ranks (0: --nprocs or the plan decides).",
        range=Range(0, INT32_MAX, typed=False)),
    Key("method", "metis", "Partitioner for dist-train --data --parts: hp (hypergraph), gp or "
        "metis (METIS), rp or random (random rows).",
        choices=Ref.of(partition, "METHODS")),
    Key("lean_memory", True, "Return freed activations to the operating system at once (lower "
        "peak RSS)."),
), mode=True)

SHADOW = Section("shadow", "shaDow-GNN (scalegnn train): a subgraph per target, one branch "
                 "per extractor (scalegnn.shadow.mode); given, it replaces GraphSAINT "
                 "sampling.", (
    Key("extractors", [{"kind": "khop", "depth": 2, "budget": 20}], "The subgraph extractors, "
        "one model branch each (several: an attention ensemble).",
        choices=Ref.of(shadow_mode, "EXTRACTOR_KEYS"),
        also=f"the kind of each mapping of a non-empty list of at most {MAX_EXTRACTORS} (or of "
             f"one mapping), with its keys (shadow.extractors below)"),
    Key("readout", "center", "How a target's subgraph becomes one vector: its center row, a "
        "pool of its rows (sort:K keeps K rows), both (center+POOL); link: the pair's ends.",
        choices=Ref.of(shadow_readout, "SPECS")),
    Key("residual", "none", "Combine every layer's output: none (the last layer's), max or "
        "concat.", choices=Ref.of(shadow_readout, "RESIDUALS")),
    Key("batch_size", 64, "Training targets per minibatch.",
        range=Range(1, 1 << 20, typed=False)),
    Key("eval_batch_size", 512, "Targets per inference minibatch.",
        range=Range(1, 1 << 22, typed=False)),
    Key("cache_dir", "auto", "PPR lists on disk: auto (~/.cache/scalegnn/ppr), none (memory "
        "only) or a folder.", also="auto, none or a folder"),
    Key("task", "node", "node (classification) or link (link prediction).",
        choices=("link", "node")),  # in the order of the error message
    Key("edge_split", [0.85, 0.05, 0.10], "link: train / val / test share of the edges "
        "(seeded).", also="three fractions in (0, 1) summing to 1"),
    Key("split_seed", 0, "link: seed of the held-out edge split and its negatives.",
        range=Range(0, SEED_MAX)),
    Key("negatives", 10000, "link: shared negative pairs ranked against each val/test edge.",
        range=Range(1, 10**7, typed=False, says="in [1, 10**7]")),
    Key("pairs_per_epoch", 0, "link: training positives per epoch, a fresh random subset each "
        "epoch (0: all of them).", range=Range(0, INT32_MAX, typed=False, note="(0: all)")),
    Key("pair_labels", 0, "link: distance cap D of the structural labels appended to the node "
        "features (scalegnn.shadow.labels; 0: no labels).",
        range=Range(0, 16, typed=False, note="(0: off)")),
    Key("node_features", True, "link: feed the dataset's node features (false: the labels "
        "alone).", also="false needs pair_labels > 0"),
    Key("adj_norm", "mean", "Subgraph operator: mean (D⁻¹A) or sym (GCN's symmetric "
        "normalization).", choices=Ref.of(shadow_batch, "ADJ_NORMS")),
), mode=True)

SCHEMA = {s.name: s for s in (NETWORK, PARAMS, PHASE, DISTRIBUTED, SHADOW)}
"""Every section, in the order of a config file."""

EXTRACTORS = {
    "khop": Section("khop", "k-hop scope (scalegnn.shadow.extract.KHopExtractor): hop 0 is the "
                    "target, each further hop at most budget neighbours of each node of the "
                    "hop before, uniform without replacement.", (
        Key("depth", 2, "Hops from the target.", range=Range(1, MAX_ARCH_ORDER)),
        Key("budget", 20, "Neighbours drawn per node (-1: all of them).",
            range=Range(-1, INT32_MAX), also="0 is refused (no neighbours: the model would "
                                             "see the target alone)"),
    )),
    "ppr": Section("ppr", "Personalized PageRank scope (scalegnn.shadow.ppr.PPRExtractor): "
                   "the k nodes of highest approximate PPR score from the target.", (
        Key("k", 200, "Nodes kept per target (the target among them).",
            range=Range(1, INT32_MAX)),
        Key("alpha", 0.15, "Teleport probability of the PageRank walk.",
            range=Range(1e-3, 1.0, hi_open=True, typed=False)),
        Key("eps", 1e-6, "Push tolerance: a node is pushed while its residual exceeds eps times "
            "its degree; smaller is more exact and slower.",
            range=Range(1e-10, 1.0, typed=False)),
        Key("threshold", 0.0, "Keep only the nodes scoring at least this times the best "
            "non-target score (0: the k best).",
            range=Range(0.0, 1.0, typed=False)),
    )),
}
"""The keys of each ``shadow.extractors`` kind (what :data:`scalegnn.shadow.mode.EXTRACTOR_KEYS`
types, with defaults and ranges), checked when the config is read."""

NETWORK_DEFAULTS = NETWORK.defaults()
PARAM_DEFAULTS = PARAMS.defaults()
SECTIONS = {s.name: s.defaults() for s in SCHEMA.values() if s.mode}
"""Optional mode sections: name -> defaults (each key's type is its default's)."""
DIST_DEFAULTS = SECTIONS["distributed"]
SHADOW_DEFAULTS = SECTIONS["shadow"]
PHASE_KEYS = set(PHASE.names)
DEFAULT_PHASES = [{"end": 30, "sampler": "rw", "num_root": 1000, "depth": 2}]
"""The phase list of a config without one."""
BUILTIN_PARAMS = {"patience": 5}
"""The built-in default config's own values: on the synthetic default the validation metric
peaks near epoch 8 of 30 and then falls (0.993 -> 0.946); patience 5 stops at epoch 13 with the
same best-epoch test metric in less than half the time."""
