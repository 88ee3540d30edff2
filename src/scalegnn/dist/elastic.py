"""Multi-host and elastic ``scalegnn dist-train`` (``--nnodes N --node-rank I --rdzv HOST:PORT``,
``--max-restarts M``): one launcher per host, meeting in torch's c10d rendezvous
(:mod:`scalegnn.dist.rdzv`), each starting and watching its own K ranks.

Each round of the rendezvous (the first, and one after every restart):

1. every launcher publishes its node rank, address, K, run directory and a fingerprint of its
   run (config, seed) in the round's store and checks everyone's: each node rank once, the same
   command on every host, the run directory visible from every host. Node 0 adds the job's
   state: restarts used, whether the ranks resume, the port of the ranks' own store;
2. it starts ranks I*K .. I*K+K-1 (global rank = node rank * K + local rank, whatever order
   the hosts joined in) and watches them and the round's ``stop`` key;
3. when its ranks are done, one failed (it sets ``stop``) or another host set ``stop``, it stops
   its ranks and publishes a report: every rank's exit status and held error line
   (:mod:`scalegnn.dist.streams`). Node 0 collects the reports and decides for all: done;
   restart (every host rejoins the rendezvous and the ranks resume from ``last.pt``); or fail
   with one line naming the cause: a rank killed by a signal, a host whose launcher did not
   report (gone with its ranks), or a rank's own error (a user mistake is never restarted).

Node 0 serves the rendezvous and holds the run directory's lock, so it cannot be replaced:
when it is lost the other hosts end with one line, and the job continues with ``--resume``. A
lost host of another node rank is replaced by running its command again.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from scalegnn.dist.launch import ELASTIC_ENV, PEER_EXIT, RESUME_ENV, spawn_ranks, stop, store_socket
from scalegnn.dist.rdzv import (RUN_ID, Endpoint, RendezvousError, open_rendezvous,
                                rendezvous_error, stop_heartbeats)
from scalegnn.dist.streams import ERROR_PREFIX, LineFilter, filtered_stderr, start_pump
from scalegnn.engine.rundir import LOCK, RUN_FILES
from scalegnn.errors import ConfigError, DistError

KEY = "scalegnn/"
POLL_S = 0.2
REPORT_WAIT_S = 5.0  # after a failure, node 0 waits this long for the other hosts' reports
DONE_WAIT_S = 120.0  # after its ranks finished, node 0 waits this long for the other hosts'
ACK_WAIT_S = 5.0  # node 0 waits for the others to read its decision before leaving


@dataclass
class HostJob:
    """What one host's launcher runs (checked by ``scalegnn dist-train`` before it starts)."""

    nnodes: int
    node_rank: int
    nprocs: int
    endpoint: Endpoint
    local_addr: str
    timeout: float  # --rdzv-timeout
    max_restarts: int
    run_dir: Path
    fingerprint: str  # the same on every host running the same command
    worker_argv: list[str]
    env: dict = field(default_factory=dict)
    lock_fd: int | None = None  # node 0: the run directory's lock, passed to its ranks


class StoreLost(Exception):
    """The rendezvous store (served by node 0's launcher) stopped answering."""


@dataclass
class Round:
    store: object
    members: dict  # node rank -> what its launcher published
    job: dict  # node 0's: resume, restarts, max_restarts, port, lock


def run_host(job: HostJob) -> int:
    """Run this host's part of the job to its end: 0, 130 (interrupted), or a one-line
    :class:`~scalegnn.errors.DistError` / :class:`~scalegnn.errors.ConfigError`."""
    return HostAgent(job).run()


def _ranks(node: int, k: int) -> str:
    return f"rank {node * k}" if k == 1 else f"ranks {node * k}-{node * k + k - 1}"


def _lock_text(run_dir: Path) -> str | None:
    try:
        return (run_dir / LOCK).read_text()
    except OSError:
        return None


def _drop_temporaries(run_dir: Path) -> None:
    """Files of writes that a killed rank left before their rename (RunDir's rule)."""
    for tmp in run_dir.glob(".*.tmp"):
        if any(tmp.name.startswith(f".{name}.") for name in RUN_FILES):
            tmp.unlink(missing_ok=True)


class HostAgent:
    def __init__(self, job: HostJob):
        self.job = job
        self.leader = job.node_rank == 0
        self.restarts_used = 0  # node 0 decides restarts; the others follow
        self.resume = False
        self.out = 2
        self.listen = None  # node 0: the socket its rank 0 will serve the round's store on

    # ------------------------------------------------------------------ the loop
    def run(self) -> int:
        job = self.job
        with filtered_stderr() as self.out:
            handler = open_rendezvous(job.endpoint, nnodes=job.nnodes, serve=self.leader,
                                      local_addr=job.local_addr, timeout=job.timeout)
            try:
                while True:
                    rnd = self._join(handler)
                    final, lines, why = self._attempt(rnd)
                    decision = self._conclude(rnd, final, lines, why)
                    if decision["action"] == "done":
                        return 0
                    if decision["action"] == "restart":
                        print(f"scalegnn: dist-train: {decision['line']}; restarting from the "
                              f"last checkpoint (restart {decision['restarts']} of "
                              f"{decision['of']})", file=sys.stderr, flush=True)
                        continue
                    if decision.get("code") == 130:
                        return 130
                    raise DistError(decision["line"])
            except KeyboardInterrupt:
                return 130
            except StoreLost:
                raise self._lost_leader() from None
            finally:
                stop_heartbeats(handler)

    def _store(self, rnd_or_store, fn, *args):
        store = getattr(rnd_or_store, "store", rnd_or_store)
        try:
            return getattr(store, fn)(*args)
        except Exception as e:  # torch's store errors: the server (node 0's launcher) is gone
            raise StoreLost(str(e)) from None

    def _lost_leader(self) -> DistError:
        return DistError(f"lost node 0, which serves the rendezvous at {self.job.endpoint}: its "
                         f"launcher is gone, so the job ends here; continue the run with --resume "
                         f"{self.job.run_dir} on every host")

    # ------------------------------------------------------------------ 1. the round
    def _join(self, handler) -> Round:
        job = self.job
        try:
            info = handler.next_rendezvous()
        except RendezvousError as e:
            raise rendezvous_error(e, job.endpoint, job.nnodes, job.timeout) from None
        store, me = info.store, {
            "node": job.node_rank, "nnodes": job.nnodes, "addr": job.local_addr,
            "nprocs": job.nprocs, "run_dir": str(job.run_dir.resolve()),
            "fingerprint": job.fingerprint}
        if self.leader:
            if self.listen is None:
                self.listen = store_socket(job.local_addr)
            me["job"] = {"resume": self.resume, "restarts": self.restarts_used,
                         "max_restarts": job.max_restarts, "port": self.listen.getsockname()[1],
                         "lock": _lock_text(job.run_dir)}
        self._store(store, "set", f"{KEY}node/{info.rank}", json.dumps(me))
        members = [json.loads(self._store(store, "get", f"{KEY}node/{g}"))
                   for g in range(info.world_size)]
        problem = _check_members(members) or self._sees_run_dir(members)
        self._store(store, "set", f"{KEY}ok/{info.rank}", problem)
        verdicts = [self._store(store, "get", f"{KEY}ok/{g}").decode()
                    for g in range(info.world_size)]
        bad = next((v for v in verdicts if v), "")
        if bad:  # every host says the same line; node 0 (the store) leaves once all have read it
            self._store(store, "set", f"{KEY}read/{info.rank}", "1")
            self._wait_all(store, [f"{KEY}read/{g}" for g in range(info.world_size)])
            raise ConfigError(bad)
        by_node = {m["node"]: m for m in members}
        return Round(store, by_node, by_node[0]["job"])

    def _sees_run_dir(self, members: list[dict]) -> str:
        lead = next(m for m in members if m["node"] == 0)
        job = self.job
        if self.leader or _lock_text(job.run_dir) == lead["job"]["lock"]:
            return ""
        return (f"{job.run_dir}: host {job.local_addr} does not see the run directory that node 0 "
                f"({lead['addr']}) writes; keep it on a folder every host shares, at the same path")

    # ------------------------------------------------------------------ 2. the ranks
    def _attempt(self, rnd: Round):
        job, k = self.job, self.job.nprocs
        base = job.node_rank * k
        env = dict(job.env)
        env.update({ELASTIC_ENV: "1", RESUME_ENV: "1" if rnd.job["resume"] else "0",
                    "GROUP_RANK": str(job.node_rank), "TORCHELASTIC_RUN_ID": RUN_ID,
                    "TORCHELASTIC_RESTART_COUNT": str(rnd.job["restarts"]),
                    "TORCHELASTIC_MAX_RESTARTS": str(rnd.job["max_restarts"])})
        if self.leader and rnd.job["resume"]:
            _drop_temporaries(job.run_dir)
        try:
            procs = spawn_ranks(range(base, base + k), job.nnodes * k, job.worker_argv,
                                master=(rnd.members[0]["addr"], rnd.job["port"]), env=env,
                                lock_fd=job.lock_fd, store=self.listen, stderr=subprocess.PIPE)
        finally:  # rank 0 holds it now; a restart's round gets a new port
            if self.listen is not None:
                self.listen.close()
                self.listen = None
        filters, pumps = [], []
        for p in procs:
            filters.append(LineFilter(self.out))
            pumps.append(start_pump(_take_fd(p), filters[-1]))
        why, next_poll = "done", 0.0
        try:
            while True:
                codes = [p.poll() for p in procs]
                if any(c not in (None, 0) for c in codes):
                    why = "failed"
                    try:
                        self._store(rnd, "set", f"{KEY}stop", str(job.node_rank))
                    except StoreLost:
                        why = "lost"
                    break
                if all(c == 0 for c in codes):
                    break
                if time.monotonic() >= next_poll:
                    next_poll = time.monotonic() + POLL_S
                    try:
                        if self._store(rnd, "check", [f"{KEY}stop"]):
                            why = "stopped"
                            break
                    except StoreLost:
                        why = "lost"
                        break
                time.sleep(0.05)
        finally:
            final = {base + i: p.poll() for i, p in enumerate(procs)}  # None: stopped by us
            stop(procs)
            for t in pumps:
                t.join(timeout=5)
        lines = {base + i: f.held[-1] for i, f in enumerate(filters) if f.held}
        return final, lines, why

    # ------------------------------------------------------------------ 3. the end
    def _conclude(self, rnd: Round, final: dict, lines: dict, why: str) -> dict:
        job = self.job
        if why == "lost":
            raise StoreLost("")
        ok = why == "done" and all(c == 0 for c in final.values())
        report = {"node": job.node_rank, "ok": ok,
                  "codes": {str(r): c for r, c in final.items()},
                  "lines": {str(r): ln for r, ln in lines.items()}}
        self._store(rnd, "set", f"{KEY}report/{job.node_rank}", json.dumps(report))
        if not self.leader:
            decision = self._await_decision(rnd)
            self._store(rnd, "set", f"{KEY}seen/{job.node_rank}", "1")
            return decision
        reports = self._collect(rnd, report)
        decision = self._decide(rnd, reports)
        self._store(rnd, "set", f"{KEY}decision", json.dumps(decision))
        self._wait_all(rnd.store, [f"{KEY}seen/{n}" for n in reports if n != 0])
        return decision

    def _wait_all(self, store, keys: list[str]) -> None:
        """Node 0: wait (at most ACK_WAIT_S) until the others have read what it published, so
        that none finds the store gone first."""
        deadline = time.monotonic() + ACK_WAIT_S
        while self.leader and keys and time.monotonic() < deadline \
                and not self._store(store, "check", keys):
            time.sleep(POLL_S / 4)

    def _await_decision(self, rnd: Round) -> dict:
        key, wait = f"{KEY}decision", DONE_WAIT_S + REPORT_WAIT_S + 10
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if self._store(rnd, "check", [key]):
                return json.loads(self._store(rnd, "get", key))
            time.sleep(POLL_S / 2)
        raise DistError(f"node 0 ({rnd.members[0]['addr']}) did not conclude the run within "
                        f"{wait:g} s of this host's ranks ending")

    def _collect(self, rnd: Round, mine: dict) -> dict:
        """Node 0: the reports of every host (missing: its launcher is gone). After a failure
        the others have REPORT_WAIT_S to report; after success DONE_WAIT_S to finish, then they
        are told to stop (ranks that hang must not keep the job) and get REPORT_WAIT_S more."""
        reports, told = {0: mine}, not mine["ok"]
        deadline = time.monotonic() + (REPORT_WAIT_S if told else DONE_WAIT_S)
        while len(reports) < self.job.nnodes:
            for n in range(1, self.job.nnodes):
                key = f"{KEY}report/{n}"
                if n not in reports and self._store(rnd, "check", [key]):
                    reports[n] = json.loads(self._store(rnd, "get", key))
                    if not reports[n]["ok"] and not told:  # it set stop: the rest follow
                        told, deadline = True, time.monotonic() + REPORT_WAIT_S
            if time.monotonic() >= deadline:
                if told:
                    break
                self._store(rnd, "set", f"{KEY}stop", "0")
                told, deadline = True, time.monotonic() + REPORT_WAIT_S
            time.sleep(POLL_S / 2)
        return reports

    def _decide(self, rnd: Round, reports: dict) -> dict:
        """Node 0: done, restart or fail, and the one line that says why."""
        k, causes = self.job.nprocs, []
        for node in range(self.job.nnodes):
            addr, rep = rnd.members[node]["addr"], reports.get(node)
            if rep is None:
                causes.append((1, node * k, f"lost host {addr} (node {node}, {_ranks(node, k)}): "
                                            f"its launcher did not report within "
                                            f"{REPORT_WAIT_S:g} s", 2))
                continue
            for r, code in rep["codes"].items():
                line = (rep["lines"].get(r) or "").removeprefix(ERROR_PREFIX.decode())
                if code is None or code == 0:
                    continue
                if code < 0:
                    name = signal.Signals(-code).name if -code in signal.valid_signals() else "?"
                    causes.append((0, int(r), f"rank {r} (host {addr}) was killed by signal "
                                              f"{-code} ({name})", 2))
                elif code in (2, 130):  # the rank's own mistake, or ^C: never restarted
                    causes.append((2, int(r), line or f"rank {r} (host {addr}) exited with "
                                                      f"status {code}", code))
                else:
                    prio = 4 if code == PEER_EXIT else 3
                    causes.append((prio, int(r), line or f"rank {r} (host {addr}) exited with "
                                                         f"status {code}", 2))
        if not causes:
            return {"action": "done"}
        prio, _, line, code = min(causes)
        if prio == 2:
            return {"action": "fail", "line": line, "code": code}
        if self.restarts_used < self.job.max_restarts:
            self.restarts_used += 1
            self.resume = True
            return {"action": "restart", "line": line, "restarts": self.restarts_used,
                    "of": self.job.max_restarts}
        return {"action": "fail", "code": 2,
                "line": f"{line}; no restarts left (--max-restarts {self.job.max_restarts}); "
                        f"continue the run with --resume {self.job.run_dir}"}


def _check_members(members: list[dict]) -> str:
    """The launchers must run the same command with distinct node ranks ("" when they do)."""
    seen: dict = {}
    for m in members:
        if m["node"] in seen:
            return (f"--node-rank {m['node']} was given on two hosts ({seen[m['node']]['addr']} "
                    f"and {m['addr']}); give each host its own node rank 0..{m['nnodes'] - 1}")
        seen[m["node"]] = m
    lead = seen.get(0)
    if lead is None:
        return "no host runs --node-rank 0 (it serves the rendezvous and writes the run directory)"
    for m in members:
        for key, what in (("nnodes", "--nnodes"), ("nprocs", "--nprocs"),
                          ("run_dir", "the run directory"), ("fingerprint", None)):
            if m[key] != lead[key]:
                said = f"{what} differs between node 0 ({lead['addr']}: {lead[key]}) and node " \
                       f"{m['node']} ({m['addr']}: {m[key]})" if what else \
                       f"node {m['node']} ({m['addr']}) runs another config, seed or --resume " \
                       f"than node 0 ({lead['addr']})"
                return f"{said}; run the same command on every host"
    return ""


def _take_fd(p: subprocess.Popen) -> int:
    """The read end of a rank's stderr pipe, owned by the caller from now on."""
    fd = os.dup(p.stderr.fileno())
    p.stderr.close()
    return fd
