"""The argument parser every command uses: argparse's, with its one error line kept to one
line (usage, then ``scalegnn: error: ...``, exit status 2); :func:`no_subcommand` answers a
command family given alone (``scalegnn data``) the same way: its help, then one error line."""

from __future__ import annotations

import argparse
import sys


class Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse's default exits 2 with usage; keep it but one line
        self.print_usage(sys.stderr)
        print(f"scalegnn: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def no_subcommand(parser: argparse.ArgumentParser) -> int:
    """``scalegnn data`` (a command family without its subcommand): the family's help on stdout,
    then one error line naming the subcommands on stderr; exit status 2."""
    parser.print_help()
    names = [name for action in parser._actions
             if isinstance(action, argparse._SubParsersAction) for name in action.choices]
    print(f"scalegnn: error: {parser.prog}: missing subcommand (one of {', '.join(names)})",
          file=sys.stderr)
    return 2
