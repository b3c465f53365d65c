"""The op port's handshake and the result pipeline, the counts and the ``error`` pulse.

Stage 1 (``r1``) holds the operation's own results, registered at the edge
that takes its beat; an insert's conflict checks are finished in r1's cycle
(``hw.kv_pool.insert``). Stage 2 (``res``) adds the counts, population
counts of the state after the operation (no other operation is taken while
r1 waits). ``op`` stalls only while both stages are full.
"""

from dataclasses import dataclass

from amaranth import Module, Mux, Signal
from amaranth.lib import wiring

from hw.common import net, popcount
from hw.kv_pool.bundles import Decoded, Enables, InsertChecks
from hw.kv_pool.layouts import ErrorCode, result_layout
from hw.kv_pool.state import Dims
from hw.kv_pool.variant import Stream

__all__ = ["Stage1", "handshake", "results"]


@dataclass(frozen=True)
class Stage1:
    """The result pipeline's first stage and the op port's handshake."""

    r1: Signal  #: the result beat being built
    r1_chk: Signal  #: r1 is an insert past its range checks
    r1_go: Signal  #: ... and there was a free entry and page: it was pending
    move: Signal  #: r1 moves to ``res`` at this edge
    take: Signal  #: ``op`` takes a beat at this edge


def handshake(m: Module, dims: Dims, op: Stream, res: Stream, r1_valid: Signal) -> Stage1:
    """``op.ready`` and the take / move conditions of the two stages."""
    r1 = Signal(result_layout(dims.entries, dims.pages))
    r1_chk = Signal()
    r1_go = Signal()
    res_free = ~res.valid | res.ready
    move = net(m, r1_valid & res_free, "move")
    m.d.comb += op.ready.eq(~r1_valid | move)
    take = net(m, op.valid & op.ready, "take")
    return Stage1(r1, r1_chk, r1_go, move, take)


def results(
    m: Module,
    pool: wiring.Component,
    st: Stage1,
    d: Decoded,
    code: Signal,
    ins: InsertChecks,
    en: Enables,
    freed: Signal,
    checks_d: tuple[Signal, Signal],
    finished: tuple[Signal, Signal],
) -> None:
    """Build the two result stages, the status counts and ``error`` of ``pool``
    (:class:`hw.kv_pool.KVPool`). ``checks_d``: the insert's per-group check bits
    (``ck_com_d``, ``ck_dup_d``), loaded with r1; ``finished``: the pending insert's
    finished checks (``seen_com``, ``spec_dup``)."""
    it = pool.internals
    table, pend, r1_valid = it.table, it.pending, it.r1_valid
    res, r1, take, move = pool.res, st.r1, st.take, st.move
    seen_com, spec_dup = finished
    n_free = popcount(m, table.free_p, "pc_free", late=pend.ins_rej)
    n_valid = popcount(m, table.valid, "pc_valid", late=pend.ins_ok)
    err = net(m, code != ErrorCode.NONE, "err")
    with m.If(take):
        m.d.sync += [
            r1_valid.eq(1),
            st.r1_chk.eq(en.ins_chk),
            st.r1_go.eq(en.ins_go),
            r1.op.eq(d.o.op),
            r1.code.eq(code),
            r1.page.eq(ins.e_idx),
            r1.entry.eq(ins.e_idx),
            r1.freed.eq(freed),
            # the pending insert's checks, finished in r1's cycle
            pend.ck_com.eq(checks_d[0]),
            pend.ck_dup.eq(checks_d[1]),
            pend.ck_pcom.eq(ins.pc_com),
            pend.ck_pdup.eq(ins.pc_dup),
        ]
    with m.Elif(move):
        m.d.sync += r1_valid.eq(0)
    r1_ok = st.r1_go & ~seen_com & ~spec_dup
    code_f = Mux(
        st.r1_chk & seen_com,
        ErrorCode.SEEN_COMMITTED,
        Mux(st.r1_chk & spec_dup, ErrorCode.SPEC_DUP, r1.code),
    )
    with m.If(move):
        m.d.sync += [
            res.valid.eq(1),
            res.payload.eq(r1),
            res.payload.error.eq(code_f != ErrorCode.NONE),
            res.payload.code.eq(code_f),
            res.payload.page.eq(Mux(r1_ok, r1.page, 0)),
            res.payload.entry.eq(Mux(r1_ok, r1.entry, 0)),
            res.payload.free_pages.eq(n_free),
            res.payload.valid_entries.eq(n_valid),
        ]
    with m.Elif(res.ready):
        m.d.sync += res.valid.eq(0)

    S = pool.SEQS
    dq, vq = pool.draft_q, pool.verify_q
    error_r = Signal()
    m.d.sync += [
        pool.free_pages.eq(n_free),
        pool.valid_entries.eq(n_valid),
        error_r.eq(
            (take & err)
            | (dq.valid & dq.ready & (dq.payload.seq >= S))
            | (vq.valid & vq.ready & (vq.payload.seq >= S))
        ),
    ]
    # an insert rejected by its conflict checks is known one cycle after its take
    m.d.comb += pool.error.eq(error_r | pend.ins_rej)
