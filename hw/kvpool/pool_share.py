"""The scaled pool's dedup tags and ``share`` (SPEC §4.6 *Tags*, *share*): FSM states.

**Tags.** After an append that makes ``len(seq)`` a multiple of ``BLOCK =
16`` (``TAG_*``): the block's 16 tokens are read from the block tables
(one read per cycle through port 0, the lookups being idle), the tag step
(:class:`hw.kvpool.crc64.BlockTag`) extends ``tag(seq)`` over them, and
the tag table enters ``(T_k, seq, k)``. Then back to ``RESULT`` (an insert)
or to the next beat of a commit.

**Share** (``SH_*``): the request's ``n`` tokens arrive on ``tok`` after
the operation (always all of them, also when the operation fails); they
are kept in a token buffer and their block tags ``T_0 .. T_{K-1}`` in a tag
buffer (memories). For ``k = K - 1`` down to 0: the tag table is probed
for ``T_k``; an entry ``(s, k)`` with ``len(s) >= 16 (k + 1)`` has its
sequence's tokens ``0 .. 16 (k + 1) - 1`` compared with the buffer (one
per cycle, pipelined); the first that matches gives ``M``. Then the
straddling segment is split and ``dst`` set in the chain below ``M``.
"""

from amaranth.hdl import Cat, Mux, Signal
from amaranth.lib import memory

from hw.common import less_than, or_tree
from hw.kvpool.crc64 import BLOCK
from hw.kvpool.layouts import PoolCode

__all__ = ["ShareRegs", "tag_setup", "tag_states", "start_tag", "share_states"]


def tag_setup(fsm) -> None:
    """Outside the FSM: the block's tokens shifted in as the reads return."""
    m, u = fsm.m, fsm.u
    tb = fsm.p["token_bits"]
    rsp = u.bt.rd0_rsp
    with m.If(fsm.collect & fsm.own_rsp()):
        m.d.sync += [
            fsm.tokens.eq(Cat(fsm.tokens[tb:], rsp.payload.token)),
            fsm.got.eq(fsm.got + 1),
        ]


def tag_states(fsm, crc, tags) -> None:
    """``TAG_RD``, ``TAG_CRC``, ``TAG_ENT``: enter the tag of the block just completed
    (``fsm.tpos``: its first position; ``fsm.tret``: 1 = back to ``COM_BEAT``)."""
    m, u, o = fsm.m, fsm.u, fsm.r.o
    seg = u.seg
    t, i = seg.locate(seg.find(o.seq, fsm.tpos, "tag_seg1h"), fsm.tpos, "tag", each=True)
    with m.State("TAG_RD"):
        with m.If(~u.bt.busy):
            fsm.read_pte(t, i)
            m.d.sync += [fsm.tpos.eq(fsm.tpos + 1), fsm.wait.eq(fsm.wait + 1)]
            with m.If(fsm.wait == BLOCK - 1):
                m.next = "TAG_WAIT"
    with m.State("TAG_WAIT"):
        with m.If(fsm.got == BLOCK):
            m.next = "TAG_CRC"
    with m.State("TAG_CRC"):
        m.d.comb += [
            crc.i_valid.eq(1),
            crc.i.prev.eq(seg.tag_of(o.seq, "tag_prev")),
            crc.i.tokens.eq(fsm.tokens),
        ]
        m.d.sync += fsm.collect.eq(0)
        m.next = "TAG_ENT"
    with m.State("TAG_ENT"):
        m.d.comb += [seg.tag_en.eq(1), seg.tag_seq.eq(o.seq), seg.tag_val.eq(crc.tag)]
        m.d.sync += fsm.ttag.eq(crc.tag)
        m.next = "TAG_PUT"
    with m.State("TAG_PUT"):
        c = tags.cmd
        m.d.comb += [
            c.valid.eq(1),
            c.payload.kind.eq(0),
            c.payload.tag.eq(fsm.ttag),
            c.payload.seq.eq(o.seq),
            c.payload.block.eq((fsm.tpos - 1) >> 4),
        ]
        with m.If(c.ready):
            with m.If(fsm.tret):
                m.next = "COM_BEAT"
            with m.Else():
                fsm.finish()


def start_tag(fsm, new_len, ret_commit: bool) -> None:
    """From an append's last state: to ``TAG_RD`` if ``new_len`` ends a block, else on."""
    m = fsm.m
    m.d.sync += [
        fsm.tpos.eq(new_len - BLOCK),
        fsm.wait.eq(0),
        fsm.got.eq(0),
        fsm.tret.eq(int(ret_commit)),
    ]
    with m.If(new_len[:4] == 0):
        m.d.sync += fsm.collect.eq(1)  # until TAG_CRC: only the block's reads shift in
        m.next = "TAG_RD"
    with m.Else():
        if ret_commit:
            m.next = "COM_BEAT"
        else:
            fsm.finish()


class ShareRegs:
    """The share's memories and registers, and what runs outside the FSM."""

    def __init__(self, fsm) -> None:
        m, p = fsm.m, fsm.p
        pb, tb = p["pos_bits"], p["token_bits"]
        m.submodules.sbuf = sbuf = memory.Memory(shape=tb, depth=1 << pb, init=[])
        m.submodules.tbuf = tbuf = memory.Memory(shape=64, depth=max(2, 1 << (pb - 4)), init=[])
        self.sw, self.sr = sbuf.write_port(), sbuf.read_port()
        self.tw, self.tr = tbuf.write_port(), tbuf.read_port()
        self.j = Signal(len(fsm.r.o.n), name="sh_j")  # tokens taken (as wide as n)
        self.k = Signal(pb + 1, name="sh_k")  # the block tried
        self.run = Signal(64, name="sh_run")  # the running tag
        self.ip = Signal(pb + 1, name="sh_ip")  # compare: positions issued
        self.cp = Signal(pb + 1, name="sh_cp")  # compare: positions checked
        self.bad = Signal(name="sh_bad")
        self.s = Signal(len(fsm.r.o.seq), name="sh_s")
        self.mm = Signal(pb + 1, name="sh_m")
        self.tk = Signal(64, name="sh_tk")
        self.hb = Signal(pb + 1, name="sh_hb")  # HBM positions of the split's lower part
        self.crc_go = Signal(name="sh_crc_go")
        # positions of s's exclusive segments compared, on chip / in HBM (what its
        # counters lose when dst shares them); xp: a read's exclusive bit, in flight
        self.xc = Signal(pb + 1, name="sh_xc")
        self.xh = Signal(pb + 1, name="sh_xh")
        self.xbit = Signal(name="sh_xbit")
        self.xp = Signal(len(fsm.rd_pipe), name="sh_xp")
        m.d.sync += self.xp.eq(Cat(self.xbit, self.xp[:-1]))
        d1, d2 = Signal(pb + 1, name="sh_d1"), Signal(pb + 1, name="sh_d2")
        m.d.sync += [self.crc_go.eq(0), d1.eq(self.ip), d2.eq(d1)]
        m.d.comb += self.sr.addr.eq(d2)


def share_states(fsm, sh: ShareRegs, crc, tags, tok) -> None:
    """``SH_*``: the share operation (see the module docstring)."""
    m, u, o = fsm.m, fsm.u, fsm.r.o
    seg, tb = u.seg, fsm.p["token_bits"]
    sw, tw, tr = sh.sw, sh.tw, sh.tr
    j, k, run, ip, cp, bad, s, mm, tk = sh.j, sh.k, sh.run, sh.ip, sh.cp, sh.bad, sh.s, sh.mm, sh.tk
    crc_go = sh.crc_go
    with m.State("SH"):
        m.d.sync += [j.eq(0), k.eq(0), run.eq(0), fsm.cnt.eq(0), fsm.collect.eq(0)]
        m.next = "SH_IN"
    with m.State("SH_IN"):
        with m.If(crc_go):
            m.d.comb += [crc.i_valid.eq(1), crc.i.prev.eq(run), crc.i.tokens.eq(fsm.tokens)]
        with m.If(crc.o_valid):
            m.d.comb += [tw.en.eq(1), tw.addr.eq(k), tw.data.eq(crc.tag)]
            m.d.sync += [run.eq(crc.tag), k.eq(k + 1)]
        m.d.comb += tok.ready.eq(j < o.n)
        with m.If(tok.valid & (j < o.n)):
            m.d.comb += [sw.en.eq(1), sw.addr.eq(j), sw.data.eq(tok.payload)]
            m.d.sync += [j.eq(j + 1), fsm.tokens.eq(Cat(fsm.tokens[tb:], tok.payload))]
            m.d.sync += crc_go.eq(j[:4] == BLOCK - 1)
        with m.If((j >= o.n) & ~crc_go & ~crc.o_valid):
            with m.If(fsm.r.code != PoolCode.NONE):
                fsm.finish()
            with m.Else():
                m.next = "SH_NEXT"
    with m.State("SH_NEXT"):  # try block k - 1
        with m.If(k == 0):
            fsm.finish()
        with m.Else():
            m.d.comb += tr.addr.eq(k - 1)
            m.d.sync += k.eq(k - 1)
            m.next = "SH_PROBE"
    with m.State("SH_PROBE"):
        c = tags.cmd
        m.d.comb += [c.valid.eq(1), c.payload.kind.eq(1), c.payload.tag.eq(tr.data)]
        m.d.sync += tk.eq(tr.data)
        with m.If(c.ready):
            m.next = "SH_FOUND"
    with m.State("SH_FOUND"):
        e = tags.rsp
        with m.If(tags.rsp_valid):
            ln = seg.len_of(e.seq, "sh_len_s")
            need = (k + 1) << 4
            ok = e.found & (e.block == k) & (ln >= need)
            m.d.sync += [s.eq(e.seq), mm.eq(need), ip.eq(0), cp.eq(0), bad.eq(0), sh.hb.eq(0)]
            m.d.sync += [sh.xc.eq(0), sh.xh.eq(0)]
            with m.If(ok):
                m.next = "SH_CMP"
            with m.Else():
                m.next = "SH_NEXT"
    _compare(fsm, sh)
    _apply(fsm, sh)


def _compare(fsm, sh: ShareRegs) -> None:
    """``SH_CMP``: tokens ``0 .. mm - 1`` of ``s`` against the buffer, one per cycle."""
    m, u = fsm.m, fsm.u
    seg = u.seg
    sr, s, mm, ip, cp, bad = sh.sr, sh.s, sh.mm, sh.ip, sh.cp, sh.bad
    g1h = seg.find(s, ip, "sh_seg1h")
    t, i = seg.locate(g1h, ip, "sh")
    rsp = u.bt.rd0_rsp
    # the segment holding mm - 1 (split at mm if it goes on): its positions' HBM count
    # registered: s and mm are set as SH_CMP starts, its first answer comes 3 cycles on
    last_start = Signal.like(seg.start[0], name="sh_cmp_last_start_r")
    m.d.sync += last_start.eq(
        seg.pick(seg.find(s, mm - 1, "sh_cmp_last1h"), seg.start, "sh_cmp_last_start")
    )
    with m.State("SH_CMP"):
        with m.If((ip < mm) & ~bad):
            fsm.read_pte(t, i)
            m.d.comb += sh.xbit.eq(or_tree([g1h[g] & seg.excl[g] for g in range(seg.n)]))
            m.d.sync += ip.eq(ip + 1)
        with m.If(fsm.own_rsp()):
            m.d.sync += cp.eq(cp + 1)
            with m.If(sh.xp[-1] & rsp.payload.loc):
                m.d.sync += sh.xh.eq(sh.xh + 1)
            with m.If(sh.xp[-1] & ~rsp.payload.loc):
                m.d.sync += sh.xc.eq(sh.xc + 1)
            with m.If(rsp.payload.loc & (cp >= last_start)):
                m.d.sync += sh.hb.eq(sh.hb + 1)
            with m.If(rsp.payload.token != sr.data):
                m.d.sync += bad.eq(1)
        with m.If((cp == ip) & ((ip == mm) | bad)):
            with m.If(bad):
                m.next = "SH_NEXT"
            with m.Else():
                m.next = "SH_LAST"


def _apply(fsm, sh: ShareRegs) -> None:
    """``SH_LAST`` (the segment holding ``mm - 1`` found, registered), ``SH_APPLY``
    (split there if it goes on), ``SH_BITS`` (``dst``'s bits set below ``mm``)."""
    m, u, o = fsm.m, fsm.u, fsm.r.o
    seg = u.seg
    s, mm, tk, hb = sh.s, sh.mm, sh.tk, sh.hb
    g1h = seg.find(s, mm - 1, "sh_last1h")
    g = Signal(seg.gb, name="sh_last_g")
    # the TLBs' killed segment, driven always from registers (the cut's or the split's;
    # only kill_valid waits for a test, which would otherwise reach the generations)
    for tlb in u.tlbs:
        m.d.comb += tlb.kill_seg.eq(Mux(fsm.cut.kv, fsm.cut.kg, g))
    end = Signal.like(seg.end[0], name="sh_last_end")
    sh.g, sh.end = g, end  # registered by SH_LAST (read by the formal checks)
    with m.State("SH_LAST"):
        m.d.sync += [g.eq(seg.index(g1h, "sh_last")), end.eq(seg.pick(g1h, seg.end, "sh_end"))]
        m.next = "SH_APPLY"
    # built outside the states (a net assigned in one depends on it); the split's
    # operands driven always, its enable only in SH_APPLY
    straddles = less_than(m, mm, end, "sh_straddles")
    chain = seg.chain(s, "sh_chain")
    below = Cat(*[chain[h] & less_than(m, seg.start[h], mm, f"sh_below{h}") for h in range(seg.n)])
    m.d.comb += [seg.split_g.eq(g), seg.split_m.eq(mm), seg.split_hbm.eq(hb)]
    with m.State("SH_APPLY"):
        with m.If(straddles):
            with m.If(~seg.free_any):
                fsm.finish(PoolCode.TABLE_FULL)
            with m.Else():
                m.d.comb += seg.split_en.eq(1)
                for tlb in u.tlbs:
                    m.d.comb += tlb.kill_valid.eq(1)
                m.next = "SH_BITS"
        with m.Else():
            m.next = "SH_BITS"
    with m.State("SH_BITS"):
        m.d.comb += [
            seg.share_en.eq(1),
            seg.share_mask.eq(below),
            seg.share_dst.eq(o.dst),
            seg.share_len.eq(mm),
            seg.share_last.eq(g),  # after the split, its lower part
            seg.tag_en.eq(1),
            seg.tag_seq.eq(o.dst),
            seg.tag_val.eq(tk),
            seg.adj_en.eq(1),  # s's exclusive positions below mm are shared now
            seg.adj_seq.eq(s),
            seg.adj_chip.eq(-sh.xc),
            seg.adj_hbm.eq(-sh.xh),
        ]
        m.d.sync += fsm.r.value.eq(mm)
        fsm.finish()
