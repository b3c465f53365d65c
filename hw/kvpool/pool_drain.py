"""The scaled pool's drain: a finished commit's or release's rejected pages, pushed
to the free FIFO while the next operations run (decision 0016 §5, §6).

A commit returns once its accepted path is appended, a release once its
tree's stream has started: the tree slots' stream (the rejected nodes, then
END) is handed to the drain (:func:`hand_over`), which pushes one rejected
page per cycle to the free FIFO (:func:`drain`). The pages count as free at
once (``pending``, added to ``free_pages``); an allocation that would take
the FIFO's next page while it is still pending waits for its push (the
facts' ``alloc_wait``); an operation that pushes pages itself or needs the
stream (commit, release, spill), or a speculative insert that needs a tree
slot while only the draining one would be free, waits in ``CHECK`` for the
drain's end (:func:`drain_wait`). So the free FIFO's order, and every
result, is the golden model's, which frees the pages in the operation.
"""

from amaranth.hdl import Module, Value

from hw.kvpool.layouts import PoolOp
from hw.kvpool.pool_units import Units
from hw.kvpool.treeslots import TsOut

__all__ = ["drain", "drain_wait", "hand_over", "slot_count"]


def slot_count(fsm) -> Value:
    """The valid nodes of the op's tree slot (``slot``)."""
    ts = fsm.u.ts
    cb = len(ts.slot_count) // fsm.p["trees"]
    return Value.cast(ts.slot_count).word_select(fsm.slot, cb)


def drain_wait(fsm) -> Value:
    """The op in ``CHECK`` waits for the drain: it pushes pages or streams (commit,
    release, spill), or is a speculative insert that needs a tree slot while none
    is free (the draining one is free in the golden model)."""
    o, f = fsm.r.o, fsm.f
    op = o.op
    streams = (op == PoolOp.COMMIT) | (op == PoolOp.RELEASE) | (op == PoolOp.SPILL)
    new_tree = (op == PoolOp.INSERT) & ~o.committed & ~f["has_tree"]
    return fsm.u.drain & (streams | (new_tree & ~f["facts"].tree_free))


def hand_over(fsm, rejected: Value) -> None:
    """The tree slots' stream goes to the drain with ``rejected`` pages to push:
    counted free and no longer speculative now, the op's result ``freed`` grows."""
    m, u, r = fsm.m, fsm.u, fsm.r
    m.d.sync += [
        u.drain.eq(1),
        u.pending.eq(rejected),
        u.spec_pages.eq(u.spec_pages - rejected),
        r.value.eq(r.value + rejected),
    ]


def drain(m: Module, u: Units) -> None:
    """The drain: while it owns the tree slots' stream, each rejected node's page is
    pushed to the free FIFO (one per cycle); the END beat ends it."""
    out = u.ts.out
    with m.If(u.drain):
        m.d.comb += out.ready.eq(1)
        with m.If(out.valid):
            with m.If(out.payload.kind == TsOut.REJ):
                m.d.comb += [u.alloc.push.eq(1), u.alloc.push_page.eq(out.payload.page)]
                m.d.sync += u.pending.eq(u.pending - 1)
            with m.Else():
                m.d.sync += u.drain.eq(0)
