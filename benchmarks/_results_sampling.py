"""The results page's section ``sampling``: where the GraphSAINT samplers' time goes against
the roofline of ``scalegnn bench sample``, and their CPU per subgraph beside the reference
C++/OpenMP sampler (``benchmarks/reference_samplers.py``).

``run`` stores one ``roofline`` record per (sampler, threads) from ``bench sample`` and, when
``--ref DIR`` (the built GraphSAINT reference, see reference_samplers.py) is given, one
``reference`` record with every round of the side-by-side run, under ``--label`` (``quiet``
by default; e.g. ``busy`` for a run beside other load: ``--args "--ref /tmp/ref/GraphSAINT
--rounds 5 --label busy"``). ``--ppr`` adds the shaDow PPR precompute's roofline
(``bench extract`` on facebook at eps 1e-6, k 32) and, with ``--shadow-ref DIR`` (the built
shaDow-GNN reference, see reference_shadow.py), its CPU per target beside the reference's;
``--ref-only`` runs the reference comparison alone (a busy-machine run: ``--args "--ref DIR
--ref-only --label busy --note 'what made it busy'"``). ``render`` writes the tables from the
records.
"""

from __future__ import annotations

import statistics

from _results_run import DATA, _meta, _options, python, run_command, scalegnn

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
PARTS_INTRO = (
    "**Why not within 2x of the bound.** The induction is most of a subgraph's CPU: about "
    "{ns:.0f} ns per 16-entry block of a scanned parent row against the ~{bns:.0f} ns its 128 "
    "streamed bytes (16 neighbour ids, 16 edge values) take at the probe's rate. A block is a "
    "load, one gather of rank words (a bitmap word and the members before it: 16 + 16 bits in "
    "an int32 for subgraphs below 2^16 nodes, else 32 + 32 in an int64), a popcount and three "
    "compressed stores; and every row (~8 cache lines of ids and as many of values at these "
    "budgets) starts with misses the hardware prefetcher does not see coming. The kernel "
    "prefetches row bounds 16 rows ahead, the first 6 lines of ids and values 8 rows ahead and "
    "long rows 6 blocks ahead of the scan (0.60-0.69x the fill's CPU on Zen 5 against the "
    "first line alone), which hides the misses only in part: the time left is latency more "
    "than bandwidth. Its parts, from "
    "`benchmarks/induce_parts.py` (the kernel against copies of itself with one part taken "
    "out, the same {sampler} node sets, one thread, output buffers reused, median of "
    "{rounds} interleaved rounds; {blocks:,.0f} blocks, {scanned:,.0f} scanned and "
    "{edges:,.0f} kept entries per subgraph):")
PARTS = (("core", "membership test, row loop, marking and ranking the members"),
         ("transpose", ("transpose permutation (journal Alg. 6: a load and a store of a "
                        "column cursor per kept entry)")),
         ("local_ids", "local ids (popcount, add, compressed store)"),
         ("row_tails", "each row's last < 16 entries (a block, the lanes past the row dropped)"),
         ("values", "edge values (load, scale by 1/deg, compressed store)"),
         ("edge_ids", "parent edge ids (compressed store)"))
PARTS_OUTRO = (
    "The same node sets induced by two workers cost {two:.2f}x the CPU per subgraph of one "
    "(`two_threads_over_one`). The draws (the roofline table's *draw* column) are further "
    "from their bound, the random lines alone: each draw is also a call into numba's Mersenne "
    "Twister generator, and a walk step is a dependent pair of reads (row bounds, then the "
    "entry), prefetched 16 walks ahead; the node set is then de-duplicated and sorted.")
PPR_INTRO = (
    "**shaDow PPR precompute** (facebook, 2,048 distinct targets, alpha 0.15, eps 1e-6, top-32, "
    "2 threads): the work the push kernel counted per target and the CPU bound it gives "
    "(`scalegnn.bench.roofline.ppr_traffic`: rows streamed, row bounds and residual updates "
    "as random lines, sweeps streaming the row bounds and residuals of every id they visit; "
    "*CSR-only*: the rows and row bounds alone).")
PPR_REF_INTRO = (
    "PPR precompute and per-target extraction, CPU per target, scalegnn against shaDow-GNN's "
    "reference C++ (`para_samplers`, built from its public source; `benchmarks/reference_"
    "shadow.py`), interleaved rounds, 2 threads (targets >= 10x and >= 4x).")
REF_INTRO = (
    "CPU per subgraph of the same budgets and sizes (within 1%), scalegnn against GraphSAINT's "
    "reference C++/OpenMP sampler (`graphsaint/cython_sampler.pyx`, built from its public "
    "source), interleaved rounds in one process, 2 threads; ratio = reference CPU / scalegnn "
    "CPU, median over rounds (target >= 5). scalegnn also builds the transpose permutation and "
    "the edge values (1/deg of the row), which the reference does not.")


def run(extra: list[str]) -> list[dict]:
    o = _options(extra, graph="kronecker:17:8", threads="2", roof_threads="1,2", ref="",
                 rounds="5", label="quiet", note="", ppr=False, shadow_ref="",
                 ppr_only=False, ref_only=False)
    if o.ppr or o.ppr_only:
        recs = _run_ppr(o)
        if o.ppr_only:
            return recs
    else:
        recs = []
    if o.ref_only:   # e.g. a busy-machine run of the reference comparison alone
        return recs + _run_reference(o)
    lines, meta = run_command(scalegnn("bench", "sample", "--graph", o.graph, "--threads",
                                       o.roof_threads, "--coverage", "0", "--count", "32",
                                       "--repeats", "3"))
    for r in lines:
        recs.append(_meta(meta, id=f"roofline:{r['sampler']}:{r['threads']}",
                          group="roofline", kind="roofline", sampler=r["sampler"],
                          threads=r["threads"], nodes=r["nodes_per_subgraph"],
                          edges=r["edges_per_subgraph"], cpu_ms=r["cpu_ms_per_subgraph"],
                          roofline=r["roofline"], graph=r["graph"]))
    lines, meta = run_command(python("benchmarks/induce_parts.py", "--graph", o.graph,
                                     "--sampler", "rw", "--rounds", "21"))
    summary = next(r for r in lines if r.get("summary"))
    recs.append(_meta(meta, id="induce_parts:rw", group="induce_parts", kind="induce_parts",
                      summary=summary))
    return recs + _run_reference(o)


def _run_reference(o) -> list[dict]:
    if not o.ref:
        return []
    lines, meta = run_command(python("benchmarks/reference_samplers.py", "--ref", o.ref,
                                     "--graph", o.graph, "--rounds", o.rounds,
                                     "--threads", o.threads))
    rounds = [r for r in lines if not r.get("summary")]
    summary = next(r for r in lines if r.get("summary"))
    return [_meta(meta, id=f"reference:graphsaint:{o.label}", group=f"reference:{o.label}",
                  kind="reference", label=o.label, rounds=rounds, summary=summary,
                  graph=o.graph, note=o.note)]


def _run_ppr(o) -> list[dict]:
    lines, meta = run_command(scalegnn("bench", "extract", "--data", f"{DATA}/facebook",
                                       "--extractors", "ppr", "--threads", o.threads,
                                       "--targets", "2048", "--repeats", "1",
                                       "--param", "ppr.k=32"))
    r = lines[0]
    recs = [_meta(meta, id="ppr:roofline", group="ppr:roofline", kind="ppr_roofline",
                  cpu_ms=1e3 * r["precompute_cpu_per_target"], work=r["precompute_work"],
                  roofline=r["precompute_roofline"], targets=r["targets"])]
    if o.shadow_ref:
        lines, meta = run_command(python("benchmarks/reference_shadow.py", "--ref",
                                         o.shadow_ref, "--data", "facebook", "--eps", "1e-6",
                                         "--k", "32", "--rounds", "3", "--threads", o.threads))
        recs.append(_meta(meta, id="ppr:reference", group="ppr:reference", kind="ppr_reference",
                          rounds=[r for r in lines if not r.get("summary")],
                          summary=next(r for r in lines if r.get("summary"))))
    return recs


def _render_ppr(sec: dict, fmt) -> list[str]:
    out = []
    roof = next((r for r in sec["records"] if r.get("kind") == "ppr_roofline"), None)
    if roof:
        f, w = roof["roofline"], roof["work"]
        out.append(PPR_INTRO)
        out.append(fmt.table(
            ["pushes", "neighbour updates", "swept ids", "touched", "streamed MB",
             "random lines", "bound ms", "CSR-only ms", "measured ms", "/ bound"],
            [[f"{w['pushes']:,.0f}", f"{w['neighbour_updates']:,.0f}", f"{w['swept_ids']:,.0f}",
              f"{w['touched']:,.0f}", f"{f['stream_MB']:.1f}", f"{f['random_lines']:,}",
              _ms(f["bound_cpu_ms"]), _ms(f["min_bound_cpu_ms"]), _ms(roof["cpu_ms"]),
              f"{f['cpu_over_bound']:.1f}x"]]))
        out.append(f"`{roof['command']}` {fmt.measured(roof)}.")
    ref = next((r for r in sec["records"] if r.get("kind") == "ppr_reference"), None)
    if ref:
        sm = ref["summary"]
        out.append(PPR_REF_INTRO)
        rows = [[str(r["round"]) if "round" in r else str(i),
                 _ms(1e3 * r["ref_ppr_cpu_per_target"]), _ms(1e3 * r["ours_ppr_cpu_per_target"]),
                 f"{r['ppr_cpu_ratio']:.1f}x", f"{1e6 * r['ref_extract_cpu_per_target']:.1f}",
                 f"{1e6 * r['ours_extract_cpu_per_target']:.1f}",
                 f"{r['extract_cpu_ratio']:.2f}x"] for i, r in enumerate(ref["rounds"])]
        out.append(fmt.table(["round", "reference PPR ms", "scalegnn PPR ms", "PPR ratio",
                              "reference extract µs", "scalegnn extract µs", "extract ratio"],
                             rows))
        out.append(f"Top-{sm['k']} scope overlap: scalegnn / reference {sm['overlap_ours_ref']:.3f}; "
                   f"against a float64 power iteration ({sm['exact_targets']} targets): "
                   f"scalegnn {sm['overlap_ours_exact']:.4f}, reference "
                   f"{sm['overlap_ref_exact']:.4f} (the reference's lazy push ranks like "
                   f"standard PPR at 2α/(1+α): {sm['overlap_ref_exact_lazy']:.4f} there). "
                   f"`{ref['command']}` {fmt.measured(ref)}.")
    return out


def _ms(x: float) -> str:
    return f"{x:.2f}"


def _phase(f: dict, phase: str) -> str:
    """A phase's CPU and its ratio to the phase's bound (blank in records from before the
    split)."""
    if f"{phase}_cpu_ms" not in f:
        return ""
    return f"{_ms(f[phase + '_cpu_ms'])} ({f[phase + '_over_bound']:.1f}x)"


def _render_parts(sec: dict, fmt) -> list[str]:
    rec = next((r for r in sec["records"] if r.get("kind") == "induce_parts"), None)
    if rec is None:
        return []
    sm = rec["summary"]
    roof = next(r for r in sec["records"] if r.get("kind") == "roofline")
    bns = 128 / roof["roofline"]["probe"]["stream_GBps_per_thread"]
    parts, full = sm["part_cpu_ms"], sm["full_cpu_ms"]
    rows = [[label, _ms(parts[k]), f"{100 * parts[k] / full:.0f}%"] for k, label in PARTS]
    rows.append(["**induction, all parts**", f"**{_ms(full)}**", "100%"])
    return [PARTS_INTRO.format(ns=sm["ns_per_block"], bns=bns, sampler=sm["sampler"],
                               rounds=sm["rounds"], blocks=sm["blocks"],
                               scanned=sm["scanned"], edges=sm["edges"]),
            fmt.table(["part", "CPU ms per subgraph", "share"], rows),
            f"`{rec['command']}` {fmt.measured(rec)}. "
            + PARTS_OUTRO.format(two=sm["two_threads_over_one"])]


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
                         f"{f['cpu_over_bound']:.1f}x", f"{f['cpu_over_min_bound']:.1f}x",
                         _phase(f, "draw"), _phase(f, "induce")])
        out.append(fmt.table(["sampler", "threads", "nodes", "edges", "streamed MB",
                              "random lines", "bound ms", "minimum ms", "measured ms",
                              "/ bound", "/ minimum", "draw ms (/ bound)",
                              "induce ms (/ bound)"], rows))
        out.append(f"`{roof[0]['command']}` {fmt.measured(roof[0])}.")
    out += _render_parts(sec, fmt)
    refs = [r for r in sec["records"] if r.get("kind") == "reference"]
    if refs:
        out.append(REF_INTRO)
    for ref in sorted(refs, key=lambda r: r.get("label", "")):
        lo, hi = ref["summary"]["load_avg_1min_range"]
        note = f"; {ref['note']}" if ref.get("note") else ""
        out.append(f"**{ref.get('label', 'quiet').capitalize()} machine** (load average "
                   f"{lo}-{hi}{note}):")
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
        out.append(f"`{ref['command']}` {fmt.measured({**ref, 'load_avg': None})}.")
    notes = fmt.notes(sec, sec["records"])
    return "\n\n".join(out + _render_ppr(sec, fmt) + ([notes] if notes else []))
