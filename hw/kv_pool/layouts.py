"""The KV pool's opcodes, error codes and stream layouts (SPEC §4.2, §4.3).

Pure data: every layout is a function of the pool's parameters, so that a
testbench, the co-simulation server and the pool itself build the same one.
"""

from amaranth.lib import data, enum
from amaranth.utils import bits_for

from hw.common import idx_bits

__all__ = [
    "GROUP",
    "PORTS",
    "Op",
    "ErrorCode",
    "op_layout",
    "result_layout",
    "query_layout",
    "reply_layout",
]

#: entries per group: the insert's per-group check bits, the lookups' grouped
#: first hit and (``TARGET="fpga"``) the entries one replica of a decision drives
GROUP = 16

#: the lookup ports
PORTS = ("draft", "verify")


class Op(enum.Enum, shape=2):
    """Operation port opcodes (SPEC §4.2)."""

    INSERT = 0
    COMMIT = 1
    FORK = 2
    RELEASE = 3


class ErrorCode(enum.Enum, shape=4):
    """Result ``code``: the error class of SPEC §4.3, numbered as ``golden.kvcache.KVErr``.

    ``TWO_COMMITTED`` (10) and ``FIELD`` (15) are never reported by the RTL:
    the port widths cannot express a ``layer``, ``pos``, ``view`` or
    ``accept`` out of range, and the commit check is left to the caller (see
    :class:`hw.kv_pool.KVPool`).
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
    TWO_COMMITTED = 10
    SAME_SEQ = 11
    SRC_EMPTY = 12
    DST_BUSY = 13
    NOTHING_SEEN = 14
    FIELD = 15


def op_layout(seqs: int, n_nodes: int, layer_bits: int, pos_bits: int) -> data.StructLayout:
    """Operation beat: ``op`` and its fields (``seq`` is fork's ``src``; ``accept`` is
    commit's mask; fields an opcode does not use are ignored)."""
    sb = idx_bits(seqs)
    return data.StructLayout(
        {
            "op": Op,
            "seq": sb,
            "dst": sb,
            "layer": layer_bits,
            "pos": pos_bits,
            "owner": idx_bits(n_nodes),
            "committed": 1,
            "accept": n_nodes,
        }
    )


def result_layout(entries: int, pages: int) -> data.StructLayout:
    """Result beat, one per operation: ``page`` / ``entry`` taken by an insert,
    ``freed`` (bit ``p``: page ``p`` freed by this commit or release), and the
    ``free_pages`` / ``valid_entries`` counts after the operation."""
    return data.StructLayout(
        {
            "op": Op,
            "error": 1,
            "code": ErrorCode,
            "page": idx_bits(pages),
            "entry": idx_bits(entries),
            "freed": pages,
            "free_pages": bits_for(pages),
            "valid_entries": bits_for(entries),
        }
    )


def query_layout(seqs: int, n_nodes: int, layer_bits: int, pos_bits: int) -> data.StructLayout:
    """Lookup query: the key and the requesting node's mask row ``view``."""
    return data.StructLayout(
        {"seq": idx_bits(seqs), "layer": layer_bits, "pos": pos_bits, "view": n_nodes}
    )


def reply_layout(pages: int) -> data.StructLayout:
    """Lookup reply: ``hit`` and ``page`` (0 on a miss); ``error``: ``seq`` out of range."""
    return data.StructLayout({"hit": 1, "error": 1, "page": idx_bits(pages)})
