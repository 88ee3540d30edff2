"""The results page's section ``compare``: ``scalegnn compare`` on the shared graphs (every
method of :mod:`scalegnn.compare` under the same training-time budget and seed).

``run_compare`` runs the command once per dataset (``--args "--datasets facebook --budget 60"``)
and stores each ``compare.json`` as a record (``table``) with its command, date and load
average; the plot goes to ``docs/results/compare_<dataset>.png``. ``render`` writes the section:
per dataset the table (best validation metric, test metric at the best validation epoch,
epochs, training seconds, time to 99% of the best validation metric of all methods, peak RSS)
and the plot.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from _results_run import DATA, ROOT, _meta, _options, _csv, run_command, scalegnn

PLOTS = ROOT / "docs" / "results"
INTRO = (
    "`scalegnn compare DATA --budget SECONDS` trains every method with its config shipped in "
    "the package (`src/scalegnn/configs/methods/`: nothing tuned to these graphs) under the "
    "same budget of training seconds (wall clock of the epochs, validation passes left out) "
    "and seed, each in a process of its own, validating after every epoch. *To 99%*: the "
    "training seconds a method took to first reach 99% of the best validation metric any "
    "method reached (— : never within its budget); the fastest in bold. Peak RSS: the "
    "method's process (data, model, sampler), from `wait4`. Timings on a shared, loaded "
    "machine: compare methods within a table, not across tables.")


def run_compare(extra: list[str]) -> list[dict]:
    o = _options(extra, datasets="facebook,tolokers", budget="60", seed="0")
    recs = []
    for ds in _csv(o.datasets):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "compare"
            _, meta = run_command(scalegnn("compare", f"{DATA}/{ds}", "--budget", o.budget,
                                           "--seed", o.seed, "--no-progress", "--out",
                                           str(out)))
            recs.append(record(ds, out, meta))
    return recs


def record(dataset: str, out: Path, meta: dict) -> dict:
    """The record of one ``scalegnn compare`` output folder; its plot copied beside the
    records."""
    table = json.loads((out / "compare.json").read_text())
    for m in table["methods"]:
        m.pop("command", None)  # the temporary --out; the record's command says how to rerun
    png = out / "compare.png"
    if png.is_file():
        shutil.copyfile(png, PLOTS / f"compare_{dataset}.png")
    meta = {**meta, "command": meta["command"].split(" --out ")[0]}
    return _meta(meta, id=dataset, kind="compare", dataset=dataset, table=table)


def render(sec: dict, helpers) -> str:
    parts = [INTRO]
    for r in helpers.kind(sec["records"], "compare"):
        t = r["table"]
        setting = "transductive" if t.get("transductive") else "inductive"
        parts.append(f"### {t['dataset']}\n\n{t['nodes']:,} nodes, {t['train_nodes']:,} "
                     f"training nodes, {setting}; metric: validation/test {t['metric']}, "
                     f"budget {t['budget_s']:g} s of training per method, seed {t['seed']}.")
        parts.append(helpers.provenance([r]))
        fastest = t.get("fastest_to_target")
        rows = []
        for m in t["methods"]:
            if "curve" not in m:
                rows.append([m["method"], "not run: " + str(m.get("skipped") or m.get("failed")),
                             "", "", "", "", ""])
                continue
            reach = "—" if m.get("time_to_target_s") is None else f"{m['time_to_target_s']:.1f} s"
            if m["method"] == fastest:
                reach = f"**{reach}**"
            rows.append([m["method"], helpers.f3(m["best_val"]), helpers.f3(m["test_at_best_val"]),
                         m["epochs_run"], f"{m['train_s']:.1f}", reach,
                         f"{m['peak_rss_bytes'] / 2**20:,.0f}"])
        parts.append(helpers.table(
            ["method", "best val", "test at best val", "epochs", "training s", "to 99%",
             "peak RSS MiB"], rows, "lrrrrrr"))
        target = (t.get("target") or {}).get("value")
        parts.append(f"Target: {helpers.f3(target)} (99% of the best validation {t['metric']}); "
                     f"fastest to it: {fastest or 'none'}.")
        if (PLOTS / f"compare_{r['id']}.png").is_file():
            parts.append(f"![validation {t['metric']} against training time on {t['dataset']}]"
                         f"(results/compare_{r['id']}.png)")
    notes = helpers.notes(sec, sec["records"])
    return "\n\n".join(filter(None, parts + [notes]))
