"""hw.common: reductions, priority encoders, adders and carry-save trees, on Amaranth's
simulator against Python integers."""

import random

import pytest
from amaranth import Module, Signal
from amaranth.sim import Simulator

import hw.common
from hw.common import (
    and_tree,
    carry_out,
    carry_save,
    check_param,
    csa_levels,
    csa_rows,
    idx_bits,
    less_than,
    mux_tree,
    net,
    or_tree,
    popcount,
    prefix_add,
    prefix_dec,
    prefix_inc,
    prefix_inc_mod,
    prefix_or_below,
    prefix_step,
    prefix_sub,
    priority_highest,
    priority_lowest,
    sign_of_sum,
    zext,
)


def _run(m: Module, bench) -> None:
    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()


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


def test_exports() -> None:
    """Every name of ``hw.common.__all__`` is importable from ``hw.common``."""
    for name in hw.common.__all__:
        assert callable(getattr(hw.common, name)), name


@pytest.mark.parametrize("n", [1, 2, 3, 8, 13])
def test_and_tree_zext(n: int) -> None:
    m = Module()
    vec = Signal(n)
    out_and, out_z, out_t = Signal(), Signal(n + 3), Signal(max(1, n - 1))
    m.d.comb += [out_and.eq(and_tree(vec)), out_z.eq(zext(vec, n + 3))]
    m.d.comb += out_t.eq(zext(vec, max(1, n - 1)))

    async def bench(ctx) -> None:
        for x in [0, (1 << n) - 1] + [random.Random(n).randrange(1 << n) for _ in range(50)]:
            ctx.set(vec, x)
            assert ctx.get(out_and) == (x == (1 << n) - 1)
            assert ctx.get(out_z) == x
            assert ctx.get(out_t) == x % (1 << max(1, n - 1))

    _run(m, bench)


@pytest.mark.parametrize("n", [1, 2, 3, 13, 64])
def test_onehot_encode(n: int) -> None:
    """``onehot``: ``1 << i`` (0 past the width); ``encode``: the index back."""
    m = Module()
    w = idx_bits(n)
    idx = Signal(w + 1)
    oh = hw.common.onehot(m, idx, n, "oh")
    back = hw.common.encode(m, oh, w, "back")

    async def bench(ctx) -> None:
        for i in range(1 << (w + 1)):
            ctx.set(idx, i)
            assert ctx.get(oh) == ((1 << i) if i < n else 0)
            assert ctx.get(back) == (i if i < n else 0)

    _run(m, bench)


@pytest.mark.parametrize("n", [1, 2, 5, 8, 20, 32])
def test_prefix_inc_mod(n: int) -> None:
    """``prefix_inc_mod``: ``(v + 1) mod n`` for every pointer ``v < n``."""
    m = Module()
    v = Signal(idx_bits(n))
    out = net(m, prefix_inc_mod(m, v, n, "ptr"), "ptr_out")

    async def bench(ctx) -> None:
        for x in range(n):
            ctx.set(v, x)
            assert ctx.get(out) == (x + 1) % n, x

    _run(m, bench)


@pytest.mark.parametrize("keep", [False, True])
@pytest.mark.parametrize("width", [1, 2, 5, 8, 32, 33])
def test_prefix_add(width: int, keep: bool) -> None:
    """``prefix_add`` with and without a carry-in and narrower operands; ``carry_out``,
    ``sign_of_sum``, ``less_than`` (both ways), ``prefix_inc`` / ``_dec`` / ``_sub`` and
    ``prefix_step`` (each of up, down, both, neither) on the same operands."""
    m = Module()
    a, b, cin = Signal(width), Signal(max(1, width - 1)), Signal()
    plain = prefix_add(m, a, b, width, "p", keep=keep)
    with_cin = prefix_add(m, a, b, width, "c", cin=cin, keep=keep)
    co = carry_out(m, a, b, width, "co")
    sign = sign_of_sum(m, a, b, width, "sg")
    lt, gt = less_than(m, a, b, "lt"), less_than(m, b, a, "gt")
    inc, dec = prefix_inc(m, a, "inc"), prefix_dec(m, a, "dec")
    sub = prefix_sub(m, a, b, width, "sub")
    up, down = Signal(), Signal()
    step = net(m, prefix_step(m, a, up, down, "step"), "step_out")
    rng = random.Random(width)
    top = (1 << width) - 1

    async def bench(ctx) -> None:
        cases = [(0, 0), (top, 1), (top, (1 << len(b)) - 1)]
        cases += [(rng.randrange(1 << width), rng.randrange(1 << len(b))) for _ in range(200)]
        for x, y in cases:
            for c in (0, 1):
                ctx.set(a, x)
                ctx.set(b, y)
                ctx.set(cin, c)
                assert ctx.get(plain) == (x + y) & top, (x, y)
                assert ctx.get(with_cin) == (x + y + c) & top, (x, y, c)
                assert ctx.get(co) == (x + y) >> width, (x, y)
                assert ctx.get(sign) == ((x + y) >> (width - 1)) & 1, (x, y)
                assert (ctx.get(lt), ctx.get(gt)) == (x < y, y < x), (x, y)
                assert (ctx.get(inc), ctx.get(dec)) == ((x + 1) & top, (x - 1) & top), x
                assert ctx.get(sub) == (x - y) & top, (x, y)
                ctx.set(up, c)
                ctx.set(down, 1 - c if y & 1 else c)
                want = x + c - (1 - c if y & 1 else c)
                assert ctx.get(step) == want & top, (x, y, c)

    _run(m, bench)


@pytest.mark.parametrize("keep", [False, True])
@pytest.mark.parametrize(
    ("n_rows", "row_bits", "width", "shifted"),
    [(1, 8, 8, False), (2, 8, 9, False), (3, 8, 10, False), (9, 16, 20, False), (16, 6, 24, True)],
)
def test_carry_save(n_rows: int, row_bits: int, width: int, shifted: bool, keep: bool) -> None:
    """``carry_save`` / ``csa_rows`` (with shifts, and stopped after ``levels``) keep the sum
    modulo ``2**width``; at most two rows come out, after at most ``csa_levels`` levels."""
    m = Module()
    rows_in = [Signal(row_bits, name=f"r{k}") for k in range(n_rows)]
    shifts = [k for k in range(n_rows)] if shifted else None
    two = csa_rows(m, rows_in, width, "t", shifts, keep=keep)
    half = max(1, csa_levels(n_rows) // 2)
    part = carry_save(m, rows_in, width, "h", shifts, keep=keep, levels=half)
    assert len(two) == 2 and len(carry_save(m, rows_in, width, "f", shifts)) <= 2
    outs = [Signal(width, name=f"o{k}") for k in range(2 + len(part))]
    m.d.comb += [o.eq(v) for o, v in zip(outs, [*two, *part], strict=True)]
    rng = random.Random(n_rows * width)

    async def bench(ctx) -> None:
        for trial in range(100):
            vals = [rng.randrange(1 << row_bits) for _ in range(n_rows)]
            if trial == 0:
                vals = [(1 << row_bits) - 1] * n_rows
            for s, v in zip(rows_in, vals, strict=True):
                ctx.set(s, v)
            want = sum(v << (k if shifted else 0) for k, v in enumerate(vals)) % (1 << width)
            got = [ctx.get(o) for o in outs]
            assert sum(got[:2]) % (1 << width) == want, vals
            assert sum(got[2:]) % (1 << width) == want, vals

    _run(m, bench)


def test_csa_levels() -> None:
    assert [csa_levels(n) for n in (1, 2, 3, 4, 6, 9, 18, 64)] == [0, 0, 1, 2, 3, 4, 6, 10]
