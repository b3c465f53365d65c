"""Page states, spill counters and the GCLOCK spill queue (SPEC §4.6 *Committing a page*)."""

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import data, enum, memory, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import bits_for

from hw.common import Param, check_params, idx_bits, net, prefix_inc_mod, prefix_step

__all__ = [
    "PageState",
    "PsCmd",
    "FREE",
    "SPEC",
    "COMMITTED",
    "CMAX",
    "cmd_layout",
    "victim_layout",
    "word_layout",
]

#: page states (``golden.kvpool.pages``)
FREE, SPEC, COMMITTED = 0, 1, 2
#: the spill counter's ceiling (``golden.kvpool.params.CMAX``)
CMAX = 7


class PsCmd(enum.Enum, shape=3):
    """Command kinds of :class:`PageState` (5 .. 7: invalid, no effect)."""

    SPEC = 0
    COMMIT = 1
    FREE = 2
    SCORE = 3
    VICTIM = 4


def cmd_layout(pages: int, table_bits: int, pos_bits: int) -> data.StructLayout:
    """A command: ``kind``, the page, COMMIT's ``tab`` / ``pos``, SCORE's ``s``,
    ``fresh`` (the page was just taken from the never-used mark)."""
    return data.StructLayout(
        {
            "kind": PsCmd,
            "page": idx_bits(pages),
            "tab": table_bits,
            "pos": pos_bits,
            "s": 3,
            "fresh": 1,
        }
    )


def victim_layout(pages: int, table_bits: int, pos_bits: int) -> data.StructLayout:
    """A VICTIM's result: the page and where its PTE is (block table, position)."""
    return data.StructLayout({"page": idx_bits(pages), "tab": table_bits, "pos": pos_bits})


def word_layout(table_bits: int, pos_bits: int) -> data.StructLayout:
    """A page's word in the ``page`` memory."""
    return data.StructLayout({"state": 2, "c": 3, "queued": 1, "tab": table_bits, "pos": pos_bits})


class PageState(wiring.Component):
    """Page states, spill counters and the GCLOCK spill queue, one command at a time.

    Bit-exact with ``golden.kvpool.pages.Pages`` (``state``, ``c``,
    ``queued``, ``wtab``, ``wpos``, ``queue``; ``make_spec``,
    ``make_committed``, ``free_*``, ``score``, ``victim``) and SPEC §4.6
    *Committing a page*, *Spill*.

    State: the memory ``page`` (``PAGES`` words ``{state: 2, c: 3, queued:
    1, tab: TABLE_BITS, pos: POS_BITS}``, state 0 FREE, 1 SPEC, 2
    COMMITTED) and the spill queue, a ring memory of ``PAGES`` page numbers
    with ``head``, ``tail`` and ``level`` registers (each page at most once:
    ``queued``). Reset clears the registers only: nothing is swept.

    Commands (``cmd``, a stream; every command's effect is visible to the
    next one):

    * **SPEC** (``page``, ``fresh``): ``state = SPEC`` (``c``, ``queued``,
      ``tab``, ``pos`` kept).
    * **COMMIT** (``page``, ``tab``, ``pos``, ``fresh``): ``state =
      COMMITTED``, ``c = 1``, ``tab``, ``pos``; if not ``queued``: ``queued
      = 1`` and the page is pushed at the queue's tail.
    * **FREE** (``page``): ``state = FREE`` (the rest kept: a freed page
      stays in the queue until a VICTIM pops it).
    * **SCORE** (``page``, ``s``): ``c = min(7, c + s)``.
    * **VICTIM**: GCLOCK passes: pop the head ``p``; if ``state[p] !=
      COMMITTED``: ``queued = 0`` (dropped); elif ``c > 0``: ``c -= 1`` and
      ``p`` pushed back at the tail; else ``queued = 0`` and ``p`` is the
      victim (its state stays COMMITTED: the pool frees it). The victim is
      shown on ``victim`` with ``done``; if the queue runs empty first,
      ``none`` with ``done`` (the pool asks only while a page is committed,
      but the leaf never hangs).

    ``fresh``: the word's old contents are ignored and taken as all zero
    (``state`` FREE, ``c = 0``, not queued, ``tab = pos = 0``) before the
    command applies. The pool sets it on the SPEC or COMMIT of a page just
    taken from the never-used mark; the leaf honours it on SPEC, COMMIT,
    FREE and SCORE alike (one rule, less logic) and ignores it on VICTIM.

    Protocol and latency (cycle ``a``: the command is accepted,
    ``cmd.valid & cmd.ready``):

    * SPEC, COMMIT, FREE, SCORE: ``done`` in cycle ``a + 1``, the cycle the
      page word is written (it was read in ``a``); ``cmd.ready`` stays high,
      so one per cycle sustained, in any mix: the word written in the
      previous cycle is forwarded, so back-to-back commands on one page see
      each other.
    * VICTIM: ``cmd.ready`` is low from ``a + 1`` until ``done`` (high
      again in the ``done`` cycle). Pass ``k`` pops queue entry ``k``
      (entries ``L0 ..`` are the passes' push-backs; ``L0`` = ``level`` in
      cycle ``a + 1``, counting every command accepted before). It is
      issued in cycle ``I(k) = max(I(k - 1) + 1, A(k))``, ``I(-1) = a``,
      where ``A(k) = a + 1`` for ``k < L0`` and ``I(j) + 3`` when entry ``k``
      is pass ``j``'s push-back: a queue read in ``I(k)``, the page word's
      read in ``I(k) + 1``, its write (and the push-back) in ``I(k) + 2``.
      A victim at pass ``v``: ``done`` in ``I(v) + 3``. No victim after
      ``n`` passes (the queue ran empty): ``done`` in ``I(n - 1) + 4``
      (``a + 2`` if ``L0 = 0``). So ``v + 4`` cycles from ``a`` to ``done``
      while ``L0 >= 3`` (one pass per cycle); a queue of one page costs 3
      cycles per pass, of two 1.5.
    * ``done`` is high for one cycle per command, in order; ``victim`` and
      ``none`` are valid with a VICTIM's ``done`` (0 in every other cycle).
      A command accepted in the cycle before a VICTIM shows its ``done`` in
      the VICTIM's acceptance cycle, so after it only the VICTIM's comes.
    * ``busy``: a command's writes are not all done by the end of the
      previous cycle (high in ``a + 1`` for SPEC .. SCORE, from ``a + 1``
      to the cycle before ``done`` for VICTIM). Low: the state reflects
      every command accepted before this cycle.
    * ``level``: the queue's entries after every command accepted before
      the previous cycle (a VICTIM's passes show as they go: ``level`` is
      exact again from its ``done`` cycle on).

    Invalid input (not checked): a non-``fresh`` command on a page whose word
    was not written since reset (the word is arbitrary: so are the
    outcome and, for a COMMIT, whether it is pushed); a COMMIT of a
    page while the queue holds ``PAGES`` entries (impossible while each
    page is queued at most once). Kinds 5 .. 7 are accepted, show ``done``
    in ``a + 1`` and change nothing. A command presented while ``rst`` is
    high is lost.

    Implementation: two ``amaranth.lib.memory.Memory`` (SRAM macros in
    synthesis), each with one synchronous read port and one write port,
    neither port transparent: a read in the cycle its word is written may
    return old (or, for a macro, undefined) data, and is then replaced by
    the forwarded word (a register of the last cycle's write), so any
    read-during-write behaviour is fine. A page word is read only when the
    pool wrote it since reset (``fresh`` otherwise; a popped page was
    committed since reset), and a queue entry only below ``level``, which
    resets; a queue entry is never read in the cycle it is written (a pass
    is issued only when the entry it pops is counted in ``level``, i.e.
    from the cycle after its push). One read-modify-write stage serves the
    commands and the GCLOCK passes (``cmd.ready`` is low while passes run);
    passes are pipelined (queue read, page read, page write) with a read
    pointer ahead of ``head``: a victim cancels the two passes behind it
    and the read pointer returns to the new ``head``. Design notes:
    ``docs/blocks/kvpool_leaves.md``.

    Parameters
    ----------
    PAGES : int
        Pages of the pool, ``16 .. 4194304`` (default 1048576; SPEC §4.9),
        any value (the queue's pointers wrap at ``PAGES``).
    TABLE_BITS : int
        Bits of a block table's number (the reverse map's ``tab``),
        ``1 .. 10`` (default 8: ``SEGS = 256`` tables).
    POS_BITS : int
        Bits of a position, ``1 .. 20`` (default 17).

    Members
    -------
    cmd : In(stream.Signature(cmd_layout(PAGES, TABLE_BITS, POS_BITS)))
        Commands (``valid``, ``ready``, ``payload``).
    done : Out(1)
        A command finished (one cycle per command, in order).
    victim : Out(victim_layout(PAGES, TABLE_BITS, POS_BITS))
        A VICTIM's victim (``page``, ``tab``, ``pos``), with ``done``; else 0.
    none : Out(1)
        A VICTIM found no victim (the queue ran empty), with ``done``.
    level : Out(bits_for(PAGES))
        Entries in the spill queue.
    busy : Out(1)
        A command's state updates are not complete (see the protocol).
    """

    #: the block's parameters (:class:`hw.common.Param`: default, range, small value)
    PARAMS = {
        "PAGES": Param(default=2**20, lo=16, hi=2**22, small=16),
        "TABLE_BITS": Param(default=8, lo=1, hi=10, small=2),
        "POS_BITS": Param(default=17, lo=1, hi=20, small=3),
    }

    def __init__(
        self,
        *,
        PAGES: int = PARAMS["PAGES"].default,
        TABLE_BITS: int = PARAMS["TABLE_BITS"].default,
        POS_BITS: int = PARAMS["POS_BITS"].default,
    ) -> None:
        given = {"PAGES": PAGES, "TABLE_BITS": TABLE_BITS, "POS_BITS": POS_BITS}
        p = check_params(self.PARAMS, given)
        self.PAGES, self.TABLE_BITS, self.POS_BITS = p["PAGES"], p["TABLE_BITS"], p["POS_BITS"]
        args = (self.PAGES, self.TABLE_BITS, self.POS_BITS)
        super().__init__(
            {
                "cmd": In(stream.Signature(cmd_layout(*args))),
                "done": Out(1),
                "victim": Out(victim_layout(*args)),
                "none": Out(1),
                "level": Out(bits_for(self.PAGES)),
                "busy": Out(1),
            }
        )

    def elaborate(self, platform) -> Module:
        m = Module()
        pb = idx_bits(self.PAGES)
        wl = word_layout(self.TABLE_BITS, self.POS_BITS)

        # memories: no initial contents (reset sweeps nothing)
        m.submodules.page = page_mem = memory.Memory(shape=wl, depth=self.PAGES, init=[])
        m.submodules.queue = q_mem = memory.Memory(shape=pb, depth=self.PAGES, init=[])
        self._wr, self._rd = page_mem.write_port(), page_mem.read_port()
        self._qwr, self._qrd = q_mem.write_port(), q_mem.read_port()

        # the read-modify-write stage (a command, or a GCLOCK pass: kind VICTIM)
        self._r_valid = Signal()
        self._r_kind = Signal(PsCmd)
        self._r_page = Signal(pb)
        self._r_tab = Signal(self.TABLE_BITS)
        self._r_pos = Signal(self.POS_BITS)
        self._r_s = Signal(3)
        self._r_fresh = Signal()
        # GCLOCK: victim mode, the pass whose queue read is out (page in q_rd.data)
        self._vmode = Signal()
        self._p_valid = Signal()
        self._head = Signal(pb)
        self._tail = Signal(pb)
        self._rp = Signal(pb)  # the next entry a pass pops (head + passes in flight)

        self._accept(m)
        self._rmw(m)
        self._passes(m)
        return m

    def _accept(self, m: Module) -> None:
        """Cycle ``a``: a command is taken into the RMW stage (its page word read), or
        VICTIM starts the passes; in victim mode the page read follows the passes."""
        cmd, rd = self.cmd, self._rd
        accept = net(m, cmd.valid & ~self._vmode, "accept")
        m.d.comb += cmd.ready.eq(~self._vmode)
        is_victim = cmd.payload.kind == PsCmd.VICTIM
        # the page whose word the read port gives next cycle
        addr = net(m, Mux(self._vmode, self._qrd.data, cmd.payload.page), "rd_page")
        m.d.comb += [
            rd.addr.eq(addr),
            rd.en.eq(Mux(self._vmode, self._p_valid, accept)),
        ]
        m.d.sync += [
            self._r_page.eq(addr),
            self._r_tab.eq(cmd.payload.tab),
            self._r_pos.eq(cmd.payload.pos),
            self._r_s.eq(cmd.payload.s),
            self._r_fresh.eq(cmd.payload.fresh & ~self._vmode),
            self._r_kind.eq(Mux(self._vmode, PsCmd.VICTIM, cmd.payload.kind)),
        ]
        with m.If(accept & is_victim):
            m.d.sync += self._vmode.eq(1)
        m.d.comb += self.busy.eq(self._r_valid | self._vmode)
        self._accept_cmd = net(m, accept & ~is_victim, "accept_cmd")

    def _rmw(self, m: Module) -> None:
        """The RMW stage: the word (forwarded, or zero if ``fresh``), the command or the
        pass applied, the word written; queue pushes, pops and the counts."""
        rd, wr, qwr = self._rd, self._wr, self._qwr
        wl = word_layout(self.TABLE_BITS, self.POS_BITS)
        kind = self._r_kind
        # forwarding: the word written in the previous cycle, if it is this page's
        fwd_valid = Signal()
        fwd_page = Signal(len(self._r_page))
        fwd_word = Signal(wl)
        hit = net(m, fwd_valid & (fwd_page == self._r_page), "fwd_hit")
        old = Signal(wl)
        m.d.comb += old.eq(Mux(self._r_fresh, 0, Mux(hit, fwd_word, rd.data)))

        new = Signal(wl)
        push_new = Signal()  # COMMIT of an unqueued page
        pop = Signal()  # a pass (its entry leaves the head)
        push_back = Signal()  # a pass with c > 0
        found = Signal()  # a pass found the victim
        is_pass = kind == PsCmd.VICTIM
        m.d.comb += new.eq(old)
        c_sum = net(m, old.c + self._r_s, "score_sum")  # 4 bits
        with m.Switch(kind):
            with m.Case(PsCmd.SPEC):
                m.d.comb += new.state.eq(SPEC)
            with m.Case(PsCmd.COMMIT):
                m.d.comb += [
                    new.state.eq(COMMITTED),
                    new.c.eq(1),
                    new.queued.eq(1),
                    new.tab.eq(self._r_tab),
                    new.pos.eq(self._r_pos),
                    push_new.eq(self._r_valid & ~old.queued),
                ]
            with m.Case(PsCmd.FREE):
                m.d.comb += new.state.eq(FREE)
            with m.Case(PsCmd.SCORE):
                m.d.comb += new.c.eq(Mux(c_sum[3], CMAX, c_sum[:3]))
            with m.Case(PsCmd.VICTIM):
                committed = old.state == COMMITTED
                counted = old.c != 0
                m.d.comb += [
                    pop.eq(self._r_valid),
                    push_back.eq(self._r_valid & committed & counted),
                    found.eq(self._r_valid & committed & ~counted),
                    new.queued.eq(committed & counted),
                    new.c.eq(Mux(committed & counted, old.c - 1, old.c)),
                ]
        write = net(m, self._r_valid & (kind.as_value() <= PsCmd.VICTIM.value), "write")
        m.d.comb += [
            wr.addr.eq(self._r_page),
            wr.data.eq(new),
            wr.en.eq(write),
        ]
        m.d.sync += [
            fwd_valid.eq(write),
            fwd_page.eq(self._r_page),
            fwd_word.eq(new),
        ]

        # the queue: a COMMIT's push or a pass's push-back at the tail, a pass's pop
        push = net(m, push_new | push_back, "push")
        m.d.comb += [qwr.addr.eq(self._tail), qwr.data.eq(self._r_page), qwr.en.eq(push)]
        tail_inc = prefix_inc_mod(m, self._tail, self.PAGES, "tail_inc")  # outside the If
        with m.If(push):
            m.d.sync += self._tail.eq(tail_inc)
        head_inc = prefix_inc_mod(m, self._head, self.PAGES, "head_inc")
        with m.If(pop):
            m.d.sync += self._head.eq(head_inc)
        m.d.sync += self.level.eq(prefix_step(m, self.level, push, pop, "level_step"))
        self._found, self._head_inc = found, head_inc

        # outcome, the next cycle
        m.d.sync += [
            self.victim.page.eq(Mux(found, self._r_page, 0)),
            self.victim.tab.eq(Mux(found, old.tab, 0)),
            self.victim.pos.eq(Mux(found, old.pos, 0)),
        ]
        self._done_cmd = net(m, self._r_valid & ~is_pass, "done_cmd")

    def _passes(self, m: Module) -> None:
        """GCLOCK: issue a pass (queue read at ``rp``) while an entry is counted in
        ``level`` and not popped by a pass in flight; stop at a victim (cancelling the
        passes behind it) or when the queue is empty."""
        qrd, vmode, level = self._qrd, self._vmode, self.level
        found = self._found
        # passes in flight: the one whose queue read is out, the one in the RMW stage
        inflight = Cat(self._p_valid ^ self._r_valid, self._p_valid & self._r_valid)
        more = net(m, (level[2:] != 0) | (level[:2] > inflight), "more")
        issue = net(m, vmode & more, "issue")
        empty = net(m, vmode & (level == 0), "empty")  # no pass in flight then
        m.d.comb += [qrd.addr.eq(self._rp), qrd.en.eq(issue)]
        m.d.sync += [
            self._p_valid.eq(issue),  # behind a victim: dropped by vmode falling
            self._r_valid.eq(Mux(vmode, self._p_valid & ~found, self._accept_cmd)),
        ]
        rp_inc = prefix_inc_mod(m, self._rp, self.PAGES, "rp_inc")
        with m.If(found):
            m.d.sync += [self._rp.eq(self._head_inc), vmode.eq(0)]
        with m.Elif(issue):
            m.d.sync += self._rp.eq(rp_inc)
        with m.If(empty):
            m.d.sync += vmode.eq(0)
        vdone = Signal()  # a VICTIM's done (registered: victim and none beside it)
        m.d.sync += [vdone.eq(found | empty), self.none.eq(empty)]
        m.d.comb += self.done.eq(self._done_cmd | vdone)
