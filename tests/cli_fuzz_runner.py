"""Running one command line of the CLI fuzz and judging what it did.

* :func:`parse_in_process`: ``scalegnn.cli.main(argv)`` in this process up to the end of
  argument parsing; a command line the parser refuses (or answers: ``--help``) ends there, with
  its exit code (returned or from SystemExit) and its captured stdout/stderr. Nothing is run.
* :class:`Zygote`: a command line the parser accepts runs in a child forked from a helper
  process that imported scalegnn and never computed (so no thread pool is inherited), under an
  address-space limit (``RLIMIT_AS``: the zygote's own mappings plus the case's allowance; a
  CUDA build of torch maps gigabytes of libraries at import) and a time limit, with the case
  folder as its working directory and its HOME and TMPDIR inside it, in its own process group
  (killed whole on timeout). ``dist-train``'s launchers are stubbed: its pre-launch checks
  run, no rank starts.
* :func:`problems`: what is wrong with an outcome: an exit code other than 0 or 2, a traceback,
  a stderr line that is not one of the CLI's documented kinds, more than one error line (or
  none with exit code 2), an error line over 300 characters, a temporary left behind, a file
  changed or created outside the command's outputs.

The documented stderr lines: ``scalegnn: error: ...`` (the one error line; argparse prints its
usage block before it), ``scalegnn: warning: ...``, ``scalegnn: <dataset>: <note>`` (data notes),
``wrote <path>: ...`` (``data synth`` / ``data convert``), ``bench scale: eval ...`` and the
training progress bar (tqdm, without ``--no-progress``).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from cli_fuzz_files import materialize
from scalegnn import cli
from scalegnn.cli import dist as dist_cli

NOTE_PREFIXES = ("scalegnn: ", "wrote ", "bench scale: eval ")
ERROR = "scalegnn: error: "
MAX_ERROR_CHARS = 300
ROOT_ENTRIES = {"fixtures", "mpl"}   # what the fuzz root holds between cases
PROGRESS = re.compile(r"^\s*\d+%\|.*\| *\d+/\d+ \[")
TEMPORARY = re.compile(r"^\..+\.(tmp|old)$")
OOM = re.compile(r"MemoryError|Cannot allocate memory|can't allocate|Unable to allocate|"
                 r"bad_alloc|out of memory|Thread creation failed", re.IGNORECASE)


@dataclass
class Outcome:
    argv: list
    rc: int
    stdout: str
    stderr: str
    forked: bool = False
    timed_out: bool = False
    wall_s: float = 0.0
    cpu_s: float = 0.0
    maxrss_mb: float = 0.0
    changes: dict = field(default_factory=dict)   # path -> "new" | "changed" | "deleted"
    outside: list = field(default_factory=list)   # new entries beside the case folder


class _Parsed(BaseException):
    """Raised in place of a command's work once its arguments parsed (not an Exception, so
    main() lets it through)."""


def parse_in_process(argv: list[str]) -> Outcome | None:
    """The outcome of ``argv`` when the parser ends it (refused, --help, --version, a family
    without a subcommand); None when it would run a command (then fork it)."""
    real = cli.build_parser

    def build():
        parser = real()
        parse = parser.parse_args

        def parse_args(args=None, namespace=None):
            ns = parse(args, namespace)
            if getattr(ns, "func", None) is not None:
                ns.func = _stop
            return ns
        parser.parse_args = parse_args
        return parser

    out, err = io.StringIO(), io.StringIO()
    saved = cli.build_parser, cli.keep_freed_memory
    cli.build_parser, cli.keep_freed_memory = build, lambda: False
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = cli.main(list(argv))
            except SystemExit as e:
                rc = _exit_code(e.code)
    except _Parsed:
        return None
    finally:
        cli.build_parser, cli.keep_freed_memory = saved
    return Outcome(list(argv), rc, out.getvalue(), err.getvalue())


def _stop(args):
    raise _Parsed


def _exit_code(code) -> int:
    if code is None:
        return 0
    return code if isinstance(code, int) else 1


# ----------------------------------------------------------------------------- the zygote
class Zygote:
    """The helper process that forks one child per case (see the module docstring)."""

    def __init__(self, mem_bytes: int, env: dict | None = None):
        # glibc reserves 64 MiB of address space per thread's malloc arena: without a cap,
        # --threads 60 alone would pass the limit (it measures data, not reservations)
        self.mem_bytes, self.env = mem_bytes, {"MALLOC_ARENA_MAX": "2", **(env or {})}
        self.proc = None

    def start(self):
        src = str(Path(__file__).resolve().parent)
        self.proc = subprocess.Popen(
            [sys.executable, "-c", (f"import sys; sys.path.insert(0, {src!r}); "
                                    f"import cli_fuzz_runner; cli_fuzz_runner.zygote_main()")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1,
            env={**os.environ, "PYTHONFAULTHANDLER": "1", **self.env})
        ready = self.proc.stdout.readline()
        if ready.strip() != "ready":
            raise RuntimeError(f"fuzz zygote did not start: {ready!r}")
        return self

    def run(self, argv: list[str], cwd: Path, timeout: float) -> Outcome:
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        io_base = cwd.parent / f".{cwd.name}"
        req = {"argv": argv, "cwd": str(cwd), "timeout": timeout, "mem": self.mem_bytes,
               "stdout": f"{io_base}.out", "stderr": f"{io_base}.err"}
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            self.proc = None
            raise RuntimeError("fuzz zygote died")
        rep = json.loads(line)
        texts = []
        for name in ("stdout", "stderr"):
            p = Path(req[name])
            texts.append(p.read_bytes().decode("utf-8", "replace") if p.exists() else "")
            p.unlink(missing_ok=True)
        return Outcome(list(argv), rep["rc"], *texts, forked=True, timed_out=rep["timed_out"],
                       wall_s=rep["wall_s"], cpu_s=rep["cpu_s"], maxrss_mb=rep["maxrss_mb"])

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
        self.proc = None


def zygote_main():
    """The helper process: import the CLI, then fork one child per request line."""
    cli.build_parser()  # imports the benchmarks' modules: every child runs the same sources
    dist_cli.supervise = lambda *a, **k: 0   # pre-launch checks only: no rank starts
    dist_cli.run_host = lambda *a, **k: 0
    out = sys.stdout
    out.write("ready\n")
    out.flush()
    for line in sys.stdin:
        req = json.loads(line)
        out.write(json.dumps(_fork_one(req)) + "\n")
        out.flush()


def _fork_one(req: dict) -> dict:
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        _child(req)  # never returns
    deadline = t0 + req["timeout"]
    timed_out = False
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            break
        if time.perf_counter() > deadline:
            timed_out = True
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            done, status, usage = os.wait4(pid, 0)
            break
        time.sleep(0.005)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)  # anything the command left running
    rc = os.waitstatus_to_exitcode(status)
    return {"rc": rc, "timed_out": timed_out, "wall_s": time.perf_counter() - t0,
            "cpu_s": usage.ru_utime + usage.ru_stime, "maxrss_mb": usage.ru_maxrss / 1024}


def mapped_bytes() -> int:
    """This process's address space now (``VmSize``: /proc/self/statm's first field)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def _child(req: dict):
    rc = 70
    try:
        os.setpgid(0, 0)
        os.chdir(req["cwd"])
        for name, fd in (("stdout", 1), ("stderr", 2)):
            f = os.open(req[name], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(f, fd)
            os.close(f)
        home = Path(req["cwd"]) / "home"
        os.environ.update(HOME=str(home), TMPDIR=str(Path(req["cwd"]) / "tmp"))
        tempfile.tempdir = None
        limit = mapped_bytes() + req["mem"]
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        sys.argv = ["scalegnn", *req["argv"]]
        try:
            rc = cli.main(req["argv"])
        except SystemExit as e:
            rc = _exit_code(e.code)
        except BaseException:  # noqa: BLE001 (what the `scalegnn` script prints, and its status)
            traceback.print_exc()
            rc = 1
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:  # noqa: BLE001 (a failure of the flush or the set-up: still report)
        with contextlib.suppress(BaseException):
            traceback.print_exc()
            sys.stderr.flush()
    os._exit(rc if isinstance(rc, int) and 0 <= rc < 256 else 1)


# ----------------------------------------------------------------------------- judging
def snapshot(folder: Path) -> dict:
    """path (relative) -> digest of every file and folder under ``folder``."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        base = Path(dirpath)
        for d in dirnames:
            out[str((base / d).relative_to(folder))] = "dir"
        for f in filenames:
            p = base / f
            try:
                out[str(p.relative_to(folder))] = hashlib.sha1(p.read_bytes()).hexdigest()
            except OSError:
                out[str(p.relative_to(folder))] = "unreadable"
    return out


def changes(before: dict, after: dict) -> dict:
    out = {p: "deleted" for p in before if p not in after}
    out.update({p: "new" if p not in before else "changed" for p, h in after.items()
                if before.get(p) != h and h != "dir"})
    return out


def _under(path: str, roots) -> bool:
    """``path`` is one of ``roots``, inside one, or a sibling of one with another suffix
    (``report --out r.png`` writes r.html beside it); a root ``.`` (the case folder itself,
    e.g. ``bench scale --data-dir .``) holds every path."""
    if "." in roots:
        return True
    stem = str(Path(path).with_suffix(""))
    return any(path == r or path.startswith(r.rstrip("/") + "/")
               or stem == str(Path(r).with_suffix("")) for r in roots if r)


def problems(o: Outcome, outputs: list[str]) -> list[str]:
    """Everything wrong with outcome ``o`` (empty: fine); ``outputs``: the case-relative paths
    the command may write (its --out and the like)."""
    bad = []
    if o.timed_out:
        return [f"no answer within the time limit ({o.wall_s:.0f} s)"]
    if o.rc not in (0, 2):
        bad.append(f"exit code {o.rc}")
    if "Traceback" in o.stderr or "Traceback" in o.stdout:
        bad.append("traceback")
    # lines as a terminal shows them: split at newlines only (str.splitlines would also split
    # at the control characters a generated path may hold); tqdm's bar redraws with \r
    lines = [ln for ln in o.stderr.split("\n") if ln.strip() and not _progress_bar(ln)]
    errors = [ln for ln in lines if ln.startswith(ERROR)]
    usage = _usage_lines(lines)
    odd = [ln for i, ln in enumerate(lines) if i not in usage and not ln.startswith(NOTE_PREFIXES)]
    if odd:
        bad.append(f"stderr line of no documented kind: {odd[0][:160]!r}")
    if len(errors) > 1:
        bad.append(f"{len(errors)} error lines")
    if o.rc == 2 and not errors:
        bad.append("exit code 2 without an error line")
    if o.rc == 0 and errors:
        bad.append("an error line with exit code 0")
    if errors and len(errors[0]) > MAX_ERROR_CHARS:
        bad.append(f"error line of {len(errors[0])} characters")
    bad += [f"written outside the case folder: {name}" for name in o.outside]
    for path, what in sorted(o.changes.items()):
        if TEMPORARY.match(Path(path).name):
            bad.append(f"temporary left behind: {path}")
        elif what != "new" and not _under(path, outputs) and Path(path).name != ".lock":
            bad.append(f"input {what}: {path}")
        elif what == "new" and not _under(path, [*outputs, "home"]) \
                and Path(path).name != ".lock":
            bad.append(f"written outside the outputs: {path}")
    return bad


def _progress_bar(line: str) -> bool:
    """A line of the training progress bar (tqdm on stderr, unless --no-progress)."""
    parts = [p for p in line.split("\r") if p.strip()]
    return bool(parts) and all(PROGRESS.match(p) for p in parts)


def _usage_lines(lines: list[str]) -> set[int]:
    """Indices of argparse's usage block (``usage: ...`` and its indented continuation lines)
    right before an error line."""
    out = set()
    for i, ln in enumerate(lines):
        if ln.startswith("usage: "):
            j = i + 1
            while j < len(lines) and lines[j][:1].isspace():
                j += 1
            if j < len(lines) and lines[j].startswith(ERROR):
                out.update(range(i, j))
    return out


def over_memory(o: Outcome) -> bool:
    """The command ran out of its address space (a one-line refusal or not)."""
    return bool(OOM.search(o.stderr)) or o.rc in (-signal.SIGSEGV, -signal.SIGABRT,
                                                  -signal.SIGKILL) and not o.timed_out


# ----------------------------------------------------------------------------- one case
def run_case(case, root: Path, fixtures: Path, zygote: Zygote, timeout: float) -> Outcome:
    """Make the case's folder under ``root`` (its files copied from ``fixtures`` and damaged),
    run its command line (in process when the parser ends it, else forked), record which files
    changed, and remove the folder."""
    case_dir = root / "case"
    if case_dir.exists():
        shutil.rmtree(case_dir)
    case_dir.mkdir(parents=True)
    for sub in ("home", "tmp"):
        (case_dir / sub).mkdir()
    materialize(case_dir, fixtures, case.files)
    before = snapshot(case_dir)
    t0 = time.perf_counter()
    cwd = os.getcwd()
    os.chdir(case_dir)
    try:
        outcome = parse_in_process(case.argv)
    finally:
        os.chdir(cwd)
    if outcome is None:
        outcome = zygote.run(case.argv, case_dir, timeout)
    else:
        outcome.wall_s = time.perf_counter() - t0
    outcome.changes = changes(before, snapshot(case_dir))
    shutil.rmtree(case_dir, ignore_errors=True)
    outcome.outside = sorted(p.name for p in root.iterdir() if p.name not in ROOT_ENTRIES)
    return outcome
