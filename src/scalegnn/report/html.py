"""``report.html``: the figure and the numbers behind it in one self-contained page.

Contract: one HTML file with no network resource (inline CSS, the PNG embedded as a base64
``data:`` URI when given); every value from the run is HTML-escaped. Sections: the summary
(train / val / test metrics of the best epoch's weights), the time split, per-rank totals
(distributed runs), run facts (run.json), the resolved config (config.yml) and the per-epoch
table with the best epoch highlighted.
"""

from __future__ import annotations

import base64
import html
import json
import math

from scalegnn.report.rundata import RunData, num, rank_totals, steady_records, title_lines

CSS = """
body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:1.5em auto;
max-width:1200px;color:#222;padding:0 1em}
h1{font-size:1.25em;margin-bottom:.2em}h2{font-size:1.05em;margin-top:1.6em;
border-bottom:1px solid #ddd}
.sub{color:#555;margin-top:0}
table{border-collapse:collapse;font-size:.85em;margin:.4em 0}
td,th{border:1px solid #ddd;padding:.2em .55em;text-align:right}
th{background:#f3f3f3}td.k,th.k{text-align:left}
tr.best td{background:#fff4c2;font-weight:600}
pre{background:#f7f7f7;padding:.6em;font-size:.8em;overflow-x:auto}
img{max-width:100%;border:1px solid #ddd}
.scroll{max-height:32em;overflow:auto;display:inline-block}
"""


def _e(value) -> str:
    return html.escape(str(value), quote=True)


def _fmt(value, digits: int = 4) -> str:
    v = num(value)
    if math.isnan(v):
        return "" if value is None else _e(value)
    if isinstance(value, int):
        return f"{value:d}"
    return f"{v:.{digits}f}"


def _table(header, rows, key_cols: int = 1, row_class=None) -> str:
    out = ["<table><tr>"]
    out += [f"<th class='k'>{_e(h)}</th>" if i < key_cols else f"<th>{_e(h)}</th>"
            for i, h in enumerate(header)]
    out.append("</tr>")
    for j, row in enumerate(rows):
        cls = row_class(j) if row_class else ""
        out.append(f"<tr class='{cls}'>" if cls else "<tr>")
        out += [f"<td class='k'>{c}</td>" if i < key_cols else f"<td>{c}</td>"
                for i, c in enumerate(row)]
        out.append("</tr>")
    out.append("</table>")
    return "".join(out)


def _summary(data: RunData) -> str:
    splits = [s for s in ("train", "val", "test") if isinstance(data.summary.get(s), dict)]
    if not splits:
        return "<p>No summary.json: the run did not finish (the tables below hold the epochs " \
               "recorded so far).</p>"
    keys = list(dict.fromkeys(k for s in splits for k in data.summary[s]))
    rows = [[_e(s)] + [_fmt(data.summary[s].get(k)) for k in keys] for s in splits]
    return _table(["split", *keys], rows)


def _times(data: RunData) -> str:
    tot = data.time_totals()
    names = {"presample_s": "pre-sampling", "sample_s": "sampling", "compute_s": "compute",
             "eval_s": "validation (per epoch)", "final_eval_s": "final evaluation",
             "other_s": "other (checkpoints, logging)", "wall_s": "wall (epochs)",
             "compile_s": "numba compile (inside the above)"}
    rows = [[_e(names[k]), _fmt(tot[k], 3)] for k in names if k in tot]
    fo = data.first_epoch_overhead()
    if fo:
        rows.append([_e(f"epoch {fo['epoch']} training (sampling + compute)"),
                     _fmt(fo["first_s"], 3)])
        rows.append([_e("typical epoch training (median of the others)"),
                     _fmt(fo["typical_s"], 3)])
        rows.append([_e("first-epoch warm-up (difference)"), _fmt(fo["extra_s"], 3)])
    return _table(["time", "seconds"], rows)


def _ranks(data: RunData) -> str:
    if not data.distributed:
        return ""
    head = ["rank", "epochs", "compute s/epoch", "exchange s/epoch", "wait s/epoch",
            "all-reduce s/epoch", "epoch s/epoch", "MiB sent/epoch", "MiB recv/epoch",
            "peak RSS MiB", "CUDA peak MiB"]
    overlap = any("overlap_share" in rk for r in data.records for rk in r.get("ranks") or []
                  if isinstance(rk, dict))
    if overlap:
        head.append("overlapped share")
    steady = steady_records(data)
    peaks = data.summary.get("peak_rss_mb") if isinstance(data.summary.get("peak_rss_mb"),
                                                          list) else []
    rows = []
    for i, (a, whole) in enumerate(zip(rank_totals(data, steady), rank_totals(data))):
        n = max(a["epochs"], 1)
        peak = num(peaks[i]) if i < len(peaks) else whole["peak_rss_mb"]
        rows.append([f"rank {i}", str(a["epochs"])] +
                    [_fmt(a[k] / n, 4) for k in ("compute_s", "exchange_s", "wait_s",
                                                 "allreduce_s", "epoch_s")] +
                    [_fmt(a["bytes_sent"] / n / 2**20, 3), _fmt(a["bytes_recv"] / n / 2**20, 3),
                     _fmt(max(peak, whole["peak_rss_mb"]), 1),
                     _fmt(whole["cuda_peak_mb"], 1)] +
                    ([_fmt(a["overlap_share"] / n, 3)] if overlap else []))
    span = f"epochs {steady[0]['epoch']}-{steady[-1]['epoch']}"
    return "<h2>Per rank</h2>" + _table(head, rows) + \
        f"<p class='sub'>Means per epoch over {_e(span)} (the first epoch holds compilation " \
        "when there are three or more); peaks over the whole run. exchange: posting and " \
        "copying boundary rows; wait: blocked on peers (the two make up the recorded " \
        "communication time); bytes: boundary exchange only; overlapped share: of the time " \
        "forward rows were in flight, the part local compute filled.</p>"


def _facts(data: RunData) -> str:
    rows = []
    for k, v in sorted(data.info.items()):
        if k == "argv" and isinstance(v, list):
            v = " ".join(str(a) for a in v)
        elif isinstance(v, (dict, list)):
            v = json.dumps(v, sort_keys=True)
        rows.append([_e(k), _e(v)])
    return _table(["fact", "value"], rows, key_cols=2) if rows else "<p>No run.json.</p>"


def _epochs(data: RunData) -> str:
    vkeys = data.val_keys
    tkeys = [k for k in ("lr", "presample_s", "sample_s", "compute_s", "eval_s", "compile_s")
             if any(k in r for r in data.records)]
    head = ["epoch", "loss", "iterations", *(f"val {k}" for k in vkeys), *tkeys]
    rows = []
    for r in data.records:
        val = r.get("val") if isinstance(r.get("val"), dict) else {}
        rows.append([str(r["epoch"]), _fmt(r.get("loss"), 5), _fmt(r.get("iterations"))] +
                    [_fmt(val.get(k)) for k in vkeys] +
                    [_fmt(r.get(k), 6 if k == "lr" else 3) for k in tkeys])
    best = data.best_epoch
    return "<div class='scroll'>" + _table(
        head, rows, row_class=lambda j: "best" if data.records[j]["epoch"] == best else "") + \
        "</div>"


def render_html(data: RunData, png: bytes | None = None) -> str:
    """The page (see the module docstring); ``png``: the figure's bytes, embedded."""
    first, second = title_lines(data)
    img = (f"<img alt='report figure' src='data:image/png;base64,"
           f"{base64.b64encode(png).decode('ascii')}'>" if png else
           "<p>(No figure: matplotlib is not installed; pip install 'scalegnn[plot]'.)</p>")
    best = data.best_epoch
    return "".join([
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>{_e(data.dataset)} {_e(data.mode)} run report</title>",
        f"<style>{CSS}</style></head><body>",
        f"<h1>{_e(first)}</h1><p class='sub'>{_e(second)} &middot; {_e(data.path)}</p>",
        img,
        "<h2>Summary (best epoch's weights)</h2>", _summary(data),
        f"<p class='sub'>{_e(data.summary['stopped'])}</p>"
        if isinstance(data.summary.get("stopped"), str) else "",
        "<h2>Time</h2>", _times(data),
        _ranks(data),
        f"<h2>Epochs</h2><p class='sub'>highlighted: best epoch {_e(best)}</p>", _epochs(data),
        "<h2>Run facts (run.json)</h2>", _facts(data),
        "<h2>Config (config.yml)</h2>",
        f"<pre>{_e(data.config_text)}</pre>" if data.config_text else "<p>No config.yml.</p>",
        "</body></html>\n"])
