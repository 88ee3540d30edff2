"""The scale targets of issue 25, measured: ``bench scale`` at the smallest and largest scale in
alternating, separate invocations, plus one sweep over all scales; optionally stored for the
results page.

    python benchmarks/scale_alternate.py --data-dir DIR [--pair 20,24] [--rounds 3]
        [--sweep 20,21,22,23,24] [--store] [--replay LOG] [BENCH SCALE OPTIONS...]

``--rounds`` R runs ``scalegnn bench scale --scales A`` and ``--scales B`` alternately
(A, B, A, B, ...: 2R processes, so that both see the same drift in machine load); the
iteration ratio is the median of B's per-run iteration medians over the median of A's, with
the same for process CPU per iteration (``cpu_per_iteration``) beside it. ``--sweep`` first
runs one ``bench scale --scales S,S,...`` for the page's table (peak RSS against the bound at
every scale). Every benchmark line is printed as it comes, as ``readme_numbers.py`` prints
it (``{"bench", "command", "load_avg", "record"}``), then one ``{"alternation": ...}`` line.
``--store`` merges the scale record (:func:`_results_run_perf.scale_record`) into
``docs/results/speed.json``; ``python benchmarks/results.py render`` then writes the page.
``--replay LOG`` runs nothing: it reads the lines an earlier run printed (same options).
Graphs are generated under ``--data-dir`` on first use (2^24: minutes) and reused; other
options are passed to every ``bench scale`` run.
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from readme_numbers import figure_lines, run_bench


def _bench(args: list[str]) -> list[dict]:
    res = run_bench("scale", args)
    lines = figure_lines(res)
    for line in lines:
        print(json.dumps(line), flush=True)
    if res["rc"] != 0:
        raise SystemExit(f"scale_alternate.py: {res['command']} failed: {res['error']}")
    return lines


def alternation(runs: list[dict], pair: list[int]) -> dict:
    """Medians of the alternating runs' per-scale records (``runs``: bench scale records)."""
    lo, hi = ([r for r in runs if r["scale"] == s] for s in pair)

    def med(rs, key):
        return statistics.median(r[key] for r in rs)

    return {"pair": pair, "rounds": min(len(lo), len(hi)),
            "runs": [{"scale": r["scale"], "it_median": r["iteration_s_median"],
                      "cpu_it": r["cpu_per_iteration"], "sampler_s": r["sampler_s_per_subgraph"],
                      "sampling_share": r["sampling_share"], "step_s": r["step_s_median"],
                      "load_avg": r["load_avg_start"][:1] + r["load_avg_end"][:1]}
                     for r in runs],
            "iteration_ratio": med(hi, "iteration_s_median") / med(lo, "iteration_s_median"),
            "cpu_ratio": med(hi, "cpu_per_iteration") / med(lo, "cpu_per_iteration"),
            "sampler_s": [med(lo, "sampler_s_per_subgraph"), med(hi, "sampler_s_per_subgraph")]}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data-dir", required=True, help="generated graphs, kept and reused")
    p.add_argument("--pair", default="20,24", help="the two scales to alternate (20,24)")
    p.add_argument("--rounds", type=int, default=3, help="alternating rounds (3)")
    p.add_argument("--sweep", default=None, help="scales of one sweep first (e.g. 20,21,22,23,24)")
    p.add_argument("--store", action="store_true", help="merge into docs/results/speed.json")
    p.add_argument("--replay", default=None, metavar="LOG",
                   help="read an earlier run's printed lines instead of running")
    args, extra = p.parse_known_args(argv)
    pair = [int(s) for s in args.pair.split(",")]
    if len(pair) != 2 or args.rounds < 1:
        p.error("--pair takes two scales and --rounds at least 1")
    if args.store and not args.sweep:
        p.error("--store needs --sweep (the page's table)")
    common = ["--data-dir", args.data_dir, *extra]
    if args.replay:
        lines = [json.loads(x) for x in Path(args.replay).read_text().splitlines()
                 if x.startswith("{") and "record" in x]
        n = len(args.sweep.split(",")) + 1 if args.sweep else 0   # its records + summary
        sweep, runs = lines[:n], [x["record"] for x in lines[n:]
                                  if not x["record"].get("summary")]
    else:
        sweep = _bench(["--scales", args.sweep, *common]) if args.sweep else []
        runs = []
        for _ in range(args.rounds):
            for s in pair:
                runs += [x["record"] for x in _bench(["--scales", str(s), *common])
                         if not x["record"].get("summary")]
    alt = alternation(runs, pair)
    print(json.dumps({"alternation": alt}), flush=True)
    if args.store:
        import _results_run_perf as perf
        import results
        argv = [a for a in (sys.argv[1:] if argv is None else argv)
                if a not in ("--store", "--replay", args.replay)]
        rec = perf.scale_record(sweep, alt, "python benchmarks/scale_alternate.py "
                                + shlex.join(argv))
        rec["cpu"] = results.runners.host_cpu()
        data = results.load_section("speed")
        data["records"] = results.merge(data["records"], [rec])
        results.save_section("speed", data)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
