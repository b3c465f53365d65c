"""Per-lane random numbers (SPEC §3.4): xoshiro128++ lanes seeded by splitmix64."""

from amaranth import Cat, Const, Module, Signal, Value
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from hw.common import Param, check_params, csa_rows, mux_tree, net, prefix_add

__all__ = ["RngLanes", "seed_cycles"]

_M64 = (1 << 64) - 1
#: splitmix64 constants (golden.rng.splitmix64)
SM_GAMMA = 0x9E3779B97F4A7C15
SM_MUL = (0xBF58476D1CE4E5B9, 0x94D049BB133111EB)
#: multiplicand bits consumed per multiplier cycle, and bits per partial product
MUL_BITS = 8
DIGIT_BITS = 1
#: cycles of one 64-bit multiply by a constant
_MUL_CYCLES = 64 // MUL_BITS
#: busy cycles per lane: two splitmix64 outputs of two multiplies each
SEED_CYCLES_PER_LANE = 4 * _MUL_CYCLES


def seed_cycles(n_nodes: int) -> int:
    """Cycles ``busy`` stays high after a seed beat is taken: ``32 * N_NODES``."""
    return SEED_CYCLES_PER_LANE * check_params(RngLanes.PARAMS, {"N_NODES": n_nodes})["N_NODES"]


def _shl(v: Value, k: int, width: int) -> Value:
    """``(v << k) mod 2**width`` as wiring (Amaranth emits a shift cell for ``<<``)."""
    return Cat(Const(0, k), v[: width - k]) if k < width else Const(0, width)


def _xorshift(v: Value, k: int) -> Value:
    """``v ^ (v >> k)`` on 64 bits (``v`` should be a signal: it is used twice)."""
    return v ^ Cat(v[k:64], Const(0, k))


def _mul_step(m: Module, acc_in: Value, chunk: Value, sel: Value) -> Signal:
    """``acc_in + chunk * SM_MUL[sel] (mod 2**64)``: one Horner step of the multiplier.

    ``chunk`` (``MUL_BITS`` bits) is split into ``DIGIT_BITS``-bit digits; each
    digit selects a constant multiple of the constant (a mux of constants, an
    AND gate for 1-bit digits). The partial products and ``acc_in`` go through a
    kept carry-save tree, then one kept 64-bit Kogge-Stone add.
    """
    terms: list[Value] = [acc_in]
    for j in range(MUL_BITS // DIGIT_BITS):
        digit = chunk[j * DIGIT_BITS : (j + 1) * DIGIT_BITS]
        table = [
            Const(((d * c) << (j * DIGIT_BITS)) & _M64, 64)
            for c in SM_MUL
            for d in range(1 << DIGIT_BITS)
        ]
        terms.append(net(m, mux_tree(table, Cat(digit, sel)), f"mul_pp{j}", keep=True))
    rows = csa_rows(m, terms, 64, "mul_csa", keep=True)
    return prefix_add(m, rows[0], rows[1], 64, "mul_sum", keep=True)


class RngLanes(wiring.Component):
    """``N_NODES`` xoshiro128++ generators advanced together, seeded by splitmix64.

    SPEC §3.4, bit-exact with ``golden.rng.LaneRNG``: one splitmix64 stream,
    its state started at the 64-bit seed, seeds the lanes in order; lane ``l``
    takes splitmix64 outputs ``2l`` and ``2l + 1``, each split into its low then
    high 32-bit word, as its state words ``s0, s1, s2, s3``.

    Seeding: a beat on ``seed`` is taken only while ``busy`` is low
    (``seed.ready = ~busy``). ``busy`` is then high for exactly
    ``seed_cycles(N_NODES) = 32 * N_NODES`` cycles, from the cycle after the
    beat is taken; in the first cycle ``busy`` is low again every lane holds
    its new state and ``advance`` is accepted. One shared splitmix64
    multiplier computes the states lane by lane and shifts each finished lane
    into a chain of lane registers. A reset stops seeding; the lanes are then
    unseeded.

    Advance: ``advance`` is a one-cycle strobe. When it is high in a cycle
    where ``busy`` is low and a seeding has completed since reset, every lane
    advances once and ``out`` shows the new outputs. An advance in the same
    cycle as a seed beat is taken (with the lanes seeded and not busy) is
    accepted: it acts on the old streams, whose outputs ``out`` shows, and the
    reseeding then replaces them. ``out`` is 0 after reset and is not changed
    by seeding.

    Invalid input: ``advance`` high while ``busy`` is high, or before any
    seeding has completed since reset. ``error`` is high in the next cycle
    for one cycle and nothing changes.

    Latency: ``out`` shows an accepted advance's outputs from the next cycle
    on (1 cycle), unchanged until the next accepted advance; one advance per
    cycle is sustained. Seeding takes ``32 * N_NODES`` cycles (SPEC §6 sets
    no target for either).

    Lane state and the seeding datapath are registers without reset (always
    written before use); control, ``out`` and ``error`` are reset. Design
    rationale: ``docs/blocks/rng_lanes.md``.

    Parameters
    ----------
    N_NODES : int
        Number of lanes, ``4 .. 1024`` (SPEC §5, default 64).

    Members
    -------
    seed : In(stream.Signature(64))
        Seed beats; taking one (re)seeds every lane. ``ready`` is ``~busy``.
    busy : Out(1)
        High while seeding.
    advance : In(1)
        One-cycle strobe: advance every lane once.
    out : Out(data.ArrayLayout(32, N_NODES))
        The 32-bit output of every lane from the last accepted advance (lane
        ``l``'s first advance after seeding gives ``LaneRNG(seed, N).next()[l]``).
    error : Out(1)
        One-cycle pulse, the cycle after ``advance`` was raised while busy or
        before any seeding completed.
    """

    #: the block's parameters (:class:`hw.common.Param`: default, range, small value)
    PARAMS = {"N_NODES": Param(default=64, lo=4, hi=1024, small=4)}

    def __init__(self, *, N_NODES: int = PARAMS["N_NODES"].default) -> None:
        N_NODES = self.N_NODES = check_params(self.PARAMS, {"N_NODES": N_NODES})["N_NODES"]
        super().__init__(
            {
                "seed": In(stream.Signature(64)),
                "busy": Out(1),
                "advance": In(1),
                "out": Out(data.ArrayLayout(32, N_NODES)),
                "error": Out(1),
            }
        )

    @property
    def seed_cycles(self) -> int:
        """Cycles ``busy`` stays high after a seed beat: ``32 * N_NODES``."""
        return seed_cycles(self.N_NODES)

    def elaborate(self, platform) -> Module:
        m = Module()
        N = self.N_NODES
        K = _MUL_CYCLES

        # ---- lane state: s0..s3 per lane (always written before use)
        lanes = [
            [Signal(32, name=f"lane{lane}_s{k}", reset_less=True) for k in range(4)]
            for lane in range(N)
        ]

        # ---- control
        busy = self.busy
        seeded = Signal()  # the lanes hold a completed seeding (cleared by reset and reseed)
        step = Signal(range(K))  # Horner step of the current multiply
        mul2 = Signal()  # 0: multiply by SM_MUL[0], 1: by SM_MUL[1]
        half = Signal()  # 0: next output is s0/s1 of a lane, 1: s2/s3
        lane_cnt = Signal(range(N))  # lanes shifted in so far

        # ---- seeding datapath (always written before use)
        st = Signal(64, reset_less=True)  # splitmix64 state of the next output
        x = Signal(64, reset_less=True)  # multiplicand, consumed MSB first
        acc = Signal(64, reset_less=True)  # Horner accumulator
        lo = Signal(64, reset_less=True)  # output 2l, waiting for output 2l + 1

        m.d.comb += self.seed.ready.eq(~busy)
        fire = Signal()
        m.d.comb += fire.eq(self.seed.valid & ~busy)

        # splitmix64 states: seed + gamma (first output), seed + 2 gamma, st + gamma
        sd = self.seed.payload
        sm1 = prefix_add(m, sd, Const(SM_GAMMA, 64), 64, "seed_g1", keep=True)
        sm2 = prefix_add(m, sd, Const((2 * SM_GAMMA) & _M64, 64), 64, "seed_g2", keep=True)
        st_next = prefix_add(m, st, Const(SM_GAMMA, 64), 64, "st_next", keep=True)

        with m.If(fire):
            m.d.sync += [
                st.eq(sm2),
                x.eq(_xorshift(sm1, 30)),
                busy.eq(1),
                seeded.eq(0),
                step.eq(0),
                mul2.eq(0),
                half.eq(0),
                lane_cnt.eq(0),
                acc.eq(0),
            ]

        # one Horner step per busy cycle: acc = acc * 2**MUL_BITS + chunk * C
        # (acc is cleared at the last step of a multiply, so the next starts at 0)
        prod = Signal(64)
        m.d.comb += prod.eq(_mul_step(m, _shl(acc, MUL_BITS, 64), x[64 - MUL_BITS :], mul2))
        result = Signal(64)  # the splitmix64 output, valid at the last step of mul2
        m.d.comb += result.eq(_xorshift(prod, 31))

        with m.If(busy):
            m.d.sync += acc.eq(prod)
            with m.If(step == K - 1):
                m.d.sync += [step.eq(0), mul2.eq(~mul2), acc.eq(0)]
                with m.If(~mul2):
                    m.d.sync += x.eq(_xorshift(prod, 27))
                with m.Else():
                    m.d.sync += [x.eq(_xorshift(st, 30)), st.eq(st_next)]
                    with m.If(~half):
                        m.d.sync += [lo.eq(result), half.eq(1)]
                    with m.Else():
                        # shift the finished lane in at the top of the chain
                        for lane in range(N - 1):
                            m.d.sync += [
                                a.eq(b) for a, b in zip(lanes[lane], lanes[lane + 1], strict=True)
                            ]
                        new = [lo[:32], lo[32:], result[:32], result[32:]]
                        m.d.sync += [a.eq(b) for a, b in zip(lanes[N - 1], new, strict=True)]
                        m.d.sync += [half.eq(0), lane_cnt.eq(lane_cnt + 1)]
                        with m.If(lane_cnt == N - 1):
                            m.d.sync += [busy.eq(0), seeded.eq(1), lane_cnt.eq(0)]
            with m.Else():
                m.d.sync += [step.eq(step + 1), x.eq(_shl(x, MUL_BITS, 64))]

        # ---- advance: every lane in parallel (xoshiro128++, golden.rng.LaneRNG.next)
        ok = Signal()
        m.d.comb += ok.eq(self.advance & ~busy & seeded)
        m.d.sync += self.error.eq(self.advance & (busy | ~seeded))
        outs = [Signal(32, name=f"lane{lane}_out_r") for lane in range(N)]
        m.d.comb += self.out.eq(Cat(*outs))  # one assignment: no per-lane slice of `out`
        for lane in range(N):
            s0, s1, s2, s3 = lanes[lane]
            pre = prefix_add(m, s0, s3, 32, f"lane{lane}_pre", keep=True)
            out = prefix_add(m, pre.rotate_left(7), s0, 32, f"lane{lane}_out", keep=True)
            t = _shl(s1, 9, 32)
            n2 = net(m, s2 ^ s0, f"lane{lane}_n2")
            n3 = net(m, s3 ^ s1, f"lane{lane}_n3")
            with m.If(ok):
                m.d.sync += [
                    outs[lane].eq(out),
                    s0.eq(s0 ^ n3),
                    s1.eq(s1 ^ n2),
                    s2.eq(n2 ^ t),
                    s3.eq(n3.rotate_left(11)),
                ]
        return m
