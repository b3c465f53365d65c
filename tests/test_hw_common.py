"""hw.common: tree priority encoders and mux tree, on Amaranth's simulator."""

import random

import pytest
from amaranth import Module, Signal
from amaranth.sim import Simulator

from hw.common import check_param, idx_bits, mux_tree, or_tree, priority_highest, priority_lowest


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
