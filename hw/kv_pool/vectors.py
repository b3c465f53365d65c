"""Per-entry vectors: the operations the pool builds on its bit planes.

A *vector* has one bit per entry (bit ``i``: entry ``i``); a field is stored as
*planes*, one vector per bit of the field (``planes[b][i]`` is bit ``b`` of
entry ``i``'s field). Every function that takes a ``name`` emits named nets
(:func:`hw.common.net`) so that the Verilog and the depth reports name them.
"""

from amaranth import Cat, Const, Module, Mux, Signal, Value

from hw.common import and_tree, encode, idx_bits, net, onehot, or_tree, prefix_or_below
from hw.kv_pool.layouts import GROUP

__all__ = [
    "wide",
    "onehot",
    "match",
    "per_entry",
    "seq_vec",
    "select",
    "encode",
    "first",
    "group_index",
    "first_grouped",
    "first_index",
]


def wide(bit: Value, width: int) -> Value:
    """A 1-bit value copied to every one of ``width`` entries (a mux, not a replicate:
    Amaranth writes ``replicate`` out bit by bit, with the expression each time)."""
    return Mux(bit, Const((1 << width) - 1, width), Const(0, width))


def match(m: Module, planes: list[Signal], value: Value, name: str) -> Signal:
    """Entries whose field (``planes``) equals ``value``."""
    width = len(planes[0])
    bits = [~(planes[b] ^ wide(value[b], width)) for b in range(len(planes))]
    return net(m, and_tree(bits), name)


def per_entry(planes: list[Signal], i: int) -> Value:
    """Entry ``i``'s field, from its planes."""
    return Cat(*[q[i] for q in planes])


def seq_vec(m: Module, seqs_p: list[Signal], idx: Value, name: str) -> Signal:
    """Entries seen by sequence ``idx`` (``seqs[idx]`` of every entry: a ``SEQS``-to-1
    multiplexer per entry, selected by ``idx``; 0 if ``idx`` is out of range)."""
    if len(seqs_p) == 1:
        return net(m, seqs_p[0] & wide(idx == 0, len(seqs_p[0])), name)
    entries = len(seqs_p[0])
    return net(m, Cat(*[per_entry(seqs_p, i).bit_select(idx, 1) for i in range(entries)]), name)


def select(m: Module, owner_p: list[Signal], vec: Value, name: str) -> Signal:
    """Per entry, ``vec[owner]``: an ``N_NODES``-to-1 multiplexer per entry, selected by
    its ``owner`` (planes ``owner_p``; 0 for an owner ``>= len(vec)``). Written as a
    bit select (a mux tree after synthesis), so that an FPGA flow can cover it with
    its wide multiplexers (``flows.synth_fpga``: 8-to-1 in two slices)."""
    entries = len(owner_p[0])
    return net(m, Cat(*[vec.bit_select(per_entry(owner_p, i), 1) for i in range(entries)]), name)


def first(m: Module, vec: Value, name: str) -> Signal:
    """The lowest set bit of ``vec``, one-hot (radix-4 Kogge-Stone prefix OR)."""
    below = prefix_or_below(m, vec, f"{name}_below", radix=4)
    return net(m, vec & ~below, name, keep=True)


def group_index(m: Module, gsel: Value, locs: list[Value], width: int, name: str) -> Signal:
    """Index (``width`` bits) of the first group's first bit, from the first group that
    has one (``gsel``, one-hot) and every group's local index (``locs``): the chosen
    local index (low bits) and group number (high bits)."""
    lb = len(locs[0])
    lo = or_tree([locs[j] & Mux(gsel[j], (1 << lb) - 1, 0) for j in range(len(locs))])
    hi = encode(m, gsel, max(1, idx_bits(len(locs))), f"{name}_hi")
    return net(m, Cat(lo, hi)[:width], name + "_idx")


def first_grouped(m: Module, vec: Value, name: str) -> tuple[Signal, Signal]:
    """The lowest set bit of ``vec``, one-hot, and its index (0 if none), in groups of
    :data:`~hw.kv_pool.layouts.GROUP`: every group's first bit and index, in parallel
    with the first group that has one."""
    spans = [(k, min(len(vec), k + GROUP)) for k in range(0, len(vec), GROUP)]
    loc = [first(m, vec[a:b], f"{name}_g{j}") for j, (a, b) in enumerate(spans)]
    loc_i = [encode(m, x, idx_bits(GROUP), f"{name}_g{j}_idx") for j, x in enumerate(loc)]
    anys = net(m, Cat(*[vec[a:b].any() for a, b in spans]), f"{name}_any")
    gsel = first(m, anys, f"{name}_gsel")
    chosen = [loc[j] & Mux(gsel[j], (1 << len(loc[j])) - 1, 0) for j in range(len(spans))]
    oh = net(m, Cat(*chosen), name)
    return oh, group_index(m, gsel, loc_i, idx_bits(len(vec)), name)


def first_index(m: Module, vec: Value, width: int, name: str) -> Signal:
    """Index (``width`` bits) of the lowest set bit of ``vec`` (0 if none): for more
    than 32 bits in groups (:func:`first_grouped`), shallower than a
    ``len(vec)``-wide prefix OR and encoder."""
    if len(vec) <= 32:
        return encode(m, first(m, vec, name), width, name + "_idx")
    return first_grouped(m, vec, name)[1][:width]
