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
accepted and ignored). scalegnn adds optional ``params`` keys. Every key of every section, with
its default, type, range or choices and meaning, is declared once in
:mod:`scalegnn.config.schema`, which validation reads and the config reference is generated from.
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

from scalegnn.config.checks import (check_arch, check_distributed, check_extractors,
                                    check_int_tokens, check_known, check_limits, check_lr_min,
                                    check_neighbour_phases, check_phases, check_powers,
                                    check_presampling, check_sampler_keys, check_shadow, coerce,
                                    coerce_section, parse_yaml)
from scalegnn.config.schema import (BUILTIN_PARAMS, DEFAULT_PHASES, DIST_DEFAULTS, NETWORK,
                                    NETWORK_DEFAULTS, PARAM_DEFAULTS, PARAMS, PHASE_KEYS, SAMPLERS,
                                    SCHEMA, SECTIONS, SHADOW_DEFAULTS)
from scalegnn.engine.loggers import parse_loggers
from scalegnn.errors import ConfigError
from scalegnn.features import check_feature_format, check_mmap_features
from scalegnn.nn.mixhop import parse_powers
from scalegnn.nn.models import MODELS, parse_arch, validate_options
from scalegnn.nn.pyg import check_network as check_pyg
from scalegnn.nn.saint import ACTIVATIONS, AGGREGATIONS, BIASES

__all__ = ["Config", "SCHEMA", "SECTIONS", "NETWORK_DEFAULTS", "PARAM_DEFAULTS", "DIST_DEFAULTS",
           "SHADOW_DEFAULTS", "BUILTIN_PARAMS", "SAMPLERS", "PHASE_KEYS"]
_coerce = coerce  # the name validation code used before the schema moved out


def _one_dict(raw, key):
    v = raw.get(key, [{}])
    if isinstance(v, dict):
        v = [v]
    if not isinstance(v, list) or len(v) != 1 or not isinstance(v[0], (dict, type(None))):
        raise ConfigError(f"{key}: expected a list with one mapping (GraphSAINT format)")
    return dict(v[0] or {})


@dataclass
class Config:
    network: dict = field(default_factory=lambda: dict(NETWORK_DEFAULTS))
    params: dict = field(default_factory=lambda: dict(PARAM_DEFAULTS))
    phases: list = field(default_factory=lambda: copy.deepcopy(DEFAULT_PHASES))
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
        """Check keys, types, ranges and choices against :mod:`scalegnn.config.schema`; coerces
        values in place (``'3'`` -> 3, ``3.0`` -> 3 for int keys) and returns ``self``."""
        check_known(NETWORK, self.network)
        check_known(PARAMS, self.params)
        coerce_section(NETWORK, self.network)
        coerce_section(PARAMS, self.params)
        n, p = self.network, self.params
        check_limits(NETWORK, n)
        check_limits(PARAMS, p)
        check_lr_min(p)
        # the choice sets other modules own (a Ref in the schema), checked by their owners
        parse_loggers(p["loggers"])
        check_feature_format(p["feature_format"])
        p["mmap_features"] = check_mmap_features(p["mmap_features"])
        check_phases(self.phases)
        for key, allowed in (("aggr", AGGREGATIONS), ("act", ACTIVATIONS), ("bias", BIASES),
                             ("model", MODELS)):
            if n[key] not in allowed:
                raise ConfigError(f"network.{key}: {n[key]!r} is not one of {sorted(allowed)}")
        check_int_tokens("network.arch", n["arch"], "1-0-1-0")
        check_arch(parse_arch(n["arch"]))
        check_int_tokens("network.powers", n["powers"], "0-1-2")
        check_powers(parse_powers(n["powers"]))
        validate_options(n)
        n["pyg_args"] = dict(n["pyg_args"]) if isinstance(n["pyg_args"], dict) else n["pyg_args"]
        check_pyg(n, p["dropout"])
        if n["pyg"] and "shadow" in self.sections:
            raise ConfigError("network.pyg: shaDow-GNN builds its own model; a PyG model "
                              "trains in GraphSAINT mode (leave out the shadow: section)")
        self._validate_sections()
        return self

    def _validate_sections(self):
        for name, given in self.sections.items():
            coerce_section(SCHEMA[name], given)
        if "extractors" in self.sections.get("shadow", {}):  # checked, typed, always a list
            self.sections["shadow"]["extractors"] = \
                check_extractors(self.sections["shadow"]["extractors"])
        check_shadow(self.section("shadow"), given="shadow" in self.sections)
        check_distributed(self.section("distributed"))

    def validate_for_mode(self, mode: str) -> "Config":
        """Checks that only one training mode needs: ``mode`` is a mode's name, or
        ``distributed`` for any dist-train run (then ``distributed.mode`` says which). The
        modes that exchange boundary rows between graph layers (``full``, ``partition``) run
        the GraphSAINT model with layers of order 0 and 1; ``data`` runs any config."""
        kind = self.section("distributed")["mode"]
        samples = mode in ("graphsaint", "data-parallel", "partition-parallel") or \
            (mode == "distributed" and kind in ("data", "partition"))
        if samples and "shadow" not in self.sections:  # the phases' samplers will be built:
            check_sampler_keys(self.phases)                # their keys, before any data is read
            check_presampling(self.params)
            check_neighbour_phases(self.phases, self.network, partition=mode ==
                                   "partition-parallel" or (mode == "distributed" and
                                                            kind == "partition"))
        if mode in ("distributed", "partition-parallel") and \
                (mode == "partition-parallel" or kind in ("full", "partition")):
            if "shadow" in self.sections:
                raise ConfigError("shadow: a shaDow-GNN config trains with `scalegnn train`, or "
                                  "with dist-train and distributed.mode: data")
            if self.network["model"] != "saint" or self.network["pyg"]:
                raise ConfigError(f"network.model: distributed training runs the GraphSAINT "
                                  f"model ('saint'), got "
                                  f"{self.network['pyg'] or self.network['model']!r}")
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
