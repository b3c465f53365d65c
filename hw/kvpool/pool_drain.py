"""The scaled pool's drain: a commit's or release's stream from the tree slots,
carried out while the next operations run (decision 0016 §5, §6).

A sequential commit returns once its accepted path is appended, a release
once its tree's stream has started: the rest of the stream (the rejected
nodes, then END) is handed to the drain (:func:`hand_over`). A fast commit
(:mod:`hw.kvpool.pool_commit`) hands over the whole stream, its length
already moved: the drain first appends the accepted path (``drain_acc``),
one node per cycle in which nothing else uses the block tables and page
states; an append that ends a block has its tag computed from the block
buffer (:mod:`hw.kvpool.pool_blockbuf`, complete: the commit was taken fast
only then) and entered in the next cycle (stage 3 of the fast insert). The
rejected pages are pushed to the free FIFO, one per cycle (:func:`drain`);
they count as free at once (``pending``, added to ``free_pages``), and an
allocation that would take the FIFO's next page while it is still pending
waits for its push (the facts' ``alloc_wait``).
Waiting in ``CHECK`` (:func:`drain_wait`): an operation that pushes pages
itself or needs the stream (commit, release, spill); a speculative insert
that needs a tree slot while only the draining one would be free; while an
accepted path is appended, every operation but a speculative insert (and
lookups of its sequence, :class:`hw.kvpool.pool.ScaledPool`; an allocation
that must spill waits too, since the path's pages join the spill queue).
So the free FIFO's and the spill queue's order, and every result, are the
golden model's, which does it all in the operation.
"""

from amaranth.hdl import Value

from hw.kvpool.blocktable import BtCmd
from hw.kvpool.layouts import PoolOp
from hw.kvpool.pagestate import PsCmd
from hw.kvpool.pool_blockbuf import BLOCK
from hw.kvpool.pool_fast import block_tag
from hw.kvpool.treeslots_layouts import TsOut

__all__ = ["drain", "drain_wait", "hand_over", "slot_count"]


def slot_count(fsm, slot: Value | None = None) -> Value:
    """The valid nodes of tree slot ``slot`` (default: the op's, ``fsm.slot``)."""
    ts = fsm.u.ts
    cb = len(ts.slot_count) // fsm.p["trees"]
    return Value.cast(ts.slot_count).word_select(fsm.slot if slot is None else slot, cb)


def drain_wait(fsm) -> Value:
    """The op in ``CHECK`` waits for the drain: it pushes pages or streams (commit,
    release, spill), or is a speculative insert that needs a tree slot while none
    is free (the draining one is free in the golden model)."""
    o, f, u = fsm.r.o, fsm.f, fsm.u
    op = o.op
    streams = (op == PoolOp.COMMIT) | (op == PoolOp.RELEASE) | (op == PoolOp.SPILL)
    spec = (op == PoolOp.INSERT) & ~o.committed
    new_tree = spec & ~f["has_tree"]
    # while the drain appends an accepted path, only speculative inserts go on
    busy = u.drain | u.cutting
    return (busy & (streams | (new_tree & ~f["facts"].tree_free))) | (f["spec_only"] & ~spec)


def hand_over(fsm, rejected: Value) -> None:
    """The tree slots' stream goes to the drain with ``rejected`` pages to push:
    counted free and no longer speculative now, the op's result ``freed`` grows."""
    m, u, r = fsm.m, fsm.u, fsm.r
    m.d.sync += [
        u.drain.eq(1),
        u.pending.eq(rejected),
        u.spec_pages.eq(u.add(u.spec_pages, rejected, "spec_minus_rej", sub=True)),
        r.value.eq(u.add(r.value, rejected, "value_plus_rej")),
    ]


def drain(fsm, units_free: Value) -> None:
    """The drain: while it owns the tree slots' stream, a fast commit's accepted nodes
    are appended (one per cycle in which the operation FSM and a fast insert leave
    the block tables, page states and segment table alone: ``units_free``), then
    each rejected node's page is pushed to the free FIFO (one per cycle); the END
    beat ends it."""
    m, u = fsm.m, fsm.u
    out, seg = u.ts.out, u.seg
    b = out.payload
    take = units_free & u.bt.cmd.ready & u.ps.cmd.ready
    with m.If(u.drain & u.drain_acc):
        with m.If(out.valid & (b.kind != TsOut.ACC)):
            m.d.sync += u.drain_acc.eq(0)
        with m.Elif(out.valid & take):
            m.d.comb += out.ready.eq(1)
            tl = seg.table_len(u.drain_t, "drain_tlen")
            fsm.bt(BtCmd.APPEND, u.drain_t, tl, addr=b.page, token=b.token)
            fsm.ps(PsCmd.COMMIT, b.page, tab=u.drain_t, pos=u.drain_pos)
            fsm.bb.write(m, u.drain_seq, u.drain_pos, b.token)
            with m.If(u.drain_pos[:4] == BLOCK - 1):  # a block ends: its buffer is complete
                block_tag(fsm, u.drain_seq, u.drain_pos, fsm.bb.block(b.token), "drain_prev")
            m.d.comb += [
                seg.app_en.eq(1),
            ]
            m.d.sync += u.drain_pos.eq(u.drain_pos + 1)
    with m.Elif(u.drain & ~u.cutting):  # a release's tree after its cut
        m.d.comb += out.ready.eq(1)
        with m.If(out.valid):
            with m.If(out.payload.kind == TsOut.REJ):
                m.d.comb += [u.alloc.push.eq(1), u.alloc.push_page.eq(out.payload.page)]
                m.d.sync += u.pending.eq(u.add(u.pending, 1, "pending_dec", sub=True))
            with m.Else():
                m.d.sync += u.drain.eq(0)
