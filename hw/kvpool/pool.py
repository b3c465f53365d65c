"""The KV pool at the architecture's scale (SPEC §4.4 - §4.9): the composed block.

:class:`ScaledPool` (Verilog module ``kvpool``) composes the leaves of
:mod:`hw.kvpool` (decision 0016): the segment table and sequence lengths in
flops (:mod:`hw.kvpool.segtable`), the block tables (radix trees of PTEs in
memories), the tree slots, the page states with the GCLOCK spill queue, the
free-page and HBM-slot allocators and one TLB per lookup port. Two lookup
ports (:mod:`hw.kvpool.pool_lookup`) and one operation port
(:mod:`hw.kvpool.pool_ops`, checks in :mod:`hw.kvpool.pool_checks`).
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import bits_for

from hw.common import Param, check_params, idx_bits, less_than, net, or_tree, prefix_add
from hw.kvpool.allocator import PageAllocator, page_bits
from hw.kvpool.blocktable import BlockTable
from hw.kvpool.crc64 import BlockTag
from hw.kvpool.layouts import (
    PoolCode,
    PoolOp,
    addr_bits,
    pool_op_layout,
    pool_query_layout,
    pool_reply_layout,
    pool_result_layout,
)
from hw.kvpool.pagestate import PageState
from hw.kvpool.pool_checks import Facts
from hw.kvpool.pool_lookup import lookup_port
from hw.kvpool.pool_ops import OpRegs, Units, op_fsm
from hw.kvpool.segtable import SegState
from hw.kvpool.tagtable import TagTable
from hw.kvpool.tlb import TLB
from hw.kvpool.treeslots import TreeSlots

__all__ = ["ScaledPool"]


class _Reply:
    """A reply port as ``valid`` and ``payload`` (no ``ready``: always taken)."""

    def __init__(self, valid, payload) -> None:
        self.valid, self.payload = valid, payload


_POW2 = ("TLB_SETS", "TLB_WAYS", "TAG_SETS", "TAG_WAYS")


class ScaledPool(wiring.Component):
    """The KV pool at scale: ``(seq, pos) -> page`` for ``2**20`` pages and more.

    Contract: SPEC §4.4 - §4.9 and :class:`golden.kvpool.KVPool`, in the
    transaction order of :mod:`hw.kvpool.layouts` (per cycle: lookup port 0,
    port 1, then the operation). Every result and reply equals the golden
    model's (the commit's ``NOT_CHAIN`` check excepted: the RTL trusts the
    sampler's ancestor chain and its length ``acc_len``, as the flat pool
    trusts it not to commit two entries at one key). A commit, rollback,
    release or fork taken on the port is seen by the next operation in the
    next cycle, for any ``N_NODES`` (decision 0020).

    Parameters
    ----------
    PAGES : int
        On-chip pages, 16 .. 4194304, default 1048576.
    HBM_PAGES : int
        HBM spill slots, 0 .. 4194304, default 2097152 (the allocator's range:
        the golden model's 2**23 is not built).
    SEQS : int
        Sequences, 1 .. 64, default 64.
    SEGS : int
        Segments and block tables, 2 .. 1024, default 256.
    TREES : int
        Tree slots, 1 .. 16, default 8.
    N_NODES : int
        Nodes per tree, 4 .. 1024, default 1024.
    MAX_DEPTH : int
        Positions per tree window, 2 .. 1024, default 64.
    POS_BITS : int
        Bits of a position, 1 .. 20, default 17.
    TOKEN_BITS : int
        Bits of a token, 1 .. 17, default 17.
    TLB_SETS : int
        Sets of each port's TLB, a power of two, 1 .. 65536, default 1024.
    TLB_WAYS : int
        Ways of each port's TLB, a power of two, 1 .. 8, default 4.
    TAG_SETS : int
        Sets of the dedup tag table, a power of two, 1 .. 65536, default 1024.
    TAG_WAYS : int
        Ways of the dedup tag table, a power of two, 1 .. 8, default 4.

    Members
    -------
    op : In(stream.Signature(pool_op_layout(...)))
        Operations (:class:`hw.kvpool.layouts.PoolOp`).
    tok : In(stream.Signature(TOKEN_BITS))
        A share's ``n`` tokens, after the operation is accepted (all of them are
        taken, also when the share fails).
    res_valid, res : Out(1), Out(pool_result_layout(...))
        One result per operation, in order (no backpressure).
    q0, q1 : In(stream.Signature(pool_query_layout(...)))
        Lookups of port 0 (draft) and 1 (verifier).
    r0_valid, r0, r1_valid, r1 : Out(1), Out(pool_reply_layout(...))
        Their replies, in order (no backpressure).
    hits0, misses0, hits1, misses1 : Out(32)
        The TLBs' hit and miss counters (wrapping).
    free_pages, spec_pages, committed_pages, hbm_used : Out
        The counts after every completed operation.
    """

    PARAMS = {
        "PAGES": Param(default=2**20, lo=16, hi=2**22, small=16),
        "HBM_PAGES": Param(default=2**21, lo=0, hi=2**22, small=16),
        "SEQS": Param(default=64, lo=1, hi=64, small=2),
        "SEGS": Param(default=256, lo=2, hi=1024, small=2),
        "TREES": Param(default=8, lo=1, hi=16, small=1),
        "N_NODES": Param(default=1024, lo=4, hi=1024, small=4),
        "MAX_DEPTH": Param(default=64, lo=2, hi=1024, small=2),
        "POS_BITS": Param(default=17, lo=1, hi=20, small=4),
        "TOKEN_BITS": Param(default=17, lo=1, hi=17, small=1),
        "TLB_SETS": Param(default=1024, lo=1, hi=65536, small=2),
        "TLB_WAYS": Param(default=4, lo=1, hi=8, small=1),
        "TAG_SETS": Param(default=1024, lo=1, hi=65536, small=2),
        "TAG_WAYS": Param(default=4, lo=1, hi=8, small=1),
    }

    def __init__(
        self,
        *,
        PAGES: int = PARAMS["PAGES"].default,
        HBM_PAGES: int = PARAMS["HBM_PAGES"].default,
        SEQS: int = PARAMS["SEQS"].default,
        SEGS: int = PARAMS["SEGS"].default,
        TREES: int = PARAMS["TREES"].default,
        N_NODES: int = PARAMS["N_NODES"].default,
        MAX_DEPTH: int = PARAMS["MAX_DEPTH"].default,
        POS_BITS: int = PARAMS["POS_BITS"].default,
        TOKEN_BITS: int = PARAMS["TOKEN_BITS"].default,
        TLB_SETS: int = PARAMS["TLB_SETS"].default,
        TLB_WAYS: int = PARAMS["TLB_WAYS"].default,
        TAG_SETS: int = PARAMS["TAG_SETS"].default,
        TAG_WAYS: int = PARAMS["TAG_WAYS"].default,
    ) -> None:
        given = dict(
            PAGES=PAGES,
            HBM_PAGES=HBM_PAGES,
            SEQS=SEQS,
            SEGS=SEGS,
            TREES=TREES,
            N_NODES=N_NODES,
            MAX_DEPTH=MAX_DEPTH,
            POS_BITS=POS_BITS,
            TOKEN_BITS=TOKEN_BITS,
            TLB_SETS=TLB_SETS,
            TLB_WAYS=TLB_WAYS,
            TAG_SETS=TAG_SETS,
            TAG_WAYS=TAG_WAYS,
        )
        p = check_params(self.PARAMS, given, powers_of_two=_POW2)
        self.p = p
        for k, v in p.items():
            setattr(self, k, v)
        P, H, pb, tb = p["PAGES"], p["HBM_PAGES"], p["POS_BITS"], p["TOKEN_BITS"]
        cb, hb = bits_for(P), bits_for(H)
        super().__init__(
            {
                "op": In(stream.Signature(pool_op_layout(p["SEQS"], p["N_NODES"], pb, tb, P))),
                "tok": In(stream.Signature(tb)),
                "res_valid": Out(1),
                "res": Out(pool_result_layout(P, H, pb)),
                "q0": In(stream.Signature(pool_query_layout(p["SEQS"], p["N_NODES"], pb))),
                "q1": In(stream.Signature(pool_query_layout(p["SEQS"], p["N_NODES"], pb))),
                "r0_valid": Out(1),
                "r0": Out(pool_reply_layout(P, H)),
                "r1_valid": Out(1),
                "r1": Out(pool_reply_layout(P, H)),
                "hits0": Out(32),
                "misses0": Out(32),
                "hits1": Out(32),
                "misses1": Out(32),
                "free_pages": Out(cb),
                "spec_pages": Out(cb),
                "committed_pages": Out(cb),
                "hbm_used": Out(hb),
            }
        )

    def _units(self, m: Module) -> Units:
        p = self.p
        P, H, S = p["PAGES"], p["HBM_PAGES"], p["SEGS"]
        ab = addr_bits(P, H)
        m.submodules.alloc = alloc = PageAllocator(PAGES=P)
        m.submodules.halloc = halloc = PageAllocator(PAGES=max(16, H))
        tlbs = []
        for k in range(2):
            tlb = TLB(
                SETS=p["TLB_SETS"], WAYS=p["TLB_WAYS"], SEGS=S, POS_BITS=p["POS_BITS"], ADDR_BITS=ab
            )
            m.submodules[f"tlb{k}"] = tlb
            tlbs.append(tlb)
        slots = P + H
        m.submodules.bt = bt = BlockTable(
            TABLES=S,
            INDEX_BITS=p["POS_BITS"],
            ADDR_BITS=ab,
            TOKEN_BITS=p["TOKEN_BITS"],
            LEAVES=max(16, -(-slots // 64) + 2 * S),
            MIDS=max(16, -(-slots // 4096) + 2 * S),
            PORTS=2,
        )
        m.submodules.ts = ts = TreeSlots(
            TREES=p["TREES"],
            N_NODES=p["N_NODES"],
            MAX_DEPTH=p["MAX_DEPTH"],
            SEQS=p["SEQS"],
            POS_BITS=p["POS_BITS"],
            PAGE_BITS=page_bits(P),
            TOKEN_BITS=p["TOKEN_BITS"],
            PORTS=2,
        )
        m.submodules.crc = BlockTag(TOKEN_BITS=p["TOKEN_BITS"])
        m.submodules.tags = TagTable(
            TAG_SETS=p["TAG_SETS"],
            TAG_WAYS=p["TAG_WAYS"],
            SEQS=p["SEQS"],
            POS_BITS=max(5, p["POS_BITS"]),
        )
        m.submodules.ps = ps = PageState(PAGES=P, TABLE_BITS=idx_bits(S), POS_BITS=p["POS_BITS"])
        seg = SegState(m, segs=S, seqs=p["SEQS"], pos_bits=p["POS_BITS"])
        cb, hb = bits_for(P), bits_for(H)
        return Units(
            alloc=alloc,
            halloc=halloc,
            tlbs=tuple(tlbs),
            bt=bt,
            ts=ts,
            ps=ps,
            seg=seg,
            spec_pages=Signal(cb, name="spec_pages_r"),
            committed_pages=Signal(cb, name="committed_pages_r"),
            hbm_used=Signal(hb, name="hbm_used_r"),
            drain=Signal(name="drain_r"),
            pending=Signal(cb, name="pending_r"),  # pages (a release frees up to PAGES)
            drain_acc=Signal(name="drain_acc_r"),
            drain_seq=Signal(idx_bits(p["SEQS"]), name="drain_seq_r"),
            drain_g=Signal(seg.gb, name="drain_g_r"),
            drain_t=Signal(seg.gb, name="drain_t_r"),
            drain_pos=Signal(len(seg.len[0]), name="drain_pos_r"),
            cutting=Signal(name="cutting_r"),
            killing=Signal(name="killing"),
            scoring=Signal(name="scoring_r"),
            score_rd=Signal(name="score_rd"),
        )

    def _tree_of(self, m: Module, ts, seq, name: str) -> tuple[Signal, Signal, Signal]:
        """``(has_tree, slot, one)``: the active tree slot of ``seq`` (``one``: one-hot)."""
        T = self.TREES
        sb = idx_bits(self.SEQS)
        seqs = Value.cast(ts.slot_seq)
        live = ts.active & ~ts.draining  # a draining tree is gone (committed, released)
        bits = Cat(*[live[r] & (seqs[r * sb : (r + 1) * sb] == seq) for r in range(T)])
        one = net(m, bits, f"{name}_1h")
        slot = or_tree([Mux(one[r], r, 0) for r in range(T)])[: max(1, idx_bits(T))]
        return net(m, one.any(), f"{name}_has"), net(m, slot, f"{name}_slot"), one

    def _in_window(self, m: Module, ts, one: Value, pos: Value, name: str) -> Signal:
        """``lo <= pos < lo + MAX_DEPTH`` of the tree slot of one-hot ``one``: compared
        with every slot's ``lo``, then picked (the slot is a search's result)."""
        pb, ins = self.POS_BITS, []
        for r in range(self.TREES):
            lo = Value.cast(ts.slot_lo)[r * pb : (r + 1) * pb]
            hi = prefix_add(m, lo, Const(self.MAX_DEPTH), pb + 1, f"{name}{r}_hi", keep=True)
            lo_ok = ~less_than(m, pos, lo, f"{name}{r}_lo")
            ins.append(lo_ok & less_than(m, pos, hi, f"{name}{r}_whi"))
        return net(m, (Cat(*ins) & one).any(), name)

    def _slot_lo(self, m: Module, ts, slot, name: str) -> Signal:
        pb = self.POS_BITS
        return net(m, Value.cast(ts.slot_lo).word_select(slot, pb), name)

    def _facts(self, m: Module, u: Units, o, node_valid: Value, pre: str = "op") -> dict:
        """The comb values the FSM's checks and steps read, from the op ``o`` (the
        registered one; ``pre = "in"``: the one on the port, for the fast insert).
        ``node_valid``: the tree slots' valid query of ``o``'s node, which the caller
        drives."""
        p, seg, ts = self.p, u.seg, u.ts
        S, N = p["SEQS"], p["N_NODES"]
        sw = len(o.seq)
        seq_ok = (o.seq < S) if S < (1 << sw) else Const(1)
        dst_ok = (o.dst < S) if S < (1 << sw) else Const(1)
        owner_ok = (o.owner < N) if N < (1 << len(o.owner)) else Const(1)
        ln = seg.len_of(o.seq, f"{pre}_len")
        has_tree, slot, tree1h = self._tree_of(m, ts, o.seq, f"{pre}_tree")
        dst_tree, _, _ = self._tree_of(m, ts, o.dst, f"{pre}_dst_tree")
        acc_any = ts.chk_any
        in_window = self._in_window(m, ts, tree1h, o.pos, f"{pre}_win")
        has_own, own_g = seg.own_of(o.seq, f"{pre}_own")
        lt, eq = seg.len_vs(o.seq, o.pos, f"{pre}_pos_len")
        find1h = seg.find(o.seq, o.pos, f"{pre}_find1h")
        find_t, find_i = seg.locate(find1h, o.pos, f"{pre}_find", each=True)
        facts = Facts(
            seq_ok=seq_ok,
            dst_ok=dst_ok,
            owner_ok=owner_ok,
            ln=ln,
            pos_lt_len=lt,
            pos_gt_len=~lt & ~eq,
            pos_eq_len=eq,
            ln_nz=seg.len_nz(o.seq, f"{pre}_len_nz"),
            dst_nz=seg.len_nz(o.dst, f"{pre}_dst_nz"),
            has_tree=has_tree,
            dst_tree=dst_tree,
            node_valid=node_valid,
            in_window=in_window,
            tree_free=ts.has_free,
            acc_any=acc_any,
            has_own=has_own,
            seg_free=seg.free_any,
            page_free=(u.alloc.free_pages != 0) | (u.pending != 0),
            can_spill=(u.committed_pages != 0) & (u.hbm_used < p["HBM_PAGES"]),
            n_ok=o.n <= p["PAGES"],
            ntok_ok=o.n <= (1 << p["POS_BITS"]),
        )
        return {
            "facts": facts,
            "ln": ln,
            "slot": slot,
            "has_tree": has_tree,
            "free_slot": ts.free_slot,
            "acc_any": acc_any,
            # the FIFO's next page is a pending one, not yet pushed: an allocation waits
            "alloc_wait": (u.alloc.level == 0) & (u.pending != 0),
            # a commit's path appended, a cut or a posted score in flight: only
            # speculative inserts (and, behind scores, scores) are taken
            # (hw.kvpool.pool_drain.drain_wait, hw.kvpool.pool_score)
            "spec_only": u.drain_acc | u.cutting | u.scoring,
            "has_own": has_own,
            "own_g": own_g,
            "own_t": seg.table_of(own_g, f"{pre}_own_t"),
            "find_g": seg.index(find1h, f"{pre}_find_g"),
            "find_t": find_t,
            "find_i": find_i,
            "chain": seg.chain(o.seq, f"{pre}_chain"),
            "slot_lo": lambda s: self._slot_lo(m, ts, s, f"{pre}_slot_lo"),
        }

    def elaborate(self, platform) -> Module:
        m = Module()
        p = self.p
        u = self._units(m)
        lay = pool_op_layout(p["SEQS"], p["N_NODES"], p["POS_BITS"], p["TOKEN_BITS"], p["PAGES"])
        res = self.res
        r = OpRegs(
            o=Signal(lay, name="op_r"),
            code=Signal.like(res.code, name="code_r"),
            value=Signal.like(res.value, name="value_r"),
            value2=Signal.like(res.value2, name="value2_r"),
            spilled=Signal(name="spilled_r"),
            done=Signal(name="op_done"),
            idle=Signal(name="op_idle"),
        )
        ts = u.ts
        facts = self._facts(m, u, r.o, ts.chk_valid)
        fast = self._facts(m, u, self.op.payload, ts.chk2_valid, "in")
        # the tree slots' valid queries: the registered op's (CHECK's) and the port's
        # (the fast insert's; two, so it does not wait on a select by the FSM's
        # state); the accept query: the port's op in IDLE (a fast commit's)
        m.d.comb += [
            ts.chk_slot.eq(Mux(r.idle, fast["slot"], facts["slot"])),
            ts.chk_node.eq(r.o.owner),
            ts.chk2_slot.eq(fast["slot"]),
            ts.chk2_node.eq(self.op.payload.owner),
        ]
        m.d.comb += ts.chk_accept.eq(Mux(r.idle, self.op.payload.accept, r.o.accept))
        # a release's sequence, driven always (only rel_en waits for the checks): the
        # port's op in IDLE, else the registered one
        m.d.comb += u.seg.rel_seq.eq(Mux(r.idle, self.op.payload.seq, r.o.seq))
        inflight, lookups = [], []
        hold = Signal(name="lookup_hold")
        for k in range(2):
            lp = lookup_port(
                m,
                k,
                q=getattr(self, f"q{k}"),
                r=_Reply(getattr(self, f"r{k}_valid"), getattr(self, f"r{k}")),
                # a fast commit's sequence waits for its accepted path's appends
                allow=r.idle
                & ~hold
                & ~u.killing
                & ~(u.score_rd & (k == 0))  # a posted score reads port 0
                & ~(u.drain_acc & (getattr(self, f"q{k}").payload.seq == u.drain_seq)),
                seg=u.seg,
                tlb=u.tlbs[k],
                rd=getattr(u.bt, f"rd{k}"),
                rd_rsp=getattr(u.bt, f"rd{k}_rsp"),
                tree_lk=getattr(u.ts, f"lk{k}"),
                tree_rsp=getattr(u.ts, f"lk{k}_rsp"),
                tree_of=lambda seq, name: self._tree_of(m, u.ts, seq, name)[:2],
                seqs=p["SEQS"],
            )
            inflight.append(lp.inflight)
            lookups.append(lp)
        self.lookups = tuple(lookups)  # their stage registers, for the formal checks
        res_fast, fork_done, done_next, lk_hold, self.state = op_fsm(
            m,
            self.op,
            u,
            r,
            p
            | {
                "addr_bits": addr_bits(p["PAGES"], p["HBM_PAGES"]),
                "page_bits": page_bits(p["PAGES"]),
                "pos_bits": p["POS_BITS"],
                "token_bits": p["TOKEN_BITS"],
                "trees": p["TREES"],
            },
            facts,
            inflight[0] | inflight[1],
            crc=m.submodules.crc,
            tags=m.submodules.tags,
            tok=self.tok,
            fast=fast,
        )
        m.d.comb += hold.eq(lk_hold)
        m.d.comb += self.res_valid.eq(r.done | res_fast | fork_done | done_next)
        # pending pushes count as free (a kept prefix adder of two registers)
        w = len(self.free_pages)
        free = prefix_add(m, u.alloc.free_pages, u.pending, w, "free_sum", keep=True)
        with m.If(res_fast):  # a fast insert's (hw.kvpool.pool_fast)
            m.d.comb += [res.op.eq(PoolOp.INSERT), res.value.eq(u.alloc.page)]
        with m.Elif(fork_done):  # a fast fork's
            m.d.comb += res.op.eq(PoolOp.FORK)
        with m.Else():
            m.d.comb += [
                res.op.eq(r.o.op),
                res.error.eq(r.code != PoolCode.NONE),
                res.code.eq(r.code),
                res.value.eq(r.value),
                res.value2.eq(r.value2),
                res.spilled.eq(r.spilled),
            ]
        m.d.comb += [
            res.free_pages.eq(free),
            res.spec_pages.eq(u.spec_pages),
            res.committed_pages.eq(u.committed_pages),
            res.hbm_used.eq(u.hbm_used),
            self.free_pages.eq(free),
            self.spec_pages.eq(u.spec_pages),
            self.committed_pages.eq(u.committed_pages),
            self.hbm_used.eq(u.hbm_used),
            self.hits0.eq(u.tlbs[0].hits),
            self.misses0.eq(u.tlbs[0].misses),
            self.hits1.eq(u.tlbs[1].hits),
            self.misses1.eq(u.tlbs[1].misses),
        ]
        return m
