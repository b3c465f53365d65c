"""The fixed-point Sequoia DP of SPEC §3.11 over memories, and the chosen budget's tree."""

from amaranth import Cat, Const, Elaboratable, Module, Mux, Signal, Value
from amaranth.lib import memory
from amaranth.utils import bits_for

from hw.common import carry_save, idx_bits, less_than, mux_tree, prefix_add, prefix_sub

__all__ = ["DPEngine", "PASS_OVERHEAD", "dp_cycles", "solve_cycles_bound"]

#: cycles a pass spends besides its slots: the setup cycle and the pipeline's drain
PASS_OVERHEAD = 5


def dp_cycles(m: int, d: int, k: int) -> int:
    """Cycles of :class:`DPEngine`'s DP for budget ``M = m``, depth ``D = d`` and
    ``K = k`` ranks (``K`` already capped at ``M - 1``): ``L * K`` passes of
    ``1 + B (B + 1) / 2`` slots and :data:`PASS_OVERHEAD` cycles each
    (``B = M - 1``, ``L = min(D, B)``), plus the start and the end cycle."""
    b = m - 1
    passes = min(d, b) * k
    return passes * (1 + b * (b + 1) // 2 + PASS_OVERHEAD) + 2 if passes else 0


def solve_cycles_bound(
    m: int, d: int, k: int, ranks: int, acc_bits: int, budgets: int, nodes: int
) -> int:
    """An upper bound of a whole re-solve of the block, the beat that starts it
    to the shape's first beat: :func:`dp_cycles`, the estimator (at most ``R (4 A +
    33)``), the budget choice (38 per budget), the tree walk (10 per node of
    the chosen tree, ``nodes``) and 60 for the rest (window, decision, emission).
    The testbench checks every re-solve against it and :func:`dp_cycles`."""
    est = ranks * (4 * acc_bits + 33)
    return dp_cycles(m, d, k) + est + 38 * budgets + 10 * nodes + 60


def _pick(items: list[Value], sel: Value) -> Value:
    return mux_tree(items, sel) if len(items) > 1 else items[0]


class _Regs:
    """:class:`DPEngine`'s control and pipeline registers, declared in its
    ``elaborate`` and shared by its stages.

    Control: ``lvl`` (``l``), ``bk`` (``b``), ``mc`` (the row ``m`` being
    issued), ``s0`` (``s - 1``), ``sc`` (``s``), ``dd`` (``m - s``); ``wrow``,
    ``nrow``, ``trow``: the rows of ``vals`` holding ``G[b]`` (written),
    ``G[b+1]`` and ``T_l`` (read); ``mul_a`` (``p_b`` of the pass),
    ``zero_next`` (``b == K``: ``G[b+1] = 0``), ``lvl1`` (``l == 1``: ``T =
    2**A``), ``rank1`` (``b == 1``: store ``2**A + G``); ``issue`` (a slot
    issued this cycle) and ``row_end`` (the row's last slot).

    Pipeline, per stage 1, 2, 3: ``v`` (valid), ``aux`` (a tree multiply),
    ``first``, ``last``, ``empty`` (the row's first / last slot, ``m = 0``),
    ``mrow`` (``m``), ``sval`` (``s``); ``a1``, ``auxt1`` (the stage-1
    operands), ``row_s``, ``row_c`` (stage 2), ``x3``, ``best``, ``best_s``
    (stage 3). ``aux_go``, ``aux_a``, ``aux_t``: the tree walk's multiply
    into the pipeline.
    """

    def __init__(self, IB: int, VW: int, A: int, lb: int, kb: int) -> None:
        XW = A + VW  # the product-sum before the shift
        # ---- DP control
        self.lvl = Signal(lb, name="dp_lvl")
        self.bk = Signal(kb, name="dp_b")
        self.mc = Signal(IB, name="dp_m")  # row being issued
        self.s0 = Signal(IB, name="dp_s0")  # s - 1
        self.sc = Signal(IB + 1, name="dp_s")  # s
        self.dd = Signal(IB, name="dp_d")  # m - s
        self.wrow = Signal(2, name="dp_wrow", init=0)
        self.nrow = Signal(2, name="dp_nrow", init=1)
        self.trow = Signal(2, name="dp_trow", init=2)
        self.mul_a = Signal(A + 1, name="dp_mul_a")  # p_b of the pass
        self.zero_next = Signal(name="dp_zero_next")  # b == K: G[b+1] = 0
        self.lvl1 = Signal(name="dp_lvl1")  # l == 1: T = 2**A
        self.rank1 = Signal(name="dp_rank1")  # b == 1: store 2**A + G
        self.issue = Signal(name="dp_issue")
        self.row_end = Signal(name="dp_row_end")
        # ---- pipeline registers: stage 1 (reads back), 2 (rows), 3 (x)
        self.v = [Signal(name=f"dp_v{i}") for i in (1, 2, 3)]
        self.aux = [Signal(name=f"dp_aux{i}") for i in (1, 2, 3)]
        self.first = [Signal(name=f"dp_first{i}") for i in (1, 2, 3)]
        self.last = [Signal(name=f"dp_last{i}") for i in (1, 2, 3)]
        self.empty = [Signal(name=f"dp_empty{i}") for i in (1, 2, 3)]
        self.mrow = [Signal(IB, name=f"dp_mrow{i}") for i in (1, 2, 3)]
        self.sval = [Signal(IB + 1, name=f"dp_sval{i}") for i in (1, 2, 3)]
        self.a1 = Signal(A + 1, name="dp_a1")
        self.auxt1 = Signal(VW, name="dp_auxt1")
        self.row_s = Signal(XW, name="dp_rows_s")
        self.row_c = Signal(XW, name="dp_rows_c")
        self.x3 = Signal(VW, name="dp_x3")
        self.best = Signal(VW, name="dp_best")
        self.best_s = Signal(IB + 1, name="dp_best_s")
        # ---- the tree walk's multiply in the pipeline
        self.aux_go = Signal(name="aux_go")
        self.aux_a = Signal(A + 1, name="aux_a")
        self.aux_t = Signal(VW, name="aux_t")


class DPEngine(Elaboratable):
    """Sequoia's DP (SPEC §3.11) for every budget up to ``M``, then one budget's tree.

    **DP** (``dp_start``; ``dp_busy`` from the next cycle until done). Inputs,
    held during a run: ``b_max`` (``B = M - 1``), ``levels`` (``L``), ``k``
    (``K``, at least 1, at most ``B``) and the estimate ``p`` (``A + 1`` bits
    per rank, 0-based). For ``l = 1 .. L`` and ``b = K .. 1`` a *pass* scans
    every ``(m, s)``, ``m = 0 .. B``, ``s = 1 .. m``, one slot per cycle (one
    slot for ``m = 0``): ``x(s) = ((p_b * T_l[s]) >> A) + G[b+1][m - s]``, the
    first largest kept (strictly larger replaces), written as ``G[b][m]`` and
    ``choice[l][b][m]`` at the row's last slot (0 and 0 unless the best is
    positive). ``T_1[s] = 2**A``; ``G[K+1] = 0``. Rank 1's pass stores
    ``2**A + G[1][m]``, which is ``T_{l+1}[m + 1]`` and, after the last level,
    ``E(m + 1) + 2**A`` (every candidate of the pass carries the constant, so
    the choice is unchanged). Cycles: :func:`dp_cycles`.

    Memories: ``vals``, three rows of ``B + 1`` values (``A +
    bits_for(N_MAX)`` bits: ``G[b+1]`` read, ``G[b]`` written, ``T_l`` read,
    the roles rotating between passes), and ``choice`` (``L x K x (B + 1)``
    entries of ``idx_bits(N_MAX)`` bits, addressed ``(l - 1, b - 1, m)``).

    Pipeline of a slot (issued at cycle 0): 1, the reads are back and the
    ``A + 1`` partial products of ``p_b * T[s]``, the row ``G << A`` and the
    constant row go through a carry-save tree to two rows; 2, one kept
    Kogge-Stone adder gives ``x``; 3, ``x`` is compared with the row's best so
    far (:func:`hw.common.less_than`) and, at the row's last slot, written.

    **Values** (while idle): ``val_addr = m - 1`` gives ``val_data = E(m) +
    2**A`` one cycle later.

    **Tree** (``tree_start`` with ``tree_m``; ``tree_busy``): budget
    ``tree_m``'s tree, breadth first from the root with ``rem = tree_m - 1``
    and ``lv = L``, into the ``nodes`` memory (node ``i``'s parent, ``rem``,
    ``lv`` and value ``v_i = (v_parent * r_rank) >> A`` under the raw
    estimate ``r``, through the same multiply pipeline). Results: ``tree_n``
    (nodes, root included) and ``e_raw1 = E_raw + 2**A``. About 10 cycles a
    node. While idle, ``node_addr = i`` gives node ``i``'s parent on
    ``node_parent`` one cycle later.

    Parameters
    ----------
    n_max, d_max, ranks, acc_bits : int
        ``N_MAX``, ``D_MAX``, ``R`` and ``A``.
    p, r : list of Value
        The normalised smoothed and raw estimates per rank (held).
    """

    def __init__(
        self, n_max: int, d_max: int, ranks: int, acc_bits: int, p: list[Value], r: list[Value]
    ) -> None:
        self.N, self.R, self.A = n_max, ranks, acc_bits
        self.LV = min(d_max, n_max - 1)  # levels the choice table holds
        self.p, self.r = p, r
        ib = self.IB = idx_bits(n_max)
        self.VW = acc_bits + bits_for(n_max)  # up to N_MAX * 2**A
        lb = bits_for(self.LV)
        kb = bits_for(ranks)
        self.b_max = Signal(ib, name="dp_b_max")
        self.levels = Signal(lb, name="dp_levels")
        self.k = Signal(kb, name="dp_k")
        self.dp_start = Signal(name="dp_start")
        self.dp_busy = Signal(name="dp_busy")
        self.val_addr = Signal(ib, name="dp_val_addr")
        self.val_data = Signal(self.VW, name="dp_val_data")
        self.tree_start = Signal(name="tree_start")
        self.tree_m = Signal(bits_for(n_max), name="tree_m")
        self.tree_busy = Signal(name="tree_busy")
        self.tree_n = Signal(bits_for(n_max), name="tree_n")
        self.e_raw1 = Signal(self.VW, name="tree_e_raw1")
        self.node_addr = Signal(ib, name="node_addr")
        self.node_parent = Signal(ib, name="node_parent")

    def elaborate(self, platform) -> Module:
        m = Module()
        N, R, A, IB, VW, LV = self.N, self.R, self.A, self.IB, self.VW, self.LV
        lb = len(self.levels)
        rb = (R - 1).bit_length()  # rank field of a choice address

        m.submodules.vals = vals = memory.Memory(shape=VW, depth=3 << IB, init=[])
        m.submodules.choice = choice = memory.Memory(shape=IB, depth=LV << (rb + IB), init=[])
        node_w = IB + IB + lb + A + 1  # parent, rem, lv, v
        m.submodules.nodes = nodes = memory.Memory(shape=node_w, depth=N, init=[])
        rg, rt, wv = vals.read_port(), vals.read_port(), vals.write_port()
        rc, wc = choice.read_port(), choice.write_port()
        rn, wn = nodes.read_port(), nodes.write_port()

        r = _Regs(IB, VW, A, lb, len(self.k))
        m.d.comb += r.row_end.eq((r.mc == 0) | (r.dd == 0))
        self._pipeline(m, r, rg, rt, wv, wc)
        self._dp_control(m, r, rg, rt)
        self._tree(m, r, rc, rn, wn)
        return m

    def _pipeline(self, m: Module, r: _Regs, rg, rt, wv, wc) -> None:
        """The slot pipeline, shared by the DP and the tree walk's multiplies
        (``aux_go``): stage 1 ``a * T + (G << A) + (c << 2A)`` as two carry-save
        rows, stage 2 ``x``, stage 3 the row's first largest and, at the row's
        last slot, the writes of ``G[b][m]`` and ``choice[l][b][m]``."""
        A, IB, VW, R, LV = self.A, self.IB, self.VW, self.R, self.LV
        one = 1 << A
        rb = (R - 1).bit_length()  # rank field of a choice address
        lvb = (LV - 1).bit_length()  # level field
        XW = A + VW  # the product-sum before the shift
        v1, v2, v3 = r.v
        aux1, aux2, aux3 = r.aux
        first, last, empty, mrow, sval = r.first, r.last, r.empty, r.mrow, r.sval
        m.d.sync += [v1.eq(r.issue | r.aux_go), aux1.eq(r.aux_go), v2.eq(v1), v3.eq(v2)]
        m.d.sync += [aux2.eq(aux1), aux3.eq(aux2)]
        m.d.sync += [
            first[0].eq(r.s0 == 0),
            last[0].eq(r.row_end),
            empty[0].eq(r.mc == 0),
            mrow[0].eq(r.mc),
            sval[0].eq(r.sc),
            r.a1.eq(Mux(r.aux_go, r.aux_a, r.mul_a)),
            r.auxt1.eq(r.aux_t),
        ]
        for i in (1, 2):
            m.d.sync += [
                first[i].eq(first[i - 1]),
                last[i].eq(last[i - 1]),
                empty[i].eq(empty[i - 1]),
                mrow[i].eq(mrow[i - 1]),
                sval[i].eq(sval[i - 1]),
            ]

        # stage 1: a * T + (G << A) + (c << 2A) as two carry-save rows
        t_op = Signal(VW, name="dp_t_op")
        g_op = Signal(VW, name="dp_g_op")
        m.d.comb += [
            t_op.eq(Mux(aux1, r.auxt1, Mux(r.lvl1, one, rt.data))),
            g_op.eq(Mux(aux1 | r.zero_next, 0, rg.data)),
        ]
        cbit = r.rank1 & ~aux1
        pp = [Mux(r.a1[i], t_op, 0) for i in range(A + 1)]
        rows = (
            carry_save(
                m,
                [*pp, g_op, cbit],
                XW,
                "dp_csa",
                shifts=[*range(A + 1), A, 2 * A],
            )
            + [Const(0, XW)] * 2
        )
        m.d.sync += [r.row_s.eq(rows[0]), r.row_c.eq(rows[1])]
        # stage 2: x = (sum) >> A
        total = prefix_add(m, r.row_s, r.row_c, XW, "dp_sum", keep=True)
        m.d.sync += r.x3.eq(total[A : A + VW])
        # stage 3: the row's first largest
        x3, best, best_s = r.x3, r.best, r.best_s
        base = Signal(VW, name="dp_base")
        m.d.comb += base.eq(Mux(first[2], Mux(r.rank1, one, 0), best))
        gt = less_than(m, base, x3, "dp_gt")
        take = Signal(name="dp_take")
        m.d.comb += take.eq(gt & ~empty[2])
        nbest = Signal(VW, name="dp_nbest")
        ns = Signal(IB + 1, name="dp_ns")
        m.d.comb += [
            nbest.eq(Mux(take, x3, base)),
            ns.eq(Mux(take, sval[2], Mux(first[2], 0, best_s))),
        ]
        with m.If(v3 & ~aux3):
            m.d.sync += [best.eq(nbest), best_s.eq(ns)]
            with m.If(last[2]):
                m.d.comb += [
                    wv.addr.eq(Cat(mrow[2], r.wrow)),
                    wv.data.eq(nbest),
                    wv.en.eq(1),
                    wc.addr.eq(Cat(mrow[2], (r.bk - 1)[:rb], (r.lvl - 1)[:lvb])),
                    wc.data.eq(ns),
                    wc.en.eq(1),
                ]

    def _dp_control(self, m: Module, r: _Regs, rg, rt) -> None:
        """The DP's passes: per level ``l`` and rank ``b`` (``K`` down to 1) a setup
        cycle, one slot a cycle (the reads of ``G[b+1][m - s]`` and ``T[s]``), the
        pipeline's drain and the rows' roles rotated; the value port while idle."""
        IB, R = self.IB, self.R
        rb = (R - 1).bit_length()  # rank field of a choice address
        lvl, bk, mc, s0, sc, dd = r.lvl, r.bk, r.mc, r.s0, r.sc, r.dd
        wrow, nrow, trow = r.wrow, r.nrow, r.trow
        v1, v2, v3 = r.v
        # issue: reads of G[b+1][m - s] and T[s] (at s - 1)
        dp_run = Signal(name="dp_run")
        m.d.comb += [
            rg.addr.eq(Mux(dp_run, Cat(dd, nrow), Cat(self.val_addr, trow))),
            rt.addr.eq(Cat(s0, trow)),
            self.val_data.eq(rg.data),
        ]
        inc = Signal(IB, name="dp_inc")  # the next row: m + 1
        m.d.comb += inc.eq(mc + 1)
        with m.FSM(name="dp_fsm"):
            with m.State("IDLE"):
                with m.If(self.dp_start):
                    m.d.sync += [
                        self.dp_busy.eq(1),
                        lvl.eq(1),
                        bk.eq(self.k),
                        wrow.eq(0),
                        nrow.eq(1),
                        trow.eq(2),
                    ]
                    m.next = "SETUP"
            with m.State("SETUP"):
                m.d.comb += dp_run.eq(1)
                m.d.sync += [
                    r.mul_a.eq(_pick(self.p, (bk - 1)[: max(1, rb)])),
                    r.zero_next.eq(bk == self.k),
                    r.lvl1.eq(lvl == 1),
                    r.rank1.eq(bk == 1),
                    mc.eq(0),
                    s0.eq(0),
                    sc.eq(1),
                    dd.eq(0),
                ]
                m.next = "ISSUE"
            with m.State("ISSUE"):
                m.d.comb += [dp_run.eq(1), r.issue.eq(1)]
                with m.If(r.row_end):
                    with m.If(mc == self.b_max):
                        m.next = "DRAIN"
                    with m.Else():
                        m.d.sync += [mc.eq(inc), s0.eq(0), sc.eq(1), dd.eq(mc)]
                with m.Else():
                    m.d.sync += [s0.eq(s0 + 1), sc.eq(sc + 1), dd.eq(dd - 1)]
            with m.State("DRAIN"):
                m.d.comb += dp_run.eq(1)
                with m.If(~v1 & ~v2 & ~v3):
                    with m.If(bk == 1):
                        m.d.sync += [trow.eq(wrow), wrow.eq(trow)]
                        with m.If(lvl == self.levels):
                            m.d.sync += self.dp_busy.eq(0)
                            m.next = "IDLE"
                        with m.Else():
                            m.d.sync += [lvl.eq(lvl + 1), bk.eq(self.k)]
                            m.next = "SETUP"
                    with m.Else():
                        m.d.sync += [wrow.eq(nrow), nrow.eq(wrow), bk.eq(bk - 1)]
                        m.next = "SETUP"

    def _tree(self, m: Module, r: _Regs, rc, rn, wn) -> None:
        """The tree walk: breadth first through ``choice``, one child at a time."""
        A, IB, VW, R = self.A, self.IB, self.VW, self.R
        one = 1 << A
        nb = bits_for(self.N)
        lb = len(self.levels)
        rb = (R - 1).bit_length()  # rank field of a choice address
        lvb = (self.LV - 1).bit_length()  # level field
        aux_go, aux_a, aux_t, v3, aux3, x3 = r.aux_go, r.aux_a, r.aux_t, r.v[2], r.aux[2], r.x3
        h = Signal(nb, name="tree_h")  # node being expanded
        tail = Signal(nb, name="tree_tail")  # nodes so far
        rem = Signal(IB, name="tree_rem")
        lv = Signal(lb, name="tree_lv")
        v = Signal(A + 1, name="tree_v")
        cb = Signal(bits_for(R + 1), name="tree_b")  # the next child's rank, 1-based
        s = Signal(IB, name="tree_s")
        e = Signal(VW, name="tree_e")
        e_next = prefix_add(m, e, x3, VW, "tree_e_add", keep=True)
        rem_next = prefix_sub(m, rem, s, IB, "tree_rem_sub")
        h_next = Signal(nb, name="tree_h_next")
        m.d.comb += h_next.eq(h + 1)
        fields = rn.data
        f_rem = fields[IB : 2 * IB]
        f_lv = fields[2 * IB : 2 * IB + lb]
        f_v = fields[2 * IB + lb :]
        m.d.comb += [
            rc.addr.eq(Cat(rem, (cb - 1)[:rb], (lv - 1)[:lvb])),
            aux_a.eq(_pick(self.r, (cb - 1)[: max(1, (R - 1).bit_length())])),
            aux_t.eq(v),
            rn.addr.eq(Mux(self.tree_busy, h_next, self.node_addr)),
            self.node_parent.eq(fields[:IB]),
            self.e_raw1.eq(e),
            self.tree_n.eq(tail),
            wn.addr.eq(tail),
            wn.data.eq(Cat(h[:IB], (s - 1)[:IB], (lv - 1)[:lb], x3[: A + 1])),
        ]
        more = Signal(name="tree_more")
        m.d.comb += more.eq((lv != 0) & (cb <= self.k) & (rem != 0))
        with m.FSM(name="tree_fsm"):
            with m.State("IDLE"):
                with m.If(self.tree_start):
                    m.d.sync += [
                        self.tree_busy.eq(1),
                        h.eq(0),
                        tail.eq(1),
                        rem.eq(self.tree_m - 1),
                        lv.eq(self.levels),
                        v.eq(one),
                        cb.eq(1),
                        e.eq(one),
                    ]
                    m.next = "CHILD"
            with m.State("CHILD"):  # choice[lv][b][rem] is being read
                with m.If(more):
                    m.next = "CHOICE"
                with m.Else():
                    m.next = "NEXT"
            with m.State("CHOICE"):
                with m.If(rc.data == 0):
                    m.next = "NEXT"
                with m.Else():
                    m.d.comb += aux_go.eq(1)
                    m.d.sync += s.eq(rc.data)
                    m.next = "MUL"
            with m.State("MUL"):
                with m.If(v3 & aux3):
                    m.d.comb += wn.en.eq(1)
                    m.d.sync += [e.eq(e_next), tail.eq(tail + 1), rem.eq(rem_next), cb.eq(cb + 1)]
                    m.next = "CHILD"
            with m.State("NEXT"):  # node h + 1 is being read
                with m.If(h_next == tail):
                    m.d.sync += self.tree_busy.eq(0)
                    m.next = "IDLE"
                with m.Else():
                    m.d.sync += h.eq(h_next)
                    m.next = "LOAD"
            with m.State("LOAD"):
                m.d.sync += [rem.eq(f_rem), lv.eq(f_lv), v.eq(f_v), cb.eq(1)]
                m.next = "CHILD"
