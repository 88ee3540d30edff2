"""A PyTorch Geometric model trained by scalegnn's Trainer (``network.pyg``, scalegnn.nn.pyg).

The properties: PyG's GraphSAGE learns a planted-partition graph through the one loop (run
directory, report); a resumed run ends with the uninterrupted run's records (killed for real
mid-epoch in the CLI, and stopped at an epoch end in process); ``scalegnn predict`` / ``embed``
rebuild the model from the run and reproduce its test metrics; CSR features are densified for
PyG; the memory guard counts the model on the meta device; every bad ``pyg`` name or argument
is one ConfigError line naming the key (the CLI exits 2)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

pytest.importorskip("torch_geometric")

import scalegnn
from run_helpers import DATA, RUN, outcome
from run_helpers import scalegnn as cli_run
from scalegnn.cli import main as cli_main
from scalegnn.config import Config
from scalegnn.data import load_dataset
from scalegnn.engine.memory_guard import estimate_training_memory
from scalegnn.engine.metrics import compute_metrics
from scalegnn.errors import ConfigError
from scalegnn.nn.pyg import PyGNet, pyg_model
from scalegnn.ops import SparseAdj
from scalegnn.train.build import shape_run_model
from scalegnn.train.trainer import Trainer

SAGE = ["network.pyg=GraphSAGE", "network.pyg_args={num_layers: 2}", "network.dim=32"]


def config(epochs=6, extra=()):
    return Config().override([f"phase.end={epochs}", "phase.num_root=40",
                              "params.sample_coverage=5", *SAGE, *extra])


@pytest.fixture(scope="module")
def sage_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("pyg") / "run"
    res = Trainer(load_dataset(DATA), config(), out, seed=0, progress=False,
                  run_info={"data": DATA, "split": 0, "threads": 0}).fit()
    return out, res


def test_graphsage_trains_through_the_trainer(sage_run):
    out, res = sage_run
    assert res["test"]["accuracy"] >= 0.8, res["test"]      # planted: 3 classes, chance 1/3
    assert {"config.yml", "run.json", "metrics.jsonl", "best.pt", "last.pt",
            "summary.json"} <= {p.name for p in out.iterdir()}
    cfg = Config.from_yaml(out / "config.yml")               # the run records its model
    assert cfg.network["pyg"] == "GraphSAGE" and cfg.network["pyg_args"] == {"num_layers": 2}
    run = scalegnn.load_run(out)
    assert isinstance(run.model, PyGNet)
    assert type(run.model.module).__name__ == "GraphSAGE"
    assert run.model.module.hidden_channels == 32             # network.dim fills it


def test_predict_and_embed_from_the_run_dir(sage_run, tmp_path, capsys):
    out, res = sage_run
    rc = cli_main(["predict", str(out), "--split", "test", "--out", str(tmp_path / "p.csv")])
    assert rc == 0, capsys.readouterr().err
    table = np.loadtxt(tmp_path / "p.csv", delimiter=",", skiprows=1, ndmin=2)
    ds = load_dataset(DATA)
    assert np.array_equal(table[:, 0].astype(np.int64), ds.test_idx)
    assert compute_metrics(ds.labels[ds.test_idx], table[:, 2:].astype(np.float32),
                           False) == res["test"]
    rc = cli_main(["embed", str(out), "--out", str(tmp_path / "e.npy")])
    assert rc == 0, capsys.readouterr().err
    emb = np.load(tmp_path / "e.npy", allow_pickle=False)
    assert emb.shape == (ds.num_nodes, ds.num_classes)       # the module's output: its logits


def test_resume_at_an_epoch_end_equals_the_uninterrupted_run(tmp_path):
    ds = load_dataset(DATA)
    extra = ["params.dropout=0.3"]                 # so that the random state matters
    Trainer(ds, config(4, extra), tmp_path / "a", seed=3, progress=False).fit()
    Trainer(ds, config(2, extra), tmp_path / "b", seed=3, progress=False).fit()
    Trainer(ds, config(4, extra), tmp_path / "b", seed=3, progress=False, resume=True).fit()
    assert outcome(tmp_path / "a") == outcome(tmp_path / "b")


@pytest.mark.slow
def test_killed_mid_epoch_and_resumed_equals_the_uninterrupted_run(tmp_path):
    args = [*RUN, *(a for s in SAGE for a in ("--set", s)), "--set", "params.checkpoint_seconds=0"]
    ref = cli_run("train", *args, "--out", "ref", cwd=tmp_path)
    assert ref.returncode == 0, ref.stderr
    killed = cli_run("train", *args, "--out", "run", cwd=tmp_path, kill="batch:8")
    assert killed.returncode != 0
    again = cli_run("train", "--resume", "run", "--no-progress", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert outcome(tmp_path / "run") == outcome(tmp_path / "ref")


def test_csr_features_are_densified_for_pyg(tmp_path):
    ds = load_dataset(DATA)
    cfg = config(2, ["params.feature_format=sparse"])
    res = Trainer(ds, cfg, None, seed=0, progress=False).fit()
    assert 0.0 <= res["test"]["accuracy"] <= 1.0


def test_wrapped_module_sees_the_adjacency_as_edge_index():
    """Row i of the SparseAdj aggregates column j: PyG's edge j -> i, with its value as
    edge_weight for a conv that takes one (GCNConv without its own normalization)."""
    from torch_geometric.nn import GCNConv
    conv = GCNConv(2, 1, normalize=False, bias=False)
    with torch.no_grad():
        conv.lin.weight.copy_(torch.tensor([[1.0, 10.0]]))
    net = PyGNet(conv, out_dim=1)
    adj = SparseAdj(np.array([0, 2, 3, 3]), np.array([1, 2, 0]),
                    np.array([0.5, 0.25, 1.0], dtype=np.float32), 3)
    x = torch.tensor([[1.0, 0.0], [0.0, 1.0], [2.0, 2.0]])
    dense = adj.to_dense() @ (x @ torch.tensor([[1.0], [10.0]]))
    assert torch.allclose(net(x, adj), dense)


def test_memory_guard_counts_the_pyg_model_on_the_meta_device():
    ds = load_dataset(DATA)
    cfg = config(2)
    model = shape_run_model(ds, cfg)
    assert all(p.is_meta for p in model.parameters())
    n_params = sum(p.numel() for p in model.parameters())
    est = estimate_training_memory(ds, cfg, model)
    assert est.terms["model and optimizer"] == 16 * n_params
    # the whole-graph pass: PyG's per-edge messages of the widest layer at least
    assert est.terms["evaluation activations"] >= 4 * ds.graph.num_edges * 32


@pytest.mark.parametrize("network, says", [
    ({"pyg": "NoSuchModel"}, "network.pyg: 'NoSuchModel' is not a model or layer class"),
    ({"pyg": "os.system"}, "network.pyg: expected a class name"),
    ({"pyg": "torch_geometric.nn.GraphSAGE"}, "network.pyg: expected a class name"),
    ({"pyg": "conv"}, "is not a model or layer class"),             # a module, not a class
    ({"pyg": "MLP"}, "network.pyg: MLP.forward takes no edge_index"),
    ({"pyg": "GraphSAGE"}, "network.pyg_args.num_layers: GraphSAGE needs it"),
    ({"pyg": "GraphSAGE", "pyg_args": {"num_layers": 2, "in_channels": 5}},
     "network.pyg_args.in_channels: set from the data"),
    ({"pyg": "SAGEConv", "pyg_args": {"bogus": 1}}, "SAGEConv(**{'bogus': 1}) refused them"),
    ({"pyg": "GraphSAGE", "pyg_args": {"num_layers": 2, "jk": "nope"}}, "refused them"),
    ({"pyg": "GraphSAGE", "pyg_args": [1, 2]}, "network.pyg_args: expected a mapping"),
    ({"pyg_args": {"num_layers": 2}}, "network.pyg_args: given without network.pyg"),
])
def test_bad_pyg_settings_are_one_config_error(network, says):
    with pytest.raises(ConfigError) as err:
        Config.from_dict({"network": network})
    assert says in str(err.value) and "\n" not in str(err.value)


def test_arguments_pyg_refuses_at_build_time_are_one_config_error():
    with pytest.raises(ConfigError, match=r"network\.pyg_args: GraphSAGE\(.*refused"):
        pyg_model("GraphSAGE", 4, 2, network={"pyg_args": {"num_layers": 2, "hidden_channels": 8,
                                                           "bogus": 1}})


def test_pyg_with_shadow_or_partition_training_is_refused():
    with pytest.raises(ConfigError, match="network.pyg: shaDow-GNN builds its own model"):
        Config.from_dict({"network": {"pyg": "GCN", "pyg_args": {"num_layers": 2}},
                          "shadow": {}})
    cfg = Config.from_dict({"network": {"pyg": "GCN", "pyg_args": {"num_layers": 2}}})
    with pytest.raises(ConfigError, match="network.model: distributed training runs"):
        cfg.validate_for_mode("partition-parallel")


@pytest.mark.slow
def test_cli_bad_name_exits_2_with_one_line(tmp_path):
    r = cli_run("train", "--data", DATA, "--set", "network.pyg=Nope", "--out", "r",
                cwd=tmp_path)
    lines = [ln for ln in r.stderr.strip().splitlines() if ln.strip()]
    assert r.returncode == 2 and len(lines) == 1 and "network.pyg: 'Nope'" in lines[0], r.stderr
    assert "Traceback" not in r.stderr and not json.dumps(lines).count("\\n")


def test_neighbour_phases_sample_one_hop_per_pyg_layer():
    ds = load_dataset(DATA)
    cfg = Config.from_dict({"network": {"pyg": "GraphSAGE", "pyg_args": {"num_layers": 2},
                                        "dim": 16},
                            "phase": [{"end": 2, "sampler": "neighbour", "fanouts": [5, 5],
                                       "batch_size": 64}]})
    res = Trainer(ds, cfg, None, seed=0, progress=False).fit()
    assert 0.0 <= res["test"]["accuracy"] <= 1.0
    cfg.phases[0]["fanouts"] = [5, 5, 5]
    with pytest.raises(ConfigError, match=r"phase\[0\]\.fanouts: 3 hops given"):
        cfg.validate_for_mode("graphsaint")


def test_a_module_passed_from_python_trains_and_is_needed_to_load_the_run(tmp_path, capsys):
    from torch_geometric.nn import GraphSAGE
    ds = load_dataset(DATA)

    def module():
        return GraphSAGE(ds.num_features, 16, num_layers=2, out_channels=ds.num_classes)

    torch.manual_seed(0)
    res = Trainer(ds, config(3), tmp_path / "r", seed=0, progress=False, model=module(),
                  run_info={"data": DATA, "split": 0, "threads": 0}).fit()
    info = json.loads((tmp_path / "r" / "run.json").read_text())
    assert info["python_model"] == "GraphSAGE"
    with pytest.raises(ConfigError, match=r"its model \(GraphSAGE\) was passed to Trainer"):
        scalegnn.load_run(tmp_path / "r")
    run = scalegnn.load_run(tmp_path / "r", model=module())
    scores = run.scores(ds.test_idx)
    assert compute_metrics(ds.labels[ds.test_idx], scores, False) == res["test"]
    rc = cli_main(["predict", str(tmp_path / "r"), "--out", str(tmp_path / "p.csv")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "passed to Trainer from Python" in err[0]
    rc = cli_main(["train", "--resume", str(tmp_path / "r"), "--no-progress"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "passed to Trainer from Python" in err[0]
    more = Trainer(ds, config(4), tmp_path / "r", seed=0, progress=False, resume=True,
                   model=module()).fit()                 # from Python, with the module again
    assert more["epochs"] == 4
