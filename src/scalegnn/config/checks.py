"""Validation of the train config against its schema (:mod:`scalegnn.config.schema`), and a
one-line YAML parser.

Every number a config can hold has a range, so an absurd value (``dim: 1e12``,
``pool_depth: 10**9``, ``phase.end: 10**12``) is refused when the config is read, before any
memory is allocated or any sampling starts. :func:`coerce` types a value like its key's default
first (bools are not numbers, float keys refuse nan/inf); :func:`check_limits` then checks the
ranges and the choices the schema lists. Choice sets other modules own (a ``Ref`` in the
schema) are checked with the owners' functions and sets.
"""

from __future__ import annotations

import difflib
import math
import numbers

import yaml

from scalegnn.config.schema import (DISTRIBUTED, EXTRACTORS, MAX_ARCH_LAYERS, MAX_ARCH_ORDER,
                                    MAX_EXTRACTORS, PHASE, SHADOW, Key, Range, Section)
from scalegnn.dist.ddp import COMPRESSIONS
from scalegnn.dist.partition import METHODS
from scalegnn.errors import ConfigError
from scalegnn.nn.models import propagation_hops
from scalegnn.sampling import PHASE_SAMPLERS as SAMPLER_CLASSES
from scalegnn.sampling.neighbour_loader import check_fanouts
from scalegnn.shadow.batch import ADJ_NORMS
from scalegnn.shadow.readout import RESIDUALS, readout_for_task


def coerce(name, value, like):
    """Coerce ``value`` to the type of the default ``like``; ConfigError naming ``name``.

    A key whose default is None takes any value. Otherwise None is refused; bools take
    true/false (also 0/1 and yes/no strings); ints take integers or whole numbers (``3.0``,
    ``'3'``) but never a bool (``dim: true`` is a mistake, not 1); floats take finite numbers
    only (nan/inf are refused for every float key); strings take strings (an int becomes its
    text, so ``arch: 1`` works). Ranges are checked by :func:`check_limits`.
    """
    if like is None:
        return value
    kind = type(like).__name__
    bad = ConfigError(f"{name}: expected {kind}, got {brief(value)}")
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
            raise ConfigError(f"{name}: must be a finite number, got {brief(value)}")
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


def key_of(section: Section, name, where: str | None = None) -> Key:
    """``section``'s key ``name``; else ConfigError ``<where>.<name>: unknown key`` with the
    closest key and the allowed ones, elided to keep the line short (``where``: the section's
    name unless given, e.g. ``phase[1]``)."""
    if name not in section.names:
        text = name if isinstance(name, str) and name.isprintable() else repr(name)
        text = text if len(text) <= 40 else f"{text[:37]}..."
        close = difflib.get_close_matches(str(name), section.names, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise ConfigError(f"{where or section.name}.{text}: unknown key{hint}; allowed: "
                          f"{elided(sorted(section.names))}")
    return section[name]


def elided(names, limit: int = 150) -> str:
    """``names`` comma-joined, cut after about ``limit`` characters with a count of the rest."""
    names = [str(n) for n in names]
    shown, used = [], 0
    for name in names:
        if shown and used + len(name) > limit:
            return f"{', '.join(shown)}, ... ({len(names) - len(shown)} more)"
        shown.append(name)
        used += len(name) + 2
    return ", ".join(shown)


def check_known(section: Section, values: dict) -> None:
    """Every key of ``values`` is one of ``section``'s (ConfigError naming the first other)."""
    for k in values:
        key_of(section, k)


def coerce_section(section: Section, values: dict) -> None:
    """Type every given value of a section like its key's default, in place (key by key: an
    unknown key is refused where it comes)."""
    for k in list(values):
        key = key_of(section, k)
        if key.bools_as_text and isinstance(values[k], bool):  # YAML true/false: tri-state key
            values[k] = str(values[k]).lower()
        values[k] = coerce(f"{section.name}.{k}", values[k], key.like)


def check_range(name: str, value, rng: Range):
    """``value`` if it is a finite number within ``rng``, else ConfigError naming ``name``."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) \
        and math.isfinite(value) and rng.contains(value)
    if ok:
        return value
    if not rng.typed:
        raise ConfigError(f"{name}: must be {rng.text()}, got {brief(value).strip(chr(39))}")
    kind = "an integer" if isinstance(rng.lo, int) and not isinstance(rng.lo, bool) else \
        "a finite number"
    raise ConfigError(f"{name}: must be {kind} {rng.text()}, got {brief(value)}")


def check_choice(name: str, value, key: Key):
    """``value`` if it is one of ``key``'s own choices (a tuple; None too when that is the
    default of a key that is not required), else ConfigError naming ``name``."""
    try:
        known = value in key.choices
    except TypeError:   # an unhashable value (a list, a mapping) is no choice of a set
        known = False
    if known or (value is None and key.default is None and not key.required):
        return value
    raise ConfigError(f"{name}: {brief(value)} is not one of {list(key.choices)}")


def check_limits(section: Section, values: dict) -> None:
    """Check the ranges and own choice sets of ``section``'s keys in ``values`` (None values of
    ranged keys are skipped), in the schema's order."""
    for key in section.keys:
        if key.name not in values:
            continue
        name = f"{section.name}.{key.name}"
        if key.range is not None and values[key.name] is not None:
            check_range(name, values[key.name], key.range)
        if isinstance(key.choices, tuple):
            check_choice(name, values[key.name], key)


def check_lr_min(params: dict) -> None:
    """``params.lr_min`` does not exceed ``lr`` when a schedule is on."""
    if params["lr_schedule"] != "none" and params["lr_min"] > params["lr"]:
        raise ConfigError(f"params.lr_min: must be <= params.lr ({params['lr']}), got "
                          f"{params['lr_min']}")


def check_arch(orders: list) -> None:
    """Refuse architectures no machine can build (thousands of layers, huge orders)."""
    if len(orders) > MAX_ARCH_LAYERS or max(orders) > MAX_ARCH_ORDER:
        raise ConfigError(f"network.arch: at most {MAX_ARCH_LAYERS} layers of order <= "
                          f"{MAX_ARCH_ORDER}, got {len(orders)} layers, max order {max(orders)}")


def brief(value, limit: int = 80) -> str:
    """``repr(value)``, cut to ``limit`` characters (error lines stay short)."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit - 3]}..."


def check_int_tokens(name: str, value, example: str) -> None:
    """A dash-separated text of integers (``'1-0-1'``), one integer, or a list of integers
    (``network.arch``, ``network.powers``): no bools, fractions or other types in a list."""
    tokens = value.split("-") if isinstance(value, str) else \
        list(value) if isinstance(value, list) else [value]
    ok = all((isinstance(t, int) and not isinstance(t, bool)) or
             (isinstance(t, str) and t.strip().lstrip("+").isdigit()) for t in tokens)
    if not ok:
        raise ConfigError(f"{name}: expected integers like {example!r}, got {brief(value)}")


def check_powers(powers: tuple) -> None:
    """``network.powers`` (parsed): at most MAX_ARCH_LAYERS powers of at most MAX_ARCH_ORDER."""
    if len(powers) > MAX_ARCH_LAYERS or max(powers) > MAX_ARCH_ORDER:
        raise ConfigError(f"network.powers: at most {MAX_ARCH_LAYERS} powers of at most "
                          f"{MAX_ARCH_ORDER}, got {len(powers)}, max {max(powers)}")


def check_extractors(value) -> list[dict]:
    """``shadow.extractors``: one mapping or a non-empty list of at most MAX_EXTRACTORS, each
    with a kind of :data:`~scalegnn.config.schema.EXTRACTORS` and only that kind's keys, typed
    and within their ranges (a k-hop budget of 0 is refused: no neighbours). Returns the
    checked list (new mappings, values coerced); ConfigError naming the key otherwise."""
    specs = [value] if isinstance(value, dict) else value
    if not isinstance(specs, list) or not specs or len(specs) > MAX_EXTRACTORS:
        raise ConfigError(f"shadow.extractors: expected a non-empty list of at most "
                          f"{MAX_EXTRACTORS} mappings with kind: ppr or kind: khop, got "
                          f"{brief(value)}")
    out = []
    for i, spec in enumerate(specs):
        where = f"shadow.extractors[{i}]"
        if not isinstance(spec, dict):
            raise ConfigError(f"{where}: expected a mapping with kind: ppr or kind: khop, got "
                              f"{brief(spec)}")
        kind = spec.get("kind")
        section = EXTRACTORS.get(kind) if isinstance(kind, str) else None
        if section is None:
            raise ConfigError(f"{where}.kind: {brief(kind)} is not one of {list(EXTRACTORS)}")
        checked = {"kind": kind}
        for k, v in spec.items():
            if k != "kind":
                key, name = key_of(section, k, where), f"{where}.{k}"
                checked[k] = check_range(name, coerce(name, v, key.like), key.range)
        if kind == "khop" and checked.get("budget") == 0:
            raise ConfigError(f"{where}.budget: 0 keeps no neighbours (the model would see the "
                              f"target alone, an MLP); use >= 1, or -1 for all neighbours")
        out.append(checked)
    return out


def check_sampler_keys(phases: list) -> None:
    """Every budget key of a phase is one its sampler takes, and its required keys are there
    (checked for the runs that sample with the phases, :meth:`Config.validate_for_mode`: a
    config may switch a phase's sampler with ``--set`` and then its keys)."""
    for i, ph in enumerate(phases):
        cls = SAMPLER_CLASSES[ph["sampler"]]
        takes = tuple(cls.required) + tuple(cls.optional)
        for k in ph:
            if k not in ("end", "sampler") and k not in takes:
                raise ConfigError(f"phase[{i}].{k}: sampler {ph['sampler']} does not take it "
                                  f"(it takes {', '.join(takes) or 'no budget keys'})")
        missing = [k for k in cls.required if k not in ph]
        if missing:
            raise ConfigError(f"phase[{i}].{missing[0]}: missing (sampler {ph['sampler']} "
                              f"needs {', '.join(cls.required)})")
        if ph.get("size_frontier", 0) > ph.get("size_subgraph", 1 << 62):
            raise ConfigError(f"phase[{i}].size_frontier: must not exceed size_subgraph "
                              f"({ph['size_subgraph']}), got {ph['size_frontier']}")
        if ph.get("parts_per_batch", 0) > ph.get("num_parts", 1 << 62):
            raise ConfigError(f"phase[{i}].parts_per_batch: must not exceed num_parts "
                              f"({ph['num_parts']}), got {ph['parts_per_batch']}")


def check_presampling(params: dict) -> None:
    """GraphSAINT's normalizations pre-sample ``sample_coverage`` times the nodes: > 0."""
    if params["norm_loss"] and params["norm_aggr"] and not params["sample_coverage"] > 0:
        raise ConfigError(f"params.sample_coverage: must be > 0 while params.norm_loss and "
                          f"params.norm_aggr are on (the pre-sampling), got "
                          f"{params['sample_coverage']}")


def parse_yaml(text: str, where: str):
    """``yaml.safe_load(text)``; every parse problem is one ConfigError naming ``where``.

    Besides ``yaml.YAMLError``, PyYAML raises ValueError/OverflowError for impossible dates
    or numbers (``2021-02-31``) and RecursionError for absurdly deep nesting.
    """
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(e, "problem", None) or type(e).__name__
        raise ConfigError(f"{where}: invalid YAML ({line}{problem})") from None
    except (ValueError, OverflowError, TypeError) as e:
        why = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise ConfigError(f"{where}: invalid YAML value ({why})") from None
    except RecursionError:
        raise ConfigError(f"{where}: invalid YAML (nested too deeply)") from None


def check_phases(phases: list) -> None:
    """Validate and coerce the ``phase`` list in place: known keys, a known sampler, strictly
    increasing ``end`` <= MAX_EPOCHS, and sampler budgets of the right kind and range."""
    if not isinstance(phases, list) or not phases:
        raise ConfigError("phase: must be a non-empty list of mappings")
    last_end, end_key = 0, PHASE["end"]
    for i, ph in enumerate(phases):
        if not isinstance(ph, dict):
            raise ConfigError(f"phase[{i}]: expected a mapping, got {ph!r}")
        for k in ph:
            key_of(PHASE, k, f"phase[{i}]")
        check_choice(f"phase[{i}].sampler", ph.get("sampler"), PHASE["sampler"])
        if ph.get("end") is None:
            raise ConfigError(f"phase[{i}].end: missing (the epoch at which this phase ends)")
        end = coerce(f"phase[{i}].end", ph["end"], end_key.like)
        if not last_end < end <= end_key.range.hi:
            raise ConfigError(f"phase[{i}].end: must be an integer > {last_end} and <= "
                              f"{end_key.range.hi}, got {ph['end']!r}")
        ph["end"] = last_end = end
        for key in PHASE.keys:
            if key.range is not None and key is not end_key and key.name in ph:
                name = f"phase[{i}].{key.name}"
                ph[key.name] = check_range(name, coerce(name, ph[key.name], key.like), key.range)
        if "fanouts" in ph:
            ph["fanouts"] = check_fanouts(ph["fanouts"], f"phase[{i}].fanouts")


def check_neighbour_phases(phases: list, network: dict, partition: bool) -> None:
    """A ``sampler: neighbour`` phase samples one hop per propagation of the model (its
    ``fanouts`` list is as long as the model is deep) and is not partition-parallel."""
    for i, ph in enumerate(phases):
        if ph["sampler"] != "neighbour":
            continue
        if partition:
            raise ConfigError(f"phase[{i}].sampler: neighbour batches are not partition-parallel "
                              f"(distributed.mode: partition samples node-induced subgraphs); "
                              f"use distributed.mode: data")
        hops = propagation_hops(network)
        if len(ph["fanouts"]) != hops:
            raise ConfigError(f"phase[{i}].fanouts: {len(ph['fanouts'])} hops given, the model "
                              f"propagates {hops} times (network.arch {network['arch']!r}, "
                              f"model {network['model']}); give one fanout per propagation")


def check_shadow(sh: dict, given: bool) -> None:
    """The ``shadow:`` section's values (defaults filled in); ``given``: the config has the
    section, so its readout is parsed too (that imports torch)."""
    check_limits(SHADOW, sh)
    if sh["adj_norm"] not in ADJ_NORMS:
        raise ConfigError(f"shadow.adj_norm: {sh['adj_norm']!r} is not one of "
                          f"{list(ADJ_NORMS)}")
    if not sh["node_features"] and sh["pair_labels"] == 0:
        raise ConfigError("shadow.node_features: false needs shadow.pair_labels > 0 (the "
                          "model would have no input)")
    if sh["task"] != "link" and (sh["pair_labels"] or not sh["node_features"]):
        raise ConfigError("shadow.pair_labels / shadow.node_features: only for "
                          "shadow.task: link (labels are relative to a pair's two ends)")
    frac = sh["edge_split"]
    if not isinstance(frac, (list, tuple)) or len(frac) != 3 or not all(
            isinstance(f, (int, float)) and not isinstance(f, bool) and 0 <= f <= 1
            for f in frac) or abs(sum(frac) - 1) > 1e-6 or min(frac) <= 0:
        raise ConfigError(f"shadow.edge_split: expected [train, val, test] fractions in "
                          f"(0, 1) summing to 1, got {frac!r}")
    if not isinstance(sh["readout"], str) or not isinstance(sh["residual"], str):
        raise ConfigError(f"shadow.readout / shadow.residual: expected text like "
                          f"'center+mean' / 'none', got {sh['readout']!r} / {sh['residual']!r}")
    if given:
        readout_for_task(sh["readout"], pair=sh["task"] == "link")
        if sh["residual"] not in RESIDUALS:
            raise ConfigError(f"shadow.residual: {sh['residual']!r} is not one of "
                              f"{sorted(RESIDUALS)}")
    if not isinstance(sh["cache_dir"], str):
        raise ConfigError(f"shadow.cache_dir: expected auto, none or a folder, got "
                          f"{sh['cache_dir']!r}")
    check_extractors(sh["extractors"])


def check_distributed(d: dict) -> None:
    """The ``distributed:`` section's values (defaults filled in)."""
    check_limits(DISTRIBUTED, d)
    if d["compression"] not in COMPRESSIONS:
        raise ConfigError(f"distributed.compression: {d['compression']!r} is not one of "
                          f"{list(COMPRESSIONS)}")
    if d["method"] not in METHODS:
        raise ConfigError(f"distributed.method: {d['method']!r} is not one of {list(METHODS)}")
