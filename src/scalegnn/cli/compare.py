"""``scalegnn compare DATA --methods saint-rw,full --budget SECONDS``: train each method with its
shipped config on DATA under the same training-time budget and seed (each in a process of its
own), then write ``compare.json`` (per method: best validation metric, test metric at the best
validation epoch, epochs, times, time to 99% of the best validation metric of all methods, peak
memory), ``compare.png`` (validation against training time) and each method's run directory
under ``--out`` (:mod:`scalegnn.compare`).

``--out`` follows ``train --out``'s rules, checked before any data is read: a new or empty
folder is written; one holding a comparison is replaced only with ``--overwrite``; a run
directory or a folder of other files is refused. While it runs, stderr has a line as each
method starts and ends (``scalegnn: compare: ...``) and, unless ``--no-progress``, a progress
bar over the budget's seconds; stdout gets the table and the paths written.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from scalegnn.cli.data import SPLIT_HELP, add_data_arguments, data_options
from scalegnn.compare import METHODS, PLOT_FILE, RESULT_FILE, check_out, compare, parse_methods
from scalegnn.config.flags import SECONDS, SEED, SPLIT, THREADS
from scalegnn.data.options import check_options


def add_parser(sub):
    p = sub.add_parser("compare", help="train several methods (GraphSAINT samplers, neighbour "
                                       "sampling, ClusterGCN, shaDow-GNN, full batch) on one "
                                       "graph under the same time budget; table and plot",
                       description="Train each method with its shipped config on DATA under "
                                   "the same training-time budget and seed, each in a process "
                                   "of its own; write compare.json (per method: best val, test "
                                   "at best val, epochs, times, time to 99% of the best val of "
                                   "all methods, peak memory), compare.png (val against "
                                   "training time) and each method's run directory in --out.")
    p.add_argument("data", help="dataset folder/file or generator spec")
    p.add_argument("--methods", default=",".join(METHODS),
                   help=f"comma list of methods (default: all: {','.join(METHODS)})")
    p.add_argument("--budget", type=SECONDS, required=True, metavar="SECONDS",
                   help="training seconds per method (wall clock of its epochs, validation "
                        "passes left out); a run stops after the epoch in which it ran out")
    p.add_argument("--seed", type=SEED, default=0, help="random seed of every run (default 0)")
    p.add_argument("--out", help="output folder (default: runs/compare-<dataset>-<time>)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the comparison already in --out (default: refuse)")
    p.add_argument("--split", type=SPLIT, help=SPLIT_HELP)
    p.add_argument("--threads", type=THREADS, help="torch/numba threads of each run (default: "
                                                   "all cores)")
    p.add_argument("--device", default=None, help="cpu, cuda[:N] or auto (default: cpu)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_data_arguments(p)
    p.set_defaults(func=run_compare)


def run_compare(args) -> int:
    methods = parse_methods(args.methods)
    options = check_options(data_options(args), "data options")
    out = Path(args.out) if args.out else Path("runs") / \
        f"compare-{Path(str(args.data)).name}-{time.strftime('%Y%m%d-%H%M%S')}"
    check_out(out, args.overwrite)  # before any data is read

    def log(line):
        print(f"scalegnn: compare: {line}", file=sys.stderr, flush=True)

    table = compare(args.data, methods, args.budget, out, seed=args.seed, split=args.split,
                    threads=args.threads, device=args.device, data_options=options,
                    overwrite=args.overwrite, progress=not args.no_progress, log=log)
    print(format_table(table))
    print(out / RESULT_FILE)
    if (out / PLOT_FILE).is_file():
        print(out / PLOT_FILE)
    else:
        print(f"scalegnn: warning: no {PLOT_FILE}: matplotlib is not installed (pip install "
              f"'scalegnn[plot]')", file=sys.stderr)
    return 0


def format_table(table: dict) -> str:
    """The comparison as a text table (one row per method)."""
    metric = table["metric"]
    head = f"{'method':11s} {'best val':>8s} {'test':>7s} {'epochs':>6s} {'train s':>8s} " \
           f"{'to 99%':>7s} {'peak MiB':>8s}"
    title = f"{table['dataset']}: {metric}, budget {table['budget_s']:g} s of training per " \
            f"method, seed {table['seed']}"
    lines = [title, head]
    for m in table["methods"]:
        if "curve" not in m:
            reason = m.get("skipped") or m.get("failed")
            lines.append(f"{m['method']:11s} not run: {reason}")
            continue
        lines.append(f"{m['method']:11s} {_num(m['best_val'], 4):>8s} "
                     f"{_num(m['test_at_best_val'], 4):>7s} {m['epochs_run']:>6} "
                     f"{_num(m['train_s'], 1):>8s} {_num(m['time_to_target_s'], 1):>7s} "
                     f"{m['peak_rss_bytes'] / 2**20:>8.0f}")
    target = table["target"]["value"]
    lines.append(f"target: {_num(target, 4)} (99% of the best val {metric}); fastest to it: "
                 f"{table['fastest_to_target'] or 'none'}")
    return "\n".join(lines)


def _num(x, digits: int) -> str:
    return f"{x:.{digits}f}" if isinstance(x, (int, float)) else "-"
