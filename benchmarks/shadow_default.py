"""shaDow-GNN's shipped default config against GraphSAINT's built-in default, per graph and seed.

    python benchmarks/shadow_default.py run [--graphs cora,citeseer] [--seeds 0,1,2] [--jobs 2]
    python benchmarks/shadow_default.py store [--cost FILE --label NAME]...

``run`` trains ``scalegnn train --data G --seed S`` (GraphSAINT: no --config, the built-in
default) and the same with ``--config src/scalegnn/configs/methods/shadow.yml`` (shaDow-GNN),
under ``nice``, ``--jobs`` runs at a time with ``--threads`` each, and appends one JSON line per
run (test metric, best epoch, epochs run, wall and CPU seconds, load average) to
``--log`` as soon as it ends, so a partial sweep keeps what it measured. ``store`` groups the
lines by graph and method into the records of the results page's ``shadow_default`` section
(mean, std, per seed, gap shaDow - GraphSAINT over the seeds both have), and
``benchmarks/shadow_cost.py`` outputs (``--cost``) as cost records labelled by the code
that measured them (``--label``).
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
CONFIG = "src/scalegnn/configs/methods/shadow.yml"
GRAPHS = {
    "cora": str(DATA / "cora"),
    "citeseer": str(DATA / "citeseer"),
    "facebook": str(DATA / "facebook"),
    "tolokers": str(DATA / "tolokers"),
    "blogcatalog": str(DATA / "blogcatalog"),
    # planted partition, 4,000 nodes, 5 classes: edge homophily about p_in + (1 - p_in) / 5
    "planted_homophilous": "planted:nodes=4000,classes=5,features=32,p_in=0.7",
    "planted_heterophilous": "planted:nodes=4000,classes=5,features=32,p_in=0.15",
}
METHODS = {"graphsaint": [], "shadow": ["--config", CONFIG]}
LOG = Path(tempfile.gettempdir()) / "scalegnn_shadow_default_runs.jsonl"
_lock = threading.Lock()


def one_run(graph: str, method: str, seed: int, threads: int, log: Path) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        argv = ["nice", "-n", "10", str(ROOT / ".venv" / "bin" / "scalegnn"), "train",
                "--data", GRAPHS[graph], *METHODS[method], "--seed", str(seed),
                "--threads", str(threads), "--out", f"{tmp}/run", "--no-progress"]
        load0, t0 = os.getloadavg()[0], time.perf_counter()
        with open(f"{tmp}/stderr", "w") as errf:
            proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=errf)
            _, _, ru = os.wait4(proc.pid, 0)   # the child's own CPU time
            proc.returncode = 0
        wall = time.perf_counter() - t0
        err = Path(f"{tmp}/stderr").read_text()
        summary = json.loads((Path(tmp) / "run" / "summary.json").read_text()) \
            if (Path(tmp) / "run" / "summary.json").exists() else None
    rec = {"graph": graph, "method": method, "seed": seed, "threads": threads,
           "wall_s": round(wall, 1), "cpu_s": round(ru.ru_utime + ru.ru_stime, 1),
           "load_avg": [round(load0, 2), round(os.getloadavg()[0], 2)],
           "date": time.strftime("%Y-%m-%d"), "command": " ".join(
               ["scalegnn train --data", GRAPHS[graph].replace(str(ROOT.parent), ".."),
                *METHODS[method], "--seed", str(seed)])}
    if summary is None:
        rec["error"] = err.strip().splitlines()[-1] if err.strip() else "no summary.json"
    else:
        metric = summary["metric"]
        rec.update(metric=metric, test=round(summary["test"][metric], 4),
                   val=round(summary["val"][metric], 4), best_epoch=summary["best_epoch"],
                   epochs_run=summary["epochs_run"],
                   time={k: round(v, 1) for k, v in summary["time"].items()})
    with _lock:
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "a", encoding="utf-8") as f:
            f.write(json.dumps(rec) + "\n")
    print(json.dumps(rec), flush=True)
    return rec


def cmd_run(args) -> int:
    graphs = args.graphs.split(",")
    seeds = [int(s) for s in args.seeds.split(",")]
    methods = args.methods.split(",")
    jobs = [(g, m, s) for s in seeds for g in graphs for m in methods]
    with cf.ThreadPoolExecutor(max_workers=args.jobs) as ex:
        list(ex.map(lambda j: one_run(*j, args.threads, Path(args.log)), jobs))
    return 0


def records(lines: list[dict]) -> list[dict]:
    """One record per (graph, method) from the run lines (the last line of a repeated seed)."""
    runs: dict = {}
    for r in lines:
        if "error" not in r:
            runs.setdefault((r["graph"], r["method"]), {})[r["seed"]] = r
    out = []
    for (graph, method), by_seed in sorted(runs.items()):
        seeds = sorted(by_seed)
        test = [by_seed[s]["test"] for s in seeds]
        first = by_seed[seeds[0]]
        rec = {"id": f"{graph}:{method}", "kind": "default", "graph": graph, "method": method,
               "data": GRAPHS[graph].replace(str(ROOT.parent), ".."),
               "config": CONFIG if method == "shadow" else "built-in default",
               "metric": first["metric"], "seeds": seeds, "test": test,
               "mean": round(float(np.mean(test)), 4), "std": round(float(np.std(test)), 4),
               "best_epoch": [by_seed[s]["best_epoch"] for s in seeds],
               "epochs_run": [by_seed[s]["epochs_run"] for s in seeds],
               "wall_s": [by_seed[s]["wall_s"] for s in seeds],
               "cpu_s": [by_seed[s]["cpu_s"] for s in seeds],
               "date": first["date"], "command": first["command"].replace(
                   f"--seed {seeds[0]}", "--seed S"),
               "load_avg": [min(by_seed[s]["load_avg"][0] for s in seeds),
                            max(by_seed[s]["load_avg"][1] for s in seeds)]}
        out.append(rec)
    saint = {r["graph"]: r for r in out if r["method"] == "graphsaint"}
    for r in out:
        base = saint.get(r["graph"])
        if r["method"] == "shadow" and base:
            both = [s for s in r["seeds"] if s in base["seeds"]]
            mine = [r["test"][r["seeds"].index(s)] for s in both]
            theirs = [base["test"][base["seeds"].index(s)] for s in both]
            r["gap_seeds"] = both
            r["gap"] = round(float(np.mean(mine) - np.mean(theirs)), 4) if both else None
    return out


def cost_records(lines: list[dict], command: str, label: str) -> list[dict]:
    """``benchmarks/shadow_cost.py``'s lines as records (``label``: which code measured them)."""
    return [{**r, "id": f"cost:{r['dataset']}:{r['method']}:{label}", "kind": "cost",
             "label": label, "command": command, "date": time.strftime("%Y-%m-%d")}
            for r in lines]


def cmd_store(args) -> int:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import results   # the results page's store (benchmarks/results.py)
    lines = [json.loads(x) for x in Path(args.log).read_text().splitlines() if x.strip()]
    new = records(lines)
    for path, label in zip(args.cost, args.label):
        cost = [json.loads(x) for x in Path(path).read_text().splitlines() if x.strip()]
        new += cost_records(cost, "python benchmarks/shadow_cost.py", label)
    data = results.load_section("shadow_default")
    data["records"] = results.merge(data["records"], new)
    results.save_section("shadow_default", data)
    print(f"stored {len(data['records'])} record(s) in docs/results/shadow_default.json")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="train every (graph, method, seed); append JSON lines")
    r.add_argument("--graphs", default=",".join(GRAPHS))
    r.add_argument("--methods", default=",".join(METHODS))
    r.add_argument("--seeds", default="0,1,2")
    r.add_argument("--jobs", type=int, default=2)
    r.add_argument("--threads", type=int, default=1)
    r.add_argument("--log", default=str(LOG))
    r.set_defaults(func=cmd_run)
    s = sub.add_parser("store", help="group the JSON lines into the results page's records")
    s.add_argument("--log", default=str(LOG))
    s.add_argument("--cost", action="append", default=[],
                   help="a shadow_cost.py output file (repeatable, with --label each)")
    s.add_argument("--label", action="append", default=[],
                   help="which code measured the --cost file of the same position")
    s.set_defaults(func=cmd_store)
    args = p.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
