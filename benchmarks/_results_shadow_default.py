"""Results section ``shadow_default``: shaDow-GNN's shipped default config against GraphSAINT's
built-in default on every graph (``benchmarks/shadow_default.py``), and shaDow-GNN's cost per
epoch and per target beside GraphSAINT's epoch (``benchmarks/shadow_cost.py``).

:func:`render` writes the results page's section; :func:`fill_doc` the same tables between the
markers of ``docs/shadow.md`` ("Default config"), so neither holds a hand-written number.
"""

from __future__ import annotations

import json
import sys

import _results_render as base
from _results_run import ROOT, python, run_command

INTRO = ("shaDow-GNN trained as a user would on a graph it was never tuned on: "
         "`--config src/scalegnn/configs/methods/shadow.yml` (the package's default: PPR top-32 "
         "scope, 3 layers, center+mean readout, early stopping with patience 10, at most 200 "
         "epochs), against GraphSAINT's built-in default (`scalegnn train --data X` without "
         "`--config`), same seeds, both under `nice` on the shared machine. Gap = shaDow "
         "mean - GraphSAINT mean over the seeds both have.")
COST_INTRO = ("Cost on Facebook (`python benchmarks/shadow_cost.py`): shaDow-GNN's training "
              "per target (extraction + batch assembly, the training step on batches built in "
              "the background as the trainer builds them) and the inference forward per "
              "target, an epoch estimated as per-target cost x training targets, beside "
              "GraphSAINT's measured training epoch. CPU = the process's CPU seconds (all "
              "threads); wall seconds are inflated by the machine's load.")
DOC_MARKERS = ("<!-- shadow default: written by `python benchmarks/results.py render` -->",
               "<!-- end of shadow default -->")
GRAPH_NAMES = {"cora": "Cora", "citeseer": "CiteSeer", "facebook": "Facebook",
               "tolokers": "Tolokers", "blogcatalog": "BlogCatalog",
               "planted_homophilous": "planted, p_in 0.7 (homophilous)",
               "planted_heterophilous": "planted, p_in 0.15 (heterophilous)"}
ORDER = list(GRAPH_NAMES)


def _ms(x: float) -> str:
    return f"{x * 1000:.2f}"


def _mean_std(r) -> str:
    return "—" if r is None else f"**{base.f3(r['mean'])}** ± {base.f3(r['std'])}"


def accuracy_table(recs: list[dict]) -> str:
    by = {(r["graph"], r["method"]): r for r in base.kind(recs, "default")}
    rows = []
    for g in sorted({k[0] for k in by}, key=lambda g: ORDER.index(g) if g in ORDER else 99):
        saint, shadow = by.get((g, "graphsaint")), by.get((g, "shadow"))
        any_ = shadow or saint
        gap = shadow.get("gap") if shadow else None
        rows.append([
            GRAPH_NAMES.get(g, g), base.METRIC.get(any_["metric"], any_["metric"]),
            _mean_std(saint), base.per_seed(saint["test"]) if saint else "—",
            _mean_std(shadow), base.per_seed(shadow["test"]) if shadow else "—",
            "—" if gap is None else f"{gap * 100:+.1f}",
            " / ".join(f"{b}/{e}" for b, e in zip(shadow["best_epoch"], shadow["epochs_run"]))
            if shadow else "—",
            (f"{sum(saint['cpu_s']) / len(saint['cpu_s']):.0f}" if saint else "—") + " / " +
            (f"{sum(shadow['cpu_s']) / len(shadow['cpu_s']):.0f}" if shadow else "—")])
    return base.table(["graph", "metric", "GraphSAINT mean ± std", "per seed",
                       "shaDow mean ± std", "per seed", "gap (points)",
                       "shaDow best/run epochs", "CPU s per run (SAINT / shaDow)"], rows)


def cost_table(recs: list[dict]) -> str:
    rows = []
    for r in base.kind(recs, "cost"):
        if r["method"] == "shadow":
            t, e = r["per_target_train"], r["per_target_eval"]
            old = r.get("per_target_eval_per_appearance")   # absent: the code had no other
            infer = f"{_ms(e['cpu_s'])} / {_ms(old['cpu_s'])}" if old else \
                f"— / {_ms(e['cpu_s'])}"
            rows.append([r["label"], "shaDow-GNN", f"{r['rows_per_target']:g}",
                         f"{_ms(t['extract']['cpu_s'])} / {_ms(t['step']['cpu_s'])}",
                         infer, f"{r['epoch_train_est']['cpu_s']:.1f}",
                         f"{r['epoch_train_est']['wall_s']:.0f}",
                         f"{r['precompute']['cpu_s']:.1f}"])
        else:
            rows.append([r["label"], "GraphSAINT", "—", "—", "—",
                         f"{r['epoch_train']['cpu_s']:.1f}", f"{r['epoch_train']['wall_s']:.0f}",
                         f"{r['presample']['cpu_s']:.1f}"])
    if not rows:
        return ""
    return base.table(["code", "method", "rows per target",
                       "train ms CPU per target (extract / step)",
                       "inference ms CPU per target (unique rows / per appearance)",
                       "epoch CPU s", "epoch wall s", "one-off CPU s (PPR / pre-sampling)"], rows)


def render(sec: dict, all_sections: dict) -> str:
    recs = sec["records"]
    acc, cost = base.kind(recs, "default"), base.kind(recs, "cost")
    return "\n\n".join(filter(None, [
        INTRO, base.provenance(acc) if acc else "", accuracy_table(recs),
        COST_INTRO if cost else "", base.provenance(cost) if cost else "", cost_table(recs),
        base.notes(sec, recs)]))


def fill_doc(doc: str, sections: dict) -> str:
    """``doc`` (docs/shadow.md) with the text between :data:`DOC_MARKERS` replaced by the
    section's tables (unchanged when the markers are absent)."""
    start, end = DOC_MARKERS
    if start not in doc or end not in doc or "shadow_default" not in sections:
        return doc
    head, rest = doc.split(start, 1)
    tail = rest.split(end, 1)[1]
    return f"{head}{start}\n\n{render(sections['shadow_default'], sections)}\n\n{end}{tail}"


def run(extra: list[str]) -> list[dict]:
    """``benchmarks/shadow_default.py run`` (``--args`` passed on) and ``shadow_cost.py``."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import shadow_default
    lines, meta = run_command(python("benchmarks/shadow_default.py", "run", *extra))
    recs = shadow_default.records([r for r in lines if "graph" in r])
    cost, meta = run_command(python("benchmarks/shadow_cost.py"))
    recs += shadow_default.cost_records(cost, meta["command"], label="current")
    return recs


if __name__ == "__main__":   # debugging aid: print the section as the page renders it
    print(render(json.loads((ROOT / "docs/results/shadow_default.json").read_text()), {}))
