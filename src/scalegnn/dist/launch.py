"""Starting and watching the ranks of a distributed run on this host (what each rank runs is
:func:`scalegnn.cli.dist.worker_main`).

* :func:`supervise` — ``scalegnn dist-train --nprocs K``: starts the ranks on this host (rank 0
  serves their store on a port this launcher holds) and watches them; when one fails the
  others are stopped, and the failing rank's own one-line error is what the user sees (no
  launcher traceback).
* :func:`spawn_local` / :func:`spawn_ranks` — start ranks (used by :func:`supervise`, by the
  multi-host launcher :mod:`scalegnn.dist.elastic`, and by tests that must see how the
  surviving ranks react when one dies).
* :func:`tie_to_launcher` — run first by every rank: it dies with the process that started it
  (Linux parent-death signal), so no rank outlives its launcher. A launcher that holds the run
  directory's lock passes the lock's file descriptor to its ranks (``lock_fd``): the lock is
  then held until the last of them is gone, even when the launcher is killed first.
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence

from scalegnn.errors import DistError

STOP_GRACE_S = 5.0  # after one rank fails, seconds the others get to exit on their own
KILL_AFTER_S = 3.0  # after SIGTERM, seconds before a rank that is still there gets SIGKILL
LAUNCHER_ENV = "SCALEGNN_LAUNCHER_PID"  # set for every rank: the process it must die with
ELASTIC_ENV = "SCALEGNN_ELASTIC"  # set by the multi-host launcher: a lost peer exits PEER_EXIT
RESUME_ENV = "SCALEGNN_RESUME"  # "1": the launcher restarted the job; a new run resumes
STORE_FD_ENV = "SCALEGNN_STORE_FD"  # rank 0: the launcher's listening socket for its store
PEER_EXIT = 3  # under the multi-host launcher: a rank that lost a peer (not the cause)
_PR_SET_PDEATHSIG = 1
_GIVEN: set[int] = set()  # ports free_port returned: never twice in one process


def free_port(host: str = "127.0.0.1") -> int:
    """A port of ``host`` that was free a moment ago (whoever binds it later may find it taken:
    where a launcher can, it holds the socket instead, see :func:`store_socket`), and not one
    this process returned before, so jobs started together from one process differ."""
    for _ in range(64):
        with store_socket(host) as s:
            port = int(s.getsockname()[1])
        if port not in _GIVEN:
            break
    _GIVEN.add(port)
    return port


def store_socket(host: str = "127.0.0.1") -> socket.socket:
    """A listening socket on a free port of ``host``, for rank 0's store: the launcher binds it
    and hands it to rank 0 (:func:`spawn_ranks`), so the port stays taken from the moment it is
    chosen. A port picked by :func:`free_port` is free again until rank 0, seconds later, binds
    it; two runs started together were seen to get the same one (one rank 0 then fails to
    listen, and its peer talks to the other run's store)."""
    s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind((host, 0))
        s.listen(128)
    except OSError:
        s.close()
        raise
    return s


def spawn_ranks(ranks: Sequence[int], world: int, worker_argv: list[str], *, master: tuple,
                env=None, lock_fd: int | None = None, store: socket.socket | None = None,
                **popen_kw) -> list[subprocess.Popen]:
    """Start ranks ``ranks`` of ``world`` (``python -m scalegnn.dist``), their process group's
    store at ``master`` = (address, port), hosted by rank 0 — on ``store``, the listening socket
    of :func:`store_socket`, when given (rank 0 must then be among ``ranks``)."""
    procs = []
    for local, r in enumerate(ranks):
        e = dict(os.environ if env is None else env)
        e.update(RANK=str(r), WORLD_SIZE=str(world), LOCAL_RANK=str(local),
                 LOCAL_WORLD_SIZE=str(len(ranks)), MASTER_ADDR=str(master[0]),
                 MASTER_PORT=str(master[1]))
        e[LAUNCHER_ENV] = str(os.getpid())
        e.pop(STORE_FD_ENV, None)
        e.setdefault("OMP_NUM_THREADS", "1")  # K ranks share the cores; avoid oversubscription
        fds = [] if lock_fd is None else [lock_fd]
        if store is not None and r == 0:
            fds.append(store.fileno())
            e[STORE_FD_ENV] = str(store.fileno())
        procs.append(subprocess.Popen([sys.executable, "-m", "scalegnn.dist", *worker_argv], env=e,
                                      pass_fds=tuple(fds), **popen_kw))
    return procs


def spawn_local(nprocs: int, worker_argv: list[str], *, env=None, **popen_kw) -> list[subprocess.Popen]:
    """Start ``nprocs`` ranks of ``python -m scalegnn.dist``, rank 0 serving their store on a
    socket this launcher bound (closed here once rank 0 holds it)."""
    with store_socket() as s:
        return spawn_ranks(range(nprocs), nprocs, worker_argv,
                           master=("127.0.0.1", s.getsockname()[1]), env=env, store=s, **popen_kw)


def stop(procs: list[subprocess.Popen], grace: float = KILL_AFTER_S) -> None:
    """SIGTERM the ranks still running, SIGKILL those still there after ``grace`` seconds."""
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def supervise(nprocs: int, worker_argv: list[str], *, env=None, lock_fd: int | None = None) -> int:
    """Run ``nprocs`` local ranks to the end. Returns 0, or the exit status of the first rank
    that failed (its one-line error is already on stderr); the other ranks are then stopped."""
    procs = spawn_local(nprocs, worker_argv, env=env, lock_fd=lock_fd)
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
        stop(procs, STOP_GRACE_S)
    if failed is None:
        return 0
    rank, code = failed
    if code in (1, 2, 130):
        return code
    why = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
    raise DistError(f"dist-train: rank {rank} {why}")


def tie_to_launcher() -> None:
    """Make this rank die (SIGKILL) when the process that started it dies; exit at once if it
    is already gone (it died before this call). A no-op off Linux."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
        return
    launcher = os.environ.get(LAUNCHER_ENV)
    if launcher and launcher.isdigit() and os.getppid() != int(launcher):
        os._exit(1)  # orphaned before the signal was armed: the launcher is gone
