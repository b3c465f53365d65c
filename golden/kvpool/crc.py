"""CRC-64/ECMA-182, table-driven, and the dedup tags built from it (SPEC §4.6 *Tags*).

CRC-64/ECMA-182: polynomial ``0x42F0E1EBA9EA3693``, input and output not
reflected, no final XOR; with initial value 0 its check value (the CRC of the
ASCII bytes ``"123456789"``) is ``0x6C40DF5F0B497347``. The tag of block
``k`` of a sequence is ``T_k = crc64(bytes of its BLOCK tokens, init=T_{k-1})``
with ``T_{-1} = 0``, each token as 4 bytes little-endian.

The pool computes every tag through :func:`block_tag`, looked up in this
module at each call, so that a test may replace it (a forced collision).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["POLY", "CHECK", "crc64", "block_tag", "tags_of"]

#: the ECMA-182 polynomial (the x^64 term implied)
POLY = 0x42F0E1EBA9EA3693
#: CRC-64/ECMA-182 of ``b"123456789"`` with initial value 0
CHECK = 0x6C40DF5F0B497347
_MASK = (1 << 64) - 1


def _table() -> tuple[int, ...]:
    out = []
    for byte in range(256):
        c = byte << 56
        for _ in range(8):
            c = ((c << 1) ^ POLY) & _MASK if c >> 63 else (c << 1) & _MASK
        out.append(c)
    return tuple(out)


_TABLE = _table()


def crc64(data: bytes, init: int = 0) -> int:
    """CRC-64/ECMA-182 of ``data`` from the register value ``init`` (MSB first).

    Parameters
    ----------
    data : bytes
        The bytes, in order.
    init : int
        The initial register, ``0 .. 2**64 - 1`` (a previous block's tag).

    Returns
    -------
    int
        The register after the last byte (no final XOR).
    """
    c = init
    table = _TABLE
    for b in data:
        c = ((c << 8) & _MASK) ^ table[(c >> 56) ^ b]
    return c


def block_tag(prev: int, tokens: Sequence[int]) -> int:
    """``T_k`` from ``T_{k-1} = prev`` over one block's tokens (4 bytes little-endian each).

    Parameters
    ----------
    prev : int
        The previous block's tag (0 for block 0).
    tokens : sequence of int
        The block's tokens, each ``0 .. 2**32 - 1``.

    Returns
    -------
    int
        The 64-bit tag.
    """
    return crc64(b"".join(t.to_bytes(4, "little") for t in tokens), prev)


def tags_of(tokens: Sequence[int], block: int) -> list[int]:
    """``[T_0, T_1, ...]`` over the whole blocks of ``tokens`` (through :func:`block_tag`)."""
    out = []
    t = 0
    for k in range(len(tokens) // block):
        t = block_tag(t, tokens[k * block : (k + 1) * block])
        out.append(t)
    return out
