"""Argument types for the command lines: every value checked when it is
parsed, before any work starts, with :mod:`checks.values`' rules.

``argparse`` reports a refused value as one line, ``<prog>: error: argument
--tokens: must be an integer >= 1, got '0'``, and exits with status 2: no
traceback for a user's mistake.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from checks.values import int_range_text, integer, real

__all__ = ["cli_parser", "int_arg", "real_arg", "out_dir_arg"]


def int_arg(lo: int | None = None, hi: int | None = None) -> Callable[[str], int]:
    """An ``argparse`` type: an integer (decimal, or ``0x``-prefixed) in ``lo .. hi``."""

    def parse(text: str) -> int:
        try:
            return integer("value", int(text, 0), lo, hi)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"must be an integer{int_range_text(lo, hi)}, got {text!r}"
            ) from None

    parse.__name__ = "integer"
    return parse


def real_arg(
    lo: float | None = None,
    hi: float | None = None,
    *,
    lo_open: bool = False,
    hi_open: bool = False,
) -> Callable[[str], float]:
    """An ``argparse`` type: a finite number in the interval (:func:`checks.real`)."""

    def parse(text: str) -> float:
        try:
            return real("value", float(text), lo, hi, lo_open=lo_open, hi_open=hi_open)
        except ValueError as e:
            rule = str(e).split(": ", 1)[1]
            raise argparse.ArgumentTypeError(f"{rule}, got {text!r}") from None

    parse.__name__ = "number"
    return parse


def out_dir_arg(text: str) -> Path:
    """An ``argparse`` type: a directory to write into (created if missing); an
    existing file of that name is refused."""
    p = Path(text)
    if p.exists() and not p.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a file, not a directory")
    return p


def cli_parser(prog: str, description: str | None) -> argparse.ArgumentParser:
    """The project's command-line parser: ``--help`` shows every option's default."""
    return argparse.ArgumentParser(
        prog=prog, description=description, formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
