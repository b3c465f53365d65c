"""The tree slots' command, stream and lookup layouts (hw/kvpool/treeslots.py), shared
with the pool and the testbench."""

from collections.abc import Mapping

from amaranth.lib import data, enum

from hw.common import idx_bits

__all__ = [
    "TsCmd",
    "TsOut",
    "LATENCY",
    "cmd_layout",
    "out_layout",
    "lookup_layout",
    "reply_layout",
    "node_word_layout",
]

#: cycles from a lookup to its reply
LATENCY = 2


class TsCmd(enum.Enum, shape=2):
    """``cmd.kind``."""

    OPEN = 0
    ADD = 1
    COMMIT = 2
    RELEASE = 3


class TsOut(enum.Enum, shape=2):
    """``out.kind``: an accepted node, a rejected node, the end of a COMMIT / RELEASE."""

    ACC = 0
    REJ = 1
    END = 2


def cmd_layout(p: Mapping[str, int]) -> data.StructLayout:
    """A command (``p``: every parameter of :class:`TreeSlots`, by name)."""
    return data.StructLayout(
        {
            "kind": TsCmd,
            "slot": idx_bits(p["TREES"]),
            "seq": idx_bits(p["SEQS"]),
            "node": idx_bits(p["N_NODES"]),
            "pos": p["POS_BITS"],
            "page": p["PAGE_BITS"],
            "token": p["TOKEN_BITS"],
            "accept": p["N_NODES"],
            "d0": idx_bits(p["MAX_DEPTH"]),
        }
    )


def out_layout(p: Mapping[str, int]) -> data.StructLayout:
    """A beat of a COMMIT / RELEASE's stream."""
    return data.StructLayout(
        {
            "kind": TsOut,
            "node": idx_bits(p["N_NODES"]),
            "page": p["PAGE_BITS"],
            "token": p["TOKEN_BITS"],
        }
    )


def lookup_layout(p: Mapping[str, int]) -> data.StructLayout:
    """A speculative lookup: slot, position, the ``N_NODES``-bit view."""
    return data.StructLayout(
        {"slot": idx_bits(p["TREES"]), "pos": p["POS_BITS"], "view": p["N_NODES"]}
    )


def reply_layout(p: Mapping[str, int]) -> data.StructLayout:
    """A lookup's reply (``page`` 0 on a miss)."""
    return data.StructLayout({"hit": 1, "page": p["PAGE_BITS"]})


def node_word_layout(p: Mapping[str, int]) -> data.StructLayout:
    """A node table word: depth ``pos - lo``, page, token."""
    return data.StructLayout(
        {"depth": idx_bits(p["MAX_DEPTH"]), "page": p["PAGE_BITS"], "token": p["TOKEN_BITS"]}
    )
