"""Memory guard: the training peak-memory estimate (scalegnn.engine.memory_guard), the refusal before
training (one line, exit 2, --force), and `data info`'s estimate."""

import json

import numpy as np
import pytest
from conftest import make_tiny_dataset

from scalegnn.engine import memory_guard as memory
from scalegnn.cli import main
from scalegnn.config import Config
from scalegnn.data import load_dataset
from scalegnn.data.graphsaint import save_graphsaint
from scalegnn.errors import DataError
from scalegnn.features import MappedFeatures, Statistics


def small_config():
    cfg = Config.builtin()
    cfg.override(["network.dim=8", "network.arch=1-1", "network.aggr=concat",
                  "params.sampler_threads=1", "params.pool_depth=4"])
    cfg.phases = [{"end": 1, "sampler": "rw", "num_root": 10, "depth": 2}]
    return cfg.validate()


def test_estimate_terms_by_hand():
    ds = make_tiny_dataset()          # n = 40, F = 6, 3 classes, 50% train
    cfg = small_config()
    n, f, e = 40, 6, ds.graph.num_edges
    t = memory.estimate_training_memory(ds, cfg).terms
    assert t["graph"] == 8 * (n + 1) + 4 * e
    e_train = int(e * (20 / 40) ** 2)  # not built yet: a random split's share
    assert t["training graph"] == 8 * (n + 1) + 4 * e_train
    assert t["normalization"] == 4 * e + 8 * e_train + 16 * n  # normalized: + counts, weights
    assert t["features"] == 2 * 4 * n * f   # raw + standardized copy
    assert t["labels"] == 8 * n
    vs = 30                                 # rw: 10 roots x (depth 2 + 1)
    # layers 6 -> 2x8 (concat), 16 -> 2x8, classifier 16 -> 3
    assert t["iteration activations"] == 16 * vs * (16 + 16 + 3)
    # layer-wise: layer 2 holds input 16 + output 16 + its narrow product X W_1 (8)
    assert t["evaluation activations"] == 4 * n * (16 + 16 + 8)
    from scalegnn.nn import build_model
    model = build_model(f, 3, hidden=8, arch="1-1", aggr="concat")
    assert t["model and optimizer"] == 16 * sum(p.numel() for p in model.parameters())
    mean_deg = e_train / 20
    sub_edges = vs * min(mean_deg, vs)
    batch = vs * (4 * f + 8 + 8 + 4) + 24 * sub_edges
    presampled = 50 * 20 / vs * (8 * vs + 24 * sub_edges)
    assert t["sampler pool"] == int((4 + 4) * batch + presampled)

    assert ds.train_graph.num_edges > 0  # built now: its exact size is used
    t2 = memory.estimate_training_memory(ds, cfg).terms
    assert t2["training graph"] == ds.train_graph.nbytes
    cfg.params["transductive"] = True
    assert memory.estimate_training_memory(ds, cfg).terms["training graph"] == 0


def test_mapped_features_count_as_gathered_rows_only(tmp_path):
    save_graphsaint(make_tiny_dataset(), tmp_path / "gs")
    mapped = load_dataset(str(tmp_path / "gs"), mmap=True)
    cfg = small_config()
    est = memory.estimate_training_memory(mapped, cfg)
    assert est.terms["features"] == 0
    ram = memory.estimate_training_memory(load_dataset(str(tmp_path / "gs")), cfg)
    # evaluation reads standardized mapped rows in: n x F more there
    assert est.terms["evaluation activations"] >= 4 * 40 * 6
    assert est.resident < ram.resident
    std = mapped.features.with_statistics(Statistics(np.zeros(6), np.ones(6)))
    assert isinstance(std, MappedFeatures) and std.resident_bytes == 0
    assert std.nbytes == mapped.features.nbytes


def test_check_refuses_with_one_line(monkeypatch):
    ds, cfg = make_tiny_dataset(), small_config()
    est = memory.estimate_training_memory(ds, cfg)
    with pytest.raises(DataError) as e:
        memory.check_training_memory(ds, cfg, available=0)
    msg = str(e.value)
    name, _ = est.largest
    assert "\n" not in msg and msg.startswith("memory: training needs about ")
    assert f"(largest: {name} " in msg and msg.endswith("use --force to train anyway")
    assert memory.check_training_memory(ds, cfg, available=0, force=True).total == est.total
    assert memory.check_training_memory(ds, cfg, available=est.total).total == est.total


def test_train_cli_refuses_then_force(tmp_path, monkeypatch, capsys):
    save_graphsaint(make_tiny_dataset(), tmp_path / "gs")
    monkeypatch.setattr(memory, "available_memory", lambda: 1000)
    args = ["train", "--data", str(tmp_path / "gs"), "--epochs", "1", "--no-progress",
            "--out", str(tmp_path / "run"), "--threads", "1"]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "Traceback" not in err
    assert err.startswith("scalegnn: error: memory: training needs about ")
    assert not (tmp_path / "run").exists()   # refused before anything was written
    assert main(args + ["--force"]) == 0
    assert (tmp_path / "run" / "metrics.jsonl").is_file()


def test_data_info_prints_the_estimate(tmp_path, capsys):
    save_graphsaint(make_tiny_dataset(), tmp_path / "gs")
    assert main(["data", "info", str(tmp_path / "gs"), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    mem = info["memory"]
    assert mem["total"] == sum(mem["terms"].values()) and mem["largest"] in mem["terms"]
    assert set(mem["terms"]) == {"graph", "training graph", "normalization", "features",
                                 "labels", "sampler pool", "model and optimizer",
                                 "iteration activations", "evaluation activations"}
    cfg = tmp_path / "c.yml"
    cfg.write_text("network:\n  - dim: 8\n    aggr: concat\n    arch: '1-1'\n"
                   "params:\n  - lr: 0.01\nphase:\n  - end: 1\n    sampler: rw\n"
                   "    num_root: 10\n    depth: 2\n")
    assert main(["data", "info", str(tmp_path / "gs"), "--config", str(cfg)]) == 0
    text = capsys.readouterr().out
    assert "memory     training needs about" in text and "evaluation activations" in text


def shadow_config(**shadow):
    cfg = small_config()
    cfg.params["transductive"] = True
    cfg.sections["shadow"] = {"extractors": [{"kind": "ppr", "k": 8},
                                             {"kind": "khop", "depth": 2, "budget": 3}],
                              "batch_size": 4, "eval_batch_size": 16, **shadow}
    return cfg.validate()


def test_shadow_estimate_terms_by_hand():
    ds = make_tiny_dataset()          # n = 40, F = 6, 3 classes, every node in a split
    cfg = shadow_config()
    n, f, e = 40, 6, ds.graph.num_edges
    t = memory.estimate_training_memory(ds, cfg).terms
    assert t["graph"] == 8 * (n + 1) + 4 * e and t["training graph"] == 0
    assert t["features"] == 2 * 4 * n * f and t["labels"] == 8 * n
    assert t["scope lists"] == 2 * (8 * (4 + 4) + 16) * n        # ppr k=8, every target
    scope = 8 + (1 + 3 + 9)                                       # ppr k + k-hop 1 + b + b^2
    from scalegnn.nn import build_model
    model = build_model(f, 3, hidden=8, arch="1-1", aggr="concat")
    assert t["model and optimizer"] == 2 * 16 * sum(p.numel() for p in model.parameters())
    assert t["iteration activations"] == 16 * 4 * scope * (16 + 16 + 3)
    assert "normalization" not in t
    link = memory.estimate_training_memory(ds, shadow_config(task="link", readout="hadamard")).terms
    assert link["training graph"] > 0 and link["scope lists"] == t["scope lists"]


def test_shadow_train_refused_with_one_line(tmp_path, monkeypatch, capsys):
    save_graphsaint(make_tiny_dataset(), tmp_path / "gs")
    cfg = tmp_path / "shadow.yml"
    cfg.write_text("network:\n  - dim: 8\n    aggr: concat\n    arch: '1-1'\n"
                   "params:\n  - lr: 0.01\n    transductive: true\nphase:\n  - end: 1\n"
                   "    sampler: full\nshadow:\n  extractors: [{kind: khop, depth: 1, budget: 4}]\n"
                   "  batch_size: 8\n")
    monkeypatch.setattr(memory, "available_memory", lambda: 1000)
    args = ["train", "--data", str(tmp_path / "gs"), "--config", str(cfg), "--no-progress",
            "--out", str(tmp_path / "run"), "--threads", "1"]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("scalegnn: error: memory: training needs")
    assert not (tmp_path / "run").exists()
    assert main(args + ["--force"]) == 0
