"""Argument checks shared by the golden model's modules.

Every function takes ``name`` (the argument's name, for the message) and
``value`` first, returns ``value`` converted (``int`` or ``float``) and
otherwise raises ``ValueError`` whose message starts ``<name> = <value>:`` and
states the rule that was broken. The message families differ on purpose: each
module's callers (and tests) rely on its exact wording, so the family is part
of a function's contract.

Integer families:

:func:`check_int`
    Strict integers (anything with ``__index__`` except ``bool`` and
    ``float``) in ``lo..hi``: ``must be an integer`` / ``must be in lo..hi``
    (``must be in >= lo`` without upper bound).
:func:`check_min`
    Integers (``numbers.Integral`` except ``bool``) of at least ``minimum``:
    ``must be an integer >= minimum`` / ``must be >= minimum``.
:func:`check_np_int`
    Python or numpy integers (``bool`` included, being an ``int``) in
    ``lo .. hi``: ``must be an integer in lo .. hi`` (``>= lo`` without upper
    bound), for both the type and the range; :func:`check_bits` is its bit
    width ``1 .. 32``.

Real families: :func:`check_unit` (a number in ``[0, 1]`` or ``(0, 1]``) and
:func:`check_nonneg` (a finite number ``>= 0``). :func:`parents_key` is a
parent list as the key of the per-tree caches.
"""

from __future__ import annotations

import math
import numbers
import operator

import numpy as np

__all__ = [
    "check_bits",
    "check_int",
    "check_min",
    "check_nonneg",
    "check_np_int",
    "check_unit",
    "parents_key",
]


def check_int(name: str, value: object, lo: int, hi: int | None = None) -> int:
    """``value`` (with ``__index__``, not a ``bool`` or ``float``) as an ``int`` in ``lo..hi``.

    ``hi = None``: no upper bound.

    Raises
    ------
    ValueError
        ``"<name> = <value!r>: must be an integer"`` or
        ``"<name> = <value!r>: must be in lo..hi"`` (``must be in >= lo``).
    """
    if isinstance(value, bool | float) or not hasattr(value, "__index__"):
        raise ValueError(f"{name} = {value!r}: must be an integer")
    v = operator.index(value)  # type: ignore[arg-type]
    if v < lo or (hi is not None and v > hi):
        rng = f"{lo}..{hi}" if hi is not None else f">= {lo}"
        raise ValueError(f"{name} = {v!r}: must be in {rng}")
    return v


def check_min(name: str, value: object, minimum: int) -> int:
    """``value`` (a ``numbers.Integral``, not a ``bool``) as an ``int`` ``>= minimum``.

    Raises
    ------
    ValueError
        ``"<name> = <value!r>: must be an integer >= minimum"`` or
        ``"<name> = <value>: must be >= minimum"``.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} = {value!r}: must be an integer >= {minimum}")
    v = int(value)
    if v < minimum:
        raise ValueError(f"{name} = {v}: must be >= {minimum}")
    return v


def check_np_int(
    name: str, value: object, lo: int, hi: int | None = None, *, hi_text: str | None = None
) -> int:
    """``value`` (an ``int``, ``bool`` included, or a numpy integer) as an ``int`` in ``lo .. hi``.

    ``hi = None``: no upper bound; ``hi_text``: how the message writes ``hi``
    (e.g. ``"2**64 - 1"``; default ``str(hi)``).

    Raises
    ------
    ValueError
        ``"<name> = <value!r>: must be an integer in lo .. hi"`` (``must be an
        integer >= lo`` without upper bound), for a wrong type and a value out
        of range alike.
    """
    if isinstance(value, int | np.integer):
        v = int(value)
        if v >= lo and (hi is None or v <= hi):
            return v
    bound = f">= {lo}" if hi is None else f"in {lo} .. {hi if hi_text is None else hi_text}"
    raise ValueError(f"{name} = {value!r}: must be an integer {bound}")


def check_bits(name: str, bits: object) -> int:
    """A bit width: :func:`check_np_int` in ``1 .. 32``.

    Raises
    ------
    ValueError
        ``"<name> = <bits!r>: must be an integer in 1 .. 32"``.
    """
    return check_np_int(name, bits, 1, 32)


def check_unit(name: str, value: object, *, open_low: bool = False) -> float:
    """``float(value)`` in ``[0, 1]`` (``(0, 1]`` if ``open_low``).

    Raises
    ------
    ValueError
        ``"<name> = <value!r>: must be a number in [0, 1]"`` if ``float()``
        fails, ``"<name> = <value!r>: must be in [0, 1]"`` if out of range or
        NaN (``(0, 1]`` if ``open_low``).
    """
    interval = "(0, 1]" if open_low else "[0, 1]"
    try:
        v = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"{name} = {value!r}: must be a number in {interval}") from None
    if not (0.0 < v <= 1.0 if open_low else 0.0 <= v <= 1.0):  # also rejects NaN
        raise ValueError(f"{name} = {value!r}: must be in {interval}")
    return v


def check_nonneg(name: str, value: object) -> float:
    """``float(value)``, finite and ``>= 0``.

    Raises
    ------
    ValueError
        ``"<name> = <value!r>: must be a number >= 0"`` if ``float()`` fails,
        ``"<name> = <value!r>: must be a finite number >= 0"`` if negative,
        infinite or NaN.
    """
    try:
        v = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"{name} = {value!r}: must be a number >= 0") from None
    if not (math.isfinite(v) and v >= 0.0):
        raise ValueError(f"{name} = {value!r}: must be a finite number >= 0")
    return v


def parents_key(parents: object) -> tuple:
    """``tuple(parents)``, checked to be hashable: the key of the per-tree caches.

    Raises
    ------
    ValueError
        ``"parents must be a sequence of integers, got <parents!r>"`` if
        ``parents`` is not iterable or holds an unhashable entry.
    """
    try:
        key = tuple(parents)  # type: ignore[arg-type]
        hash(key)
    except TypeError as exc:
        raise ValueError(f"parents must be a sequence of integers, got {parents!r}") from exc
    return key
