"""The per-tree caches' key: a parent list as a tuple of Python ints.

Every other argument check of the golden model is :mod:`checks` (shared by
the whole project).
"""

from __future__ import annotations

from checks import int_array

__all__ = ["parents_key"]


def parents_key(parents: object) -> tuple[int, ...]:
    """``tuple(parents)`` of Python ints: the key of the per-tree caches.

    Entries that are not Python ints are checked (:func:`checks.int_array`):
    a numpy integer becomes an ``int``; a float, ``bool``, ``Decimal`` or
    string is refused, so that ``(-1, 0.0)`` can never hit the cache entry of
    ``(-1, 0)``.

    Raises
    ------
    ValueError
        ``"parents = <parents!r>: must be a sequence of integers"``, or
        ``"parents[<i>] = <value!r>: must be an integer"`` naming the entry.
    """
    try:
        key = tuple(parents)  # type: ignore[arg-type]
    except TypeError:
        raise ValueError(f"parents = {parents!r}: must be a sequence of integers") from None
    if not all(type(p) is int for p in key):
        key = tuple(int_array("parents", list(key)).tolist())
    return key
