"""``scalegnn partition make|compare|shp``: partition a dataset into a plan folder, measure
partitions (``scalegnn partition DATA ...`` is ``partition make DATA ...``).

* ``partition make DATA --parts K --method hp|gp|rp --out PLAN [--report]`` — write a plan; with
  ``--report`` also print its exact accounting (volume and messages avg/max per layer, compute
  imbalance, partitioning time). ``--report`` without ``--out`` only measures.
* ``partition compare DATA --methods hp,gp,rp --parts 4,8,16,32 --out T.json [--plot T.png]`` —
  the accounting table of every method and part count, as JSON and a plot.
* ``partition shp DATA --parts 4,8 --sampler rw --budget num_root=500,depth=2 [--json T.json]``
  — expected communication volume of fresh random minibatches under HP vs SHP (stochastic
  hypergraph); ``--parts K --out PLAN`` also writes the SHP partition as a plan.

``metis`` and ``random`` remain aliases of ``gp`` and ``rp``. Every form checks ``--parts`` the
same way (:func:`parts_type`: integers, no empty item, at least 1, or 2 for ``shp``, at most the
graph's nodes) and its other settings before reading any data. Their JSON is valid JSON: a ratio
over a zero volume (an edgeless graph) is ``null``, never ``NaN``.

``--out PLAN`` follows the rules of ``train --out`` (:func:`check_plan_out`, before any data is
read): a new or empty folder is written; a folder holding a plan is replaced only with
``--overwrite``; a folder holding anything else (a run directory, other files) is refused even
with ``--overwrite``, so plan files are never mixed into it. A plan is written into a temporary
sibling of ``--out`` that replaces it once complete (:func:`plan_folder`), so a failed write (a
full disk) leaves no torn plan and an old plan in ``--out`` as it was.
"""

from __future__ import annotations

import contextlib
import json
import math
import re

from scalegnn.cli.parser import no_subcommand
from scalegnn.config.checks import check_range
from scalegnn.config.flags import SEED, THREADS, IntList, count, real
from scalegnn.config.schema import INT32_MAX, PHASE, Range
from scalegnn.dist.compare import (compare, format_table, method_spec, parse_list, plot, report_row,
                                   write_json)
from scalegnn.dist.dataload import load
from scalegnn.dist.hypergraph import PRESETS
from scalegnn.dist.partition import GP_OBJECTIVES, WEIGHTS, canonical, partition_dataset, write_plan
from scalegnn.dist.shp import compare_shp, hoeffding_nets, parse_budget, plot_shp
from scalegnn.engine.rundir import check_output_folder
from scalegnn.errors import ConfigError
from scalegnn.io import atomic_folder
from scalegnn.sampling import SAMPLERS

SUBCOMMANDS = ("make", "compare", "shp")
MAX_BATCHES = 10**5     # --min-batches, --eval-batches: minibatches drawn (and held) at most
MAX_SHP_NETS = 10**7    # sampled nodes SHP may need by the Hoeffding bound (held in memory)
PLAN_ENTRIES = ("plan.json", "assignment.npy")
RANK_FOLDER = re.compile(r"rank_\d+")
OVERWRITE_HELP = "replace the plan already in --out (default: refuse); a folder holding " \
                 "anything else is never written"


def add_parser(sub):
    p = sub.add_parser("partition", help="partition a dataset into a plan folder for dist-train "
                                         "(make), or measure partitioners (compare, shp)",
                       description="Partition a dataset for dist-train, or measure partitioners. "
                                   "`scalegnn partition DATA ...` is `scalegnn partition make "
                                   "DATA ...`.")
    forms = p.add_subparsers(dest="partition_command", metavar="{make,compare,shp}",
                             parser_class=type(p))
    make = forms.add_parser("make", help="write a plan folder (and/or --report its exact "
                                         "accounting)",
                            description="Partition DATA into --parts parts and write the plan "
                                        "that dist-train reads; --report prints its exact "
                                        "accounting (without --out: only measures).")
    _data(make)
    make.add_argument("--parts", required=True, type=parts_type(1, single=True),
                      help="number of parts (= ranks)")
    make.add_argument("--method", default="gp",
                      help="hp (hypergraph, Mt-KaHyPar: minimal volume), gp (METIS graph model; "
                           "alias metis) or rp (random rows; alias random)")
    make.add_argument("--out", help="plan folder to write (new or empty, or a plan with "
                                    "--overwrite)")
    make.add_argument("--overwrite", action="store_true", help=OVERWRITE_HELP)
    make.add_argument("--report", action="store_true",
                      help="print the exact volume / messages / imbalance / time of the "
                           "partition")
    _partitioner(make)
    make.set_defaults(func=run)
    compare_p = forms.add_parser("compare", help="the accounting table of several methods and "
                                                 "part counts (JSON + PNG)",
                                 description="Partition DATA with every method and part count "
                                             "and report volume, messages and imbalance.")
    _data(compare_p)
    compare_p.add_argument("--parts", required=True, type=parts_type(1),
                           help="comma list of part counts, e.g. 4,8,16,32")
    compare_p.add_argument("--methods", default="hp,gp,rp",
                           help="methods to compare (gp:cut / gp:vol pick METIS' objective)")
    compare_p.add_argument("--out", help="JSON table to write")
    compare_p.add_argument("--plot", help="PNG plot to write")
    _partitioner(compare_p)
    compare_p.set_defaults(func=run_compare)
    shp = forms.add_parser("shp", help="expected minibatch communication under HP vs SHP "
                                       "(stochastic hypergraph)",
                           description="Expected communication volume of fresh random "
                                       "minibatches under a hypergraph (HP) and a stochastic "
                                       "hypergraph (SHP) partition.")
    _data(shp)
    shp.add_argument("--parts", required=True, type=parts_type(2),
                     help="comma list of part counts >= 2, e.g. 4,8")
    shp.add_argument("--sampler", default="rw", help="GraphSAINT sampler (node, edge, rw)")
    shp.add_argument("--budget", default="num_root=500,depth=2",
                     help="sampler budget as key=value pairs")
    shp.add_argument("--theta", type=real(0.0, 1e6, lo_open=True), default=0.1,
                     help="Hoeffding error θ")
    shp.add_argument("--delta", type=real(0.0, 1.0, lo_open=True, hi_open=True), default=0.5,
                     help="Hoeffding confidence 1-δ")
    shp.add_argument("--min-batches", type=count(0, MAX_BATCHES), default=200,
                     help="sample at least this many minibatches even when the Hoeffding bound "
                          "asks for fewer (default 200)")
    shp.add_argument("--no-prior", dest="prior", action="store_false",
                     help="partition the sampled nets alone, without the full graph's nets "
                          "(Algorithm 3 as published)")
    shp.add_argument("--eval-batches", type=count(1, MAX_BATCHES), default=200,
                     help="fresh minibatches the expected volume is averaged over")
    shp.add_argument("--transductive", action="store_true",
                     help="draw the minibatches from the full graph over every node (as "
                          "params.transductive training does), not from the training graph")
    shp.add_argument("--out", metavar="PLAN",
                     help="write the SHP partition as a plan folder for dist-train "
                          "(distributed.mode: partition); needs a single --parts")
    shp.add_argument("--overwrite", action="store_true", help=OVERWRITE_HELP)
    shp.add_argument("--json", metavar="FILE", help="JSON table to write")
    shp.add_argument("--plot", help="PNG plot to write")
    _partitioner(shp, hp_only=True)
    shp.set_defaults(func=run_shp)
    p.set_defaults(func=lambda args: no_subcommand(p))


def with_default_subcommand(argv: list[str]) -> list[str]:
    """``partition DATA ...`` (the form before the subcommands) is ``partition make DATA ...``."""
    for i, a in enumerate(argv):
        if a == "partition":
            rest = argv[i + 1:]
            if rest and rest[0] not in (*SUBCOMMANDS, "-h", "--help"):
                return argv[:i + 1] + ["make"] + rest
            break
        if not a.startswith("-"):
            break  # another command
    return argv


def _data(p):
    p.add_argument("data", nargs="?", help="dataset path or generator spec (e.g. kronecker:17:16)")


def _partitioner(p, hp_only: bool = False):
    """The partitioners' own settings (METIS' only where GP can run)."""
    p.add_argument("--seed", type=SEED, default=0)
    p.add_argument("--imbalance", type=real(0.0, 1.0, lo_open=True, hi_open=True), default=0.01,
                   help="allowed compute imbalance ε (max part weight <= (1+ε) avg)")
    p.add_argument("--preset", default="deterministic",
                   help="Mt-KaHyPar preset for hp: deterministic (reproducible), default, "
                        "quality, highest_quality")
    p.add_argument("--threads", type=THREADS, default=None,
                   help="Mt-KaHyPar threads (default: all)")
    if hp_only:
        p.set_defaults(weights="degree", metis_max_entries=1 << 25, gp_objective="vol")
        return
    p.add_argument("--gp-objective", default="vol",
                   help="METIS objective for gp: vol (communication volume) or cut (edge cut, "
                        "the graph model of Demirci et al. / DistDGL)")
    p.add_argument("--weights", default="degree",
                   help="METIS vertex weights: degree (deg+1, balances SpMM work) or nodes "
                        "(balances rows: feature memory and dense GEMMs)")
    p.add_argument("--metis-max-entries", type=count(1, 1 << 50), default=1 << 25,
                   help="sparsify larger graphs before METIS / Mt-KaHyPar (memory); the plan "
                        "always uses the full graph")


def parts_type(least: int, single: bool = False) -> IntList:
    """The one ``--parts`` check of every partition form (when the arguments are parsed):
    integers >= ``least`` (1 part is a plan for one rank; SHP compares 2 or more), no empty item,
    no repeat; ``single``: one part count. At most the graph's nodes: :func:`_dataset`."""
    return IntList(Range(least, INT32_MAX), single=single)


def _check_partitioner(args) -> None:
    """The partitioners' named settings, before any data is read."""
    for flag, value, allowed in (("--preset", args.preset, PRESETS),
                                 ("--weights", args.weights, WEIGHTS),
                                 ("--gp-objective", args.gp_objective, GP_OBJECTIVES)):
        if value not in allowed:
            raise ConfigError(f"{flag}: {value!r} is not one of {list(allowed)}")


def _dataset(args):
    """The dataset (after every check that needs none), and ``--parts`` fits its nodes."""
    if not args.data:
        raise ConfigError(f"partition {args.partition_command}: missing DATA (a dataset path "
                          f"or spec)")
    _check_partitioner(args)
    ds = load(args.data, seed=args.seed)
    too_many = [k for k in args.parts if k > ds.num_nodes]
    if too_many:
        raise ConfigError(f"--parts: {too_many[0]} parts but {args.data} has only "
                          f"{ds.num_nodes} nodes")
    return ds


def finite(value):
    """``value`` with every NaN or infinite float replaced by None (JSON null): a ratio over a
    zero volume (an edgeless graph, one part) is undefined, not ``NaN`` (invalid JSON)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def _json(value) -> str:
    return json.dumps(finite(value), allow_nan=False)


def _kw(args) -> dict:
    return {"imbalance": args.imbalance, "preset": args.preset, "threads": args.threads,
            "max_entries": args.metis_max_entries, "weights": args.weights,
            "gp_objective": args.gp_objective}


def run(args) -> int:
    canonical(args.method)
    parts = args.parts[0]
    if not args.out and not args.report:
        raise ConfigError("partition: --out PLAN is required (or --report to only measure)")
    if args.out:
        check_plan_out(args.out, args.overwrite)
    ds = _dataset(args)
    row, a = report_row(ds.graph, args.method, parts, seed=args.seed, **_kw(args))
    out = {"method": row["method"], "parts": parts}
    if args.out:
        with plan_folder(args.out, args.overwrite) as folder:
            plan = partition_dataset(ds, parts, folder, method=args.method, seed=args.seed,
                                     weights=args.weights, preset=args.preset,
                                     gp_objective=args.gp_objective, assignment=a)
        out = {"plan": str(args.out), **out, **plan.meta["totals"]}
    if args.report:
        out["report"] = {k: row[k] for k in row if k not in ("sent", "recv", "messages",
                                                             "compute_load")}
    print(_json(out))
    if args.report:
        print(format_table([row]))
    return 0


def run_compare(args) -> int:
    methods = parse_list(args.methods, "--methods")
    for m in methods:
        method_spec(m)                           # refuse a bad name before loading data
    ds = _dataset(args)
    res = compare(ds, methods, args.parts, seed=args.seed, **_kw(args),
                  log=lambda r: print(_json({k: r[k] for k in r if k not in (
                      "sent", "recv", "messages", "compute_load")}), flush=True))
    print(format_table(res["rows"]))
    print(_json({"geomean_ratios": res["geomean_ratios"]}))
    return _save(res, args.out, args.plot, plot)


def run_shp(args) -> int:
    parts = args.parts
    if args.out and len(parts) != 1:
        raise ConfigError(f"--out {args.out}: a plan has one part count; give a single --parts "
                          f"(got {','.join(map(str, parts))})")
    budget = _budget(args.sampler, parse_budget(args.budget))
    for k in parts:  # the nets SHP samples before partitioning, held in memory
        need = hoeffding_nets(k, args.theta, args.delta)
        if need > MAX_SHP_NETS:
            raise ConfigError(f"--parts {k}: the Hoeffding bound (--theta {args.theta:g}, "
                              f"--delta {args.delta:g}) asks for {need:.3g} sampled nodes, more "
                              f"than {MAX_SHP_NETS:,}; raise --theta or --delta")
    if args.out:
        check_plan_out(args.out, args.overwrite)
    ds = _dataset(args)
    plans = {}

    def write(k, assignment):
        if args.out:
            plans[k] = write_plan(ds, assignment, folder, seed=args.seed,
                                  method=f"shp/{args.sampler}/{args.preset}")

    with plan_folder(args.out, args.overwrite) if args.out else contextlib.nullcontext() \
            as folder:
        res = compare_shp(ds, parts, sampler=args.sampler, budget=budget,
                          theta=args.theta, delta=args.delta, eval_batches=args.eval_batches,
                          seed=args.seed, imbalance=args.imbalance, preset=args.preset,
                          threads=args.threads, min_batches=args.min_batches, prior=args.prior,
                          transductive=args.transductive,
                          log=lambda r: print(_json(r), flush=True), on_partition=write)
    out = {"geomean_shp_vs_hp": res["geomean_shp_vs_hp"]}
    if plans:
        plan = next(iter(plans.values()))
        out = {"plan": str(args.out), **out, **plan.meta["totals"]}
    print(_json(out))
    return _save(res, args.json, args.plot, plot_shp)


def _budget(sampler: str, budget: dict) -> dict:
    """``--sampler`` and ``--budget`` as a training phase takes them: a sampler of
    :data:`scalegnn.sampling.SAMPLERS`, only its budget keys, all its required ones, each within
    its phase key's range (``scalegnn.config.schema.PHASE``)."""
    if sampler not in SAMPLERS:
        raise ConfigError(f"--sampler: {sampler!r} is not one of {list(SAMPLERS)}")
    cls = SAMPLERS[sampler]
    takes = tuple(cls.required) + tuple(cls.optional)
    for key, value in budget.items():
        if key not in takes:
            raise ConfigError(f"--budget {key}: sampler {sampler} does not take it (it takes "
                              f"{', '.join(takes) or 'no budget keys'})")
        check_range(f"--budget {key}", value, PHASE[key].range)
    missing = [k for k in cls.required if k not in budget]
    if missing:
        raise ConfigError(f"--budget: sampler {sampler} needs {', '.join(cls.required)} "
                          f"(missing {missing[0]})")
    return budget


def _save(res: dict, json_path, plot_path, plot_fn) -> int:
    """The compare/shp result as a JSON table and a PNG plot, where asked for."""
    if json_path:
        write_json(finite(res), json_path)
    if plot_path:
        plot_fn(res, plot_path)
    return 0


def check_plan_out(out, overwrite: bool) -> None:
    """``--out PLAN`` may be written by ``train --out``'s rules: new, an empty folder, or a
    folder holding only a plan (``plan.json``, ``assignment.npy``, ``rank_<i>/``) when
    ``overwrite`` (:func:`scalegnn.engine.rundir.check_output_folder`)."""
    check_output_folder(out, overwrite, "plan", lambda name, path: name in PLAN_ENTRIES or (
        RANK_FOLDER.fullmatch(name) is not None and path.is_dir()))


@contextlib.contextmanager
def plan_folder(out, overwrite: bool = False):
    """A temporary sibling of ``out`` to write the plan into; it replaces ``out`` once the plan
    is complete. ``out`` is checked again (:func:`check_plan_out`) right before."""
    check_plan_out(out, overwrite)
    with atomic_folder(out, overwrite=True) as tmp:
        yield tmp
