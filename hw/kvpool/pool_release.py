"""The scaled pool's release: done in one cycle, its frees carried out behind it.

:func:`release_now` (in ``IDLE`` for a release checked on the port, or in
``CHECK`` after its waits) does in one cycle all that a result and the next
operation see: bit ``seq`` cleared in every segment, ``len(seq) = 0``, the
tree slot's RELEASE issued, and the counts and the result (shown in the
next cycle): the dead segments' on-chip pages and HBM slots are known
without reading their PTEs, from each segment's extent and its HBM count
(:meth:`hw.kvpool.segtable.SegState.excl_counts`), the tree's from its
slot's node count. The frees themselves are the drain's jobs, in the
golden model's order: :func:`cut_engine` cuts each dead segment's block
table in position order (the PTEs streamed out: a page pushed to the free
FIFO and its page state freed, an HBM slot pushed back), kills the dead
segments in both TLBs as it passes them, buries them at the end; then the
tree's stream (:mod:`hw.kvpool.pool_drain`) pushes its pages. While the cut
runs, only speculative inserts are taken (an allocation that must spill
waits: the victim search must not meet a dead page still queued), and an
allocation of a page still to be pushed waits for its push (``pending``).
"""

from dataclasses import dataclass

from amaranth.hdl import Cat, Module, Mux, Signal, Value

from hw.common import less_than, net, or_tree, prefix_sub, zext
from hw.kvpool.blocktable import BtCmd
from hw.kvpool.layouts import PoolOp
from hw.kvpool.pagestate import PsCmd
from hw.kvpool.pool_drain import slot_count
from hw.kvpool.treeslots_layouts import TsCmd

__all__ = [
    "CutRegs",
    "cut_regs",
    "fast_release_ok",
    "release_counts",
    "release_now",
    "cut_engine",
]

_KILL, _SCAN, _ISSUE, _CUT, _TEST = 0, 1, 2, 3, 4


@dataclass
class CutRegs:
    """The cut job's registers."""

    chain: Signal  # the released sequence's segments (their dead ones: seqs = 0 now)
    ln: Signal  # its length: the positions scanned
    cur: Signal  # the next position
    state: Signal  # _KILL, _SCAN, _TEST, _ISSUE, _CUT
    t: Signal  # the block table being cut, from index c, n PTEs
    c: Signal
    n: Signal
    hpending: Signal  # HBM slots still to push
    dead: Signal  # _SCAN's segment is dead (for _TEST)
    kv: Signal  # a TLB kill to apply (kg: the segment)
    kg: Signal
    gv: Signal  # a counter gain to apply (gx: the sequence, gc / gh: on chip / in HBM)
    gx: Signal
    gs: Signal  # the segment's start and end (gc = ge - gs - gh, in the next cycle)
    ge: Signal
    gh: Signal


def cut_regs(m: Module, u) -> CutRegs:
    """The registers (named ``cut_*``)."""
    seg = u.seg
    pb1 = len(seg.len[0])
    return CutRegs(
        chain=Signal(seg.n, name="cut_chain"),
        ln=Signal(pb1, name="cut_len"),
        cur=Signal(pb1, name="cut_cur"),
        state=Signal(3, name="cut_state"),
        t=Signal(seg.gb, name="cut_t"),
        c=Signal(pb1, name="cut_c"),
        n=Signal(pb1, name="cut_n"),
        hpending=Signal(len(u.hbm_used), name="cut_hpending"),
        dead=Signal(name="cut_dead"),
        kv=Signal(name="cut_kv"),
        kg=Signal(seg.gb, name="cut_kg"),
        gv=Signal(name="cut_gv"),
        gx=Signal(seg.sb, name="cut_gx"),
        gs=Signal(pb1, name="cut_gs"),
        ge=Signal(pb1, name="cut_ge"),
        gh=Signal(pb1, name="cut_gh"),
    )


def fast_release_ok(fsm, op, fast: dict) -> Value:
    """The op on the port is a release that succeeds, with no drain, cut or commit
    path in flight and no fast insert's stage 2 or 3 (the tree slots' command port,
    a block tag of the sequence)."""
    o, f, u, s2 = op.payload, fast["facts"], fsm.u, fsm.s2
    return (
        (o.op == PoolOp.RELEASE)
        & f.seq_ok
        & (f.ln_nz | f.has_tree)
        & ~u.drain
        & ~fast["spec_only"]
        & ~u.ts.busy
        & ~s2.valid
        & ~s2.s3
    )


def release_counts(fsm, seq: Value, f: dict, name: str) -> dict:
    """What a release of ``seq`` (``f``: its facts) frees, as nets built outside the FSM
    (so that no state or check is on their paths): ``dead``, ``chip``, ``hbm``,
    ``spec`` (the tree's pages)."""
    seg = fsm.u.seg
    dead = seg.only(seq, f"{name}_dead")
    chip, hbm = seg.excl_counts(seq, f"{name}_dead")
    spec = Mux(f["has_tree"], slot_count(fsm, f["slot"]), 0)
    u = fsm.u
    return {
        "dead": dead,
        "chip": chip,
        "hbm": hbm,
        "spec": spec,
        # the result and the counts after it (Units.add: built outside the FSM)
        "freed": u.add(zext(chip, len(u.committed_pages)), spec, f"{name}_freed"),
        "committed": u.add(u.committed_pages, chip, f"{name}_committed", sub=True),
        "spec_after": u.add(u.spec_pages, spec, f"{name}_spec_after", sub=True),
        "hbm_after": u.add(u.hbm_used, hbm, f"{name}_hbm_after", sub=True),
    }


def release_now(fsm, cut: CutRegs, seq: Value, f: dict, n: dict, slot: Value) -> None:
    """Release ``seq`` (checked; ``f``: its facts, ``n``: :func:`release_counts`,
    ``slot``: its tree's slot, registered if it can be: the tree slots' command
    operand is shared with the ADD, whose logic is deep) in this cycle; the
    result in the next."""
    m, u, r = fsm.m, fsm.u, fsm.r
    seg = u.seg
    dead, hbm = n["dead"], n["hbm"]
    tree = f["has_tree"]
    m.d.comb += seg.rel_en.eq(1)  # rel_seq: driven by the pool (ScaledPool.elaborate)
    with m.If(tree):
        fsm.ts(TsCmd.RELEASE, slot=slot)
    m.d.sync += [
        r.value.eq(n["freed"]),
        r.value2.eq(hbm),
        fsm.done_next.eq(1),
        u.committed_pages.eq(n["committed"]),
        u.spec_pages.eq(n["spec_after"]),
        u.hbm_used.eq(n["hbm_after"]),
        u.pending.eq(n["freed"]),
        u.drain.eq(tree),
        # the cut's walk: dead segments to cut, or segments left to one other sequence
        # whose counters gain them (the walk blocks what would read them)
        u.cutting.eq(dead.any() | (f["chain"] & seg.rel_gain).any()),
        cut.hpending.eq(hbm),
        cut.chain.eq(f["chain"]),
        cut.ln.eq(f["ln"]),
        cut.cur.eq(0),
        cut.state.eq(_KILL),
    ]


def cut_engine(fsm, cut: CutRegs, units_free: Value, inflight: Value) -> None:
    """The cut job (outside the FSM): scan the released chain in position order, cut
    each dead segment's PTEs (streamed, freed one per cycle in which the units are
    free); bury the dead segments at the end. First (``_KILL``, lookups held), once
    the lookups taken before the release have filled the TLBs, every dead segment
    is killed in both, one per cycle: so every later lookup, and the way its fill
    takes, sees the TLBs as the golden model's release left them."""
    m, u = fsm.m, fsm.u
    seg = u.seg
    dead = Cat(*[cut.chain[g] & ~seg.seqs[g].any() for g in range(seg.n)])
    here = Cat(*[cut.chain[g] & seg.holds(g, cut.cur, f"cut_here{g}") for g in range(seg.n)])
    g = seg.index(here, "cut_g")
    t = seg.pick(here, seg.tab, "cut_tab")
    start = seg.pick(here, seg.start, "cut_start")
    end = seg.pick(here, seg.end, "cut_end")
    base = seg.pick(here, seg.sbase, "cut_base")
    w = len(start)
    c = prefix_sub(m, start, base, w, "cut_c_sub")
    is_dead = or_tree([here[h] & dead[h] for h in range(seg.n)])
    past = ~less_than(m, cut.cur, cut.ln, "cut_past")  # cur >= ln: the chain is done
    tlen = seg.table_len(cut.t, "cut_tlen")  # of _SCAN's registered table
    held = less_than(m, cut.c, tlen, "cut_held")
    gain = _gain(fsm, cut, here, start, end)
    # lookups held while the walk kills, and while its last kill is still to apply
    m.d.comb += u.killing.eq(u.cutting & ((cut.state == _KILL) | cut.kv))
    m.d.sync += [cut.gv.eq(0), cut.kv.eq(0)]
    span = prefix_sub(m, cut.ge, cut.gs, w, "cut_gain_span")
    gc = prefix_sub(m, span, cut.gh, w, "cut_gain_chip")
    with m.If(cut.gv):  # a gain of the walk's last step
        m.d.comb += [
            seg.adj_en.eq(1),
            seg.adj_seq.eq(cut.gx),
            seg.adj_chip.eq(gc),
            seg.adj_hbm.eq(cut.gh),
        ]
    with m.If(cut.kv):  # a kill of the walk's last step, in both TLBs
        for tlb in u.tlbs:
            m.d.comb += tlb.kill_valid.eq(1)  # kill_seg: pool_share.share_states
    with m.If(u.cutting):
        with m.Switch(cut.state):
            with m.Case(_KILL):  # lookups held: every dead segment killed in both TLBs
                with m.If(past):
                    m.d.sync += [cut.cur.eq(0), cut.state.eq(_SCAN)]
                with m.Elif(~inflight):  # after the fills of the lookups taken before
                    m.d.sync += [cut.cur.eq(end), cut.kv.eq(is_dead), cut.kg.eq(g), *gain]
            with m.Case(_SCAN):  # the next segment found, registered
                with m.If(past):
                    m.d.comb += [seg.bury_en.eq(1), seg.bury_mask.eq(dead)]
                    m.d.sync += u.cutting.eq(0)
                with m.Else():
                    m.d.sync += [
                        cut.cur.eq(end),
                        cut.t.eq(t),
                        cut.c.eq(c),
                        cut.dead.eq(is_dead),
                        cut.state.eq(_TEST),
                    ]
            with m.Case(_TEST):  # a dead segment whose table holds PTEs from its start
                with m.If(cut.dead & held):
                    m.d.sync += [cut.n.eq(tlen), cut.state.eq(_ISSUE)]
                with m.Else():
                    m.d.sync += cut.state.eq(_SCAN)
            with m.Case(_ISSUE):
                with m.If(units_free):
                    with m.If(fsm.bt(BtCmd.CUT, cut.t, cut.c, n=cut.n)):
                        m.d.sync += cut.state.eq(_CUT)
            with m.Case(_CUT):
                _cut_beats(fsm, cut, units_free)


def _gain(fsm, cut: CutRegs, here: Value, start: Value, end: Value) -> list:
    """The statements for the walk passing segment ``here``: if the release left it to
    one sequence, that sequence's counters gain its positions (registered, applied in
    the next cycle). The nets are built here, outside the walk's states."""
    m, seg = fsm.m, fsm.u.seg
    hbm = seg.pick(here, seg.hbm, "cut_gain_hbm")
    excl = net(m, or_tree([here[g] & seg.excl[g] for g in range(seg.n)]), "cut_gain_excl")
    return [
        cut.gv.eq(excl),
        cut.gx.eq(seg.owner(here, "cut_gain_seq")),
        cut.gs.eq(start),
        cut.ge.eq(end),
        cut.gh.eq(hbm),
    ]


def _cut_beats(fsm, cut: CutRegs, units_free: Value) -> None:
    """``_CUT``: one PTE of the stream freed per cycle; the table's length cut at its end."""
    m, u = fsm.m, fsm.u
    seg, bt = u.seg, u.bt
    pte = bt.out.payload.pte
    take = units_free & u.ps.cmd.ready
    m.d.comb += bt.out.ready.eq(take)
    with m.If(bt.out.valid & take):
        with m.If(pte.loc):
            m.d.comb += [u.halloc.push.eq(1), u.halloc.push_page.eq(pte.addr)]
            m.d.sync += cut.hpending.eq(u.add(cut.hpending, 1, "hpending_dec", sub=True))
        with m.Else():
            m.d.comb += [u.alloc.push.eq(1), u.alloc.push_page.eq(pte.addr)]
            fsm.ps(PsCmd.FREE, pte.addr)
            m.d.sync += u.pending.eq(u.add(u.pending, 1, "pending_dec", sub=True))
    with m.Elif(~bt.out.valid & ~bt.busy):
        m.d.comb += [seg.cut_en.eq(1), seg.cut_t.eq(cut.t), seg.cut_c.eq(cut.c)]
        m.d.sync += cut.state.eq(_SCAN)
