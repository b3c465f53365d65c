"""The scaled pool's operation FSM: one operation at a time, in the order accepted.

An operation is accepted in ``IDLE`` (``op.ready``), waits until no lookup
is in flight (so that the lookups accepted before it, and with it, have
read the state and filled their TLBs first), has its checks and facts
registered in ``CHECK`` (:mod:`hw.kvpool.pool_checks`), acted on in ``ACT``, and
is then carried out step by step on the
units: the page allocators, the block table, the tree slots, the page
states and the two TLBs. Its result is shown in the cycle the FSM returns
to ``IDLE``, after every unit has finished, so the next lookup or operation
sees all of it. Lookups are accepted only in ``IDLE``.

The drain (:mod:`hw.kvpool.pool_drain`) pushes a finished commit's or
release's rejected pages while the next operations run.

Spill, fill and score states: :mod:`hw.kvpool.pool_spill`.
"""

from amaranth.hdl import Cat, Module, Mux, Signal, Value

from hw.common import net
from hw.kvpool.blocktable import BtCmd
from hw.kvpool.layouts import PoolCode, PoolOp
from hw.kvpool.pagestate import PsCmd
from hw.kvpool.pool_blockbuf import BlockBuf
from hw.kvpool.pool_checks import op_code
from hw.kvpool.pool_commit import fast_commit_accept, fast_commit_ok
from hw.kvpool.pool_drain import drain, drain_wait, hand_over, slot_count
from hw.kvpool.pool_fast import (
    fast_accept,
    fast_accept_committed,
    fast_accept_spec,
    fast_eligible,
    fast_fork_ok,
    fast_stage2,
    fast_tags,
    make_stage2,
)
from hw.kvpool.pool_release import (
    cut_engine,
    cut_regs,
    fast_release_ok,
    release_counts,
    release_now,
)
from hw.kvpool.pool_score import (
    fast_score_accept,
    fast_score_ok,
    score_engine,
    score_regs,
    score_waits,
)
from hw.kvpool.pool_share import ShareRegs, share_states, start_tag, tag_setup, tag_states
from hw.kvpool.pool_spill import RET_INSERT, spill_fill_score, spill_one
from hw.kvpool.pool_units import OpRegs, Units
from hw.kvpool.treeslots import TsCmd, TsOut

__all__ = ["Units", "OpRegs", "op_fsm"]  # the first two re-exported


_TS_OPEN, _TS_ADD, _TS_COMMIT = TsCmd.OPEN, TsCmd.ADD, TsCmd.COMMIT
_TS_ACC, _TS_REJ = TsOut.ACC, TsOut.REJ


class _Fsm:
    """Builds the states; one method per operation group (each inside ``m.FSM``)."""

    def __init__(self, m: Module, u: Units, r: OpRegs, p: dict, facts: dict) -> None:
        self.m, self.u, self.r, self.p, self.f = m, u, r, p, facts
        seg = u.seg
        pb1 = len(seg.len[0])
        ab = p["addr_bits"]
        self.g = Signal(seg.gb, name="fsm_g")
        self.t = Signal(seg.gb, name="fsm_t")
        self.i = Signal(pb1, name="fsm_i")
        self.slot = Signal(range(max(2, p["trees"])), name="fsm_slot")
        self.ln = Signal(pb1, name="fsm_len")
        self.page = Signal(p["page_bits"], name="fsm_page")
        self.fresh = Signal(name="fsm_fresh")
        self.code = Signal(PoolCode, name="fsm_code")  # CHECK's, for ACT
        self.opening = Signal(name="fsm_opening")  # no own segment (CHECK's)
        self.ret = Signal(2, name="fsm_ret")
        self.cnt = Signal(len(r.value), name="fsm_cnt")
        self.loc = Signal(name="fsm_loc")
        self.addr = Signal(ab, name="fsm_addr")
        self.token = Signal(p["token_bits"], name="fsm_token")
        self.vtoken = Signal(p["token_bits"], name="fsm_vtoken")  # a spill victim's
        self.vpage = Signal(p["page_bits"], name="fsm_vpage")
        self.vtab = Signal(seg.gb, name="fsm_vtab")
        self.vpos = Signal(p["pos_bits"], name="fsm_vpos")
        self.vi = Signal(pb1, name="fsm_vi")  # its PTE index
        self.vg = Signal(seg.gb, name="fsm_vg")  # its segment
        self.vx = Signal(seg.sb, name="fsm_vx")  # the sequence that alone sees it
        self.vxv = Signal(name="fsm_vxv")  # (one does)
        self.wait = Signal(4, name="fsm_wait")
        self.left = Signal(len(u.pending), name="fsm_left")  # a commit's nodes not appended
        # dedup tags and share (hw.kvpool.pool_share)
        self.tpos = Signal(pb1, name="fsm_tpos")
        self.tokens = Signal(16 * p["token_bits"], name="fsm_tokens")
        self.got = Signal(5, name="fsm_got")
        self.collect = Signal(name="fsm_collect")
        self.tret = Signal(name="fsm_tret")
        self.ttag = Signal(64, name="fsm_ttag")
        self.quiet = Signal(name="fsm_quiet")
        self.fork_done = Signal(name="fsm_fork_done")  # a fast fork's result now
        self.done_next = Signal(name="fsm_done_next")  # a fast commit's result now
        m.d.sync += [self.fork_done.eq(0), self.done_next.eq(0)]
        # the FSM's own reads of block-table port 0 in flight (READ_LATENCY = 3)
        self.rd_own = Signal(name="fsm_rd_own")
        self.rd_pipe = Signal(3, name="fsm_rd_pipe")
        m.d.sync += self.rd_pipe.eq(Cat(self.rd_own, self.rd_pipe[:-1]))

    # ------------------------------------------------------------------ unit commands
    def bt(self, kind, t, i, *, n=0, loc=0, addr=0, token=0) -> Value:
        """Drive a block-table command this cycle; returns its acceptance."""
        c = self.u.bt.cmd
        self.m.d.comb += [
            c.valid.eq(1),
            c.payload.kind.eq(kind),
            c.payload.t.eq(t),
            c.payload.i.eq(i),
            c.payload.n.eq(n),
            c.payload.pte.loc.eq(loc),
            c.payload.pte.addr.eq(addr),
            c.payload.pte.token.eq(token),
        ]
        return c.ready

    def ps(self, kind, page, *, tab=0, pos=0, s=0, fresh=0) -> Value:
        """Drive a page-state command this cycle; returns its acceptance."""
        c = self.u.ps.cmd
        self.m.d.comb += [
            c.valid.eq(1),
            c.payload.kind.eq(kind),
            c.payload.page.eq(page),
            c.payload.tab.eq(tab),
            c.payload.pos.eq(pos),
            c.payload.s.eq(s),
            c.payload.fresh.eq(fresh),
        ]
        return c.ready

    def ts(self, kind, **fields) -> Value:
        """Drive a tree-slot command this cycle; returns its acceptance."""
        c = self.u.ts.cmd
        self.m.d.comb += [c.valid.eq(1), c.payload.kind.eq(kind)]
        for k, v in fields.items():
            self.m.d.comb += getattr(c.payload, k).eq(v)
        return c.ready

    def push(self, page: Value) -> None:
        """Free ``page`` to the free FIFO's tail this cycle."""
        a = self.u.alloc
        self.m.d.comb += [a.push.eq(1), a.push_page.eq(page)]

    def finish(self, code: Value | None = None) -> None:
        """Go to ``RESULT`` (with ``code`` if given)."""
        m = self.m
        if code is not None:
            m.d.sync += self.r.code.eq(code)
        m.next = "RESULT"

    def read_pte(self, t: Value, i: Value) -> None:
        """Issue a block-table read on port 0 (its lookups idle, or held: a posted score)."""
        rd = self.u.bt.rd0
        self.m.d.comb += [rd.valid.eq(1), rd.payload.t.eq(t), rd.payload.i.eq(i), self.rd_own.eq(1)]

    def own_rsp(self) -> Value:
        """Port 0's response is one of the FSM's reads (not a lookup's issued before)."""
        return self.u.bt.rd0_rsp.valid & self.rd_pipe[-1]

    # ------------------------------------------------------------------ frame
    def frame(self, op, inflight: Value, busy: Value) -> None:
        """``IDLE``, ``WAIT``, ``CHECK``, ``RESULT``."""
        m, r, f = self.m, self.r, self.f
        o = r.o
        s2 = self.s2
        with m.State("IDLE"):
            fast_stage2(self, s2, self.res_fast)
            to_tag = s2.valid & s2.tag
            # a score that would be posted waits for the pending one (not the long way)
            wait_sc = score_waits(self, op, self.fast)
            m.d.comb += [op.ready.eq(~to_tag & ~wait_sc), r.idle.eq(1)]
            take = op.valid & ~to_tag & ~wait_sc
            ins_c, ins_s = self.ins  # built outside the FSM (a net in a state is gated by it)
            with m.If(take):
                m.d.sync += [
                    o.eq(op.payload),
                    r.code.eq(PoolCode.NONE),
                    r.value.eq(0),
                    r.value2.eq(0),
                    r.spilled.eq(0),
                ]
                # one fast path per opcode (no priority chain across them)
                with m.Switch(op.payload.op):
                    with m.Case(PoolOp.INSERT):
                        with m.If(ins_c | ins_s):
                            fast_accept(self, op, self.fast, s2)
                        with m.Else():
                            m.next = "CHECK"
                    with m.Case(PoolOp.COMMIT):
                        with m.If(fast_commit_ok(self, op, self.fast)):
                            fast_commit_accept(self, op, self.fast)
                        with m.Else():
                            m.next = "CHECK"
                    with m.Case(PoolOp.RELEASE):
                        with m.If(fast_release_ok(self, op, self.fast)):
                            fast, seq = self.fast, op.payload.seq
                            release_now(self, self.cut, seq, fast, self.rel_in, fast["slot"])
                        with m.Else():
                            m.next = "CHECK"
                    with m.Case(PoolOp.SCORE):
                        with m.If(fast_score_ok(self, op, self.fast)):
                            fast_score_accept(self, self.fast, op.payload.s)
                        with m.Else():
                            m.next = "CHECK"
                    with m.Case(PoolOp.FORK):
                        with m.If(fast_fork_ok(op, self.fast, s2)):
                            self._fork(op.payload.seq, op.payload.dst)
                            m.d.sync += self.fork_done.eq(1)
                        with m.Else():
                            m.next = "CHECK"
                    with m.Default():
                        m.next = "CHECK"
            # a fast insert's own steps: the committed one's enables wait for its
            # terms only (not for the tree slots' valid query)
            with m.If(take & ins_c):
                fast_accept_committed(self, op, self.fast, s2)
            with m.If(take & ins_s):
                fast_accept_spec(self)
            # the tree slots' command of IDLE (stage 2's ADD, a fast commit's COMMIT, a
            # fast release's RELEASE): its kind and operands driven from the registers
            # and the port (only its valid waits for the checks)
            c, p, fast = self.u.ts.cmd.payload, op.payload, self.fast
            is_commit = p.op == PoolOp.COMMIT
            lo = fast["slot_lo"](fast["slot"])
            d0 = self.u.add(fast["ln"], lo, "fast_d0", sub=True)
            m.d.comb += [
                c.kind.eq(Mux(s2.valid, TsCmd.ADD, Mux(is_commit, TsCmd.COMMIT, TsCmd.RELEASE))),
                c.slot.eq(Mux(s2.valid, s2.slot, fast["slot"])),
                c.accept.eq(p.accept),
                c.d0.eq(d0),
            ]
        with m.State("REL"):  # a release that waited: done as the port's would be
            release_now(self, self.cut, o.seq, f, self.rel_op, self.slot)  # CHECK's
            m.next = "IDLE"
        with m.State("CHECK"):  # the checks and the facts registered
            # the lookups taken before, or with, it are done; a fast block tag is in;
            # the drain is done if the op pushes pages or needs the stream or a slot
            with m.If(~inflight & ~self.s2.s3 & ~drain_wait(self)):
                find = (o.op == PoolOp.FILL) | (o.op == PoolOp.SCORE)
                m.d.sync += [
                    self.code.eq(op_code(m, o, f["facts"])),
                    self.ln.eq(f["ln"]),
                    self.slot.eq(f["slot"]),
                    self.cnt.eq(0),
                    self.opening.eq(~f["has_own"]),
                    self.g.eq(Mux(find, f["find_g"], f["own_g"])),
                    self.t.eq(Mux(find, f["find_t"], f["own_t"])),
                    self.i.eq(f["find_i"]),
                    self.wait.eq(0),
                ]
                m.next = "ACT"
        with m.State("ACT"):
            self.act()
        with m.State("RESULT"):
            with m.If(~busy):
                m.d.comb += r.done.eq(~self.quiet)  # quiet: a fast insert's, shown already
                m.d.sync += self.quiet.eq(0)
                m.next = "IDLE"

    def _fork(self, src: Value, dst: Value) -> None:
        """A checked fork, in this cycle (flops only)."""
        seg = self.u.seg
        self.bb.clear(self.m, dst)
        self.m.d.comb += seg.fork_en.eq(1)  # fork_from / fork_dst: drive_operands

    def act(self) -> None:
        """``ACT``: the operation's first step, on the facts ``CHECK`` registered."""
        m, r = self.m, self.r
        o, code, seg = r.o, self.code, self.u.seg
        with m.If(o.op == PoolOp.SHARE):
            m.d.sync += r.code.eq(code)  # the tokens are taken in any case
            m.next = "SH"
        with m.Elif(code != PoolCode.NONE):
            self.finish(code)
        with m.Else():
            with m.Switch(o.op):
                with m.Case(PoolOp.INSERT):
                    tlen = seg.table_len(self.t, "ins_tlen")
                    m.d.sync += self.i.eq(Mux(self.opening, 0, tlen))
                    with m.If(self.opening):  # no segment opens before the insert's own
                        m.d.sync += [self.g.eq(seg.free_g), self.t.eq(seg.free_t)]
                    m.next = "INS"
                with m.Case(PoolOp.COMMIT):
                    m.next = "COM"
                with m.Case(PoolOp.FORK):
                    self._fork(o.seq, o.dst)
                    self.finish()
                with m.Case(PoolOp.RELEASE):
                    m.next = "REL"
                with m.Case(PoolOp.SPILL):
                    m.next = "SPL"
                with m.Case(PoolOp.FILL, PoolOp.SCORE):
                    m.next = "PTE"

    # ------------------------------------------------------------------ allocation
    def allocate(self, ret: int, then: str) -> None:
        """From the current state: spill first if no page is free, then take a page
        (``ALLOC_<then>``, the page in ``page`` / ``fresh``) and go to ``then``."""
        m = self.m
        page_free = self.f["facts"].page_free
        with m.If(self.f["alloc_wait"] | (~page_free & self.f["spec_only"])):
            pass  # the FIFO's next page is still to be pushed, or a path appended
        with m.Elif(page_free):
            m.next = f"ALLOC_{then}"
        with m.Else():
            m.d.sync += [self.ret.eq(ret), self.r.spilled.eq(1)]
            m.next = "SP_VIC"

    def alloc_states(self, then: str) -> None:
        """``ALLOC_<then>`` (the allocator's request) and ``GOT_<then>`` (its page)."""
        m, a = self.m, self.u.alloc
        with m.State(f"ALLOC_{then}"):
            m.d.comb += a.alloc.eq(1)
            m.d.sync += self.fresh.eq(a.level == 0)
            m.next = f"GOT_{then}"
        with m.State(f"GOT_{then}"):
            m.d.sync += self.page.eq(a.page)
            m.next = then

    # ------------------------------------------------------------------ insert
    def _ins_work(self, page: Value) -> None:
        """An insert's writes with its ``page``, in one cycle once the units take them."""
        m, u, o, f = self.m, self.u, self.r.o, self.f
        seg, bt, ps = u.seg, u.bt, u.ps
        m.d.sync += self.r.value.eq(page)
        with m.If(o.committed):
            opening, t, i = self.opening, self.t, self.i  # ACT's (the free ones if opening)
            with m.If(bt.cmd.ready & ps.cmd.ready):
                self.bt(BtCmd.APPEND, t, i, addr=page, token=o.token)
                self.ps(PsCmd.COMMIT, page, tab=t, pos=o.pos, fresh=self.fresh)
                m.d.comb += [
                    seg.open_en.eq(opening),
                    seg.app_en.eq(1),
                ]
                m.d.sync += u.committed_pages.eq(u.add(u.committed_pages, 1, "committed_inc"))
                self.bb.write(m, o.seq, o.pos, o.token)
                start_tag(self, o.pos + 1, ret_commit=False)
            with m.Else():
                m.next = "INS_GO"
        with m.Elif(~f["has_tree"]):
            with m.If(self.ts(_TS_OPEN, slot=f["free_slot"])):  # operands: drive_operands
                m.d.sync += self.slot.eq(f["free_slot"])
            m.next = "INS_GO"
        with m.Elif(ps.cmd.ready):  # the tree slots take an ADD in every cycle
            self.ts(_TS_ADD, slot=self.slot, page=page)  # the rest: drive_operands
            self.ps(PsCmd.SPEC, page, fresh=self.fresh)
            m.d.sync += u.spec_pages.eq(u.add(u.spec_pages, 1, "spec_inc"))
            self.finish()
        with m.Else():
            m.next = "INS_GO"

    def insert(self) -> None:
        """``INS``: a committed append or a speculative node, with a new page: the
        page's cycle writes everything (``GOT_INS_GO``), or ``INS_GO`` retries."""
        m, a = self.m, self.u.alloc
        with m.State("INS"):
            self.allocate(RET_INSERT, "INS_GO")
        with m.State("ALLOC_INS_GO"):
            m.d.comb += a.alloc.eq(1)
            m.d.sync += self.fresh.eq(a.level == 0)
            m.next = "GOT_INS_GO"
        with m.State("GOT_INS_GO"):
            m.d.sync += self.page.eq(a.page)
            self._ins_work(a.page)
        with m.State("INS_GO"):
            self._ins_work(self.page)

    # ------------------------------------------------------------------ commit
    def commit(self) -> None:
        """``COM``: the accepted nodes appended in position order, one beat per cycle;
        at the first other beat the stream goes to the drain (a rejected page is
        speculative: it is pushed to the free FIFO and its page-state word left as
        is, since a spill treats a speculative and a free page alike and the next
        allocation rewrites it)."""
        m, u, o = self.m, self.u, self.r.o
        seg, out, bt, ps = u.seg, u.ts.out, u.bt, u.ps
        with m.State("COM"):
            with m.If(self.f["acc_any"] & ~self.f["has_own"]):
                m.d.comb += seg.open_en.eq(1)
                m.d.sync += [self.g.eq(seg.free_g), self.t.eq(seg.free_t)]
            lo = self.f["slot_lo"](self.slot)
            ok = self.ts(_TS_COMMIT, slot=self.slot, accept=o.accept, d0=self.ln - lo)
            with m.If(ok):
                m.d.sync += self.left.eq(slot_count(self))
                m.next = "COM_BEAT"
        with m.State("COM_BEAT"):
            b = out.payload
            is_acc = b.kind == _TS_ACC
            take = net(m, is_acc & bt.cmd.ready & ps.cmd.ready, "com_take")
            m.d.comb += out.ready.eq(take)
            tl = seg.table_len(self.t, "com_tlen")
            ln_now = seg.len_of(o.seq, "com_len")
            with m.If(out.valid & ~is_acc):
                hand_over(self, self.left)
                self.finish()
            with m.Elif(out.valid & take):
                m.d.sync += self.left.eq(u.add(self.left, 1, "left_dec", sub=True))
                self.bt(BtCmd.APPEND, self.t, tl, addr=b.page, token=b.token)
                self.ps(PsCmd.COMMIT, b.page, tab=self.t, pos=ln_now)
                self.bb.write(m, o.seq, ln_now, b.token)
                m.d.comb += seg.app_en.eq(1)
                m.d.sync += [
                    u.committed_pages.eq(u.add(u.committed_pages, 1, "committed_inc")),
                    u.spec_pages.eq(u.add(u.spec_pages, 1, "spec_dec", sub=True)),
                ]
                start_tag(self, ln_now + 1, ret_commit=True)

    # ------------------------------------------------------------------ spill, fill, score


def drive_operands(fsm, op, fast: dict) -> None:
    """The segment table's operand controls, driven always: only their enables wait
    for the checks (an operand behind a check's multiplexer puts the check in front
    of every segment's update). The port's operation in ``IDLE``, else the registered
    one; an append is the drain's while a fast commit's path is appended (nothing
    else appends then), a fast insert's in ``IDLE``, else the FSM's (``g``, ``t``)."""
    m, u, r = fsm.m, fsm.u, fsm.r
    seg, o, p, idle = u.seg, r.o, op.payload, r.idle
    opening = ~fast["has_own"]
    fast_g = Mux(opening, seg.free_g, fast["own_g"])
    fast_t = Mux(opening, seg.free_t, fast["own_t"])
    drain = u.drain_acc
    m.d.comb += [
        seg.open_seq.eq(Mux(idle, p.seq, o.seq)),
        seg.open_len.eq(Mux(idle, fast["ln"], fsm.ln)),
        seg.app_seq.eq(Mux(drain, u.drain_seq, Mux(idle, p.seq, o.seq))),
        seg.app_g.eq(Mux(drain, u.drain_g, Mux(idle, fast_g, fsm.g))),
        seg.app_t.eq(Mux(drain, u.drain_t, Mux(idle, fast_t, fsm.t))),
        seg.app_keep_len.eq(drain),
        seg.len_seq.eq(p.seq),  # only a fast commit moves a length by len_k
        seg.len_k.eq(p.acc_len),
        seg.fork_from.eq(Mux(idle, p.seq, o.seq)),
        seg.fork_dst.eq(Mux(idle, p.dst, o.dst)),
    ]
    # the block buffer: the port's insert when nothing else can append
    fsm.bb.fast_operands(m, idle & ~drain, p.seq, p.pos, p.token)
    # the tree slots' operands of an ADD or OPEN: stage 2's in IDLE, else the op's
    c, s2 = u.ts.cmd.payload, fsm.s2
    m.d.comb += [
        c.pos.eq(Mux(idle, s2.pos, o.pos)),
        c.node.eq(Mux(idle, s2.owner, o.owner)),
        c.token.eq(Mux(idle, s2.token, o.token)),
        c.seq.eq(o.seq),
    ]


def op_fsm(
    m: Module,
    op,
    u: Units,
    r: OpRegs,
    p: dict,
    facts: dict,
    inflight: Value,
    *,
    crc,
    tags,
    tok,
    fast: dict,
) -> tuple[Signal, Signal, Signal, Value, object]:
    """Build the operation FSM (``p``: the pool's parameters and widths; ``facts``:
    the comb values its checks and steps read, ``fast`` the same of the port's op, see
    :func:`hw.kvpool.pool.ScaledPool`). Returns ``(res_fast, fork_done, done_next,
    lookup_hold)``: a fast insert's, a fast fork's, a fast commit's result is shown
    this cycle; lookups must wait
    (:mod:`hw.kvpool.pool_fast`); and the FSM's registers, ``state``: the builder, whose
    attributes are its registers (``t``, ``i``, ``g``, ..., the fast insert's ``s2``,
    the cut job's ``cut``) and whose ``states`` is the ``m.FSM`` (its ``state`` and
    ``encoding``), for the formal checks (decision 0026)."""
    fsm = _Fsm(m, u, r, p, facts)
    fsm.s2 = s2 = make_stage2(fsm)
    fsm.cut = cut_regs(m, u)
    fsm.rel_in = release_counts(fsm, op.payload.seq, fast, "rel_in")
    fsm.rel_op = release_counts(fsm, r.o.seq, facts, "rel_op")
    fsm.sc = score_regs(m, fsm)
    fsm.crc = crc
    fsm.bb = BlockBuf(m, p["SEQS"], p["token_bits"], r.o.seq)
    # the buffer read for the next cycle: the drain's sequence, else the port's op's
    m.d.comb += fsm.bb.raddr.eq(Mux(u.drain_acc, u.drain_seq, op.payload.seq))
    fast_tags(fsm, s2, crc, tags)
    fsm.res_fast = Signal(name="res_fast")
    o = op.payload
    fsm.fast = fast | {
        "node_busy": fast["facts"].node_valid
        | (s2.valid & ~s2.committed & (s2.slot == fast["slot"]) & (s2.owner == o.owner))
    }
    fsm.ins = fast_eligible(m, op, fsm.fast)  # (committed, speculative), read in IDLE
    # the op's own units are idle (a cut's stream or the drain's belong to them)
    busy = (u.bt.busy & ~u.cutting) | u.ps.busy | (u.ts.busy & ~u.drain)
    tag_setup(fsm)
    fsm.sh = sh = ShareRegs(fsm)
    with m.FSM(name="op") as states:
        fsm.frame(op, inflight, busy)
        fsm.insert()
        fsm.commit()
        spill_one(fsm)
        spill_fill_score(fsm)
        tag_states(fsm, crc, tags)
        share_states(fsm, sh, crc, tags, tok)
    fsm.states = states
    # the FSM's states that drive no unit (an allocation waiting for the drain too)
    quiet = [states.ongoing(n) for n in ("IDLE", "CHECK", "INS", "FILL_ALLOC", "RESULT")]
    units_free = Cat(*quiet).any() & ~s2.valid
    drain(fsm, units_free)
    drive_operands(fsm, op, fsm.fast)
    cut_engine(fsm, fsm.cut, units_free, inflight)
    score_engine(fsm, units_free)
    return fsm.res_fast, fsm.fork_done, fsm.done_next, s2.valid | s2.after, fsm
