"""The topology optimiser's configuration (SPEC §3.11): the active configuration's
registers and the check of a configuration beat, one budget and one prior entry per cycle."""

from amaranth import Module, Mux, Signal, Value
from amaranth.lib import data
from amaranth.utils import bits_for

from hw.common import idx_bits, mux_tree, prefix_add

__all__ = ["ConfigCheck", "U_MAX", "COST_BITS", "PW_BITS"]

#: largest re-solve interval ``U`` (SPEC §3.11)
U_MAX = 1 << 16
#: width of a cost (SPEC §3.11: ``1 .. 2**32 - 1``)
COST_BITS = 32
#: width of the prior weight ``PW`` (``0 .. 255``)
PW_BITS = 8


def _pick(items: list[Value], sel: Value) -> Value:
    return mux_tree(items, sel) if len(items) > 1 else items[0]


class ConfigCheck:
    """The active configuration and the check of a presented configuration beat.

    Not an ``Elaboratable``: the optimiser's main FSM runs the check, so this
    class builds into the optimiser's own module (its registers, nets and FSM
    states are the optimiser's), in three calls the optimiser makes in order:
    :meth:`build` (the check's nets, while the module's datapath is built),
    :meth:`begin` (the statements that start a check, in the state that sees
    the beat) and :meth:`states` (the check's states, inside the main FSM);
    :meth:`load` gives the statements that take a checked beat.

    **Check** (``max(NB, R) + 2`` cycles; the payload must hold): ``c_bad`` is
    set when ``m`` is not in ``2 .. N_MAX``, ``d`` not in ``1 .. D_MAX``,
    ``u`` not in ``1 .. 2**16``, ``probe`` not in ``1 .. m - 1``, ``nb`` not in
    ``1 .. NB``, ``cost_plain`` is 0 (:meth:`begin`); then, one index ``cj``
    per cycle, when a used budget is not in ``2 .. m`` or not above the one
    before or its cost is 0, or a prior entry is above ``2**A``; at last when
    the priors sum above ``2**A``.

    **Active configuration** (registers, written by :meth:`load`):
    ``configured``; ``c_m`` (``M``), ``c_b`` (``B = M - 1``), ``c_l`` (``L =
    min(D, B)``), ``c_um1`` (``U - 1``), ``c_pw``, ``c_fb`` (fallback),
    ``c_probe``, ``c_nbm1`` (``nb - 1``), ``c_budget[NB]``, ``c_cost[NB]``,
    ``c_cost0`` (``cost_plain``) and ``c_prior[R]``.

    Parameters
    ----------
    n_max, d_max, ranks, acc_bits, nb : int
        ``N_MAX``, ``D_MAX``, ``R``, ``A`` and ``NB``.
    """

    def __init__(self, n_max: int, d_max: int, ranks: int, acc_bits: int, nb: int) -> None:
        self.N, self.DM, self.R, self.A, self.NB = n_max, d_max, ranks, acc_bits, nb
        ib, nw = idx_bits(n_max), bits_for(n_max)
        lv_n = min(d_max, n_max - 1)
        # ---- the active configuration
        self.configured = Signal()
        self.c_m = Signal(nw)
        self.c_b = Signal(ib)  # B = m - 1
        self.c_l = Signal(bits_for(lv_n))  # L = min(d, B)
        self.c_um1 = Signal(bits_for(U_MAX))  # U - 1
        self.c_pw = Signal(PW_BITS)
        self.c_fb = Signal()
        self.c_probe = Signal(nw)
        self.c_nbm1 = Signal(bits_for(nb))  # nb - 1
        self.c_budget = [Signal(nw, name=f"c_budget{j}") for j in range(nb)]
        self.c_cost = [Signal(COST_BITS, name=f"c_cost{j}") for j in range(nb)]
        self.c_cost0 = Signal(COST_BITS)
        self.c_prior = [Signal(acc_bits + 1, name=f"c_prior{b}") for b in range(ranks)]
        # ---- the check
        self.jn = max(nb, ranks)  # the check's per-index cycles
        self.cj = Signal(bits_for(self.jn))
        self.c_bad = Signal()
        self.b_prev = Signal(nw)
        self.psum = Signal(bits_for(ranks * ((2 << acc_bits) - 1)))
        self.pl_b = Signal(ib)

    def build(self, m: Module, pl: data.View) -> None:
        """The check's nets on the configuration payload ``pl``: the scalar
        fields' verdict, index ``cj``'s budget, cost and prior entry and the
        priors' running sum."""
        N, DM, R, NB, one = self.N, self.DM, self.R, self.NB, 1 << self.A
        cj, psum = self.cj, self.psum
        self.pl = pl
        self.pl_budget = [pl.budget[i] for i in range(NB)]
        self.pl_cost = [pl.cost[i] for i in range(NB)]
        self.pl_prior = [pl.prior[i] for i in range(R)]
        self.b_j = b_j = _pick(self.pl_budget, cj[: max(1, idx_bits(NB))])
        cost_j = _pick(self.pl_cost, cj[: max(1, idx_bits(NB))])
        pri_j = _pick(self.pl_prior, cj[: max(1, idx_bits(R))])
        used = (cj < pl.nb) & (cj < NB)
        self.bad_budget = used & (
            (b_j < 2) | (b_j > pl.m) | ((cj != 0) & (b_j <= self.b_prev)) | (cost_j == 0)
        )
        self.bad_prior = (cj < R) & (pri_j > one)
        self.psum_next = prefix_add(m, psum, Mux(cj < R, pri_j, 0), len(psum), "psum", keep=True)
        self.bad_scalar = (
            (pl.m < 2)
            | (pl.m > N)
            | (pl.d < 1)
            | (pl.d > DM)
            | (pl.u == 0)
            | (pl.u > U_MAX)
            | (pl.probe == 0)
            | (pl.probe >= pl.m)
            | (pl.nb == 0)
            | (pl.nb > NB)
            | (pl.cost_plain == 0)
        )
        m.d.comb += self.pl_b.eq(pl.m - 1)

    def begin(self) -> list:
        """The statements that start a check (the scalar fields' verdict)."""
        return [self.cj.eq(0), self.c_bad.eq(self.bad_scalar), self.psum.eq(0)]

    def states(self, m: Module, done: str) -> None:
        """``CHECK`` (one index a cycle) and ``CHECK_SUM`` (the priors' sum),
        then state ``done``, where ``c_bad`` is the verdict."""
        c_bad, psum = self.c_bad, self.psum
        with m.State("CHECK"):
            m.d.sync += [
                c_bad.eq(c_bad | self.bad_budget | self.bad_prior),
                psum.eq(self.psum_next),
                self.b_prev.eq(self.b_j),
                self.cj.eq(self.cj + 1),
            ]
            with m.If(self.cj == self.jn - 1):
                m.next = "CHECK_SUM"
        with m.State("CHECK_SUM"):
            m.d.sync += c_bad.eq(c_bad | (psum > (1 << self.A)))
            m.next = done

    def load(self) -> list:
        """The statements that make the (checked) payload the active configuration."""
        pl, pl_b, NB, R = self.pl, self.pl_b, self.NB, self.R
        return [
            self.configured.eq(1),
            self.c_m.eq(pl.m),
            self.c_b.eq(pl_b),
            self.c_l.eq(Mux(pl.d > pl_b, pl_b, pl.d)),
            self.c_um1.eq(pl.u - 1),
            self.c_pw.eq(pl.pw),
            self.c_fb.eq(pl.fallback),
            self.c_probe.eq(pl.probe),
            self.c_nbm1.eq(pl.nb - 1),
            self.c_cost0.eq(pl.cost_plain),
            *[self.c_budget[i].eq(self.pl_budget[i]) for i in range(NB)],
            *[self.c_cost[i].eq(self.pl_cost[i]) for i in range(NB)],
            *[self.c_prior[i].eq(self.pl_prior[i]) for i in range(R)],
        ]
