"""Sequential arithmetic: a shift-and-add multiplier and a restoring divider.

Both take one bit per cycle through one kept Kogge-Stone adder
(:func:`hw.common.prefix_add`), so a wide product or quotient costs cycles,
not gate levels. Protocol (both): pulse ``start`` for one cycle with the
operands valid; ``busy`` is high from the next cycle until the result is
valid, and the result holds until the next ``start``.
"""

from amaranth import Cat, Const, Elaboratable, Module, Mux, Signal
from amaranth.utils import bits_for

from hw.common import prefix_add, zext

__all__ = ["SeqMul", "SeqDiv"]


class SeqMul(Elaboratable):
    """``p = a * c``, one bit of ``c`` per cycle, least significant first.

    The loop stops once the bits of ``c`` left are all zero: ``busy`` lasts
    ``bits_for(c) + 1`` cycles (1 for ``c = 0``).

    Parameters
    ----------
    a_bits, c_bits : int
        Operand widths; ``p`` is ``a_bits + c_bits`` wide.
    name : str
        Prefix of the adder's nets.
    """

    def __init__(self, a_bits: int, c_bits: int, name: str = "mul") -> None:
        self.a_bits, self.c_bits, self.name = a_bits, c_bits, name
        self.start = Signal(name=f"{name}_start")
        self.a = Signal(a_bits, name=f"{name}_a")
        self.c = Signal(c_bits, name=f"{name}_c")
        self.busy = Signal(name=f"{name}_busy")
        self.p = Signal(a_bits + c_bits, name=f"{name}_p")

    def elaborate(self, platform) -> Module:
        m = Module()
        w = self.a_bits + self.c_bits
        sh = Signal(w, name=f"{self.name}_sh")  # a << (bits of c done)
        cs = Signal(self.c_bits, name=f"{self.name}_cs")  # bits of c left
        acc = prefix_add(m, self.p, sh, w, f"{self.name}_acc", keep=True)
        with m.If(self.start):
            m.d.sync += [self.p.eq(0), sh.eq(self.a), cs.eq(self.c), self.busy.eq(1)]
        with m.Elif(self.busy):
            with m.If(cs == 0):
                m.d.sync += self.busy.eq(0)
            with m.Else():
                with m.If(cs[0]):
                    m.d.sync += self.p.eq(acc)
                m.d.sync += [sh.eq(sh << 1), cs.eq(cs >> 1)]
        return m


class SeqDiv(Elaboratable):
    """``q = num // den`` by restoring division, one quotient bit per cycle.

    The caller guarantees ``den > 0`` and ``num < den << q_bits`` (the quotient
    fits ``q_bits``); then ``num >> q_bits`` fits ``den_bits`` and is the first
    partial remainder. ``busy`` lasts ``q_bits + 1`` cycles.

    Parameters
    ----------
    num_bits, den_bits, q_bits : int
        Widths of the dividend, the divisor and the quotient.
    name : str
        Prefix of the subtractor's nets.
    """

    def __init__(self, num_bits: int, den_bits: int, q_bits: int, name: str = "div") -> None:
        self.num_bits, self.den_bits, self.q_bits, self.name = num_bits, den_bits, q_bits, name
        self.start = Signal(name=f"{name}_start")
        self.num = Signal(num_bits, name=f"{name}_num")
        self.den = Signal(den_bits, name=f"{name}_den")
        self.busy = Signal(name=f"{name}_busy")
        self.q = Signal(q_bits, name=f"{name}_q")

    def elaborate(self, platform) -> Module:
        m = Module()
        dw, qb = self.den_bits, self.q_bits
        rem = Signal(dw, name=f"{self.name}_rem")
        lo = Signal(qb, name=f"{self.name}_lo")  # dividend bits still to bring down
        den = Signal(dw, name=f"{self.name}_d")
        cnt = Signal(bits_for(qb), name=f"{self.name}_cnt")
        t = Cat(lo[qb - 1], rem)  # 2 * rem + next bit < 2 * den
        diff = prefix_add(
            m, t, ~zext(den, dw + 2), dw + 2, f"{self.name}_sub", cin=Const(1, 1), keep=True
        )
        ge = ~diff[dw + 1]
        with m.If(self.start):
            m.d.sync += [
                rem.eq(self.num >> qb),
                lo.eq(self.num[:qb]),
                den.eq(self.den),
                cnt.eq(qb),
                self.q.eq(0),
                self.busy.eq(1),
            ]
        with m.Elif(self.busy):
            with m.If(cnt == 0):
                m.d.sync += self.busy.eq(0)
            with m.Else():
                m.d.sync += [
                    rem.eq(Mux(ge, diff[:dw], t[:dw])),
                    self.q.eq(Cat(ge, self.q[: qb - 1])),
                    lo.eq(lo << 1),
                    cnt.eq(cnt - 1),
                ]
        return m
