"""Entry points of a distributed run.

* :func:`worker_main` — what every rank runs (``python -m scalegnn.dist``, also under
  ``torchrun -m scalegnn.dist``): reads RANK / WORLD_SIZE / LOCAL_RANK from the environment,
  picks gloo (CPU) or NCCL (CUDA), joins the process group with the configured timeout, loads
  only its own plan folder and runs the one training loop with a
  :class:`~scalegnn.dist.mode.DistributedMode`.
* :func:`supervise` — ``scalegnn dist-train``: starts the ranks on this host (env://
  rendezvous on a free port) and watches them; when one fails the others are stopped, and the
  failing rank's own one-line error is what the user sees (no launcher traceback).
* :func:`spawn_local` — starts K ranks (used by :func:`supervise` and by tests that must see how
  the surviving ranks react when one dies).
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

from scalegnn.errors import ScaleGNNError

STOP_GRACE_S = 5.0  # after one rank fails, seconds the others get to exit on their own


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def add_worker_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    from scalegnn.cli.train import add_run_arguments
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
    from scalegnn.cli.train import resolve_run
    from scalegnn.errors import ConfigError
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
    import torch
    import torch.distributed as dist

    from scalegnn.cli import _Parser
    from scalegnn.dist.plan import PartitionPlan
    from scalegnn.threads import release_freed_memory, set_threads
    args = add_worker_arguments(_Parser(prog="python -m scalegnn.dist")).parse_args(argv)
    rank = int(os.environ.get("RANK", 0))
    world = int(os.environ.get("WORLD_SIZE", 1))
    local = int(os.environ.get("LOCAL_RANK", rank))
    try:
        from scalegnn.dist.mode import DistributedMode
        from scalegnn.train.console import format_summary
        from scalegnn.train.trainer import Trainer, resolve_device
        spec, plan_dir = resolve_dist_run(args)
        settings = spec.config.section("distributed")
        if settings["lean_memory"]:
            release_freed_memory()
        if spec.threads > 0:
            set_threads(spec.threads)
        plan = PartitionPlan.load(plan_dir, world_size=world)
        device = resolve_device(spec.device)
        if device.type == "cuda":
            device = torch.device(f"cuda:{local % max(torch.cuda.device_count(), 1)}")
            torch.cuda.set_device(device)
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo", rank=rank,
                                world_size=world,
                                timeout=timedelta(seconds=settings["timeout"]))
        mode = DistributedMode(plan, rank, world, spec.config, device=device)
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
        import traceback
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
        dist.destroy_process_group()
    except Exception:
        pass
    return 0


def spawn_local(nprocs: int, worker_argv: list[str], *, env=None, **popen_kw) -> list[subprocess.Popen]:
    """Start ``nprocs`` ranks of ``python -m scalegnn.dist`` with env:// rendezvous."""
    port = free_port()
    procs = []
    for r in range(nprocs):
        e = dict(os.environ if env is None else env)
        e.update(RANK=str(r), WORLD_SIZE=str(nprocs), LOCAL_RANK=str(r),
                 MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        e.setdefault("OMP_NUM_THREADS", "1")  # K ranks share the cores; avoid oversubscription
        procs.append(subprocess.Popen([sys.executable, "-m", "scalegnn.dist", *worker_argv],
                                      env=e, **popen_kw))
    return procs


def supervise(nprocs: int, worker_argv: list[str], *, env=None) -> int:
    """Run ``nprocs`` local ranks to the end. Returns 0, or the exit status of the first rank
    that failed (its one-line error is already on stderr); the other ranks are then stopped."""
    procs = spawn_local(nprocs, worker_argv, env=env)
    failed, deadline = None, None
    try:
        while True:
            codes = [p.poll() for p in procs]
            bad = [(r, c) for r, c in enumerate(codes) if c not in (None, 0)]
            if bad:
                # a rank killed by a signal is the cause; the others only lost their peer
                failed = min(bad, key=lambda rc: (rc[1] >= 0, rc[0]))
                deadline = deadline or time.time() + STOP_GRACE_S
            if deadline is not None and time.time() > deadline:
                break
            if all(c is not None for c in codes):
                break
            time.sleep(0.05)
    except KeyboardInterrupt:
        failed = (None, 130)
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    if failed is None:
        return 0
    rank, code = failed
    if code in (1, 2, 130):
        return code
    from scalegnn.errors import DistError
    why = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
    raise DistError(f"dist-train: rank {rank} {why}")
