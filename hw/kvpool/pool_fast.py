"""The scaled pool's fast insert: one insert per cycle, checked on the port.

An insert that is certain to succeed without a spill is taken in ``IDLE``
and done in two cycles, overlapped with the next insert:

* **cycle ``t``** (taken): its checks pass on the port's values (facts
  ``fast`` of :meth:`hw.kvpool.pool.ScaledPool._facts`); the allocator is
  asked for a page; a committed insert's segment, table length and sequence
  length are updated (opening its own segment if it has none); the counts
  move. So an operation taken at ``t + 1`` is checked against all of it.
* **cycle ``t + 1``** (stage 2): the page arrives; the block-table append or
  the tree-slot node, and the page state, are written; the result is shown.
  An append that ends a 16-token block whose other 15 tokens are in its
  sequence's block buffer (:mod:`hw.kvpool.pool_blockbuf`) has its tag
  computed in this cycle and entered in the next (stage 3), with no stall;
  any other block end (a forked sequence's first) goes on to the tag states
  (the port waits for them; their ``RESULT`` shows nothing).

A fork that succeeds is done in its cycle too (flops only) and shows its
result in the next.

Eligible: a committed insert at ``pos == len`` with an own segment or a free
one, or a speculative insert into the sequence's active tree, inside its
window, of a node not valid (nor being added by stage 2), while a page is
free. Everything else (errors, a tree to open, a spill) takes the
sequential path, with the same results. Lookups are not taken while stage 2
writes or in the cycle after (the block table shows an append two cycles
after it is taken).
"""

from dataclasses import dataclass

from amaranth.hdl import Module, Mux, Signal, Value

from hw.common import net
from hw.kvpool.blocktable import BtCmd
from hw.kvpool.layouts import PoolOp
from hw.kvpool.pagestate import PsCmd
from hw.kvpool.treeslots import TsCmd

__all__ = [
    "Stage2",
    "make_stage2",
    "fast_eligible",
    "fast_fork_ok",
    "fast_accept",
    "fast_accept_committed",
    "fast_accept_spec",
    "fast_stage2",
    "fast_tags",
    "block_tag",
]


@dataclass
class Stage2:
    """The fast insert's second-cycle registers."""

    valid: Signal
    committed: Signal
    seq: Signal
    pos: Signal
    owner: Signal
    token: Signal
    t: Signal
    i: Signal
    slot: Signal
    fresh: Signal
    tag: Signal  # the append ends a block whose tokens are not all buffered
    tagfast: Signal  # the append ends a block whose other tokens are in the buffer
    after: Signal  # stage 2 was busy last cycle (lookups wait one more)
    # stage 3 of a buffered block: its tag out of the tag step
    s3: Signal
    s3_seq: Signal
    s3_block: Signal


def make_stage2(fsm) -> Stage2:
    """The registers, named ``s2_*``."""
    o, seg, p = fsm.r.o, fsm.u.seg, fsm.p
    s = Stage2(
        valid=Signal(name="s2_valid"),
        committed=Signal(name="s2_committed"),
        seq=Signal.like(o.seq, name="s2_seq"),
        pos=Signal.like(o.pos, name="s2_pos"),
        owner=Signal.like(o.owner, name="s2_owner"),
        token=Signal.like(o.token, name="s2_token"),
        t=Signal(seg.gb, name="s2_t"),
        i=Signal(len(seg.len[0]), name="s2_i"),
        slot=Signal(range(max(2, p["trees"])), name="s2_slot"),
        fresh=Signal(name="s2_fresh"),
        tag=Signal(name="s2_tag"),
        tagfast=Signal(name="s2_tagfast"),
        after=Signal(name="s2_after"),
        s3=Signal(name="s3_valid"),
        s3_seq=Signal.like(o.seq, name="s3_seq"),
        s3_block=Signal.like(o.pos, name="s3_block"),
    )
    fsm.m.d.sync += [s.valid.eq(0), s.after.eq(s.valid), s.s3.eq(0)]
    return s


def fast_tags(fsm, s2: Stage2, crc, tags) -> None:
    """Outside the FSM: stage 3 of a buffered block (its tag into the sequence's
    register and the tag table; a fast insert's or the drain's)."""
    m, seg = fsm.m, fsm.u.seg
    with m.If(s2.s3):
        c = tags.cmd
        m.d.comb += [
            seg.tag_en.eq(1),
            seg.tag_seq.eq(s2.s3_seq),
            seg.tag_val.eq(crc.tag),
            c.valid.eq(1),
            c.payload.kind.eq(0),
            c.payload.tag.eq(crc.tag),
            c.payload.seq.eq(s2.s3_seq),
            c.payload.block.eq(s2.s3_block),
        ]


def block_tag(fsm, seq: Value, pos: Value, tokens: Value, name: str) -> None:
    """The tag step of the block that position ``pos`` of ``seq`` ends (its ``tokens``
    from the block buffer): the CRC now, stage 3 enters it in the next cycle."""
    m, s2 = fsm.m, fsm.s2
    m.d.comb += [
        fsm.crc.i_valid.eq(1),
        fsm.crc.i.prev.eq(fsm.u.seg.tag_of(seq, name)),
        fsm.crc.i.tokens.eq(tokens),
    ]
    m.d.sync += [s2.s3.eq(1), s2.s3_seq.eq(seq), s2.s3_block.eq(pos >> 4)]


def fast_eligible(m: Module, op, fast: dict) -> tuple[Value, Value]:
    """The op on the port is an insert the fast path takes (see the module docstring):
    ``(committed, speculative)``, two terms, so the committed insert's enables do not
    wait for the tree slots' valid query (only a speculative one reads it)."""
    o, f = op.payload, fast["facts"]
    # a committed one not while a fast commit's path is appended (same units)
    committed_ok = f.pos_eq_len & (f.has_own | f.seg_free) & ~fast["spec_only"]
    spec_ok = ~f.pos_lt_len & f.has_tree & f.in_window & ~fast["node_busy"]
    common = (o.op == PoolOp.INSERT) & f.seq_ok & f.owner_ok & f.page_free & ~fast["alloc_wait"]
    return (
        net(m, common & o.committed & committed_ok, "fast_ins_c"),
        net(m, common & ~o.committed & spec_ok, "fast_ins_s"),
    )


def fast_fork_ok(op, fast: dict, s2: Stage2) -> Value:
    """The op on the port is a fork that succeeds (it is done in its cycle: flops
    only), with no stage 2 or 3 in flight (a block tag of ``src`` still to land)."""
    o, f = op.payload, fast["facts"]
    return (
        (o.op == PoolOp.FORK)
        & f.seq_ok
        & f.dst_ok
        & (o.seq != o.dst)
        & f.ln_nz
        & ~f.dst_nz
        & ~f.dst_tree
        & ~fast["spec_only"]
        & ~s2.valid
        & ~s2.s3
    )


def fast_accept(fsm, op, fast: dict, s2: Stage2) -> None:
    """In ``IDLE``, the cycle a fast insert is taken: page asked for, stage 2 loaded
    (the committed and the speculative one's own steps: :func:`fast_accept_committed`,
    :func:`fast_accept_spec`)."""
    m, a, o = fsm.m, fsm.u.alloc, op.payload
    m.d.comb += a.alloc.eq(1)
    m.d.sync += [
        s2.valid.eq(1),
        s2.committed.eq(o.committed),
        s2.seq.eq(o.seq),
        s2.pos.eq(o.pos),
        s2.owner.eq(o.owner),
        s2.token.eq(o.token),
        s2.slot.eq(fast["slot"]),
        s2.fresh.eq(a.level == 0),
        s2.tag.eq(0),  # a speculative insert ends no block
        s2.tagfast.eq(0),
    ]


def fast_accept_committed(fsm, op, fast: dict, s2: Stage2) -> None:
    """In ``IDLE``, after :func:`fast_accept`, a committed fast insert's own steps: its
    segment opened or appended to, its block buffered, the committed count."""
    m, u, o = fsm.m, fsm.u, op.payload
    seg = u.seg
    ends = (o.pos + 1)[:4] == 0
    ok = fsm.bb.ok_of(o.seq)
    fsm.bb.write_fast(m)  # its operands: drive_operands
    m.d.sync += [s2.tag.eq(ends & ~ok), s2.tagfast.eq(ends & ok)]
    opening = ~fast["has_own"]
    t = Mux(opening, seg.free_t, fast["own_t"])
    i = Mux(opening, 0, seg.table_len(fast["own_t"], "fast_tlen"))
    m.d.comb += [seg.open_en.eq(opening), seg.app_en.eq(1)]
    committed = u.add(u.committed_pages, 1, "committed_inc")
    m.d.sync += [s2.t.eq(t), s2.i.eq(i), u.committed_pages.eq(committed)]


def fast_accept_spec(fsm) -> None:
    """In ``IDLE``, a speculative fast insert's own step: the speculative count."""
    u = fsm.u
    fsm.m.d.sync += u.spec_pages.eq(u.add(u.spec_pages, 1, "spec_inc"))


def fast_stage2(fsm, s2: Stage2, res_fast: Signal) -> None:
    """In ``IDLE``, stage 2: the writes with the page, the result (``res_fast``)."""
    m, u = fsm.m, fsm.u
    page = u.alloc.page
    with m.If(s2.valid):
        m.d.comb += res_fast.eq(1)
        with m.If(s2.committed):
            fsm.bt(BtCmd.APPEND, s2.t, s2.i, addr=page, token=s2.token)
            fsm.ps(PsCmd.COMMIT, page, tab=s2.t, pos=s2.pos, fresh=s2.fresh)
        with m.Else():
            fsm.ts(TsCmd.ADD, slot=s2.slot, page=page)  # pos, node, token: drive_operands
            fsm.ps(PsCmd.SPEC, page, fresh=s2.fresh)
        with m.If(s2.tagfast):  # the block's tokens are buffered: the tag step now
            block_tag(fsm, s2.seq, s2.pos, fsm.bb.block(s2.token), "fast_prev")
        with m.If(s2.tag):  # the block's tag: the tag states, then a silent RESULT
            m.d.sync += [
                fsm.tpos.eq(s2.pos + 1 - 16),
                fsm.wait.eq(0),
                fsm.got.eq(0),
                fsm.collect.eq(1),
                fsm.tret.eq(0),
                fsm.quiet.eq(1),
            ]
            m.next = "TAG_RD"
