"""Value limits of the train config and a one-line YAML parser (used by :mod:`scalegnn.config`).

Every number a config can hold has a range here, so an absurd value (``dim: 1e12``,
``pool_depth: 10**9``, ``phase.end: 10**12``) is refused when the config is read, before any
memory is allocated or any sampling starts. Types are coerced by ``config._coerce`` first
(bools are not numbers, float keys refuse nan/inf); this module checks the ranges.
"""

from __future__ import annotations

import math

import yaml

from scalegnn.errors import ConfigError

INT32_MAX = 2**31 - 1
MAX_EPOCHS = 10**7

# key -> (lowest, highest, lowest excluded); None = unbounded on that side
NETWORK_LIMITS = {"dim": (1, 2**20, False), "layers": (0, 256, False), "heads": (1, 1024, False)}
PARAM_LIMITS = {
    "lr": (0.0, None, True), "weight_decay": (0.0, None, False), "dropout": (0.0, 1.0, False),
    "sample_coverage": (0, 10**5, False), "eval_every": (1, MAX_EPOCHS, False),
    "grad_clip": (0.0, None, False), "eval_batch_rows": (1, INT32_MAX, False),
    "sampler_threads": (0, 4096, False), "pool_depth": (1, 1024, False),
    "clip_multiple": (0, 2**20, False),
    "patience": (0, MAX_EPOCHS, False), "lr_decay": (0.0, 1.0, True),
    "lr_step": (1, MAX_EPOCHS, False), "lr_min": (0.0, None, False),
    "lr_patience": (1, MAX_EPOCHS, False),
}
LR_SCHEDULES = ("none", "step", "cosine", "plateau")  # scalegnn.train.optim.LRSchedule
# phase sampler budgets: key -> (type-like default, lowest, highest)
PHASE_BUDGETS = {
    "num_root": (0, 1, INT32_MAX), "depth": (0, 0, 10**4), "size_subgraph": (0, 1, INT32_MAX),
    "size_frontier": (0, 1, INT32_MAX), "size_subg_edge": (0, 1, INT32_MAX),
    "max_deg": (0, 0, INT32_MAX), "order": (0, 0, 64), "eta": (0.0, 1e-6, 1e6),
}
MAX_ARCH_LAYERS = 256
MAX_ARCH_ORDER = 64


def in_range(name: str, value, lo=None, hi=None, lo_open: bool = False):
    """``value`` if ``lo (<|<=) value <= hi`` (and finite), else ConfigError naming ``name``.

    ``params.dropout`` is the one half-open interval [0, 1) and is special-cased by the caller.
    """
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) \
        and math.isfinite(value)
    ok = ok and (lo is None or (value > lo if lo_open else value >= lo))
    ok = ok and (hi is None or value <= hi)
    if ok:
        return value
    kind = "an integer" if isinstance(lo, int) and not isinstance(lo, bool) else \
        "a finite number"
    lo_s, hi_s = (f"{x:g}" if isinstance(x, float) else str(x) for x in (lo, hi))
    if lo is not None and hi is not None and not lo_open:
        want = f"in [{lo_s}, {hi_s}]"
    elif lo is not None:
        want = f"{'>' if lo_open else '>='} {lo_s}" + (f" and <= {hi_s}" if hi is not None else "")
    else:
        want = f"<= {hi_s}"
    raise ConfigError(f"{name}: must be {kind} {want}, got {value!r}")


def check_limits(section: str, values: dict, limits: dict) -> None:
    """Range-check the keys of ``values`` that ``limits`` lists (None values are skipped)."""
    for key, (lo, hi, lo_open) in limits.items():
        if values.get(key) is None:
            continue
        if key == "dropout":
            v = values[key]
            if not 0.0 <= v < 1.0:
                raise ConfigError(f"{section}.dropout: must be in [0, 1), got {v!r}")
            continue
        in_range(f"{section}.{key}", values[key], lo, hi, lo_open)


def check_schedule(params: dict) -> None:
    """``params.lr_schedule`` is a known schedule and ``lr_min`` does not exceed ``lr``."""
    if params["lr_schedule"] not in LR_SCHEDULES:
        raise ConfigError(f"params.lr_schedule: {params['lr_schedule']!r} is not one of "
                          f"{list(LR_SCHEDULES)}")
    if params["lr_schedule"] != "none" and params["lr_min"] > params["lr"]:
        raise ConfigError(f"params.lr_min: must be <= params.lr ({params['lr']}), got "
                          f"{params['lr_min']}")


def check_arch(orders: list) -> None:
    """Refuse architectures no machine can build (thousands of layers, huge orders)."""
    if len(orders) > MAX_ARCH_LAYERS or max(orders) > MAX_ARCH_ORDER:
        raise ConfigError(f"network.arch: at most {MAX_ARCH_LAYERS} layers of order <= "
                          f"{MAX_ARCH_ORDER}, got {len(orders)} layers, max order {max(orders)}")


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


def check_phases(phases: list, coerce, samplers, phase_keys) -> None:
    """Validate and coerce the ``phase`` list in place: known keys, a known sampler, strictly
    increasing ``end`` <= MAX_EPOCHS, and sampler budgets of the right kind and range
    (``coerce`` is ``config._coerce``: it types a value like a default)."""
    if not isinstance(phases, list) or not phases:
        raise ConfigError("phase: must be a non-empty list of mappings")
    last_end = 0
    for i, ph in enumerate(phases):
        if not isinstance(ph, dict):
            raise ConfigError(f"phase[{i}]: expected a mapping, got {ph!r}")
        for k in ph:
            if k not in phase_keys:
                raise ConfigError(f"phase[{i}].{k}: unknown key; allowed: {sorted(phase_keys)}")
        if ph.get("sampler") not in samplers:
            raise ConfigError(f"phase[{i}].sampler: {ph.get('sampler')!r} is not one of "
                              f"{list(samplers)}")
        if ph.get("end") is None:
            raise ConfigError(f"phase[{i}].end: missing (the epoch at which this phase ends)")
        end = coerce(f"phase[{i}].end", ph["end"], 0)
        if not last_end < end <= MAX_EPOCHS:
            raise ConfigError(f"phase[{i}].end: must be an integer > {last_end} and <= "
                              f"{MAX_EPOCHS}, got {ph['end']!r}")
        ph["end"] = last_end = end
        for key, (like, lo, hi) in PHASE_BUDGETS.items():
            if key in ph:
                name = f"phase[{i}].{key}"
                ph[key] = in_range(name, coerce(name, ph[key], like), lo, hi)


def check_shadow(sh: dict, given: bool) -> None:
    """The ``shadow:`` section's values (defaults filled in); ``given``: the config has the
    section, so its readout is parsed too (that imports torch)."""
    for key, hi in (("batch_size", 1 << 20), ("eval_batch_size", 1 << 22)):
        if not 1 <= sh[key] <= hi:
            raise ConfigError(f"shadow.{key}: must be in [1, {hi}], got {sh[key]}")
    if sh["task"] not in ("node", "link"):
        raise ConfigError(f"shadow.task: {sh['task']!r} is not one of ['link', 'node']")
    if sh["pairs_per_epoch"] < 0:
        raise ConfigError(f"shadow.pairs_per_epoch: must be >= 0 (0: all), got "
                          f"{sh['pairs_per_epoch']}")
    if sh["adj_norm"] not in ("mean", "sym"):
        raise ConfigError(f"shadow.adj_norm: {sh['adj_norm']!r} is not one of "
                          f"['mean', 'sym']")
    if not 0 <= sh["pair_labels"] <= 16:
        raise ConfigError(f"shadow.pair_labels: must be in [0, 16] (0: off), got "
                          f"{sh['pair_labels']}")
    if not sh["node_features"] and sh["pair_labels"] == 0:
        raise ConfigError("shadow.node_features: false needs shadow.pair_labels > 0 (the "
                          "model would have no input)")
    if sh["task"] != "link" and (sh["pair_labels"] or not sh["node_features"]):
        raise ConfigError("shadow.pair_labels / shadow.node_features: only for "
                          "shadow.task: link (labels are relative to a pair's two ends)")
    if not 1 <= sh["negatives"] <= 10**7:
        raise ConfigError(f"shadow.negatives: must be in [1, 10**7], got {sh['negatives']}")
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
        from scalegnn.shadow.readout import parse_readout  # noqa: PLC0415 (imports torch)
        parse_readout(sh["readout"])
        if sh["residual"] not in ("none", "max", "concat"):
            raise ConfigError(f"shadow.residual: {sh['residual']!r} is not one of "
                              f"['concat', 'max', 'none']")
    if not isinstance(sh["cache_dir"], str):
        raise ConfigError(f"shadow.cache_dir: expected auto, none or a folder, got "
                          f"{sh['cache_dir']!r}")
    exts = [sh["extractors"]] if isinstance(sh["extractors"], dict) else sh["extractors"]
    if not isinstance(exts, list) or not exts or not all(
            isinstance(e, dict) and e.get("kind") in ("ppr", "khop") for e in exts):
        raise ConfigError(f"shadow.extractors: expected a non-empty list of mappings with "
                          f"kind: ppr or kind: khop, got {sh['extractors']!r}")
    if not isinstance(sh["extractors"], (list, dict)) or not sh["extractors"]:
        raise ConfigError(f"shadow.extractors: expected a non-empty list of mappings, got "
                          f"{sh['extractors']!r}")


def check_distributed(d: dict) -> None:
    """The ``distributed:`` section's values (defaults filled in)."""
    if not (0.0 <= d["boundary_p"] <= 1.0):
        raise ConfigError(f"distributed.boundary_p: must be in [0, 1], got {d['boundary_p']}")
    if not (0 < d["timeout"] < float("inf")):
        raise ConfigError(f"distributed.timeout: must be a positive number of seconds, got "
                          f"{d['timeout']}")
    if d["dtype"] not in ("float32", "float64"):
        raise ConfigError(f"distributed.dtype: {d['dtype']!r} is not one of "
                          f"['float32', 'float64']")
    if d["parts"] < 0:
        raise ConfigError(f"distributed.parts: must be >= 0, got {d['parts']}")
    from scalegnn.dist.partition import METHODS  # noqa: PLC0415 (numpy only, no torch)
    if d["method"] not in METHODS:
        raise ConfigError(f"distributed.method: {d['method']!r} is not one of {list(METHODS)}")
