"""Page allocator (SPEC §4.6 *Allocation*): the free FIFO in memory and the high-water mark."""

from amaranth import Module, Mux, Signal
from amaranth.lib import memory, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import bits_for

from hw.common import (
    Param,
    check_params,
    idx_bits,
    prefix_add,
    prefix_inc,
    prefix_inc_mod,
    prefix_step,
    zext,
)

__all__ = ["PageAllocator", "page_bits"]


def page_bits(pages: int) -> int:
    """Bits of a page number ``0 .. pages - 1``."""
    return idx_bits(pages)


class PageAllocator(wiring.Component):
    """The free FIFO with a high-water mark: one allocation and one free per cycle.

    State (SPEC §4.5, §4.6 *Allocation*): a FIFO of free page numbers and
    ``mark``, the next never-used page; reset leaves the FIFO empty and
    ``mark = 0``, so every page is free without the memory being written.
    Bit-exact with the free FIFO and mark of ``golden.kvpool.pages.Pages``
    (``take``, the pushes of ``free_spec`` / ``free_committed``,
    ``free_pages``, ``mark``).

    Operations, each a one-cycle strobe, both allowed in one cycle:

    * **push** (``push``, ``push_page``): page ``push_page`` is appended at the
      FIFO's tail.
    * **alloc** (``alloc``): the FIFO's head is taken if the FIFO is not
      empty; else page ``mark`` (``mark += 1``) if ``mark < PAGES``; else
      nothing is allocated (``no_page``) and nothing changes.

    Order within a cycle: **the push comes first**, then the allocation, as
    the golden model frees the pages an operation decided before any later
    allocation (and a spilling allocation frees its victim, then takes it).
    So an allocation in the cycle of a push to an empty FIFO takes the pushed
    page (``mark`` unchanged, nothing written to the memory); with a
    non-empty FIFO it takes the head, whatever is pushed.

    Latency 1: the cycle after an ``alloc``, ``page_valid`` and ``page``
    (or ``no_page``) show its outcome; ``page`` is 0 when ``page_valid`` is
    low. ``free_pages``, ``level`` and ``mark`` are registers: in each cycle,
    the state after every operation of the cycles before.

    Invalid input: a push of a page ``>= mark`` (never handed out; ``mark``
    before the cycle's allocation), or a push while the FIFO holds ``PAGES``
    pages (only a page freed twice gets there). The push is dropped, the
    cycle's allocation proceeds as if there were no push, and ``error`` is
    high in the next cycle, for one cycle. A page freed twice while fewer
    than ``PAGES`` pages are queued is not detected (no per-page state here).

    Implementation: the FIFO is an ``amaranth.lib.memory.Memory`` of
    ``PAGES`` words (an SRAM macro in synthesis: one synchronous read port at
    the head, one write port at the tail) with ``head``, ``tail``, ``level``
    and ``mark`` registers; the read port reads the head every cycle an
    allocation takes it, and its data register is the ``page`` output's
    FIFO source. The pointers wrap at ``PAGES`` (any value in range, not only
    powers of two). A word is never read in the cycle it is written (a push
    to an empty FIFO with an allocation bypasses the memory; a full FIFO
    refuses the push), so the read port needs no transparency. Design notes:
    ``docs/blocks/kvpool_leaves.md``.

    Parameters
    ----------
    PAGES : int
        Pages of the pool, ``16 .. 4194304`` (default 1048576; SPEC §4.9).

    Members
    -------
    alloc : In(1)
        Allocate a page this cycle.
    push : In(1)
        Free ``push_page`` this cycle (to the FIFO's tail).
    push_page : In(page_bits(PAGES))
        The page freed.
    page_valid : Out(1)
        The previous cycle's ``alloc`` got ``page``.
    page : Out(page_bits(PAGES))
        The page allocated (0 unless ``page_valid``).
    no_page : Out(1)
        The previous cycle's ``alloc`` found no free page (nothing changed).
    error : Out(1)
        The previous cycle's push was refused (invalid input, dropped).
    free_pages : Out(bits_for(PAGES))
        ``level + PAGES - mark``: the free pages (SPEC §4.7 ``free_pages``).
    level : Out(bits_for(PAGES))
        Pages in the FIFO.
    mark : Out(bits_for(PAGES))
        The next never-used page (``PAGES`` once every page was handed out).
    """

    #: the block's parameters (:class:`hw.common.Param`: default, range, small value)
    PARAMS = {"PAGES": Param(default=2**20, lo=16, hi=2**22, small=16)}

    def __init__(self, *, PAGES: int = PARAMS["PAGES"].default) -> None:
        PAGES = self.PAGES = check_params(self.PARAMS, {"PAGES": PAGES})["PAGES"]
        pb, cb = page_bits(PAGES), bits_for(PAGES)
        super().__init__(
            {
                "alloc": In(1),
                "push": In(1),
                "push_page": In(pb),
                "page_valid": Out(1),
                "page": Out(pb),
                "no_page": Out(1),
                "error": Out(1),
                "free_pages": Out(cb, init=PAGES),
                "level": Out(cb),
                "mark": Out(cb),
            }
        )

    def elaborate(self, platform) -> Module:
        m = Module()
        P = self.PAGES
        pb = page_bits(P)
        level, mark = self.level, self.mark

        # the FIFO: no init needed (reset empties it by its registers)
        m.submodules.fifo = mem = memory.Memory(shape=pb, depth=P, init=[])
        wr = mem.write_port()
        rd = mem.read_port()  # never read in the cycle it is written: not transparent
        head = Signal(pb)
        tail = Signal(pb)

        # this cycle's decisions: the push first, then the allocation
        push_ok = Signal()
        # push_page < mark: the carry out of mark + ~push_page (a kept prefix adder)
        cb = len(mark)
        diff = prefix_add(m, mark, ~zext(self.push_page, cb), cb + 1, "below_mark", keep=True)
        below_mark = diff[cb]
        m.d.comb += push_ok.eq(self.push & below_mark & (level != P))
        nonempty = Signal()
        m.d.comb += nonempty.eq(level != 0)
        take_fifo = Signal()  # the head
        take_push = Signal()  # the page pushed this cycle, bypassing the empty FIFO
        take_mark = Signal()  # page `mark`
        refuse = Signal()  # nothing free
        m.d.comb += [
            take_fifo.eq(self.alloc & nonempty),
            take_push.eq(self.alloc & ~nonempty & push_ok),
            take_mark.eq(self.alloc & ~nonempty & ~push_ok & (mark != P)),
            refuse.eq(self.alloc & ~nonempty & ~push_ok & (mark == P)),
        ]
        write = Signal()
        m.d.comb += write.eq(push_ok & ~take_push)

        # memory ports
        m.d.comb += [
            wr.addr.eq(tail),
            wr.data.eq(self.push_page),
            wr.en.eq(write),
            rd.addr.eq(head),
            rd.en.eq(take_fifo),
        ]

        # registers
        got = Signal()
        m.d.comb += got.eq(self.alloc & ~refuse)
        # the increments outside the Ifs (a net assigned inside one depends on its test)
        head_inc = prefix_inc_mod(m, head, P, "head_inc")
        tail_inc = prefix_inc_mod(m, tail, P, "tail_inc")
        with m.If(take_fifo):
            m.d.sync += head.eq(head_inc)
        with m.If(write):
            m.d.sync += tail.eq(tail_inc)
        m.d.sync += [
            level.eq(prefix_step(m, level, write, take_fifo, "level_step")),
            self.free_pages.eq(prefix_step(m, self.free_pages, push_ok, got, "free_step")),
        ]
        inc = prefix_inc(m, mark, "mark_inc")
        with m.If(take_mark):
            m.d.sync += mark.eq(inc)

        # outcome, the next cycle: the memory's read register or the held page
        from_fifo = Signal()
        held = Signal(pb)
        m.d.sync += [
            self.page_valid.eq(got),
            self.no_page.eq(refuse),
            self.error.eq(self.push & ~push_ok),
            from_fifo.eq(take_fifo),
            held.eq(Mux(take_push, self.push_page, Mux(take_mark, mark[:pb], 0))),
        ]
        m.d.comb += self.page.eq(Mux(from_fifo, rd.data, held))
        return m
