"""Property tests of configs: arbitrary input either works or is refused with a one-line
ScaleGNNError.

Configs as dicts, YAML text and bytes, and ``--set`` strings ((a)/(b) of the issue). Any
exception other than a :class:`ScaleGNNError` fails the property, and so does a message with a
newline in it; a config that is accepted must be usable. Datasets and generator specs:
``test_properties_data.py``; the shared settings: ``property_helpers.py``.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from property_helpers import FUZZ, json_like, outcome, tmpdir
from scalegnn.config import NETWORK_DEFAULTS, PARAM_DEFAULTS, PHASE_KEYS, SECTIONS, Config


def section(keys):
    return st.dictionaries(st.sampled_from(sorted(keys)), json_like, max_size=4)


config_like = st.fixed_dictionaries({}, optional={
    "network": st.one_of(section(NETWORK_DEFAULTS), st.lists(section(NETWORK_DEFAULTS),
                                                             max_size=2), json_like),
    "params": st.one_of(section(PARAM_DEFAULTS), st.lists(section(PARAM_DEFAULTS), max_size=2)),
    "phase": st.one_of(st.lists(section(PHASE_KEYS | {"sampler"}), max_size=3), json_like),
    **{name: st.one_of(section(defaults), st.lists(section(defaults), max_size=1), json_like)
       for name, defaults in SECTIONS.items()},
})

VALID_YAML = """network:
  - dim: 64
    aggr: 'concat'
    arch: '1-0-1-0'
params:
  - lr: 0.01
    dropout: 0.1
phase:
  - end: 10
    sampler: 'rw'
    num_root: 300
    depth: 2
"""


def check_config(cfg) -> None:
    """A config that was accepted is usable: finite numbers, rounds through its YAML."""
    if cfg is None:
        return
    assert cfg.epochs >= 1
    assert 0 < cfg.params["lr"] < float("inf") and 1 <= cfg.network["dim"] <= 2**20
    assert outcome(lambda: Config.from_dict(__import__("yaml").safe_load(cfg.to_yaml())))


# ----------------------------------------------------------------------------- (a)/(b) configs
@FUZZ
@given(st.one_of(config_like, json_like))
def test_config_from_dict(raw):
    check_config(outcome(Config.from_dict, raw))


@FUZZ
@given(st.one_of(st.text(max_size=200), st.binary(max_size=200),
                 st.tuples(st.integers(0, len(VALID_YAML)), st.integers(0, 12),
                           st.text(max_size=16))))
def test_config_from_yaml(content):
    if isinstance(content, tuple):       # a valid config with a slice replaced
        at, cut, new = content
        content = VALID_YAML[:at] + new + VALID_YAML[at + cut:]
    with tmpdir() as d:
        p = d / "c.yml"
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content, encoding="utf-8", errors="surrogatepass")
        check_config(outcome(Config.from_yaml, p))


OVERRIDE_KEYS = ([f"network.{k}" for k in NETWORK_DEFAULTS]
                 + [f"params.{k}" for k in PARAM_DEFAULTS]
                 + [f"phase.{k}" for k in sorted(PHASE_KEYS)]
                 + ["phase.0.end", "phase.1.depth", "distributed.timeout", "x.y", ""])


@FUZZ
@given(st.lists(st.one_of(
    st.text(max_size=30),
    st.builds(lambda k, v: f"{k}={v}", st.sampled_from(OVERRIDE_KEYS),
              st.one_of(st.text(max_size=12), st.integers().map(str), st.floats().map(str),
                        st.sampled_from(["", "[1", "{", "true", ".nan", "-.inf", "1e400", "null",
                                         "2021-02-31", "&a [*a]", "!!python/object:os.system",
                                         "0x10", "1_000"])))), max_size=4))
def test_config_override(items):
    check_config(outcome(Config().override, items))
