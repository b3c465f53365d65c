"""Argument types for the command lines: every value checked when it is
parsed, before any work starts, with :mod:`checks.values`' rules.

``argparse`` reports a refused value as one line, ``<prog>: error: argument
--tokens: must be an integer >= 1, got '0'``, and exits with status 2: no
traceback for a user's mistake.

Every command line of the project has the same shape: ``parse_args(argv)``
parses and checks every argument (types from here, cross-argument checks with
``parser.error`` naming the option, a library's ``ValueError`` turned into
such an error by :func:`option_error`) and does no work; ``main(argv)`` calls
it, then works.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from checks.values import int_range_text, integer, real

__all__ = [
    "cli_parser",
    "int_arg",
    "real_arg",
    "out_dir_arg",
    "out_file_arg",
    "in_file_arg",
    "option_error",
    "distinct_choices",
]


def int_arg(lo: int | None = None, hi: int | None = None) -> Callable[[str], int]:
    """An ``argparse`` type: an integer in ``lo .. hi``, decimal (leading zeros
    allowed, ``007``) or ``0x`` / ``0o`` / ``0b``-prefixed."""

    def parse(text: str) -> int:
        try:
            try:
                value = int(text, 10)
            except ValueError:
                value = int(text, 0)
            return integer("value", value, lo, hi)
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
            value = float(text)
        except ValueError:
            value = text  # type: ignore[assignment]  # refused by real() with its rule
        try:
            return real("value", value, lo, hi, lo_open=lo_open, hi_open=hi_open)
        except ValueError as e:
            rule = str(e).split(": ", 1)[1]
            raise argparse.ArgumentTypeError(f"{rule}, got {text!r}") from None

    parse.__name__ = "number"
    return parse


def _writable_path(text: str) -> Path:
    """``Path(text)``, refused if empty or if an existing ancestor is not a directory
    (nothing could be created under it)."""
    if not text.strip() or "\x00" in text:
        raise argparse.ArgumentTypeError(f"must be a path, got {text!r}")
    p = Path(text)
    for parent in p.parents:
        if parent.exists():
            if not parent.is_dir():
                raise argparse.ArgumentTypeError(
                    f"{text!r}: {str(parent)!r} is a file, not a directory"
                )
            break
    return p


def out_dir_arg(text: str) -> Path:
    """An ``argparse`` type: a directory to write into (created if missing); an
    existing file of that name, or under an existing file, is refused."""
    p = _writable_path(text)
    if p.exists() and not p.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a file, not a directory")
    return p


def out_file_arg(text: str) -> Path:
    """An ``argparse`` type: a file to write (its directory created if missing); an
    existing directory of that name, or a path under an existing file, is refused."""
    p = _writable_path(text)
    if p.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a directory, not a file")
    return p


def in_file_arg(text: str) -> Path:
    """An ``argparse`` type: an existing file to read."""
    if not text.strip() or "\x00" in text:
        raise argparse.ArgumentTypeError(f"must be a path, got {text!r}")
    p = Path(text)
    if not p.is_file():
        raise argparse.ArgumentTypeError(
            f"{text!r} is a directory, not a file" if p.is_dir() else f"{text!r}: no such file"
        )
    return p


_NAMED = re.compile(r"^(\w+)(?:\[[^\]]*\])? = ")
#: another field a message names: ``(n_nodes)`` or ``backend = ...``
_ALSO = re.compile(r"\((\w+)\)|\b(\w+) = ")


def _option_of(ap: argparse.ArgumentParser, dest: str) -> str | None:
    for action in ap._actions:  # argparse has no public view of its actions
        if action.dest == dest and action.option_strings:
            return max(action.option_strings, key=len)
    return None


def option_error(
    ap: argparse.ArgumentParser, message: object, default: str | None = None
) -> NoReturn:
    """``ap.error`` for a checker's message (a ``ValueError`` of :mod:`checks`'
    family, ``"<name> = <value!r>: <rule>"``), as ``argument --<option>: <message>``.

    The option is the one whose ``dest`` is ``<name>``; if none is (or the message
    names nothing), ``default`` (an option string, e.g. ``"--set"``), else the
    message alone. The other options the message names (``(n_nodes)``,
    ``backend = ...``: a check across fields) follow, ``argument --nodes (with
    --n-nodes): ...``. Exits with status 2 (``SystemExit``), as ``ap.error`` does.
    """
    text = str(message)
    m = _NAMED.match(text)
    option = (_option_of(ap, m.group(1)) if m else None) or default
    if option is None:
        ap.error(text)
    rest = text[m.end() :] if m else text
    also = [_option_of(ap, a or b) for a, b in _ALSO.findall(rest)]
    also = list(dict.fromkeys(o for o in also if o is not None and o != option))
    with_ = f" (with {', '.join(also)})" if also else ""
    ap.error(f"argument {option}{with_}: {text}")


def distinct_choices(
    ap: argparse.ArgumentParser, name: str, values: list[str], choices: tuple[str, ...]
) -> None:
    """``ap.error`` unless every one of ``values`` (a positional list, ``name``) is one
    of ``choices``, each at most once: ``<name> = [...]: each must be one of 'a',
    'b'`` or ``<name> = [...]: each at most once``."""
    bad = [v for v in values if v not in choices]
    if bad:
        ap.error(f"{name} = {bad!r}: each must be one of {', '.join(map(repr, choices))}")
    if len(set(values)) != len(values):
        ap.error(f"{name} = {values!r}: each at most once")


class _Parser(argparse.ArgumentParser):
    """``ArgumentParser`` that refuses ``--option=--``: Python 3.11 drops that
    value (it takes the ``--`` for the end of the options) and stores ``[]``,
    past the option's type."""

    def _get_values(self, action: argparse.Action, arg_strings: list[str]) -> object:
        if action.option_strings and "--" in arg_strings:
            raise argparse.ArgumentError(action, f"expected a value, got {'--'!r}")
        return super()._get_values(action, arg_strings)


def cli_parser(prog: str, description: str | None) -> argparse.ArgumentParser:
    """The project's command-line parser: ``--help`` shows every option's default;
    ``--option=--`` is refused (a value, not the end of the options)."""
    return _Parser(
        prog=prog, description=description, formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
