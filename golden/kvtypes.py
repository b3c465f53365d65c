"""The KV block table's vocabulary: its entry record, error classes and argument checks.

:class:`Entry` is one entry of the table (SPEC §4.1), :class:`KVErr` the error
classes of SPEC §4.3 (the RTL's result codes) and :class:`KVError` the
``ValueError`` that carries one. The checks (:func:`as_int`, :func:`as_mask`,
:func:`as_flag`) convert an operation's arguments or raise a :class:`KVError`
naming the field, with the class a range error of that field has in the RTL.
All are re-exported by :mod:`golden.kvcache`.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from enum import IntEnum

import numpy as np

__all__ = ["INVALID_ENTRY", "Entry", "KVErr", "KVError", "as_flag", "as_int", "as_mask"]


@dataclass(frozen=True, slots=True)
class Entry:
    """One block-table entry (SPEC §4.1); an invalid entry has every field zero.

    Attributes
    ----------
    valid, committed : bool
    seqs : int
        Bit ``s`` set iff sequence ``s`` sees the entry.
    layer, pos, owner, page : int
    """

    valid: bool
    committed: bool
    seqs: int
    layer: int
    pos: int
    owner: int
    page: int


#: The fields of an invalid entry (every one zero).
INVALID_ENTRY = Entry(False, False, 0, 0, 0, 0, 0)


class KVErr(IntEnum):
    """Error classes of SPEC §4.3, the RTL's 4-bit result ``code`` (``hw.kv_pool``).

    ``FIELD`` covers what the RTL's port widths cannot express (``layer``,
    ``pos``, ``view``, ``accept`` or ``committed`` out of range, wrong types);
    ``TWO_COMMITTED`` is the commit check the RTL leaves to its caller.
    """

    NONE = 0
    SEQ_RANGE = 1  # seq (or fork's src) >= seqs
    DST_RANGE = 2  # fork's dst >= seqs
    OWNER_RANGE = 3  # owner >= n_nodes
    SEEN_COMMITTED = 4  # insert: seq already sees (layer, pos) committed
    SPEC_DUP = 5  # insert: speculative (seq, layer, pos, owner) exists
    TABLE_FULL = 6  # insert: no free entry
    NO_PAGE = 7  # insert: no free page
    NO_SPEC = 8  # commit: seq has no speculative entry
    ROOT_CLEAR = 9  # commit: accept bit 0 clear
    TWO_COMMITTED = 10  # commit: would leave two committed entries at one (layer, pos)
    SAME_SEQ = 11  # fork: src == dst
    SRC_EMPTY = 12  # fork: src sees no committed entry
    DST_BUSY = 13  # fork: dst already sees an entry
    NOTHING_SEEN = 14  # release: seq sees no entry
    FIELD = 15  # any other field out of range or of the wrong type


class KVError(ValueError):
    """A bad operation (SPEC §4.3): a ``ValueError`` naming the field, with its class.

    Attributes
    ----------
    code : KVErr
        The error class (the RTL reports the same code).
    """

    def __init__(self, message: str, code: KVErr = KVErr.FIELD) -> None:
        super().__init__(message)
        self.code = KVErr(code)


_RANGE_CODE = {"seq": KVErr.SEQ_RANGE, "src": KVErr.SEQ_RANGE, "dst": KVErr.DST_RANGE}
_RANGE_CODE["owner"] = KVErr.OWNER_RANGE


def _index(name: str, value: object, what: str, code: KVErr) -> int:
    """``operator.index(value)``, else a :class:`KVError` saying ``value`` must be ``what``."""
    if isinstance(value, (bool, np.bool_)):
        raise KVError(f"{name} = {value!r}: must be {what}, not a bool", code)
    try:
        return operator.index(value)
    except TypeError:
        raise KVError(f"{name} = {value!r}: must be {what}", code) from None


def as_int(name: str, value: object, lo: int, hi: int) -> int:
    """``value`` as a Python int in ``lo..hi``, else ``ValueError`` naming ``name``."""
    code = _RANGE_CODE.get(name, KVErr.FIELD)
    v = _index(name, value, "an integer", code)
    if not lo <= v <= hi:
        raise KVError(f"{name} = {v}: out of range {lo}..{hi}", code)
    return v


def as_mask(name: str, value: object, bits: int) -> int:
    """``value`` as a ``bits``-bit mask, else ``ValueError`` naming ``name``."""
    code = KVErr.FIELD
    v = _index(name, value, "an integer mask", code)
    if not 0 <= v < (1 << bits):
        raise KVError(f"{name} = {v:#x}: out of range 0 .. 2**{bits} - 1 (n_nodes = {bits})", code)
    return v


def as_flag(name: str, value: object) -> bool:
    """``value`` as a bool (``bool``, numpy bool or integer 0/1)."""
    code = KVErr.FIELD
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    try:
        v = operator.index(value)
    except TypeError:
        raise KVError(f"{name} = {value!r}: must be a bool (or 0/1)", code) from None
    if v not in (0, 1):
        raise KVError(f"{name} = {v}: must be a bool (or 0/1)", code)
    return bool(v)
