"""Numeric command-line flags, checked when the arguments are parsed (before any work).

A flag declared ``add_argument("--threads", type=THREADS)`` takes an integer in its
:class:`~scalegnn.config.schema.Range`; anything else (``-1``, ``1e9``, ``nan``, ``abc``) is a
one-line :class:`~scalegnn.errors.ConfigError` naming the flag, raised by the parser itself, so
no command starts on a bad number. :func:`name_flags` gives each :class:`Num` of a parser (and of
its subparsers) its flag's name for the message; ``scalegnn.cli.build_parser`` calls it.
"""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass

from scalegnn.config.checks import check_range
from scalegnn.config.schema import INT32_MAX, MAX_EPOCHS, MAX_TIMEOUT_S, SEED_MAX, Range
from scalegnn.errors import ConfigError

MAX_THREADS = 4096
MAX_PROCESSES = 1024


@dataclass(frozen=True)
class Num:
    """The ``type=`` of a numeric flag: ``kind`` (int or float) within ``range``; ``flag`` names
    the flag in messages (:func:`name_flags` sets it)."""

    kind: type
    range: Range
    flag: str = ""

    def __call__(self, text):
        name = self.flag or "value"
        try:
            value = int(text) if self.kind is int else float(text)
        except (TypeError, ValueError, OverflowError):
            what = "an integer" if self.kind is int else "a number"
            raise ConfigError(f"{name}: expected {what}, got {str(text)[:40]!r}") from None
        return check_range(name, value, self.range)

    def named(self, flag: str) -> "Num":
        return dataclasses.replace(self, flag=flag)

    @property
    def __name__(self) -> str:  # argparse names the type in some messages
        return self.kind.__name__


@dataclass(frozen=True)
class IntList:
    """The ``type=`` of a comma list of integers (``--parts 4,8,16``): every item an integer in
    ``range``, no empty item (``4,,8``), no repeat, at most ``MAX_ITEMS`` items; ``single``:
    exactly one. Returns the list."""

    range: Range
    single: bool = False
    flag: str = ""
    MAX_ITEMS = 64

    def __call__(self, text) -> list[int]:
        name = self.flag or "value"
        items = str(text).split(",")
        if self.single and len(items) != 1:
            raise ConfigError(f"{name}: expected one integer, got {str(text)[:40]!r}")
        if len(items) > self.MAX_ITEMS:
            raise ConfigError(f"{name}: at most {self.MAX_ITEMS} values, got {len(items)}")
        out = []
        for item in items:
            if not item.strip():
                raise ConfigError(f"{name}: empty item in {str(text)[:40]!r} (expected a comma "
                                  f"list like 4,8,16)")
            value = Num(int, self.range, name)(item.strip())
            if value in out:
                raise ConfigError(f"{name}: {value} is listed twice in {str(text)[:40]!r}")
            out.append(value)
        return out

    def named(self, flag: str) -> "IntList":
        return dataclasses.replace(self, flag=flag)


def count(lo: int, hi: int, note: str = "") -> Num:
    """Integers in [lo, hi]."""
    return Num(int, Range(lo, hi, note=note))


def real(lo: float, hi: float, *, lo_open: bool = False, hi_open: bool = False,
         note: str = "") -> Num:
    """Finite numbers from lo to hi (``*_open``: that end excluded)."""
    return Num(float, Range(lo, hi, lo_open=lo_open, hi_open=hi_open, typed=False, note=note))


THREADS = count(0, MAX_THREADS, "(0: all cores)")
SEED = count(0, SEED_MAX)
SPLIT = count(0, INT32_MAX)
EPOCHS = count(1, MAX_EPOCHS)
PROCESSES = count(1, MAX_PROCESSES)
SECONDS = real(0.0, MAX_TIMEOUT_S, lo_open=True)
FRACTION = real(0.0, 1.0)
WIDTH = count(1, 1 << 20)
REPEATS = count(1, 1000)


def name_flags(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Name every :class:`Num` and :class:`IntList` type of ``parser`` and its subparsers after
    its flag (the longest option string, e.g. ``--threads``); returns ``parser``."""
    for action in parser._actions:
        if isinstance(action.type, (Num, IntList)) and not action.type.flag:
            name = max(action.option_strings, key=len) if action.option_strings else action.dest
            action.type = action.type.named(name)
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                name_flags(sub)
    return parser


def numeric_actions(parser: argparse.ArgumentParser, path: tuple = ()):
    """``(command path, action)`` of every int or float flag of ``parser`` and its subparsers
    (the tests check that each one is a :class:`Num`)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from numeric_actions(sub, (*path, name))
        elif action.type in (int, float) or isinstance(action.type, (Num, IntList)):
            yield path, action
