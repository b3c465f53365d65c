"""The acceptance estimates of SPEC §3.10, sequentially, from the window's sums."""

from amaranth import Cat, Const, Elaboratable, Module, Mux, Signal, Value
from amaranth.utils import bits_for

from hw.common import idx_bits, mux_tree, prefix_add, priority_highest, zext
from hw.topology.seq import SeqDiv, SeqMul

__all__ = ["Estimator", "div_widths"]


def div_widths(ranks: int, acc_bits: int, count_max: int) -> tuple[int, int]:
    """``(num_bits, den_bits)`` of the estimator's divider: the smoothed
    dividend ``(hits << A) + PW * prior``, the normalisation's ``x << A``,
    the divisors ``trials + PW`` and ``S <= R * 2**A``."""
    num = max(acc_bits + bits_for(count_max + 255), 2 * acc_bits + 1)
    den = max(bits_for(count_max + 255), bits_for(ranks << acc_bits))
    return num, den


def _pick(items: list[Value], sel: Value) -> Value:
    return mux_tree(items, sel) if len(items) > 1 else items[0]


class Estimator(Elaboratable):
    """The normalised smoothed and raw estimates (SPEC §3.10) and ``K``.

    On ``start`` (one cycle; the inputs must hold until ``busy`` falls), for
    every rank ``b`` in turn: ``PW * prior_b`` (:class:`SeqMul`, at most 9
    cycles), ``p_b = ((hits_b << A) + PW * prior_b) // (trials_b + PW)`` and
    ``r_b = (hits_b << A) // trials_b`` (:class:`SeqDiv`, ``A + 2`` cycles
    each; 0 without a divisor); then each vector whose sum ``S`` exceeds
    ``2**A`` is rescaled, ``x_b = (x_b << A) // S``. ``k`` is the last rank
    with ``p_b > 0`` (1-based; 0 if none), valid once ``busy`` is low.

    Cycles: at most ``R * (2 * A + 18) + 2 * R * (A + 3) + 3``.

    Parameters
    ----------
    ranks, acc_bits : int
        ``R`` and ``A``.
    count_max : int
        The largest window sum (``WIN * N_MAX``).
    hits, trials : list of Value
        The window's sums per rank (held during a run).
    prior : list of Value
        ``pi_b`` (``A + 1`` bits).
    pw : Value
        ``PW`` (8 bits).
    """

    def __init__(
        self,
        ranks: int,
        acc_bits: int,
        count_max: int,
        hits: list[Value],
        trials: list[Value],
        prior: list[Value],
        pw: Value,
    ) -> None:
        self.R, self.A, self.count_max = ranks, acc_bits, count_max
        self.hits, self.trials, self.prior, self.pw = hits, trials, prior, pw
        self.start = Signal(name="est_start")
        self.busy = Signal(name="est_busy")
        self.p = [Signal(acc_bits + 1, name=f"est_p{b}") for b in range(ranks)]
        self.r = [Signal(acc_bits + 1, name=f"est_r{b}") for b in range(ranks)]
        self.k = Signal(bits_for(ranks), name="est_k")

    def elaborate(self, platform) -> Module:
        m = Module()
        R, A = self.R, self.A
        num_bits, den_bits = div_widths(R, A, self.count_max)
        sum_bits = bits_for(R << A)
        m.submodules.mul = mul = SeqMul(A + 1, 8, "est_mul")
        m.submodules.div = div = SeqDiv(num_bits, den_bits, A + 1, "est_div")

        b = Signal(idx_bits(R), name="est_b")
        sum_p = Signal(sum_bits, name="est_sum_p")
        sum_r = Signal(sum_bits, name="est_sum_r")
        h_b = _pick(self.hits, b)
        t_b = _pick(self.trials, b)
        pi_b = _pick(self.prior, b)
        p_b = _pick(self.p, b)
        r_b = _pick(self.r, b)
        last = b == R - 1

        # smoothed dividend (hits << A) + PW * prior and divisor trials + PW, registered
        s_num = prefix_add(m, Cat(Const(0, A), h_b), mul.p, num_bits, "est_snum", keep=True)
        s_den = prefix_add(m, t_b, self.pw, den_bits, "est_sden", keep=True)
        q = div.q
        sum_p_next = prefix_add(m, sum_p, q, sum_bits, "est_sum_p_add", keep=True)
        sum_r_next = prefix_add(m, sum_r, q, sum_bits, "est_sum_r_add", keep=True)

        def put(vec: list[Signal], value: Value) -> None:
            for i, s in enumerate(vec):
                with m.If(b == i):
                    m.d.sync += s.eq(value)

        m.d.comb += [mul.a.eq(pi_b), mul.c.eq(self.pw)]
        m.d.sync += [mul.start.eq(0), div.start.eq(0)]

        # K: the highest rank with p_b > 0
        nz = Cat(*[p != 0 for p in self.p])
        any_nz, hi = priority_highest(m, nz)
        m.d.comb += self.k.eq(Mux(any_nz, zext(hi, len(self.k)) + 1, 0))

        with m.FSM(name="est_fsm"):
            with m.State("IDLE"):
                with m.If(self.start):
                    m.d.sync += [b.eq(0), sum_p.eq(0), sum_r.eq(0), self.busy.eq(1)]
                    m.d.sync += mul.start.eq(1)
                    m.next = "MUL"
            with m.State("MUL"):  # PW * prior_b (mul.start was pulsed)
                with m.If(~mul.start & ~mul.busy):
                    with m.If(s_den == 0):
                        put(self.p, 0)
                        m.next = "RAW"
                    with m.Else():
                        m.d.sync += [div.num.eq(s_num), div.den.eq(s_den), div.start.eq(1)]
                        m.next = "SMOOTH"
            with m.State("SMOOTH"):
                with m.If(~div.start & ~div.busy):
                    put(self.p, q)
                    m.d.sync += sum_p.eq(sum_p_next)
                    m.next = "RAW"
            with m.State("RAW"):
                with m.If(t_b == 0):
                    put(self.r, 0)
                    m.next = "NEXT"
                with m.Else():
                    m.d.sync += [
                        div.num.eq(Cat(Const(0, A), h_b)),
                        div.den.eq(t_b),
                        div.start.eq(1),
                    ]
                    m.next = "RAW_W"
            with m.State("RAW_W"):
                with m.If(~div.start & ~div.busy):
                    put(self.r, q)
                    m.d.sync += sum_r.eq(sum_r_next)
                    m.next = "NEXT"
            with m.State("NEXT"):
                with m.If(last):
                    m.d.sync += b.eq(0)
                    m.next = "NORM_P"
                with m.Else():
                    m.d.sync += [b.eq(b + 1), mul.start.eq(1)]
                    m.next = "MUL"
            # rescale a vector whose sum exceeds 2**A: x_b = (x_b << A) // S
            for vec, total, here, wait, after in (
                (self.p, sum_p, "NORM_P", "NORM_P_W", "NORM_R"),
                (self.r, sum_r, "NORM_R", "NORM_R_W", "DONE"),
            ):
                x_b = p_b if vec is self.p else r_b
                over = (total[A + 1 :] != 0) | (total[A] & (total[:A] != 0))  # S > 2**A
                with m.State(here):
                    with m.If(~over):
                        m.d.sync += b.eq(0)
                        m.next = after
                    with m.Else():
                        m.d.sync += [
                            div.num.eq(Cat(Const(0, A), x_b)),
                            div.den.eq(total),
                            div.start.eq(1),
                        ]
                        m.next = wait
                with m.State(wait):
                    with m.If(~div.start & ~div.busy):
                        put(vec, q)
                        with m.If(last):
                            m.d.sync += b.eq(0)
                            m.next = after
                        with m.Else():
                            m.d.sync += b.eq(b + 1)
                            m.next = here
            with m.State("DONE"):
                m.d.sync += self.busy.eq(0)
                m.next = "IDLE"
        return m
