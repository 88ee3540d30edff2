"""The results page's section ``sampling``: where the GraphSAINT samplers' time goes against
the roofline of ``scalegnn bench sample``, and their CPU per subgraph beside the reference
C++/OpenMP sampler (``benchmarks/reference_samplers.py``).

``run`` stores one ``roofline`` record per (sampler, threads) from ``bench sample`` and, when
``--ref DIR`` (the built GraphSAINT reference, see reference_samplers.py) is given, one
``reference`` record with every round of the side-by-side run, under ``--label`` (``quiet``
by default; e.g. ``busy`` for a run beside other load: ``--args "--ref /tmp/ref/GraphSAINT
--rounds 5 --label busy"``). ``render`` writes the tables from the records.
"""

from __future__ import annotations

import statistics

from _results_run import _meta, _options, python, run_command, scalegnn

SAMPLERS = ("rw", "edge", "node", "mrw")
ROOF_INTRO = (
    "CPU milliseconds per subgraph (process CPU of all threads over the subgraphs made), "
    "kronecker:17:8 (131,072 nodes, 1.94 M edges), the reference PPI budgets, CSR + parent "
    "edge ids + transpose permutation + edge values built. *Bound*: the bytes one subgraph "
    "streams and the cache lines it fetches at random (as implemented: one scan of every "
    "sampled node's parent row with the edge values of every scanned entry, see "
    "`scalegnn.bench.roofline`), at the read rates "
    "`ops.membw.read_probe` measures on an array the size of the CSR with the same thread "
    "count (per CPU second); *minimum*: the values of the kept entries only, the bytes any "
    "induced-subgraph builder must move.")
REF_INTRO = (
    "CPU per subgraph of the same budgets and sizes (within 1%), scalegnn against GraphSAINT's "
    "reference C++/OpenMP sampler (`graphsaint/cython_sampler.pyx`, built from its public "
    "source), interleaved rounds in one process, 2 threads; ratio = reference CPU / scalegnn "
    "CPU, median over rounds (target >= 5). scalegnn also builds the transpose permutation and "
    "the edge values (1/deg of the row), which the reference does not.")


def run(extra: list[str]) -> list[dict]:
    o = _options(extra, graph="kronecker:17:8", threads="2", ref="", rounds="5", label="quiet")
    lines, meta = run_command(scalegnn("bench", "sample", "--graph", o.graph, "--threads",
                                       o.threads, "--coverage", "0", "--count", "32",
                                       "--repeats", "3"))
    recs = []
    for r in lines:
        recs.append(_meta(meta, id=f"roofline:{r['sampler']}:{r['threads']}",
                          group="roofline", kind="roofline", sampler=r["sampler"],
                          threads=r["threads"], nodes=r["nodes_per_subgraph"],
                          edges=r["edges_per_subgraph"], cpu_ms=r["cpu_ms_per_subgraph"],
                          roofline=r["roofline"], graph=r["graph"]))
    if o.ref:
        lines, meta = run_command(python("benchmarks/reference_samplers.py", "--ref", o.ref,
                                         "--graph", o.graph, "--rounds", o.rounds,
                                         "--threads", o.threads))
        rounds = [r for r in lines if not r.get("summary")]
        summary = next(r for r in lines if r.get("summary"))
        recs.append(_meta(meta, id=f"reference:graphsaint:{o.label}", group=f"reference:{o.label}",
                          kind="reference", label=o.label, rounds=rounds, summary=summary,
                          graph=o.graph))
    return recs


def _ms(x: float) -> str:
    return f"{x:.2f}"


def render(sec: dict, fmt) -> str:
    out = []
    roof = [r for r in sec["records"] if r.get("kind") == "roofline"]
    if roof:
        p = roof[0]["roofline"]["probe"]
        out.append(ROOF_INTRO + f" Probe ({p['probe_MiB']:.0f} MiB, {p['probe_threads']} "
                   f"threads): {p['stream_GBps_per_thread']:.1f} GB/s streaming, "
                   f"{p['random_ns_per_line']:.1f} ns per random line.")
        rows = []
        for r in sorted(roof, key=lambda r: (SAMPLERS.index(r["sampler"]), r["threads"])):
            f = r["roofline"]
            rows.append([r["sampler"], str(r["threads"]), f"{r['nodes']:,.0f}",
                         f"{r['edges']:,.0f}", f"{f['stream_MB']:.1f}",
                         f"{f['random_lines']:,}", _ms(f["bound_cpu_ms"]),
                         _ms(f["min_bound_cpu_ms"]), _ms(r["cpu_ms"]),
                         f"{f['cpu_over_bound']:.1f}x", f"{f['cpu_over_min_bound']:.1f}x"])
        out.append(fmt.table(["sampler", "threads", "nodes", "edges", "streamed MB",
                              "random lines", "bound ms", "minimum ms", "measured ms",
                              "/ bound", "/ minimum"], rows))
        out.append(f"`{roof[0]['command']}` ({roof[0]['date']}, load average "
                   f"{roof[0]['load_avg'][0]}-{roof[0]['load_avg'][1]}).")
    refs = [r for r in sec["records"] if r.get("kind") == "reference"]
    if refs:
        out.append(REF_INTRO)
    for ref in sorted(refs, key=lambda r: r.get("label", "")):
        lo, hi = ref["summary"]["load_avg_1min_range"]
        out.append(f"**{ref.get('label', 'quiet').capitalize()} machine** (load average "
                   f"{lo}-{hi}):")
        rows = []
        for s in SAMPLERS:
            rs = [r for r in ref["rounds"] if r["sampler"] == s]
            if not rs:
                continue
            rows.append([s, _ms(1e3 * statistics.median(r["ref_cpu_per_subgraph"] for r in rs)),
                         _ms(1e3 * statistics.median(r["ours_cpu_per_subgraph"] for r in rs)),
                         " / ".join(f"{r['ratio']:.2f}" for r in rs),
                         f"**{ref['summary']['median_ratio'][s]:.2f}**"])
        out.append(fmt.table(["sampler", "reference ms", "scalegnn ms", "ratio per round",
                              "median ratio"], rows))
        out.append(f"`{ref['command']}` ({ref['date']}).")
    return "\n\n".join(out)
