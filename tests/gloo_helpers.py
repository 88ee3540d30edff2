"""Ranks of the in-process distributed tests: spawn them on gloo over 127.0.0.1, join the group,
and leave without interpreter finalization (gloo work objects that still hold DDP's Python
comm-hook callbacks can abort it; the rank's results are written by then, and the CLI's rank
worker leaves the same way)."""

from __future__ import annotations

import os
import sys


def spawn(fn, world: int, *args) -> None:
    """Run ``fn(rank, world, port, *args)`` in ``world`` fresh processes; raise on a failure."""
    import torch.multiprocessing as mp

    from scalegnn.dist.launch import free_port
    mp.start_processes(fn, args=(world, free_port(), *args), nprocs=world, join=True,
                       start_method="spawn")


def join(rank: int, world: int, port: int) -> None:
    """One thread per rank; the default process group on gloo."""
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world)


def leave(mode=None) -> None:
    """Close ``mode`` (its DDP), destroy the process groups, exit 0 at once."""
    import torch.distributed as dist
    if mode is not None:
        mode.close()
    dist.destroy_process_group()
    sys.stdout.flush()
    os._exit(0)
