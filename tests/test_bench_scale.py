"""``scalegnn bench scale`` runs end to end at tiny scales and prints consistent JSON lines."""

import json

import pytest

from bench_helpers import assert_cost
from scalegnn.cli import main

SMALL = ["--iterations", "2", "--warmup", "1", "--hidden", "32", "--size-subgraph", "200",
         "--size-frontier", "50"]


def _lines(capsys):
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]


def test_bench_scale_json_and_reuse(capsys, tmp_path):
    args = ["bench", "scale", "--scales", "9,10", "--data-dir", str(tmp_path), "--eval-scales",
            "10", "--eval-path", "neighbourhood"] + SMALL
    assert main(args) == 0
    first, second, summary = _lines(capsys)
    for r, s in ((first, 9), (second, 10)):
        assert r["scale"] == s and r["nodes"] == 2 ** s and r["edges"] > 0
        assert r["iterations"] == 2 and r["iteration_s_p90"] >= r["iteration_s_median"] > 0
        assert 0 <= r["sampling_share"] <= 1 and r["sampler_s_per_subgraph"] > 0
        assert r["features_bytes"] == 2 ** s * 50 * 4
        assert r["sum_bytes"] == (r["csr_bytes"] + r["features_bytes"] + r["model_bytes"]
                                  + r["pool_bytes"])
        assert r["peak_rss"] >= r["baseline_rss"] > 0
        assert r["rss_ratio"] == pytest.approx(r["peak_rss"] / r["sum_bytes"])
        assert r["rss_ratio_above_baseline"] == pytest.approx(
            (r["peak_rss"] - r["baseline_rss"]) / r["sum_bytes"])
        # the issue-25 bound: the floor plus 1.3x (data + one warm step's high-water mark)
        assert 0 < r["step_activation_bytes"] and 0 < r["step_gradient_bytes"] < r["model_bytes"]
        assert r["step_peak_bytes"] > r["step_activation_bytes"] + r["step_gradient_bytes"]
        assert r["step_transient_bytes"] == r["step_peak_bytes"] - r["step_gradient_bytes"]
        assert r["bound_bytes"] == r["sum_bytes"] + r["step_transient_bytes"]
        assert r["rss_ratio_bound"] == pytest.approx(
            (r["peak_rss"] - r["baseline_rss"]) / r["bound_bytes"])
        assert r["meets_rss_target"] == (r["rss_ratio_bound"] <= 1.3)
        assert len(r["load_avg_start"]) == 3 and len(r["load_avg_end"]) == 3
        assert r["generate_s"] > 0 and r["generate_cpu_s"] > 0
        assert_cost(r, "iteration")
        assert r["iterations_timed"] == 2
        assert r["wall_s"] >= r["iteration_s_median"]
        # the parent counts the whole measuring child: more than its timed iterations
        assert r["child_cpu_s"] > r["cpu_s"] and r["child_wall_s"] > r["wall_s"]
    assert "eval_s" not in first
    assert second["eval_path"] == "neighbourhood" and second["eval_finite"]
    assert second["eval_stats"]["blocks"] >= 1 and second["eval_peak_rss"] >= second["peak_rss"]
    assert summary["summary"] and summary["scales"] == [9, 10] and summary["failed"] == 0
    assert summary["rss_ratio_bound"] == [first["rss_ratio_bound"], second["rss_ratio_bound"]]
    assert summary["meets_rss_target"] == (first["meets_rss_target"]
                                           and second["meets_rss_target"])
    assert second["eval_cpu_s"] > 0
    assert_cost(summary)
    assert summary["cpu_s"] >= first["child_cpu_s"] + second["child_cpu_s"]
    assert summary["iteration_ratio"] == pytest.approx(
        second["iteration_s_median"] / first["iteration_s_median"])
    # the generated folders are reused
    assert main(["bench", "scale", "--scales", "9", "--data-dir", str(tmp_path)] + SMALL) == 0
    again, _ = _lines(capsys)
    assert again["generate_s"] == 0 and again["edges"] == first["edges"]


@pytest.mark.parametrize("bad", [["--scales", "x"], ["--scales", "2"], ["--iterations", "0"],
                                 ["--eval-scales", ""]])
def test_bench_scale_bad_arguments(capsys, bad):
    assert main(["bench", "scale"] + bad) == 2
    assert capsys.readouterr().out == ""
