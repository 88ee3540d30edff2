"""``scalegnn dist-train --nprocs K ...``: distributed training, by the config's
``distributed.mode``: ``full`` (partition-parallel full-graph training, BNS-GCN: ``--plan
PLAN``, partitioned first when given ``--data`` and ``--parts``), ``data`` (data-parallel
GraphSAINT or shaDow-GNN minibatches: ``--data``, every rank loads it) or ``partition``
(partition-parallel GraphSAINT minibatches: ``--data`` and ``--plan``). With ``--nnodes N
--node-rank I --rdzv HOST:PORT`` one such command runs on each of N hosts, and with
``--max-restarts M`` a job that loses a rank or a host restarts from its last checkpoint
(:mod:`scalegnn.dist.elastic`). :func:`worker_main` is what every rank runs (``python -m
scalegnn.dist``, also under ``torchrun -m scalegnn.dist``): it reads RANK / WORLD_SIZE /
LOCAL_RANK from the environment, picks gloo (CPU) or NCCL (CUDA), joins the process group with
the configured timeout, builds its mode (:func:`~scalegnn.train.modes.rank_mode`) and runs the
one training loop; a rank of a restarted job (``TORCHELASTIC_RESTART_COUNT`` > 0, as torchrun sets
it, on any rank) resumes the run from ``last.pt``.

Everything that can be checked without the ranks is checked here, before any rank starts: the
config (same schema and validation as ``scalegnn train``), the device, the plan (and that it was
made from ``--data``), the rendezvous flags, and the run directory (locked here, on node 0, for
the whole run). A mistake is one line and exit status 2.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
import traceback
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed

from scalegnn.cli.data import SPLIT_HELP, add_data_arguments, data_notes
from scalegnn.cli.parser import Parser
from scalegnn.cli.partition import check_plan_out, plan_folder
from scalegnn.cli.train import add_run_arguments, resolve_run
from scalegnn.config.flags import (FRACTION, MAX_PROCESSES, PROCESSES, SECONDS, SPLIT, count,
                                   name_flags)
from scalegnn.config.schema import INT32_MAX
from scalegnn.data.options import OPTION_KEYS
from scalegnn.dist.dataload import load
from scalegnn.dist.elastic import HostJob, run_host
from scalegnn.dist.launch import (ELASTIC_ENV, LAUNCHER_ENV, PEER_EXIT, RESUME_ENV, STORE_FD_ENV,
                                  free_port, supervise, tie_to_launcher)
from scalegnn.dist.partition import partition_dataset
from scalegnn.dist.plan import PartitionPlan
from scalegnn.dist.rdzv import Endpoint, check_serves, local_address, parse_endpoint, wait_reachable
from scalegnn.engine.console import format_summary
from scalegnn.engine.rundir import COMMAND_ENV, LOCK_ENV, RunDir
from scalegnn.errors import ConfigError, DistError, PlanError, ScaleGNNError
from scalegnn.threads import release_freed_memory, set_threads
from scalegnn.train import Trainer
from scalegnn.train.build import resolve_device
from scalegnn.train.modes import rank_mode


def add_parser(sub):
    p = sub.add_parser("dist-train", help="distributed training (K ranks per host, one host or "
                                          "several): full-graph on a plan, or data- / "
                                          "partition-parallel minibatches")
    p.add_argument("--nprocs", type=PROCESSES, required=True, help="ranks to start on this host")
    p.add_argument("--nnodes", type=PROCESSES, default=1, metavar="N",
                   help="hosts in the job, each running this command with its own --node-rank "
                        "(default 1)")
    p.add_argument("--node-rank", type=count(0, MAX_PROCESSES - 1), default=0, dest="node_rank",
                   metavar="I",
                   help="this host's index 0..N-1: node I runs ranks I*K..I*K+K-1; node 0 serves "
                        "the rendezvous and writes the run directory (default 0)")
    p.add_argument("--rdzv", metavar="HOST:PORT",
                   help="where the command with --node-rank 0 serves the rendezvous (torch's "
                        "c10d store; HOST is one of node 0's addresses); needed with --nnodes > 1")
    p.add_argument("--local-addr", metavar="ADDR", dest="local_addr",
                   help="this host's address for the rendezvous and the ranks' store (default: "
                        "the address this host uses to reach --rdzv)")
    p.add_argument("--rdzv-timeout", type=SECONDS, default=300.0, metavar="SECONDS",
                   dest="rdzv_timeout",
                   help="seconds to wait for the rendezvous to answer, then for all hosts to "
                        "join it (again after each restart) (default 300)")
    p.add_argument("--max-restarts", type=count(0, 10**4), default=0, dest="max_restarts",
                   metavar="N",
                   help="when a rank or a host dies, restart the job from its last checkpoint up "
                        "to N times; a lost host rejoins by running its command again (default 0)")
    p.add_argument("--parts", type=count(1, INT32_MAX),
                   help="partition --data into this many parts first, into --plan (a new or "
                        "empty folder, or a plan replaced with --overwrite)")
    p.add_argument("--method", help="partitioner when --parts is given (default: the config's "
                                    "distributed.method, metis)")
    add_worker_arguments(p)
    p.add_argument("--test-data", metavar="PATH", help=argparse.SUPPRESS)  # refused in run()
    p.set_defaults(func=run)


def _worker_argv(args, spec, plan, run_dir) -> list[str]:
    argv = [] if plan is None else ["--plan", str(plan)]
    if args.no_progress:
        argv += ["--no-progress"]
    if spec.data is not None and not spec.resume:   # a resumed run reads its recorded data
        argv += ["--data", str(spec.data), "--split", str(spec.split)]
        for key, value in spec.data_options.items():
            argv += [OPTION_KEYS[key][0], str(value)]
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


def _check_launch_flags(args) -> None:
    for flag, value, low in (("--nprocs", args.nprocs, 1), ("--nnodes", args.nnodes, 1),
                             ("--max-restarts", args.max_restarts, 0)):
        if value < low:
            raise ConfigError(f"{flag}: must be >= {low}, got {value}")
    if not 0 <= args.node_rank < args.nnodes:
        raise ConfigError(f"--node-rank {args.node_rank}: must be in 0..{args.nnodes - 1} "
                          f"(--nnodes {args.nnodes})")
    if not args.rdzv_timeout > 0:
        raise ConfigError(f"--rdzv-timeout: must be > 0 seconds, got {args.rdzv_timeout:g}")
    if args.nnodes > 1 and args.rdzv is None:
        raise ConfigError("--rdzv HOST:PORT: needed with --nnodes > 1 (where the command with "
                          "--node-rank 0 serves the rendezvous)")
    if args.nnodes > 1 and args.parts is not None:
        raise ConfigError("--parts: with --nnodes > 1 partition once (scalegnn partition make "
                          "DATA --parts K --out PLAN) and pass --plan PLAN on every host")
    if args.test_data is not None:
        raise ConfigError("--test-data: a separate test graph is supported by `scalegnn train` "
                          "(GraphSAINT mode) only; dist-train tests on its plan's graph")


def _elastic(args) -> bool:
    """Launch through the rendezvous (several hosts, or restarts); else as before: K local
    ranks watched by :func:`~scalegnn.dist.launch.supervise`."""
    return (args.nnodes > 1 or args.rdzv is not None or args.local_addr is not None
            or args.max_restarts > 0)


def _host_job(args, spec, run_dir: Path) -> HostJob:
    """The rendezvous flags, checked (one line each) before the run directory is touched."""
    timeout = args.rdzv_timeout
    if args.rdzv is None:  # one host with restarts: a rendezvous of its own
        endpoint = Endpoint("127.0.0.1", free_port(), "127.0.0.1")
    else:
        endpoint = parse_endpoint(args.rdzv, timeout)
    local = local_address(args.local_addr, endpoint, timeout)
    if args.node_rank == 0:
        check_serves(endpoint)
    else:
        wait_reachable(endpoint, timeout)
    run = f"{spec.config.to_yaml()}\nseed {spec.seed}\nresume {spec.resume}"
    return HostJob(nnodes=args.nnodes, node_rank=args.node_rank, nprocs=args.nprocs,
                   endpoint=endpoint, local_addr=local, timeout=timeout,
                   max_restarts=args.max_restarts, run_dir=run_dir,
                   fingerprint=hashlib.sha256(run.encode()).hexdigest()[:16], worker_argv=[])


def run(args) -> int:
    _check_launch_flags(args)
    spec, plan_dir = resolve_dist_run(args)
    world = args.nnodes * args.nprocs
    parts = spec.config.section("distributed")["parts"]
    if parts and parts != world:
        raise ConfigError(f"distributed.parts {parts} must equal --nprocs {args.nprocs}"
                          + (f" x --nnodes {args.nnodes}" if args.nnodes > 1 else ""))
    resolve_device(spec.device)
    if args.parts is not None:
        if args.data is None:
            raise ConfigError("--parts needs --data (the dataset to partition)")
        if args.parts != args.nprocs:
            raise ConfigError(f"--parts {args.parts} must equal --nprocs {args.nprocs}")
        method = args.method or spec.config.section("distributed")["method"]
        check_plan_out(plan_dir, args.overwrite)  # partition make's --out rules, before loading
        with plan_folder(plan_dir, args.overwrite) as folder:
            partition_dataset(load(args.data, options=spec.data_options), args.parts, folder,
                              method=method)
    kind = spec.config.section("distributed")["mode"]
    dataset = None   # full: only to check --data against the plan; else every rank trains on it
    data = spec.data if kind != "full" else (args.data if args.parts is None else None)
    if data is not None:
        chosen = spec.resume or args.split is not None
        dataset = load(data, options=spec.data_options,  # refuse early
                       split=spec.split if chosen else None)
        for note in data_notes(dataset.meta):  # the ranks load split spec.split (0) quietly
            print(f"scalegnn: {dataset.name}: {note}", file=sys.stderr)
    if plan_dir is not None:
        _check_plan_parts(plan_dir, world)
        plan = PartitionPlan.load(plan_dir, world_size=world)  # refuse early, one line
        first = args.node_rank * args.nprocs
        for r in range(first, first + args.nprocs):
            plan.rank(r, mmap=True)  # this host's rank folders readable and consistent
        if dataset is not None and args.parts is None:
            plan.check_graph(dataset.graph, source=str(data))
    if args.nnodes > 1 and spec.run_dir is None:
        raise ConfigError("--out: needed with --nnodes > 1 (every host names the same run "
                          "directory, on a folder they share)")
    run_dir = spec.run_dir or default_run_dir(plan_dir or Path(dataset.name))
    job = _host_job(args, spec, run_dir) if _elastic(args) else None
    # node 0 writes the run directory and holds its lock; its ranks inherit the lock
    run = RunDir(run_dir, resume=spec.resume, overwrite=spec.overwrite) \
        if args.node_rank == 0 else None
    try:
        env = dict(os.environ)
        env[COMMAND_ENV] = "\x1f".join(["scalegnn", *sys.argv[1:]])  # no NUL in env
        if run is not None:
            env[LOCK_ENV] = str(run.path.resolve())
        lock_fd = None if run is None else run.lock_fd
        argv = _worker_argv(args, spec, plan_dir, run_dir)
        if job is None:
            return supervise(args.nprocs, argv, env=env, lock_fd=lock_fd)
        job.worker_argv, job.env, job.lock_fd = argv, env, lock_fd
        return run_host(job)
    finally:
        if run is not None:
            run.close()


def _check_plan_parts(plan_dir: Path, world: int) -> None:
    """plan.json's part count against the ranks, before PartitionPlan.load looks for a folder
    per part (a damaged count, 10**19, would keep it listing folders for ever)."""
    try:
        meta = json.loads((plan_dir / "plan.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return  # no plan, or an unreadable one: load says so in one line
    parts = meta.get("parts") if isinstance(meta, dict) else None
    if isinstance(parts, int) and not isinstance(parts, bool) and parts != world:
        raise PlanError(f"{plan_dir}: plan has {str(parts)[:20]} parts but {world} ranks were "
                        f"started; use --nprocs {str(parts)[:20]} or re-partition")


def add_worker_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument("--plan", help="partition plan folder (scalegnn partition make|shp; "
                                  "distributed.mode full and partition); a resumed run uses its "
                                  "recorded plan")
    p.add_argument("--data", help="dataset: distributed.mode data and partition train on it "
                                  "(every rank loads it); full: with --parts, partition it into "
                                  "--plan first, else check that --plan was made from it")
    p.add_argument("--split", type=SPLIT, help=SPLIT_HELP)
    add_run_arguments(p, device_default="auto")
    add_data_arguments(p)
    p.add_argument("--boundary-p", type=FRACTION, dest="boundary_p",
                   help="shorthand for --set distributed.boundary_p=P: probability of keeping "
                        "each boundary node per epoch (1 = exact)")
    p.add_argument("--timeout", type=SECONDS,
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
    kind = spec.config.section("distributed")["mode"]
    plan = args.plan
    recorded = spec.recorded.get("plan")
    if spec.resume and recorded:
        if plan is not None and Path(plan).resolve() != Path(recorded).resolve():
            raise ConfigError(f"--plan {plan}: the run in {spec.run_dir} was trained with plan "
                              f"{recorded}; a resumed run keeps its recorded plan")
        plan = recorded
    if kind == "data":
        if plan is not None and not spec.resume:
            raise ConfigError(f"--plan {plan}: distributed.mode data trains every rank on the "
                              f"whole graph (no plan); drop --plan")
        plan = None
    elif plan is None:
        raise ConfigError(f"--plan: required by distributed.mode {kind} (a partition plan "
                          f"folder from `scalegnn partition make` or `partition shp --out`)")
    if kind != "full" and spec.data is None:
        raise ConfigError(f"--data: required by distributed.mode {kind} (every rank loads the "
                          f"dataset)")
    return spec, None if plan is None else Path(plan)


def default_run_dir(source: Path) -> Path:
    """``runs/<plan or data name>-dist-<time>``."""
    return Path("runs") / f"{source.resolve().name}-dist-{time.strftime('%Y%m%d-%H%M%S')}"


def _run_info(spec, plan_dir) -> dict:
    """What run.json records of a dist-train run (resume and load_run read it back)."""
    info = {"plan": None if plan_dir is None else str(plan_dir), "threads": spec.threads,
            "device_arg": spec.device}
    if spec.data is not None:
        info.update(data=str(spec.data), split=spec.split)
    if spec.data_options:
        info["data_options"] = spec.data_options
    return info


def _restarted(run_dir: Path, rank: int, world: int, device) -> bool:
    """Whether a new-run command resumes instead: an elastic launcher restarted the job (ours
    says so in RESUME_ENV; torchrun's sets TORCHELASTIC_RESTART_COUNT > 0, but a host whose
    agent was restarted counts from 0, so any rank decides) and rank 0 sees the run's
    config.yml (a job that died before writing it starts over). Every rank answers the same."""
    if "TORCHELASTIC_RUN_ID" not in os.environ:
        return False
    again = os.environ.get(RESUME_ENV) == "1" or \
        int(os.environ.get("TORCHELASTIC_RESTART_COUNT") or 0) > 0
    flags = torch.tensor([int(again), int(rank == 0 and (run_dir / "config.yml").is_file())],
                         dtype=torch.int64, device=device)
    if world > 1:
        torch.distributed.all_reduce(flags, op=torch.distributed.ReduceOp.MAX)
    return bool(flags[0].item()) and bool(flags[1].item())


def _rank_store(rank: int, world: int, timeout: timedelta):
    """The process group's store (None: env://). Under torchrun, its agent's store, with a
    prefix per attempt (the store outlives a restart with the previous attempt's keys, and gloo
    would connect to the dead ranks' addresses). Under scalegnn's launchers, rank 0 serves it
    on the socket the launcher bound (:func:`scalegnn.dist.launch.store_socket`)."""
    addr, port = os.environ.get("MASTER_ADDR", ""), int(os.environ.get("MASTER_PORT") or 0)
    if os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True":
        store = torch.distributed.TCPStore(addr, port, is_master=False, timeout=timeout)
        attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT") or "0"
        return torch.distributed.PrefixStore(f"scalegnn/attempt-{attempt}/", store)
    if LAUNCHER_ENV not in os.environ:
        return None
    fd = os.environ.get(STORE_FD_ENV, "")
    listen = {"master_listen_fd": int(fd)} if rank == 0 and fd.isdigit() else {}
    return torch.distributed.TCPStore(addr, port, world, is_master=rank == 0, timeout=timeout,
                                      **listen)


def worker_main(argv=None) -> int:
    tie_to_launcher()  # never outlive the launcher (it may be SIGKILLed)
    args = name_flags(add_worker_arguments(Parser(prog="python -m scalegnn.dist"))).parse_args(argv)
    rank = int(os.environ.get("RANK", 0))
    world = int(os.environ.get("WORLD_SIZE", 1))
    local = int(os.environ.get("LOCAL_RANK", rank))
    if int(os.environ.get("TORCHELASTIC_RESTART_COUNT") or 0) > 0:
        os.environ.pop("SCALEGNN_TEST_KILL_AT", None)  # tests' crash points: first attempt only
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
        timeout = timedelta(seconds=settings["timeout"])
        torch.distributed.init_process_group("nccl" if device.type == "cuda" else "gloo", rank=rank,
                                             world_size=world, timeout=timeout,
                                             store=_rank_store(rank, world, timeout))
        run_dir = spec.run_dir or default_run_dir(plan_dir or Path(str(spec.data)))
        if not spec.resume and _restarted(run_dir, rank, world, device):
            spec = replace(spec, resume=True, overwrite=False)
        mode = rank_mode(spec, plan_dir, rank, world, device)
        trainer = Trainer(mode, spec.config, run_dir, seed=spec.seed, device=device,
                          progress=not args.no_progress, resume=spec.resume,
                          overwrite=spec.overwrite,
                          run_info=_run_info(spec, plan_dir))
        result = trainer.fit()
        if rank == 0:
            print(format_summary(result, run_dir), flush=True)
    except ScaleGNNError as e:
        print(f"scalegnn: error: {e}", file=sys.stderr, flush=True)
        lost_peer = isinstance(e, DistError) and os.environ.get(ELASTIC_ENV) == "1"
        os._exit(PEER_EXIT if lost_peer else 2)  # a dead peer can hang gloo's teardown: leave
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
    sys.stdout.flush()
    sys.stderr.flush()
    # the run is complete: skip the interpreter's teardown of torch's C++ objects, where a
    # rank whose peers (rank 0's store among them) left first has been seen to abort (SIGABRT)
    os._exit(0)
