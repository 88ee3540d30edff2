"""Entry points of a distributed run.

* :func:`worker_main` — what every rank runs (``torchrun ... -m scalegnn.dist``): reads RANK /
  WORLD_SIZE / LOCAL_RANK from the environment, picks gloo (CPU) or NCCL (CUDA), joins the
  process group with ``timeout``, loads only its own plan folder and trains.
* :func:`launch` — ``scalegnn dist-train``: starts ``python -m torch.distributed.run`` on this
  host in a subprocess.
* :func:`spawn_local` — starts K ranks directly (no torchrun agent) on localhost; used by tests
  that must see how the surviving ranks react when one dies.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
from datetime import timedelta

from scalegnn.errors import ScaleGNNError


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def add_worker_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument("--plan", required=True, help="partition plan folder (scalegnn partition)")
    p.add_argument("--config", help="YAML config (flat keys or network:/params: sections)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config key (repeatable), e.g. --set boundary_p=0.1")
    p.add_argument("--out", help="run directory (rank 0 writes it); default runs/dist")
    p.add_argument("--resume", metavar="DIR", help="continue the run in DIR from its checkpoint")
    p.add_argument("--timeout", type=float, help="seconds before a silent peer is an error")
    p.add_argument("--epochs", type=int)
    p.add_argument("--boundary-p", type=float, dest="boundary_p",
                   help="probability of keeping each boundary node per epoch (1 = exact)")
    return p


def worker_args(args) -> list[str]:
    """The worker command-line options equivalent to parsed ``args``."""
    argv = ["--plan", str(args.plan)]
    for k in ("config", "out", "resume", "timeout", "epochs"):
        if getattr(args, k, None) is not None:
            argv += [f"--{k}", str(getattr(args, k))]
    if getattr(args, "boundary_p", None) is not None:
        argv += ["--boundary-p", str(args.boundary_p)]
    for s in getattr(args, "set", None) or []:
        argv += ["--set", s]
    return argv


def _resolve_config(args):
    from pathlib import Path

    import yaml

    from scalegnn.dist.config import load_config
    path, sets = args.config, list(args.set)
    if args.resume and not path:
        saved = Path(args.resume) / "config.yml"
        if saved.is_file():  # resume keeps the run's settings; --set/--epochs still override
            base = yaml.safe_load(saved.read_text()).get("config", {})
            sets = [f"{k}={v}" for k, v in base.items()] + sets
    return load_config(path, sets, epochs=args.epochs, boundary_p=args.boundary_p,
                       timeout=args.timeout)


def worker_main(argv=None) -> int:
    import torch
    import torch.distributed as dist

    from scalegnn.dist.plan import PartitionPlan
    from scalegnn.dist.trainer import DistTrainer
    from scalegnn.threads import release_freed_memory
    args = add_worker_arguments(argparse.ArgumentParser(prog="python -m scalegnn.dist")).parse_args(argv)
    rank = int(os.environ.get("RANK", 0))
    world = int(os.environ.get("WORLD_SIZE", 1))
    local = int(os.environ.get("LOCAL_RANK", rank))
    try:
        cfg = _resolve_config(args)
        if cfg.lean_memory:
            release_freed_memory()
        plan = PartitionPlan.load(args.plan, world_size=world)
        use_cuda = cfg.device == "cuda" or (cfg.device == "auto" and torch.cuda.is_available())
        device = torch.device(f"cuda:{local % max(torch.cuda.device_count(), 1)}") if use_cuda else torch.device("cpu")
        if use_cuda:
            torch.cuda.set_device(device)
        dist.init_process_group("nccl" if use_cuda else "gloo", rank=rank, world_size=world,
                                timeout=timedelta(seconds=cfg.timeout))
        trainer = DistTrainer(plan, rank, world, cfg, device=device)
        out = args.out or args.resume or "runs/dist"

        def log(rec):
            ev = f" val={rec['val']} test={rec['test']}" if "val" in rec else ""
            print(f"epoch {rec['epoch']} loss {rec['loss']:.5f}{ev}", flush=True)
        trainer.fit(out, resume=args.resume, log=log if rank == 0 else None)
    except ScaleGNNError as e:
        print(f"scalegnn: error: {e}", file=sys.stderr, flush=True)
        os._exit(2)  # a dead peer can hang gloo's teardown: leave without it
    except Exception as e:  # torch's own failures: still one line and no hang
        if os.environ.get("SCALEGNN_DEBUG"):
            import traceback
            traceback.print_exc()
        import traceback
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


def launch(nprocs: int, worker_argv: list[str], *, env=None) -> int:
    """Run ``torchrun --nproc-per-node nprocs -m scalegnn.dist <worker_argv>`` on this host."""
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1",
           "--nproc-per-node", str(nprocs), "--master-addr", "127.0.0.1",
           "--master-port", str(free_port()), "-m", "scalegnn.dist", *worker_argv]
    env = dict(os.environ if env is None else env)
    env.setdefault("OMP_NUM_THREADS", "1")  # K ranks share the cores; avoid oversubscription
    return subprocess.call(cmd, env=env)


def spawn_local(nprocs: int, worker_argv: list[str], *, env=None, **popen_kw) -> list[subprocess.Popen]:
    """Start ``nprocs`` ranks of ``python -m scalegnn.dist`` with env:// rendezvous."""
    port = free_port()
    procs = []
    for r in range(nprocs):
        e = dict(os.environ if env is None else env)
        e.update(RANK=str(r), WORLD_SIZE=str(nprocs), LOCAL_RANK=str(r),
                 MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        e.setdefault("OMP_NUM_THREADS", "1")
        procs.append(subprocess.Popen([sys.executable, "-m", "scalegnn.dist", *worker_argv],
                                      env=e, **popen_kw))
    return procs
