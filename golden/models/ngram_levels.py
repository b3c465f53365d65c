"""The check of an :class:`~golden.models.NGramModel`'s count tables (its ``levels``).

Whatever :meth:`NGramModel.train` produces and :meth:`NGramModel.load` reads
back: per context length ``k``, sorted distinct context codes, the offsets of
their entries, the next bytes and their counts, and each context's total. A
table that is not one raises ``ValueError`` naming the array and the entry,
before anything is computed from it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from checks import int_array

__all__ = ["check_levels"]

_FIELDS = ("ctx", "start", "nxt", "cnt", "total")


def _increasing(name: str, a: np.ndarray, what: str) -> None:
    """``ValueError`` naming the first entry of ``a`` not above the one before it."""
    bad = np.flatnonzero(np.diff(a) <= 0)
    if bad.size:
        i = int(bad[0]) + 1
        raise ValueError(
            f"{name}[{i}] = {int(a[i])}: must be greater than {name}[{i - 1}] ({what})"
        )


def _check_level(k: int, lv: object) -> None:
    name = f"levels[{k}]"
    if isinstance(lv, str | bytes) or not isinstance(lv, Sequence) or len(lv) != 5:
        raise ValueError(f"{name}: must be (ctx, start, nxt, cnt, total)")
    names = [f"{name}.{f}" for f in _FIELDS]
    # a context of k bytes is a k-byte big-endian code
    ctx = int_array(names[0], lv[0], 0, (1 << (8 * k)) - 1)
    start = int_array(names[1], lv[1], 0, length=ctx.size + 1)
    nxt = int_array(names[2], lv[2], 0, 255)
    cnt = int_array(names[3], lv[3], 1, length=nxt.size)
    total = int_array(names[4], lv[4], 0, length=ctx.size)
    _increasing(names[0], ctx, "sorted, distinct")
    if start[0] != 0 or start[-1] != nxt.size:
        raise ValueError(f"{names[1]} = {start!r}: must run from 0 to len({names[2]}) = {nxt.size}")
    _increasing(names[1], start, "every context has a next byte")
    if ctx.size:
        with np.errstate(over="ignore"):
            sums = np.add.reduceat(cnt, start[:-1])
        bad = np.flatnonzero(sums != total)
        if bad.size:
            i = int(bad[0])
            raise ValueError(
                f"{names[4]}[{i}] = {int(total[i])}: must be the sum of its counts, {int(sums[i])}"
            )


def check_levels(levels: object, order: int) -> None:
    """``ValueError`` unless ``levels`` holds ``order`` count tables as
    :meth:`~golden.models.NGramModel.train` makes them.

    Level ``k`` is ``(ctx, start, nxt, cnt, total)``, integer arrays: ``ctx``
    the contexts' ``k``-byte codes, increasing; ``start`` (``len(ctx) + 1``)
    the offsets of their entries in ``nxt`` and ``cnt``, increasing from 0 to
    ``len(nxt)``; ``nxt`` the next bytes ``0 .. 255``; ``cnt`` their counts
    (``>= 1``); ``total`` each context's sum of counts.

    Raises
    ------
    ValueError
        Naming the level and the entry, e.g. ``"levels[1].nxt[4] = 300: must be
        an integer in 0 .. 255"``.
    """
    if isinstance(levels, str | bytes) or not isinstance(levels, Sequence):
        raise ValueError(f"levels = {levels!r}: must be a list of (ctx, start, nxt, cnt, total)")
    if len(levels) != order:
        raise ValueError(f"levels: {len(levels)} levels given, order = {order} needs {order}")
    for k, lv in enumerate(levels):
        _check_level(k, lv)
