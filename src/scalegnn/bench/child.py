"""The fresh interpreters some benchmarks measure in (``bench epoch`` under another
``OMP_WAIT_POLICY``, ``bench scale``'s data generator and its one process per scale).

The child's code calls its work through :func:`child_main`, which turns a user mistake (a
:class:`~scalegnn.errors.ScaleGNNError`: a size that needs more memory than there is, a damaged
``--data`` folder) into one ``scalegnn: error:`` line and exit status 2, as the CLI does,
instead of a traceback; so is running out of memory. :func:`run_child` starts ``python -c CODE
PAYLOAD``, hands each stdout line to the caller as it comes, passes the child's other stderr
lines through as they come, and raises the child's error line again in the parent
(:class:`ChildError`), so the command prints it once and exits 2.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading

from scalegnn.engine.out_of_memory import is_out_of_memory, out_of_memory_in
from scalegnn.errors import ScaleGNNError

ERROR = "scalegnn: error: "


class ChildError(ScaleGNNError):
    """A user mistake a benchmark's child process found: its one line."""


def child_main(fn, *args) -> int:
    """``fn(*args)`` as a child's exit status (its int result, else 0); a ScaleGNNError is
    one line and status 2."""
    try:
        rc = fn(*args)
    except ScaleGNNError as e:
        print(f"{ERROR}{e}", file=sys.stderr, flush=True)
        return 2
    except (MemoryError, RuntimeError) as e:
        if not is_out_of_memory(e):
            raise
        print(f"{ERROR}{out_of_memory_in(e, 'the measuring process')}", file=sys.stderr,
              flush=True)
        return 2
    return rc if isinstance(rc, int) and not isinstance(rc, bool) else 0


def run_child(code: str, payload: dict, env=None, on_line=None) -> tuple[int, str]:
    """Run ``python -c code json(payload)``: ``(exit status, stdout)``; ``on_line`` gets each
    stdout line as it comes. Exit status 2 with an error line raises :class:`ChildError`."""
    proc = subprocess.Popen([sys.executable, "-c", code, json.dumps(payload)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    errors = []

    def relay():
        for line in proc.stderr:
            if line.startswith(ERROR):
                errors.append(line.rstrip("\n")[len(ERROR):])
            else:
                sys.stderr.write(line)
                sys.stderr.flush()

    thread = threading.Thread(target=relay, daemon=True)
    thread.start()
    out = []
    for line in proc.stdout:
        out.append(line)
        if on_line is not None:
            on_line(line)
    proc.wait()
    thread.join()
    if proc.returncode == 2 and errors:
        raise ChildError(errors[-1])
    for line in errors:  # an error line of a child that failed otherwise: as it was
        print(f"{ERROR}{line}", file=sys.stderr, flush=True)
    return proc.returncode, "".join(out)
