"""``scalegnn dist-train --nprocs K --plan PLAN ...``: distributed full-graph training (BNS-GCN)
on this host through torchrun; partitions first when given ``--data`` and ``--parts``."""

from __future__ import annotations

from pathlib import Path


def add_parser(sub):
    from scalegnn.dist.launch import add_worker_arguments
    p = sub.add_parser("dist-train", help="partition-parallel full-graph training (torchrun)")
    p.add_argument("--nprocs", type=int, required=True, help="ranks to start on this host")
    p.add_argument("--data", help="dataset; with --parts, partition it into --plan first, "
                                  "else check that --plan was made from it")
    p.add_argument("--parts", type=int, help="partition --data into this many parts first")
    p.add_argument("--method", default="metis", help="partitioner when --parts is given")
    add_worker_arguments(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from scalegnn.dist.launch import launch, worker_args
    from scalegnn.dist.plan import PartitionPlan
    from scalegnn.errors import ConfigError, DistError
    if args.nprocs < 1:
        raise ConfigError(f"--nprocs: must be >= 1, got {args.nprocs}")
    if args.parts is not None:
        if args.data is None:
            raise ConfigError("--parts needs --data (the dataset to partition)")
        if args.parts != args.nprocs:
            raise ConfigError(f"--parts {args.parts} must equal --nprocs {args.nprocs}")
        from scalegnn.dist.dataload import load
        from scalegnn.dist.partition import partition_dataset
        partition_dataset(load(args.data), args.parts, args.plan, method=args.method)
    plan = PartitionPlan.load(args.plan, world_size=args.nprocs)  # refuse early, one line
    if args.data is not None and args.parts is None:
        from scalegnn.dist.dataload import load
        plan.check_graph(load(args.data).graph, source=args.data)
    if args.out is None and args.resume is None:
        args.out = str(Path("runs") / "dist")
    rc = launch(args.nprocs, worker_args(args))
    if rc != 0:
        raise DistError(f"dist-train: torchrun exited with status {rc} (see the rank errors above)")
    return 0
