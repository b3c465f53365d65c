"""Shared gateware helpers: parameter checks and logarithmic-depth reductions.

Everything here builds *trees*, never linear chains, so that a reduction over
``N`` inputs is ``O(log N)`` gate levels deep (the 40-level budget of the
synthesis issue). ``amaranth.lib.coding`` is deprecated in Amaranth 0.5; the
priority encoders below replace it.

Note: modules that declare ``wiring.Component`` signatures must not use
``from __future__ import annotations`` (Amaranth reads the annotations).
"""

from amaranth import Cat, Const, Module, Mux, Signal, Value
from amaranth.utils import bits_for, ceil_log2

__all__ = [
    "check_param",
    "idx_bits",
    "or_tree",
    "and_tree",
    "priority_lowest",
    "priority_highest",
    "mux_tree",
    "net",
    "priority_tree",
    "prefix_or_below",
    "prefix_add",
    "popcount",
]


def check_param(name: str, value: object, lo: int, hi: int) -> int:
    """Validate an integer keyword parameter; ``ValueError`` quoting the value."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} = {value!r}: must be an integer in {lo} .. {hi}")
    if not lo <= value <= hi:
        raise ValueError(f"{name} = {value!r}: must be in {lo} .. {hi}")
    return value


def idx_bits(n: int) -> int:
    """Bits to hold an index ``0 .. n - 1`` (at least 1)."""
    return max(1, ceil_log2(n))


def _tree(items: list[Value], op) -> Value:
    while len(items) > 1:
        nxt = [op(items[k], items[k + 1]) for k in range(0, len(items) - 1, 2)]
        if len(items) % 2:
            nxt.append(items[-1])
        items = nxt
    return items[0]


def or_tree(bits: Value | list[Value]) -> Value:
    """OR of every bit (or every value), as a balanced tree."""
    items = [bits[k] for k in range(len(bits))] if isinstance(bits, Value) else list(bits)
    return _tree(items, lambda a, b: a | b) if items else Const(0, 1)


def and_tree(bits: Value | list[Value]) -> Value:
    """AND of every bit, as a balanced tree."""
    items = [bits[k] for k in range(len(bits))] if isinstance(bits, Value) else list(bits)
    return _tree(items, lambda a, b: a & b) if items else Const(1, 1)


def net(m: Module, value: Value, name: str, *, keep: bool = False) -> Signal:
    """``value`` as a named comb signal, so that a shared subexpression is emitted once
    (an Amaranth expression used twice is written out twice in the Verilog).
    ``keep`` marks it ``(* keep *)``: synthesis keeps it as a boundary, so ABC
    cannot fold the logic on either side into one (ripple-like) chain."""
    sig = Signal(len(value), name=name, attrs={"keep": 1} if keep else {})
    m.d.comb += sig.eq(value)
    return sig


def priority_tree(
    m: Module, vec: Value, payload: list[Value], *, highest: bool, name: str
) -> tuple[Value, Value]:
    """``(any, payload[k])`` for the lowest (or highest) set bit ``k`` of ``vec``.

    A balanced binary tree of ``ceil(log2(len(vec)))`` merge levels, each merge
    preferring the lower (upper) half when any of its bits is set and carrying
    the payload along (the index, or whatever else is wanted at that index)
    instead of multiplexing after the encoder. Every level is a named signal.
    """
    level = [(vec[k], payload[k]) for k in range(len(vec))]
    depth = 0
    while len(level) > 1:
        nxt = []
        for k in range(0, len(level) - 1, 2):
            (va, pa), (vb, pb) = level[k], level[k + 1]
            sel = Mux(vb, pb, pa) if highest else Mux(va, pa, pb)
            v = net(m, va | vb, f"{name}_v{depth}_{k // 2}")
            nxt.append((v, net(m, sel, f"{name}_p{depth}_{k // 2}")))
        if len(level) % 2:
            nxt.append(level[-1])
        level = nxt
        depth += 1
    return level[0]


def _prio(m: Module, vec: Value, lowest: bool) -> tuple[Value, Value]:
    """Binary-tree priority encoder: ``(any, index)`` as named comb signals."""
    n = len(vec)
    width = idx_bits(n)
    tag = "lo" if lowest else "hi"
    valid, index = priority_tree(
        m, vec, [Const(k, width) for k in range(n)], highest=not lowest, name=f"prio_{tag}"
    )
    out_v = Signal(name=f"prio_{tag}_any")
    out_i = Signal(width, name=f"prio_{tag}_idx")
    m.d.comb += [out_v.eq(valid), out_i.eq(index)]
    return out_v, out_i


def priority_lowest(m: Module, vec: Value) -> tuple[Value, Value]:
    """Index of the lowest set bit of ``vec`` (tree), and whether any bit is set."""
    return _prio(m, vec, lowest=True)


def priority_highest(m: Module, vec: Value) -> tuple[Value, Value]:
    """Index of the highest set bit of ``vec`` (tree), and whether any bit is set."""
    return _prio(m, vec, lowest=False)


def mux_tree(items: list[Value], sel: Value) -> Value:
    """``items[sel]`` as a balanced binary mux tree (``sel`` LSB at the leaves)."""
    level = list(items)
    b = 0
    while len(level) > 1:
        nxt = []
        for k in range(0, len(level), 2):
            if k + 1 == len(level):
                nxt.append(level[k])
            else:
                nxt.append(Mux(sel[b], level[k + 1], level[k]))
        level = nxt
        b += 1
    return level[0]


def prefix_or_below(m: Module, vec: Value, name: str, *, radix: int = 2) -> Signal:
    """``out[i] = vec[0] | ... | vec[i - 1]`` (``out[0] = 0``): a Kogge-Stone prefix OR,
    ``ceil(log_radix(len(vec)))`` levels of ``radix``-input ORs (each level kept
    as a boundary). ``vec & ~out`` is the lowest set bit, one-hot. ``radix=4``
    has the same gate depth and half the levels of LUTs: on an FPGA each level
    is one LUT4 per bit."""
    if radix not in (2, 4):
        raise ValueError(f"radix = {radix!r}: must be 2 or 4")
    n = len(vec)
    cur = net(m, Cat(Const(0, 1), vec[: n - 1]), f"{name}_0")
    s, lv = 1, 1
    while s < n:
        terms = [cur] + [(cur << (k * s))[:n] for k in range(1, radix)]
        # kept: else ABC's area recovery folds the prefix back into an OR chain
        cur = net(m, or_tree(terms), f"{name}_{lv}", keep=True)
        s, lv = s * radix, lv + 1
    return cur


def prefix_add(
    m: Module, a: Value, b: Value, width: int, name: str, *, cin: Value | None = None
) -> Signal:
    """``(a + b + cin) mod 2**width`` as a Kogge-Stone adder in gates (``2 + log2(width)``
    levels; Yosys' ``$alu`` mapping ends up a ripple chain after ``abc``). The
    carry-in joins bit 0's generate (``g0 | p0 & cin``), two levels after the
    operands' bit 0: no later than the high bits when those come out of a
    deeper tree, as in :func:`popcount`."""
    a, b = a.as_unsigned(), b.as_unsigned()
    g = [a[k] & b[k] if k < len(a) and k < len(b) else Const(0, 1) for k in range(width)]
    p = [
        (a[k] if k < len(a) else Const(0, 1)) ^ (b[k] if k < len(b) else Const(0, 1))
        for k in range(width)
    ]
    p0 = net(m, Cat(*p), f"{name}_p")
    if cin is not None:
        g[0] = g[0] | (p0[0] & cin)
    gg, pp = net(m, Cat(*g), f"{name}_g0"), p0
    s, lv = 1, 1
    while s < width:
        g_new = gg | (pp & (gg << s)[:width])
        p_new = pp & (pp << s)[:width]
        gg, pp = net(m, g_new, f"{name}_g{lv}"), net(m, p_new, f"{name}_q{lv}")
        s, lv = s * 2, lv + 1
    carry = Cat(Const(0, 1) if cin is None else cin, gg[: width - 1])
    return net(m, p0 ^ carry, f"{name}_sum")


def popcount(m: Module, vec: Value, name: str, *, late: Value | None = None) -> Signal:
    """Number of set bits of ``vec`` (``bits_for(len(vec))`` wide): a Wallace tree of
    full adders (each ``XOR3`` / majority as named signals) down to two rows, then
    :func:`prefix_add`. About ``2 * log1.5(n / 2) + 2 + log2(log2(n))`` levels.

    ``late`` (1 bit) is added to the count (the result must still fit the
    width) as the final adder's carry-in: the units column, which only sheds
    carries, leaves the tree long before the high ones, so a bit that arrives
    a few levels late lengthens no path."""
    n = len(vec)
    width = bits_for(n)
    cols: list[list[Value]] = [[vec[k] for k in range(n)]] + [[] for _ in range(width)]
    stage = 0
    while max(len(c) for c in cols) > 2:
        nxt: list[list[Value]] = [[] for _ in range(len(cols) + 1)]
        for w, bits in enumerate(cols):
            k = 0
            while len(bits) - k >= 3:
                a, b, c = bits[k : k + 3]
                tag = f"{name}_{stage}_{w}_{k // 3}"
                nxt[w].append(net(m, a ^ b ^ c, f"{tag}s"))
                nxt[w + 1].append(net(m, (a & b) | (a & c) | (b & c), f"{tag}c"))
                k += 3
            nxt[w].extend(bits[k:])
        cols = nxt
        stage += 1
    cols = cols[:width]
    row_a = Cat(*[c[0] if len(c) > 0 else Const(0, 1) for c in cols])
    row_b = Cat(*[c[1] if len(c) > 1 else Const(0, 1) for c in cols])
    return prefix_add(m, row_a, row_b, width, f"{name}_add", cin=late)
