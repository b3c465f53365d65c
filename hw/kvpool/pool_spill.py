"""The scaled pool's spill, fill and score states (``SP_*``, ``SPL``, ``PTE``,
``FILL_*``, ``SCORE``): FSM states of :mod:`hw.kvpool.pool_ops`.

Spilling one victim (an allocation with no free page, ``spill(n)``) is a
sub-sequence that returns to the state in ``ret``: the GCLOCK victim from
the page states, its PTE read, an HBM slot, the PTE rewritten (``loc =
1``), both TLBs' set invalidated, the page freed. Fill and score read the
PTE of the position ``CHECK`` found.
"""

from hw.common import or_tree, prefix_sub
from hw.kvpool.blocktable import BtCmd
from hw.kvpool.layouts import PoolCode, PoolOp
from hw.kvpool.pagestate import PsCmd
from hw.kvpool.pool_checks import fill_code

__all__ = ["RET_INSERT", "RET_FILL", "RET_SPILL", "spill_one", "spill_fill_score"]

# return points of the spill sub-sequence
RET_INSERT, RET_FILL, RET_SPILL = 0, 1, 2


def spill_one(fsm) -> None:
    """``SP_*``: spill the GCLOCK victim, then return to ``ret``'s state."""
    m, u = fsm.m, fsm.u
    seg, ps = u.seg, u.ps
    with m.State("SP_VIC"):  # after every earlier page-state command's done
        with m.If(~ps.busy):
            with m.If(fsm.ps(PsCmd.VICTIM, 0)):
                m.next = "SP_VWAIT"
    v = ps.victim  # its PTE index, built outside the state
    vbase = seg.table_base(v.tab, "sp_base")
    vi_next = prefix_sub(m, v.pos, vbase, len(vbase), "sp_vi")
    with m.State("SP_VWAIT"):
        with m.If(ps.done):
            v = ps.victim
            m.d.sync += [
                fsm.vpage.eq(v.page),
                fsm.vtab.eq(v.tab),
                fsm.vpos.eq(v.pos),
                fsm.vi.eq(vi_next),
                fsm.wait.eq(0),
            ]
            m.next = "SP_RD"
    vi = fsm.vi
    with m.State("SP_RD"):
        with m.If(fsm.wait == 0):
            fsm.read_pte(fsm.vtab, vi)
        m.d.sync += fsm.wait.eq(fsm.wait + 1)
        with m.If(fsm.wait == 2):
            m.next = "SP_RDW"
        # its segment, and the sequence that alone sees it if one does (registered
        # while the read is in flight: no segment changes during a spill)
        g1h = seg.of_table(fsm.vtab, fsm.vpos, "sp_seg1h")
        m.d.sync += [
            fsm.vg.eq(seg.index(g1h, "sp_seg")),
            fsm.vx.eq(seg.owner(g1h, "sp_owner")),
            fsm.vxv.eq(or_tree([g1h[g] & seg.excl[g] for g in range(seg.n)])),
        ]
    with m.State("SP_RDW"):
        rsp = u.bt.rd0_rsp
        m.d.sync += fsm.vtoken.eq(rsp.payload.token)
        m.d.comb += u.halloc.alloc.eq(1)
        m.next = "SP_SLOT"
    with m.State("SP_SLOT"):
        m.d.sync += fsm.addr.eq(u.halloc.page)
        m.next = "SP_WR"
    with m.State("SP_WR"):
        ok = fsm.bt(BtCmd.WRITE, fsm.vtab, vi, loc=1, addr=fsm.addr, token=fsm.vtoken)
        with m.If(ok):
            for tlb in u.tlbs:
                m.d.comb += [
                    tlb.inv_valid.eq(1),
                    tlb.inv.seg.eq(fsm.vg),
                    tlb.inv.pos.eq(fsm.vpos),
                ]
            m.next = "SP_FREE"
    with m.State("SP_FREE"):
        with m.If(fsm.ps(PsCmd.FREE, fsm.vpage)):
            fsm.push(fsm.vpage)
            # the segment's HBM count, and the counters of its only sequence
            m.d.comb += [seg.hbm_inc.eq(1), seg.hbm_inc_g.eq(fsm.vg)]
            m.d.comb += [seg.adj_en.eq(fsm.vxv), seg.adj_seq.eq(fsm.vx)]
            m.d.comb += [seg.adj_chip.eq(-1), seg.adj_hbm.eq(1)]
            m.d.sync += [
                u.committed_pages.eq(u.add(u.committed_pages, 1, "committed_dec", sub=True)),
                u.hbm_used.eq(u.add(u.hbm_used, 1, "hbm_inc")),
            ]
            with m.Switch(fsm.ret):
                with m.Case(RET_INSERT):
                    m.next = "ALLOC_INS_GO"
                with m.Case(RET_FILL):
                    m.next = "ALLOC_FILL_GO"
                with m.Default():
                    m.next = "SPL"


def spill_fill_score(fsm) -> None:
    """``SPL`` (spill(n)'s loop), ``PTE`` (fill's and score's PTE read),
    ``FILL_*``, ``SCORE``."""
    m, u, o, f = fsm.m, fsm.u, fsm.r.o, fsm.f
    with m.State("SPL"):
        with m.If((fsm.cnt < o.n) & f["facts"].can_spill):
            m.d.sync += [fsm.cnt.eq(fsm.cnt + 1), fsm.ret.eq(RET_SPILL)]
            m.next = "SP_VIC"
        with m.Else():
            m.d.sync += fsm.r.value.eq(fsm.cnt)
            fsm.finish()
    with m.State("PTE"):
        with m.If(fsm.wait == 0):
            fsm.read_pte(fsm.t, fsm.i)
        m.d.sync += fsm.wait.eq(fsm.wait + 1)
        with m.If(fsm.wait == 2):
            m.next = "PTE_GOT"
    with m.State("PTE_GOT"):
        pte = u.bt.rd0_rsp.payload
        m.d.sync += [fsm.loc.eq(pte.loc), fsm.addr.eq(pte.addr), fsm.token.eq(pte.token)]
        with m.If(o.op == PoolOp.SCORE):
            m.next = "SCORE"
        with m.Else():
            m.next = "FILL"
    with m.State("SCORE"):
        with m.If(fsm.loc):
            fsm.finish()
        with m.Else():
            with m.If(fsm.ps(PsCmd.SCORE, fsm.addr, s=o.s)):
                fsm.finish()
    with m.State("FILL"):
        code = fill_code(m, fsm.loc, f["facts"].page_free, u.committed_pages)
        with m.If(o.op == PoolOp.SHARE):
            m.d.sync += fsm.r.code.eq(code)  # the tokens are taken in any case
            m.next = "SH"
        with m.Elif(code != PoolCode.NONE):
            fsm.finish(code)
        with m.Else():
            m.d.comb += [u.halloc.push.eq(1), u.halloc.push_page.eq(fsm.addr)]
            m.d.sync += u.hbm_used.eq(u.add(u.hbm_used, 1, "hbm_dec", sub=True))
            m.next = "FILL_ALLOC"
    with m.State("FILL_ALLOC"):
        fsm.allocate(RET_FILL, "FILL_GO")
    fsm.alloc_states("FILL_GO")
    with m.State("FILL_GO"):
        ok = fsm.bt(BtCmd.WRITE, fsm.t, fsm.i, addr=fsm.page, token=fsm.token)
        with m.If(ok):
            for tlb in u.tlbs:
                m.d.comb += [tlb.inv_valid.eq(1), tlb.inv.seg.eq(fsm.g), tlb.inv.pos.eq(o.pos)]
            m.d.comb += [u.seg.hbm_dec.eq(1), u.seg.hbm_dec_g.eq(fsm.g)]
            m.d.comb += [
                u.seg.adj_en.eq(u.seg.excl.bit_select(fsm.g, 1)),
                u.seg.adj_seq.eq(o.seq),
                u.seg.adj_chip.eq(1),
                u.seg.adj_hbm.eq(-1),
            ]
            m.d.sync += fsm.r.value.eq(fsm.page)
            m.next = "FILL_PSC"
    with m.State("FILL_PSC"):
        ok = fsm.ps(PsCmd.COMMIT, fsm.page, tab=fsm.t, pos=o.pos, fresh=fsm.fresh)
        with m.If(ok):
            m.d.sync += u.committed_pages.eq(u.add(u.committed_pages, 1, "committed_inc"))
            fsm.finish()
