"""Starting and watching the ranks of a distributed run on this host (what each rank runs is
:func:`scalegnn.cli.dist.worker_main`).

* :func:`supervise` — ``scalegnn dist-train``: starts the ranks on this host (env://
  rendezvous on a free port) and watches them; when one fails the others are stopped, and the
  failing rank's own one-line error is what the user sees (no launcher traceback).
* :func:`spawn_local` — starts K ranks (used by :func:`supervise` and by tests that must see how
  the surviving ranks react when one dies).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

from scalegnn.errors import DistError

STOP_GRACE_S = 5.0  # after one rank fails, seconds the others get to exit on their own


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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
    why = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
    raise DistError(f"dist-train: rank {rank} {why}")
