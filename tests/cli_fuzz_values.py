"""Values for the CLI fuzz (``cli_fuzz_cases``): junk JSON-like values, damage operations
for the fixtures' copies, numeric flag values from a flag's range, generator specs, train
configs and ``--set`` items drawn from :mod:`scalegnn.config.schema` (valid values often, edges
and junk otherwise), and plausible strings for the other flags. Generated text never holds
``/`` or NUL (no path leaves the case folder; argv cannot hold NUL)."""

from __future__ import annotations

import yaml
from hypothesis import strategies as st

from scalegnn.config.flags import Num
from scalegnn.config.schema import EXTRACTORS, SCHEMA, Ref

COSTLY_MAX = 2
# top-level keys of the fixtures' mappings (run.json, summary.json, metrics.jsonl, plan.json,
# part.json, role.json, scalegnn.json, checkpoints, configs, dataset specs): a "set" edit
# replaces one of them
KEYS = ("data", "split", "seed", "threads", "mode", "device_arg", "data_options", "test_data",
        "world_size", "val", "test", "best_epoch", "metric", "epochs", "epoch", "loss", "lr",
        "train_s", "parts", "plan_id", "rank", "graph_hash", "format", "stats", "totals",
        "nodes", "features", "classes", "tr", "va", "te", "model", "optimizer", "identity",
        "rng", "network", "params", "phase", "shadow", "distributed", "path", "labels")
TINY = ("planted:nodes=120,classes=3,features=8", "planted:nodes=60,classes=2,features=4,degree=4",
        "kronecker:6:4:features=8,classes=3")


# ----------------------------------------------------------------------------- values
text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="/\x00"),
               max_size=12)
scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), text,
                    st.integers(-3, 300), st.sampled_from([10**20, -1, 0, "", "1e999", "nan",
                                                           "1-0", "rw", [], {}]))
junk = st.recursive(scalars, lambda c: st.one_of(
    st.lists(c, max_size=3), st.dictionaries(text, c, max_size=3)), max_leaves=8)
edit_op = st.one_of(
    st.tuples(st.just("truncate"), st.floats(0, 1, exclude_max=True)),
    st.tuples(st.just("flip"), st.lists(st.tuples(st.floats(0, 1), st.integers(0, 7)),
                                        min_size=1, max_size=4)),
    st.tuples(st.just("zero"), st.floats(0, 1), st.integers(1, 64)),
    st.tuples(st.just("replace"), st.binary(max_size=48)),
    st.tuples(st.just("append"), st.binary(min_size=1, max_size=32)),
    st.just(("delete",)), st.just(("to_dir",)),
    st.tuples(st.just("edit"), st.integers(0, 10**4), junk),
    st.tuples(st.just("edit"), st.integers(0, 10**4), junk),
    st.tuples(st.just("set"), st.sampled_from(KEYS), junk),
    st.tuples(st.just("set"), st.sampled_from(KEYS), junk))
ops = st.lists(st.tuples(st.integers(0, 100), edit_op), max_size=2)


def num_values(num: Num, costly: bool):
    r = num.range
    lo = r.lo if r.lo is not None else -10
    hi = r.hi if r.hi is not None else 10**12
    if num.kind is int:
        first = lo + 1 if r.lo_open else lo
        valid = st.integers(first, min(hi, first + (COSTLY_MAX if costly else 64)))
        edges = [lo - 1, hi + 1, 0, -1, 2**63, 10**30] + ([] if costly else [hi, lo])
    else:
        valid = st.floats(lo, hi if not costly else min(hi, lo + 2), allow_nan=False,
                          exclude_min=r.lo_open, exclude_max=r.hi_open)
        edges = [lo, hi, -1e-300, 1e308, 0.0] if not costly else [lo, -1.0]
    return st.one_of(valid.map(str), valid.map(str), st.sampled_from(edges).map(str), st.sampled_from(
        ["nan", "inf", "-inf", "1e999", "", " 1", "1_0", "0x10", "\u0663", "1,2", "2.5", "-0"]),
        text)


def spec(draw) -> str:
    """A generator spec: tiny, or with fuzzed keys and values."""
    how = draw(st.integers(0, 3))
    if how == 0:
        return draw(st.sampled_from(TINY))
    val = st.sampled_from(["0", "1", "2", "8", "120", "-1", "1e12", "nan", "x", "", "0.5",
                           "4294967296"])
    if how == 1:
        keys = st.sampled_from(["nodes", "classes", "features", "degree", "p_in", "noise",
                                "multilabel", "labels", "seed", "size", "nodes"])
        items = draw(st.lists(st.tuples(keys, val), max_size=4))
        return "planted:" + ",".join(f"{k}={v}" for k, v in items)
    if how == 2:
        s, ef = draw(val), draw(val)
        return f"kronecker:{s}:{ef}" + draw(st.sampled_from(["", ":features=4", ":classes=1",
                                                             ":a=0.9", ":x"]))
    return draw(st.sampled_from(["synthetic", "planted", "planted:", "kronecker", "kronecker:",
                                 "kronecker:6", "ogb:", "planted:nodes=120,nodes=60"]))


def _config_value(draw, key):
    """A value for schema ``key``: valid (often), at an edge, or junk."""
    how = draw(st.integers(0, 9))
    if how <= 4:
        if key.choices is not None:
            choices = list(key.choices.values if isinstance(key.choices, Ref) else key.choices)
            return draw(st.sampled_from(choices))
        if key.range is not None and isinstance(key.like, int) and not isinstance(key.like, bool):
            lo = int(key.range.lo or 0) + int(key.range.lo_open)
            return draw(st.integers(lo, lo + (2 if key.name in ("end", "sample_coverage")
                                              else 16)))
        return key.default if key.default is not None else draw(scalars)
    if how <= 6 and key.range is not None:
        r = key.range
        return draw(st.sampled_from([v for v in (r.lo, r.hi, -1, 0, 10**9) if v is not None]))
    return draw(junk)


def _section(draw, section, size=3):
    names = draw(st.lists(st.sampled_from(section.names), max_size=size, unique=True))
    out = {n: _config_value(draw, section[n]) for n in names}
    if draw(st.integers(0, 9)) == 0:
        out[draw(text)] = draw(scalars)
    return out


def config(draw) -> dict:
    cfg = {}
    for name in ("network", "params"):
        if draw(st.booleans()):
            cfg[name] = _section(draw, SCHEMA[name])
    if draw(st.booleans()):
        phase = {"end": 1, "sampler": "rw", "num_root": 20, "depth": 2}
        cfg["phase"] = [{**phase, **_section(draw, SCHEMA["phase"], 2)}]
    for name in ("shadow", "distributed"):
        if draw(st.integers(0, 3)) == 0:
            cfg[name] = _section(draw, SCHEMA[name])
            if name == "shadow" and draw(st.booleans()):
                kind = draw(st.sampled_from(sorted(EXTRACTORS)))
                cfg[name]["extractors"] = [{"kind": kind, **_section(draw, EXTRACTORS[kind], 2)}]
            if name == "shadow" and "cache_dir" in cfg[name]:
                cfg[name]["cache_dir"] = draw(st.sampled_from(["auto", "none", "cache"]))
    if draw(st.integers(0, 9)) == 0:
        cfg[draw(text)] = draw(junk)
    return cfg


def set_item(draw) -> str:
    section = draw(st.sampled_from(sorted(SCHEMA)))
    key = SCHEMA[section][draw(st.sampled_from(SCHEMA[section].names))]
    value = _config_value(draw, key)
    if section == "shadow" and key.name == "cache_dir":
        value = draw(st.sampled_from(["none", "cache"]))
    head = draw(st.sampled_from([f"{section}.{key.name}", f"{section}.{key.name}",
                                 f"phase.0.{key.name}", f"{section}", f"{section}..x",
                                 key.name, f"{section}.{key.name}.x"]))
    shown = yaml.safe_dump(value, default_flow_style=True, width=10**6).strip()
    shown = shown.removesuffix("\n...").removesuffix("...").strip()
    return draw(st.sampled_from([f"{head}={shown}", f"{head}={shown}", f"{head}=", head]))


STRINGS = {
    "method": ["hp", "gp", "rp", "metis", "random", "kahip", "gp:cut", "RP"],
    "methods": ["hp,gp,rp", "rp", "gp:cut,gp:vol", "rp,rp", "rp,", ",", "hp:cut", "x"],
    "preset": ["deterministic", "default", "quality", "highest_quality", "fast"],
    "weights": ["degree", "nodes", "edges"], "gp_objective": ["vol", "cut", "x"],
    "sampler": ["rw", "node", "edge", "mrw", "full", "bfs"],
    "budget": ["num_root=10,depth=2", "num_root=10", "size_subgraph=20", "num_root=-1,depth=2",
               "num_root=x,depth=2", "num_root=10,depth=2,depth=3", "=", "rw.num_root=5",
               "node.size_subgraph=20", "mrw.size_frontier=5", "edge.size_subg_edge=0"],
    "samplers": ["rw", "rw,node,edge,mrw", "full", "rw,,node", "x", "rw,rw"],
    "threads": ["1", "1,2", "0", "-1", "1,,2", "4096", "x"],
    "scales": ["6", "6,7", "0", "41", "6,,7", "x", "-3"],
    "eval_scales": ["6", "7", "x", "", "6,6"],
    "extractors": ["khop", "ppr", "ppr,khop", "khop,khop", "bfs", ""],
    "param": ["khop.budget=5", "ppr.k=10", "ppr.alpha=0", "khop.depth=-1", "ppr.eps=nan",
              "x.y=1", "khop", "ppr.k=1e9"],
    "arch": ["1-0-1-0", "1-1", "64-64", "", "a", "1--1", "-1", "0", "1-" * 40 + "1"],
    "to": ["graphsaint", "ogb", "csv", ""], "kind": ["planted", "kronecker"],
    "device": ["cpu", "cuda", "cuda:0", "cuda:7", "auto", "mps", "meta", "", "cpu:0", "xla"],
    "id_column": ["id", "target", "0", "nope", ""], "label_column": ["target", "id", "1", "x"],
    "adjacency": ["A", "network", ""], "features_source": ["structural", "onehot", "x"],
    "rdzv": ["127.0.0.1:0", "127.0.0.1:29999", "bad", ":", "127.0.0.1:99999", "[::1]:1"],
    "local_addr": ["127.0.0.1", "0.0.0.0", "x", ""],
}
