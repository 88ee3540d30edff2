"""Training configuration in GraphSAINT's ``train_config`` YAML shape.

::

    network:
      - dim: 512            # hidden width
        aggr: 'concat'      # concat | mean
        loss: 'sigmoid'     # sigmoid (multi-label) | softmax (single-label)
        arch: '1-0-1-0'     # one token per layer: its order (0 = dense self-only layer)
        act: 'relu'
        bias: 'norm'        # norm | bias | none
    params:
      - lr: 0.01
        dropout: 0.1
        weight_decay: 0.0
        sample_coverage: 50
        norm_loss: True     # loss normalization λ_v (SPEC §1.2)
        norm_aggr: True     # aggregator normalization α_uv
    phase:
      - end: 1000           # train until this epoch with the sampler below
        sampler: 'rw'
        num_root: 3000
        depth: 2

The published GraphSAINT table2 configs run unchanged (their ``q_threshold``/``q_offset`` keys are
accepted and ignored). scalegnn adds optional ``params`` keys, listed in ``PARAM_DEFAULTS``.
``--set key=value`` overrides use dotted paths: ``network.dim=128``, ``params.lr=0.005``,
``phase.0.end=10`` (``phase.end=10`` means the last phase).

Every training mode reads this one schema. Mode-specific settings live in optional sections
(a mapping, or a one-item list like the GraphSAINT sections); a section that is absent takes its
defaults, and the resolved ``config.yml`` of a run lists only the sections that were given::

    distributed:            # scalegnn dist-train (partition-parallel full-graph training)
      boundary_p: 0.1       # keep each boundary node with this probability per epoch (BNS-GCN)
      timeout: 120          # seconds before a silent peer is an error
      overlap: true         # local SpMM while the boundary rows are in flight
      parts: 0              # ranks (0: from --nprocs)
      method: metis         # partitioner for dist-train --data --parts: hp | gp (= metis) | rp (= random)
    shadow:                 # shaDow-GNN (scalegnn train): per-target subgraphs, see scalegnn.shadow.mode
      extractors: [{kind: ppr, k: 200}]
      readout: center+mean

In distributed runs ``phase[-1].end`` is the number of epochs (one full-graph step each) and the
phase's sampler settings are not used.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from scalegnn.errors import ConfigError

NETWORK_DEFAULTS = {"dim": 256, "aggr": "concat", "loss": None, "arch": "1-0-1-0", "act": "relu",
                    "bias": "norm", "model": "saint",
                    # options of the other model families (scalegnn.nn.models.MODEL_OPTIONS):
                    # layers (0 = depth from arch), heads (gat), jk_mode (jk: concat | max),
                    # powers (mixhop, e.g. '0-1-2'), gin_weights (gin: operator | ones)
                    "layers": 0, "heads": 4, "jk_mode": "concat", "powers": "0-1-2",
                    "gin_weights": "operator"}
PARAM_DEFAULTS = {
    "lr": 0.01, "dropout": 0.0, "weight_decay": 0.0, "sample_coverage": 50,
    "norm_loss": True, "norm_aggr": True,
    "q_threshold": 50, "q_offset": 0,            # reference keys (queueing of its C++ sampler), unused
    "transductive": False,                       # sample the full graph, loss on training nodes
    "standardize": True,                         # features -> z-scores by training-node statistics
                                                 # (GraphSAINT's preprocessing); in-memory copy,
                                                 # applied on read for memory-mapped ones,
                                                 # folded into the first layer for CSR features
    "feature_format": "auto",                    # auto | sparse | dense: CSR input features when
                                                 # sparse enough (scalegnn.features)
    "mmap_features": "auto",                     # auto | true | false: memory-map a dense
                                                 # feats.npy (auto: when it is over a quarter of
                                                 # the available memory; scalegnn.mapped_features)
    "eval_every": 1,                             # epochs between validation passes
    "grad_clip": 5.0,
    "flush_denormal": True,                      # treat denormal floats as 0 while training, as
                                                 # GPUs do (Adam's second moments of tiny
                                                 # gradients; x86 is ~100x slower on them)
    "eval_batch_rows": 65536,
    "sampler_threads": 0,                        # 0 = as many as torch uses
    "pool_depth": 4,                             # prefetched minibatches
    "clip_multiple": 0,                          # clip |V_s| to a multiple of this (16: cache lines)
    "loggers": "none",                           # none | csv | tensorboard | csv+tensorboard:
                                                 # per-epoch logs beside metrics.jsonl
    "checkpoint_seconds": 300.0,                 # also save last.pt mid-epoch after this long
                                                 # (0: after every iteration); epoch ends always
    "patience": 0,                               # stop after this many validation passes without
                                                 # a better val metric (0: never stop early)
    "lr_schedule": "none",                       # none | step | cosine | plateau (train/optim.py)
    "lr_decay": 0.5,                             # step, plateau: factor per decay
    "lr_step": 10,                               # step: epochs between decays
    "lr_min": 0.0,                               # cosine: final rate; step, plateau: floor
    "lr_patience": 2,                            # plateau: validation passes without a better
                                                 # val metric before each decay
}
DIST_DEFAULTS = {
    "boundary_p": 1.0,          # probability of keeping a boundary node per epoch (1 = exact)
    "timeout": 120.0,           # seconds for init_process_group and for every exchange wait
    "overlap": True,            # split Â = [Â_in | Â_bd], run Â_in·h while messages fly
    "dtype": "float32",         # float32 | float64
    "parts": 0,                 # number of ranks (0: --nprocs / the plan decides)
    "method": "metis",          # partitioner for dist-train --data --parts: hp|gp|rp|metis|random
    "lean_memory": True,        # return freed activations to the OS at once (lower peak RSS)
}
SHADOW_DEFAULTS = {
    "extractors": [{"kind": "khop", "depth": 2, "budget": 20}],  # one branch per extractor
    "readout": "center",        # center | sum | mean | max | sort:K | center+POOL
    "residual": "none",         # none | max | concat: combine every layer's output
    "batch_size": 64,           # training targets per minibatch
    "eval_batch_size": 512,     # targets per inference minibatch
    "cache_dir": "auto",        # PPR lists on disk: auto (~/.cache/scalegnn/ppr), none, a folder
    "task": "node",             # node (classification) | link (link prediction)
    "edge_split": [0.85, 0.05, 0.10],  # link: train / val / test share of the edges (seeded)
    "split_seed": 0,            # link: seed of the held-out edge split and its negatives
    "negatives": 10000,         # link: shared negative pairs ranked against each val/test edge
    "pairs_per_epoch": 0,       # link: training positives per epoch, a fresh random subset
                                # each epoch (0: all of them)
    "pair_labels": 0,           # link: distance cap D of the structural labels appended to the
                                # node features (scalegnn.shadow.labels; 0: no labels)
    "node_features": True,      # link: feed the dataset's node features (False: labels only)
    "adj_norm": "mean",         # subgraph operator: mean (D⁻¹A) | sym (GCN's symmetric one)
}
BUILTIN_PARAMS = {"patience": 5}
"""The built-in default config's own values: on the synthetic default the validation metric
peaks near epoch 8 of 30 and then falls (0.993 -> 0.946); patience 5 stops at epoch 13 with the
same best-epoch test metric in less than half the time."""
SECTIONS = {"distributed": DIST_DEFAULTS, "shadow": SHADOW_DEFAULTS}
"""Optional mode sections: name -> defaults (each key's type is its default's)."""
SAMPLERS = ("node", "edge", "rw", "mrw", "full")
PHASE_KEYS = {"end", "sampler", "size_subgraph", "size_frontier", "size_subg_edge", "num_root",
              "depth", "max_deg", "order", "eta"}


def _one_dict(raw, key):
    v = raw.get(key, [{}])
    if isinstance(v, dict):
        v = [v]
    if not isinstance(v, list) or len(v) != 1 or not isinstance(v[0], (dict, type(None))):
        raise ConfigError(f"{key}: expected a list with one mapping (GraphSAINT format)")
    return dict(v[0] or {})


def _coerce(name, value, like):
    """Coerce ``value`` to the type of the default ``like``; ConfigError naming ``name``.

    A key whose default is None takes any value. Otherwise None is refused; bools take
    true/false (also 0/1 and yes/no strings); ints take integers or whole numbers (``3.0``,
    ``'3'``) but never a bool (``dim: true`` is a mistake, not 1); floats take finite numbers
    only (nan/inf are refused for every float key); strings take strings (an int becomes its
    text, so ``arch: 1`` works). Ranges are checked by :meth:`Config.validate`.
    """
    import math  # noqa: PLC0415
    import numbers  # noqa: PLC0415
    if like is None:
        return value
    kind = type(like).__name__
    bad = ConfigError(f"{name}: expected {kind}, got {value!r}")
    if value is None:
        raise bad
    if isinstance(like, bool):
        text = str(value).strip().lower() if isinstance(value, (str, numbers.Integral)) else ""
        if isinstance(value, bool):
            return value
        if text in ("true", "1", "yes", "on"):
            return True
        if text in ("false", "0", "no", "off"):
            return False
        raise bad
    if isinstance(like, (int, float)):
        if isinstance(value, bool) or not isinstance(value, (str, numbers.Real)):
            raise bad
        if isinstance(like, int) and isinstance(value, numbers.Integral):
            return int(value)
        try:
            f = float(value.strip() if isinstance(value, str) else value)
        except (ValueError, OverflowError):
            raise bad from None
        if not math.isfinite(f):
            raise ConfigError(f"{name}: must be a finite number, got {value!r}")
        if isinstance(like, float):
            return f
        if not f.is_integer():
            raise bad
        return int(f)
    if isinstance(like, str):
        if isinstance(value, str):
            return value
        if isinstance(value, numbers.Integral) and not isinstance(value, bool):
            return str(value)
        raise bad
    return value


@dataclass
class Config:
    network: dict = field(default_factory=lambda: dict(NETWORK_DEFAULTS))
    params: dict = field(default_factory=lambda: dict(PARAM_DEFAULTS))
    phases: list = field(default_factory=lambda: [{"end": 30, "sampler": "rw", "num_root": 1000,
                                                    "depth": 2}])
    sections: dict = field(default_factory=dict)
    """Mode sections that were given (name -> resolved mapping); see :data:`SECTIONS`."""

    def section(self, name: str) -> dict:
        """The resolved ``name`` section (its defaults when the config did not give it)."""
        return {**SECTIONS[name], **self.sections.get(name, {})}

    # ------------------------------------------------------------------ construction
    @classmethod
    def builtin(cls) -> "Config":
        """The built-in default (``scalegnn train`` without ``--config``): the defaults plus
        :data:`BUILTIN_PARAMS`. Config files keep ``params.patience: 0`` unless they set it, so
        published schedules run in full."""
        cfg = cls()
        cfg.params.update(BUILTIN_PARAMS)
        return cfg.validate()

    @classmethod
    def from_dict(cls, raw: dict, source: str = "config") -> "Config":
        if not isinstance(raw, dict):
            raise ConfigError(f"{source}: expected a mapping with network/params/phase")
        unknown = set(raw) - {"network", "params", "phase", *SECTIONS}
        if unknown:
            raise ConfigError(f"{source}: unknown top-level key {sorted(map(str, unknown))[0]!r}; "
                              f"allowed: network, params, phase, {', '.join(SECTIONS)}")
        net = _one_dict(raw, "network")
        params = _one_dict(raw, "params")
        phases = raw.get("phase", None)
        cfg = cls()
        cfg.network.update(net)
        cfg.params.update(params)
        if phases is not None:
            if isinstance(phases, dict):
                phases = [phases]
            if not isinstance(phases, list) or not phases:
                raise ConfigError(f"{source}: phase must be a non-empty list of mappings")
            if not all(isinstance(p, (dict, type(None))) for p in phases):
                raise ConfigError(f"{source}: phase must be a non-empty list of mappings")
            cfg.phases = [dict(p or {}) for p in phases]
        for name in SECTIONS:
            if name in raw:
                cfg.sections[name] = _one_dict(raw, name)
        return cfg.validate()

    @classmethod
    def from_yaml(cls, path) -> "Config":
        """Read a YAML config file; every problem (missing, a folder, unreadable, not UTF-8,
        invalid YAML, bad values) is a one-line ConfigError naming the file or the key."""
        from scalegnn._config_limits import parse_yaml  # noqa: PLC0415
        path = Path(path)
        if path.is_dir():
            raise ConfigError(f"{path}: is a folder, expected a YAML config file")
        if not path.is_file():
            raise ConfigError(f"{path}: config file not found")
        try:
            text = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError as e:
            raise ConfigError(f"{path}: not UTF-8 text (byte {e.start})") from None
        except OSError as e:
            raise ConfigError(f"{path}: unreadable ({e.strerror or e})") from None
        raw = parse_yaml(text, str(path))
        return cls.from_dict({} if raw is None else raw, str(path))

    def to_dict(self) -> dict:
        out = {"network": [dict(self.network)], "params": [dict(self.params)],
               "phase": [dict(p) for p in self.phases]}
        for name in self.sections:
            out[name] = self.section(name)
        return out

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False)

    def copy(self) -> "Config":
        return copy.deepcopy(self)

    # ------------------------------------------------------------------ overrides
    def override(self, assignments) -> "Config":
        """Apply ``key=value`` strings (dotted paths); values parsed as YAML scalars.

        An empty key or value, or a value that is not valid YAML, is a ConfigError naming the
        assignment (write ``null`` for an explicit None).
        """
        from scalegnn._config_limits import parse_yaml  # noqa: PLC0415
        for item in assignments or []:
            if not isinstance(item, str) or "=" not in item:
                raise ConfigError(f"--set {item!r}: expected key=value")
            key, value = item.split("=", 1)
            key = key.strip()
            if not key or any(not p.strip() for p in key.split(".")):
                raise ConfigError(f"--set {item!r}: empty key (expected e.g. params.lr=0.01)")
            if not value.strip():
                raise ConfigError(f"--set {item!r}: empty value (write null for none)")
            value = parse_yaml(value, f"--set {key}")
            parts = [p.strip() for p in key.split(".")]
            head = parts[0]
            if head == "network" and len(parts) == 2:
                self.network[parts[1]] = value
            elif head == "params" and len(parts) == 2:
                self.params[parts[1]] = value
            elif head in SECTIONS and len(parts) == 2:
                self.sections.setdefault(head, {})[parts[1]] = value
            elif head == "phase" and len(parts) in (2, 3):
                idx = -1 if len(parts) == 2 else parts[1]
                try:
                    phase = self.phases[int(idx)]
                except (ValueError, IndexError):
                    raise ConfigError(f"--set {key}: no phase {idx!r} "
                                      f"(there are {len(self.phases)})") from None
                phase[parts[-1]] = value
            else:
                raise ConfigError(f"--set {key}: expected network.KEY, params.KEY, phase.KEY, "
                                  f"phase.N.KEY or SECTION.KEY ({', '.join(SECTIONS)})")
        return self.validate()

    # ------------------------------------------------------------------ validation
    def validate(self) -> "Config":
        """Check keys, types and ranges (see :mod:`scalegnn._config_limits`); coerces values
        in place (``'3'`` -> 3, ``3.0`` -> 3 for int keys) and returns ``self``."""
        from scalegnn._config_limits import (  # noqa: PLC0415
            NETWORK_LIMITS, PARAM_LIMITS, check_arch, check_limits, check_phases, check_schedule)
        for k in self.network:
            if k not in NETWORK_DEFAULTS:
                raise ConfigError(f"network.{k}: unknown key; allowed: {sorted(NETWORK_DEFAULTS)}")
        for k in self.params:
            if k not in PARAM_DEFAULTS:
                raise ConfigError(f"params.{k}: unknown key; allowed: {sorted(PARAM_DEFAULTS)}")
        for k, v in list(self.network.items()):
            self.network[k] = _coerce(f"network.{k}", v, NETWORK_DEFAULTS[k])
        if isinstance(self.params.get("mmap_features"), bool):  # YAML true/false: tri-state key
            self.params["mmap_features"] = str(self.params["mmap_features"]).lower()
        for k, v in list(self.params.items()):
            self.params[k] = _coerce(f"params.{k}", v, PARAM_DEFAULTS[k])
        n, p = self.network, self.params
        if n["loss"] not in (None, "sigmoid", "softmax"):
            raise ConfigError(f"network.loss: {n['loss']!r} is not one of ['sigmoid', 'softmax']")
        check_limits("network", n, NETWORK_LIMITS)
        check_limits("params", p, PARAM_LIMITS)
        check_schedule(p)
        from scalegnn.train.loggers import parse_loggers  # noqa: PLC0415
        parse_loggers(p["loggers"])
        from scalegnn.features import check_feature_format  # noqa: PLC0415
        check_feature_format(p["feature_format"])
        from scalegnn.mapped_features import check_mmap_features  # noqa: PLC0415
        p["mmap_features"] = check_mmap_features(p["mmap_features"])
        check_phases(self.phases, _coerce, SAMPLERS, PHASE_KEYS)
        from scalegnn.nn.models import (  # noqa: PLC0415 (avoids import cycle)
            MODELS, parse_arch, validate_options)
        from scalegnn.nn.saint import ACTIVATIONS, AGGREGATIONS, BIASES  # noqa: PLC0415
        for key, allowed in (("aggr", AGGREGATIONS), ("act", ACTIVATIONS), ("bias", BIASES),
                             ("model", MODELS)):
            if n[key] not in allowed:
                raise ConfigError(f"network.{key}: {n[key]!r} is not one of {sorted(allowed)}")
        check_arch(parse_arch(n["arch"]))
        validate_options(n)
        self._validate_sections()
        return self

    def _validate_sections(self):
        for name, given in self.sections.items():
            defaults = SECTIONS[name]
            for k in list(given):
                if k not in defaults:
                    raise ConfigError(f"{name}.{k}: unknown key; allowed: {sorted(defaults)}")
                given[k] = _coerce(f"{name}.{k}", given[k], defaults[k])
        if not (0 <= self.params["checkpoint_seconds"] < float("inf")):
            raise ConfigError(f"params.checkpoint_seconds: must be a finite number >= 0, got "
                              f"{self.params['checkpoint_seconds']}")
        from scalegnn._config_limits import check_distributed, check_shadow  # noqa: PLC0415
        check_shadow(self.section("shadow"), given="shadow" in self.sections)
        check_distributed(self.section("distributed"))

    def validate_for_mode(self, mode: str) -> "Config":
        """Checks that only one training mode needs (``graphsaint`` | ``distributed``)."""
        if mode == "distributed":
            from scalegnn.nn.models import parse_arch  # noqa: PLC0415
            if "shadow" in self.sections:
                raise ConfigError("shadow: a shaDow-GNN config trains with `scalegnn train`, "
                                  "not dist-train")
            if self.network["model"] != "saint":
                raise ConfigError(f"network.model: distributed training runs the GraphSAINT "
                                  f"model ('saint'), got {self.network['model']!r}")
            if max(parse_arch(self.network["arch"])) > 1:
                raise ConfigError(f"network.arch: distributed training supports layer orders 0 "
                                  f"and 1 only (order >= 2 needs one exchange per hop), got "
                                  f"{self.network['arch']!r}")
        return self

    @property
    def epochs(self) -> int:
        return self.phases[-1]["end"]

    def phase_at(self, epoch: int) -> dict:
        """The phase that covers 0-based ``epoch``."""
        for ph in self.phases:
            if epoch < ph["end"]:
                return ph
        return self.phases[-1]

    def sampler_params(self, phase: dict) -> dict:
        return {k: v for k, v in phase.items() if k not in ("end", "sampler")}
