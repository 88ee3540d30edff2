"""benchmarks/scale_alternate.py without running bench scale: the alternation's medians, the
stored scale record and the results page's text built from bench-scale-shaped records."""

import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def mods():
    sys.path.insert(0, str(BENCH))
    try:
        import _results_render
        import _results_run_perf
        import _results_tables
        import scale_alternate
        yield scale_alternate, _results_run_perf, _results_tables, _results_render
    finally:
        sys.path.remove(str(BENCH))


def _rec(scale: int, it: float, cpu: float, sampler: float, peak: float) -> dict:
    gb = 1e9
    return {"bench": "scale", "scale": scale, "edges": 30 * 2 ** scale,
            "iteration_s_median": it, "iteration_s_p90": 1.5 * it, "cpu_per_iteration": cpu,
            "sampler_s_per_subgraph": sampler, "sampling_share": 0.0, "step_s_median": it,
            "load_s": 1.0, "load_peak_rss": 0.7 * gb, "baseline_rss": 0.3 * gb,
            "peak_rss": peak * gb, "sum_bytes": 1.0 * gb, "step_activation_bytes": 0.1 * gb,
            "bound_bytes": 1.1 * gb, "rss_ratio": peak, "rss_ratio_above_baseline": peak - 0.3,
            "rss_ratio_bound": (peak - 0.3) / 1.1, "load_avg_start": [2.0, 1.0, 1.0],
            "load_avg_end": [3.0, 1.0, 1.0]}


def test_alternation_medians_and_page(mods, tmp_path):
    alt_mod, perf, tables, render = mods
    runs = [_rec(20, 0.5, 0.8, 0.06, 1.6), _rec(24, 0.7, 1.2, 0.2, 1.9),
            _rec(20, 0.4, 0.9, 0.07, 1.6), _rec(24, 0.3, 1.0, 0.3, 1.9),
            _rec(20, 0.6, 1.0, 0.05, 1.6), _rec(24, 0.6, 1.1, 0.1, 1.9)]
    alt = alt_mod.alternation(runs, [20, 24])
    assert alt["rounds"] == 3 and len(alt["runs"]) == 6
    assert alt["iteration_ratio"] == pytest.approx(0.6 / 0.5)
    assert alt["cpu_ratio"] == pytest.approx(1.1 / 0.9)
    assert alt["sampler_s"] == pytest.approx([0.06, 0.2])
    summary = {"bench": "scale", "summary": True, "iteration_ratio": 1.4,
               "target_iteration_ratio": 1.25, "target_rss_ratio": 1.3}
    sweep = [{"bench": "scale", "command": "scalegnn bench scale --scales 20,24",
              "load_avg": [1.0], "record": r} for r in (runs[0], runs[1], summary)]
    rec = perf.scale_record(sweep, alt, "python benchmarks/scale_alternate.py --data-dir D")
    assert rec["id"] == "speed:scale" and rec["iteration_ratio"] == alt["iteration_ratio"]
    assert rec["sweep_iteration_ratio"] == 1.4 and rec["date"]
    assert [r["ratio_bound"] for r in rec["rows"]] == [runs[0]["rss_ratio_bound"],
                                                      runs[1]["rss_ratio_bound"]]
    text = tables._scale(rec, render)
    assert "wall **1.200x** (met), process CPU per iteration **1.222x** (met" in text
    assert "met at: 2^20 (" in text and "| **1.18** |" in text and "| **1.45** |" in text
    # --replay rebuilds the same alternation from a saved log
    log = tmp_path / "run.log"
    lines = sweep + [{"bench": "scale", "command": "c", "load_avg": [1.0], "record": r}
                     for r in runs]
    log.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    assert alt_mod.main(["--data-dir", "D", "--sweep", "20,24", "--replay", str(log)]) == 0


def test_records_name_the_cpu_they_ran_on(mods):
    """A record stamped with the host's CPU says so wherever the page cites it; records from
    before the stamp render as they did."""
    *_, render = mods
    import _results_run
    cpu = _results_run.host_cpu()
    assert cpu.endswith(" CPUs") and "(" in cpu
    rec = {"command": "c", "date": "2026-11-27", "load_avg": [1.0, 1.5],
           "cpu": "AMD EPYC (znver4), 2 CPUs"}
    assert render.measured(rec) == "(2026-11-27, on AMD EPYC (znver4), 2 CPUs, " \
                                   "load average 1-1.5)"
    assert render._when(rec) == "2026-11-27, znver4"
    old = {"command": "c", "date": "2026-11-20", "load_avg": [1.0, 1.5]}
    assert render._when(old) == "2026-11-20"
    assert render.measured({**old, "load_avg": None}) == "(2026-11-20)"
    assert render.provenance([rec]) == ("Measured on 2026-11-27 on AMD EPYC (znver4), 2 CPUs "
                                        "with `c` (load average 1-1.5).")
