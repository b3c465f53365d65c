"""``TARGET="asic"`` (the default): SPEC §6's cycle counts, one-cycle lookups.

Every decision (the pending insert's outcome, the op port's ``take``, the
operations' enables) is one net broadcast to every entry in the cycle it is
made. A lookup finds its first hit with and without the pending entry and
picks one by the insert's outcome, so that the outcome enters the path at
its end.
"""

from amaranth import Cat, Const, Mux, Signal, Value

from hw.common import idx_bits, net
from hw.kv_pool.bundles import Decoded, Enables, EntryOps, InsertChecks, Sets, Writes
from hw.kv_pool.variant import Stream, Variant
from hw.kv_pool.vectors import encode, first, first_index, wide

__all__ = ["Asic"]


class Asic(Variant):
    """The one-net-per-decision micro-architecture (see :class:`Variant`)."""

    def outcome(self) -> tuple[Value, Value]:
        P, ins_ok, ins_rej = self.dims.pages, self.pend.ins_ok, self.pend.ins_rej
        return wide(ins_ok, self.dims.entries), Mux(ins_rej, Const((1 << P) - 1, P), 0)

    def lookup(self, port: str, qp: Stream, rp: Stream, s_vec: Signal, q_seq_ok: Value) -> None:
        m, EP, valid, pend = self.m, self.dims.ep, self.table.valid, self.pend
        PGB = len(rp.payload.page)
        # hits without and with the pending insert's entry, resolved last
        hit_b = net(m, valid & s_vec, f"{port}_hits")
        hit_w = net(m, (valid | pend.pend_e) & s_vec, f"{port}_hitsp")
        hit_page = Mux(
            pend.ins_ok,
            first_index(m, hit_w[:EP], PGB, f"{port}_pagep"),
            first_index(m, hit_b[:EP], PGB, f"{port}_page"),
        )
        any_hit = Mux(pend.ins_ok, hit_w.any(), hit_b.any())
        m.d.comb += qp.ready.eq(~rp.valid | rp.ready)
        with m.If(qp.valid & qp.ready):
            m.d.sync += [
                rp.valid.eq(1),
                rp.payload.hit.eq(any_hit & q_seq_ok),
                rp.payload.page.eq(Mux(any_hit & q_seq_ok, hit_page, 0)),
                rp.payload.error.eq(~q_seq_ok),
            ]
        with m.Elif(rp.ready):
            m.d.sync += rp.valid.eq(0)

    def take(self, take: Signal, move: Signal, r1_valid: Signal, op: Stream, res: Stream) -> Value:
        return wide(take, self.dims.entries)

    def allocate(self, free_e: Signal, free_e2: Signal) -> tuple[Signal, Signal]:
        m = self.m
        low1 = first(m, free_e, "low1")
        low2 = first(m, free_e2, "low2")
        low_e = net(m, Mux(self.pend.ins_ok, low2, low1), "low_e")
        e_idx = encode(m, low_e, idx_bits(self.dims.entries), "e_idx")
        return low_e, e_idx  # e_idx goes to the result only: no need to resolve it late

    def entry_ops(self, d: Decoded, sets: Sets, en: Enables) -> EntryOps:
        m, E = self.m, self.dims.entries
        spec, acc = sets.spec, sets.acc
        keep = net(m, spec & acc & wide(en.com_ok, E), "keep")
        fr = net(
            m,
            (spec & ~acc & wide(en.com_ok, E)) | (sets.seen & ~sets.others & wide(en.rel_ok, E)),
            "fr",
        )
        rel_s = [wide(en.rel_ok & d.seq_oh[s], E) for s in range(self.dims.seqs)]
        return EntryOps(keep, fr, rel_s)

    def insert_writes(self, d: Decoded, ins: InsertChecks, sets: Sets, en: Enables) -> Writes:
        m, E, P = self.m, self.dims.entries, self.dims.pages
        low_e = ins.low_e
        go_e = low_e & wide(en.ins_go, E)
        w_p = net(m, Mux(en.ins_go, low_e[:P] if E >= P else Cat(low_e, Const(0, P - E)), 0), "w_p")
        fork_add = net(m, sets.shared & wide(en.fork_ok, E), "fork_add")
        return Writes(go_e, w_p, fork_add)
