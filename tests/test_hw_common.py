"""hw.common: tree priority encoders and mux tree, on Amaranth's simulator."""

import random

import pytest
from amaranth import Module, Signal
from amaranth.sim import Simulator

from hw.common import (
    check_param,
    idx_bits,
    mux_tree,
    or_tree,
    popcount,
    prefix_or_below,
    priority_highest,
    priority_lowest,
)


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 13, 64])
def test_priority_encoders(n: int) -> None:
    m = Module()
    vec = Signal(n)
    lo_v, lo_i = priority_lowest(m, vec)
    hi_v, hi_i = priority_highest(m, vec)
    anyb = Signal()
    m.d.comb += anyb.eq(or_tree(vec))
    sel = Signal(idx_bits(n))
    items = [Signal(8, name=f"it{k}") for k in range(n)]
    out = Signal(8)
    m.d.comb += out.eq(mux_tree(items, sel))
    rng = random.Random(n)
    vals = [rng.randrange(256) for _ in range(n)]

    async def bench(ctx) -> None:
        for k, v in enumerate(vals):
            ctx.set(items[k], v)
        cases = [0, (1 << n) - 1] + [1 << k for k in range(n)]
        cases += [rng.randrange(1 << n) for _ in range(200)]
        for x in cases:
            ctx.set(vec, x)
            bits = [k for k in range(n) if (x >> k) & 1]
            assert ctx.get(lo_v) == bool(bits) == ctx.get(hi_v) == ctx.get(anyb)
            if bits:
                assert ctx.get(lo_i) == bits[0] and ctx.get(hi_i) == bits[-1]
        for k in range(n):
            ctx.set(sel, k)
            assert ctx.get(out) == vals[k]

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()


def test_check_param() -> None:
    assert check_param("N_NODES", 64, 4, 1024) == 64
    for bad in (3, 2000, True, 6.0, "64"):
        with pytest.raises(ValueError, match="N_NODES = "):
            check_param("N_NODES", bad, 4, 1024)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 16, 40, 255])
def test_popcount_late(n: int) -> None:
    """``popcount`` with and without the ``late`` bit (the final adder's carry-in)."""
    m = Module()
    vec, late = Signal(n), Signal()
    outs = [popcount(m, vec, "pc")]
    outs.append(popcount(m, vec, "pl", late=late))
    rng = random.Random(n)

    async def bench(ctx) -> None:
        cases = [0, (1 << n) - 1, 1, 1 << (n - 1)] + [rng.randrange(1 << n) for _ in range(100)]
        for x in cases:
            for lb in (0, 1):
                if x == (1 << n) - 1 and lb and n + 1 >= 1 << len(outs[0]):
                    continue  # the sum does not fit the width
                ctx.set(vec, x)
                ctx.set(late, lb)
                want = x.bit_count()
                assert ctx.get(outs[0]) == want, (n, x)
                for o in outs[1:]:
                    assert ctx.get(o) == want + lb, (n, x, lb)

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()


@pytest.mark.parametrize("radix", [2, 4])
@pytest.mark.parametrize("n", [1, 2, 5, 16, 17, 64])
def test_prefix_or_below(n: int, radix: int) -> None:
    m = Module()
    vec = Signal(n)
    out = prefix_or_below(m, vec, "b", radix=radix)
    rng = random.Random(n * radix)

    async def bench(ctx) -> None:
        for x in [0, (1 << n) - 1, 1 << (n - 1)] + [rng.randrange(1 << n) for _ in range(100)]:
            ctx.set(vec, x)
            want = sum(1 << i for i in range(n) if x & ((1 << i) - 1))
            assert ctx.get(out) == want, (n, radix, x)

    with pytest.raises(ValueError, match="radix = 3"):
        prefix_or_below(m, vec, "c", radix=3)
    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
