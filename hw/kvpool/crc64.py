"""Dedup tag step (SPEC §4.6 *Tags*): one CRC-64/ECMA-182 block per cycle, an XOR network."""

from functools import cache

from amaranth import Cat, Module, Signal, Value
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from hw.common import Param, check_params

__all__ = [
    "POLY",
    "BLOCK",
    "TAG_BITS",
    "BlockTag",
    "block_layout",
    "crc64",
    "tag_matrix",
    "matrix_tag",
]

#: the ECMA-182 polynomial (the x^64 term implied), not reflected
POLY = 0x42F0E1EBA9EA3693
#: tokens per tag (SPEC §4.6 *Tags*: ``BLOCK = 16``, fixed)
BLOCK = 16
#: bits of a tag
TAG_BITS = 64
#: bits of a token as the CRC reads it: 4 bytes, little-endian
WORD_BITS = 32
#: columns of the tag matrix: the previous tag, then ``BLOCK`` words
COLUMNS = TAG_BITS + BLOCK * WORD_BITS
_MASK = (1 << TAG_BITS) - 1


def crc64(data_bytes: bytes, init: int) -> int:
    """CRC-64/ECMA-182 of ``data_bytes`` from register ``init``, bit by bit (MSB
    first, no final XOR): the definition the tag matrix is computed from."""
    c = init
    for byte in data_bytes:
        c ^= byte << (TAG_BITS - 8)
        for _ in range(8):
            c = ((c << 1) ^ POLY) & _MASK if c >> (TAG_BITS - 1) else (c << 1) & _MASK
    return c


def _column_input(j: int) -> tuple[int, bytes]:
    """``(init, bytes)`` with only input bit ``j`` set: bits ``0 .. 63`` the previous
    tag's, then bit ``b`` of token ``t`` at ``64 + 32 t + b``."""
    if j < TAG_BITS:
        return 1 << j, bytes(BLOCK * 4)
    t, b = divmod(j - TAG_BITS, WORD_BITS)
    buf = bytearray(BLOCK * 4)
    buf[4 * t + b // 8] = 1 << (b % 8)  # little-endian: byte b // 8 of the word
    return 0, bytes(buf)


@cache
def tag_matrix() -> tuple[int, ...]:
    """The tag step as a GF(2) matrix: row ``i`` (an int of :data:`COLUMNS` bits) has
    bit ``j`` set when input bit ``j`` (:func:`_column_input`'s numbering) flips tag
    bit ``i``. The CRC without final XOR is linear in ``(init, data)`` jointly, so
    column ``j`` is the CRC of input bit ``j`` alone."""
    rows = [0] * TAG_BITS
    for j in range(COLUMNS):
        col = crc64(*reversed(_column_input(j)))
        for i in range(TAG_BITS):
            if (col >> i) & 1:
                rows[i] |= 1 << j
    return tuple(rows)


def matrix_tag(prev: int, tokens: list[int]) -> int:
    """The tag :func:`tag_matrix` gives for ``prev`` and ``BLOCK`` tokens (each ``0 ..
    2**32 - 1``): what :class:`BlockTag` computes, in Python."""
    vec = prev
    for t, tok in enumerate(tokens):
        vec |= tok << (TAG_BITS + WORD_BITS * t)
    return sum((bin(row & vec).count("1") & 1) << i for i, row in enumerate(tag_matrix()))


def block_layout(token_bits: int) -> data.StructLayout:
    """Input beat: the previous block's tag and the ``BLOCK`` tokens of this block."""
    return data.StructLayout({"prev": TAG_BITS, "tokens": data.ArrayLayout(token_bits, BLOCK)})


class BlockTag(wiring.Component):
    """One dedup tag step per cycle: ``T_k`` from ``T_{k-1}`` and block ``k``'s tokens.

    ``tag = CRC-64/ECMA-182(init = prev, the BLOCK = 16 tokens as 4-byte
    little-endian words)``: polynomial ``0x42F0E1EBA9EA3693``, not reflected,
    no final XOR (SPEC §4.6 *Tags*; bit-exact with
    ``golden.kvpool.crc.block_tag``). Token bits at and above ``TOKEN_BITS``
    are zero.

    Protocol: a beat on ``i`` is taken in every cycle ``i_valid`` is high (no
    backpressure). Latency 1: in the next cycle ``o_valid`` is high and
    ``tag`` holds the beat's tag. Throughput: one block per cycle, back to
    back. ``tag`` keeps its value while ``o_valid`` is low (0 after reset).
    There is no invalid input: every value of ``i`` is a block.

    Implementation: the CRC is linear over GF(2) in the previous tag and the
    data jointly, so each tag bit is the XOR of a fixed subset of the
    ``64 + 16 * TOKEN_BITS`` input bits. The subsets are the rows of a 64 x 576
    matrix (:func:`tag_matrix`) computed at elaboration time from the
    bit-serial definition (:func:`crc64`); each row is one XOR reduction
    (synthesis builds a balanced tree: at most ``ceil(log2(64 + 16 *
    TOKEN_BITS))`` levels of 2-input XOR, 9 at ``TOKEN_BITS = 17``) into the ``tag``
    register. Design notes: ``docs/blocks/kvpool_leaves.md``.

    Parameters
    ----------
    TOKEN_BITS : int
        Bits of a token, ``1 .. 32`` (default 17; SPEC §4.9's pools use 1 ..
        17, 32 is the whole word the CRC reads).

    Members
    -------
    i_valid : In(1)
        A block is presented on ``i`` this cycle.
    i : In(block_layout(TOKEN_BITS))
        ``prev`` (the previous tag, 0 for block 0) and ``tokens[0 .. 15]``.
    o_valid : Out(1)
        Registered ``i_valid``.
    tag : Out(64)
        The registered tag of the block taken in the previous cycle.
    """

    #: the block's parameters (:class:`hw.common.Param`: default, range, small value)
    PARAMS = {"TOKEN_BITS": Param(default=17, lo=1, hi=32, small=4)}

    def __init__(self, *, TOKEN_BITS: int = PARAMS["TOKEN_BITS"].default) -> None:
        p = check_params(self.PARAMS, {"TOKEN_BITS": TOKEN_BITS})
        self.TOKEN_BITS = p["TOKEN_BITS"]
        super().__init__(
            {
                "i_valid": In(1),
                "i": In(block_layout(self.TOKEN_BITS)),
                "o_valid": Out(1),
                "tag": Out(TAG_BITS),
            }
        )

    def elaborate(self, platform) -> Module:
        m = Module()
        tb = self.TOKEN_BITS
        inputs: list[Value | None] = [self.i.prev[j] for j in range(TAG_BITS)]
        for t in range(BLOCK):
            word = self.i.tokens[t]
            inputs += [word[b] if b < tb else None for b in range(WORD_BITS)]
        nxt = Signal(TAG_BITS)
        for i, row in enumerate(tag_matrix()):
            terms = [v for j, v in enumerate(inputs) if (row >> j) & 1 and v is not None]
            m.d.comb += nxt[i].eq(Cat(*terms).xor() if terms else 0)
        m.d.sync += self.o_valid.eq(self.i_valid)
        with m.If(self.i_valid):
            m.d.sync += self.tag.eq(nxt)
        return m
