"""Runners of ``benchmarks/results.py run`` for the performance sections: speed, loaders,
distributed training, partition quality and SHP (see _results_run for the others)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from _results_run import (
    DATA,
    BenchmarkFailed,
    _meta,
    _today,
    python,
    run_command,
    scalegnn,
)


# ----------------------------------------------------------------------------- speed
def _speed_record(bench: str, figures: list[dict]) -> dict:
    """The page's summary of one ``readme_numbers.py`` benchmark (its JSON figure lines)."""
    recs = [f["record"] for f in figures]
    base = {"id": f"speed:{bench}", "group": f"speed:{bench}", "kind": bench,
            "command": figures[0]["command"], "date": _today(),
            "driver": "python benchmarks/readme_numbers.py"}
    if bench == "sample":
        rows = [r for r in recs if "subgraphs_per_s" in r]
        top = max(r["threads"] for r in rows)
        return {**base, "threads": top,
                "rates": [[r["sampler"], r["subgraphs_per_s"]] for r in rows
                          if r["threads"] == top],
                "speedup": [r["speedup_vs_first"] for r in rows if "speedup_vs_first" in r],
                "load_avg": [min(r["load_avg_1min"] for r in rows),
                             max(r["load_avg_1min"] for r in rows)]}
    if bench == "step":
        steps = [r for r in recs if r.get("bench") == "step"]
        return {**base, "subgraph_nodes": steps[0]["subgraph_nodes_median"],
                "target": steps[0]["target_ratio"],
                "tails": [{"tail": r["tail"], "ratio": r["ratio_vs_gemm"],
                           "cpu_ratio": r.get("cpu_ratio_vs_gemm"),
                           "rounds": [min(r["ratio_all"]), max(r["ratio_all"])],
                           "iteration_ms": r["iteration_ms"], "gemm_ms": r["gemm_alone_ms"],
                           "spmm_ms": r["spmm_ms"], "other_ms": r["other_ms"],
                           "load_avg": r["load_avg"]} for r in steps]}
    if bench == "spmm":
        return {**base, "load_avg": figures[-1]["load_avg"],
                "cases": [{"n": r["n"], "f": r["f"], "ratio": r["ratio_vs_torch"],
                           "backward": r["ratio_backward_vs_torch"],
                           "plain": r["ratio_plain_vs_torch"]}
                          for r in recs if "ratio_vs_torch" in r]}
    if bench == "epoch":
        s = next(r for r in recs if r.get("summary"))
        per = [r["ratio_vs_gemm_floor"] for r in recs
               if not r.get("summary") and r.get("ratio_vs_gemm_floor")]
        loads = [r["load_avg"][0] for r in recs if not r.get("summary") and "load_avg" in r]
        return {**base, "nodes": s["nodes"], "sampler": s["sampler"],
                "sampler_params": " ".join(f"{k}={v}" for k, v in s["sampler_params"].items()),
                "hidden": s["hidden"], "iterations_per_epoch": s["iterations_per_epoch"],
                "epoch_s": s["epoch_s_median"], "median_of": max(1, s["epochs"] - 1),
                "ratio": s["ratio_vs_gemm_floor_median"], "floor_s": s["gemm_floor_s_median"],
                "per_epoch": [min(per), max(per)] if per else [], "spmm_s": s["spmm_s_median"],
                "target": s["target_ratio_vs_gemm_floor"], "wait_share": s["wait_share_median"],
                "load_avg": [min(loads), max(loads)] if loads else s["load_avg"]}
    if bench == "scale":
        return {**base, **scale_record(figures)}
    raise BenchmarkFailed(f"readme_numbers.py: unknown benchmark {bench!r}")


def scale_record(figures: list[dict], alternation: dict | None = None,
                 command: str | None = None) -> dict:
    """The page's scale record from one ``bench scale`` sweep's figure lines; with the
    ``alternation`` of ``benchmarks/scale_alternate.py`` (which then names the ``command``) its
    iteration ratio replaces the sweep's."""
    recs = [f["record"] for f in figures]
    s = next(r for r in recs if r.get("summary"))
    rows = [r for r in recs if not r.get("summary") and "iteration_s_median" in r]
    rec = {"load_avg": figures[-1]["load_avg"], "iteration_ratio": s["iteration_ratio"],
           "target_iteration_ratio": s["target_iteration_ratio"],
           "target_rss_ratio": s["target_rss_ratio"],
           "rows": [{"scale": r["scale"], "edges_m": r["edges"] / 1e6,
                     "it_median": r["iteration_s_median"], "it_p90": r["iteration_s_p90"],
                     "cpu_it": r.get("cpu_per_iteration"),
                     "sampler_s": r["sampler_s_per_subgraph"], "load_s": r["load_s"],
                     "load_peak_gb": r["load_peak_rss"] / 1e9, "floor_gb": r["baseline_rss"] / 1e9,
                     "peak_gb": r["peak_rss"] / 1e9, "sum_gb": r["sum_bytes"] / 1e9,
                     "act_gb": r.get("step_activation_bytes", 0) / 1e9,
                     "step_gb": r.get("step_transient_bytes",
                                      r.get("step_activation_bytes", 0)) / 1e9,
                     "bound_gb": r.get("bound_bytes", r["sum_bytes"]) / 1e9,
                     "ratio": r["rss_ratio"], "ratio_above": r["rss_ratio_above_baseline"],
                     "ratio_bound": r.get("rss_ratio_bound"),
                     "load_avg": r["load_avg_start"][:1] + r["load_avg_end"][:1]}
                    for r in rows]}
    if alternation is not None:
        rec.update(id="speed:scale", group="speed:scale", kind="scale", date=_today(),
                   command=command or figures[0]["command"], driver="python "
                   "benchmarks/scale_alternate.py", sweep_command=figures[0]["command"],
                   sweep_iteration_ratio=s["iteration_ratio"],
                   iteration_ratio=alternation["iteration_ratio"], alternation=alternation)
    return rec


def run_speed(extra: list[str]) -> list[dict]:
    args = extra or ["--with-scale", "--data-dir", "/tmp/scalegnn_bench"]
    proc_lines, _ = run_command(python("benchmarks/readme_numbers.py", *args), allow_fail=True)
    by: dict[str, list[dict]] = {}
    for line in proc_lines:
        if "bench" in line and "record" in line:
            by.setdefault(line["bench"], []).append(line)
        elif "bench" in line and line.get("rc"):
            raise BenchmarkFailed(f"{line['command']}: {line.get('error')}")
    if not by:
        raise BenchmarkFailed("python benchmarks/readme_numbers.py printed no records")
    return [_speed_record(bench, figures) for bench, figures in by.items()]


# ----------------------------------------------------------------------------- loaders
def run_loaders(extra: list[str]) -> list[dict]:
    lines, meta = run_command(python("benchmarks/loader_speed.py", *(extra or ["--scale", "20"])))
    before = next((x["loadavg_before"][0] for x in lines if "loadavg_before" in x), None)
    after = next((x["loadavg_after"][0] for x in lines if "loadavg_after" in x), None)
    load = [round(v, 2) for v in (before, after) if v is not None] or meta["load_avg"]
    keep = ("format", "file_mb", "seconds", "cpu_seconds", "mb_per_s", "ratio", "peak_mb",
            "data_mb", "edge_file_mb", "edge_seconds", "edge_mb_per_s", "nodes", "edges")
    return [{**{k: x[k] for k in keep if k in x}, "id": f"loader:{x['format']}",
             "kind": "format", "group": "loaders:table", **_meta(meta, load_avg=load)}
            for x in lines if "format" in x]


# ----------------------------------------------------------------------------- distributed
DIST_RUNS = [
    ["--shape", "1gbit", "--methods", "gp", "--ps", "1,0.1,0.01", "--data", "kronecker:17:16",
     "--nprocs", "4", "--epochs", "15", "--hidden", "64", "--rounds", "2", "--no-single",
     "--out", "runs/shaped_kron"],
    ["--shape", "50mbit", "--latency", "400ms", "--methods", "gp", "--ps", "1,0.1,0.01",
     "--data", f"{DATA}/facebook", "--nprocs", "4", "--epochs", "20", "--hidden", "64",
     "--rounds", "2", "--no-single", "--out", "runs/shaped_fb"],
    ["--shape", "1gbit", "--methods", "hp,gp,rp", "--ps", "1", "--data", "kronecker:17:16",
     "--nprocs", "4", "--epochs", "10", "--hidden", "64", "--no-single",
     "--out", "runs/shaped_kron_methods"],
    ["--shape", "50mbit", "--latency", "400ms", "--methods", "hp,gp,rp", "--ps", "1", "--data",
     f"{DATA}/facebook", "--nprocs", "4", "--epochs", "10", "--hidden", "64", "--no-single",
     "--out", "runs/shaped_fb_methods"],
]


def run_distributed(extra: list[str]) -> list[dict]:
    recs = []
    for args in ([extra] if extra else DIST_RUNS):
        lines, meta = run_command(python("benchmarks/dist_bns.py", *args))
        if any(x.get("kind") == "skip" for x in lines):
            raise BenchmarkFailed(next(x["reason"] for x in lines if x.get("kind") == "skip"))
        link = next((x["measured_gbit_s"] for x in lines if x.get("kind") == "link"), None)
        for x in lines:
            name = x.get("dataset", "").replace("kronecker_", "kronecker:").replace("_", ":")
            if x.get("kind") == "summary" and "epoch_s_p0.1" in x:
                recs.append(_meta(
                    meta, id=f"shaped:{x['dataset']}" + ("" if x["method"] == "gp" else
                                                         f":{x['method']}"),
                    kind="shaped", dataset=name,
                    shape=x["shape"], measured_gbit_s=link, method=x["method"],
                    epoch_s={p: x.get(f"epoch_s_p{p}") for p in ("1.0", "0.1", "0.01")},
                    comm_share_p1=x.get("comm_share_p1.0"), allreduce_s_p1=None,
                    epoch_ratio=x.get("epoch_ratio_p0.1_vs_p1"),
                    epoch_ratio_rounds=x.get("epoch_ratio_p0.1_vs_p1_rounds", []),
                    bytes_ratio=x.get("bytes_sent_ratio_p0.1_vs_p1"),
                    test_p1=x.get("test_p1.0"), test_p01=x.get("test_p0.1")))
                recs[-1]["epoch_s"]["1"] = recs[-1]["epoch_s"].pop("1.0")
            elif x.get("kind") == "methods":
                recs.append(_meta(meta, id=f"methods:{x['dataset']}", kind="methods",
                                  dataset=name, shape=x["shape"], epoch_s_p1=x["epoch_s_p1"],
                                  bytes_mb_p1={m: b / 1e6 for m, b in x["bytes_sent_p1"].items()}))
    return recs


# ----------------------------------------------------------------------------- partitioning
PARTITION_DATA = [f"{DATA}/facebook", f"{DATA}/tolokers", "kronecker:17:8"]


def run_partition(extra: list[str]) -> list[dict]:
    import _results_tables as tables
    recs, graphs, rows = [], [], []
    for data in (extra or PARTITION_DATA):
        stem = Path(data).name.replace(":", "_")
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / f"{stem}.json"
            _, meta = run_command(scalegnn(
                "partition", "compare", data, "--methods", "hp,gp,gp:cut,rp", "--parts",
                "4,8,16,32", "--out", str(out)))
            res = json.loads(out.read_text())
        meta["command"] = meta["command"].replace(str(out), f"runs/partition/{stem}.json")
        name = Path(data).name
        g = _meta(meta, id=f"graph:{name}", kind="graph", dataset=name, nodes=res["num_nodes"],
                  entries=res["num_entries"], group=f"partition:{name}")
        graphs.append(g)
        recs.append(g)
        for r in res["rows"]:
            row = _meta(meta, id=f"row:{name}:{r['method']}:{r['parts']}", kind="row",
                        dataset=name, group=f"partition:{name}",
                        **{k: r[k] for k in ("method", "parts", "volume_avg", "volume_max",
                                              "messages_avg", "messages_max",
                                              "compute_imbalance", "partition_s")})
            rows.append(row)
            recs.append(row)
    if not extra:
        ratios = tables._ratios(graphs, rows)
        recs.append({"id": "ratios", "kind": "ratios", "date": _today(),
                     "command": "(geometric means over the three `partition compare` tables)",
                     **ratios})
    return recs


def run_shp(extra: list[str]) -> list[dict]:
    data = extra[0] if extra else f"{DATA}/facebook"
    parts = extra[1] if len(extra) > 1 else "4,8,16,32"
    name = Path(data).name
    stem = name.replace(":", "_")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / f"shp_{stem}.json"
        _, meta = run_command(scalegnn(
            "partition", "shp", data, "--parts", parts, "--sampler", "rw", "--budget",
            "num_root=500,depth=2", "--theta", "0.1", "--delta", "0.5", "--eval-batches", "200",
            "--json", str(out)))
        res = json.loads(out.read_text())
    meta["command"] = meta["command"].replace(str(out), f"runs/partition/shp_{stem}.json")
    keep = ("parts", "batches", "nets_needed", "hp_volume", "hp_sem", "shp_volume", "shp_sem",
            "shp_vs_hp", "hp_s", "shp_s")
    return [_meta(meta, id=f"shp:{name}:{r['parts']}", kind="shp", dataset=name,
                  group=f"shp:{name}", sampler="rw", budget="num_root=500,depth=2", theta=0.1,
                  delta=0.5, eval_batches=200, **{k: r[k] for k in keep}) for r in res["rows"]]
