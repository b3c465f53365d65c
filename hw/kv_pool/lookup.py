"""Lookups (two independent ports, ``draft`` and ``verify``): the query's match vector.

A query ``(seq, layer, pos, view)`` hits the lowest-numbered valid entry
with ``seqs[seq]``, ``layer``, ``pos`` and (``committed`` or ``view[owner]``);
its page is that entry's index. The reply stage (one cycle, or two with
``TARGET="fpga"``) is the variant's (:meth:`hw.kv_pool.variant.Variant.lookup`).
"""

from amaranth import Module

from hw.common import net
from hw.kv_pool.state import Dims, Table
from hw.kv_pool.variant import Stream, Variant
from hw.kv_pool.vectors import match, select, seq_vec

__all__ = ["lookup"]


def lookup(
    m: Module, dims: Dims, table: Table, variant: Variant, port: str, qp: Stream, rp: Stream
) -> None:
    """Lookup port ``port``: queries on ``qp``, replies on ``rp``."""
    qq = qp.payload
    q_seq_ok = qq.seq < dims.seqs
    s_vec = net(
        m,
        seq_vec(m, table.seqs_p, qq.seq, f"{port}_sbit")
        & match(m, table.layer_p, qq.layer, f"{port}_lay")
        & match(m, table.pos_p, qq.pos, f"{port}_pos")
        & (table.committed | select(m, table.owner_p, qq.view, f"{port}_vis")),
        f"{port}_match",
    )
    variant.lookup(port, qp, rp, s_vec, q_seq_ok)
