"""``scalegnn dist-train --nprocs K --plan PLAN ...``: distributed full-graph training (BNS-GCN)
on this host; partitions first when given ``--data`` and ``--parts``. :func:`worker_main` is
what every rank runs (``python -m scalegnn.dist``, also under ``torchrun -m scalegnn.dist``):
it reads RANK / WORLD_SIZE / LOCAL_RANK from the environment, picks gloo (CPU) or NCCL (CUDA),
joins the process group with the configured timeout, loads only its own plan folder and runs
the one training loop with a :class:`~scalegnn.dist.mode.DistributedMode`.

Everything that can be checked without the ranks is checked here, before any rank starts: the
config (same schema and validation as ``scalegnn train``), the device, the plan (and that it was
made from ``--data``), and the run directory (locked here for the whole run). A mistake is one
line and exit status 2.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed

from scalegnn.cli.data import add_data_arguments
from scalegnn.cli.parser import Parser
from scalegnn.cli.train import add_run_arguments, resolve_run
from scalegnn.dist.dataload import load
from scalegnn.dist.launch import supervise
from scalegnn.dist.partition import partition_dataset
from scalegnn.dist.plan import PartitionPlan
from scalegnn.engine.console import format_summary
from scalegnn.engine.rundir import COMMAND_ENV, LOCK_ENV, RunDir
from scalegnn.errors import ConfigError, ScaleGNNError
from scalegnn.threads import release_freed_memory, set_threads
from scalegnn.train import Trainer
from scalegnn.train.build import resolve_device
from scalegnn.train.modes import rank_mode


def add_parser(sub):
    p = sub.add_parser("dist-train", help="partition-parallel full-graph training (K local ranks)")
    p.add_argument("--nprocs", type=int, required=True, help="ranks to start on this host")
    p.add_argument("--data", help="dataset; with --parts, partition it into --plan first, "
                                  "else check that --plan was made from it")
    p.add_argument("--parts", type=int, help="partition --data into this many parts first")
    p.add_argument("--method", help="partitioner when --parts is given (default: the config's "
                                    "distributed.method, metis)")
    add_worker_arguments(p)
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
        method = args.method or spec.config.section("distributed")["method"]
        partition_dataset(load(args.data, options=spec.data_options), args.parts, plan_dir,
                          method=method)
    plan = PartitionPlan.load(plan_dir, world_size=args.nprocs)  # refuse early, one line
    for r in range(plan.parts):
        plan.rank(r, mmap=True)  # every rank folder readable and consistent
    if args.data is not None and args.parts is None:
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


def add_worker_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument("--plan", help="partition plan folder (scalegnn partition); a resumed run "
                                  "uses its recorded plan")
    add_run_arguments(p, device_default="auto")
    p.add_argument("--boundary-p", type=float, dest="boundary_p",
                   help="shorthand for --set distributed.boundary_p=P: probability of keeping "
                        "each boundary node per epoch (1 = exact)")
    p.add_argument("--timeout", type=float,
                   help="shorthand for --set distributed.timeout=S: seconds before a silent "
                        "peer is an error")
    return p


def resolve_dist_run(args):
    """The run spec of a distributed command (shorthand flags folded into --set) and the plan
    folder; every check that needs no other rank happens here."""
    for flag, key in (("boundary_p", "distributed.boundary_p"), ("timeout", "distributed.timeout")):
        if getattr(args, flag, None) is not None:
            args.overrides.append(f"{key}={getattr(args, flag)}")
    spec = resolve_run(args, "distributed")
    plan = args.plan
    recorded = spec.recorded.get("plan")
    if spec.resume and recorded:
        if plan is not None and Path(plan).resolve() != Path(recorded).resolve():
            raise ConfigError(f"--plan {plan}: the run in {spec.run_dir} was trained with plan "
                              f"{recorded}; a resumed run keeps its recorded plan")
        plan = recorded
    if plan is None:
        raise ConfigError("--plan: required (a partition plan folder from `scalegnn partition`)")
    return spec, Path(plan)


def default_run_dir(plan: Path) -> Path:
    return Path("runs") / f"{plan.resolve().name}-dist-{time.strftime('%Y%m%d-%H%M%S')}"


def worker_main(argv=None) -> int:
    args = add_worker_arguments(Parser(prog="python -m scalegnn.dist")).parse_args(argv)
    rank = int(os.environ.get("RANK", 0))
    world = int(os.environ.get("WORLD_SIZE", 1))
    local = int(os.environ.get("LOCAL_RANK", rank))
    try:
        spec, plan_dir = resolve_dist_run(args)
        settings = spec.config.section("distributed")
        if settings["lean_memory"]:
            release_freed_memory()
        if spec.threads > 0:
            set_threads(spec.threads)
        device = resolve_device(spec.device)
        if device.type == "cuda":
            device = torch.device(f"cuda:{local % max(torch.cuda.device_count(), 1)}")
            torch.cuda.set_device(device)
        torch.distributed.init_process_group("nccl" if device.type == "cuda" else "gloo", rank=rank,
                                world_size=world,
                                timeout=timedelta(seconds=settings["timeout"]))
        mode = rank_mode(spec, plan_dir, rank, world, device)
        run_dir = spec.run_dir or default_run_dir(plan_dir)
        trainer = Trainer(mode, spec.config, run_dir, seed=spec.seed, device=device,
                          progress=not args.no_progress, resume=spec.resume,
                          overwrite=spec.overwrite,
                          run_info={"plan": str(plan_dir), "threads": spec.threads,
                                    "device_arg": spec.device})
        result = trainer.fit()
        if rank == 0:
            print(format_summary(result, run_dir), flush=True)
    except ScaleGNNError as e:
        print(f"scalegnn: error: {e}", file=sys.stderr, flush=True)
        os._exit(2)  # a dead peer can hang gloo's teardown: leave without it
    except KeyboardInterrupt:
        os._exit(130)
    except Exception as e:  # torch's own failures: still one line and no hang
        if os.environ.get("SCALEGNN_DEBUG"):
            traceback.print_exc()
        try:
            msg = (str(e).strip().splitlines() or [""])[0]
        except Exception:
            msg = ""
        where = traceback.extract_tb(e.__traceback__)[-1] if e.__traceback__ else None
        at = f" at {os.path.basename(where.filename)}:{where.lineno}" if where else ""
        print(f"scalegnn: error: rank {rank}: {type(e).__name__}{at}: {msg[:300]}",
              file=sys.stderr, flush=True)
        os._exit(1)
    try:
        torch.distributed.destroy_process_group()
    except Exception:
        pass
    return 0
