"""The result of one operation of the scaled pool (SPEC §4.7)."""

from __future__ import annotations

from dataclasses import dataclass

from golden.kvpool.errors import PoolErr

__all__ = ["Result"]


@dataclass(frozen=True, slots=True)
class Result:
    """One operation's result, SPEC §4.7's fields in order.

    An operation that fails raises :class:`golden.kvpool.PoolError` (with the
    class as its ``code``) and changes nothing, so a returned result always
    has ``code == PoolErr.NONE``.

    Attributes
    ----------
    code : PoolErr
        ``NONE``.
    value : tuple of int
        The operation's value: lookup ``(hit, loc, addr)``; insert and fill
        ``(page,)``; commit ``(pages freed,)``; release ``(pages freed, HBM
        slots returned)``; spill ``(victims spilled,)``; share ``(M,)``; fork
        and score ``()``.
    spilled : int
        Victims an allocation of this operation spilled (0 or 1; insert and
        fill only: a ``spill(n)``'s victims are its value).
    free_pages, spec_pages, committed_pages, hbm_used : int
        The counts after the operation (``committed_pages``: on chip).
    """

    code: PoolErr
    value: tuple[int, ...]
    spilled: int
    free_pages: int
    spec_pages: int
    committed_pages: int
    hbm_used: int

    @property
    def counts(self) -> tuple[int, int, int, int]:
        """``(free_pages, spec_pages, committed_pages, hbm_used)``."""
        return (self.free_pages, self.spec_pages, self.committed_pages, self.hbm_used)
