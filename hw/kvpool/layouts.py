"""The scaled pool's opcodes, error codes and stream layouts (SPEC §4.6 - §4.8).

Pure data: every layout is a function of the pool's parameters, so that the
testbench and the pool build the same one.

Ordering (the contract the testbench's scoreboard checks): the transactions
accepted in one cycle (``valid & ready``) are, in this order, lookup port 0's,
lookup port 1's, then the operation's; they come after everything accepted
in earlier cycles. The pool's replies (per port, in order) and results (in
order) are those of :class:`golden.kvpool.KVPool` running the transactions in
that order. The pool keeps this true by withholding ``ready``.
"""

from amaranth.lib import data, enum
from amaranth.utils import bits_for

from hw.common import idx_bits

__all__ = [
    "PoolOp",
    "PoolCode",
    "addr_bits",
    "value_bits",
    "pool_op_layout",
    "pool_result_layout",
    "pool_query_layout",
    "pool_reply_layout",
]


class PoolOp(enum.Enum, shape=3):
    """Operation port opcodes (SPEC §4.6; lookups have ports of their own)."""

    INSERT = 0
    COMMIT = 1
    FORK = 2
    RELEASE = 3
    SPILL = 4
    FILL = 5
    SCORE = 6
    SHARE = 7


class PoolCode(enum.Enum, shape=5):
    """Result ``code``: SPEC §4.8's classes, numbered as ``golden.kvpool.PoolErr``.

    ``NOT_CHAIN`` (10) is never reported by the RTL (it trusts the sampler's
    ancestor chain); ``FIELD`` (15) only for a field the port can express out
    of range (spill's ``n`` above ``PAGES``).
    """

    NONE = 0
    SEQ_RANGE = 1
    DST_RANGE = 2
    OWNER_RANGE = 3
    SEEN_COMMITTED = 4
    SPEC_DUP = 5
    TABLE_FULL = 6
    NO_PAGE = 7
    NO_SPEC = 8
    ROOT_CLEAR = 9
    NOT_CHAIN = 10
    SAME_SEQ = 11
    SRC_EMPTY = 12
    DST_BUSY = 13
    NOTHING_SEEN = 14
    FIELD = 15
    POS_GAP = 16
    DEPTH_RANGE = 17
    NOT_COMMITTED = 18
    ON_CHIP = 19


def addr_bits(pages: int, hbm_pages: int) -> int:
    """Bits of a PTE's address: a page ``0 .. PAGES - 1`` or an HBM slot."""
    return max(idx_bits(pages), idx_bits(max(hbm_pages, 1)))


def value_bits(pages: int, pos_bits: int) -> int:
    """Bits of a result's ``value``: a page, a count of pages, or share's ``M``."""
    return max(idx_bits(pages), bits_for(pages), pos_bits + 1)


def pool_op_layout(
    seqs: int, n_nodes: int, pos_bits: int, token_bits: int, pages: int
) -> data.StructLayout:
    """Operation beat. Fields an opcode does not use are ignored.

    ``seq`` is fork's ``src``; ``dst`` is fork's and share's; ``owner``,
    ``committed``, ``token`` are insert's; ``accept`` and ``acc_len`` (the
    accepted path's nodes, ``0 .. N_NODES``) commit's; ``n``
    spill's (``0 .. PAGES``) and share's token count (``0 .. 2**POS_BITS``;
    share's tokens follow on the pool's ``tok`` stream), wide enough that a
    value above either is ``FIELD``; ``s`` score's (``0 .. CMAX = 7``).
    """
    sb = idx_bits(seqs)
    return data.StructLayout(
        {
            "op": PoolOp,
            "seq": sb,
            "dst": sb,
            "pos": pos_bits,
            "owner": idx_bits(n_nodes),
            "committed": 1,
            "token": token_bits,
            "accept": n_nodes,
            "acc_len": bits_for(n_nodes),
            "n": max(bits_for(pages), pos_bits + 2),
            "s": 3,
        }
    )


def pool_result_layout(pages: int, hbm_pages: int, pos_bits: int) -> data.StructLayout:
    """Result beat, one per operation (SPEC §4.7).

    ``code`` (``error = code != NONE``); ``value``: insert and fill the page,
    commit the pages freed, release the pages freed, spill the victims
    spilled, share ``M``; ``value2``: release's HBM slots returned;
    ``spilled``: victims an insert's or fill's allocation spilled (0, 1);
    the counts after the operation. A failed operation has ``value``,
    ``value2`` and ``spilled`` 0 and the counts unchanged.
    """
    cb = bits_for(pages)
    hb = bits_for(hbm_pages)
    return data.StructLayout(
        {
            "op": PoolOp,
            "error": 1,
            "code": PoolCode,
            "value": value_bits(pages, pos_bits),
            "value2": hb,
            "spilled": 1,
            "free_pages": cb,
            "spec_pages": cb,
            "committed_pages": cb,
            "hbm_used": hb,
        }
    )


def pool_query_layout(seqs: int, n_nodes: int, pos_bits: int) -> data.StructLayout:
    """Lookup query: the key and the requesting node's mask row ``view``."""
    return data.StructLayout({"seq": idx_bits(seqs), "pos": pos_bits, "view": n_nodes})


def pool_reply_layout(pages: int, hbm_pages: int) -> data.StructLayout:
    """Lookup reply: ``error`` (``seq >= SEQS``; then no hit), ``hit``, ``loc``
    (0 chip, 1 HBM) and ``addr`` (page or HBM slot; all 0 on a miss)."""
    return data.StructLayout({"error": 1, "hit": 1, "loc": 1, "addr": addr_bits(pages, hbm_pages)})
