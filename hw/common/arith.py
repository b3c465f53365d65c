"""Adders in gates: Kogge-Stone prefix carries, carry-save (3:2) trees, population count.

Synthesis maps an operator ``+`` to a carry-propagate chain, ``O(width)``
gate levels deep. The functions here build the logarithmic-depth structures
instead, every intermediate result a named net (see :func:`hw.common.net`):

* :func:`prefix_add` (and its kept forms :func:`prefix_inc`, :func:`prefix_inc_mod`,
  :func:`prefix_dec`, :func:`prefix_sub`, :func:`prefix_step`), :func:`carry_out`,
  :func:`sign_of_sum`: a sum, or just
  its top carry / top bit, through a Kogge-Stone prefix network,
  ``O(log width)`` levels; :func:`less_than`, an unsigned comparison so built;
* :func:`carry_save`, :func:`csa_rows`: many operands reduced to two rows by
  full adders, ``O(log n)`` levels and no carry chain;
* :func:`popcount`: a column-wise carry-save tree of the bits, then
  :func:`prefix_add`.

``keep`` marks every net of a structure ``(* keep *)``, so that synthesis
preserves it instead of re-deriving (and possibly serialising) it.
"""

from amaranth import Cat, Const, Module, Mux, Signal, Value
from amaranth.utils import bits_for

from hw.common.nets import net, zext

__all__ = [
    "full_adder",
    "prefix_add",
    "prefix_inc",
    "prefix_inc_mod",
    "prefix_dec",
    "prefix_sub",
    "prefix_step",
    "carry_out",
    "less_than",
    "sign_of_sum",
    "carry_save",
    "csa_rows",
    "csa_levels",
    "popcount",
]


def full_adder(a: Value, b: Value, c: Value, *, majority: bool = False) -> tuple[Value, Value]:
    """Bitwise 3:2 compressor: ``(sum, carry)`` with ``a + b + c = sum + 2 * carry``.

    The carry is ``(a & b) | ((a ^ b) & c)``, sharing ``a ^ b`` with the sum, or
    with ``majority`` the three-term majority ``(a & b) | (a & c) | (b & c)``,
    whose cone does not pass through the sum's XOR. Expressions, not nets: the
    caller names (and shifts) them.
    """
    t = a ^ b
    if majority:
        return t ^ c, (a & b) | (a & c) | (b & c)
    return t ^ c, (a & b) | (t & c)


def _prefix_carries(m: Module, g: Value, p: Value, name: str, keep: bool) -> Value:
    """Kogge-Stone: ``G[k]``, the carry out of bit ``k``, from generate ``g`` and propagate
    ``p``, levels ``<name>_g<l>`` / ``<name>_p<l>`` from 0. The last level's propagate
    is not used; synthesis removes it, except from a kept network, which leaves it out."""
    width = len(g)
    s, lv = 1, 0
    while s < width:
        g_new = net(m, g | (p & (g << s)[:width]), f"{name}_g{lv}", keep=keep)
        if 2 * s < width or not keep:
            p = net(m, p & (p << s)[:width], f"{name}_p{lv}", keep=keep)
        g, s, lv = g_new, s * 2, lv + 1
    return g


def _generate_propagate(
    m: Module, a: Value, b: Value, width: int, name: str, cin: Value | None, keep: bool
) -> tuple[Signal, Signal]:
    """Bit generate (``<name>_g``, with ``cin`` folded into bit 0) and propagate
    (``<name>_p``) of ``a + b`` over ``width`` bits."""
    a, b = zext(a.as_unsigned(), width), zext(b.as_unsigned(), width)
    g = a & b
    if cin is not None:
        g = Cat(g[0] | ((a[0] ^ b[0]) & cin), g[1:])
    return net(m, g, f"{name}_g", keep=keep), net(m, a ^ b, f"{name}_p", keep=keep)


def prefix_add(
    m: Module,
    a: Value,
    b: Value,
    width: int,
    name: str,
    *,
    cin: Value | None = None,
    keep: bool = False,
) -> Signal:
    """``(a + b + cin) mod 2**width`` as a Kogge-Stone adder, ``2 + ceil(log2(width))`` levels.

    ``a`` and ``b`` are zero-extended or truncated to ``width`` bits. The 1-bit
    carry-in joins bit 0's generate (``g0 | p0 & cin``), two levels after the
    operands' bit 0, so a carry-in that arrives a few levels after the operands
    lengthens no path. The result is the net ``<name>_sum``.
    """
    g, p = _generate_propagate(m, a, b, width, name, cin, keep)
    carries = _prefix_carries(m, g, p, name, keep)
    carry_in = Cat(Const(0, 1) if cin is None else cin, carries[: width - 1])
    return net(m, p ^ carry_in, f"{name}_sum", keep=keep)


def prefix_inc(m: Module, v: Value, name: str) -> Signal:
    """``(v + 1) mod 2**len(v)``: a kept :func:`prefix_add` (``+`` synthesises a carry
    chain, and Yosys may share it with another adder behind a multiplexer)."""
    return prefix_add(m, v, Const(0, len(v)), len(v), name, cin=Const(1, 1), keep=True)


def prefix_inc_mod(m: Module, v: Value, n: int, name: str) -> Value:
    """``(v + 1) mod n`` for a pointer ``v < n`` of ``len(v)`` bits: :func:`prefix_inc`,
    and (``n`` not ``2**len(v)``) 0 past ``n - 1``."""
    inc = prefix_inc(m, v, name)
    return inc if n == 1 << len(v) else Mux(v == n - 1, 0, inc)


def prefix_dec(m: Module, v: Value, name: str) -> Signal:
    """``(v - 1) mod 2**len(v)`` (``v + 2**w - 1``): a kept :func:`prefix_add`."""
    return prefix_add(m, v, Const(-1, len(v)), len(v), name, keep=True)


def prefix_sub(m: Module, a: Value, b: Value, width: int, name: str) -> Signal:
    """``(a - b) mod 2**width`` (``a + ~b + 1``, ``b`` zero-extended first): a kept
    :func:`prefix_add`."""
    nb = ~zext(b.as_unsigned(), width)
    return prefix_add(m, a, nb, width, name, cin=Const(1, 1), keep=True)


def prefix_step(m: Module, v: Value, up: Value, down: Value, name: str) -> Value:
    """``v + up - down`` (``up``, ``down`` bits) in ``len(v)`` bits: ``v + 1`` and
    ``v - 1`` from the register alone (:func:`prefix_inc`, :func:`prefix_dec`, nets
    ``<name>_inc``, ``<name>_dec``), then selected by the controls."""
    inc, dec = prefix_inc(m, v, f"{name}_inc"), prefix_dec(m, v, f"{name}_dec")
    return Mux(up & ~down, inc, Mux(down & ~up, dec, v))


def carry_out(
    m: Module, a: Value, b: Value, width: int, name: str, *, keep: bool = False
) -> Signal:
    """Carry out of ``a[:width] + b[:width]``: the top output of a Kogge-Stone network.

    Only the carry's cone is used (synthesis removes the rest), a single-output
    prefix tree of ``ceil(log2(width))`` levels after the generate/propagate.
    The result is the net ``<name>_co``; ``keep`` keeps the network's nets.
    """
    g, p = _generate_propagate(m, a, b, width, name, None, keep)
    if not keep:
        return net(m, _prefix_carries(m, g, p, name, False)[width - 1], f"{name}_co")
    # kept: only the carry's own tree (a kept prefix network could not be trimmed)
    nodes = [(g[k], p[k]) for k in range(width)]  # least significant first
    lv = 0
    while len(nodes) > 1:
        nxt = []
        for k in range(0, len(nodes) - 1, 2):
            (g0, p0), (g1, p1) = nodes[k], nodes[k + 1]
            gg = net(m, g1 | (p1 & g0), f"{name}_t{lv}g{k // 2}", keep=True)
            pp = net(m, p1 & p0, f"{name}_t{lv}p{k // 2}", keep=True)
            nxt.append((gg, pp))
        if len(nodes) % 2:
            nxt.append(nodes[-1])
        nodes, lv = nxt, lv + 1
    return net(m, nodes[0][0], f"{name}_co", keep=True)


def less_than(m: Module, a: Value, b: Value, name: str) -> Signal:
    """Unsigned ``a < b`` as the carry out of ``~a + b`` (``2**w - 1 - a + b >= 2**w``
    exactly when ``b > a``; ``w`` the wider operand's width): a single-output prefix
    tree, ``O(log w)`` levels, kept (synthesis would re-derive it deeper), where
    synthesis maps ``<`` to a carry chain. The result is the net ``<name>_co``."""
    w = max(len(a), len(b))
    return carry_out(m, ~zext(a.as_unsigned(), w), b, w, name, keep=True)


def sign_of_sum(
    m: Module, a: Value, b: Value, width: int, name: str, *, keep: bool = False
) -> Value:
    """Bit ``width - 1`` of ``(a + b) mod 2**width`` (the sign of a two-row number);
    ``keep`` keeps the carry's network (:func:`carry_out`)."""
    if width == 1:
        return a[0] ^ b[0]
    co = carry_out(m, a, b, width - 1, name, keep=keep)
    return zext(a, width)[width - 1] ^ zext(b, width)[width - 1] ^ co


def csa_levels(n_rows: int) -> int:
    """Full-adder levels :func:`carry_save` needs at most to reduce ``n_rows`` rows to two."""
    levels = 0
    while n_rows > 2:
        n_rows = 2 * (n_rows // 3) + n_rows % 3
        levels += 1
    return levels


def carry_save(
    m: Module,
    values: list[Value],
    width: int,
    name: str = "csa",
    shifts: list[int] | None = None,
    *,
    keep: bool = False,
    levels: int | None = None,
) -> list[Value]:
    """Reduce the rows ``values[k] << shifts[k]`` with 3:2 compressors (a Wallace tree).

    Each level sorts the rows by shift and compresses consecutive triples, so
    rows of neighbouring weights meet. Each compressor output (``<name>_l<level>_s<k>``,
    ``_c<k>``) is kept only over the bit range it can occupy, which keeps the
    Verilog small. Everything is modulo ``2**width``: the caller guarantees the
    true sum fits. With ``keep``, every compressor output is a kept net and the
    carries take :func:`full_adder`'s majority form (each kept carry is a cone
    of its own); without, the carries share the sums' XOR.

    Returns
    -------
    list of Value
        ``width``-bit rows whose sum is the sum of the inputs: at most two, or,
        with ``levels``, what is left after that many levels (to register
        between pipeline stages).
    """
    shifts = shifts or [0] * len(values)
    rows = [(v[: max(0, width - sh)], sh) for v, sh in zip(values, shifts, strict=True)]
    rows = [(v, sh) for v, sh in rows if len(v)]
    level = 0
    while len(rows) > 2 and (levels is None or level < levels):
        rows.sort(key=lambda r: r[1])
        nxt = []
        for k in range(len(rows) // 3):
            group = rows[3 * k : 3 * k + 3]
            lo = min(sh for _, sh in group)
            hi = min(width, max(sh + len(v) for v, sh in group))
            a, b, c = (zext(Cat(Const(0, sh - lo), v), hi - lo) for v, sh in group)
            s, cy = full_adder(a, b, c, majority=keep)
            nxt.append((net(m, s, f"{name}_l{level}_s{k}", keep=keep), lo))
            cw = min(hi - lo, width - lo - 1)  # the carry row, one bit up
            if cw > 0:
                nxt.append((net(m, cy[:cw], f"{name}_l{level}_c{k}", keep=keep), lo + 1))
        rows = nxt + rows[3 * (len(rows) // 3) :]
        level += 1
    return [zext(Cat(Const(0, sh), v), width) for v, sh in rows]


def csa_rows(
    m: Module,
    values: list[Value],
    width: int,
    name: str,
    shifts: list[int] | None = None,
    *,
    keep: bool = False,
) -> tuple[Value, Value]:
    """:func:`carry_save` down to exactly two rows (zero rows added if needed)."""
    rows = carry_save(m, values, width, name, shifts, keep=keep) + [Const(0, width)] * 2
    return rows[0], rows[1]


def popcount(m: Module, vec: Value, name: str, *, late: Value | None = None) -> Signal:
    """Number of set bits of ``vec``, ``bits_for(len(vec))`` wide.

    A column-wise Wallace tree of full adders (sum / carry of each as nets
    ``<name>_<stage>_<column>_<k>s`` / ``c``) down to two rows, then
    :func:`prefix_add`: about ``2 * log1.5(n / 2) + 2 + log2(log2(n))`` levels.

    ``late`` (1 bit) is added to the count as the final adder's carry-in (the
    result must still fit the width): the units column leaves the tree before
    the high ones, so a bit that arrives a few levels late lengthens no path.
    """
    n = len(vec)
    width = bits_for(n)
    cols: list[list[Value]] = [[vec[k] for k in range(n)]] + [[] for _ in range(width)]
    stage = 0
    while max(len(c) for c in cols) > 2:
        nxt: list[list[Value]] = [[] for _ in range(len(cols) + 1)]
        for w, bits in enumerate(cols):
            k = 0
            while len(bits) - k >= 3:
                tag = f"{name}_{stage}_{w}_{k // 3}"
                s, cy = full_adder(*bits[k : k + 3])
                nxt[w].append(net(m, s, f"{tag}s"))
                nxt[w + 1].append(net(m, cy, f"{tag}c"))
                k += 3
            nxt[w].extend(bits[k:])
        cols = nxt
        stage += 1
    cols = cols[:width]
    row_a = Cat(*[c[0] if len(c) > 0 else Const(0, 1) for c in cols])
    row_b = Cat(*[c[1] if len(c) > 1 else Const(0, 1) for c in cols])
    return prefix_add(m, row_a, row_b, width, f"{name}_add", cin=late)
