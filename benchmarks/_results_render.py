"""``benchmarks/results.py render``: the measured-results page from the stored records alone.

Tables come from a section's structured records, prose from its ``notes``; every table says
which command produced it, when, and under what load. Deterministic: no clock, no machine.
"""

from __future__ import annotations

import sys

import _results_compare as compare
import _results_modes as modes
import _results_sampling as sampling
import _results_shadow_default as shadow_default
import _results_tables as tables
import _results_text as text

ACC_SAMPLER = {"rw": "rw", "edge": "edge", "mrw": "frontier", "node": "node", "gnn": "rw"}
METRIC = {"accuracy": "accuracy", "roc_auc": "ROC-AUC", "f1_micro": "F1-micro"}
HEURISTIC = {"common_neighbours": "common neighbours", "adamic_adar": "Adamic-Adar"}
LOADER = {"csv-gz": "edge-list CSV, gzip'd", "csv": "edge-list CSV",
          "ogb": "OGB folder (all `.csv.gz`)", "npz": "gnn-benchmark `.npz`",
          "hetero": "heterophilous `.npz`", "graphsaint": "GraphSAINT folder", "mat": "`.mat`"}


# ----------------------------------------------------------------------------- helpers
def f3(x) -> str:
    return "—" if x is None else f"{x:.3f}"


def num(x) -> str:
    """A load average or count as written: no trailing zeros."""
    return f"{round(x, 2):g}" if isinstance(x, float) else str(x)


def load_text(values) -> str:
    if not values:
        return ""
    if len(values) == 2:
        lo, hi = min(values), max(values)
        return num(lo) if lo == hi else f"{num(lo)}-{num(hi)}"
    return "/".join(f"{v:.1f}" for v in values)


def span(values, fmt="{:.2f}") -> str:
    lo, hi = fmt.format(min(values)), fmt.format(max(values))
    return lo if lo == hi else f"{lo}-{hi}"


def provenance(records: list[dict]) -> str:
    """One line per distinct (command, date, cpu, load, source): how these records were
    measured."""
    groups: list[tuple[tuple, list[str]]] = []
    for r in records:
        key = (r.get("command"), r.get("date"), r.get("cpu"), tuple(r.get("load_avg") or ()),
               r.get("source"))
        for k, ids in groups:
            if k == key:
                ids.append(r.get("id", r.get("case")))
                break
        else:
            groups.append((key, [r.get("id", r.get("case"))]))
    lines = []
    for (command, date, cpu, load, source), ids in groups:
        head = (f"measured on {date}" if date else "measured") + (f" on {cpu}" if cpu else "")
        if len(groups) > 1 and command:
            line = f"- `{command}`: {head if date else 'date not recorded'}"
        else:
            line = (head[0].upper() + head[1:]) + (f" with `{command}`" if command else "")
        if load:
            line += f" (load average {load_text(list(load))})"
        if source:
            line += f"; transcribed from the {source}"
        lines.append(line + ".")
    return "\n".join(lines)


def table(header: list[str], rows: list[list], align: str = "") -> str:
    sep = [("---:" if align and i < len(align) and align[i] == "r" else "---")
           for i in range(len(header))]
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(sep) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def notes(section: dict, records: list[dict]) -> str:
    """A section's notes; one whose ``replaced_by`` records exist (re-measured) is left out.
    Bullet notes (text starting with '- ') are grouped into one list."""
    ids = {r["id"] for r in records}
    out, prev_bullet = [], False
    for n in section.get("notes", []):
        if any(i in ids for i in n.get("replaced_by", [])):
            continue
        bullet = n["text"].startswith("- ")
        if out:
            out.append("\n" if bullet and prev_bullet else "\n\n")
        out.append(n["text"])
        prev_bullet = bullet
    return "".join(out)


def kind(records, k):
    return [r for r in records if r.get("kind") == k]


def per_seed(values) -> str:
    return " / ".join(f3(v) for v in values) if values else "—"


# ----------------------------------------------------------------------------- sections
def accuracy(sec: dict, all_sections: dict) -> str:
    recs = sec["records"]
    mlp = next((r for r in recs if r["case"] == "synthetic_mlp"), None)
    rows = []
    for r in recs:
        if r["case"] == "synthetic_mlp":
            continue
        suffix = r["case"].rsplit("_", 1)[-1]
        ref = text.ACC_REFERENCE.get(r["case"], "")
        if r["case"] == "synthetic_gnn" and mlp:
            ref = f"MLP on the same features: {f3(mlp['mean'])}"
        rows.append([text.ACC_LABEL.get(r["case"], f"{r['dataset']} `{r['config']}`"),
                     ACC_SAMPLER.get(suffix, suffix), METRIC.get(r["metric"], r["metric"]),
                     f"**{f3(r['mean'])}**" if r["case"] in text.ACC_BOLD else f3(r["mean"]),
                     per_seed(r.get("test")), ref])
    return "\n\n".join(filter(None, [
        text.ACC_INTRO, provenance(recs),
        table(["dataset / config", "sampler", "metric", "mean", "per seed", "reference"], rows),
        notes(sec, recs)]))


def shadow(sec: dict, all_sections: dict) -> str:
    recs = kind(sec["records"], "seeds")
    saint = {r["dataset"]: r["mean"] for r in all_sections["accuracy"]["records"]
             if r["case"].endswith("_rw")}
    rows = [[r["dataset"].title(), (f"`{r['config'].rsplit('/', 1)[-1]}` "
             f"({text.CONFIG_ABOUT.get(r['config'], '')})"), METRIC.get(r["metric"], r["metric"]),
             f"**{f3(r['mean'])}**", per_seed(r.get("test")), f3(saint.get(r["dataset"]))]
            for r in recs]
    extra = [r for r in sec["records"] if r.get("kind") in ("extract", "inference")]
    return "\n\n".join(filter(None, [
        text.SHADOW_INTRO, provenance(recs),
        table(["dataset", "shaDow-GNN config", "metric", "shaDow mean", "per seed",
               "GraphSAINT (rw)"], rows),
        tables.shadow_extras(extra), notes(sec, sec["records"])]))


def link(sec: dict, all_sections: dict) -> str:
    recs = sec["records"]
    heur = {(r["dataset"], r["score"]): r for r in kind(recs, "heuristic")}
    rows = []
    for r in kind(recs, "link"):
        cells = [r["dataset"].title() if r["dataset"] != "citeseer" else "CiteSeer",
                 f"`{r['config'].rsplit('/', 1)[-1]}` ({text.CONFIG_ABOUT.get(r['config'], '')})",
                 f"**{f3(r['hits50_mean'])}**; {per_seed(r['hits50'])}",
                 f"**{f3(r['mrr_mean'])}**; {per_seed(r['mrr'])}"]
        for score in HEURISTIC:
            h = heur.get((r["dataset"], score))
            cells.append(f"{f3(h['hits50'])} / {f3(h['mrr'])}" if h else "—")
        rows.append(cells)
    header = ["dataset", "config", "shaDow Hits@50 (mean; per seed)",
              "shaDow MRR (mean; per seed)"] + [f"{v} Hits@50 / MRR" for v in HEURISTIC.values()]
    return "\n\n".join(filter(None, [
        text.LINK_INTRO, provenance(kind(recs, "link") + kind(recs, "heuristic")),
        table(header, rows), notes(sec, recs)]))


def sparse(sec: dict, all_sections: dict) -> str:
    recs = sec["records"]
    dens = kind(recs, "density")
    drows = [[f"{r['rows']} x {r['features']} → {r['hidden']}", f"{100 * r['density']:g}%",
              f"{r['sparse_over_dense']:.2f}"] for r in dens]
    fb = {r["feature_format"]: r for r in kind(recs, "facebook")}
    frows = [[r["label"], " / ".join(f"{v:.4f}" for v in r["test"]), f"{r['mean']:.4f}",
              f"{r['peak_rss_mib']:,.0f} MiB", f"{r['epoch_s']:.2f} s", f"{r['eval_s']:.2f} s",
              f"{r['train_wall_s']:.0f} s"] for r in fb.values()]
    if "dense" in fb and "sparse" in fb:
        d, s = fb["dense"], fb["sparse"]
        frows.append(["ratio", "", f"{100 * (s['mean'] - d['mean']):+.2f} points".replace("-", "−"),
                      *(f"{s[k] / d[k]:.2f}x" for k in ("peak_rss_mib", "epoch_s", "eval_s",
                                                         "train_wall_s"))])
    return "\n\n".join(filter(None, [
        text.SPARSE_INTRO, provenance(dens),
        table(["features (rows x columns → hidden)", "density", "CSR / dense time"], drows, "lrr"),
        text.SPARSE_FACEBOOK, provenance(list(fb.values())),
        table(["features", "test accuracy (seeds 0/1/2)", "mean", "peak RSS",
               "epoch (train+sample)", "eval pass", "train wall"], frows),
        notes(sec, recs)]))


def speed(sec: dict, all_sections: dict) -> str:
    recs = sec["records"]
    extra = notes(sec, recs)
    return "\n\n".join(filter(None, [tables.speed_header(recs), tables.speed_bullets(recs),
                                      "Notes on these figures:" if extra else "", extra]))


def loaders(sec: dict, all_sections: dict) -> str:
    recs = kind(sec["records"], "format")
    rows = [[LOADER.get(r["format"], r["format"]), f"{r['file_mb']:.1f}", f"{r['seconds']:.2f}",
             f"{r['cpu_seconds']:.2f}", f"{r['mb_per_s']:.1f}", f"{r['ratio']:.2f}"] for r in recs]
    sized = next((r for r in recs if r.get("nodes")), None)
    intro = text.LOADERS_INTRO if sized is None else (
        f"A Kronecker graph with {sized['nodes']:,} nodes and {sized['edges']:,} CSR entries, "
        + text.LOADERS_INTRO.split(", ", 3)[3])
    return "\n\n".join(filter(None, [
        intro, provenance(recs),
        table(["format", "files (MB)", "wall s", "CPU s", "MB/s (wall)",
               "peak / (CSR + features)"], rows, "lrrrrr"),
        notes(sec, sec["records"])]))


def distributed(sec: dict, all_sections: dict) -> str:
    recs = sec["records"]
    shaped, methods = kind(recs, "shaped"), kind(recs, "methods")
    rows = []
    def val(v, fmt="{:.2f} s"):
        return "—" if v is None else fmt.format(v)
    for r in shaped:
        e = r["epoch_s"]
        share = f"{val(e.get('1'))} ({val(r.get('comm_share_p1'), '{:.2f}')}"
        share += (f"; all-reduce {r['allreduce_s_p1']:.2f} s)"
                  if r.get("allreduce_s_p1") is not None else ")")
        test = (f"({r['test_note']})" if r.get("test_note")
                else f"{f3(r.get('test_p1'))} / {f3(r.get('test_p01'))}")
        rounds = ", ".join(f"{x:.3f}" for x in r.get("epoch_ratio_rounds") or [])
        method = "" if r.get("method", "gp") == "gp" else f" ({r['method'].upper()})"
        rows.append([(f"{r['dataset']}{method}, {text.LINK_RATE.get(r['shape'], r['shape'])} "
                     f"({val(r.get('measured_gbit_s'), '{:.3f}')})"), share, val(e.get("0.1")),
                     val(e.get("0.01")),
                     f"**{val(r.get('epoch_ratio'), '{:.3f}')}**" + (f" ({rounds})" if rounds else ""),
                     val(r.get("bytes_ratio"), "{:.3f}"), test])
    mrows = []
    names = [m for m in ("hp", "gp", "rp") if any(m in r["epoch_s_p1"] for r in methods)]
    for m in names:
        row = [m.upper()]
        for r in methods:
            ep, mb = r["epoch_s_p1"].get(m), r["bytes_mb_p1"].get(m)
            best = ep is not None and ep == min(r["epoch_s_p1"].values())
            row += ["—" if ep is None else (f"**{ep:.2f} s**" if best else f"{ep:.2f} s"),
                    "—" if mb is None else (f"{mb:.2f} MB" if mb < 10 else f"{mb:.1f} MB")]
        mrows.append(row)
    mhead = ["method (p = 1)"]
    for r in methods:
        mhead += [f"{r['dataset']} epoch", "bytes sent per epoch"]
    return "\n\n".join(filter(None, [
        text.DIST_INTRO, provenance(shaped + methods),
        table(["dataset, link (measured Gbit/s)", "p = 1 epoch (exchange share)", "p = 0.1",
               "p = 0.01", "p = 0.1 / p = 1 (per round)", "bytes p = 0.1 / p = 1",
               "test p = 1 / p = 0.1"], rows),
        table(mhead, mrows), notes(sec, recs)]))


def partition(sec: dict, all_sections: dict) -> str:
    return tables.partition(sec, notes(sec, sec["records"]))


def shp(sec: dict, all_sections: dict) -> str:
    return tables.shp(sec, notes(sec, sec["records"]))


def dist_modes(sec: dict, all_sections: dict) -> str:
    return modes.render(sec, all_sections, sys.modules[__name__], notes(sec, sec["records"]))


RENDER = {"accuracy": accuracy, "shadow": shadow, "link": link, "sparse": sparse,
          "speed": speed, "loaders": loaders, "distributed": distributed,
          "partition": partition, "shp": shp, "modes": dist_modes,
          "compare": lambda sec, all_sections: compare.render(sec, sys.modules[__name__]),
          "shadow_default": lambda sec, all_sections: shadow_default.render(sec, all_sections),
          "sampling": lambda sec, all_sections: sampling.render(sec, sys.modules[__name__])}


def page(sections: dict) -> str:
    out = [text.PAGE_INTRO]
    for name, sec in sections.items():
        if not sec["records"] and not sec.get("notes"):
            continue
        out.append(f"## {text.TITLES[name]}")
        out.append(RENDER[name](sec, sections))
    return "\n\n".join(out).rstrip() + "\n"


# ----------------------------------------------------------------------------- README headline
def _find(sections, name, rid):
    return next((r for r in sections[name]["records"] if r.get("id") == rid), None)


def _when(r) -> str:
    """A record's date, and the microarchitecture it ran on where recorded (``znver4``)."""
    date = r.get("date") or "date not recorded"
    cpu = r.get("cpu", "")
    return f"{date}, {cpu[cpu.rfind('(') + 1:cpu.rfind(')')]}" if "(" in cpu else date


def measured(r) -> str:
    """``(date, on CPU, load average a-b)`` of a record: where its numbers came from."""
    parts = [r.get("date") or "date not recorded"]
    if r.get("cpu"):
        parts.append(f"on {r['cpu']}")
    if r.get("load_avg"):
        parts.append(f"load average {load_text(list(r['load_avg']))}")
    return "(" + ", ".join(parts) + ")"


def headline(sections: dict) -> str:
    """The README's results table: a few key numbers, each with its command and date."""
    rows = []
    acc = [_find(sections, "accuracy", c) for c in ("cora_rw", "facebook_rw", "tolokers_rw")]
    if all(acc):
        rows.append(["GraphSAINT test accuracy / ROC-AUC, mean of 3 seeds",
                     " / ".join(f"{r['dataset'].title()} {f3(r['mean'])}" for r in acc),
                     f"`{acc[0]['command']}` ({_when(acc[0])})"])
    sh = [_find(sections, "shadow", f"shadow:{d}") for d in ("cora", "facebook", "tolokers")]
    if all(sh):
        rows.append(["shaDow-GNN, same datasets", " / ".join(f"{f3(r['mean'])}" for r in sh),
                     f"`{sh[0]['command'].replace('cora', 'DATASET')}` ({_when(sh[0])})"])
    lk, cn = _find(sections, "link", "link:facebook"), _find(sections, "link",
                                                               "heuristic:facebook:common_neighbours")
    if lk and cn:
        rows.append(["Facebook link prediction, Hits@50 / MRR (common neighbours)",
                     (f"{f3(lk['hits50_mean'])} / {f3(lk['mrr_mean'])} ({f3(cn['hits50'])} / "
                     f"{f3(cn['mrr'])})"), f"`{lk['command']}` ({_when(lk)})"])
    step, scale = _find(sections, "speed", "speed:step"), _find(sections, "speed", "speed:scale")
    if step:
        t0 = step["tails"][0]
        cpu = f", CPU {t0['cpu_ratio']:.3f}x" if t0.get("cpu_ratio") else ""
        rows.append(["one training step / its GEMMs alone (target <= 1.3)",
                     f"{t0['ratio']:.3f}x{cpu}", f"`{step['command']}` ({_when(step)})"])
    if scale:
        first, last = scale["rows"][0], scale["rows"][-1]
        if "alternation" in scale:      # issue 25's targets: CPU ratio beside wall, new bound
            rows.append([(f"iteration time 2^{last['scale']} / 2^{scale['rows'][0]['scale']} "
                          f"nodes, wall / CPU (target <= 1.25); (peak RSS - floor) / (data + "
                          f"{'one step' if 'step_gb' in last else 'step activations'}) at "
                          f"2^{last['scale']} and 2^{first['scale']} (target <= 1.3)"),
                         (f"{scale['iteration_ratio']:.3f}x / "
                          f"{scale['alternation']['cpu_ratio']:.3f}x; {last['ratio_bound']:.2f}x "
                          f"and {first['ratio_bound']:.2f}x"),
                         f"`{scale['command']}` ({_when(scale)})"])
        else:
            rows.append([(f"iteration time 2^{last['scale']} / 2^{scale['rows'][0]['scale']} "
                          f"nodes; peak RSS / data at 2^{last['scale']}"),
                         f"{scale['iteration_ratio']:.3f}x; {last['ratio']:.2f}x",
                         f"`{scale['command']}` ({_when(scale)})"])
    labels = sorted({r["label"] for r in sections["sampling"]["records"]
                     if r.get("kind") == "reference"},
                    key=lambda lb: (lb.split("-")[0] != "quiet", lb))   # quiet runs first
    for label in labels:
        ref = _find(sections, "sampling", f"reference:graphsaint:{label}")
        if ref:
            med = ref["summary"]["median_ratio"]
            lo, hi = ref["summary"]["load_avg_1min_range"]
            rows.append([f"sampler CPU per subgraph, GraphSAINT's C++ reference / scalegnn, "
                         f"rw / edge / node / frontier, {label} machine (target >= 5)",
                         # two decimals: 4.98 must not read as the target's 5.0
                         " / ".join(f"{med[s]:.2f}x" for s in sampling.SAMPLERS if s in med),
                         f"`{ref['command']}` ({_when(ref)}, load {lo}-{hi})"])
    kron = _find(sections, "distributed", "shaped:kronecker_17_16")
    if kron:
        rows.append(["distributed epoch, boundary kept with p = 0.1 vs 1 (4 ranks, 1 Gbit/s)",
                     f"{kron['epoch_ratio']:.3f}x", f"`{kron['command']}` ({_when(kron)})"])
    shp_rows = [r for r in sections["shp"]["records"] if r.get("dataset") == "facebook"]
    if shp_rows:
        import _results_tables as tables
        rows.append(["SHP / HP expected minibatch volume, facebook K = 4-32 (target <= 0.95)",
                     f"{tables.geomean(r['shp_vs_hp'] for r in shp_rows):.3f}",
                     f"`{shp_rows[0]['command'].split(' --out ')[0]}` ({_when(shp_rows[0])})"])
    return table(["what", "measured", "command (date, CPU)"], rows)
