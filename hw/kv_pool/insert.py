"""The insert: the pending insert's resolution, its conflict checks and its allocation.

An insert's two wide checks (``seq`` already sees the key committed; a
speculative duplicate exists) are split at a register: the edge that takes
the insert (E0) stores one OR per group of :data:`~hw.kv_pool.layouts.GROUP`
entries (:func:`check_groups`, loaded with the result's first stage), writes
its fields into every free entry and reserves its page; the next cycle ORs
the groups and resolves it (:func:`resolve_pending`): accepted, ``valid`` is
set at E1; rejected, the page returns to the bitmap at E1. In that cycle
everything that reads the table reads ``valid_now`` / ``free_now``, the
registers with the insert resolved, and forwards the pending entry where a
reduction needs it, from the copy of its fields in
:class:`~hw.kv_pool.state.PendingInsert`.
"""

from amaranth import Cat, Const, Module, Mux, Signal

from hw.common import net
from hw.kv_pool.bundles import Decoded, InsertChecks
from hw.kv_pool.layouts import GROUP
from hw.kv_pool.state import Dims, PendingInsert, Table
from hw.kv_pool.variant import Variant
from hw.kv_pool.vectors import match

__all__ = ["resolve_pending", "checks", "check_groups"]


def resolve_pending(
    m: Module, dims: Dims, table: Table, pend: PendingInsert, variant: Variant
) -> tuple[Signal, Signal]:
    """Resolve the pending insert: drive ``ins_ok`` / ``ins_rej`` and the architectural
    ``valid_now`` / ``free_now``. Returns ``(seen_com, spec_dup)``, the finished checks
    (meaningful while one is pending)."""
    E, P = dims.entries, dims.pages
    seen_com = net(m, pend.ck_com.any() | pend.ck_pcom, "seen_com")
    spec_dup = net(m, pend.ck_dup.any() | pend.ck_pdup, "spec_dup")
    m.d.comb += [
        pend.ins_ok.eq(pend.pend_r & ~seen_com & ~spec_dup),  # 0 if none pending
        pend.ins_rej.eq(pend.pend_r & (seen_com | spec_dup)),
    ]
    pend_ep = pend.pend_e[:P] if E >= P else Cat(pend.pend_e, Const(0, P - E))  # its page
    ok_vec, rej_pvec = variant.outcome()
    m.d.comb += [
        table.valid_now.eq(table.valid | (pend.pend_e & ok_vec)),
        table.free_now.eq(table.free_p | (pend_ep & rej_pvec)),
    ]
    return seen_com, spec_dup


def checks(
    m: Module, table: Table, pend: PendingInsert, d: Decoded, variant: Variant
) -> InsertChecks:
    """The insert on offer: its conflict checks per entry and against the pending
    entry, and the entry (and page: the same index) it would take."""
    o = d.o
    valid = table.valid
    own_eq = match(m, table.owner_p, o.owner, "own_eq")
    conf_com = net(m, valid & table.committed & d.sbit & d.key, "conf_com")
    conf_dup = net(m, valid & d.sbit & d.key & own_eq, "conf_dup")
    p_key = net(m, d.p_seq & (pend.pend_key == d.okey), "p_key")
    pc_com = p_key & pend.pend_com
    pc_dup = p_key & ~pend.pend_com & (pend.pend_own == o.owner) & ~o.committed
    # allocation: the lowest free entry (its page is the same index), without
    # and with the pending insert's entry taken
    free_e = net(m, ~valid, "free_e")
    free_e2 = net(m, free_e & ~pend.pend_e, "free_e2")
    low_e, e_idx = variant.allocate(free_e, free_e2)
    any_e = net(m, Mux(pend.ins_ok, free_e2.any(), free_e.any()), "any_e")
    any_p = net(m, table.free_p.any() | pend.ins_rej, "any_p")
    return InsertChecks(conf_com, conf_dup, pc_com, pc_dup, low_e, e_idx, any_e, any_p)


def check_groups(m: Module, dims: Dims, d: Decoded, ins: InsertChecks) -> tuple[Signal, Signal]:
    """The insert's check bits reduced per group (the next values of ``ck_com`` /
    ``ck_dup``; a committed insert has no duplicate check)."""
    E, NG = dims.entries, dims.groups

    def groups(vec: Signal) -> Cat:
        return Cat(*[vec[k : k + GROUP].any() for k in range(0, E, GROUP)])

    ck_com_d = net(m, groups(ins.conf_com), "ck_com_d")
    ck_dup_d = net(m, groups(ins.conf_dup) & Mux(d.o.committed, 0, (1 << NG) - 1), "ck_dup_d")
    return ck_com_d, ck_dup_d
