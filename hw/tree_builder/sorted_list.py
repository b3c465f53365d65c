"""A sorted insertion list: one insertion per cycle, a parallel compare against every cell.

The dynamic builder (:mod:`hw.tree_builder.dynamic`) keeps two of them: the
next round's frontier (the ``W`` most confident of a round's new candidates)
and the rerank (the ``M - 1`` most confident candidates of the tree).
"""

from amaranth import Cat, Module, Mux, Signal, Value
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import bits_for

from hw.common import less_than, net, or_tree

__all__ = ["GROUP", "SortedList", "cell_layout", "groups"]

#: ``fpga=True``: cells per copy of the key (:attr:`SortedList.key_rep`)
GROUP = 16


def groups(cells: int) -> int:
    """Copies of the key a ``fpga=True`` list of ``cells`` cells takes: one per :data:`GROUP`."""
    return (cells + GROUP - 1) // GROUP


def cell_layout(key_bits: int, data_bits: int) -> data.StructLayout:
    """One cell: ``valid``, the sort ``key`` and the ``data`` carried along."""
    return data.StructLayout({"valid": 1, "key": key_bits, "data": data_bits})


class SortedList(wiring.Component):
    """``CELLS`` cells sorted by key, larger first; equal keys in insertion order.

    Every cycle with ``ins`` high inserts ``(key, data)`` after every valid
    cell whose key is ``>= key`` (so among equal keys the earlier insertion
    stays first: SPEC §3.7's order when candidates are inserted in creation
    order), shifting the cells behind it down by one. Only the cells under
    ``limit`` (a thermometer code, cells ``0 .. L-1``; ``L`` may be 0) take
    part: a cell pushed past cell ``L - 1`` leaves the list, and an insertion
    that would land past it is dropped. ``clear`` empties the list (it wins
    over ``ins``). ``limit`` must not change while the list holds cells.

    Per cell: one comparator (:func:`hw.common.less_than`) and a 3-way
    select, so the insertion is ``O(log KEY_BITS)`` levels whatever ``CELLS``.

    ``fpga=True``: cells ``GROUP * g ..`` compare with, and take, copy ``g``
    of the key (``key_rep``, one register per group held by the caller, equal
    to ``key``), so no net reaches every cell; the comparators are Amaranth's
    ``<`` (carry chains). Same behaviour, cycle for cycle.

    Parameters
    ----------
    CELLS : int
        Physical cells (``>= 1``).
    KEY_BITS, DATA_BITS : int
        Widths of the key and of the data carried with it (``>= 1``).
    fpga : bool
        Per-group copies of the key and carry-chain comparators (default ``False``).

    Members
    -------
    clear, ins : In(1)
        Empty the list; insert ``key`` / ``data`` this cycle.
    key : In(KEY_BITS)
    data : In(DATA_BITS)
    key_rep : In(ArrayLayout(KEY_BITS, groups(CELLS)))
        ``fpga=True`` only: the key's copies, each equal to ``key``.
    limit : In(CELLS)
        Thermometer code of the cells in use.
    cells : Out(ArrayLayout(cell_layout(KEY_BITS, DATA_BITS), CELLS))
        The list, best first (registers); cells at and past the limit are invalid.
    count : Out(bits_for(CELLS))
        Valid cells (combinational, from the registers).
    kept : Out(1)
        Combinational, for the value on ``key``: it lands inside the limit.
    evict, evict_data : Out(1), Out(DATA_BITS)
        Combinational: inserting ``key`` pushes a valid cell out of the limit
        (``kept`` and the last cell inside the limit valid), and that cell's data.
    """

    def __init__(self, *, CELLS: int, KEY_BITS: int, DATA_BITS: int, fpga: bool = False) -> None:
        self.CELLS, self.KEY_BITS, self.DATA_BITS, self.fpga = CELLS, KEY_BITS, DATA_BITS, fpga
        cl = cell_layout(KEY_BITS, DATA_BITS)
        reps = {"key_rep": In(data.ArrayLayout(KEY_BITS, groups(CELLS)))} if fpga else {}
        super().__init__(
            {
                "clear": In(1),
                "ins": In(1),
                "key": In(KEY_BITS),
                **reps,
                "data": In(DATA_BITS),
                "limit": In(CELLS),
                "cells": Out(data.ArrayLayout(cl, CELLS)),
                "count": Out(bits_for(CELLS)),
                "kept": Out(1),
                "evict": Out(1),
                "evict_data": Out(DATA_BITS),
            }
        )

    def elaborate(self, platform) -> Module:
        m = Module()
        N = self.CELLS
        cl = cell_layout(self.KEY_BITS, self.DATA_BITS)
        cells = [Signal(cl, name=f"cell{j}") for j in range(N)]
        m.d.comb += [self.cells[j].eq(cells[j]) for j in range(N)]

        # the key cell j compares with and takes
        keys = [self.key_rep[j // GROUP] if self.fpga else self.key for j in range(N)]

        def lt(j: int) -> Value:
            if self.fpga:
                return cells[j].key < keys[j]
            return less_than(m, cells[j].key, keys[j], f"lt{j}")

        # ge[j]: cell j is in use, valid and ranks before the new key (a thermometer)
        ge = [net(m, cells[j].valid & self.limit[j] & ~lt(j), f"ge{j}") for j in range(N)]
        # the last cell inside the limit, one-hot
        last = [self.limit[j] & (~self.limit[j + 1] if j + 1 < N else 1) for j in range(N)]
        full_ge = or_tree([last[j] & ge[j] for j in range(N)])
        m.d.comb += [
            self.kept.eq(self.limit[0] & ~full_ge),
            self.evict.eq(self.kept & or_tree([last[j] & cells[j].valid for j in range(N)])),
            self.evict_data.eq(or_tree([Mux(last[j], cells[j].data, 0) for j in range(N)])),
        ]
        # count: the valid cells are a prefix; one-hot of its end, encoded
        ends = [cells[j].valid & (~cells[j + 1].valid if j + 1 < N else 1) for j in range(N)]
        cw = bits_for(N)
        m.d.comb += self.count.eq(
            Cat(or_tree([ends[j] for j in range(N) if (j + 1) >> b & 1]) for b in range(cw))
        )

        with m.If(self.clear):
            m.d.sync += [c.valid.eq(0) for c in cells]
        with m.Elif(self.ins):
            for j in range(N):
                new = Signal(cl, name=f"new{j}")
                m.d.comb += [new.valid.eq(1), new.key.eq(keys[j]), new.data.eq(self.data)]
                nxt = Signal(cl, name=f"nxt{j}")
                shifted = Mux(ge[j - 1], new, cells[j - 1]) if j else new
                m.d.comb += nxt.eq(Mux(ge[j], cells[j], shifted))
                m.d.sync += [
                    cells[j].key.eq(nxt.key),
                    cells[j].data.eq(nxt.data),
                    cells[j].valid.eq(nxt.valid & self.limit[j]),
                ]
        return m
