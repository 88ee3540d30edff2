"""A rate-limited loopback for the distributed benchmarks (``dist_bns.py``, ``dist_minibatch.py``).

On Linux as root, a benchmark re-runs itself inside a private network namespace (``unshare -n``)
whose loopback is rate-limited by a token bucket::

    tc qdisc add dev lo root tbf rate 1gbit burst 1mb latency 50ms

(the burst must exceed the loopback MTU, 64 KiB, or packets are dropped), so every rank on
127.0.0.1 talks over one shaped link that carries the sum of all ranks' traffic; a short TCP
transfer checks the rate first (:func:`measure_link`). Where namespaces or ``tc`` are not
permitted, :func:`run_shaped` prints a ``kind: skip`` JSON line and returns 0. ``tc`` is in
Debian's ``iproute2``, ``unshare`` in ``util-linux``.

A benchmark calls ``run_shaped(__file__, rate, burst, latency, argv)`` when
``os.environ.get(SHAPED_ENV) != rate`` (it is not inside the namespace yet) and returns its
status; inside, ``SHAPED_ENV`` holds the rate.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time

SHAPED_ENV = "SCALEGNN_BENCH_SHAPED"


def shape_command(rate: str, burst: str, latency: str = "50ms") -> str:
    """The shell command that brings ``lo`` up and rate-limits it (inside the namespace)."""
    return (f"ip link set lo up && tc qdisc add dev lo root tbf rate {rate} burst {burst} "
            f"latency {latency}")


def skip_line(rate: str, why: str) -> str:
    return json.dumps({"kind": "skip", "shape": rate, "reason": why})


def run_shaped(script: str, rate: str, burst: str, latency: str, argv: list[str]) -> int:
    """Re-run ``script`` with ``argv`` inside ``unshare -n`` with a ``rate``-limited loopback;
    print a ``skip`` line and return 0 where that is not permitted."""
    def skip(why):
        print(skip_line(rate, why), flush=True)
        return 0
    if not sys.platform.startswith("linux"):
        return skip("network namespaces need Linux")
    missing = [t for t in ("unshare", "ip", "tc") if shutil.which(t) is None]
    if missing:
        return skip(f"missing {', '.join(missing)} (apt-get install iproute2 util-linux)")
    probe = subprocess.run(["unshare", "-n", "sh", "-c", shape_command(rate, burst, latency)],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        why = (probe.stderr.strip().splitlines() or ["failed"])[-1]
        return skip(f"unshare -n / tc not permitted here (root needed): {why[:200]}")
    env = {**os.environ, SHAPED_ENV: rate, "GLOO_SOCKET_IFNAME": "lo"}
    cmd = ["unshare", "-n", "sh", "-c", shape_command(rate, burst, latency) + ' && exec "$@"', "sh",
           sys.executable, os.path.abspath(script), *argv]
    return subprocess.call(cmd, env=env)


def measure_link(megabytes: int = 32) -> float:
    """Gbit/s of one TCP stream over 127.0.0.1 (checks the shaping took effect)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    got = [0]

    def sink():
        conn, _ = srv.accept()
        while True:
            b = conn.recv(1 << 20)
            if not b:
                break
            got[0] += len(b)
        conn.close()
    t = threading.Thread(target=sink)
    t.start()
    c = socket.create_connection(srv.getsockname())
    buf = b"\0" * (1 << 20)
    t0 = time.perf_counter()
    for _ in range(megabytes):
        c.sendall(buf)
    c.close()
    t.join()
    secs = time.perf_counter() - t0
    srv.close()
    return got[0] * 8 / secs / 1e9
