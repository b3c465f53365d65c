"""The dynamic engine's kept set: the candidates the rerank list holds, updated as it
changes and given out in creation order at the output.

Two builds with one interface (:func:`kept_members`):

* :class:`KeptPriority` (``TARGET="asic"``): one bit per candidate; an update
  lands the same cycle; the walk is a priority encoder over all ``C_MAX``
  bits, one member a cycle.
* :class:`KeptList` (``TARGET="fpga"``): the members' indices in a list in
  creation order, ``N_NODES - 1`` cells: a kept candidate is appended (it is
  the newest), an evicted one removed by closing the gap; the update is
  registered and lands one cycle later. The walk shifts the list out, one
  member a cycle. No net reaches every candidate.
"""

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from hw.common import encode, idx_bits, net, onehot, or_tree, prefix_or_below

__all__ = ["KeptList", "KeptPriority", "kept_members"]


def kept_members(cells: int) -> dict:
    """The members of both builds for candidates ``0 .. cells - 1``.

    ``clear``: empty the set (wins over an update). ``upd``: apply an update:
    add ``set_idx`` if ``set``, remove ``evict_idx`` if ``evict`` (an added
    candidate is newer than every member). ``walk``: the set is final and is
    being walked (an update must not arrive while it is high). ``valid`` /
    ``idx``: the oldest member not yet taken; ``take``: it is taken this
    cycle. ``done``: every member is taken.
    """
    cb = idx_bits(cells)
    return {
        "clear": In(1),
        "upd": In(1),
        "set": In(1),
        "set_idx": In(cb),
        "evict": In(1),
        "evict_idx": In(cb),
        "walk": In(1),
        "take": In(1),
        "valid": Out(1),
        "idx": Out(cb),
        "done": Out(1),
    }


class KeptPriority(wiring.Component):
    """``TARGET="asic"``: updates land the same cycle; the walk is a priority encoder
    over the ``CELLS`` bits (``valid`` is ``~done``)."""

    def __init__(self, *, CELLS: int) -> None:
        self.CELLS = CELLS
        super().__init__(kept_members(CELLS))

    def elaborate(self, platform) -> Module:
        m = Module()
        CM, CB = self.CELLS, idx_bits(self.CELLS)
        kept = Signal(CM)
        set_oh = onehot(m, self.set_idx, CM, "kept_set")
        clr_oh = onehot(m, self.evict_idx, CM, "kept_clr")
        below = prefix_or_below(m, kept, "kept_below")
        low = net(m, kept & ~below, "kept_low")  # lowest member, one-hot
        m.d.comb += [
            self.idx.eq(encode(m, low, CB, "kept_idx")),
            self.valid.eq(or_tree(kept)),
            self.done.eq(~self.valid),
        ]
        with m.If(self.clear):
            m.d.sync += kept.eq(0)
        with m.Elif(self.upd):
            m.d.sync += kept.eq((kept | Mux(self.set, set_oh, 0)) & ~Mux(self.evict, clr_oh, 0))
        with m.Elif(self.take):
            m.d.sync += kept.eq(kept & ~low)
        return m


class KeptList(wiring.Component):
    """``TARGET="fpga"``: the members' indices in creation order, ``CAPACITY`` cells.

    The valid cells are a prefix. An update's inputs are registered and
    applied the next cycle: the cell equal to ``evict_idx`` (one 9-bit
    compare per cell) and those behind it take their successor's value, and
    ``set_idx`` goes into the first cell left empty. While ``walk`` is high,
    ``take`` shifts the list by one. The set must never exceed ``CAPACITY``
    members (the rerank list's limit).

    Parameters
    ----------
    CELLS : int
        Candidates (the index range).
    CAPACITY : int
        Members at most.
    """

    def __init__(self, *, CELLS: int, CAPACITY: int) -> None:
        self.CELLS, self.CAPACITY = CELLS, CAPACITY
        super().__init__(kept_members(CELLS))

    def elaborate(self, platform) -> Module:
        m = Module()
        N, CB = self.CAPACITY, idx_bits(self.CELLS)
        lay = data.StructLayout({"valid": 1, "idx": CB})
        cells = [Signal(lay, name=f"cell{j}") for j in range(N)]
        empty = Signal(lay)  # cells[N]: past the end, never valid
        after = [*cells[1:], empty]
        m.d.comb += [
            self.valid.eq(cells[0].valid),
            self.idx.eq(cells[0].idx),
            self.done.eq(~cells[0].valid),
        ]

        # ---- updates, registered
        upd, set_, set_idx = Signal(), Signal(), Signal(CB)
        evict, evict_idx = Signal(), Signal(CB)
        m.d.sync += [
            upd.eq(self.upd & ~self.clear),
            set_.eq(self.set),
            set_idx.eq(self.set_idx),
            evict.eq(self.evict),
            evict_idx.eq(self.evict_idx),
        ]
        hit = net(
            m,
            Cat(c.valid & (c.idx == evict_idx) & evict for c in cells),
            "evict_hit",
        )
        # shift[j]: cell j is the evicted one or behind it, and takes cell j + 1
        shift = net(m, hit | prefix_or_below(m, hit, "evict_below", radix=4), "evict_shift")
        src = [Signal(lay, name=f"src{j}") for j in range(N)]
        m.d.comb += [src[j].eq(Mux(shift[j], after[j], cells[j])) for j in range(N)]
        new = Signal(lay)
        m.d.comb += [new.valid.eq(1), new.idx.eq(set_idx)]

        with m.If(self.clear):
            m.d.sync += [c.valid.eq(0) for c in cells]
        with m.Elif(upd):
            for j in range(N):
                # the first cell left empty takes the added candidate
                first_empty = ~src[j].valid & (src[j - 1].valid if j else 1)
                m.d.sync += cells[j].eq(Mux(set_ & first_empty, new, src[j]))
        with m.Elif(self.walk & self.take):
            m.d.sync += [cells[j].eq(after[j]) for j in range(N)]
        return m
