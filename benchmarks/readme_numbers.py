"""Regenerate the README's speed figures: run the benchmarks behind its "**Speed**" bullets.

    python benchmarks/readme_numbers.py [--quick] [--with-scale] [--data-dir DIR] [--out FILE]

Runs, each in its own process (``python -m scalegnn bench ...``), the commands the README
quotes: ``bench sample``, ``bench step``, ``bench spmm``, ``bench epoch`` and, with
``--with-scale``, ``bench scale --scales 20,21,22,23,24``. Prints

1. one JSON line per figure a benchmark reported (``{"bench", "command", "load_avg",
   "record"}``): ``load_avg`` is the record's own load average where the benchmark measures
   one, else ``os.getloadavg()`` right after its command ended, and ``load_avg_start`` the one
   before it began;
2. the markdown bullets for the README's speed section with those numbers, the commands and
   the load averages (also written atomically to ``--out``).

``--quick`` runs fewer repeats (same workloads); ``--tiny`` swaps in tiny workloads for tests
(its numbers are not the README's). ``--data-dir`` keeps the generated graphs of ``bench
epoch`` / ``bench scale`` there for later runs. A benchmark that fails is reported (its exit
status in the JSON and the bullets) and the script exits 1 after running the others.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

# the README's commands, (name, arguments after `scalegnn bench NAME`)
README = {
    "sample": ["--graph", "kronecker:17:8", "--threads", "1,2", "--repeats", "5"],
    "step": ["--repeat", "9"],
    "spmm": [],
    "epoch": [],
    "scale": ["--scales", "20,21,22,23,24"],
}
QUICK = {"sample": ["--repeats", "2"], "step": ["--repeat", "3"], "spmm": ["--repeat", "2"],
         "epoch": ["--epochs", "2"], "scale": ["--iterations", "5", "--warmup", "1"]}
TINY = {
    "sample": ["--graph", "kronecker:10:4", "--threads", "1", "--repeats", "1", "--count", "2",
               "--samplers", "rw,mrw", "--coverage", "0", "--budget", "rw.num_root=50",
               "--budget", "mrw.size_subgraph=200", "--budget", "mrw.size_frontier=40"],
    "step": ["--dataset", "kronecker:10:4", "--size-subgraph", "300", "--size-frontier", "50",
             "--hidden", "32", "--repeat", "2", "--threads", "1"],
    "spmm": ["--n", "300", "--f", "16", "--degree", "4", "--repeat", "2", "--no-membw",
             "--threads", "1"],
    "epoch": ["--scale", "10", "--edge-factor", "4", "--features", "8", "--labels", "5",
              "--set", "network.dim=16", "--set", "phase.num_root=60",
              "--set", "params.sample_coverage=4", "--threads", "1", "--epochs", "2"],
    "scale": ["--scales", "10,11", "--iterations", "2", "--warmup", "1", "--hidden", "16",
              "--size-subgraph", "200", "--size-frontier", "40", "--threads", "1"],
}


def with_options(args: list[str], extra: list[str]) -> list[str]:
    """``args`` with each ``--flag value`` pair of ``extra`` replacing the same flag's value
    (or appended when ``args`` lacks it)."""
    out = list(args)
    for flag, value in zip(extra[::2], extra[1::2]):
        if flag in out:
            out[out.index(flag) + 1] = value
        else:
            out += [flag, value]
    return out


def bench_args(name: str, quick: bool, tiny: bool, data_dir) -> list[str]:
    """The arguments of ``scalegnn bench NAME`` for this run."""
    args = list(TINY[name] if tiny else README[name])
    if quick and not tiny:
        args = with_options(args, QUICK[name])
    if data_dir is not None and name == "epoch":
        tag = "kron10" if tiny else "kron17"
        args += ["--data", str(Path(data_dir) / f"bench_epoch_{tag}")]
    if data_dir is not None and name == "scale":
        args += ["--data-dir", str(Path(data_dir) / "bench_scale")]
    return args


def run_bench(name: str, args: list[str]) -> dict:
    """Run one benchmark; its JSON records, exit status and load averages around it."""
    cmd = [sys.executable, "-m", "scalegnn", "bench", name, *args]
    start = list(os.getloadavg())
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    records = []
    for line in proc.stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                records.append(json.loads(line))
            except ValueError:
                continue
    tail = proc.stderr.strip().splitlines()[-1:] if proc.returncode else []
    return {"name": name, "command": " ".join(["scalegnn", "bench", name,
                                               *map(shlex.quote, args)]),
            "rc": proc.returncode, "records": records, "load_avg_start": start,
            "load_avg_end": list(os.getloadavg()), "seconds": time.perf_counter() - t0,
            "error": tail[0] if tail else None}


def record_load(rec: dict, fallback) -> list:
    """The load average a record ran under: its own field where the benchmark keeps one."""
    if "load_avg" in rec:
        return rec["load_avg"]
    if "load_avg_1min" in rec:
        return [rec["load_avg_1min"]]
    if "load_avg_end" in rec:
        return rec["load_avg_end"]
    if "load_avg_start" in rec:
        return rec["load_avg_start"]
    return fallback


def figure_lines(result: dict) -> list[dict]:
    """The JSON lines of one benchmark's figures."""
    if result["rc"] != 0:
        return [{"bench": result["name"], "command": result["command"], "rc": result["rc"],
                 "error": result["error"], "load_avg": result["load_avg_end"]}]
    return [{"bench": result["name"], "command": result["command"],
             "load_avg": record_load(r, result["load_avg_end"]),
             "load_avg_start": result["load_avg_start"], "record": r}
            for r in result["records"]]


def _load(values) -> str:
    return "/".join(f"{v:.1f}" for v in values)


def _span(values, fmt="{:.2f}") -> str:
    lo, hi = min(values), max(values)
    return fmt.format(lo) if fmt.format(lo) == fmt.format(hi) else \
        f"{fmt.format(lo)}-{fmt.format(hi)}"


def bullet_sample(res) -> str:
    rows = [r for r in res["records"] if "subgraphs_per_s" in r]
    top = max(r["threads"] for r in rows)
    parts = [f"{r['sampler']} {r['subgraphs_per_s']:.0f}/s" for r in rows if r["threads"] == top]
    speed = [r["speedup_vs_first"] for r in rows if "speedup_vs_first" in r]
    loads = [r["load_avg_1min"] for r in rows]
    return (f"- Sampling, `{res['command']}` (best of the repeats, {top} threads): "
            + ", ".join(parts)
            + (f"; {top} threads = {_span(speed)}x one thread" if speed else "")
            + f" (load average {_span(loads, '{:.1f}')}).")


def bullet_step(res) -> str:
    recs = [r for r in res["records"] if r.get("bench") == "step"]
    parts = []
    for r in recs:
        verdict = "met" if r["ratio_vs_gemm"] <= r["target_ratio"] else "missed"
        parts.append(f"tail {r['tail']}: one iteration takes **{r['ratio_vs_gemm']:.3f}x** its "
                     f"dense GEMMs replayed alone, target {verdict} (per-round ratios "
                     f"{_span(r['ratio_all'])}; "
                     f"{r['iteration_ms']:.0f} ms vs {r['gemm_alone_ms']:.0f} ms, SpMM "
                     f"{r['spmm_ms']:.0f} ms, other {r['other_ms']:.0f} ms; load average "
                     f"{_load(r['load_avg'])})")
    return (f"- Training step, `{res['command']}` (defaults: fused tail, denormals flushed; "
            f"{recs[0]['subgraph_nodes_median']:.0f}-node frontier subgraphs; target <= "
            f"{recs[0]['target_ratio']}): " + "; ".join(parts) + ".")


def bullet_spmm(res) -> str:
    cases = [r for r in res["records"] if "ratio_vs_torch" in r]
    parts = [f"n={r['n']}/f={r['f']} {r['ratio_vs_torch']:.2f}x (backward "
             f"{r['ratio_backward_vs_torch']:.2f}x, plain loop {r['ratio_plain_vs_torch']:.2f}x)"
             for r in cases]
    return (f"- SpMM, `{res['command']}` (picked kernel vs torch.sparse.mm CSR): "
            + ", ".join(parts) + f" (load average {_load(res['load_avg_end'])}).")


def bullet_epoch(res) -> str:
    s = next(r for r in res["records"] if r.get("summary"))
    epochs = [r for r in res["records"] if not r.get("summary")]
    ratio = s.get("ratio_vs_gemm_floor_median")
    floor = s.get("gemm_floor_s_median")
    per = [r["ratio_vs_gemm_floor"] for r in epochs if r.get("ratio_vs_gemm_floor")]
    loads = [r["load_avg"][0] for r in epochs if "load_avg" in r]
    ratio_txt = (f"**{ratio:.3f}x** the fp32 GEMM floor of the same iterations replayed alone "
                 f"right after each epoch ({floor:.2f} s; per-epoch ratios {_span(per)}; "
                 f"target <= {s['target_ratio_vs_gemm_floor']}: "
                 f"{'met' if ratio <= s['target_ratio_vs_gemm_floor'] else 'missed'})") \
        if ratio else \
        "GEMM floor not measured"
    budget = " ".join(f"{k}={v}" for k, v in s["sampler_params"].items())
    return (f"- Training epoch, `{res['command']}` ({s['nodes']} nodes, {s['sampler']} "
            f"{budget}, hidden {s['hidden']}, {s['iterations_per_epoch']} "
            f"iterations/epoch): {s['epoch_s_median']:.2f} s per epoch (median of "
            f"{max(1, s['epochs'] - 1)}), {ratio_txt}; SpMM {s['spmm_s_median']:.2f} s, "
            f"{100 * s['wait_share_median']:.1f}% waiting on the sampler pool (load average "
            f"{_span(loads, '{:.1f}') if loads else _load(s['load_avg'])}).")


def bullet_scale(res) -> str:
    """The scale table: one row per scale, then the two target checks."""
    rows = [r for r in res["records"] if not r.get("summary") and "scale" in r]
    s = next((r for r in res["records"] if r.get("summary")), {})
    gb = 1e9
    lines = [f"- Scaling, `{res['command']}`:", "",
             "| nodes | edges | iteration, median (p90) | sampler s / subgraph | load s | "
             "peak RSS after loading | peak RSS | CSR + features + model + pool | ratio "
             "(above the floor) | load average |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r and "iteration_s_median" not in r:
            lines.append(f"| 2^{r['scale']} | failed ({r['error']}) | | | | | | | | |")
            continue
        lines.append(
            f"| 2^{r['scale']} | {r['edges'] / 1e6:.1f} M | {r['iteration_s_median']:.3f} s "
            f"({r['iteration_s_p90']:.3f}) | {r['sampler_s_per_subgraph']:.3f} | "
            f"{r['load_s']:.1f} | {r['load_peak_rss'] / gb:.2f} GB | {r['peak_rss'] / gb:.2f} GB "
            f"| {r['sum_bytes'] / gb:.2f} GB | {r['rss_ratio']:.2f} "
            f"({r['rss_ratio_above_baseline']:.2f}) | "
            f"{_load(r['load_avg_start'][:1] + r['load_avg_end'][:1])} |")
    ratio = s.get("iteration_ratio")
    lines.append("")
    if ratio is not None:
        verdict = "met" if ratio <= s["target_iteration_ratio"] else "missed"
        lines.append(f"  Largest / smallest scale iteration: **{ratio:.3f}x** (target <= "
                     f"{s['target_iteration_ratio']}: {verdict}). Peak RSS <= "
                     f"{s['target_rss_ratio']}x (CSR + features + model + pool + one step's "
                     f"saved activations) + the floor after imports at: "
                     + (", ".join(f"2^{r['scale']}" for r in rows
                                  if r.get("meets_rss_target")) or "none")
                     + f" (load average at the end {_load(res['load_avg_end'])}).")
    return "\n".join(lines)


BULLETS = {"sample": bullet_sample, "step": bullet_step, "spmm": bullet_spmm,
           "epoch": bullet_epoch, "scale": bullet_scale}


def markdown(results, quick: bool, tiny: bool) -> str:
    head = (f"**Speed** (2 threads; regenerated by `python benchmarks/readme_numbers.py"
            f"{' --quick' if quick else ''}{' --tiny' if tiny else ''}` on "
            f"{time.strftime('%Y-%m-%d')}; the machine may be shared: load averages given):")
    lines = [head, ""]
    for res in results:
        if res["rc"] != 0:
            lines.append(f"- `{res['command']}` failed (exit {res['rc']}): {res['error']}")
            continue
        try:
            lines.append(BULLETS[res["name"]](res))
        except (KeyError, StopIteration, ValueError, TypeError) as e:
            lines.append(f"- `{res['command']}`: output not understood ({type(e).__name__}: {e})")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="fewer repeats (same workloads)")
    p.add_argument("--tiny", action="store_true", help="tiny workloads (tests; not README numbers)")
    p.add_argument("--with-scale", action="store_true", help="also run bench scale")
    p.add_argument("--only", default=None, help="comma list of benchmarks to run (default all)")
    p.add_argument("--data-dir", default=None, help="keep generated graphs here for later runs")
    p.add_argument("--out", default=None, help="also write the markdown bullets to this file")
    args = p.parse_args(argv)
    names = ["sample", "step", "spmm", "epoch"] + (["scale"] if args.with_scale else [])
    if args.only:
        wanted = args.only.split(",")
        unknown = sorted(set(wanted) - set(README))
        if unknown:
            p.error(f"--only: unknown benchmark(s) {unknown}; choose from {sorted(README)}")
        names = [n for n in names if n in wanted] + \
            [n for n in wanted if n not in names and n in README]
    results = []
    for name in names:
        res = run_bench(name, bench_args(name, args.quick, args.tiny, args.data_dir))
        results.append(res)
        for line in figure_lines(res):
            print(json.dumps(line), flush=True)
    text = markdown(results, args.quick, args.tiny)
    print(text, end="")
    if args.out:
        from scalegnn.io import atomic_write_text
        atomic_write_text(args.out, text)
    return 0 if all(r["rc"] == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
