"""``TARGET="fpga"``: decisions replicated per group of entries, two-cycle lookups.

No net that decides an operation reaches every entry: every decision that
gates the entries' writes is made once per group of
:data:`~hw.kv_pool.layouts.GROUP` entries, from registers that group owns
(:class:`Replicas`, Verilog names ``*_rep_g<g>``, which ``flows.synth_fpga``
marks ``keep`` since synthesis would merge identical flip-flops). A lookup
is two-stage (:mod:`hw.kv_pool.staged`). The wide reductions left
(the result's error codes, the allocation's index, the counts) end in
registers. Same operations, results, error classes and replies as
``TARGET="asic"``; the lookup latency is 2 (a deviation from SPEC §6).
"""

from amaranth import Cat, Const, Module, Mux, Signal, Value

from hw.common import idx_bits, net, or_tree
from hw.kv_pool.bundles import Decoded, Enables, EntryOps, InsertChecks, Sets, Writes
from hw.kv_pool.layouts import GROUP, PORTS
from hw.kv_pool.staged import staged_lookup
from hw.kv_pool.state import Dims, PendingInsert, Table
from hw.kv_pool.variant import Stream, Variant
from hw.kv_pool.vectors import first_grouped, onehot, wide

__all__ = ["Replicas", "Fpga"]


class Replicas:
    """The FPGA build's per-group copies (``<g>``: the group that owns the copy) and
    the registers of its two-stage lookups.

    Attributes
    ----------
    ckc_rep, ckd_rep : list of Signal
        Copies of the pending insert's check bits ``ck_com`` / ``ck_dup``.
    pok_rep : list of Signal
        Copies of ``~ck_pcom & ~ck_pdup`` (valid while an insert is pending).
    r1v_rep, resv_rep : list of Signal
        Copies of ``r1_valid`` and ``res.valid`` (whether the op port takes a beat).
    busy_rep : list of Signal
        ``busy_rep[g][j * SEQS + s]``: group ``j`` has a valid entry (registers)
        seen by sequence ``s`` (the fork's ``dst`` check).
    s1_valid : dict of Signal
        Per lookup port: its first stage holds a query.
    lk_rep : dict of (list of Signal, list of Signal)
        Per lookup port, one per group of the entries that can hold a page:
        copies of ``s1_valid`` and of the reply's ``valid``.
    pend_i : Signal
        The pending insert's entry index.
    """

    def __init__(self, dims: Dims) -> None:
        ng, S = dims.groups, dims.seqs
        self.ckc_rep = [Signal(ng, name=f"ckc_rep_g{g}") for g in range(ng)]
        self.ckd_rep = [Signal(ng, name=f"ckd_rep_g{g}") for g in range(ng)]
        self.r1v_rep = [Signal(name=f"r1v_rep_g{g}") for g in range(ng)]
        self.resv_rep = [Signal(name=f"resv_rep_g{g}") for g in range(ng)]
        self.busy_rep = [Signal(ng * S, name=f"busy_rep_g{g}") for g in range(ng)]
        self.pok_rep = [Signal(name=f"pok_rep_g{g}") for g in range(ng)]
        self.s1_valid = {port: Signal(name=f"{port}_s1_valid") for port in PORTS}
        ngp = (dims.ep + GROUP - 1) // GROUP
        self.lk_rep = {
            port: (
                [Signal(name=f"{port}_s1v_rep_g{g}") for g in range(ngp)],
                [Signal(name=f"{port}_rpv_rep_g{g}") for g in range(ngp)],
            )
            for port in PORTS
        }
        self.pend_i = Signal(idx_bits(dims.entries), name="pend_i")


class Fpga(Variant):
    """The replicated-decision micro-architecture (see :class:`Variant`)."""

    def __init__(
        self, m: Module, dims: Dims, table: Table, pend: PendingInsert, rep: Replicas
    ) -> None:
        super().__init__(m, dims, table, pend)
        self.rep = rep

    def _per_entry(self, per_group: list[Value]) -> Value:
        """A per-group value copied to each of the group's entries."""
        return Cat(*[per_group[i // GROUP] for i in range(self.dims.entries)])

    def outcome(self) -> tuple[Value, Value]:
        # the outcome again in every group, from that group's own copy of the check
        # bits (registers: identical logic on shared registers would be merged
        # into one net reaching every entry)
        m, rep, E, P = self.m, self.rep, self.dims.entries, self.dims.pages
        self.ok_g = [
            net(m, rep.pok_rep[g] & ~(rep.ckc_rep[g].any() | rep.ckd_rep[g].any()), f"ins_ok_g{g}")
            for g in range(self.dims.groups)
        ]
        self.ok_vec = self._per_entry(self.ok_g)
        # (a pending entry's page is given back if the insert is rejected: the
        # caller ANDs this with the pending page, set only while one is pending)
        rej_pvec = Cat(*[~self.ok_g[min(i, E - 1) // GROUP] for i in range(P)])
        return self.ok_vec, rej_pvec

    def lookup(self, port: str, qp: Stream, rp: Stream, s_vec: Signal, q_seq_ok: Value) -> None:
        # the two-stage lookup (hw.kv_pool.staged), every group's stage-1 registers
        # loaded from that group's copies of s1_valid and the reply's valid
        s1_valid, rep = self.rep.s1_valid[port], self.rep
        s1v_rep, rpv_rep = rep.lk_rep[port]

        def loads(q_take: Value, s1_move: Value) -> list[Value]:
            s1v_next = Mux(q_take, 1, Mux(s1_move, 0, s1_valid))
            rpv_next = Mux(s1_valid & s1_move, 1, Mux(rp.ready, 0, rp.valid))
            self.m.d.sync += [x.eq(s1v_next) for x in s1v_rep] + [x.eq(rpv_next) for x in rpv_rep]
            return [~s1v_rep[j] | ~rpv_rep[j] | rp.ready for j in range(len(s1v_rep))]

        staged_lookup(
            self.m, self.dims, self.table, self.pend, rep.pend_i, port, qp, rp, s_vec,
            q_seq_ok, s1_valid, loads,
        )  # fmt: skip

    def take(self, take: Signal, move: Signal, r1_valid: Signal, op: Stream, res: Stream) -> Value:
        # whether the op port takes a beat, per group: r1_valid and res.valid
        # replicated (their next values); ready = ~r1 | ~res | res.ready
        m, rep = self.m, self.rep
        r1v_next = Mux(take, 1, Mux(move, 0, r1_valid))
        resv_next = Mux(move, 1, Mux(res.ready, 0, res.valid))
        m.d.sync += [x.eq(r1v_next) for x in rep.r1v_rep]
        m.d.sync += [x.eq(resv_next) for x in rep.resv_rep]
        self.take_g = [
            net(m, op.valid & (~rep.r1v_rep[g] | ~rep.resv_rep[g] | res.ready), f"take_g{g}")
            for g in range(self.dims.groups)
        ]
        self.take_vec = self._per_entry(self.take_g)
        return self.take_vec

    def allocate(self, free_e: Signal, free_e2: Signal) -> tuple[Signal, Signal]:
        # in groups: every group's first free entry, in parallel with the first
        # group that has one; chosen per group by that group's outcome, and the
        # index chosen by ins_ok last (to r1 and pend_i only)
        m = self.m
        low1, idx1 = first_grouped(m, free_e, "low1")
        low2, idx2 = first_grouped(m, free_e2, "low2")
        low_e = net(m, (low2 & self.ok_vec) | (low1 & ~self.ok_vec), "low_e")
        e_idx = net(m, Mux(self.pend.ins_ok, idx2, idx1), "e_idx")
        return low_e, e_idx

    def entry_ops(self, d: Decoded, sets: Sets, en: Enables) -> EntryOps:
        # per entry, the operation's enables (take_vec: the beat is taken)
        m, E, S, NG = self.m, self.dims.entries, self.dims.seqs, self.dims.groups
        o, take_vec, pend = d.o, self.take_vec, self.pend
        self.com_c = com_c = d.is_com & d.seq_ok & o.accept[0]
        self.rel_c = rel_c = d.is_rel & d.seq_ok
        keep = net(m, sets.spec & sets.acc & take_vec & wide(com_c, E), "keep")
        freeing = (sets.spec & ~sets.acc & wide(com_c, E)) | (
            sets.seen & ~sets.others & wide(rel_c, E)
        )
        fr = net(m, take_vec & freeing, "fr")
        rel_s = [net(m, take_vec & wide(rel_c & d.seq_oh[s], E), f"rel_s{s}") for s in range(S)]
        # the fork's dst check, per group: from the group's copy of every group's
        # "sees a valid entry" bits, and the pending insert's entry
        fork_c = d.is_fork & d.seq_ok & d.dst_ok & (o.seq != o.dst)
        busy = self.rep.busy_rep
        busy_g = [
            or_tree([busy[g][j * S : (j + 1) * S].bit_select(o.dst, 1) for j in range(NG)])
            | (pend.pend_r & self.ok_g[g] & (pend.pend_seq == o.dst))
            for g in range(NG)
        ]
        self.fork_g = [
            net(m, self.take_g[g] & fork_c & ~busy_g[g], f"fork_ok_g{g}") for g in range(NG)
        ]
        return EntryOps(keep, fr, rel_s)

    def insert_writes(self, d: Decoded, ins: InsertChecks, sets: Sets, en: Enables) -> Writes:
        # the entry (and page) taken, without the wide "any free entry / page"
        # reductions: low_e is 0 when no entry is free, and an entry >= PAGES is
        # the lowest free one only when no page is free
        m, E, P, EP = self.m, self.dims.entries, self.dims.pages, self.dims.ep
        ins_c = d.is_ins & d.seq_ok & d.own_ok
        go = net(m, ins.low_e[:EP] & self.take_vec[:EP] & Mux(ins_c, (1 << EP) - 1, 0), "go")
        go_e = Cat(go, Const(0, E - EP)) if E > EP else go
        w_p = net(m, Cat(go, Const(0, P - EP)) if P > EP else go, "w_p")
        fork_add = net(m, sets.shared & self._per_entry(self.fork_g), "fork_add")
        return Writes(go_e, w_p, fork_add)

    def pending_copies(self, pc_com: Value, pc_dup: Value) -> list:
        # not ANDed with ins_go: every use of ok_g is gated by the pending entry
        return [x.eq(~pc_com & ~pc_dup) for x in self.rep.pok_rep]

    def after_update(self, d: Decoded, ins: InsertChecks, sets: Sets, ops: EntryOps) -> None:
        m = self.m
        m.d.sync += self.rep.pend_i.eq(ins.e_idx)
        bnext_v = net(m, self._busy_next(d, sets, ops), "busy_next")
        m.d.sync += [x.eq(bnext_v) for x in self.rep.busy_rep]

    def _busy_next(self, d: Decoded, sets: Sets, ops: EntryOps) -> Value:
        """The busy copies' next value, "group ``j`` has a valid entry seen by ``s``"
        after the operation: the valid registers' entries that stay valid
        (``fr_b``: the entries freed, from ``valid`` rather than ``valid_now``, so
        that the pending insert's outcome is not on this path), the pending
        insert's entry if accepted and not freed now, and the fork's additions;
        the outcome and the fork's decision enter last (an insert taken now is
        pending next cycle, not valid)."""
        m, E, S, G = self.m, self.dims.entries, self.dims.seqs, GROUP
        t, pend, o = self.table, self.pend, d.o
        valid, committed, sbit = t.valid, t.committed, d.sbit
        com_c, rel_c = self.com_c, self.rel_c
        spec_b = valid & ~committed & sbit
        fr_b = self.take_vec & (
            (spec_b & ~sets.acc & wide(com_c, E)) | (valid & sbit & ~sets.others & wide(rel_c, E))
        )
        v_b = net(m, valid & ~fr_b, "v_b")
        p_acc = o.accept.bit_select(pend.pend_own, 1)
        p_fr = net(
            m, (pend.pend_seq == o.seq) & ((com_c & ~pend.pend_com & ~p_acc) | rel_c), "p_fr"
        )  # freed if the beat is taken
        p_oh = onehot(m, pend.pend_seq, S, "p_oh")
        # a fork's src sees it
        p_shared = net(m, pend.pend_com & (pend.pend_seq == o.seq), "p_shared")
        bnext = []
        for j in range(self.dims.groups):
            sl = slice(j * G, min(E, (j + 1) * G))
            p_here = pend.pend_e[sl].any() & self.ok_g[j]  # the pending entry, accepted, is here
            sh_j = (valid & committed & sbit)[sl].any() | (p_here & p_shared)
            p_in = p_here & ~(self.take_g[j] & p_fr)
            for s in range(S):
                stay = (t.seqs_p[s][sl] & v_b[sl] & ~ops.rel_s[s][sl]).any()
                bnext.append(stay | (p_in & p_oh[s]) | (self.fork_g[j] & d.dst_oh[s] & sh_j))
        return Cat(*bnext)

    def copy_checks(self, ck_com_d: Signal, ck_dup_d: Signal) -> None:
        m, rep = self.m, self.rep
        for g in range(self.dims.groups):
            with m.If(self.take_g[g]):
                m.d.sync += [rep.ckc_rep[g].eq(ck_com_d), rep.ckd_rep[g].eq(ck_dup_d)]
