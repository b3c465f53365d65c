"""Shared gateware helpers: parameter checks and logarithmic-depth reductions.

Everything here builds *trees*, never linear chains, so that a reduction over
``N`` inputs is ``O(log N)`` gate levels deep (the 40-level budget of the
synthesis issue). ``amaranth.lib.coding`` is deprecated in Amaranth 0.5; the
priority encoders below replace it.

Note: modules that declare ``wiring.Component`` signatures must not use
``from __future__ import annotations`` (Amaranth reads the annotations).
"""

from amaranth import Cat, Const, Module, Mux, Signal, Value
from amaranth.utils import ceil_log2

__all__ = [
    "check_param",
    "idx_bits",
    "or_tree",
    "and_tree",
    "priority_lowest",
    "priority_highest",
    "mux_tree",
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


def _prio(m: Module, vec: Value, lowest: bool) -> tuple[Value, Value]:
    """Binary-tree priority encoder: returns ``(any, index)`` as comb values."""
    n = len(vec)
    width = idx_bits(n)
    # leaves: (valid, index) pairs; each level merges neighbours, preferring the
    # lower (or higher) half, and prepends one index bit.
    level: list[tuple[Value, Value]] = [(vec[k], Const(0, 0)) for k in range(n)]
    depth = 0
    while len(level) > 1:
        nxt = []
        for k in range(0, len(level), 2):
            if k + 1 == len(level):
                v, i = level[k]
                nxt.append((v, Cat(i, Const(0, 1))))
                continue
            (va, ia), (vb, ib) = level[k], level[k + 1]
            if lowest:
                idx = Mux(va, Cat(ia, Const(0, 1)), Cat(ib, Const(1, 1)))
            else:
                idx = Mux(vb, Cat(ib, Const(1, 1)), Cat(ia, Const(0, 1)))
            nxt.append((va | vb, idx))
        level = nxt
        depth += 1
    valid, index = level[0]
    out_v = Signal(name=f"prio_{'lo' if lowest else 'hi'}_any")
    out_i = Signal(width, name=f"prio_{'lo' if lowest else 'hi'}_idx")
    m.d.comb += [out_v.eq(valid), out_i.eq(index if depth else 0)]
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
