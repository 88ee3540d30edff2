"""GraphSAINT-format configs: parsing, overrides, one-line errors naming the key."""

import pytest

from scalegnn.config import Config
from scalegnn.errors import ConfigError

PPI_RW = """
network:
  - dim: 512
    aggr: 'concat'
    loss: 'sigmoid'
    arch: '1-0-1-0'
    act: 'relu'
    bias: 'norm'
params:
  - lr: 0.01
    dropout: 0.1
    weight_decay: 0.
    sample_coverage: 50
    norm_loss: True
    norm_aggr: True
    q_threshold: 50
    q_offset: 0
phase:
  - end: 1000
    sampler: 'rw'
    num_root: 3000
    depth: 2
"""


def test_published_config_parses(tmp_path):
    p = tmp_path / "ppi2_rw.yml"
    p.write_text(PPI_RW)
    cfg = Config.from_yaml(p)
    assert cfg.network["dim"] == 512 and cfg.network["arch"] == "1-0-1-0"
    assert cfg.params["dropout"] == 0.1 and cfg.epochs == 1000
    assert cfg.sampler_params(cfg.phases[0]) == {"num_root": 3000, "depth": 2}
    # round trip through the resolved YAML
    p2 = tmp_path / "resolved.yml"
    p2.write_text(cfg.to_yaml())
    assert Config.from_yaml(p2).to_dict() == cfg.to_dict()


def test_overrides_with_dotted_keys():
    cfg = Config().override(["network.dim=64", "params.lr=0.005", "phase.end=3",
                             "phase.0.sampler=node", "phase.size_subgraph=100"])
    assert cfg.network["dim"] == 64 and cfg.params["lr"] == 0.005
    assert cfg.phases[0]["end"] == 3 and cfg.phases[0]["sampler"] == "node"


@pytest.mark.parametrize("override, needle", [
    (["network.aggr=max"], "network.aggr"),
    (["params.dropout=1.5"], "params.dropout"),
    (["params.lr=abc"], "params.lr"),
    (["params.learning_rate=0.1"], "params.learning_rate: unknown key"),
    (["phase.sampler=snowball"], "phase[0].sampler"),
    (["phase.end=0"], "phase[0].end"),
    (["network.arch=1-x"], "network.arch"),
    (["nonsense"], "key=value"),
])
def test_bad_values_name_the_key(override, needle):
    with pytest.raises(ConfigError) as e:
        Config().override(override)
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_missing_and_invalid_files(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        Config.from_yaml(tmp_path / "nope.yml")
    bad = tmp_path / "bad.yml"
    bad.write_text("network: [\n")
    with pytest.raises(ConfigError, match="invalid YAML"):
        Config.from_yaml(bad)
