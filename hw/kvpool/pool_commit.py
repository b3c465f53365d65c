"""The scaled pool's fast commit: taken on the port, its result in the next cycle.

A commit that passes its checks on the port's values (facts ``fast`` of
:meth:`hw.kvpool.pool.ScaledPool._facts`) while the drain is idle is taken in
``IDLE`` (:func:`fast_commit_accept`, cycle ``t``): the tree slots' COMMIT is
issued, the sequence's own segment opened if it has none and something is
accepted. In ``FC`` (``t + 1``) the tree slots count the accepted nodes
(``acc_count``, a popcount of ``valid & accept``: the accepted path, which
the sampler gives as a chain, SPEC §4.8 ``NOT_CHAIN``). If the path ends a
16-token block, the commit goes on as a sequential one (``COM_BEAT``: the
appends, the block's tag). Otherwise (:func:`fast_commit_stage2`) the
sequence's length and the counts move at once, the result is shown in
``t + 2`` (with the counts), and the whole stream goes to the drain
(:mod:`hw.kvpool.pool_drain`): it appends the accepted path, then pushes the
rejected pages. The next operation is taken in ``t + 2``.
"""

from amaranth.hdl import Value

from hw.common import zext
from hw.kvpool.layouts import PoolOp
from hw.kvpool.pool_drain import slot_count
from hw.kvpool.treeslots_layouts import TsCmd

__all__ = ["fast_commit_ok", "fast_commit_accept", "fast_commit_stage2"]

BLOCK = 16  # SPEC §4.6 *Tags*


def fast_commit_ok(fsm, op, fast: dict) -> Value:
    """The op on the port is a commit that succeeds, with the drain and the tree
    slots' stream idle and no fast insert's stage 2 or 3 in flight."""
    o, f, u, s2 = op.payload, fast["facts"], fsm.u, fsm.s2
    return (
        (o.op == PoolOp.COMMIT)
        & f.seq_ok
        & f.has_tree
        & o.accept[0]
        & (f.has_own | f.seg_free | ~f.acc_any)
        & ~u.drain
        & ~u.ts.busy
        & ~s2.valid
        & ~s2.s3
    )


def fast_commit_accept(fsm, op, fast: dict) -> None:
    """In ``IDLE``, the cycle a fast commit is taken: the tree slots' COMMIT, the own
    segment opened if needed, the registers ``FC`` reads."""
    m, u, f = fsm.m, fsm.u, fast["facts"]
    seg, o = u.seg, op.payload
    slot, ln = fast["slot"], fast["ln"]
    fsm.ts(TsCmd.COMMIT, slot=slot, accept=o.accept, d0=ln - fast["slot_lo"](slot))
    opening = f.acc_any & ~fast["has_own"]
    with m.If(opening):
        m.d.comb += [seg.open_en.eq(1), seg.open_seq.eq(o.seq), seg.open_len.eq(ln)]
        m.d.sync += [fsm.g.eq(seg.free_g), fsm.t.eq(seg.free_t)]
    with m.Else():
        m.d.sync += [fsm.g.eq(fast["own_g"]), fsm.t.eq(fast["own_t"])]
    m.d.sync += [fsm.slot.eq(slot), fsm.ln.eq(ln), fsm.left.eq(slot_count(fsm, slot))]
    m.next = "FC"


def fast_commit_stage2(fsm) -> None:
    """``FC``: the accepted path's length; a block end goes on as a sequential commit,
    else everything moves now and the stream goes to the drain."""
    m, u, r = fsm.m, fsm.u, fsm.r
    seg, o = u.seg, r.o
    k = u.ts.acc_count
    w = len(k) + 1
    ends_block = zext(fsm.ln[:4], w) + zext(k, w) >= BLOCK
    with m.If(ends_block):
        m.next = "COM_BEAT"
    with m.Else():
        rejected = fsm.left - k
        m.d.comb += [seg.len_add.eq(1), seg.len_seq.eq(o.seq), seg.len_k.eq(k)]
        m.d.sync += [
            r.value.eq(rejected),
            fsm.commit_done.eq(1),  # the result in the next cycle, with the counts
            u.committed_pages.eq(u.committed_pages + k),
            u.spec_pages.eq(u.spec_pages - fsm.left),
            u.drain.eq(1),
            u.pending.eq(rejected),
            u.drain_acc.eq(k != 0),
            u.drain_seq.eq(o.seq),
            u.drain_g.eq(fsm.g),
            u.drain_t.eq(fsm.t),
            u.drain_pos.eq(fsm.ln),
        ]
        m.next = "IDLE"
