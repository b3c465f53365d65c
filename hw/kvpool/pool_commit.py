"""The scaled pool's fast commit: checked on the port, done in one cycle.

A commit that passes its checks on the port's values (facts ``fast`` of
:meth:`hw.kvpool.pool.ScaledPool._facts`) while the drain is idle is taken in
``IDLE`` (:func:`fast_commit_accept`, cycle ``t``): the tree slots' COMMIT is
issued, the sequence's own segment opened if it has none and something is
accepted, and :func:`_move` moves everything at once: the sequence's length
(``+ k``), the counts, the result (``freed``: the tree's nodes minus ``k``,
shown in the next cycle with the counts), and the whole stream goes to the
drain (:mod:`hw.kvpool.pool_drain`), which appends the accepted path and then
pushes the rejected pages. The next operation is taken in ``t + 1``.

``k``, the accepted nodes (``valid & accept``), is the op's ``acc_len``: the
acceptance sampler gives it with the path (its ``accepted + 1``), and the RTL
trusts it as it trusts the path's chain shape (SPEC §4.8 ``NOT_CHAIN``,
decision 0020): a popcount of ``N_NODES`` bits in the commit's cycle is
about 44 gate levels at 512 nodes. A commit whose path ends a 16-token block
of a sequence whose block buffer is not complete (:mod:`hw.kvpool.pool_blockbuf`:
a forked sequence's first block; the sequential commit reads that block back
for its tag) is not taken fast.
"""

from amaranth.hdl import Mux, Value

from hw.common import zext
from hw.kvpool.layouts import PoolOp
from hw.kvpool.pool_drain import slot_count
from hw.kvpool.treeslots_layouts import TsCmd

__all__ = ["fast_commit_ok", "fast_commit_accept"]

BLOCK = 16  # SPEC §4.6 *Tags*


def _ends_block(ln: Value, k: Value) -> Value:
    """Appending ``k`` positions at length ``ln`` reaches a multiple of ``BLOCK``."""
    w = len(k) + 1
    return zext(ln[:4], w) + zext(k, w) >= BLOCK


def fast_commit_ok(fsm, op, fast: dict) -> Value:
    """The op on the port is a commit that succeeds, with the drain and the tree
    slots' stream idle, no fast insert's stage 2 or 3 in flight, and a path that
    ends no block or a complete buffer."""
    o, f, u, s2 = op.payload, fast["facts"], fsm.u, fsm.s2
    ok = (
        (o.op == PoolOp.COMMIT)
        & f.seq_ok
        & f.has_tree
        & o.accept[0]
        & (f.has_own | f.seg_free | ~f.acc_any)
        & ~u.drain
        & ~fast["spec_only"]
        & ~u.ts.busy
        & ~s2.valid
        & ~s2.s3
        & (fsm.bb.ok_of(o.seq) | ~_ends_block(fast["ln"], o.acc_len))
    )
    return ok


def fast_commit_accept(fsm, op, fast: dict) -> None:
    """In ``IDLE``, the cycle a fast commit is taken: the tree slots' COMMIT, the own
    segment opened if needed, and everything else (:func:`_move`)."""
    m, u, f = fsm.m, fsm.u, fast["facts"]
    seg, o = u.seg, op.payload
    slot, ln = fast["slot"], fast["ln"]
    fsm.ts(TsCmd.COMMIT, slot=slot, accept=o.accept, d0=ln - fast["slot_lo"](slot))
    opening = f.acc_any & ~fast["has_own"]
    with m.If(opening):
        m.d.comb += seg.open_en.eq(1)  # operands: hw.kvpool.pool_ops.drive_operands
    g = Mux(opening, seg.free_g, fast["own_g"])
    t = Mux(opening, seg.free_t, fast["own_t"])
    _move(fsm, o.seq, o.acc_len, slot_count(fsm, slot), g, t, ln)


def _move(fsm, seq: Value, k: Value, count: Value, g: Value, t: Value, ln: Value) -> None:
    """The commit's effects at once: ``len(seq) += k``, the counts, the result in the
    next cycle (``freed = count - k``), the stream to the drain (the path appended to
    table ``t`` of segment ``g`` from position ``ln``, the rest pushed)."""
    m, u, r = fsm.m, fsm.u, fsm.r
    seg = u.seg
    w = len(u.committed_pages)  # Units.add: nets built outside the FSM
    rejected = u.add(zext(count, w), k, "com_rejected", sub=True)
    committed = u.add(u.committed_pages, k, "com_committed")
    spec = u.add(u.spec_pages, count, "com_spec", sub=True)
    m.d.comb += seg.len_add.eq(1)  # len_seq, len_k: the port's (drive_operands)
    m.d.sync += [
        r.value.eq(rejected),
        fsm.done_next.eq(1),
        u.committed_pages.eq(committed),
        u.spec_pages.eq(spec),
        u.drain.eq(1),
        u.pending.eq(rejected),
        u.drain_acc.eq(k != 0),
        u.drain_seq.eq(seq),
        u.drain_g.eq(g),
        u.drain_t.eq(t),
        u.drain_pos.eq(ln),
    ]
