"""Token sampler (SPEC §3.5, §6): streaming inverse-CDF sampling of the extra token."""

from amaranth import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import data, enum, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from hw.common import (
    Param,
    carry_out,
    check_params,
    check_target,
    csa_rows,
    idx_bits,
    mux_tree,
    or_tree,
    priority_lowest,
    sign_of_sum,
    zext,
)

__all__ = [
    "TokenSampler",
    "Phase",
    "beat_layout",
    "token_layout",
]

#: width of lane 0's random output (SPEC §3.4)
U_BITS = 32


def beat_layout(lanes: int, weight_bits: int) -> data.StructLayout:
    """Input beat: ``lanes`` weights (weight ``v`` of beat ``b`` in lane ``v - b*lanes``)."""
    return data.StructLayout({"w": data.ArrayLayout(weight_bits, lanes), "last": 1})


def token_layout(token_bits: int) -> data.StructLayout:
    """Output beat: the sampled token."""
    return data.StructLayout({"token": token_bits})


def _sum(values: list[Value]) -> Value:
    """``values[0] + values[1] + ...`` as a balanced tree of operator adders (full width)."""
    vs = list(values)
    while len(vs) > 1:
        vs = [vs[i] + vs[i + 1] for i in range(0, len(vs) - 1, 2)] + vs[len(vs) - len(vs) % 2 :]
    return vs[0]


class Phase(enum.Enum, shape=2):
    """Input phase of the current draw."""

    PASS1 = 0  # summing
    MUL = 1  # i.ready low: partial products of the threshold
    PASS2 = 2  # selecting
    DROP = 3  # after an error: dropping the rest of the draw


class TokenSampler(wiring.Component):
    """Token sampler: streaming inverse CDF over weights sent twice (SPEC §3.5).

    A *draw* is two passes of the same weights on ``i``, ``LANES`` per beat
    (weight ``v`` of beat ``b`` in lane ``v - b*LANES``), each pass ending with
    ``last = 1``; the final beat of a pass is zero-padded. Pass 1 sums the
    weights into ``total``; ``u`` is sampled when pass 1's last beat is taken;
    pass 2 selects. The block emits one beat on ``o`` per valid draw: the
    smallest ``v`` with ``w[0] + ... + w[v] > (u * total) >> 32``, bit-exact
    with ``golden.sampler.sample_weights(w, u)``.

    Every sum is kept as two carry-save rows and only single carries and
    signs are resolved (``TARGET="asic"``), or as one value computed by
    operators (``TARGET="fpga"``); the pipeline and its cycles are the same.
    Design rationale: ``docs/blocks/token_sampler.md``.

    The token is written to a small output FIFO after pass 2's last beat, so
    ``o`` may be stalled; while that FIFO is full, pass 2 waits (``i.ready``
    low).

    Invalid input: ``total == 0`` (seen when pass 1's last beat is taken), or a
    pass longer than ``2**TOKEN_BITS`` weights: more than
    ``MAX_BEATS = ceil(2**TOKEN_BITS / LANES)`` beats, or (only when ``LANES``
    does not divide ``2**TOKEN_BITS``) a non-zero weight in beat
    ``MAX_BEATS - 1`` at an index ``>= 2**TOKEN_BITS``. Also, should pass 2
    differ from pass 1 so that no prefix sum exceeds the threshold, that draw
    is invalid. If the offending beat is taken at rising edge ``e``, ``error``
    is high for the one cycle from edge ``e+1`` to edge ``e+2``; the block
    emits nothing for the draw, consumes and drops the rest of the draw's
    beats through the end of pass 2, and then takes the next draw.

    Latency (SPEC §6 target: ``2 * ceil(V / LANES)`` cycles + at most 4): with
    no stalls, if pass 1's first beat is taken at rising edge 0 and a pass has
    ``N = ceil(V / LANES)`` beats, pass 1 is taken at edges ``0 .. N-1``,
    ``i.ready`` is low for one cycle, pass 2 is taken at edges ``N+1 .. 2N``,
    the token is in the FIFO at edge ``2N+1`` and taken from ``o`` at edge
    ``2N+2``: **2N + 2** cycles, 2 over the ideal. The next draw's pass 1 may
    start right after pass 2's last beat: a draw occupies the input for
    ``2N + 1`` cycles.

    Parameters
    ----------
    LANES : int
        Weights per beat, ``1 .. 16`` (SPEC §5, default 4).
    WEIGHT_BITS : int
        Width of one weight, ``8 .. 32`` (SPEC §5, default 16).
    TOKEN_BITS : int
        Width of a token, ``1 .. 17``: vocabularies up to ``2**TOKEN_BITS``
        (SPEC §5, default 17).
    TARGET : str
        ``"asic"`` (default): every sum as two carry-save rows of gates
        (Wallace trees, single-output parallel-prefix carries). ``"fpga"``:
        the same pipeline, cycle for cycle, with every sum kept as one value
        and computed by Amaranth's ``+``, ``-``, ``<`` and ``*`` (the second
        row, ``rem_cin`` and the threshold's low carry are constant 0), for
        FPGA carry chains and multiplier blocks.

    Members
    -------
    u : In(32)
        Lane 0's 32-bit random output (SPEC §3.4), sampled when pass 1's last
        beat is taken; ignored at every other time.
    i : In(stream.Signature(beat_layout(LANES, WEIGHT_BITS)))
        Weight beats, each pass ending with ``last``.
    o : Out(stream.Signature(token_layout(TOKEN_BITS)))
        The sampled token, one beat per valid draw.
    error : Out(1)
        One-cycle pulse on invalid input.
    """

    OUT_DEPTH = 2

    #: the block's parameters (:class:`hw.common.Param`: default, range, small value)
    PARAMS = {
        "LANES": Param(default=4, lo=1, hi=16, small=1),
        "WEIGHT_BITS": Param(default=16, lo=8, hi=32, small=8),
        "TOKEN_BITS": Param(default=17, lo=1, hi=17, small=4),
    }

    def __init__(
        self,
        *,
        LANES: int = PARAMS["LANES"].default,
        WEIGHT_BITS: int = PARAMS["WEIGHT_BITS"].default,
        TOKEN_BITS: int = PARAMS["TOKEN_BITS"].default,
        TARGET: str = "asic",
    ) -> None:
        TARGET = check_target(TARGET)
        given = {"LANES": LANES, "WEIGHT_BITS": WEIGHT_BITS, "TOKEN_BITS": TOKEN_BITS}
        p = check_params(self.PARAMS, given)  # Python ints from here on
        LANES, WEIGHT_BITS, TOKEN_BITS = (p[k] for k in given)
        self.LANES, self.WEIGHT_BITS, self.TOKEN_BITS = LANES, WEIGHT_BITS, TOKEN_BITS
        self.TARGET = TARGET
        #: most beats in one pass
        self.MAX_BEATS = -(-(1 << TOKEN_BITS) // LANES)
        #: width of ``total`` (the largest valid total is ``2**TOKEN_BITS * (2**WEIGHT_BITS - 1)``)
        self.TOTAL_BITS = TOKEN_BITS + WEIGHT_BITS
        #: width of an in-beat prefix sum
        self.PREFIX_BITS = (LANES * ((1 << WEIGHT_BITS) - 1)).bit_length()
        super().__init__(
            {
                "u": In(U_BITS),
                "i": In(stream.Signature(beat_layout(LANES, WEIGHT_BITS))),
                "o": Out(stream.Signature(token_layout(TOKEN_BITS))),
                "error": Out(1),
            }
        )

    def elaborate(self, platform) -> Module:
        m = Module()
        L, TB = self.LANES, self.TOKEN_BITS
        M, TW, PW = self.MAX_BEATS, self.TOTAL_BITS, self.PREFIX_BITS
        MW = U_BITS + TW  # product rows
        pow2 = L & (L - 1) == 0

        m.submodules.out = q = fifo.SyncFIFO(width=TB, depth=self.OUT_DEPTH)
        m.d.comb += [
            self.o.valid.eq(q.r_rdy),
            self.o.payload.eq(q.r_data),
            q.r_en.eq(self.o.ready),
        ]

        # ---- stage 0: take a beat
        beat = self.i.payload
        w = [beat.w[j] for j in range(L)]
        fire = Signal()
        m.d.comb += fire.eq(self.i.valid & self.i.ready)

        cnt = Signal(idx_bits(M + 1))  # beats taken in this pass
        acc_s = Signal(TW)  # pass 1: sum so far = acc_s + acc_c
        acc_c = Signal(TW)
        nz = Signal()  # pass 1: a non-zero weight seen
        u_reg = Signal(U_BITS)
        drop_two = Signal()  # DROP: two `last` beats to drop (else one)
        err0 = Signal()  # stage-0 error, pulsed on `error` one cycle later

        too_long = Signal()
        m.d.comb += too_long.eq(cnt == M)
        if M * L > (1 << TB):  # lanes of beat M-1 past the vocabulary must be zero
            first_out = (1 << TB) - (M - 1) * L
            m.d.comb += too_long.eq((cnt == M) | ((cnt == M - 1) & or_tree(Cat(*w[first_out:]))))
        beat_nz = Signal()
        m.d.comb += beat_nz.eq(or_tree(Cat(*w)))
        fpga = self.TARGET == "fpga"
        if fpga:  # one row: operators, mapped to carry chains
            acc_next = ((acc_s + _sum(w))[:TW], Const(0, TW))
            prefix = [(_sum(w[: j + 1])[:PW], Const(0, PW)) for j in range(L)]
        else:
            acc_next = csa_rows(m, [*w, acc_s, acc_c], TW, "acc")
            prefix = [csa_rows(m, w[: j + 1], PW, f"pre{j}") for j in range(L)]

        # token index of each lane of the beat: Cat(lane, cnt) when L is a power of 2
        base = Signal(TB + 1)  # cnt * L, otherwise
        cand = [Signal(TB, name=f"cand{j}") for j in range(L)]
        for j in range(L):
            if pow2:
                m.d.comb += cand[j].eq(Cat(Const(j, (L - 1).bit_length()), cnt))
            else:
                m.d.comb += cand[j].eq(base + j)

        def new_draw():
            m.d.sync += [acc_s.eq(0), acc_c.eq(0), nz.eq(0), cnt.eq(0), base.eq(0)]

        def next_beat():
            m.d.sync += [cnt.eq(cnt + 1), base.eq(base + L)]

        # ---- threshold: u * (acc_s + acc_c) into two rows
        s_reg = Signal(MW)
        c_reg = Signal(MW)
        rows, thr = self._threshold(m, u_reg, acc_s, acc_c, s_reg, c_reg)
        load_rem = Signal()
        m.d.sync += load_rem.eq(0)

        # ---- pass 2, stage 1 registers
        q1_valid = Signal()
        q1_last = Signal()
        q1_ps = [Signal(PW, name=f"q1_ps{j}") for j in range(L)]
        q1_pc = [Signal(PW, name=f"q1_pc{j}") for j in range(L)]
        q1_cand = [Signal(TB, name=f"q1_cand{j}") for j in range(L)]
        m.d.sync += [q1_valid.eq(0), err0.eq(0)]

        # if/elif on the phase, not m.FSM / m.Switch: no incomplete `case` in the Verilog
        phase = Signal(Phase)
        with m.If(phase == Phase.PASS1):
            m.d.comb += self.i.ready.eq(1)
            with m.If(fire):
                with m.If(too_long):
                    new_draw()
                    m.d.sync += [err0.eq(1), drop_two.eq(~beat.last), phase.eq(Phase.DROP)]
                with m.Elif(beat.last & ~(nz | beat_nz)):  # total == 0
                    new_draw()
                    m.d.sync += [err0.eq(1), drop_two.eq(0), phase.eq(Phase.DROP)]
                with m.Else():
                    m.d.sync += [acc_s.eq(acc_next[0]), acc_c.eq(acc_next[1]), nz.eq(nz | beat_nz)]
                    with m.If(beat.last):
                        m.d.sync += [u_reg.eq(self.u), cnt.eq(0), base.eq(0)]
                        m.d.sync += phase.eq(Phase.MUL)
                    with m.Else():
                        next_beat()
        with m.Elif(phase == Phase.MUL):  # partial products -> two rows
            m.d.sync += [s_reg.eq(rows[0]), c_reg.eq(rows[1]), load_rem.eq(1)]
            m.d.sync += phase.eq(Phase.PASS2)
        with m.Elif(phase == Phase.PASS2):
            m.d.comb += self.i.ready.eq(q.w_rdy)
            with m.If(fire):
                with m.If(too_long):
                    new_draw()
                    m.d.sync += [err0.eq(1), drop_two.eq(0)]
                    m.d.sync += phase.eq(Mux(beat.last, Phase.PASS1, Phase.DROP))
                with m.Else():
                    m.d.sync += [q1_valid.eq(1), q1_last.eq(beat.last)]
                    for j in range(L):
                        m.d.sync += [
                            q1_ps[j].eq(prefix[j][0]),
                            q1_pc[j].eq(prefix[j][1]),
                            q1_cand[j].eq(cand[j]),
                        ]
                    with m.If(beat.last):
                        new_draw()
                        m.d.sync += phase.eq(Phase.PASS1)
                    with m.Else():
                        next_beat()
        with m.Else():  # DROP
            m.d.comb += self.i.ready.eq(1)
            with m.If(fire & beat.last):
                m.d.sync += drop_two.eq(0)
                with m.If(~drop_two):
                    m.d.sync += phase.eq(Phase.PASS1)

        miss = self._select(m, q, load_rem, thr, q1_valid, q1_last, q1_ps, q1_pc, q1_cand)
        m.d.sync += self.error.eq(err0 | miss)
        return m

    def _threshold(
        self, m: Module, u_reg: Value, acc_s: Value, acc_c: Value, s_reg: Value, c_reg: Value
    ) -> tuple[tuple[Value, Value], tuple[Value, Value, Value]]:
        """``u * total`` for the stalled cycle after pass 1.

        Returns the two rows to register into ``s_reg`` / ``c_reg`` and the
        remainder's initial ``(rem_s, rem_c, rem_cin)`` (``(u * total) >> 32``)
        from those registers. ``"asic"``: a Wallace tree of the 64 partial
        products of ``u * acc_s`` and ``u * acc_c``, and the carry out of the
        rows' low 32 bits. ``"fpga"``: 16 x 17-bit multiplier blocks, registered,
        summed when the remainder is loaded (rows and carries 0).
        """
        TW = self.TOTAL_BITS
        MW = U_BITS + TW
        if self.TARGET == "fpga":
            prods, shifts = [], []
            for ui in range(0, U_BITS, 16):
                for ai in range(0, TW, 17):
                    pr = Signal(16 + min(17, TW - ai), name=f"prod_u{ui}_a{ai}")
                    m.d.sync += pr.eq(u_reg[ui : ui + 16] * acc_s[ai : ai + 17])
                    prods.append(pr)
                    shifts.append(ui + ai)
            product = Signal(MW)
            m.d.comb += product.eq(_sum([pr << sh for pr, sh in zip(prods, shifts, strict=True)]))
            rows = (Const(0, MW), Const(0, MW))  # s_reg / c_reg unused
            return rows, (product[U_BITS:], c_reg[U_BITS:], Const(0, 1))
        pp = [Mux(u_reg[k], a, 0) for a in (acc_s, acc_c) for k in range(U_BITS)]
        rows = csa_rows(m, pp, MW, "mul", shifts=[k for _ in range(2) for k in range(U_BITS)])
        low_carry = carry_out(m, s_reg[:U_BITS], c_reg[:U_BITS], U_BITS, "thr")
        return rows, (s_reg[U_BITS:], c_reg[U_BITS:], low_carry)

    def _select(
        self,
        m: Module,
        q: fifo.SyncFIFO,
        load_rem: Value,
        thr: tuple[Value, Value, Value],
        q1_valid: Value,
        q1_last: Value,
        q1_ps: list[Signal],
        q1_pc: list[Signal],
        q1_cand: list[Signal],
    ) -> Signal:
        """Pass 2, stage 2: ``rem - prefix[j] < 0`` for every lane of the stage-1 beat, the
        first hit, the token into ``q``; returns ``miss`` (pass 2 ended without a hit)."""
        L, TB = self.LANES, self.TOKEN_BITS
        RW = max(self.TOTAL_BITS, self.PREFIX_BITS) + 1  # signed: holds rem - prefix
        fpga = self.TARGET == "fpga"
        rem_s = Signal(RW)  # rem = rem_s + rem_c + rem_cin (mod 2**RW, signed)
        rem_c = Signal(RW)
        rem_cin = Signal()
        found = Signal()
        tok = Signal(TB)
        k = Cat(rem_cin, Const(1, 1))  # 2 + rem_cin: the +1 of each two's complement
        hit = Signal(L)
        if fpga:  # one row: rem_c and rem_cin are 0
            for j in range(L):
                m.d.comb += hit[j].eq(rem_s.as_signed() < q1_ps[j])
            rem_next = ((rem_s - q1_ps[L - 1])[:RW], Const(0, RW))
        else:
            for j in range(L):
                d = csa_rows(
                    m, [rem_s, rem_c, ~zext(q1_ps[j], RW), ~zext(q1_pc[j], RW), k], RW, f"d{j}"
                )
                m.d.comb += hit[j].eq(sign_of_sum(m, d[0], d[1], RW, f"hit{j}"))
            rem_next = csa_rows(
                m, [rem_s, rem_c, ~zext(q1_ps[L - 1], RW), ~zext(q1_pc[L - 1], RW), k], RW, "rem"
            )
        _, first = priority_lowest(m, hit)
        # prefix sums never decrease across the lanes: a hit anywhere hits the last lane
        any_hit = hit[L - 1]
        tok_first = Signal(TB)
        m.d.comb += tok_first.eq(mux_tree(q1_cand, first) if L > 1 else q1_cand[0])
        miss = Signal()
        with m.If(load_rem):
            m.d.sync += [rem_s.eq(thr[0]), rem_c.eq(thr[1]), rem_cin.eq(thr[2]), found.eq(0)]
        with m.If(q1_valid):
            m.d.sync += [rem_s.eq(rem_next[0]), rem_c.eq(rem_next[1]), rem_cin.eq(0)]
            with m.If(any_hit & ~found):
                m.d.sync += [found.eq(1), tok.eq(tok_first)]
            with m.If(q1_last):
                m.d.comb += [
                    q.w_en.eq(found | any_hit),
                    q.w_data.eq(Mux(found, tok, tok_first)),
                    miss.eq(~(found | any_hit)),
                ]
        return miss
