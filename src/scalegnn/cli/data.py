"""``scalegnn data {info,synth,convert}``: inspect, generate and convert datasets.

* ``data info SPEC [--json]`` — nodes, edges, degree stats, features, classes, splits, bytes.
* ``data synth {kronecker,planted} [options] --out DIR`` — write a generated dataset as a
  GraphSAINT folder.
* ``data convert SRC --to graphsaint DST`` — load any supported format, write GraphSAINT.

SPEC is anything :func:`scalegnn.data.load_dataset` accepts (a path, a dataset spec .yml or a
generator spec); the data options (``--id-column``, ``--label-column``, ``--adjacency``,
``--features``, ``--labels``, ``--features-source``: :func:`add_data_arguments`) are shared with
``train``, ``dist-train``, ``predict`` and ``embed``.
"""

from __future__ import annotations

import json
import sys

from scalegnn import memory
from scalegnn.cli.parser import no_subcommand
from scalegnn.config import Config
from scalegnn.config.flags import FRACTION, SEED, SPLIT, WIDTH, count, real
from scalegnn.data import load_dataset
from scalegnn.data import synthetic as S
from scalegnn.data.graphsaint import save_graphsaint
from scalegnn.data.options import OPTION_KEYS
from scalegnn.engine.memory_guard import estimate_training_memory
from scalegnn.errors import DataError
from scalegnn.threads import release_freed_memory
from scalegnn.train.build import shape_run_model


def _human_bytes(b: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if b < 1024 or unit == "TiB":
            return f"{b:.0f} {unit}" if unit == "B" else f"{b:.1f} {unit}"
        b /= 1024
    return ""


SPLIT_HELP = ("which of several given splits (a heterophilous .npz has 10); default 0, said in "
              "one line when the data has several")


def add_data_arguments(p):
    """The loader options (:mod:`scalegnn.data.options`) as flags; :func:`data_options` reads
    them back as the ``options`` dict of :func:`scalegnn.data.load_dataset`. The commands that
    load a dataset file (``data info``/``convert``, ``train``, ``dist-train``, ``predict``,
    ``embed``) declare them through this one group."""
    g = p.add_argument_group("data options", "choices a dataset file leaves open (a dataset "
                             "spec .yml may hold them instead)")
    g.add_argument("--id-column", metavar="NAME",
                   help="labels CSV: column of node ids (e.g. new_id for MUSAE twitch)")
    g.add_argument("--label-column", metavar="NAME",
                   help="labels CSV: column of classes (e.g. mature); .mat: 0-based column of "
                        "the label matrix, a single-label task")
    g.add_argument("--adjacency", metavar="VAR", help=".mat: adjacency variable (e.g. A)")
    g.add_argument("--features", metavar="VAR|FILE",
                   help=".mat: feature variable (e.g. Attributes); edge list or CSV folder: "
                        "features file (.npy N x F, or .json feature ids per node)")
    g.add_argument("--labels", metavar="VAR[:K]|FILE",
                   help=".mat: label variable (e.g. Label), VAR:K for column K of a label "
                        "matrix (e.g. local_info:1); edge list or CSV folder: labels file "
                        "(CSV, 'node label' lines, or a SNAP .cmty community file)")
    g.add_argument("--features-source", metavar="structural|onehot|FILE.npy",
                   help="node features instead of the file's own (default: the file's own; "
                        "structural ones when it has none)")


def data_options(args) -> dict:
    """The data options given on the command line (None: not given)."""
    return {k: getattr(args, k) for k in OPTION_KEYS if getattr(args, k, None) is not None}


def features_line(meta: dict) -> str | None:
    """What the features are when the user did not choose them: one line, else None."""
    if meta.get("featureless"):
        return (f"no node features in the data: using {meta.get('features', 'structural')}; "
                f"choose with --features-source structural|onehot|FILE.npy")
    return None


def data_notes(meta: dict) -> list[str]:
    """The lines a command says once about data choices the user did not make: structural
    features, split 0 of several."""
    return [line for line in (features_line(meta), meta.get("split_note")) if line]


def format_info(info: dict) -> str:
    d = info["degree"]
    s = info["splits"]
    by = info["bytes"]
    task = f"{info['classes']} labels (multi-label)" if info["multilabel"] else \
        f"{info['classes']} classes"
    lines = [
        f"dataset    {info['name']}" + (f"  ({info['source']})" if info.get("source") else ""),
        f"nodes      {info['nodes']:,}",
        f"edges      {info['edges']:,} undirected ({info['directed_entries']:,} CSR entries)",
        f"degree     min {d['min']}  median {d['median']:g}  mean {d['mean']:.2f}  max {d['max']}",
        f"features   {info['features']:,}" + (f"  ({info['features_note']})"
                                               if info.get("features_note") else "")
        + (f"  [{info['feature_storage']}]" if info.get("feature_storage") else ""),
        f"task       {task}, metric {info['metric']}",
        f"splits     train {s['train']:,} / val {s['val']:,} / test {s['test']:,}"
        + (f"  ({info['split_note']})" if info.get("split_note") else ""),
        f"bytes      graph {_human_bytes(by['graph'])}, features {_human_bytes(by['features'])}, "
        f"labels {_human_bytes(by['labels'])}",
    ]
    return "\n".join(lines)


def _info(args) -> int:
    ds = load_dataset(args.spec, split=args.split, seed=args.seed, mmap=args.mmap,
                      options=data_options(args))
    info = ds.info()
    info["source"] = ds.source
    if ds.meta.get("features"):
        info["features_note"] = features_line(ds.meta) or str(ds.meta["features"])
    if ds.meta.get("split_note"):
        info["split_note"] = ds.meta["split_note"]
    est, avail = _memory_estimate(ds, args.config)
    info["memory"] = est.to_dict(avail)
    if args.json:
        print(json.dumps(info))
    else:
        print(format_info(info))
        print("\n".join(f"{'memory' if i == 0 else '':<11}{line.strip()}" if i == 0
                        else f"{'':<11}{line[2:]}" for i, line in enumerate(est.lines(avail))))
    return 0


def _memory_estimate(ds, config_path):
    """Training memory estimate of ``ds`` (:mod:`scalegnn.engine.memory_guard`) for the built-in config or
    ``config_path``, and the memory the guard would compare it with."""
    config = (Config.from_yaml(config_path) if config_path else Config.builtin()).validate()
    est = estimate_training_memory(ds, config, shape_run_model(ds, config))
    avail = memory.available_memory()
    return est, None if avail is None else avail + est.resident


def _synth(args) -> int:
    release_freed_memory()  # the peak is the point: freed build buffers go back at once
    if args.kind == "kronecker":  # streamed to --out: the features never sit in memory
        ds = S.kronecker_dataset(args.scale, args.edge_factor, seed=args.seed,
                                 features=args.features, num_labels=args.labels,
                                 classes=args.classes, a=args.a, b=args.b, c=args.c,
                                 out=args.out, overwrite=args.overwrite)
    else:
        ds = S.planted_dataset(nodes=args.nodes, classes=args.classes or 8,
                               features=args.features, degree=args.degree, p_in=args.p_in,
                               noise=args.noise, multilabel=args.multilabel,
                               num_labels=args.labels, seed=args.seed)
        save_graphsaint(ds, args.out, overwrite=args.overwrite)
    print(f"wrote {args.out}: {ds.num_nodes:,} nodes, {ds.graph.num_edges // 2:,} edges",
          file=sys.stderr)
    return 0


def _convert(args) -> int:
    if args.to != "graphsaint":
        raise DataError(f"--to: unsupported format {args.to!r}; allowed: graphsaint")
    release_freed_memory()
    # mmap: a GraphSAINT source's feats.npy is copied block by block, never loaded whole
    ds = load_dataset(args.src, split=args.split, seed=args.seed, mmap=True,
                      options=data_options(args))
    for line in data_notes(ds.meta):
        print(f"scalegnn: {ds.name}: {line}", file=sys.stderr)
    save_graphsaint(ds, args.dst, overwrite=args.overwrite)
    print(f"wrote {args.dst}: {ds.num_nodes:,} nodes (from {ds.source})", file=sys.stderr)
    return 0


def add_parser(sub):
    p = sub.add_parser("data", help="inspect, generate and convert datasets")
    dsub = p.add_subparsers(dest="data_command")
    p.set_defaults(func=lambda args: no_subcommand(p))

    info = dsub.add_parser("info", help="print dataset statistics")
    info.add_argument("spec", help="path or generator spec (synthetic, planted:..., "
                                   "kronecker:SCALE:EF)")
    info.add_argument("--json", action="store_true", help="print one JSON object")
    info.add_argument("--split", type=SPLIT, help=SPLIT_HELP)
    info.add_argument("--seed", type=SEED, default=0, help="seed for generators/splits")
    info.add_argument("--mmap", action="store_true", help="memory-map float32 features")
    info.add_argument("--config", help="train config whose memory estimate to print "
                                       "(default: the built-in one)")
    add_data_arguments(info)
    info.set_defaults(func=_info)

    syn = dsub.add_parser("synth", help="generate a dataset into a GraphSAINT folder")
    syn.add_argument("kind", choices=["kronecker", "planted"])
    syn.add_argument("--out", required=True, help="output folder (GraphSAINT format)")
    syn.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    syn.add_argument("--seed", type=SEED, default=0)
    syn.add_argument("--features", type=WIDTH, default=None,
                     help="feature width (kronecker 50, planted 32)")
    syn.add_argument("--labels", type=WIDTH, default=None,
                     help="multi-label count (kronecker 121, planted 20)")
    g = syn.add_argument_group("kronecker")
    g.add_argument("--scale", type=count(1, 40), default=14, help="2^scale nodes (default 14)")
    g.add_argument("--edge-factor", type=WIDTH, default=16, help="edges per node (default 16)")
    g.add_argument("-a", type=FRACTION, default=0.57)
    g.add_argument("-b", type=FRACTION, default=0.19)
    g.add_argument("-c", type=FRACTION, default=0.19)
    syn.add_argument("--classes", type=count(2, 1 << 20), default=None,
                     help="single-label classes (kronecker: instead of --labels multi-labels; "
                          "planted: communities, default 8)")
    g = syn.add_argument_group("planted")
    g.add_argument("--nodes", type=count(8, 1 << 40), default=12000)
    g.add_argument("--degree", type=real(0.0, 1e6, lo_open=True), default=12.0)
    g.add_argument("--p-in", type=FRACTION, default=0.7)
    g.add_argument("--noise", type=real(0.0, 1e6), default=4.0)
    g.add_argument("--multilabel", action="store_true")
    syn.set_defaults(func=_synth_defaults)

    conv = dsub.add_parser("convert", help="convert a dataset to GraphSAINT format")
    conv.add_argument("src", help="path or generator spec")
    conv.add_argument("--to", required=True, help="target format (graphsaint)")
    conv.add_argument("dst", help="output folder")
    conv.add_argument("--overwrite", action="store_true")
    conv.add_argument("--split", type=SPLIT, help=SPLIT_HELP)
    conv.add_argument("--seed", type=SEED, default=0)
    add_data_arguments(conv)
    conv.set_defaults(func=_convert)


def _synth_defaults(args) -> int:
    kron = args.kind == "kronecker"
    if args.features is None:
        args.features = 50 if kron else 32
    if args.labels is None:
        args.labels = 121 if kron else 20
    return _synth(args)
