"""Reports of a run directory: ``report.png`` (:mod:`scalegnn.report.plot`) and
``report.html`` (:mod:`scalegnn.report.html`) beside ``metrics.jsonl``.

* :func:`write_report` — both files (the HTML embeds the PNG; without matplotlib the HTML is
  written alone and ``png`` is None), or the HTML page alone (``png=False``). A bad run
  directory is a one-line DataError; the count of skipped damaged lines of ``metrics.jsonl``
  comes back as ``skipped``.
* :func:`report_paths` — the files of ``scalegnn report --out``, chosen by its suffix.
* :func:`plot_run` — the PNG only (None without matplotlib).
* :func:`report_after_run` — what the trainer calls at the end of a run: never raises, a
  report problem is one warning line on stderr and the finished run stands.
* :func:`plot_compare` — ``compare.png`` of a ``scalegnn compare`` table
  (:mod:`scalegnn.report.curves`).
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

from scalegnn.errors import ConfigError
from scalegnn.io import atomic_write_bytes, atomic_write_text
from scalegnn.report import curves, plot
from scalegnn.report.html import render_html
from scalegnn.report.rundata import RunData, load_run

__all__ = ["RunData", "load_run", "plot_compare", "plot_run", "report_after_run", "report_paths",
           "write_report"]

REPORT_TYPES = (".png", ".html")


def _png_bytes(data, draw=None) -> bytes | None:
    """``draw(data, plt)``'s figure (default: the run report's) as PNG bytes; None without
    matplotlib."""
    draw = draw or plot.draw_report  # looked up now: tests replace it
    try:
        import matplotlib  # noqa: PLC0415 (optional dependency)
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # noqa: PLC0415
    except ImportError:
        return None
    fig = draw(data, plt)
    try:
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=100)
    finally:
        plt.close(fig)
    return buf.getvalue()


def write_report(run_dir, png=None, html=None) -> dict:
    """Write ``report.png`` and ``report.html`` for the run in ``run_dir`` (or to the paths
    ``png`` / ``html``; ``png=False``: the HTML page alone, its plot embedded); return
    ``{"png": path or None, "html": path, "skipped": damaged metrics lines left out}``."""
    run_dir = Path(run_dir)
    data = load_run(run_dir)
    png_path = None if png is False else Path(png) if png else run_dir / "report.png"
    html_path = Path(html) if html else run_dir / "report.html"
    image = _png_bytes(data)
    if image is not None and png_path is not None:
        atomic_write_bytes(png_path, image)
    atomic_write_text(html_path, render_html(data, image))
    return {"png": png_path if image is not None else None, "html": html_path,
            "skipped": data.skipped}


def report_paths(out) -> tuple[Path | bool, Path]:
    """``(png, html)`` for ``scalegnn report --out OUT``, by OUT's suffix: ``X.png`` -> the PNG
    and ``X.html`` beside it; ``X.html`` -> the page alone (``png`` False); anything else is a
    one-line ConfigError naming ``--out``."""
    out = Path(out)
    suffix = out.suffix.lower()
    if suffix not in REPORT_TYPES:
        raise ConfigError(f"--out {out}: unknown report type {suffix or '(none)'!r}; expected "
                          f".png (the page is written beside it as .html) or .html")
    return (out, out.with_suffix(".html")) if suffix == ".png" else (False, out)


def plot_run(run_dir, out=None):
    """Write ``report.png`` (or ``out``) for the run in ``run_dir``; its path, or None without
    matplotlib."""
    run_dir = Path(run_dir)
    image = _png_bytes(load_run(run_dir))
    if image is None:
        return None
    target = Path(out) if out else run_dir / "report.png"
    atomic_write_bytes(target, image)
    return target


def plot_compare(table: dict, out) -> Path | None:
    """Write ``compare.png`` of a ``scalegnn compare`` table to ``out``; its path, or None
    without matplotlib."""
    image = _png_bytes(table, curves.draw_compare)
    if image is None:
        return None
    atomic_write_bytes(out, image)
    return Path(out)


def report_after_run(run_dir) -> dict | None:
    """:func:`write_report` for a run that just finished; any failure is a warning line."""
    try:
        return write_report(run_dir)
    except Exception as e:  # noqa: BLE001 (a report must never fail a finished run)
        print(f"scalegnn: warning: no report for {run_dir}: {type(e).__name__}: "
              f"{str(e).splitlines()[0] if str(e) else ''}", file=sys.stderr)
        return None
