"""benchmarks/dist_minibatch.py without a network or ranks: the figures it derives from epoch
records (volume against prediction, hidden share, per-minibatch bytes) and the results page's
records and tables built from its JSON lines."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def bench():
    return _load("dist_minibatch")


@pytest.fixture(scope="module")
def results():
    sys.path.insert(0, str(BENCH))
    try:
        return _load("_results_modes"), _load("_results_render")
    finally:
        sys.path.remove(str(BENCH))


def test_graph_layers(bench):
    assert bench.graph_layers("1-1") == 2
    assert bench.graph_layers("1-0-1-0") == 2
    assert bench.graph_layers("0") == 0


def test_volume_check_within_and_outside_tolerance(bench):
    # 2 graph layers: rows per step 200, 220 -> 100, 110 per layer
    ok = bench.volume_check([200, 220], 2, 104.0)
    assert ok["minibatches"] == 2 and ok["measured_volume"] == 105.0
    assert ok["measured_sem"] == 5.0
    assert ok["measured_vs_predicted"] == pytest.approx(105 / 104, abs=1e-4)
    assert ok["within_tolerance"]
    off = bench.volume_check([200, 220], 2, 95.0)
    assert off["measured_vs_predicted"] == pytest.approx(105 / 95, abs=1e-4)
    assert not off["within_tolerance"]


def test_hidden_share(bench):
    assert bench.hidden_share(2.0, 0.5) == 0.75
    assert bench.hidden_share(1.0, 1.2) == 0.0     # exposed > busy: nothing hidden
    assert bench.hidden_share(0.0, 0.0) == 0.0


def _epoch(i, rows):
    return {"epoch": i, "compute_s": 1.0 + i, "sample_s": 0.5, "iterations": len(rows),
            "step_rows_sent": rows, "step_bytes_sent": [2048 * r for r in rows],
            "ranks": [{"allreduce_s": 0.4, "allreduce_exposed_s": 0.1, "comm_s": 0.2,
                       "epoch_s": 1.5 + i}, {"allreduce_s": 0.6, "allreduce_exposed_s": 0.3,
                                              "comm_s": 0.3, "epoch_s": 1.0 + i}]}


def test_partition_figures_use_every_minibatch_and_time_later_epochs(bench):
    recs = [_epoch(1, [600, 620]), _epoch(2, [640, 660]), _epoch(3, [580, 600])]
    fig = bench.partition_figures(recs, 2)
    assert fig["rows_per_minibatch"] == pytest.approx(616.67, abs=0.01)  # all 6 steps
    assert fig["bytes_per_minibatch"] == round(2048 * 3700 / 6)
    assert fig["epochs_timed"] == 2 and fig["epoch_s"] == 4.0           # median of 3.5, 4.5
    assert fig["allreduce_hidden_share"] == 0.6                          # 1 - 0.8 / 2.0


def test_full_figures_take_the_slowest_rank(bench):
    recs = [dict(_epoch(i, [1]), **{"allreduce_hidden_share": 0.6}) for i in (1, 2, 3)]
    for r in recs:
        for x in r["ranks"]:
            x["bytes_sent"] = 1e6
    fig = bench.full_figures(recs)
    assert fig["epoch_s"] == 4.0 and fig["allreduce_s"] == 0.6 and fig["bytes_sent_mb"] == 2.0


def _lines():
    common = {"kind": "run", "dataset": "facebook", "shape": "1gbit", "load_avg": [1.0, 2.0],
              "cpu_s": 10.0, "test": 0.9, "epochs": 10}
    out = [{"kind": "link", "measured_gbit_s": 1.01}]
    for m, vol, b in (("rp", 1000.0, 4e6), ("hp", 300.0, 1.2e6), ("shp", 290.0, 1.1e6)):
        out.append({"kind": "plan", "dataset": "facebook", "parts": 4, "method": m,
                    "command": f"scalegnn partition make X --method {m}",
                    "predicted_volume": vol, "predicted_sem": 2.0, "wall_s": 3.0})
        out.append({**common, "mode": "partition", "parts": 4, "method": m, "round": 0,
                    "command": f"scalegnn dist-train --plan {m}", "minibatches": 120,
                    "bytes_per_minibatch": b, "rows_per_minibatch": 2 * vol,
                    "measured_volume": vol * 1.01, "measured_sem": 3.0,
                    "predicted_volume": vol, "measured_vs_predicted": 1.01,
                    "shp_table_volume": vol if m != "rp" else None, "epoch_s": 2.0,
                    "step_s": 0.2, "allreduce_hidden_share": 0.0, "sampler": "rw",
                    "budget": "num_root=500,depth=2", "transductive": True})
    return out


def test_records_and_table_of_the_partition_benchmark(results):
    modes, render = results
    meta = {"command": "python benchmarks/dist_minibatch.py partition", "date": "2026-01-02"}
    recs = modes.records(_lines(), meta)
    assert [r["id"] for r in recs] == ["partition:facebook:4:rp", "partition:facebook:4:hp",
                                       "partition:facebook:4:shp"]
    assert all(r["group"] == "modes:partition:facebook" and r["load_avg"] == [1.0, 2.0]
               for r in recs)
    page = modes.render({"records": recs}, {}, render, "")
    assert "0.917 (met)" in page          # SHP / HP bytes
    assert "0.300 (met)" in page          # HP / RP bytes
    assert "1.0% (met)" in page           # worst measured / predicted
    assert page == modes.render({"records": recs}, {}, render, "")   # deterministic


def test_records_refuse_a_skipped_run(results):
    modes, _ = results
    with pytest.raises(modes.BenchmarkFailed, match="not permitted"):
        modes.records([{"kind": "skip", "reason": "unshare not permitted"}],
                      {"command": "x", "date": "d"})
