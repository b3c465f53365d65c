"""The scaled pool's error classes (SPEC §4.8) and its argument checks.

:class:`PoolErr` numbers the classes as the scaled pool's RTL will (a 5-bit
result code): 0 - 15 keep the names and values of
:class:`golden.kvtypes.KVErr` (the flat pool's 4-bit code, unchanged), except
that class 10 is ``NOT_CHAIN`` at scale (the flat pool's ``TWO_COMMITTED``);
16 - 19 are new. :class:`PoolError` is the ``ValueError`` that carries one.

The checks convert an operation's argument with :mod:`checks.values` (the
project's message family, ``<name> = <value!r>: must be ...``) and raise a
:class:`PoolError` with the class that argument's range error has.
"""

from __future__ import annotations

from enum import IntEnum

from checks.arrays import int_array
from checks.values import boolean, integer

__all__ = ["PoolErr", "PoolError", "as_int", "as_bool", "as_tokens"]


class PoolErr(IntEnum):
    """Error classes of SPEC §4.8: the scaled pool's 5-bit result ``code``."""

    NONE = 0
    SEQ_RANGE = 1  # seq (fork: src) >= SEQS
    DST_RANGE = 2  # fork, share: dst >= SEQS
    OWNER_RANGE = 3  # owner >= N_NODES
    SEEN_COMMITTED = 4  # insert: pos < len(seq)
    SPEC_DUP = 5  # speculative insert: node owner of seq's active tree is valid
    TABLE_FULL = 6  # a segment, block table or tree slot is needed and none is free
    NO_PAGE = 7  # a page is needed, none is free and no spill is possible
    NO_SPEC = 8  # commit: seq has no active tree
    ROOT_CLEAR = 9  # commit: accept bit 0 clear
    NOT_CHAIN = 10  # commit: the positions of acc are not len, len + 1, ...
    SAME_SEQ = 11  # fork: src == dst
    SRC_EMPTY = 12  # fork: len(src) = 0
    DST_BUSY = 13  # fork, share: dst has len > 0 or an active tree
    NOTHING_SEEN = 14  # release: len(seq) = 0 and no active tree
    FIELD = 15  # any other argument out of range or of the wrong type
    POS_GAP = 16  # committed insert: pos > len(seq)
    DEPTH_RANGE = 17  # speculative insert: pos outside lo .. lo + MAX_DEPTH - 1
    NOT_COMMITTED = 18  # fill, score: pos >= len(seq)
    ON_CHIP = 19  # fill: the position is on chip


class PoolError(ValueError):
    """A bad operation of the scaled pool: a ``ValueError`` naming the argument
    or the condition, with its class.

    Attributes
    ----------
    code : PoolErr
        The error class (the RTL reports the same code).
    """

    def __init__(self, message: str, code: PoolErr = PoolErr.FIELD) -> None:
        super().__init__(message)
        self.code = PoolErr(code)


def as_int(name: str, value: object, lo: int, hi: int, code: PoolErr = PoolErr.FIELD) -> int:
    """``value`` as an ``int`` in ``lo .. hi`` (:func:`checks.values.integer`).

    Raises
    ------
    PoolError
        With ``code``: ``"<name> = <value!r>: must be an integer in lo .. hi"``.
    """
    try:
        return integer(name, value, lo, hi)
    except ValueError as e:
        raise PoolError(str(e), code) from None


def as_bool(name: str, value: object) -> bool:
    """``value`` as a ``bool`` (``True``, ``False`` or a numpy bool; not 0 / 1).

    Raises
    ------
    PoolError
        ``FIELD``: ``"<name> = <value!r>: must be True or False"``.
    """
    try:
        return boolean(name, value)
    except ValueError as e:
        raise PoolError(str(e), PoolErr.FIELD) from None


def as_tokens(name: str, value: object, token_max: int, length_max: int) -> list[int]:
    """``value`` (a sequence of integers in ``0 .. token_max``, at most
    ``length_max`` of them) as a list of ``int``.

    Raises
    ------
    PoolError
        ``FIELD``: ``"<name>[<i>] = ...: must be an integer in 0 .. token_max"``,
        ``"<name> = ...: must be a sequence of integers"`` or ``"<name> = <n>
        tokens: must be at most <length_max>"``.
    """
    try:
        out = int_array(name, value, 0, token_max).tolist()
    except ValueError as e:
        raise PoolError(str(e), PoolErr.FIELD) from None
    if len(out) > length_max:
        raise PoolError(f"{name} = {len(out)} tokens: must be at most {length_max}", PoolErr.FIELD)
    return out
