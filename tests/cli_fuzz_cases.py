"""Hypothesis strategies for the CLI fuzz: a :class:`Case` is a command line of one of the CLI's
commands (every leaf of the argparse tree of :func:`scalegnn.cli.build_parser`, and the command
families alone) with generated flags, the files it names (private copies of the fixtures of
``cli_fuzz_files``, damaged or not, and generated YAML configs) and the paths it may write.

Each flag of a command is left out, given a cheap valid value (:data:`BASE`: tiny data, one
epoch, small benchmarks, so that most cases that run finish in a second or two) or fuzzed: a
numeric flag by its :class:`~scalegnn.config.flags.Num` range (edges, one past them, zero,
negatives, huge, NaN, junk text), a path by a fixture, a damaged fixture, a missing path or a
folder, ``--config`` by a YAML file of schema keys with valid, edge and junk values, ``--set``
by ``KEY=VALUE`` items of the same, other strings from a pool of plausible and junk values.
Generated text never holds ``/`` or NUL, so no path leaves the case folder.
"""

from __future__ import annotations

import argparse
import itertools
from dataclasses import dataclass, field

import yaml
from hypothesis import strategies as st

from cli_fuzz_files import FIXTURES, FileSpec
from cli_fuzz_values import STRINGS, config, num_values, ops, set_item, spec, text
from scalegnn import cli
from scalegnn.config.flags import IntList, Num

# flags whose valid values cost time in proportion (epochs, repeats, waits): kept small
COSTLY = {"epochs", "repeat", "repeats", "iterations", "warmup", "count", "min_batches",
          "eval_batches", "targets", "rdzv_timeout", "timeout", "max_restarts", "coverage",
          "budget"}
OUTPUT_DESTS = {"out", "dst", "json", "plot", "cache_dir", "data_dir", "resume"}
BENCH = {"graph": "kronecker:6:4", "dataset": "kronecker:6:4", "threads": "1", "repeat": "1",
         "repeats": "1", "hidden": "16", "size_subgraph": "40", "size_frontier": "10"}
BASE = {
    ("train",): {"data": "gs", "epochs": "1", "no_progress": True, "threads": "1"},
    ("dist-train",): {"nprocs": "2", "data": "gs", "plan": "plan", "epochs": "1",
                      "no_progress": True, "threads": "1", "rdzv_timeout": "1"},
    ("compare",): {"data": "gs", "methods": "full", "budget": "0.1", "no_progress": True,
                   "threads": "1"},
    ("predict",): {"run_dir": "run", "out": "p.csv"},
    ("embed",): {"run_dir": "run", "out": "e.npy"},
    ("report",): {"run_dir": "run"},
    ("data", "info"): {"spec": "gs"},
    ("data", "synth"): {"kind": "planted", "out": "syn", "nodes": "60", "scale": "6",
                        "features": "8", "labels": "4", "edge_factor": "4"},
    ("data", "convert"): {"src": "gs", "to": "graphsaint", "dst": "conv"},
    ("partition", "make"): {"data": "gs", "parts": "2", "method": "rp", "out": "plan_out"},
    ("partition", "compare"): {"data": "gs", "parts": "2", "methods": "rp,gp"},
    ("partition", "shp"): {"data": "gs", "parts": "2", "budget": "num_root=10,depth=2",
                           "min_batches": "4", "eval_batches": "4", "theta": "0.5"},
    ("bench", "sample"): {**BENCH, "count": "2", "coverage": "1", "samplers": "rw"},
    ("bench", "spmm"): {**BENCH, "n": "300", "f": "8", "no_membw": True},
    ("bench", "step"): BENCH,
    ("bench", "epoch"): {**BENCH, "scale": "6", "edge_factor": "4", "features": "8",
                         "labels": "4", "epochs": "1"},
    ("bench", "eval"): {**BENCH, "batch_rows": ["64"]},
    ("bench", "extract"): {**BENCH, "data": "gs", "targets": "16", "batch": "8",
                           "extractors": "khop"},
    ("bench", "scale"): {**BENCH, "scales": "6", "iterations": "1", "warmup": "0",
                         "features": "8", "edge_factor": "4"},
}


@dataclass
class Case:
    argv: list
    files: list = field(default_factory=list)
    outputs: list = field(default_factory=list)

    def describe(self) -> str:
        damaged = [f"{f.alias}<-{f.source[0]}:{str(f.source[1])[:40]}{f.ops}" for f in self.files
                   if f.ops or f.source[0] != "fixture"]
        return f"argv={self.argv!r} files={damaged}"


def _commands(parser, path=()):
    """(path, parser) of every command and command family of the argparse tree."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if path:
        yield path, parser
    for action in subs:
        for name, sub in action.choices.items():
            yield from _commands(sub, (*path, name))


COMMANDS = dict(_commands(cli.build_parser()))
LEAVES = sorted(p for p, parser in COMMANDS.items() if not any(
    isinstance(a, argparse._SubParsersAction) for a in parser._actions))


# ----------------------------------------------------------------------------- one case
class Ctx:
    """The files and outputs of the case being drawn."""

    def __init__(self):
        self.files = [FileSpec("gs", ("fixture", "gs"))]   # the run fixture's recorded data
        self.outputs = ["cache"]   # shadow.cache_dir values name it
        self.counter = itertools.count()

    def fixture(self, name: str, damage: list) -> str:
        stem, dot, suffix = name.partition(".")
        alias = f"{stem}{next(self.counter)}{dot}{suffix}"
        self.files.append(FileSpec(alias, ("fixture", name), damage))
        return alias

    def write(self, suffix: str, content) -> str:
        alias = f"w{next(self.counter)}{suffix}"
        kind = "bytes" if isinstance(content, bytes) else "text"
        self.files.append(FileSpec(alias, (kind, content)))
        return alias


def _path_to(ctx: Ctx, draw, names, damage=0.5):
    """A copy of one of the fixtures ``names`` (damaged with probability ``damage``), a
    missing path, an empty folder or a junk name."""
    how = draw(st.integers(0, 9))
    if how <= 6:
        name = draw(st.sampled_from(names))
        return ctx.fixture(name, draw(ops) if draw(st.floats(0, 1)) < damage else [])
    if how == 7:
        return ctx.fixture(draw(st.sampled_from(FIXTURES)), [])
    return draw(st.sampled_from(["nope", "nope.npz", "", ".", "empty0"]) | text)


DATASETS = ["gs", "csv", "edges.txt", "het.npz", "spec.yml", "gs", "gs"]


def _value(draw, ctx: Ctx, command: tuple, action) -> str | list:
    """A fuzzed value for ``action`` of ``command``."""
    dest = action.dest
    if isinstance(action.type, Num):
        return draw(num_values(action.type, dest in COSTLY))
    if isinstance(action.type, IntList):
        return draw(st.sampled_from(["2", "1", "2,3", "", "0", "-1", "2,,3", "99999", "2,2",
                                     "3", "1e3", "x"]) | text)
    if dest in ("data", "spec", "src", "test_data", "dataset", "graph") and \
            command != ("bench", "epoch"):
        if draw(st.booleans()):
            return spec(draw)
        return _path_to(ctx, draw, DATASETS + ["run", "plan", "random.bin"])
    if dest == "data":  # bench epoch: a GraphSAINT folder, built there if it does not exist
        path = _path_to(ctx, draw, ["gs"])
        if path not in {f.alias for f in ctx.files}:
            ctx.outputs.append(path)
        return path
    if dest == "config":
        if draw(st.integers(0, 2)) == 0:
            return _path_to(ctx, draw, ["config.yml", "shadow.yml"], damage=0.7)
        return ctx.write(".yml", yaml.safe_dump(config(draw)) if draw(st.integers(0, 5))
                         else draw(st.text(max_size=40)))
    if dest == "overrides":
        return [set_item(draw) for _ in range(draw(st.integers(1, 3)))]
    if dest in ("run_dir", "resume"):
        return _path_to(ctx, draw, ["run", "run", "run", "plan", "gs", "empty"], damage=0.7)
    if dest == "plan":
        return _path_to(ctx, draw, ["plan", "plan", "run", "empty"], damage=0.7)
    if dest == "nodes":
        if draw(st.booleans()):
            return _path_to(ctx, draw, ["ids.npy", "ids.txt"], damage=0.7)
        return ctx.write(".txt", draw(st.text(max_size=30)))
    if dest in ("features", "labels") and not action.type:
        return _path_to(ctx, draw, ["ids.npy", "csv", "edges.txt", "random.bin"], damage=0.5) \
            if draw(st.booleans()) else draw(st.sampled_from(["A", "local_info:1", "x:y", ""]))
    if dest in OUTPUT_DESTS:
        return _output(draw, ctx, command, dest)
    if action.choices:
        return draw(st.sampled_from(list(action.choices)) | text)
    if action.nargs == "+":
        return draw(st.lists(st.sampled_from(["64", "0", "-1", "x", "1e9", "2147483648"]),
                             min_size=1, max_size=3))
    return draw(st.sampled_from(STRINGS.get(dest, ["x"])) | text)


def _output(draw, ctx: Ctx, command: tuple, dest: str) -> str:
    how = draw(st.integers(0, 9))
    if how <= 4:
        suffix = {"json": ".json", "plot": ".png"}.get(dest, "")
        if command in (("predict",), ("embed",)):
            suffix = draw(st.sampled_from([".npy", ".csv", ".parquet", ".txt", ""]))
        if command == ("report",):
            suffix = draw(st.sampled_from([".png", ".html", ".pdf", ""]))
        if command == ("partition", "compare") and dest == "out":
            suffix = ".json"
        path = f"o{next(ctx.counter)}{suffix}"
        if draw(st.integers(0, 4)) == 0:
            path = draw(st.sampled_from(["random.bin", "empty0", "new"])) + "/" + path
            ctx.outputs.append(path.split("/")[0])
    elif how <= 7:
        path = ctx.fixture(draw(st.sampled_from(["run", "plan", "gs", "empty", "random.bin"])),
                           draw(ops) if draw(st.booleans()) else [])
    else:
        path = draw(st.sampled_from(["", "."]) | text)
    if path == "." and dest == "data_dir":  # a cache folder may be the working folder itself
        ctx.outputs.append(".")
    else:
        ctx.outputs.append(path if path not in ("", ".") else "")
    return path


@st.composite
def cases(draw) -> Case:
    """One command line with its files (see the module docstring)."""
    ctx = Ctx()
    if draw(st.integers(0, 30)) == 0:
        argv = draw(st.sampled_from([["--version"], ["--help"], ["nonsense"], ["data"], ["bench"],
                                     ["partition"], ["data", "--help"], ["-x"]]))
        return Case(argv, ctx.files, ctx.outputs)
    command = draw(st.sampled_from(LEAVES))
    parser = COMMANDS[command]
    base = BASE.get(command, {})
    options, positionals = [], []
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
            continue
        mode = draw(st.integers(0, 9))
        if action.dest in base:  # a benchmark's defaults are its full size (compare's: six
            # methods): never left out
            keep = mode <= 6 or (mode == 9 and command[0] in ("bench", "compare"))
            mode = "base" if keep else "fuzz" if mode <= 8 else "omit"
        elif not action.option_strings and action.nargs != "?":
            mode = "fuzz" if mode else "omit"
        else:
            mode = "fuzz" if mode <= 1 else "omit"
        if mode == "omit":
            continue
        value = base[action.dest] if mode == "base" else _value(draw, ctx, command, action)
        if mode == "base" and action.dest in ("run_dir", "resume", "plan", "spec", "src",
                                              "data") and value in ("run", "plan", "gs"):
            value = ctx.fixture(value, [])
        if mode == "base" and action.dest in OUTPUT_DESTS:
            ctx.outputs.append(value)
        if not action.option_strings:
            positionals.append(value)
            continue
        flag = draw(st.sampled_from(action.option_strings))
        if action.nargs == 0:
            if value is not False:
                options.append([flag])
            continue
        items = value if isinstance(value, list) else [value]
        if isinstance(action, argparse._AppendAction):
            for item in items:
                options.append(_flag(draw, flag, item))
        elif action.nargs == "+":
            options.append([flag, *items])
        else:
            options.append(_flag(draw, flag, items[0]))
    options = draw(st.permutations(options)) if len(options) < 8 else options
    argv = [*command, *itertools.chain.from_iterable(options), *positionals]
    argv = _mutate(draw, argv)
    _note_outputs(command, argv, ctx)
    return Case(argv, ctx.files, ctx.outputs)


def _flag(draw, flag: str, value: str) -> list[str]:
    if value.startswith("-") or draw(st.integers(0, 5)) == 0:
        return [f"{flag}={value}"]
    return [flag, value]


def _mutate(draw, argv: list[str]) -> list[str]:
    """Now and then: a token dropped, repeated, or a junk one inserted."""
    how = draw(st.integers(0, 19))
    if how > 2 or len(argv) < 2:
        return argv
    i = draw(st.integers(1, len(argv) - 1))
    if how == 0:
        return argv[:i] + argv[i + 1:]
    if how == 1:
        return argv[:i] + [argv[i]] + argv[i:]
    tok = draw(st.sampled_from(["--nope", "-x", "--", "--out", "—out", "--set", "-"]) | text)
    return argv[:i] + [tok] + argv[i:]


def _note_outputs(command: tuple, argv: list[str], ctx: Ctx) -> None:
    """What else the command may write: a run directory's default folder, the run a report or
    a resumed run writes into, the plan dist-train --parts writes."""
    if command in (("train",), ("dist-train",), ("compare",)):
        ctx.outputs.append("runs")
    if command == ("report",) or (command == ("dist-train",) and any(
            a.startswith("--parts") for a in argv)):
        for i, a in enumerate(argv):
            if a in ("--plan",) and i + 1 < len(argv):
                ctx.outputs.append(argv[i + 1])
            elif a.startswith("--plan="):
                ctx.outputs.append(a.split("=", 1)[1])
        if command == ("report",):
            ctx.outputs.extend(a for a in argv[1:] if not a.startswith("-"))
