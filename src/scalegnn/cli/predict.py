"""``scalegnn predict`` (class scores and labels) and ``scalegnn embed`` (final-layer embeddings)
of a trained run's best model; file schema in :mod:`scalegnn.inference`."""

from __future__ import annotations

import sys

from scalegnn.cli.data import add_data_arguments, data_options
from scalegnn.config.flags import THREADS
from scalegnn.errors import ConfigError
from scalegnn.inference import check_output, load_run, write_embeddings, write_scores
from scalegnn.threads import set_threads

COMMANDS = {
    "predict": "write per-node class scores and predicted labels of a trained run "
               "(.npy, .csv or .parquet)",
    "embed": "write per-node final-layer embeddings (the classifier's input) of a trained run",
}


def add_parser(sub):
    for name, text in COMMANDS.items():
        p = sub.add_parser(name, help=text, description=text)
        p.add_argument("run_dir", help="run directory of `scalegnn train` (holds best.pt)")
        p.add_argument("--data", help="another graph with the same feature width (default: "
                                      "the run's recorded data), loaded with the data options "
                                      "below as `train` takes them")
        which = p.add_mutually_exclusive_group()
        which.add_argument("--nodes", metavar="FILE",
                           help="node ids to infer: .npy integer vector or text, one per line "
                                "(default: every node)")
        which.add_argument("--split", choices=("train", "val", "test"),
                           help="the nodes of one split of the data")
        p.add_argument("--out", required=True, help="output file: .npy, .csv or .parquet")
        p.add_argument("--threads", type=THREADS,
                       help="torch/numba threads (default: the run's recorded count)")
        p.add_argument("--device", default="cpu", help="cpu, cuda[:N] or auto (default: cpu)")
        add_data_arguments(p)
        p.set_defaults(func=run_inference, command_name=name)


def run_inference(args) -> int:

    out = check_output(args.out)  # before any data is loaded
    if args.threads is not None and args.threads < 0:
        raise ConfigError(f"--threads: must be >= 0 (0: all cores), got {args.threads}")
    run = load_run(args.run_dir, args.data, device=args.device, options=data_options(args))
    # the run's thread count by default: the same reduction order, so the same numbers
    set_threads(args.threads if args.threads is not None else int(run.info.get("threads") or 0))
    nodes = run.select(args.nodes, args.split)
    if args.command_name == "embed":
        write_embeddings(out, nodes, run.embeddings(nodes))
        print(f"embed: {nodes.size} nodes x {run.model.embed_dim} -> {out}")
        return 0
    scores = run.scores(nodes)
    write_scores(out, nodes, scores, run.multilabel)
    line = f"predict: {nodes.size} nodes x {scores.shape[1]} class scores -> {out}"
    if args.split and not run.new_data:
        metric = run.mode.metric
        value = run.metrics(nodes, scores).get(metric, float("nan"))
        line += f"; {args.split} {metric} = {value:.4f}"
        recorded = summary_metric(run.summary, args.split, metric)
        if isinstance(recorded, float):
            line += f" (summary.json: {recorded:.4f})"
        elif recorded is not None:
            print(f"scalegnn: warning: {run.path / 'summary.json'}: {args.split} {metric} is "
                  f"{str(recorded)[:40]!r}, not a number (damaged?); not compared",
                  file=sys.stderr)
    print(line)
    sys.stdout.flush()
    return 0


def summary_metric(summary, split: str, metric: str):
    """What ``summary.json`` records for ``split``'s ``metric``: a float, None when it records
    none, or the damaged value (not a number) itself. After ``train --test-data`` its "test" is
    the other graph's, and the training graph's own is ``test_data.training_graph_test``."""
    summary = summary if isinstance(summary, dict) else {}
    own = summary.get(split)
    if split == "test" and "test_data" in summary:
        other = summary["test_data"]
        own = other.get("training_graph_test") if isinstance(other, dict) else other
    if own is None:
        return None
    value = own.get(metric) if isinstance(own, dict) else own
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return value
