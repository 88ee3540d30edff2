"""The argument parser every command uses: argparse's, with its one error line kept to one
line (usage, then ``scalegnn: error: ...``, exit status 2)."""

from __future__ import annotations

import argparse
import sys


class Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse's default exits 2 with usage; keep it but one line
        self.print_usage(sys.stderr)
        print(f"scalegnn: error: {message}", file=sys.stderr)
        raise SystemExit(2)
