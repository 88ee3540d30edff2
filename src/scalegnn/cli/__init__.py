"""Command-line interface: ``scalegnn <command> ...``.

Each command family lives in its own module exposing ``add_parser(subparsers)``; the parser's
``func`` receives the parsed arguments. The CLI only parses arguments and calls the Python API.
User mistakes (:class:`ScaleGNNError`) print one line and exit with status 2, no traceback (a
numeric flag out of its range while the arguments are parsed: :mod:`scalegnn.config.flags`);
so do operating-system errors on the user's files (``OSError``: a read-only or full ``--out``,
an unreadable input), printed as ``<file>: <reason>``, and running out of memory where no
guard foresaw it (a benchmark's sizes; training names its settings itself). A closed stdout
pipe (``... | head``) ends the command quietly. A command family alone (``scalegnn data``)
prints its help and one error line naming its subcommands.

Besides that one error line (after argparse's usage block for a parsing error), stderr holds
only ``scalegnn: warning: ...`` lines, ``scalegnn: <dataset>: <note>`` (a data choice made for
the user: structural features, split 0 of several), ``wrote <path>: ...`` (``data synth``,
``data convert``), ``scalegnn: compare: ...`` (a method of ``compare`` starts or ends) and the
progress bar of training and of ``compare`` (unless ``--no-progress``);
``tests/test_cli_fuzz.py`` holds every command to this.
"""

from __future__ import annotations

import argparse
import os
import sys

from scalegnn import __version__
from scalegnn.cli import bench, compare, data, dist, partition, predict, train
from scalegnn.cli.parser import Parser, no_subcommand
from scalegnn.config.flags import name_flags
from scalegnn.engine.out_of_memory import is_out_of_memory, out_of_memory_in
from scalegnn.errors import ScaleGNNError
from scalegnn.threads import keep_freed_memory

COMMAND_MODULES = (data, train, predict, compare, bench, partition, dist)
"""The command families, in the order ``scalegnn --help`` lists them."""


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="scalegnn", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"scalegnn {__version__}")
    sub = parser.add_subparsers(dest="command", parser_class=Parser)
    for mod in COMMAND_MODULES:
        mod.add_parser(sub)
    return name_flags(parser)  # numeric flags: checked while parsing, messages name the flag


def main(argv=None) -> int:
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv:
        argv = ["train"]  # `scalegnn` alone trains on the built-in synthetic default
    argv = partition.with_default_subcommand(argv)
    try:
        args = parser.parse_args(argv)
        if not getattr(args, "func", None):
            return no_subcommand(parser)
    except BrokenPipeError:  # `scalegnn --help | head`
        _silence_stdout()
        return 141
    except ScaleGNNError as e:  # a numeric flag out of its range (scalegnn.config.flags)
        print(f"scalegnn: error: {e}", file=sys.stderr)
        return 2
    keep_freed_memory()
    try:
        rc = args.func(args)
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
    except ScaleGNNError as e:
        print(f"scalegnn: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        _silence_stdout()
        return 141  # as if killed by SIGPIPE, like other tools piped into `head`
    except OSError as e:
        print(f"scalegnn: error: {os_error_line(e)}", file=sys.stderr)
        return 2
    except (MemoryError, RuntimeError) as e:  # out of memory where no guard foresaw it
        if not is_out_of_memory(e):
            raise
        command = " ".join(["scalegnn", *[a for a in argv if not a.startswith("-")][:2]])
        print(f"scalegnn: error: {out_of_memory_in(e, command)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("scalegnn: interrupted", file=sys.stderr)
        return 130
    return int(rc or 0)


def os_error_line(e: OSError) -> str:
    """``<file>: <reason>`` for an OSError (``<reason>`` alone when it names no file)."""
    reason = e.strerror or str(e) or type(e).__name__
    names = [os.fsdecode(f) if isinstance(f, (str, bytes, os.PathLike)) else str(f)
             for f in (e.filename, e.filename2) if f is not None]
    line = f"{' -> '.join(names)}: {reason}" if names else reason
    return line.replace("\n", " ")


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # stdout replaced (tests) or closed
        pass


if __name__ == "__main__":
    raise SystemExit(main())
