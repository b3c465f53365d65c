"""Argument checks shared by the golden model's modules.

Each function returns the checked value converted (``int`` or ``float``) or
raises ``ValueError`` whose message starts ``<name> = <value>:`` and states the
rule that was broken. The message families differ on purpose: each module's
callers (and tests) rely on its exact wording, so the family is part of a
function's contract.

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
:func:`check_nonneg` (a finite number ``>= 0``).
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
]


def check_int(name: str, value: object, lo: int, hi: int | None = None) -> int:
    """``value`` as an ``int`` in ``lo..hi``.

    Parameters
    ----------
    name : str
        Argument name for the message.
    value : object
        Any object with ``__index__`` other than a ``bool`` or ``float``.
    lo : int
        Smallest allowed value.
    hi : int, optional
        Largest allowed value (``None``: no upper bound).

    Returns
    -------
    int

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
    """``value`` as an ``int`` ``>= minimum``.

    Parameters
    ----------
    name : str
        Argument name for the message.
    value : object
        A ``numbers.Integral`` other than a ``bool``.
    minimum : int
        Smallest allowed value.

    Returns
    -------
    int

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
    """``value`` (a Python or numpy integer) as an ``int`` in ``lo .. hi``.

    Parameters
    ----------
    name : str
        Argument name for the message.
    value : object
        An ``int`` (``bool`` included) or ``numpy.integer``.
    lo : int
        Smallest allowed value.
    hi : int, optional
        Largest allowed value (``None``: no upper bound).
    hi_text : str, optional
        How the message writes ``hi`` (e.g. ``"2**64 - 1"``; default ``str(hi)``).

    Returns
    -------
    int

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
    """A bit width ``1 .. 32``: :func:`check_np_int` with ``lo = 1``, ``hi = 32``.

    Raises
    ------
    ValueError
        ``"<name> = <bits!r>: must be an integer in 1 .. 32"``.
    """
    return check_np_int(name, bits, 1, 32)


def check_unit(name: str, value: object, *, open_low: bool = False) -> float:
    """``value`` as a ``float`` in ``[0, 1]`` (``(0, 1]`` if ``open_low``).

    Parameters
    ----------
    name : str
        Argument name for the message.
    value : object
        Anything ``float()`` accepts.
    open_low : bool, optional
        Exclude 0.

    Returns
    -------
    float

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
    """``value`` as a finite ``float`` ``>= 0``.

    Parameters
    ----------
    name : str
        Argument name for the message.
    value : object
        Anything ``float()`` accepts.

    Returns
    -------
    float

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
