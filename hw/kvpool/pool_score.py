"""The scaled pool's posted score: checked on the port, applied behind it.

``score(seq, pos, s)`` changes nothing a result shows: its own result (code
0, value 0, the counts) is known once its checks pass, and the page's
GCLOCK counter only matters to a later spill. So a score that passes its
checks on the port (``SEQ_RANGE``, ``NOT_COMMITTED``) is taken in ``IDLE``
once no other score is pending (until then it waits on the port;
:func:`fast_score_accept`, result in the next cycle), and the score engine
(:func:`score_engine`) applies it: it reads
the position's PTE on block-table port 0 (holding that port's lookups for
the cycle), then, if the page is on chip, gives the page states its SCORE.
While it is pending only speculative inserts are taken (every other
operation could spill, free or move the page first), so the counters are
the golden model's whenever they are read.
"""

from dataclasses import dataclass

from amaranth.hdl import Module, Signal, Value

from hw.kvpool.layouts import PoolOp
from hw.kvpool.pagestate import PsCmd

__all__ = [
    "ScoreRegs",
    "score_regs",
    "fast_score_ok",
    "score_waits",
    "fast_score_accept",
    "score_engine",
]

_READ, _WAIT, _APPLY = 1, 2, 3


@dataclass
class ScoreRegs:
    """The pending score: its state (0: none), PTE address, ``s``, the PTE read."""

    state: Signal
    t: Signal
    i: Signal
    s: Signal
    loc: Signal
    page: Signal


def score_regs(m: Module, fsm) -> ScoreRegs:
    """The registers (named ``sc_*``)."""
    seg, o = fsm.u.seg, fsm.r.o
    return ScoreRegs(
        state=Signal(2, name="sc_state"),
        t=Signal(seg.gb, name="sc_t"),
        i=Signal(len(seg.len[0]), name="sc_i"),
        s=Signal.like(o.s, name="sc_s"),
        loc=Signal(name="sc_loc"),
        page=Signal(fsm.p["page_bits"], name="sc_page"),
    )


def fast_score_ok(fsm, op, fast: dict) -> Value:
    """The op on the port is a score that passes its checks, with none pending and no
    drain path or cut in flight."""
    o, f = op.payload, fast["facts"]
    return (
        (o.op == PoolOp.SCORE)
        & f.seq_ok
        & (o.pos < f.ln)
        & ~fast["spec_only"]
        & (fsm.sc.state == 0)
    )


def score_waits(fsm, op, fast: dict) -> Value:
    """The op on the port is a score that passes its checks while another is pending:
    it waits on the port (``ready`` low) to be posted in its turn."""
    o, f = op.payload, fast["facts"]
    return (o.op == PoolOp.SCORE) & f.seq_ok & (o.pos < f.ln) & (fsm.sc.state != 0)


def fast_score_accept(fsm, fast: dict, s: Value) -> None:
    """In ``IDLE``: the score posted (its PTE's table and index), the result next cycle."""
    m, sc = fsm.m, fsm.sc
    m.d.sync += [
        sc.state.eq(_READ),
        sc.t.eq(fast["find_t"]),
        sc.i.eq(fast["find_i"]),
        sc.s.eq(s),
        fsm.done_next.eq(1),
        fsm.u.scoring.eq(1),
    ]


def score_engine(fsm, units_free: Value) -> None:
    """The pending score: the PTE read (port 0's lookups held that cycle, no block-table
    command in flight), then the page states' SCORE if the page is on chip."""
    m, u, sc = fsm.m, fsm.u, fsm.sc
    rsp = u.bt.rd0_rsp
    m.d.comb += u.score_rd.eq((sc.state == _READ) & ~u.bt.busy)
    with m.Switch(sc.state):
        with m.Case(_READ):  # the FSM's own read (it reads nothing while a score waits)
            with m.If(~u.bt.busy):
                fsm.read_pte(sc.t, sc.i)
                m.d.sync += sc.state.eq(_WAIT)
        with m.Case(_WAIT):
            with m.If(fsm.own_rsp()):
                m.d.sync += [sc.loc.eq(rsp.payload.loc), sc.page.eq(rsp.payload.addr)]
                m.d.sync += sc.state.eq(_APPLY)
        with m.Case(_APPLY):
            with m.If(sc.loc):
                m.d.sync += [sc.state.eq(0), u.scoring.eq(0)]
            with m.Elif(units_free & u.ps.cmd.ready):
                with m.If(fsm.ps(PsCmd.SCORE, sc.page, s=sc.s)):
                    m.d.sync += [sc.state.eq(0), u.scoring.eq(0)]
