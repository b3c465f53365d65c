"""The statistics window of SPEC §3.10: per-rank sums over the last ``WIN`` kept steps."""

from amaranth import Cat, Const, Elaboratable, Module, Mux, Signal, Value
from amaranth.lib import memory
from amaranth.utils import bits_for

from hw.common import csa_rows, idx_bits, prefix_add, zext

__all__ = ["Window"]


def _wrap_inc(p: Value, n: int) -> Value:
    """``(p + 1) mod n``."""
    return Mux(p == n - 1, 0, p + 1)[: len(p)] if n > 1 else Const(0, len(p))


class Window(Elaboratable):
    """Trials and hits per rank summed over the last ``WIN`` steps kept (§3.10).

    Each kept step's counts are one word of a ``WIN``-word memory (``2 R``
    counts of ``count_bits``); the sums ``hits[b]``, ``trials[b]`` are
    registers. ``add`` (one cycle) keeps the step whose counts are on
    ``cur_h`` / ``cur_t``: when the window is full the oldest word, read at
    the head, leaves, and every sum becomes ``sum + new - old`` (a 4-row
    carry-save tree and one kept adder) in that cycle. The head's word is
    read every cycle, so ``add`` needs one cycle since the last ``add`` or
    ``clear``. ``clear`` (one cycle) empties the window.

    Parameters
    ----------
    ranks, win : int
        ``R`` and ``WIN``.
    count_bits : int
        Width of one step's count (``bits_for(N_MAX)``: at most ``m`` beats).
    sum_bits : int
        Width of a sum (``bits_for(WIN * N_MAX)``).
    cur_h, cur_t : list of Value
        The step's hits and trials per rank.
    """

    def __init__(
        self,
        ranks: int,
        win: int,
        count_bits: int,
        sum_bits: int,
        cur_h: list[Value],
        cur_t: list[Value],
    ) -> None:
        self.R, self.WIN, self.scw, self.cw = ranks, win, count_bits, sum_bits
        self.cur_h, self.cur_t = cur_h, cur_t
        self.add = Signal(name="win_add")
        self.clear = Signal(name="win_clear")
        self.hits = [Signal(self.cw, name=f"sum_h{b}") for b in range(ranks)]
        self.trials = [Signal(self.cw, name=f"sum_t{b}") for b in range(ranks)]

    def elaborate(self, platform) -> Module:
        m = Module()
        R, WIN, scw, cw = self.R, self.WIN, self.scw, self.cw
        count = Signal(bits_for(WIN), name="win_count")
        head = Signal(idx_bits(WIN), name="win_head")
        tail = Signal(idx_bits(WIN), name="win_tail")
        m.submodules.mem = mem = memory.Memory(shape=2 * R * scw, depth=WIN, init=[])
        rd, wr = mem.read_port(), mem.write_port()
        full = Signal(name="win_full")
        m.d.comb += [
            full.eq(count == WIN),
            rd.addr.eq(head),
            wr.addr.eq(tail),
            wr.data.eq(Cat(*self.cur_h, *self.cur_t)),
            wr.en.eq(self.add),
        ]
        sums = self.hits + self.trials
        for i, (s, c) in enumerate(zip(sums, self.cur_h + self.cur_t, strict=True)):
            old = Mux(full, rd.data[i * scw : (i + 1) * scw], 0)
            rows = csa_rows(m, [s, c, ~zext(old, cw), Const(1, cw)], cw, f"win{i}")
            new = prefix_add(m, rows[0], rows[1], cw, f"win{i}_add", keep=True)
            with m.If(self.clear):
                m.d.sync += s.eq(0)
            with m.Elif(self.add):
                m.d.sync += s.eq(new)
        with m.If(self.clear):
            m.d.sync += [count.eq(0), head.eq(0), tail.eq(0)]
        with m.Elif(self.add):
            m.d.sync += tail.eq(_wrap_inc(tail, WIN))
            with m.If(full):
                m.d.sync += head.eq(_wrap_inc(head, WIN))
            with m.Else():
                m.d.sync += count.eq(count + 1)
        return m
