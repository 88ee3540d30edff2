"""The rendezvous of a multi-host ``scalegnn dist-train``: torch's c10d rendezvous (the one
``torchrun --rdzv-backend c10d`` uses, :mod:`torch.distributed.elastic.rendezvous`), served by
the host with ``--node-rank 0`` at ``--rdzv HOST:PORT``.

Everything a user can mistype is checked before any rank starts, each bounded by
``--rdzv-timeout``: the ``HOST:PORT`` form, that HOST resolves, that node 0 can serve it (HOST is
one of its addresses), that ``--local-addr`` is an address of this host, and, on the other
hosts, that something answers at HOST:PORT (torch's store client would retry past the timeout
and log each attempt). A mistake is one line (:class:`~scalegnn.errors.ConfigError`).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from dataclasses import dataclass

from torch.distributed.elastic.rendezvous import (RendezvousClosedError, RendezvousError,
                                                  RendezvousParameters, RendezvousTimeoutError)
from torch.distributed.elastic.rendezvous import registry as rdzv_registry

from scalegnn.errors import ConfigError, DistError

RUN_ID = "scalegnn-dist-train"
HEARTBEAT_S = 1  # a host's rendezvous heartbeat; one silent for HEARTBEAT_S * HEARTBEAT_MISSES
HEARTBEAT_MISSES = 5  # seconds is dropped from the rendezvous (its slot freed for a rerun)


@dataclass(frozen=True)
class Endpoint:
    """``--rdzv HOST:PORT``, resolved."""

    host: str
    port: int
    ip: str

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


def _resolve(host: str, timeout: float) -> list[str]:
    """The addresses of ``host`` (getaddrinfo, bounded by ``timeout``: a resolver that does not
    answer must not hang the command)."""
    out: list = []

    def lookup():
        try:
            out.extend(sorted({ai[4][0] for ai in socket.getaddrinfo(
                host, None, type=socket.SOCK_STREAM)}, key=lambda a: (":" in a, a)))
        except (OSError, UnicodeError):
            pass

    t = threading.Thread(target=lookup, daemon=True)
    t.start()
    t.join(timeout)
    return list(out)


def parse_endpoint(value: str, timeout: float) -> Endpoint:
    host, sep, port = value.strip().rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"--rdzv {value}: expected HOST:PORT, the address and port where the "
                          f"command with --node-rank 0 serves the rendezvous (e.g. "
                          f"10.0.0.1:29400)")
    ips = _resolve(host, min(timeout, 10.0))
    if not ips:
        raise ConfigError(f"--rdzv {value}: unknown host {host!r}")
    return Endpoint(host, int(port), ips[0])


def _bindable(ip: str) -> bool:
    try:
        with socket.socket(socket.AF_INET6 if ":" in ip else socket.AF_INET,
                           socket.SOCK_STREAM) as s:
            s.bind((ip, 0))
        return True
    except OSError:
        return False


def local_address(given: str | None, endpoint: Endpoint, timeout: float) -> str:
    """``--local-addr`` checked to be an address of this host; by default the address this
    host uses to reach the rendezvous."""
    if given is None:
        with socket.socket(socket.AF_INET6 if ":" in endpoint.ip else socket.AF_INET,
                           socket.SOCK_DGRAM) as s:
            try:
                s.connect((endpoint.ip, endpoint.port))  # UDP: picks a route, sends nothing
                return s.getsockname()[0]
            except OSError:
                raise ConfigError(f"--rdzv {endpoint}: no route to {endpoint.ip} from this "
                                  f"host; pass --local-addr") from None
    ips = _resolve(given, min(timeout, 10.0))
    for ip in ips:
        if _bindable(ip):
            return ip
    raise ConfigError(f"--local-addr {given}: not an address of this host")


def check_serves(endpoint: Endpoint) -> None:
    """Node 0 serves the rendezvous: HOST must be one of its addresses and PORT free."""
    if not _bindable(endpoint.ip):
        raise ConfigError(f"--rdzv {endpoint}: {endpoint.host} is not an address of this host; "
                          f"the command with --node-rank 0 serves the rendezvous, so --rdzv "
                          f"names one of its addresses")
    with socket.socket(socket.AF_INET6 if ":" in endpoint.ip else socket.AF_INET,
                       socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("::" if ":" in endpoint.ip else "", endpoint.port))
        except OSError as e:
            raise ConfigError(f"--rdzv {endpoint}: cannot serve the rendezvous on port "
                              f"{endpoint.port} ({e.strerror or e}); choose another port") from None


def wait_reachable(endpoint: Endpoint, timeout: float) -> None:
    """Wait until something accepts connections at the rendezvous endpoint (node 0 may start
    later than this host), at most ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        try:
            socket.create_connection((endpoint.ip, endpoint.port),
                                     timeout=max(min(left, 2), 0.1)).close()
            return
        except OSError:
            pass
        if left <= 0.25:
            raise ConfigError(f"--rdzv {endpoint}: no rendezvous answered within {timeout:g} s "
                              f"(--rdzv-timeout); is the command with --node-rank 0 running "
                              f"there, and is {endpoint} its address?")
        time.sleep(min(0.25, left))


def quiet_torch_logging() -> None:
    """torch's elastic loggers (heartbeat failures of a lost host...) say nothing: the launcher
    explains failures in its own one line."""
    for name in list(logging.root.manager.loggerDict):
        if name.startswith("torch.distributed.elastic"):
            logging.getLogger(name).disabled = True


def open_rendezvous(endpoint: Endpoint, *, nnodes: int, serve: bool, local_addr: str,
                    timeout: float):
    """torch's c10d rendezvous handler for this host (node 0 serves the store)."""
    os.environ["TORCH_DISABLE_SHARE_RDZV_TCP_STORE"] = "1"  # ranks get their own store per attempt
    secs = max(int(timeout + 0.999), 1)
    params = RendezvousParameters(
        backend="c10d", endpoint=str(endpoint) if ":" not in endpoint.host
        else f"[{endpoint.host}]:{endpoint.port}", run_id=RUN_ID, min_nodes=nnodes,
        max_nodes=nnodes, local_addr=local_addr, is_host=str(bool(serve)), join_timeout=secs,
        read_timeout=secs, last_call_timeout=1, keep_alive_interval=HEARTBEAT_S,
        keep_alive_max_attempt=HEARTBEAT_MISSES)
    try:
        handler = rdzv_registry.get_rendezvous_handler(params)
    except RendezvousError as e:
        raise ConfigError(f"--rdzv {endpoint}: {_why(e)}") from None
    finally:
        quiet_torch_logging()
    return handler


def stop_heartbeats(handler) -> None:
    """Stop ``handler``'s keep-alive thread from the calling thread, before letting go of the
    handler. torch's heartbeat callback holds the handler while it beats: were the launcher's
    last reference dropped meanwhile, the handler would die on the heartbeat thread, whose
    finalizer then joins that same thread ("Exception ignored ... cannot join current thread"
    on stderr; seen in CI). Uses the handler's private ``_stop_heartbeats`` (a no-op where a
    torch version has none)."""
    stop = getattr(handler, "_stop_heartbeats", None)
    if callable(stop):
        stop()


def _why(e: BaseException) -> str:
    cause = e.__cause__ or e
    text = (str(cause).strip().splitlines() or [type(cause).__name__])[0]
    return f"{type(cause).__name__}: {text[:200]}"


def rendezvous_error(e: BaseException, endpoint: Endpoint, nnodes: int,
                     timeout: float) -> DistError:
    """One line for a failed ``next_rendezvous``."""
    if isinstance(e, RendezvousTimeoutError):
        return DistError(f"rendezvous at {endpoint}: not all {nnodes} hosts joined within "
                         f"{timeout:g} s (--rdzv-timeout); start the same command with each "
                         f"--node-rank 0..{nnodes - 1}, one per host")
    if isinstance(e, RendezvousClosedError):
        return DistError(f"rendezvous at {endpoint}: closed (the job it served has ended)")
    return DistError(f"rendezvous at {endpoint}: lost ({_why(e)}); is the command with "
                     f"--node-rank 0 still running?")
