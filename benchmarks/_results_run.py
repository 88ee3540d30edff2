"""Runners of ``benchmarks/results.py run``: one per section of the results page.

Each runner runs the section's benchmark (in a subprocess, from the repository root), reads
its JSON output and returns the records to store, each with its ``command``, ``date`` and
``load_avg`` ([1-min load before, 1-min load after] unless the benchmark measures its own).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = "../shared/data"


def host_cpu() -> str:
    """The machine a record was measured on, e.g. ``AMD EPYC (znver4), 2 CPUs``: the model
    name of ``/proc/cpuinfo`` and LLVM's name for the microarchitecture (the kernels' timings
    depend on it: gathers, scatters and compressed stores cost differently on Intel and AMD
    cores with the same AVX-512 flags)."""
    from llvmlite import binding as llvm
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = " ".join(line.split(":", 1)[1].split())
                break
    except OSError:
        pass
    return f"{model} ({llvm.get_host_cpu_name()}), {os.cpu_count()} CPUs"


class BenchmarkFailed(RuntimeError):
    """A benchmark exited non-zero or printed nothing usable."""


def _today() -> str:
    return time.strftime("%Y-%m-%d")


def _load1() -> float:
    return round(os.getloadavg()[0], 2)


def _display(argv: list[str]) -> str:
    """The command as a person types it: ``python`` for this interpreter, scalegnn by name."""
    if argv[:3] == [sys.executable, "-m", "scalegnn"]:
        argv = ["scalegnn", *argv[3:]]
    elif argv[:1] == [sys.executable]:
        argv = ["python", *argv[1:]]
    return " ".join(shlex.quote(a) for a in argv)


def run_command(argv: list[str], allow_fail: bool = False) -> tuple[list[dict], dict]:
    """Run ``argv`` in the repository root; its JSON lines and the run's metadata (a non-zero
    exit raises, unless ``allow_fail``: the caller reads the failures from the lines)."""
    before = _load1()
    t0 = time.perf_counter()
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False)
    meta = {"command": _display(argv), "date": _today(), "load_avg": [before, _load1()],
            "wall_s": round(time.perf_counter() - t0, 1)}
    if proc.returncode != 0 and not allow_fail:
        tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise BenchmarkFailed(f"{meta['command']} exited {proc.returncode}: {tail}")
    lines = []
    for line in proc.stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                lines.append(json.loads(line))
            except ValueError:
                continue
    return lines, meta


def scalegnn(*args: str) -> list[str]:
    return [sys.executable, "-m", "scalegnn", *args]


def python(script: str, *args: str) -> list[str]:
    return [sys.executable, script, *args]


# ----------------------------------------------------------------------------- accuracy
def run_accuracy(extra: list[str]) -> list[dict]:
    """``python benchmarks/accuracy.py``: one record per case, as the script prints it."""
    lines, meta = run_command(python("benchmarks/accuracy.py", *extra))
    if not lines:
        raise BenchmarkFailed(f"{meta['command']} printed no records")
    return [{**rec, "id": rec["case"], "command": meta["command"], "date": meta["date"],
             "load_avg": meta["load_avg"]} for rec in lines]


def _meta(meta: dict, **extra) -> dict:
    return {"command": meta["command"], "date": meta["date"], "load_avg": meta["load_avg"],
            **extra}


def _options(extra: list[str], **defaults) -> argparse.Namespace:
    """The runner's own options (``--datasets a,b``, ``--seeds 0,1``...) from ``--args``."""
    p = argparse.ArgumentParser(prog="results.py run --args", add_help=False)
    for name, value in defaults.items():
        p.add_argument(f"--{name.replace('_', '-')}", default=value,
                       action="store_true" if value is False else "store")
    return p.parse_args(extra)


def _csv(text, cast=str) -> list:
    return [cast(x) for x in str(text).split(",") if x]


def train_summaries(data: str, config: str, seeds) -> tuple[list[dict], dict]:
    """``scalegnn train`` once per seed into a temporary run directory; the summaries."""
    out, meta = [], None
    for seed in seeds:
        with tempfile.TemporaryDirectory() as tmp:
            argv = scalegnn("train", "--data", data, "--config", config, "--seed", str(seed),
                            "--out", str(Path(tmp) / "run"), "--no-progress")
            _, m = run_command(argv)
            out.append(json.loads((Path(tmp) / "run" / "summary.json").read_text()))
        if meta is None:
            meta = m
        else:
            meta["load_avg"] = [meta["load_avg"][0], m["load_avg"][1]]
    meta["command"] = meta["command"].replace(f"--seed {seeds[0]}", "--seed S")
    meta["command"] = meta["command"].split(" --out ")[0]
    return out, meta


# ----------------------------------------------------------------------------- shaDow-GNN
def run_shadow(extra: list[str]) -> list[dict]:
    o = _options(extra, datasets="cora,facebook,tolokers", seeds="0,1,2", no_extras=False)
    seeds, recs = _csv(o.seeds, int), []
    for ds in _csv(o.datasets):
        config = f"configs/shared/{ds}_shadow.yml"
        sums, meta = train_summaries(f"{DATA}/{ds}", config, seeds)
        metric = sums[0]["metric"]
        test = [round(s["test"][metric], 4) for s in sums]
        recs.append(_meta(meta, id=f"shadow:{ds}", kind="seeds", dataset=ds, config=config,
                          metric=metric, seeds=seeds, test=test,
                          mean=round(sum(test) / len(test), 4)))
    if o.no_extras:
        return recs
    lines, meta = run_command(scalegnn("bench", "extract", "--data", f"{DATA}/facebook",
                                       "--repeats", "3"))
    for r in lines:
        rates = {f"targets_per_s_{th}_threads": v["targets_per_s"]
                 for th, v in r.get("threads", {}).items()}
        recs.append(_meta(meta, id=f"extract:{r['extractor']}", kind="extract",
                          extractor=r["extractor"], **rates,
                          precompute_s=r.get("precompute_seconds"),
                          nodes_per_target=r.get("nodes_per_target"),
                          edges_per_target=r.get("edges_per_target")))
    lines, meta = run_command(python("benchmarks/shadow_inference_memory.py"))
    for r in lines:
        recs.append(_meta(meta, id=f"inference:{r['extractor']}:{r['scale']}", kind="inference",
                          extractor=r["extractor"], nodes=r["nodes"], edges=r["edges"],
                          targets=r["targets"], inference_added_mb=r["inference_added_mb"],
                          seconds=r["seconds"]))
    return recs


# ----------------------------------------------------------------------------- link prediction
def run_link(extra: list[str]) -> list[dict]:
    o = _options(extra, datasets="citeseer,facebook", seeds="0,1,2")
    seeds, recs = _csv(o.seeds, int), []
    for ds in _csv(o.datasets):
        config = f"configs/shared/{ds}_link.yml"
        sums, meta = train_summaries(f"{DATA}/{ds}", config, seeds)
        hits = [round(s["test"]["hits@50"], 4) for s in sums]
        mrr = [round(s["test"]["mrr"], 4) for s in sums]
        recs.append(_meta(meta, id=f"link:{ds}", kind="link", dataset=ds, config=config,
                          seeds=seeds, hits50=hits, hits50_mean=round(sum(hits) / len(hits), 4),
                          mrr=mrr, mrr_mean=round(sum(mrr) / len(mrr), 4)))
        lines, meta = run_command(python("benchmarks/shadow_link_heuristics.py", "--data",
                                         f"{DATA}/{ds}"))
        for r in lines:
            recs.append(_meta(meta, id=f"heuristic:{ds}:{r['score']}", kind="heuristic",
                              dataset=ds, score=r["score"], hits50=r["test_hits@50"],
                              mrr=r["test_mrr"]))
    return recs


# ----------------------------------------------------------------------------- sparse features
def _timed_train(args: list[str]) -> tuple[dict, list[dict], float, dict]:
    """``/usr/bin/time -v scalegnn train ARGS``: summary, epoch records, peak RSS (MiB)."""
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        argv = ["/usr/bin/time", "-v", *scalegnn("train", *args, "--out", str(run),
                                                 "--no-progress")]
        before = _load1()
        proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise BenchmarkFailed(f"{_display(argv)}: {proc.stderr.strip()[-300:]}")
        peak = next(int(line.split(":")[1]) for line in proc.stderr.splitlines()
                    if "Maximum resident set size" in line) / 1024
        epochs = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines() if x]
        return (json.loads((run / "summary.json").read_text()), epochs, peak,
                {"load_avg": [before, _load1()]})


def run_sparse(extra: list[str]) -> list[dict]:
    o = _options(extra, seeds="0,1,2", no_facebook=False)
    recs = []
    for shape in ([], ["--rows", "2708", "--features", "1433", "--hidden", "256",
                       "--densities", "0.1", "0.2"]):
        lines, meta = run_command(python("benchmarks/sparse_features.py", *shape))
        for r in lines:
            recs.append(_meta(meta, id=f"density:{r['rows']}x{r['features']}x{r['hidden']}:"
                              f"{r['density']:g}", kind="density", rows=r["rows"],
                              features=r["features"], hidden=r["hidden"], density=r["density"],
                              sparse_over_dense=r["sparse_over_dense"], threads=r["threads"],
                              group="sparse:threshold"))
    if o.no_facebook:
        return recs
    runs = {"dense": [], "sparse": []}
    loads = []
    for seed in _csv(o.seeds, int):
        for fmt in ("dense", "sparse"):       # alternate dense and sparse for each seed
            res = _timed_train(["--config", "configs/shared/facebook_rw.yml", "--data",
                                f"{DATA}/facebook", "--seed", str(seed), "--set",
                                f"params.feature_format={fmt}"])
            runs[fmt].append(res)
            loads += res[3]["load_avg"]
    command = ("/usr/bin/time -v scalegnn train --config configs/shared/facebook_rw.yml "
               "--data ../shared/data/facebook --out RUN --no-progress --seed S "
               "--set params.feature_format=dense|sparse")
    for fmt, label in (("dense", "dense"), ("sparse", "CSR (`sparse`)")):
        sums = [s for s, _, _, _ in runs[fmt]]
        test = [round(s["test"]["accuracy"], 4) for s in sums]
        epochs = [e for _, ep, _, _ in runs[fmt] for e in ep]
        evals = [e["eval_s"] for e in epochs if e.get("eval_s")]
        recs.append({"id": f"facebook:{fmt}", "kind": "facebook", "feature_format": fmt,
                     "label": label, "seeds": _csv(o.seeds, int), "test": test,
                     "mean": round(sum(test) / len(test), 4),
                     "peak_rss_mib": round(max(p for _, _, p, _ in runs[fmt])),
                     "epoch_s": round(sum(e["sample_s"] + e["compute_s"] for e in epochs)
                                      / len(epochs), 2),
                     "eval_s": round(sum(evals) / max(len(evals), 1), 2),
                     "train_wall_s": round(sum(s["time"]["wall_s"] for s in sums) / len(sums)),
                     "command": command, "date": _today(),
                     "load_avg": [min(loads), max(loads)], "group": "sparse:facebook"})
    return recs


def runners() -> dict:
    """Every section's runner (the performance ones live in _results_run_perf)."""
    import _results_compare as compare
    import _results_modes as modes
    import _results_run_perf as perf
    import _results_sampling as sampling
    import _results_shadow_default as shadow_default
    return {"accuracy": run_accuracy, "shadow": run_shadow, "link": run_link,
            "sparse": run_sparse, "speed": perf.run_speed, "loaders": perf.run_loaders,
            "distributed": perf.run_distributed, "partition": perf.run_partition,
            "shp": perf.run_shp, "modes": modes.run_modes, "compare": compare.run_compare,
            "shadow_default": shadow_default.run, "sampling": sampling.run}
