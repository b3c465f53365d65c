"""The two-stage lookup (reply 2 cycles after the query), shared by two variants.

``TARGET="fpga"`` (:mod:`hw.kv_pool.fpga`) uses it at every size and
``TARGET="asic"`` when ``N_NODES`` exceeds :data:`STAGED_NODES`
(:mod:`hw.kv_pool.asic_staged`): :func:`lookup_cycles` is the rule.

Stage 1 (the edge that takes the query) registers, per group of
:data:`~hw.kv_pool.layouts.GROUP` entries, whether a valid entry hits and
the first one that does, and whether the pending insert's entry, if
accepted, hits (and its index). Stage 2 (the next edge) picks the first
group with a hit, or the pending entry if it is lower, into the reply
register. The reply is the one the one-cycle lookup gives for the state of
the cycle the query is taken in: everything that reads the table is in
stage 1.

Why (decision 0052): the one-cycle lookup's path is the entry's
``view[owner]`` select (``log2(N_NODES)`` multiplexer levels) followed by
the first hit among every entry; at ``N_NODES = 1,024`` it is 43 gate levels
against the 40-level budget, and the cut leaves stage 1 the select and a
16-entry search.
"""

from collections.abc import Callable

from amaranth import Cat, Module, Mux, Signal, Value

from hw.common import idx_bits, net
from hw.kv_pool.layouts import GROUP
from hw.kv_pool.state import Dims, PendingInsert, Table
from hw.kv_pool.vectors import encode, first, group_index

__all__ = ["STAGED_NODES", "lookup_cycles", "staged_lookup", "Loads"]

#: the largest ``N_NODES`` at which ``TARGET="asic"`` replies in 1 cycle (SPEC §6)
STAGED_NODES = 256

#: given ``(q_take, s1_move)`` (the query is taken; stage 1 hands on), one load
#: condition per group for the stage-1 group registers; ``None``: stage 1 can take
Loads = Callable[[Value, Value], list[Value]] | None


def lookup_cycles(n_nodes: int, target: str = "asic") -> int:
    """The pool's lookup latency in cycles (docs/spec.md §6): 1, or 2 with
    ``TARGET="fpga"`` or ``N_NODES >`` :data:`STAGED_NODES`."""
    return 2 if target == "fpga" or n_nodes > STAGED_NODES else 1


def staged_lookup(
    m: Module,
    dims: Dims,
    table: Table,
    pend: PendingInsert,
    pend_i: Signal,
    port: str,
    qp,
    rp,
    s_vec: Signal,
    q_seq_ok: Value,
    s1_valid: Signal,
    loads: Loads = None,
) -> None:
    """Reply to ``qp``'s queries on ``rp`` 2 cycles after (see the module).

    ``pend_i`` is the pending insert's entry index (a register), ``s_vec`` the
    per-entry match of the query on offer, ``q_seq_ok`` its range check,
    ``s1_valid`` stage 1's valid register; ``loads`` gives the groups' load
    conditions (``TARGET="fpga"`` builds them from per-group copies).
    """
    EP, G = dims.ep, GROUP
    PGB = idx_bits(dims.pages)
    qq = qp.payload
    lb = idx_bits(G)
    ng = (EP + G - 1) // G
    hit_v = net(m, table.valid[:EP] & s_vec[:EP], f"{port}_hits")
    s1_ok = Signal(name=f"{port}_s1_ok")
    s1_any = Signal(ng, name=f"{port}_s1_any")
    s1_loc = [Signal(lb, name=f"{port}_s1_loc{j}") for j in range(ng)]
    s1_pend = Signal(name=f"{port}_s1_pend")  # the pending entry, accepted, hits
    s1_pi = Signal(PGB, name=f"{port}_s1_pi")  # its index
    p_hit = net(
        m,
        pend.ins_ok
        & (pend.pend_seq == qq.seq)
        & (pend.pend_key == Cat(qq.layer, qq.pos))
        & (pend.pend_com | qq.view.bit_select(pend.pend_own, 1)),
        f"{port}_phit",
    )
    s1_move = ~rp.valid | rp.ready
    m.d.comb += qp.ready.eq(~s1_valid | s1_move)
    q_take = qp.valid & qp.ready
    with m.If(q_take):
        m.d.sync += [
            s1_valid.eq(1),
            s1_ok.eq(q_seq_ok),
            s1_pend.eq(p_hit),
            s1_pi.eq(pend_i[:PGB]),
        ]
    with m.Elif(s1_move):
        m.d.sync += s1_valid.eq(0)
    # every group's stage-1 registers load whenever the stage can take a query
    # (s1_valid says whether one came); the group's first-hit nets are built
    # under that load condition
    load = loads(q_take, s1_move) if loads is not None else [~s1_valid | s1_move] * ng
    for j in range(ng):
        gv = hit_v[j * G : (j + 1) * G]
        with m.If(load[j]):
            m.d.sync += [
                s1_any[j].eq(gv.any()),
                s1_loc[j].eq(encode(m, first(m, gv, f"{port}_g{j}"), lb, f"{port}_g{j}_i")),
            ]
    gsel = first(m, s1_any, f"{port}_gsel")
    b_idx = group_index(m, gsel, s1_loc, PGB, f"{port}_b")
    b_any = s1_any.any()
    use_p = s1_pend & (~b_any | (s1_pi < b_idx))
    hit2 = (b_any | s1_pend) & s1_ok
    with m.If(s1_valid & s1_move):
        m.d.sync += [
            rp.valid.eq(1),
            rp.payload.hit.eq(hit2),
            rp.payload.page.eq(Mux(hit2, Mux(use_p, s1_pi, b_idx), 0)),
            rp.payload.error.eq(~s1_ok),
        ]
    with m.Elif(rp.ready):
        m.d.sync += rp.valid.eq(0)
