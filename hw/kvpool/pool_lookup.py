"""One lookup port of the scaled pool: segment match, TLB, walk, tree lookup, reply.

Issue cycle ``t`` (``q.valid & q.ready``): ``seq`` range check, ``len(seq)``,
the segment match and the table index in registers' logic; a committed
position (``pos < len``) goes to the port's TLB and, in parallel, to a
block-table read (its answer is used only on a TLB miss); another position
to the tree slots when ``seq`` has an active tree.

============================  =========  =========================================
outcome                       reply in   port not ready in
============================  =========  =========================================
``seq >= SEQS``, no tree      ``t + 1``  -
committed, TLB hit            ``t + 1``  -
committed, TLB miss           ``t + 3``  ``t + 1``, ``t + 2`` (the walk; the TLB
                                         is filled in ``t + 3``)
speculative (tree lookup)     ``t + 2``  ``t + 1`` (replies stay in order)
============================  =========  =========================================

A miss holds the port until its fill, so the TLB sees the lookups in the
order the golden model does (a lookup of ``t + 3`` sees the fill: the TLB
applies fills before lookups).
"""

from dataclasses import dataclass

from amaranth.hdl import Const, Module, Signal, Value
from amaranth.lib import wiring

from hw.common import less_than, net, or_tree
from hw.kvpool.segtable import SegState

__all__ = ["LookupPort", "lookup_port"]


@dataclass
class LookupPort:
    """What the operation FSM needs of a lookup port, and its stage registers (for the
    formal checks: nothing in ``hw/`` reads them)."""

    #: a lookup is in a stage after its issue cycle (the FSM waits for 0)
    inflight: Signal
    #: issued last cycle; its kind (0 nothing / error, 1 committed, 2 tree) and TLB key
    s1: Signal
    s1_kind: Signal
    s1_key: Value
    #: a miss's walk, second and reply (fill) cycle, and its key
    w2: Signal
    w3: Signal
    w_key: Value


def lookup_port(
    m: Module,
    k: int,
    *,
    q: wiring.PureInterface,
    r: wiring.PureInterface,
    allow: Value,
    seg: SegState,
    tlb: wiring.Component,
    rd: wiring.PureInterface,
    rd_rsp: wiring.PureInterface,
    tree_lk: wiring.PureInterface,
    tree_rsp: wiring.PureInterface,
    tree_of: "callable",
    seqs: int,
) -> LookupPort:
    """Build lookup port ``k`` (see the module docstring); ``allow``: the FSM is idle.

    ``tree_of(seq, name) -> (has_tree, slot)`` finds a sequence's active tree.
    ``rd`` is driven here only while ``allow`` is high (the FSM borrows it).
    """
    p = f"lk{k}"
    qp = q.payload
    seq_ok = net(m, qp.seq < seqs if seqs < (1 << len(qp.seq)) else Const(1), f"{p}_seq_ok")
    ln = seg.len_of(qp.seq, f"{p}_len")
    committed = net(m, seq_ok & less_than(m, qp.pos, ln, f"{p}_lt"), f"{p}_committed")
    onehot = seg.find(qp.seq, qp.pos, f"{p}_seg1h")
    g = seg.index(onehot, f"{p}_seg")
    t, i = seg.locate(onehot, qp.pos, f"{p}_tab", each=True)
    has_tree, slot = tree_of(qp.seq, f"{p}_tree")

    # stage registers
    s1 = Signal(name=f"{p}_s1")  # issued last cycle
    s1_kind = Signal(2, name=f"{p}_s1_kind")  # 0 nothing / error, 1 committed, 2 tree
    s1_err = Signal(name=f"{p}_s1_err")
    s1_key = Signal.like(tlb.lk, name=f"{p}_s1_key")
    w2 = Signal(name=f"{p}_w2")  # walking, second cycle
    w3 = Signal(name=f"{p}_w3")  # walking, reply cycle
    w_key = Signal.like(tlb.lk, name=f"{p}_w_key")
    t2 = Signal(name=f"{p}_t2")  # tree reply cycle

    miss_now = net(m, s1 & (s1_kind == 1) & ~tlb.rsp.hit, f"{p}_miss_now")
    block = net(m, miss_now | w2 | (s1 & (s1_kind == 2)), f"{p}_block")
    m.d.comb += q.ready.eq(allow & ~block)
    take = net(m, q.valid & q.ready, f"{p}_take")

    m.d.comb += [
        tlb.lk_valid.eq(take & committed),
        tlb.lk.seg.eq(g),
        tlb.lk.pos.eq(qp.pos),
        tree_lk.valid.eq(take & seq_ok & ~committed & has_tree),
        tree_lk.payload.slot.eq(slot),
        tree_lk.payload.pos.eq(qp.pos),
        tree_lk.payload.view.eq(qp.view),
    ]
    with m.If(allow):
        m.d.comb += [
            rd.valid.eq(take & committed),
            rd.payload.t.eq(t),
            rd.payload.i.eq(i),
        ]
    kind = net(m, committed.as_unsigned() | ((~committed & has_tree & seq_ok) << 1), f"{p}_kind")
    m.d.sync += [
        s1.eq(take),
        s1_kind.eq(kind),
        s1_err.eq(~seq_ok),
        s1_key.eq(tlb.lk),
        w2.eq(miss_now),
        w3.eq(w2),
        t2.eq(s1 & (s1_kind == 2)),
    ]
    with m.If(miss_now):
        m.d.sync += w_key.eq(s1_key)

    # the walk's fill, in its reply cycle
    pte = rd_rsp.payload
    m.d.comb += [
        tlb.fill_valid.eq(w3),
        tlb.fill.seg.eq(w_key.seg),
        tlb.fill.pos.eq(w_key.pos),
        tlb.fill.loc.eq(pte.loc),
        tlb.fill.addr.eq(pte.addr),
    ]

    # the reply: exactly one source is valid in a cycle
    now = net(m, s1 & ((s1_kind == 0) | ((s1_kind == 1) & tlb.rsp.hit)), f"{p}_r_now")
    m.d.comb += r.valid.eq(now | w3 | t2)
    rp = r.payload
    with m.If(now):
        m.d.comb += [
            rp.error.eq(s1_err),
            rp.hit.eq(s1_kind == 1),
        ]
        with m.If(s1_kind == 1):
            m.d.comb += [rp.loc.eq(tlb.rsp.loc), rp.addr.eq(tlb.rsp.addr)]
    with m.Elif(w3):
        m.d.comb += [rp.hit.eq(1), rp.loc.eq(pte.loc), rp.addr.eq(pte.addr)]
    with m.Elif(t2):
        m.d.comb += [rp.hit.eq(tree_rsp.payload.hit), rp.addr.eq(tree_rsp.payload.page)]
    inflight = net(m, or_tree([s1, w2, w3, t2]), f"{p}_inflight")
    return LookupPort(
        inflight=inflight, s1=s1, s1_kind=s1_kind, s1_key=s1_key, w2=w2, w3=w3, w_key=w_key
    )
