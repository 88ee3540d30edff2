"""The reference pages generated from the code (``docs/generate.py``) are current and complete,
and the config schema they show is the one validation enforces."""

from __future__ import annotations

import argparse
import importlib.util
import math
import re
from pathlib import Path

import pytest

from scalegnn.cli import build_parser
from scalegnn.config import NETWORK_DEFAULTS, PARAM_DEFAULTS, PHASE_KEYS, SECTIONS, Config
from scalegnn.config.schema import EXTRACTORS, SCHEMA, Key, Ref, Section
from scalegnn.errors import ConfigError
from scalegnn.sampling import PHASE_SAMPLERS as IMPLEMENTED

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def gen():
    spec = importlib.util.spec_from_file_location("docs_generate", ROOT / "docs" / "generate.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def pages(gen):
    return gen.render()


def sections_of(text: str) -> dict[str, str]:
    """``## heading`` -> the text under it."""
    parts = re.split(r"^## (.+)$", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


# ----------------------------------------------------------------------------- generation
def test_committed_pages_are_current(gen, pages):
    assert gen.stale(pages) == [], "the reference is stale: run python docs/generate.py"


def test_check_names_stale_pages_and_passes_when_current(gen, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(gen, "DOCS", tmp_path)
    assert gen.main(["--check"]) == 1                          # nothing written yet
    assert "docs/reference/config.md" in capsys.readouterr().err
    assert gen.main([]) == 0 and gen.main(["--check"]) == 0    # written: current
    (tmp_path / "reference" / "cli.md").write_text("old\n", encoding="utf-8")
    assert gen.main(["--check"]) == 1
    err = capsys.readouterr().err
    assert "docs/reference/cli.md" in err and "config.md" not in err


def test_output_does_not_depend_on_the_terminal(gen, pages, monkeypatch):
    monkeypatch.setenv("COLUMNS", "40")
    assert gen.render() == pages
    assert str(ROOT) not in "".join(pages.values())


# ----------------------------------------------------------------------------- cli.md
def walk(parser):
    """Every (sub)command parser, found through argparse itself (not through the generator)."""
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from walk(sub)


def test_every_cli_command_and_option_is_in_cli_md(pages):
    sections = sections_of(pages["reference/cli.md"])
    parsers = list(walk(build_parser()))
    assert {p.prog for p in parsers} == set(sections)
    for parser in parsers:
        text = sections[parser.prog]
        assert f"\n{parser.prog} " in text or f"\n{parser.prog}\n" in text  # the usage line
        for action in parser._actions:
            if action.help == argparse.SUPPRESS:
                continue
            if isinstance(action, argparse._SubParsersAction):
                names = [f"`{parser.prog} {name}`" for name in action.choices]
            else:
                names = [f"`{o}`" for o in action.option_strings] or \
                    [f"`{action.metavar or action.dest}`"]
            for name in names:
                assert name in text, f"{parser.prog}: {name} missing from cli.md"


# ----------------------------------------------------------------------------- config.md
def table_keys(text: str) -> list[str]:
    return re.findall(r"^\| `([^`]+)` \|", text, flags=re.M)


def test_every_config_key_is_in_config_md(pages):
    sections = sections_of(pages["reference/config.md"])
    expected = {"network": list(NETWORK_DEFAULTS), "params": list(PARAM_DEFAULTS),
                "phase": sorted(PHASE_KEYS), **{n: list(d) for n, d in SECTIONS.items()},
                "shadow.extractors": [k for s in EXTRACTORS.values() for k in s.names]}
    assert set(sections) == set(expected)
    for name, keys in expected.items():
        assert sorted(table_keys(sections[name])) == sorted(keys), name


# ----------------------------------------------------------------------------- schema = validation
LINK = {"task": "link", "readout": "hadamard"}  # a pair task reads two centers
CONTEXT = {("shadow", "pair_labels"): LINK, ("shadow", "node_features"): {**LINK, "pair_labels": 1}}
BASE_PHASE = {"end": 5, "sampler": "rw", "num_root": 10, "depth": 2}


def context(section: Section, key: Key, value) -> dict:
    """The other keys a value needs (a link task's readout, an edge readout's task)."""
    if (section.name, key.name) == ("shadow", "task") and value == "link":
        return {"readout": "hadamard"}
    if (section.name, key.name) == ("shadow", "readout") and isinstance(value, str) and \
            value.split("+")[0] in ("hadamard", "concat"):
        return {"task": "link"}
    return CONTEXT.get((section.name, key.name), {})


def config_with(section: Section, key: Key, value) -> Config:
    given = {key.name: value, **context(section, key, value)}
    if section.name == "phase":
        return Config.from_dict({"phase": [{**BASE_PHASE, **given}]})
    return Config.from_dict({section.name: [given]})


def display_name(section: Section, key: Key) -> str:
    return f"phase[0].{key.name}" if section.name == "phase" else f"{section.name}.{key.name}"


ALL_KEYS = [(s, k) for s in SCHEMA.values() for k in s.keys]
RANGED = [(s, k) for s, k in ALL_KEYS if k.range is not None]
CHOICES = [(s, k) for s, k in ALL_KEYS if k.choices is not None]


def ids(cases):
    return [f"{s.name}.{k.name}" for s, k in cases]


def outside(key: Key) -> list:
    """Values just outside ``key``'s range, on each bounded side."""
    r, whole = key.range, key.type_name == "int"
    out = []
    if r.lo is not None:
        out.append(r.lo if r.lo_open else (r.lo - 1 if whole else math.nextafter(r.lo, -math.inf)))
    if r.hi is not None:
        out.append(r.hi if r.hi_open else (r.hi + 1 if whole else math.nextafter(r.hi, math.inf)))
    return out


@pytest.mark.parametrize("section, key", RANGED, ids=ids(RANGED))
def test_range_bounds_are_the_validated_ones(section, key):
    for value in outside(key):
        with pytest.raises(ConfigError) as e:
            config_with(section, key, value)
        msg = str(e.value)
        assert msg.startswith(display_name(section, key) + ":") and key.range.text() in msg, msg
    r = key.range
    for value in (r.lo if not r.lo_open else None, r.hi if not r.hi_open else None):
        if value is not None:
            config_with(section, key, value)  # a closed bound is allowed


@pytest.mark.parametrize("section, key", CHOICES, ids=ids(CHOICES))
def test_listed_choices_validate_and_others_are_refused(section, key):
    values = key.choices.resolve() if isinstance(key.choices, Ref) else key.choices
    for value in values:
        if section.name == "shadow" and key.name == "extractors":
            value = [{"kind": value}]
        elif isinstance(value, str):
            value = value.replace(":K", ":3")
        try:
            config_with(section, key, value)
        except ConfigError as e:  # an optional package that is not installed here
            assert "not installed" in str(e), str(e)
    bogus = [{"kind": "bogus"}] if key.name == "extractors" else "bogus"
    with pytest.raises(ConfigError, match=re.escape(display_name(section, key))):
        config_with(section, key, bogus)


@pytest.mark.parametrize("section, key", ALL_KEYS, ids=ids(ALL_KEYS))
def test_defaults_validate_and_types_are_enforced(section, key):
    if section.name == "phase":
        assert key.default is None and (key.kind is not None)
    else:
        cfg = config_with(section, key, key.default)
        got = getattr(cfg, section.name) if section.name in ("network", "params") else \
            cfg.section(section.name)
        assert got[key.name] == key.default
    if key.type_name in ("int", "float", "bool"):
        with pytest.raises(ConfigError, match=re.escape(display_name(section, key))):
            config_with(section, key, [1])


def test_sampler_names_are_the_samplers():
    assert list(SCHEMA["phase"]["sampler"].choices) == list(IMPLEMENTED)


@pytest.mark.parametrize("name", ["network", "params", "phase", "distributed", "shadow"])
def test_unknown_keys_are_refused_naming_them(name):
    section = SCHEMA[name]
    with pytest.raises(ConfigError, match=r"\.no_such_key: unknown key"):
        config_with(section, Key("no_such_key", None, ""), 1)
