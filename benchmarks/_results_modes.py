"""The results page's ``modes`` section: ``benchmarks/dist_minibatch.py`` (data-parallel,
partition-parallel and full-graph training under a shaped link): its runner (records from the
script's JSON lines) and its rendering (from the stored records alone)."""

from __future__ import annotations

import json
import statistics
import zlib
from pathlib import Path

from _results_run import DATA, ROOT, BenchmarkFailed, _today, python, run_command

MODES_RUNS = [
    ["data", "--shape", "1gbit", "--nprocs", "2,4", "--epochs", "12", "--compression",
     "none,bf16", "--rounds", "2"],
    ["partition", "--shape", "1gbit", "--parts", "4,8", "--data", f"{DATA}/facebook",
     "--min-steps", "120"],
    # K = 4 only: 8 ranks each holding kronecker:17:8 (~2.8 GB resident) exceed this 24 GiB box
    ["partition", "--shape", "1gbit", "--parts", "4", "--data", "kronecker:17:8",
     "--min-steps", "120"],
    ["full", "--shape", "50mbit", "--latency", "400ms", "--ps", "1,0.1", "--compression",
     "none,bf16,fp16", "--epochs", "20"],
]
RAW = ROOT / "runs" / "results_raw"

INTRO = ("`benchmarks/dist_minibatch.py`: gloo ranks on this 2-core host (`--threads 1` each) "
         "inside `unshare -n`, the loopback limited with `tc ... tbf`, so one link carries "
         "every rank's traffic. Each row is one variant of `scalegnn dist-train` (the command "
         "is in the record; the benchmark's own command heads each table); variants ran "
         "interleaved, once per round, and a cell with several values gives each round's. "
         "Epoch time = sampling + training of one rank's epoch (rank 0; full-graph: the "
         "slowest rank), median over the epochs after the first; the *hidden share* is the "
         "part of the gradient all-reduce time that overlapped backward "
         "(`allreduce_hidden_share`).")
DATA_TITLE = ("**Data-parallel** (`distributed.mode: data`), facebook, "
              "`configs/shared/facebook_rw.yml` (rw, 3,000 roots, depth 2; 2-layer concat "
              "model, hidden 256). Target: at 4 ranks at least half of the all-reduce hidden.")
PART_TITLE = ("**Partition-parallel minibatches** (`distributed.mode: partition`), "
              "`configs/shared/facebook_partition.yml` (rw, 500 roots, depth 2, transductive; "
              "2 graph layers of 256). Bytes = forward rows and backward gradients of every "
              "step, summed over ranks; volume = forward rows per graph layer per minibatch "
              "(mean ± standard error over the run's minibatches); predicted = mean over 200 "
              "fresh minibatches of the same sampler under the same plan (what `partition shp` "
              "reports as hp_volume / shp_volume, given beside it). Every plan of a dataset "
              "sees the same minibatch stream. Targets: SHP < HP at both K (facebook), "
              "HP <= 0.5x RP, measured within 5% of predicted.")
FULL_TITLE = ("**Full-graph** (`distributed.mode: full`), facebook, 4 ranks, GP plan, "
              "`configs/shared/facebook_dist.yml` (hidden 64, `1-0-1-0`), 50 Mbit/s "
              "(tbf latency 400 ms). Gradients through DistributedDataParallel, compressed "
              "on the wire with `distributed.compression`; *before* = the blocking all-reduce "
              "after backward (the distributed section above). Target: at least half of the "
              "all-reduce hidden.")


# ----------------------------------------------------------------------------- running
def _span(runs: list[dict]) -> list[float]:
    loads = [v for r in runs for v in r["load_avg"]]
    return [min(loads), max(loads)]


def _med(runs: list[dict], field: str):
    vals = [r[field] for r in runs if r.get(field) is not None]
    return round(statistics.median(vals), 4) if vals else None


def _common(meta: dict, runs: list[dict], link) -> dict:
    return {"command": meta["command"], "date": meta["date"], "load_avg": _span(runs),
            "run_command": runs[0]["command"], "rounds": len(runs), "measured_gbit_s": link,
            "shape": runs[0]["shape"], "cpu_s": [r["cpu_s"] for r in runs],
            "test": [r["test"] for r in runs]}


def records(lines: list[dict], meta: dict) -> list[dict]:
    """The section's records from one ``dist_minibatch.py`` invocation's JSON lines."""
    skip = next((x for x in lines if x.get("kind") == "skip"), None)
    if skip:
        raise BenchmarkFailed(skip["reason"])
    link = next((x["measured_gbit_s"] for x in lines if x.get("kind") == "link"), None)
    runs = [x for x in lines if x.get("kind") == "run"]
    groups: dict[tuple, list[dict]] = {}
    for r in runs:
        key = {"data": lambda: (r["nprocs"], r["compression"]),
               "partition": lambda: (r["parts"], r["method"]),
               "full": lambda: (r["p"], r["compression"])}[r["mode"]]()
        groups.setdefault((r["mode"], r["dataset"], *key), []).append(r)
    plans = {(x["dataset"], x["parts"], x["method"]): x for x in lines if x.get("kind") == "plan"}
    out = []
    for (mode, ds, a, b), rs in groups.items():
        rec = {**_common(meta, rs, link), "kind": mode, "dataset": ds,
               "group": f"modes:{mode}:{ds}"}
        rounds = lambda f: [r[f] for r in rs]  # noqa: E731
        if mode == "data":
            rec.update(id=f"data:{ds}:{a}:{b}", nprocs=a, compression=b,
                       epoch_s=_med(rs, "epoch_s"), allreduce_s=_med(rs, "allreduce_s"),
                       allreduce_exposed_s=_med(rs, "allreduce_exposed_s"),
                       hidden_share=rounds("allreduce_hidden_share"),
                       batches_per_s_rank=_med(rs, "batches_per_s_rank"),
                       nodes_per_s_rank=_med(rs, "nodes_per_s_rank"),
                       nodes_per_batch=rs[0]["nodes_per_batch"],
                       iterations_per_epoch=rs[0]["iterations_per_epoch"],
                       allreduce_mb=rs[0]["allreduce_mb"], epochs=rs[0]["epochs"])
        elif mode == "partition":
            plan = plans.get((ds, a, b), {})
            rec.update(id=f"partition:{ds}:{a}:{b}", parts=a, method=b,
                       epochs=rs[0]["epochs"], minibatches=rs[0]["minibatches"],
                       bytes_per_minibatch=rounds("bytes_per_minibatch"),
                       rows_per_minibatch=rs[0]["rows_per_minibatch"],
                       measured_volume=rs[0]["measured_volume"],
                       measured_sem=rs[0]["measured_sem"],
                       predicted_volume=rs[0]["predicted_volume"],
                       predicted_sem=plan.get("predicted_sem"),
                       measured_vs_predicted=rs[0]["measured_vs_predicted"],
                       shp_table_volume=rs[0]["shp_table_volume"],
                       epoch_s=rounds("epoch_s"), step_s=rounds("step_s"),
                       allreduce_hidden_share=rounds("allreduce_hidden_share"),
                       sampler=rs[0]["sampler"], budget=rs[0]["budget"],
                       transductive=rs[0]["transductive"], plan_command=plan.get("command"),
                       plan_s=plan.get("wall_s"))
        else:
            rec.update(id=f"full:{ds}:p{a:g}:{b}", p=a, compression=b, nprocs=rs[0]["nprocs"],
                       epochs=rs[0]["epochs"], epoch_s=rounds("epoch_s"),
                       allreduce_s=rounds("allreduce_s"),
                       allreduce_exposed_s=rounds("allreduce_exposed_s"),
                       hidden_share=rounds("allreduce_hidden_share"),
                       bytes_sent_mb=rs[0]["bytes_sent_mb"])
        out.append(rec)
    return out


def run_modes(extra: list[str]) -> list[dict]:
    """Each default invocation (or the one of ``--args``); its raw lines are kept in
    ``runs/results_raw/`` too."""
    recs = []
    for args in ([extra] if extra else MODES_RUNS):
        lines, meta = run_command(python("benchmarks/dist_minibatch.py", *args))
        RAW.mkdir(parents=True, exist_ok=True)
        (RAW / f"modes_{args[0]}_{zlib.crc32(' '.join(args).encode()):08x}.jsonl").write_text(
            "".join(json.dumps({**x, "_meta": meta}) + "\n" for x in lines))
        recs += records(lines, {**meta, "date": meta.get("date") or _today()})
    return recs


def load_raw(paths: list[Path]) -> list[dict]:
    """Records from saved raw files (re-deriving them without re-running)."""
    recs = []
    for p in paths:
        lines = [json.loads(x) for x in Path(p).read_text().splitlines() if x]
        recs += records(lines, lines[0]["_meta"])
    return recs


# ----------------------------------------------------------------------------- rendering
def _rounds(values, fmt="{:.2f}") -> str:
    vals = [v for v in values if v is not None]
    if not vals:
        return "—"
    med = statistics.median(vals)
    return fmt.format(med) + (f" ({', '.join(fmt.format(v) for v in vals)})"
                              if len(vals) > 1 else "")


def _verdict(ok: bool) -> str:
    return "met" if ok else "**missed**"


def _heading(recs: list[dict], r) -> str:
    """The benchmark command(s) of ``recs``, their date and load average, and one row's
    ``scalegnn dist-train`` command."""
    lines = []
    for cmd in dict.fromkeys(x["command"] for x in recs):
        mine = [x for x in recs if x["command"] == cmd]
        load = [v for x in mine for v in x["load_avg"]]
        dates = ", ".join(sorted({x["date"] for x in mine}))
        lines.append(f"- `{cmd}`: measured on {dates} (load average {r.load_text([min(load), max(load)])}"
                     f"{', link measured at ' + format(mine[0]['measured_gbit_s'], '.3f') + ' Gbit/s' if mine[0].get('measured_gbit_s') else ''}).")
    lines.append(f"- One row's training command: `{recs[0]['run_command']}` (the others differ "
                 "in their own settings and run folders).")
    return "\n".join(lines)


def _data(recs, r) -> list[str]:
    rows = [[x["nprocs"], x["compression"], f"{x['epoch_s']:.2f} s",
             f"{x['allreduce_s']:.3f} s ({x['allreduce_exposed_s']:.3f} s)",
             _rounds(x["hidden_share"]), f"{x['batches_per_s_rank']:.2f}",
             f"{x['nodes_per_s_rank']:,.0f}", _rounds(x["test"], "{:.3f}"),
             r.load_text(x["load_avg"])] for x in recs]
    four = [x for x in recs if x["nprocs"] >= 4]
    target = "; ".join(
        f"{x['compression']}: {statistics.median(x['hidden_share']):.2f}, "
        f"{_verdict(statistics.median(x['hidden_share']) >= 0.5)}" for x in four)
    x0 = recs[0]
    return [DATA_TITLE, _heading(recs, r), r.table(
        ["ranks", "compression", "epoch", "all-reduce / epoch (exposed)",
         "hidden share (per round)", "batches/s per rank",
         f"subgraph nodes/s per rank ({x0['nodes_per_batch']:,.0f} nodes/batch)",
         "test accuracy (per round)", "load average"], rows),
        f"{x0['iterations_per_epoch']} batch per rank per epoch, {x0['allreduce_mb']:.1f} MB "
        f"of gradients all-reduced per step; {x0['epochs']} epochs per run. Target at 4 ranks "
        f"(hidden share >= 0.5): {target or '—'}."]


def _partition(recs, r) -> list[str]:
    out = [PART_TITLE]
    for ds in dict.fromkeys(x["dataset"] for x in recs):
        mine = [x for x in recs if x["dataset"] == ds]
        x0 = mine[0]
        out.append(f"{ds}: {x0['epochs']} epochs, {x0['minibatches']} minibatches per run, "
                   f"sampler {x0['sampler']} ({x0['budget']}"
                   f"{', transductive' if x0['transductive'] else ''}):")
        out.append(_heading(mine, r) + "\n- Plans: " + "; ".join(
            f"`{c}`" for c in dict.fromkeys(x["plan_command"] for x in mine if x["parts"] ==
                                            x0["parts"])) + " (and the same with the other K).")
        rows = []
        for x in mine:
            table = x.get("shp_table_volume")
            rows.append([x["parts"], x["method"].upper(),
                         f"{statistics.median(x['bytes_per_minibatch']) / 1e6:.3f} MB",
                         f"{x['measured_volume']:.1f} ± {x['measured_sem']:.1f}",
                         f"{x['predicted_volume']:.1f} ± {x['predicted_sem']:.1f}",
                         "—" if table is None else f"{table:.1f}",
                         f"{x['measured_vs_predicted']:.3f}", _rounds(x["epoch_s"]),
                         _rounds(x["test"], "{:.3f}"), r.load_text(x["load_avg"])])
        out.append(r.table(["K", "plan", "bytes / minibatch", "volume measured",
                            "predicted (200 batches)", "`partition shp` table",
                            "measured / predicted", "epoch s (per round)", "test",
                            "load average"], rows))
        by = {(x["parts"], x["method"]): statistics.median(x["bytes_per_minibatch"])
              for x in mine}
        trows = []
        for k in dict.fromkeys(x["parts"] for x in mine):
            ks = [x for x in mine if x["parts"] == k]
            worst = max(abs(x["measured_vs_predicted"] - 1) for x in ks)
            shp = by.get((k, "shp"), 0) / by[(k, "hp")] if (k, "hp") in by else None
            hp_rp = by[(k, "hp")] / by[(k, "rp")] if {(k, "hp"), (k, "rp")} <= set(by) else None
            trows.append([k, "—" if shp is None else f"{shp:.3f} ({_verdict(shp < 1)})",
                          "—" if hp_rp is None else f"{hp_rp:.3f} ({_verdict(hp_rp <= 0.5)})",
                          f"{100 * worst:.1f}% ({_verdict(worst <= 0.05)})"])
        out.append(r.table(["K", "SHP / HP bytes (target < 1)", "HP / RP bytes (<= 0.5)",
                            "worst |measured / predicted − 1| (<= 5%)"], trows))
    return out


def _full(recs, before, r) -> list[str]:
    rows = []
    if before:
        rows.append(["before: blocking all-reduce after backward", before["date"],
                     f"{before['epoch_s']['1']:.2f} s ({before['allreduce_s_p1']:.2f} s; —)", "—",
                     f"{before['epoch_s']['0.1']:.2f} s", "—",
                     f"{before['epoch_ratio']:.3f} ({', '.join(f'{v:.3f}' for v in before['epoch_ratio_rounds'])})",
                     f"{before['test_p1']:.3f} / {before['test_p01']:.3f}",
                     r.load_text(before["load_avg"])])
    for comp in dict.fromkeys(x["compression"] for x in recs):
        p = {x["p"]: x for x in recs if x["compression"] == comp}
        one, tenth = p.get(1.0), p.get(0.1)
        if not one or not tenth:
            continue
        ratios = [a / b for a, b in zip(tenth["epoch_s"], one["epoch_s"])]
        rows.append([f"DDP, `compression: {comp}`", one["date"],
                     f"{statistics.median(one['epoch_s']):.2f} s "
                     f"({statistics.median(one['allreduce_s']):.2f} s; "
                     f"{statistics.median(one['allreduce_exposed_s']):.2f} s)",
                     _rounds(one["hidden_share"]),
                     f"{statistics.median(tenth['epoch_s']):.2f} s "
                     f"({statistics.median(tenth['allreduce_s']):.2f} s)",
                     _rounds(tenth["hidden_share"]), _rounds(ratios, "{:.3f}"),
                     f"{_rounds(one['test'], '{:.4f}')} / {_rounds(tenth['test'], '{:.4f}')}",
                     r.load_text([min(one["load_avg"] + tenth["load_avg"]),
                                  max(one["load_avg"] + tenth["load_avg"])])])
    return [FULL_TITLE, _heading(recs, r), r.table(
        ["gradients", "date", "p = 1 epoch (all-reduce; exposed)", "hidden share p = 1",
         "p = 0.1 epoch (all-reduce)", "hidden share p = 0.1", "p = 0.1 / p = 1 (per round)",
         "test accuracy p = 1 / p = 0.1 (per round)", "load average"], rows)]


def render(sec: dict, all_sections: dict, r, notes: str) -> str:
    recs = sec["records"]
    out = [INTRO]
    kinds = {k: [x for x in recs if x.get("kind") == k] for k in ("data", "partition", "full")}
    if kinds["data"]:
        out += _data(kinds["data"], r)
    if kinds["partition"]:
        out += _partition(kinds["partition"], r)
    if kinds["full"]:
        before = next((x for x in all_sections.get("distributed", {}).get("records", [])
                       if x.get("id") == "shaped:facebook"), None)
        out += _full(kinds["full"], before, r)
    out.append(notes)
    return "\n\n".join(filter(None, out))
