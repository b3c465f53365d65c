"""The scaled pool's posted scores: checked on the port, applied behind it.

``score(seq, pos, s)`` changes nothing a result shows: its own result (code
0, value 0, the counts) is known once its checks pass, and the page's
GCLOCK counter only matters to a later spill. So a score that passes its
checks on the port (``SEQ_RANGE``, ``NOT_COMMITTED``) is taken in ``IDLE``
while the score queue (:data:`QUEUE` entries) has room
(:func:`fast_score_accept`, result in the next cycle; with the queue full
it waits on the port), and the score engine (:func:`score_engine`) applies
the queue in order, pipelined: it reads each entry's PTE on block-table
port 0 (holding that port's lookups in the read's cycle), one read per
cycle, and, as the PTEs return, gives the page states a SCORE for each
page on chip (one per cycle; an entry in HBM is dropped). While a score is
queued only speculative inserts and other scores are taken (every other
operation could spill, free or move a page first), so the counters are the
golden model's whenever they are read: scores commute (``c = min(CMAX, c +
s)`` in any order gives the same ``c``).
"""

from dataclasses import dataclass

from amaranth.hdl import Array, Module, Signal, Value

from hw.kvpool.layouts import PoolOp
from hw.kvpool.pagestate import PsCmd

__all__ = [
    "QUEUE",
    "ScoreRegs",
    "score_regs",
    "fast_score_ok",
    "score_waits",
    "fast_score_accept",
    "score_engine",
]

#: posted scores held at once (a power of two)
QUEUE = 4


@dataclass
class ScoreRegs:
    """The score queue: per entry the PTE address, ``s`` and the PTE read; the head,
    the entries held (``n``), read (``nrd``) and answered (``ngot``)."""

    t: Array
    i: Array
    s: Array
    loc: Array
    page: Array
    head: Signal
    n: Signal
    nrd: Signal
    ngot: Signal
    push: Signal  # comb: a score queued this cycle


def score_regs(m: Module, fsm) -> ScoreRegs:
    """The registers (named ``sc_*``)."""
    seg, o = fsm.u.seg, fsm.r.o

    def regs(name: str, width: int) -> Array:
        return Array(Signal(width, name=f"sc_{name}{e}") for e in range(QUEUE))

    qb = QUEUE.bit_length()
    return ScoreRegs(
        t=regs("t", seg.gb),
        i=regs("i", len(seg.len[0])),
        s=regs("s", len(o.s)),
        loc=regs("loc", 1),
        page=regs("page", fsm.p["page_bits"]),
        head=Signal(qb - 1, name="sc_head"),
        n=Signal(qb, name="sc_n"),
        nrd=Signal(qb, name="sc_nrd"),
        ngot=Signal(qb, name="sc_ngot"),
        push=Signal(name="sc_push"),
    )


def _checked(op, fast: dict) -> Value:
    o, f = op.payload, fast["facts"]
    return (o.op == PoolOp.SCORE) & f.seq_ok & f.pos_lt_len


def fast_score_ok(fsm, op, fast: dict) -> Value:
    """The op on the port is a score that passes its checks, with room in the queue
    and no drain path or cut in flight."""
    u = fsm.u
    return _checked(op, fast) & ~u.drain_acc & ~u.cutting & (fsm.sc.n != QUEUE)


def score_waits(fsm, op, fast: dict) -> Value:
    """The op on the port is a score that passes its checks while the queue is full:
    it waits on the port (``ready`` low) to be posted in its turn."""
    return _checked(op, fast) & (fsm.sc.n == QUEUE)


def fast_score_accept(fsm, fast: dict, s: Value) -> None:
    """In ``IDLE``: the score queued (its PTE's table and index), the result next
    cycle."""
    m, sc = fsm.m, fsm.sc
    tail = (sc.head + sc.n)[: len(sc.head)]
    m.d.comb += sc.push.eq(1)
    m.d.sync += [
        sc.t[tail].eq(fast["find_t"]),
        sc.i[tail].eq(fast["find_i"]),
        sc.s[tail].eq(s),
        fsm.done_next.eq(1),
    ]


def score_engine(fsm, units_free: Value) -> None:
    """The queue's reads (port 0, one per cycle while no block-table command is in
    flight), their answers, and the head's SCORE (or drop, in HBM), one per cycle."""
    m, u, sc = fsm.m, fsm.u, fsm.sc
    w = len(sc.head)
    rsp = u.bt.rd0_rsp
    rd = (sc.head + sc.nrd)[:w]
    got = (sc.head + sc.ngot)[:w]
    read = (sc.nrd != sc.n) & ~u.bt.busy
    answer = fsm.own_rsp() & (sc.ngot != sc.nrd)
    m.d.comb += u.score_rd.eq(read)
    with m.If(read):
        fsm.read_pte(sc.t[rd], sc.i[rd])
    with m.If(answer):
        m.d.sync += [sc.loc[got].eq(rsp.payload.loc), sc.page[got].eq(rsp.payload.addr)]
    pop = Signal(name="sc_pop")
    with m.If(sc.ngot != 0):
        with m.If(sc.loc[sc.head]):
            m.d.comb += pop.eq(1)
        with m.Elif(units_free & u.ps.cmd.ready):
            fsm.ps(PsCmd.SCORE, sc.page[sc.head], s=sc.s[sc.head])
            m.d.comb += pop.eq(1)
    n = sc.n + sc.push - pop
    m.d.sync += [
        sc.head.eq(sc.head + pop),
        sc.n.eq(n),
        sc.nrd.eq(sc.nrd + read - pop),
        sc.ngot.eq(sc.ngot + answer - pop),
        u.scoring.eq(n != 0),
    ]
