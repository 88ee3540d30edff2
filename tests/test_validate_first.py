"""Every value is checked before any work: the memory estimate counts the model from shapes (the
meta device) without allocating it, running out of memory anyway is one line naming the setting,
every config value (shaDow extractors included) is checked when the config is read, and every
numeric flag of the command line is checked when the arguments are parsed.

One-line cases go through the real CLI (``scalegnn.cli.main``) and
:func:`bad_input_helpers.check_one_line_exit_2`.
"""

from __future__ import annotations

import inspect
import json

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from bad_input_helpers import Case, check_one_line_exit_2, registrar, write
from conftest import make_tiny_dataset
from scalegnn import memory
from scalegnn.cli import build_parser, main
from scalegnn.config import Config
from scalegnn.config.flags import IntList, Num, numeric_actions
from scalegnn.config.schema import EXTRACTORS
from scalegnn.data import Dataset
from scalegnn.data.graphsaint import save_graphsaint
from scalegnn.engine import memory_guard
from scalegnn.errors import ConfigError
from scalegnn.shadow.extract import KHopExtractor
from scalegnn.shadow.mode import EXTRACTOR_KEYS
from scalegnn.shadow.ppr import PPRExtractor
from scalegnn.train import trainer as trainer_module
from scalegnn.train.build import build_run_model, shape_run_model
from scalegnn.train.modes import mode_for

CASES: list[Case] = []
case = registrar(CASES)


def train(tmp, *extra) -> list:
    return ["train", "--data", "planted:nodes=100", "--out", str(tmp / "run"), "--no-progress",
            *extra]


# ----------------------------------------------------------------------------- model shapes
NETWORKS = [
    ("saint", ["network.arch=1-0-1-0"]),
    ("saint mean order 2", ["network.arch=2-0-1", "network.aggr=mean", "network.bias=bias"]),
    ("saint no bias", ["network.arch=1-1", "network.bias=none"]),
    ("gcn", ["network.model=gcn", "network.arch=1-0-1"]),
    ("gcn layers", ["network.model=gcn", "network.layers=3", "network.bias=norm"]),
    ("gat", ["network.model=gat", "network.heads=2", "network.arch=1-1"]),
    ("mixhop", ["network.model=mixhop", "network.powers=0-1-3", "network.arch=1-0"]),
    ("jk concat", ["network.model=jk", "network.layers=3", "network.jk_mode=concat"]),
    ("jk max", ["network.model=jk", "network.layers=2", "network.jk_mode=max"]),
    ("gin", ["network.model=gin", "network.layers=2"]),
    ("gin ones", ["network.model=gin", "network.arch=1-0", "network.gin_weights=ones"]),
]
SHADOW = [
    ("shadow khop", {"extractors": [{"kind": "khop", "depth": 2, "budget": 3}]}, []),
    ("shadow ensemble, center+mean, concat",
     {"extractors": [{"kind": "ppr", "k": 8}, {"kind": "khop", "depth": 1, "budget": 4}],
      "readout": "center+mean", "residual": "concat"}, []),
    ("shadow gat sort", {"extractors": {"kind": "khop", "depth": 1}, "readout": "sort:3",
                         "residual": "max"}, ["network.model=gat", "network.heads=4"]),
    ("shadow jk", {"extractors": [{"kind": "ppr", "k": 6}]},
     ["network.model=jk", "network.layers=2"]),
    ("shadow mixhop", {"extractors": [{"kind": "khop", "budget": 2}]},
     ["network.model=mixhop", "network.powers=0-2"]),
    ("shadow gin", {"extractors": [{"kind": "khop", "budget": 2}]}, ["network.model=gin"]),
    ("shadow gcn", {"extractors": [{"kind": "khop", "budget": 2}]}, ["network.model=gcn"]),
    ("shadow link with labels", {"extractors": [{"kind": "khop", "depth": 1, "budget": 3}],
                                 "task": "link", "pair_labels": 2, "readout": "hadamard+mean",
                                 "negatives": 20},
     []),
    ("shadow link labels only", {"extractors": [{"kind": "khop", "depth": 1, "budget": 3}],
                                 "task": "link", "pair_labels": 1, "node_features": False,
                                 "negatives": 20,
                                 "readout": "concat+max"},
     []),
]


def _config(sets, shadow=None) -> Config:
    cfg = Config.builtin().override(["network.dim=8", *sets])
    cfg.phases = [{"end": 1, "sampler": "rw", "num_root": 10, "depth": 2}]
    if shadow is not None:
        cfg.params["transductive"] = True
        cfg.sections["shadow"] = dict(shadow)
    return cfg.validate()


def _count(model) -> int:
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("sets, shadow", [(s, None) for _, s in NETWORKS] +
                         [(s, sh) for _, sh, s in SHADOW],
                         ids=[n for n, _ in NETWORKS] + [n for n, _, _ in SHADOW])
@pytest.mark.parametrize("multilabel", [False, True])
def test_shape_count_equals_the_real_model(sets, shadow, multilabel):
    """The estimate's parameter count (a model on the meta device) is the real model's, for every
    family and shaDow-GNN configuration; the model term is 16 bytes per parameter."""
    ds = make_tiny_dataset(multilabel=multilabel)
    cfg = _config(sets, shadow)
    shape = shape_run_model(ds, cfg)
    assert all(p.device.type == "meta" for p in shape.parameters())
    real = build_run_model(mode_for(ds, cfg), cfg)
    assert _count(shape) == _count(real)
    assert [p.shape for p in shape.parameters()] == [p.shape for p in real.parameters()]
    est = memory_guard.estimate_training_memory(ds, cfg, shape)
    assert est.terms["model and optimizer"] == 16 * _count(real)


def test_estimate_allocates_nothing_and_leaves_the_random_stream():
    """``network.dim: 100000`` needs ~900 GiB of parameters: the estimate says so without
    allocating them (the guard used to build the model, and died in the allocator)."""
    ds = make_tiny_dataset()
    cfg = _config(["network.dim=100000"])
    state = torch.random.get_rng_state()
    before = memory.rss_bytes()
    est = memory_guard.estimate_training_memory(ds, cfg)
    assert memory.rss_bytes() - before < 200 << 20
    assert torch.equal(state, torch.random.get_rng_state())
    assert est.largest[0] == "model and optimizer" and est.total > 500 << 30


@case("the guard refuses network.dim=100000", "memory: training needs", "network.dim=100000",
      "--force")
def _(tmp, mp):
    mp.setattr(memory_guard, "available_memory", lambda: 64 << 30)
    return train(tmp, "--set", "network.dim=100000")


def _failing_build(error):
    def build(*_a, **_kw):
        raise error
    return build


@case("--force: the allocator fails", "out of memory allocating 74.5 GiB", "network.dim=100000")
def _(tmp, mp):
    mp.setattr(trainer_module, "build_run_model", _failing_build(RuntimeError(
        "[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate "
        "memory: you tried to allocate 80000000000 bytes. Error code 12 (Cannot allocate memory)")))
    return train(tmp, "--set", "network.dim=100000", "--force")


@case("--force: MemoryError", "memory: out of memory while training", "network.dim=100000")
def _(tmp, mp):
    mp.setattr(trainer_module, "build_run_model", _failing_build(MemoryError()))
    return train(tmp, "--set", "network.dim=100000", "--force")


@case("--force: shaDow batch out of memory", "out of memory", "shadow.batch_size=100000")
def _(tmp, mp):
    mp.setattr(trainer_module, "build_run_model", _failing_build(MemoryError("std::bad_alloc")))
    write(tmp / "c.yml", "shadow:\n  extractors: [{kind: khop, depth: 2, budget: -1}]\n"
                         "  batch_size: 100000\n")
    return train(tmp, "--config", str(tmp / "c.yml"), "--force")


def test_other_runtime_errors_pass_unchanged(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(trainer_module, "build_run_model",
                        _failing_build(RuntimeError("a bug, not memory")))
    with pytest.raises(RuntimeError, match="a bug"):
        main(train(tmp_path, "--epochs", "1"))


# ----------------------------------------------------------------------------- config values
SHADOW_CONFIGS = [
    ("ppr k: many", "[{kind: ppr, k: many}]", "shadow.extractors[0].k", "'many'"),
    ("ppr k: null", "[{kind: ppr, k: null}]", "shadow.extractors[0].k", "None"),
    ("khop budget: .inf", "[{kind: khop, budget: .inf}]", "shadow.extractors[0].budget", "inf"),
    ("khop budget: 0", "[{kind: khop, budget: 0}]", "shadow.extractors[0].budget", "MLP"),
    ("khop budget: -2", "[{kind: khop, budget: -2}]", "shadow.extractors[0].budget", "-2"),
    ("khop depth: 10**9", "[{kind: khop, depth: 1000000000}]", "extractors[0].depth", "64"),
    ("khop depth: true", "[{kind: khop, depth: true}]", "shadow.extractors[0].depth", "True"),
    ("ppr alpha: 0", "[{kind: khop}, {kind: ppr, alpha: 0}]", "shadow.extractors[1].alpha"),
    ("ppr eps: 1e-300", "[{kind: ppr, eps: 1.0e-300}]", "shadow.extractors[0].eps"),
    ("ppr threshold: .nan", "[{kind: ppr, threshold: .nan}]", "extractors[0].threshold"),
    ("unknown key", "[{kind: khop, k: 3}]", "shadow.extractors[0].k", "unknown key"),
    ("unknown kind", "[{kind: bfs}]", "shadow.extractors[0].kind", "'bfs'"),
    ("kind missing", "[{depth: 2}]", "shadow.extractors[0].kind", "None"),
    ("empty list", "[]", "shadow.extractors", "non-empty"),
    ("not a mapping", "[3]", "shadow.extractors[0]", "mapping"),
    ("too many", "[" + ", ".join(["{kind: khop}"] * 65) + "]", "shadow.extractors", "64"),
]
for _name, _exts, *_needles in SHADOW_CONFIGS:
    CASES.append(Case(f"shadow {_name}", lambda tmp, mp, e=_exts: train(
        tmp, "--config", str(write(tmp / "c.yml", f"shadow:\n  extractors: {e}\n"))),
        tuple(_needles)))

CONFIG_SETS = [
    ("shadow.split_seed=-1", "shadow.split_seed", "-1"),
    ("distributed.timeout=1e300", "distributed.timeout", "10000000"),
    ("distributed.parts=1e15", "distributed.parts"),
    ("shadow.pairs_per_epoch=1e30", "shadow.pairs_per_epoch"),
    ("network.powers=0-1-1000000000", "network.powers", "64"),
    ("network.powers=[0, 1.5]", "network.powers", "1.5"),
    ("network.arch=[1, 0.5]", "network.arch", "0.5"),
    ("network.arch=[1, true]", "network.arch", "True"),
    ("phase.size_subgraph=100", "phase[0].size_subgraph", "sampler rw does not take it"),
    ("phase.eta=2", "phase[0].eta", "does not take it"),
    ("shadow.task=link", "shadow.readout", "'center'", "pair task"),
    ("shadow.readout=concat", "shadow.readout", "only for pair tasks"),
    ("params.sample_coverage=0", "params.sample_coverage", "> 0"),
]
for _assign, *_needles in CONFIG_SETS:
    CASES.append(Case(f"--set {_assign}", lambda tmp, mp, a=_assign: train(tmp, "--set", a),
                      tuple(_needles)))


@case("an mrw frontier larger than its subgraph", "phase[0].size_frontier", "size_subgraph")
def _(tmp, mp):
    write(tmp / "c.yml", "phase: [{end: 1, sampler: mrw, size_subgraph: 10, size_frontier: 20}]\n")
    return train(tmp, "--config", str(tmp / "c.yml"))


@case("a rw phase without depth", "phase[0].depth", "missing")
def _(tmp, mp):
    write(tmp / "c.yml", "phase: [{end: 1, sampler: rw, num_root: 10}]\n")
    return train(tmp, "--config", str(tmp / "c.yml"))


def test_extractor_schema_matches_the_extractors():
    """The schema's extractor keys are the ones the extractors take, with their defaults."""
    assert set(EXTRACTORS) == set(EXTRACTOR_KEYS)
    for kind, cls in (("khop", KHopExtractor), ("ppr", PPRExtractor)):
        section = EXTRACTORS[kind]
        assert set(section.names) == set(EXTRACTOR_KEYS[kind])
        params = inspect.signature(cls).parameters
        for key in section.keys:
            assert isinstance(key.default, EXTRACTOR_KEYS[kind][key.name])
            assert params[key.name].default == key.default, (kind, key.name)


def test_checked_extractors_are_typed_and_a_list():
    with pytest.raises(ConfigError, match=r"shadow.extractors\[0\].alpha"):
        Config.from_dict({"shadow": {"extractors": {"kind": "ppr", "k": "12", "alpha": 1}}})
    cfg = Config.from_dict({"shadow": {"extractors": {"kind": "ppr", "k": "12", "eps": 1}}})
    assert cfg.section("shadow")["extractors"] == [{"kind": "ppr", "k": 12, "eps": 1.0}]


# ----------------------------------------------------------------------------- numeric flags
NUMERIC = [(path, action) for path, action in numeric_actions(build_parser())]


def test_every_numeric_flag_is_checked():
    """No int or float flag escapes the range check (scalegnn.config.flags)."""
    bare = [f"{' '.join(path)} {action.option_strings}" for path, action in NUMERIC
            if not isinstance(action.type, (Num, IntList))]
    assert not bare, bare
    assert all(action.type.flag for _, action in NUMERIC)
    assert len(NUMERIC) > 80


def _bad_values(action) -> list[str]:
    if isinstance(action.type, IntList):
        lo = action.type.range.lo
        return [str(lo - 1), "-1", "4,,8", "x", "1e3", "3,3"]
    r, whole = action.type.range, action.type.kind is int
    out = ["nan", "abc", "1" * 5000]
    if r.lo is not None:
        out.append(str(r.lo if r.lo_open else r.lo - 1))
    if r.hi is not None:
        out.append(str(r.hi if r.hi_open else (r.hi + 1 if whole else r.hi * 10 + 1)))
    if not whole:
        out += ["inf", "-inf"]
    return out


@pytest.mark.parametrize("path, action", NUMERIC,
                         ids=[f"{' '.join(p)} {a.option_strings[-1]}" for p, a in NUMERIC])
def test_bad_numbers_are_one_line_before_any_work(path, action, capsys, tmp_path,
                                                  monkeypatch):
    """Negative, zero, huge, NaN and non-numbers: exit 2 and one line naming the flag, from the
    parser itself (nothing is read, loaded or written)."""
    monkeypatch.chdir(tmp_path)
    flag = max(action.option_strings, key=len)
    for value in _bad_values(action):
        arg = f"{flag}={value}" if flag.startswith("--") else f"{flag}{value}"
        assert main([*path, arg]) == 2, (flag, value)
        out, err = capsys.readouterr()
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"scalegnn: error: {flag}"), (value, err)
        assert not out and len(lines[0]) <= 300
    assert list(tmp_path.iterdir()) == []


# ----------------------------------------------------------------------------- partition
PARTITION = [
    ("shp --parts -1", ["shp", "--parts", "-1"], "--parts", "[2,"),
    ("shp --parts 1", ["shp", "--parts", "1"], "--parts", "[2,"),
    ("make --parts 0", ["make", "--parts", "0", "--report"], "--parts", "[1,"),
    ("make --parts 2,4", ["make", "--parts", "2,4", "--report"], "--parts", "one integer"),
    ("make --parts 4,,8", ["make", "--parts", "4,,8", "--report"], "--parts", "one integer"),
    ("compare --parts 4,,8", ["compare", "--parts", "4,,8"], "--parts", "empty item"),
    ("shp --parts 4,,8", ["shp", "--parts", "4,,8"], "--parts", "empty item"),
    ("compare --parts 4,", ["compare", "--parts", "4,"], "--parts", "empty item"),
    ("compare --parts 4,4", ["compare", "--parts", "4,4"], "--parts", "twice"),
    ("make more parts than nodes", ["make", "--parts", "101", "--report"], "--parts", "100 nodes"),
    ("compare more parts than nodes", ["compare", "--parts", "2,200"], "--parts", "100 nodes"),
    ("shp more parts than nodes", ["shp", "--parts", "200"], "--parts", "100 nodes"),
    ("shp Hoeffding bound too large", ["shp", "--parts", "4000", "--theta", "0.001"],
     "--parts 4000", "--theta"),
    ("shp budget below range", ["shp", "--parts", "2", "--budget", "num_root=-5,depth=2"],
     "--budget num_root", "-5"),
    ("shp budget of another sampler", ["shp", "--parts", "2", "--sampler", "node"],
     "--budget num_root", "sampler node"),
    ("shp budget missing a key", ["shp", "--parts", "2", "--budget", "num_root=5"],
     "--budget", "depth"),
    ("shp unknown sampler", ["shp", "--parts", "2", "--sampler", "bfs"], "--sampler", "'bfs'"),
    ("shp unknown preset", ["shp", "--parts", "2", "--preset", "fast"], "--preset", "'fast'"),
    ("make unknown weights", ["make", "--parts", "2", "--report", "--weights", "edges"],
     "--weights", "'edges'"),
]
for _name, _argv, *_needles in PARTITION:
    CASES.append(Case(f"partition {_name}", lambda tmp, mp, a=_argv: [
        "partition", a[0], "planted:nodes=100", *a[1:]], tuple(_needles)))


def _strict_json(line: str):
    def refuse(name):
        raise AssertionError(f"{name} in JSON output: {line}")
    return json.loads(line, parse_constant=refuse)


def test_shp_on_an_edgeless_graph_writes_null_not_nan(tmp_path, capsys):
    """A volume ratio over zero volume is undefined: JSON null (valid JSON), never NaN."""
    pytest.importorskip("mtkahypar")
    n = 40
    ds = Dataset.from_arrays(sp.csr_matrix((n, n), dtype=np.float32), np.arange(n) % 3,
                             np.ones((n, 4), np.float32))
    save_graphsaint(ds, tmp_path / "edgeless")
    argv = ["partition", "shp", str(tmp_path / "edgeless"), "--parts", "2", "--min-batches", "4",
            "--eval-batches", "4", "--budget", "num_root=5,depth=1", "--json",
            str(tmp_path / "t.json")]
    assert main(argv) == 0
    lines = [_strict_json(line) for line in capsys.readouterr().out.splitlines()]
    assert lines[0]["hp_volume"] == 0 and lines[0]["shp_vs_hp"] is None
    assert lines[-1] == {"geomean_shp_vs_hp": None}
    table = _strict_json((tmp_path / "t.json").read_text())
    assert table["rows"][0]["shp_vs_hp"] is None and table["geomean_shp_vs_hp"] is None


# ----------------------------------------------------------------------------- --split
@case("--split 3 on data with one split", "--split 3", "one split")
def _(tmp, mp):
    return ["data", "info", "planted:nodes=100", "--split", "3"]


@case("--split 3 of 2 given splits", "split 3", "2 splits")
def _(tmp, mp):
    n = 30
    rng = np.random.default_rng(0)
    masks = {f"{k}_masks": np.zeros((2, n), bool) for k in ("train", "val", "test")}
    for s in range(2):
        for i, k in enumerate(("train", "val", "test")):
            masks[f"{k}_masks"][s, i::3] = True
    np.savez(tmp / "h.npz", node_features=rng.random((n, 3)).astype(np.float32),
             node_labels=np.arange(n) % 2, edges=np.stack([np.arange(n - 1), np.arange(1, n)], 1),
             **masks)
    return ["data", "info", str(tmp / "h.npz"), "--split", "3"]


# ----------------------------------------------------------------------------- the one test
@pytest.mark.parametrize("c", CASES, ids=[c.name for c in CASES])
def test_one_line_exit_2(c, tmp_path, monkeypatch, capsys):
    check_one_line_exit_2(c, tmp_path, monkeypatch, capsys)
