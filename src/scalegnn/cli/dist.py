"""``scalegnn dist-train --nprocs K --plan PLAN ...``: distributed full-graph training (BNS-GCN)
on this host; partitions first when given ``--data`` and ``--parts``.

Everything that can be checked without the ranks is checked here, before any rank starts: the
config (same schema and validation as ``scalegnn train``), the device, the plan (and that it was
made from ``--data``), and the run directory (locked here for the whole run). A mistake is one
line and exit status 2.
"""

from __future__ import annotations

import argparse
import os
import sys


def add_parser(sub):
    from scalegnn.dist.launch import add_worker_arguments
    p = sub.add_parser("dist-train", help="partition-parallel full-graph training (K local ranks)")
    p.add_argument("--nprocs", type=int, required=True, help="ranks to start on this host")
    p.add_argument("--data", help="dataset; with --parts, partition it into --plan first, "
                                  "else check that --plan was made from it")
    p.add_argument("--parts", type=int, help="partition --data into this many parts first")
    p.add_argument("--method", help="partitioner when --parts is given (default: the config's "
                                    "distributed.method, metis)")
    add_worker_arguments(p)
    from scalegnn.cli.data import add_data_arguments
    add_data_arguments(p)  # for loading --data (partitioning, checking the plan)
    p.add_argument("--test-data", metavar="PATH", help=argparse.SUPPRESS)  # refused in run()
    p.set_defaults(func=run)


def _worker_argv(args, spec, plan, run_dir) -> list[str]:
    argv = ["--plan", str(plan), "--no-progress"] if args.no_progress else ["--plan", str(plan)]
    if spec.resume:
        argv += ["--resume", str(run_dir)]
    else:
        argv += ["--out", str(run_dir), "--seed", str(spec.seed)]
        if args.config:
            argv += ["--config", str(args.config)]
    for s in args.overrides:  # --boundary-p / --timeout were folded in by resolve_dist_run
        argv += ["--set", s]
    if args.epochs is not None:
        argv += ["--epochs", str(args.epochs)]
    if args.threads is not None:
        argv += ["--threads", str(args.threads)]
    argv += ["--device", spec.device]
    return argv


def run(args) -> int:
    from scalegnn.dist.launch import default_run_dir, resolve_dist_run, supervise
    from scalegnn.dist.plan import PartitionPlan
    from scalegnn.errors import ConfigError
    from scalegnn.train.rundir import LOCK_ENV, RunDir
    from scalegnn.train.trainer import COMMAND_ENV, resolve_device
    if args.nprocs < 1:
        raise ConfigError(f"--nprocs: must be >= 1, got {args.nprocs}")
    if args.test_data is not None:
        raise ConfigError("--test-data: a separate test graph is supported by `scalegnn train` "
                          "(GraphSAINT mode) only; dist-train tests on its plan's graph")
    spec, plan_dir = resolve_dist_run(args)
    parts = spec.config.section("distributed")["parts"]
    if parts and parts != args.nprocs:
        raise ConfigError(f"distributed.parts {parts} must equal --nprocs {args.nprocs}")
    resolve_device(spec.device)
    if args.parts is not None:
        if args.data is None:
            raise ConfigError("--parts needs --data (the dataset to partition)")
        if args.parts != args.nprocs:
            raise ConfigError(f"--parts {args.parts} must equal --nprocs {args.nprocs}")
        from scalegnn.dist.dataload import load
        from scalegnn.dist.partition import partition_dataset
        method = args.method or spec.config.section("distributed")["method"]
        partition_dataset(load(args.data, options=spec.data_options), args.parts, plan_dir,
                          method=method)
    plan = PartitionPlan.load(plan_dir, world_size=args.nprocs)  # refuse early, one line
    for r in range(plan.parts):
        plan.rank(r, mmap=True)  # every rank folder readable and consistent
    if args.data is not None and args.parts is None:
        from scalegnn.dist.dataload import load
        plan.check_graph(load(args.data, options=spec.data_options).graph, source=args.data)
    run_dir = spec.run_dir or default_run_dir(plan_dir)
    run = RunDir(run_dir, resume=spec.resume, overwrite=spec.overwrite)  # locked for the run
    try:
        env = dict(os.environ)
        env[LOCK_ENV] = str(run.path.resolve())
        env[COMMAND_ENV] = "\x1f".join(["scalegnn", *sys.argv[1:]])  # no NUL in env
        return supervise(args.nprocs, _worker_argv(args, spec, plan_dir, run.path), env=env)
    finally:
        run.close()
