"""Array checks: integer vectors (parent lists, tokens) and probability
vectors and matrices."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from checks.values import int_range_text, integer

__all__ = [
    "NORM_TOL",
    "as_floats",
    "finite_entries",
    "float_array",
    "int_array",
    "prob_vector",
    "prob_matrix",
]

#: how far from 1 a probability vector's sum may be (absolute): float64 models
#: normalise to within a few ulps; a vector off by more is a model's bug
NORM_TOL = 1e-6

_I64 = (-(2**63), 2**63 - 1)


def _shape_error(name: str, shape: tuple[int, ...], expected: str) -> ValueError:
    return ValueError(f"{name} has shape {shape}: expected {expected}")


def int_array(
    name: str,
    values: object,
    lo: int | None = None,
    hi: int | None = None,
    *,
    length: int | None = None,
) -> np.ndarray:
    """``values`` (a sequence or 1-D array of integers) as an ``int64`` array,
    every entry in ``lo .. hi``.

    Entries follow :func:`checks.values.integer`: floats (``0.0`` too), bools,
    strings, ``Decimal`` and ``Fraction`` are refused, never truncated. A
    numpy integer array is checked in one vectorised pass.

    Raises
    ------
    ValueError
        ``"<name>[<i>] = <value!r>: must be an integer in lo .. hi"`` for the
        first offending entry; ``"<name> = ...: must be a sequence of
        integers"`` if ``values`` is not a sequence; ``"<name> has shape ...:
        expected (length,)"``.
    """
    lo_, hi_ = (_I64[0] if lo is None else lo), (_I64[1] if hi is None else hi)
    if isinstance(values, np.ndarray):
        if values.ndim != 1:
            raise _shape_error(name, values.shape, "a 1-D sequence")
        seq = None if values.dtype.kind in "iu" else values.tolist()
    elif isinstance(values, str | bytes | dict) or not hasattr(values, "__len__"):
        raise ValueError(f"{name} = {values!r}: must be a sequence of integers")
    else:
        seq = list(values)  # type: ignore[call-overload]
    if seq is None:
        arr = values
    else:
        arr = np.array([_entry(f"{name}[{i}]", v, lo, hi) for i, v in enumerate(seq)], np.int64)
    if length is not None and arr.shape[0] != length:
        raise _shape_error(name, arr.shape, f"({length},)")
    if arr.size and (arr.min() < lo_ or arr.max() > hi_):
        i = int(np.flatnonzero((arr < lo_) | (arr > hi_))[0])
        raise ValueError(f"{name}[{i}] = {int(arr[i])}: must be an integer{int_range_text(lo, hi)}")
    return arr.astype(np.int64, copy=False)


def _entry(label: str, value: object, lo: int | None, hi: int | None) -> int:
    v = integer(label, value, lo, hi)
    if not _I64[0] <= v <= _I64[1]:
        raise ValueError(f"{label} = {value!r}: must be a 64-bit integer")
    return v


def _as_float(name: str, values: object) -> np.ndarray:
    """:func:`as_floats`, a boolean array refused (probabilities are numbers)."""
    if isinstance(values, np.ndarray) and values.dtype.kind == "b":
        raise ValueError(f"{name} has dtype bool: must be an array of probabilities")
    return as_floats(name, values)


def finite_entries(name: str, a: np.ndarray, *, non_negative: bool = False) -> np.ndarray:
    """``a`` if every entry is finite (and ``>= 0`` with ``non_negative``).

    Raises
    ------
    ValueError
        Naming the first entry that is not: ``"<name>[<i>, ...] = <value>:
        must be a finite number"`` (``... >= 0``); ``"<name> = ..."`` for a
        0-d array.
    """
    bad = ~np.isfinite(a) | (a < 0) if non_negative else ~np.isfinite(a)
    if bad.any():
        idx = np.unravel_index(int(np.flatnonzero(bad.ravel())[0]), a.shape)
        where = f"[{', '.join(map(str, idx))}]" if a.ndim else ""
        rule = "a finite number >= 0" if non_negative else "a finite number"
        raise ValueError(f"{name}{where} = {float(a[idx])!r}: must be {rule}")
    return a


class _RowError(ValueError):
    """A matrix row's error: row ``row``, message ``<name>[<row><rest>``."""

    def __init__(self, name: str, row: int, rest: str) -> None:
        super().__init__(f"{name}[{row}{rest}")
        self.row, self.rest = row, rest


def _entries(name: str, a: np.ndarray) -> None:
    if a.ndim != 2:
        finite_entries(name, a, non_negative=True)
        return
    bad = ~np.isfinite(a) | (a < 0)
    if bad.any():
        r, c = np.unravel_index(int(np.flatnonzero(bad.ravel())[0]), a.shape)
        raise _RowError(name, int(r), f", {c}] = {float(a[r, c])!r}: must be a finite number >= 0")


def _total(a: np.ndarray, axis: int | None = None) -> np.ndarray:
    """Sums of finite non-negative entries; an overflow is an infinite sum, which
    the sum check refuses, not a warning."""
    with np.errstate(over="ignore"):
        return a.sum(axis=axis)


def _sums(name: str, sums: np.ndarray, normalised: bool, tol: float, rows: bool) -> None:
    if normalised:
        bad = np.abs(sums - 1.0) > tol
        rule = f"must sum to 1 (within {tol:g})"
    else:
        bad = ~(sums > 0)
        rule = "must have a positive sum"
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        if rows:
            raise _RowError(name, i, f"] sums to {float(sums[i])!r}: {rule}")
        raise ValueError(f"{name} sums to {float(sums[i])!r}: {rule}")


def prob_vector(
    name: str,
    values: object,
    *,
    length: int | None = None,
    normalised: bool = True,
    tol: float = NORM_TOL,
    allow_zero: bool = False,
) -> np.ndarray:
    """``values`` as a 1-D ``float64`` probability vector: every entry finite
    and ``>= 0``; the sum within ``tol`` of 1 if ``normalised``, else (weights)
    positive, or anything (zero included) with ``allow_zero``.

    Raises
    ------
    ValueError
        ``"<name>[<i>] = <value>: must be a finite number >= 0"``, ``"<name>
        sums to <s>: must sum to 1 (within tol)"`` (``must have a positive
        sum``), ``"<name> has shape ...: expected (length,)"``.
    """
    a = _as_float(name, values)
    if a.ndim != 1 or (length is not None and a.shape[0] != length) or a.size == 0:
        raise _shape_error(name, a.shape, f"({'V' if length is None else length},)")
    _entries(name, a)
    if not allow_zero:
        _sums(name, np.array([_total(a)]), normalised, tol, rows=False)
    return a


def as_floats(name: str, values: object) -> np.ndarray:
    """``values`` (a number or an array of numbers, any shape) as ``float64``;
    the entries are not checked.

    Raises
    ------
    ValueError
        ``"<name> = ...: must be a number or an array of numbers"``.
    """
    if not isinstance(values, str | bytes):
        try:
            return np.asarray(values, dtype=np.float64)
        except (TypeError, ValueError):
            pass
    raise ValueError(f"{name} = {values!r}: must be a number or an array of numbers")


def float_array(name: str, values: object, *, length: int | None = None) -> np.ndarray:
    """``values`` as a 1-D ``float64`` array (entries unchecked but for the type).

    Raises
    ------
    ValueError
        ``"<name> = ...: must be a number or an array of numbers"`` or
        ``"<name> has shape ...: expected (length,)"``.
    """
    a = as_floats(name, values)
    if a.ndim != 1 or (length is not None and a.shape[0] != length):
        raise _shape_error(name, a.shape, f"({'n' if length is None else length},)")
    return a


def prob_matrix(
    name: str,
    values: object,
    *,
    rows: int | None = None,
    cols: int | None = None,
    normalised: bool = True,
    tol: float = NORM_TOL,
    row_ids: Sequence[int] | None = None,
    row_note: Callable[[int], str] | None = None,
) -> np.ndarray:
    """``values`` as a 2-D ``float64`` matrix whose every row is a probability
    vector (:func:`prob_vector`), checked in one vectorised pass.

    ``row_ids`` numbers the rows in the messages (row ``r`` is called
    ``row_ids[r]``, e.g. a tree node); ``row_note(r)`` is appended to a message
    about row ``r`` (e.g. the context the row was computed for).

    Raises
    ------
    ValueError
        ``"<name>[<r>, <c>] = <value>: must be a finite number >= 0"``,
        ``"<name>[<r>] sums to <s>: must sum to 1 (within tol)"``, ``"<name>
        has shape ...: expected (rows, cols)"``.
    """
    a = values if type(values) is np.ndarray and values.dtype == np.float64 else None
    if a is None:
        a = _as_float(name, values)
    # fast path, two passes: NaN fails the min, inf and a wrong total fail the sums
    shape = a.shape
    if (
        len(shape) == 2
        and (rows is None or shape[0] == rows)
        and (cols is None or shape[1] == cols)
        and a.size
        and a.min() >= 0
    ):
        if normalised and shape[0] == 1:  # one row: a Python float, no array temporaries
            if abs(float(_total(a)) - 1.0) <= tol:
                return a
        sums = _total(a, axis=1)
        if normalised:
            if 1.0 - tol <= sums.min() and sums.max() <= 1.0 + tol:
                return a
        elif sums.min() > 0 and sums.max() < np.inf:
            return a
    want = f"({'n' if rows is None else rows}, {'V' if cols is None else cols})"
    if a.ndim != 2 or (rows is not None and a.shape[0] != rows):
        raise _shape_error(name, a.shape, want)
    if cols is not None and a.shape[1] != cols:
        raise _shape_error(name, a.shape, want)
    try:
        _entries(name, a)
        _sums(name, _total(a, axis=1), normalised, tol, rows=True)
    except _RowError as e:
        rid = e.row if row_ids is None else row_ids[e.row]
        note = "" if row_note is None else row_note(e.row)
        raise ValueError(f"{name}[{rid}{e.rest}{note}") from None
    return a
