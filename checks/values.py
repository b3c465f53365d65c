"""Scalar checks: integers, bit widths, seeds, real numbers, choices, booleans."""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable

import numpy as np

__all__ = ["integer", "bits", "seed", "real", "choice", "boolean", "int_range_text"]

#: the largest seed: a 64-bit unsigned value (SPEC §3.4's lane seeds)
SEED_MAX = 2**64 - 1


def int_range_text(lo: int | None, hi: int | None) -> str:
    """How a message writes the integer range ``lo .. hi`` (``None``: unbounded)."""
    return _range_text(lo, hi, f" in {lo} .. {hi}")


def _range_text(
    lo: float | None, hi: float | None, both: str, lo_open: bool = False, hi_open: bool = False
) -> str:
    """``both`` with two bounds, else the one bound as an inequality, else nothing."""
    if lo is not None and hi is not None:
        return both
    if lo is not None:
        return f" {'>' if lo_open else '>='} {lo}"
    if hi is not None:
        return f" {'<' if hi_open else '<='} {hi}"
    return ""


def integer(name: str, value: object, lo: int | None = None, hi: int | None = None) -> int:
    """``value`` as an ``int`` in ``lo .. hi`` (either bound ``None``: none).

    An integer is a Python ``int`` or a numpy integer: ``bool`` and
    ``numpy.bool_`` are refused, and so is every float (``2.0`` too), string,
    ``Decimal`` and ``Fraction``: nothing is truncated.

    Raises
    ------
    ValueError
        ``"<name> = <value!r>: must be an integer in lo .. hi"`` (``>= lo``,
        ``<= hi`` with one bound), for a wrong type and a value out of range.
    """
    if not isinstance(value, bool | np.bool_):
        try:
            v = operator.index(value)  # type: ignore[arg-type]
        except TypeError:
            pass
        else:
            if (lo is None or v >= lo) and (hi is None or v <= hi):
                return v
    raise ValueError(f"{name} = {value!r}: must be an integer{int_range_text(lo, hi)}")


def bits(name: str, value: object, lo: int = 1, hi: int = 32) -> int:
    """A fixed-point width: :func:`integer` in ``lo .. hi`` (default ``1 .. 32``)."""
    return integer(name, value, lo, hi)


def power_of_two(name: str, value: object, hi: int, *, zero: str | None = None) -> int:
    """``value`` as an ``int``, a power of two in ``1 .. hi``; or ``0`` when ``zero``
    says what 0 selects.

    Raises
    ------
    ValueError
        ``"<name> = <value!r>: must be [0 (<zero>) or ]a power of two in 1 .. hi"``.
    """
    v = integer(name, value, 0 if zero else 1, hi)
    if v & (v - 1):
        either = f"0 ({zero}) or " if zero else ""
        raise ValueError(f"{name} = {value!r}: must be {either}a power of two in 1 .. {hi}")
    return v


def seed(name: str, value: object) -> int:
    """A seed: :func:`integer` in ``0 .. 2**64 - 1``."""
    return integer(name, value, 0, SEED_MAX)


def real(
    name: str,
    value: object,
    lo: float | None = None,
    hi: float | None = None,
    *,
    lo_open: bool = False,
    hi_open: bool = False,
) -> float:
    """``value`` as a finite ``float`` in the interval ``lo .. hi`` (closed ends
    unless ``lo_open`` / ``hi_open``; a bound ``None``: none).

    Integers and numpy numbers are accepted; ``bool``, strings, NaN and the
    infinities are not.

    Raises
    ------
    ValueError
        ``"<name> = <value!r>: must be a finite number in [lo, hi]"`` (the
        brackets as open or closed; ``>= lo``, ``> lo``, ``<= hi``, ``< hi`` with
        one bound).
    """
    if not isinstance(value, bool | np.bool_ | str | bytes):
        try:
            v = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            pass
        else:
            ok = math.isfinite(v)
            ok = ok and (lo is None or (v > lo if lo_open else v >= lo))
            ok = ok and (hi is None or (v < hi if hi_open else v <= hi))
            if ok:
                return v
    raise ValueError(
        f"{name} = {value!r}: must be a finite number{_real_text(lo, hi, lo_open, hi_open)}"
    )


def _real_text(lo: float | None, hi: float | None, lo_open: bool, hi_open: bool) -> str:
    interval = f" in {'(' if lo_open else '['}{lo}, {hi}{')' if hi_open else ']'}"
    return _range_text(lo, hi, interval, lo_open, hi_open)


def choice(name: str, value: object, choices: Iterable[object]) -> object:
    """``value`` if it is one of ``choices`` (compared with ``==``, same type).

    Raises
    ------
    ValueError
        ``"<name> = <value!r>: must be one of <choice!r>, ..."``.
    """
    options = list(choices)
    for c in options:
        if type(value) is type(c) and value == c:
            return value
    raise ValueError(f"{name} = {value!r}: must be one of {', '.join(map(repr, options))}")


def boolean(name: str, value: object) -> bool:
    """``value`` if it is ``True`` or ``False`` (``numpy.bool_`` accepted): no
    truthiness, so ``"no"`` or ``0`` is an error, not a silent ``True``/``False``.

    Raises
    ------
    ValueError
        ``"<name> = <value!r>: must be True or False"``.
    """
    if isinstance(value, bool | np.bool_):
        return bool(value)
    raise ValueError(f"{name} = {value!r}: must be True or False")
