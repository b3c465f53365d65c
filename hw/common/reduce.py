"""Logarithmic-depth reductions: OR / AND trees, mux trees, priority encoders, prefix OR.

Every function builds a balanced tree, never a linear chain: a reduction over
``n`` inputs is ``O(log n)`` gate levels deep. (``amaranth.lib.coding`` is
deprecated in Amaranth 0.5; the priority encoders here replace it.)
"""

from collections.abc import Callable

from amaranth import Cat, Const, Module, Mux, Signal, Value

from hw.common.nets import net
from hw.common.params import idx_bits

__all__ = [
    "or_tree",
    "and_tree",
    "sum_tree",
    "mux_tree",
    "priority_tree",
    "priority_lowest",
    "priority_highest",
    "prefix_or_below",
    "onehot",
    "encode",
]


def _tree(items: list[Value], op: Callable[[Value, Value], Value]) -> Value:
    while len(items) > 1:
        nxt = [op(items[k], items[k + 1]) for k in range(0, len(items) - 1, 2)]
        if len(items) % 2:
            nxt.append(items[-1])
        items = nxt
    return items[0]


def _items(bits: Value | list[Value]) -> list[Value]:
    return [bits[k] for k in range(len(bits))] if isinstance(bits, Value) else list(bits)


def or_tree(bits: Value | list[Value]) -> Value:
    """OR of every bit of a value (or of every value of a list), as a balanced tree.

    An empty input gives ``Const(0, 1)``.
    """
    items = _items(bits)
    return _tree(items, lambda a, b: a | b) if items else Const(0, 1)


def and_tree(bits: Value | list[Value]) -> Value:
    """AND of every bit of a value (or of every value of a list), as a balanced tree.

    An empty input gives ``Const(1, 1)``.
    """
    items = _items(bits)
    return _tree(items, lambda a, b: a & b) if items else Const(1, 1)


def sum_tree(items: list[Value], width: int) -> Value:
    """The sum of ``items`` in ``width`` bits (each partial sum truncated), added as a
    balanced tree. An empty list gives ``Const(0, width)``."""
    if not items:
        return Const(0, width)
    return _tree(list(items), lambda a, b: (a + b)[:width])[:width]


def mux_tree(items: list[Value], sel: Value) -> Value:
    """``items[sel]`` as a balanced binary mux tree (``sel``'s LSB at the leaves).

    ``sel`` must have at least ``ceil(log2(len(items)))`` bits; a ``sel`` of
    ``len(items)`` or more selects an unspecified item.
    """
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


def priority_tree(
    m: Module, vec: Value, payload: list[Value], *, highest: bool, name: str
) -> tuple[Value, Value]:
    """``(any, payload[k])`` for the lowest (or highest) set bit ``k`` of ``vec``.

    A balanced binary tree of ``ceil(log2(len(vec)))`` merge levels. Each merge
    prefers its lower (``highest=False``) or upper half when any bit of that
    half is set and carries that half's payload along, so the payload at the
    winning index (the index itself, or anything else) needs no multiplexer
    after the encoder. Every level is a named net (``<name>_v<level>_<k>``,
    ``<name>_p<level>_<k>``). With no bit set, ``any`` is 0 and the payload is
    one of the inputs' (unspecified).
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
    """``(any, index)``: whether any bit of ``vec`` is set, and the lowest set bit's index."""
    return _prio(m, vec, lowest=True)


def priority_highest(m: Module, vec: Value) -> tuple[Value, Value]:
    """``(any, index)``: whether any bit of ``vec`` is set, and the highest set bit's index."""
    return _prio(m, vec, lowest=False)


def prefix_or_below(m: Module, vec: Value, name: str, *, radix: int = 2) -> Signal:
    """``out[i] = vec[0] | ... | vec[i - 1]`` (``out[0] = 0``), a Kogge-Stone prefix OR.

    ``ceil(log_radix(len(vec)))`` levels of ``radix``-input ORs, each level a
    kept net (``<name>_<level>``) so that synthesis preserves the prefix
    structure. ``vec & ~out`` is the lowest set bit, one-hot; ``vec & out``
    clears it. ``radix=4`` has the same gate depth as 2 and half the levels,
    one LUT4 per bit and level on an FPGA.

    Raises
    ------
    ValueError
        ``radix`` is not 2 or 4.
    """
    if radix not in (2, 4):
        raise ValueError(f"radix = {radix!r}: must be 2 or 4")
    n = len(vec)
    cur = net(m, Cat(Const(0, 1), vec[: n - 1]), f"{name}_0")
    s, lv = 1, 1
    while s < n:
        terms = [cur] + [(cur << (k * s))[:n] for k in range(1, radix)]
        cur = net(m, or_tree(terms), f"{name}_{lv}", keep=True)
        s, lv = s * radix, lv + 1
    return cur


def onehot(m: Module, idx: Value, width: int, name: str) -> Signal:
    """``1 << idx`` in ``width`` bits (0 if ``idx >= width``)."""
    return net(m, (Const(1, 1) << idx)[:width], name)


def encode(m: Module, oh: Value, width: int, name: str) -> Signal:
    """Index (``width`` bits) of the one set bit of ``oh`` (0 if none)."""
    bits = []
    for b in range(width):
        mask = sum(1 << k for k in range(len(oh)) if (k >> b) & 1)
        bits.append((oh & Const(mask, len(oh))).any())
    return net(m, Cat(*bits), name)
