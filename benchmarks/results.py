"""The measured-results page: run the benchmarks behind it, store their records, render it.

    python benchmarks/results.py run [--only SECTION,...] [--args "EXTRA ARGS"]
    python benchmarks/results.py render [--check]

``run`` runs the benchmark of each section (all by default) and stores its JSON records in
``docs/results/SECTION.json`` (written atomically). A record replaces the stored record with
the same key (a case, a dataset, a format...), so a partial run (``--args`` passes extra
arguments to a single section's benchmark, e.g. ``--only accuracy --args "--cases cora_rw
--seeds 0"``) updates only its own rows. Every record carries the ``command`` that produced
it, its ``date``, the machine's ``cpu`` and the load average (``load_avg``) around it;
records transcribed from an earlier README carry a ``source`` instead of a fresh run.

``render`` writes ``docs/results.md`` from the stored records alone (deterministic: same
records, same page), and the results table between the headline markers of ``README.md``;
``--check`` only compares and exits 1 when either is stale.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import _results_render as render_sections
import _results_run as runners
import _results_shadow_default as shadow_default

RESULTS = ROOT / "docs" / "results"
SHADOW_DOC = ROOT / "docs" / "shadow.md"   # its "Default config" tables (shadow_default)
PAGE = ROOT / "docs" / "results.md"
README = ROOT / "README.md"
HEADLINE = ("<!-- results headline: written by `python benchmarks/results.py render` -->",
            "<!-- end of results headline -->")
SECTIONS = ("accuracy", "shadow", "link", "sparse", "speed", "loaders", "distributed",
            "partition", "shp", "modes", "compare", "shadow_default", "sampling")


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder + rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load_section(name: str) -> dict:
    path = RESULTS / f"{name}.json"
    if not path.exists():
        return {"section": name, "records": [], "notes": []}
    return json.loads(path.read_text(encoding="utf-8"))


def save_section(name: str, data: dict) -> None:
    atomic_write_text(RESULTS / f"{name}.json",
                      json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n")


def merge(old: list[dict], new: list[dict]) -> list[dict]:
    """``old`` less the records of every ``group`` that ``new`` re-measured (a benchmark's
    whole table), with each record of ``new`` replacing the one with the same ``id`` (else
    appended)."""
    groups = {r["group"] for r in new if r.get("group")}
    out = [r for r in old if r.get("group") not in groups or any(
        n["id"] == r["id"] for n in new)]
    index = {r["id"]: i for i, r in enumerate(out)}
    for r in new:
        k = r["id"]
        if k in index:
            out[index[k]] = r
        else:
            index[k] = len(out)
            out.append(r)
    return out


def cmd_run(args) -> int:
    names = list(SECTIONS) if not args.only else args.only.split(",")
    unknown = sorted(set(names) - set(SECTIONS))
    if unknown:
        raise SystemExit(f"results.py: unknown section(s) {unknown}; choose from {list(SECTIONS)}")
    extra = shlex.split(args.args) if args.args else []
    if extra and len(names) != 1:
        raise SystemExit("results.py: --args needs exactly one section in --only")
    status = 0
    for name in names:
        runner = runners.runners()[name]
        t0 = time.perf_counter()
        print(f"results.py: running section {name} ...", file=sys.stderr, flush=True)
        try:
            records = runner(extra)
        except runners.BenchmarkFailed as e:
            print(f"results.py: section {name} failed: {e}", file=sys.stderr)
            status = 1
            continue
        cpu = runners.host_cpu()
        for r in records:
            r.setdefault("cpu", cpu)
        data = load_section(name)
        data["records"] = merge(data["records"], records)
        save_section(name, data)
        print(f"results.py: {name}: {len(records)} record(s) stored in "
              f"{(RESULTS / f'{name}.json').relative_to(ROOT)} "
              f"({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
    return status


def with_headline(readme: str, sections: dict) -> str:
    """``readme`` with the text between the HEADLINE markers replaced by the results table."""
    start, end = HEADLINE
    if start not in readme or end not in readme:
        return readme
    head, rest = readme.split(start, 1)
    tail = rest.split(end, 1)[1]
    return f"{head}{start}\n\n{render_sections.headline(sections)}\n\n{end}{tail}"


def cmd_render(args) -> int:
    sections = {name: load_section(name) for name in SECTIONS}
    outputs = {PAGE: render_sections.page(sections)}
    if README.exists():
        outputs[README] = with_headline(README.read_text(encoding="utf-8"), sections)
    if SHADOW_DOC.exists():
        outputs[SHADOW_DOC] = shadow_default.fill_doc(SHADOW_DOC.read_text(encoding="utf-8"),
                                                      sections)
    stale = [p for p, text in outputs.items()
             if (p.read_text(encoding="utf-8") if p.exists() else "") != text]
    if args.check:
        for p in stale:
            print(f"results.py: {p.relative_to(ROOT)} is stale: run "
                  "`python benchmarks/results.py render`", file=sys.stderr)
        return 1 if stale else 0
    for p in stale:
        atomic_write_text(p, outputs[p])
        print(f"results.py: wrote {p.relative_to(ROOT)}", file=sys.stderr)
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run the benchmarks of some sections, store their records")
    r.add_argument("--only", default=None,
                   help=f"comma list of sections (default all): {','.join(SECTIONS)}")
    r.add_argument("--args", default=None,
                   help="extra arguments for the one section's benchmark (quoted)")
    r.set_defaults(func=cmd_run)
    w = sub.add_parser("render", help="write docs/results.md from docs/results/*.json")
    w.add_argument("--check", action="store_true",
                   help="only check that docs/results.md is up to date (exit 1 if not)")
    w.set_defaults(func=cmd_render)
    args = p.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
