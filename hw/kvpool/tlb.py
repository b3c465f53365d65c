"""One lookup port's TLB (SPEC §4.6 *TLB*): set-associative, tree-PLRU, flops + memory."""

from dataclasses import dataclass

from amaranth import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import data, memory, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from hw.common import Param, check_params, idx_bits, mux_tree, net, prefix_add, priority_tree

__all__ = [
    "TLB",
    "COUNT_BITS",
    "key_layout",
    "fill_layout",
    "reply_layout",
    "set_index",
    "plru_masks",
    "plru_victim",
]

#: width of the ``hits`` / ``misses`` counters (they wrap)
COUNT_BITS = 32


def key_layout(segs: int, pos_bits: int) -> data.StructLayout:
    """A lookup or invalidation key: ``(segment, pos)``."""
    return data.StructLayout({"seg": idx_bits(segs), "pos": pos_bits})


def fill_layout(segs: int, pos_bits: int, addr_bits: int) -> data.StructLayout:
    """A fill: the key and the walked PTE's ``loc`` (0 chip, 1 HBM) and ``addr``."""
    return data.StructLayout({"seg": idx_bits(segs), "pos": pos_bits, "loc": 1, "addr": addr_bits})


def reply_layout(addr_bits: int) -> data.StructLayout:
    """A lookup's reply (``loc`` and ``addr`` are 0 on a miss)."""
    return data.StructLayout({"hit": 1, "loc": 1, "addr": addr_bits})


def set_index(seg: Value, pos: Value, sets: int) -> Value:
    """``(pos XOR (seg << 4)) mod sets`` (``sets`` a power of two; 1: a 1-bit 0)."""
    sb = exact_log2(sets)
    return (pos ^ Cat(Const(0, 4), seg))[:sb] if sb else Const(0, 1)


def plru_masks(way: Value, ways: int) -> tuple[Value, Value]:
    """``(set, clear)``: the tree-PLRU bits an access to ``way`` sets and clears.

    Heap order (``golden.kvpool.tlb``): node ``n``'s children are ``2n + 1`` and
    ``2n + 2``, the leaves are the ways left to right; every node on the way's
    path points away from it (1: right, when the way is in the left subtree).
    """
    if ways == 1:
        return Const(0, 1), Const(0, 1)
    levels = exact_log2(ways)
    on, off = [], []
    for n in range(ways - 1):
        d = (n + 1).bit_length() - 1  # depth of node n
        k = n - ((1 << d) - 1)  # its index within the depth
        prefix = way[levels - d :] if d else Const(0, 1)
        on_path = (prefix == k) if d else Const(1, 1)
        went_left = ~way[levels - d - 1]
        on.append(on_path & went_left)
        off.append(on_path & ~went_left)
    return Cat(on), Cat(off)


def _touch_consts(ways: int) -> list[tuple[int, int]]:
    """Per way, the ``(set, clear)`` masks of :func:`plru_masks` as integers."""
    out = []
    for w in range(ways):
        on = off = 0
        n = w + ways - 1  # the leaf, in heap order
        while n > 0:
            parent = (n - 1) // 2
            if n == 2 * parent + 1:  # a left child: the parent points right
                on |= 1 << parent
            else:
                off |= 1 << parent
            n = parent
        out.append((on, off))
    return out


def plru_victim(bits: Value, ways: int) -> Value:
    """The way the tree-PLRU ``bits`` point to: from the root, 0 left, 1 right."""
    if ways == 1:
        return Const(0, 1)
    levels = exact_log2(ways)
    way: list[Value] = []  # MSB first
    for d in range(levels):
        nodes = [bits[(1 << d) - 1 + k] for k in range(1 << d)]
        prefix = Cat(*reversed(way)) if way else Const(0, 1)
        way.append(mux_tree(nodes, prefix) if d else nodes[0])
    return Cat(*reversed(way))


def _inc(m: Module, v: Value, name: str) -> Value:
    """``(v + 1) mod 2**len(v)`` through a prefix adder (``+`` synthesises a ripple)."""
    return prefix_add(m, v, Const(0, len(v)), len(v), name, cin=Const(1, 1), keep=True)


class TLB(wiring.Component):
    """One lookup port's TLB: ``(segment, pos) -> (loc, addr)``, ``SETS x WAYS``, tree-PLRU.

    SPEC §4.6 *TLB*, bit-exact with ``golden.kvpool.tlb.PortTLB``: set
    ``(pos XOR (segment << 4)) mod SETS``; a lookup hits when a valid way holds
    the key (the lowest such way) and updates the set's tree-PLRU; a fill
    writes the lowest-numbered invalid way, else the tree-PLRU victim, and
    updates the PLRU as a hit on that way; invalidation clears ``valid``
    only. Tree-PLRU in heap order (``WAYS - 1`` bits per set, 0 after reset:
    the first victim of a full set is way 0), as ``golden.kvpool.tlb`` states.

    Operations (each may be issued in every cycle, all four in one cycle):

    * **lookup** (``lk_valid``, ``lk``): the reply ``rsp`` (``hit``, and the
      entry's ``loc`` and ``addr``, both 0 on a miss) is shown in the next
      cycle, with ``rsp_valid``; ``hits`` or ``misses`` counts it.
    * **fill** (``fill_valid``, ``fill``): write the key and the PTE.
    * **invalidate a set** (``inv_valid``, ``inv``): every way of the set of
      ``(inv.seg, inv.pos)`` whose segment is ``inv.seg`` (a spill or fill of
      that position).
    * **invalidate a segment** (``kill_valid``, ``kill_seg``): every entry
      whose segment id equals ``kill_seg`` (a segment that died or was
      split), in one cycle; one segment per cycle.

    **Order within a cycle**: the operations issued in one cycle take effect
    as if performed in the order *fill, invalidate a set, invalidate
    a segment, lookup*, after every operation of the cycles before. So a
    lookup sees a fill and invalidations issued in its own cycle (a fill
    of ``kill_seg`` in the kill's cycle is killed), and a fill issued in the
    cycle after a lookup chooses its victim with the PLRU as that lookup
    left it. The golden model's order is the same: ``fill``,
    ``invalidate_set``, ``invalidate_segment(kill_seg)`` (when
    ``kill_valid``), ``lookup``, per cycle. A key filled twice without a lookup in between
    occupies two ways (the golden model alike); a lookup then hits the
    lower one.

    Segment ids: ``idx_bits(SEGS)`` bits; an id ``>= SEGS`` (when ``SEGS`` is
    not a power of two) is a valid key, and a ``kill_seg >= SEGS`` kills the
    entries of that id like any other (a plain equality compare; the golden
    ``invalidate_segment`` alike). There is no invalid input.

    Latency: a lookup's reply 1 cycle after it is issued, one lookup per
    cycle sustained; a fill or invalidation takes effect for the lookups of
    its own cycle on. ``hits`` and ``misses`` (``COUNT_BITS = 32`` bits,
    wrapping) count the lookups replied to before the current cycle.

    Implementation (decision 0016 §2, §4): ``valid``, the segment id and the
    PLRU bits are flip-flops (reset clears ``valid`` and the PLRU; nothing
    is swept), so that a kill clears every matching entry in one cycle (per
    entry one equality compare of its segment id with ``kill_seg``) and a
    fill finds its way at once. The ``pos`` tag, a copy of the segment id, ``loc`` and ``addr``
    are one ``amaranth.lib.memory.Memory`` of ``SETS`` words of ``WAYS``
    entries (written per way by a fill, the only writer of a segment id;
    one synchronous read port, transparent to the write port so that a fill
    reaches a lookup of the same cycle). In its issue cycle a lookup reads
    its set's word and registers its set's ``valid`` bits from the flops,
    with the way that cycle's fill writes there, the set invalidation and
    the kill; in the reply cycle each way takes those into account (the
    invalidation and the kill by the word's segment, which is the fill's
    for the filled way: the read is transparent), compares the word's tag
    and segment with the key, and the
    lowest hit selects ``loc`` and ``addr``: no path of the reply cycle
    grows with ``SETS``. The fill's victim should each way hit is computed
    beside the lookup and selected with the hit (the PLRU update forwarded
    without a chain through it). Design notes:
    ``docs/blocks/kvpool_leaves.md``.

    Parameters
    ----------
    SETS : int
        Sets, a power of two in ``1 .. 65536`` (default 1024; SPEC §4.9
        ``TLB_SETS``).
    WAYS : int
        Ways per set, a power of two in ``1 .. 8`` (default 4; ``TLB_WAYS``).
    SEGS : int
        Segments (segment ids are ``idx_bits(SEGS)`` bits, as ``kill_seg``),
        ``2 .. 1024`` (default 256).
    POS_BITS : int
        Bits of a position, ``1 .. 20`` (default 17).
    ADDR_BITS : int
        Bits of a PTE's address (a page or an HBM slot), ``1 .. 23`` (default 21).

    Members
    -------
    lk_valid : In(1)
        A lookup of ``lk`` this cycle.
    lk : In(key_layout(SEGS, POS_BITS))
        Its key.
    rsp_valid : Out(1)
        The lookup of the previous cycle's reply is on ``rsp``.
    rsp : Out(reply_layout(ADDR_BITS))
        ``hit``, ``loc``, ``addr`` (all 0 unless ``rsp_valid``).
    fill_valid : In(1)
        A fill of ``fill`` this cycle.
    fill : In(fill_layout(SEGS, POS_BITS, ADDR_BITS))
        Key, ``loc`` and ``addr`` written.
    inv_valid : In(1)
        Invalidate the set of ``inv``, the ways of segment ``inv.seg``.
    inv : In(key_layout(SEGS, POS_BITS))
        Its key.
    kill_valid : In(1)
        Invalidate every entry of segment ``kill_seg`` this cycle.
    kill_seg : In(idx_bits(SEGS))
        Its segment id.
    hits, misses : Out(32)
        Lookups replied to that hit / missed, since reset (modulo 2**32).

    Raises
    ------
    ValueError
        A parameter out of range or not an integer (naming it), or ``SETS`` /
        ``WAYS`` not a power of two.
    """

    #: the block's parameters (:class:`hw.common.Param`: default, range, small value)
    PARAMS = {
        "SETS": Param(default=1024, lo=1, hi=65536, small=2),
        "WAYS": Param(default=4, lo=1, hi=8, small=2),
        "SEGS": Param(default=256, lo=2, hi=1024, small=2),
        "POS_BITS": Param(default=17, lo=1, hi=20, small=5),
        "ADDR_BITS": Param(default=21, lo=1, hi=23, small=2),
    }
    #: parameters that must be powers of two
    POWERS_OF_TWO = ("SETS", "WAYS")

    def __init__(
        self,
        *,
        SETS: int = PARAMS["SETS"].default,
        WAYS: int = PARAMS["WAYS"].default,
        SEGS: int = PARAMS["SEGS"].default,
        POS_BITS: int = PARAMS["POS_BITS"].default,
        ADDR_BITS: int = PARAMS["ADDR_BITS"].default,
    ) -> None:
        given = {"SETS": SETS, "WAYS": WAYS, "SEGS": SEGS, "POS_BITS": POS_BITS}
        given["ADDR_BITS"] = ADDR_BITS
        p = check_params(self.PARAMS, given, powers_of_two=self.POWERS_OF_TWO)
        self.SETS, self.WAYS, self.SEGS = p["SETS"], p["WAYS"], p["SEGS"]
        self.POS_BITS, self.ADDR_BITS = p["POS_BITS"], p["ADDR_BITS"]
        key = key_layout(self.SEGS, self.POS_BITS)
        super().__init__(
            {
                "lk_valid": In(1),
                "lk": In(key),
                "rsp_valid": Out(1),
                "rsp": Out(reply_layout(self.ADDR_BITS)),
                "fill_valid": In(1),
                "fill": In(fill_layout(self.SEGS, self.POS_BITS, self.ADDR_BITS)),
                "inv_valid": In(1),
                "inv": In(key),
                "kill_valid": In(1),
                "kill_seg": In(idx_bits(self.SEGS)),
                "hits": Out(COUNT_BITS),
                "misses": Out(COUNT_BITS),
            }
        )

    def elaborate(self, platform) -> Module:
        m = Module()
        S, W = self.SETS, self.WAYS
        gb = idx_bits(self.SEGS)
        ew = self.POS_BITS + gb + 1 + self.ADDR_BITS  # one way's word: pos, seg, loc, addr

        # state: flops (valid, segment, PLRU) and the memory (pos, a copy of seg, loc, addr)
        st = _State(
            valid=[Signal(W, name=f"valid_{s}") for s in range(S)],
            seg=[[Signal(gb, name=f"seg_{s}_{w}") for w in range(W)] for s in range(S)],
            plru=[Signal(max(1, W - 1), name=f"plru_{s}") for s in range(S)],
        )
        m.submodules.mem = mem = memory.Memory(shape=W * ew, depth=S, init=[])
        wr = mem.write_port(granularity=ew)
        rd = mem.read_port(transparent_for=(wr,))

        f_idx = net(m, set_index(self.fill.seg, self.fill.pos, S), "fill_idx")
        i_idx = net(m, set_index(self.inv.seg, self.inv.pos, S), "inv_idx")
        lk_idx = net(m, set_index(self.lk.seg, self.lk.pos, S), "lk_idx")

        # the fill's victim: of its set's PLRU, or, when this cycle's lookup reply hit
        # that set, of the PLRU after the hit (one candidate per way, chosen with the hit)
        old = net(m, mux_tree(st.plru, f_idx), "fill_plru")
        n = len(old)
        after = [
            plru_victim((old | Const(on, n)) & ~Const(off, n), W) for on, off in _touch_consts(W)
        ]
        r = _Issued(
            valid=Signal(name="lk_r_valid"),
            key=Signal.like(self.lk, name="lk_r_key"),
            idx=Signal(len(lk_idx), name="lk_r_idx"),
            row=Signal(W, name="lk_r_row"),
            filled=Signal(W, name="lk_r_filled"),
            inv=Signal(name="lk_r_inv"),
            inv_seg=Signal(gb, name="lk_r_inv_seg"),
            kill=Signal(name="lk_r_kill"),
            kill_seg=Signal(gb, name="lk_r_kill_seg"),
        )
        hit, hit_way, hit_victim = self._reply(m, rd, r, after)
        lk_on, lk_off = plru_masks(hit_way, W)
        same_set = net(m, r.idx == f_idx, "fill_lk_same_set")
        victim = net(
            m, Mux(hit & same_set, hit_victim, plru_victim(old, W)), "fill_victim", keep=True
        )
        fill_way = self._fill(m, st, wr, f_idx, victim)
        fl_on, fl_off = plru_masks(fill_way, W)

        # the lookup's issue cycle: its set's word and valid bits; this cycle's fill,
        # set invalidation and kill, applied in the reply cycle by the word's segments
        m.d.comb += rd.addr.eq(lk_idx)
        m.d.sync += [
            r.valid.eq(self.lk_valid),
            r.key.eq(self.lk),
            r.idx.eq(lk_idx),
            r.row.eq(mux_tree(st.valid, lk_idx)),
            r.filled.eq(Mux(self.fill_valid & (f_idx == lk_idx), Const(1, W) << fill_way, 0)),
            r.inv.eq(self.inv_valid & (i_idx == lk_idx)),
            r.inv_seg.eq(self.inv.seg),
            r.kill.eq(self.kill_valid),
            r.kill_seg.eq(self.kill_seg),
        ]

        # the filled entry's invalidation in its own cycle: by the set invalidation (its
        # set and segment) or by the kill (its segment)
        inv_fill = self.inv_valid & (i_idx == f_idx)
        f_killed = self.kill_valid & (self.fill.seg == self.kill_seg)
        c = _Nets(
            hit=hit,
            r_idx=r.idx,
            lk_on=lk_on,
            lk_off=lk_off,
            f_idx=f_idx,
            fill_1h=net(m, Const(1, W) << fill_way, "fill_way_1h"),
            fl_on=fl_on,
            fl_off=fl_off,
            i_idx=i_idx,
            f_gone=net(m, (inv_fill & (self.fill.seg == self.inv.seg)) | f_killed, "fill_gone"),
        )
        for s in range(S):
            self._set_next(m, s, st, c)
        return m

    def _reply(self, m: Module, rd, r: "_Issued", after: list[Value]) -> tuple[Value, Value, Value]:
        """The lookup's reply cycle: each way's ``valid`` (the issue cycle's, or 1 for the
        filled way, cleared by its set invalidation and its kill by the word's segment),
        tag and segment compared, the lowest hit's ``loc`` / ``addr`` replied, the
        counters. ``after[w]``: the fill's victim should way ``w`` hit. Returns
        ``(hit, the hit way, after[hit way])``."""
        W = self.WAYS
        wb = max(1, exact_log2(W))
        gb = idx_bits(self.SEGS)
        pb, ab = self.POS_BITS, self.ADDR_BITS
        ew = pb + gb + 1 + ab
        match = []
        payload = []
        for w in range(W):
            word = rd.data[w * ew : (w + 1) * ew]
            seg = word[pb : pb + gb]
            gone = (r.inv & (seg == r.inv_seg)) | (r.kill & (seg == r.kill_seg))
            valid = (r.filled[w] | r.row[w]) & ~gone
            match.append(valid & (seg == r.key.seg) & (word[:pb] == r.key.pos))
            payload.append(Cat(word[pb + gb :], Const(w, wb), after[w]))
        any_hit, sel = priority_tree(m, Cat(match), payload, highest=False, name="lk_hit")
        hit = net(m, r.valid & any_hit, "lk_hit", keep=True)
        m.d.comb += [
            self.rsp_valid.eq(r.valid),
            self.rsp.hit.eq(hit),
            self.rsp.loc.eq(Mux(hit, sel[0], 0)),
            self.rsp.addr.eq(Mux(hit, sel[1 : 1 + ab], 0)),
        ]
        with m.If(hit):
            m.d.sync += self.hits.eq(_inc(m, self.hits, "hits_inc"))
        with m.If(r.valid & ~any_hit):
            m.d.sync += self.misses.eq(_inc(m, self.misses, "misses_inc"))
        hit_way = net(m, sel[1 + ab : 1 + ab + wb], "lk_hit_way")
        return hit, hit_way, net(m, sel[1 + ab + wb :], "lk_hit_victim")

    def _fill(self, m: Module, st: "_State", wr, f_idx: Value, victim: Value) -> Value:
        """The fill's way (the lowest invalid one of set ``f_idx``, else ``victim``) and
        the memory write; returns the way."""
        W = self.WAYS
        wb = max(1, exact_log2(W))
        f = self.fill
        f_valid = net(m, mux_tree(st.valid, f_idx), "fill_row_valid")
        any_inv, low_inv = priority_tree(
            m, ~f_valid, [Const(w, wb) for w in range(W)], highest=False, name="fill_inv"
        )
        way = net(m, Mux(any_inv, low_inv, victim), "fill_way")
        m.d.comb += [
            wr.addr.eq(f_idx),
            wr.data.eq(Cat(*[Cat(f.pos, f.seg, f.loc, f.addr)] * W)),
            wr.en.eq(Mux(self.fill_valid, Const(1, W) << way, 0)),
        ]
        return way

    def _set_next(self, m: Module, s: int, st: "_State", c: "_Nets") -> None:
        """Set ``s``'s next state: PLRU touched by the lookup, then the fill; each way
        filled, then invalidated (its segment compared with ``inv.seg`` and ``kill_seg``)."""
        valid, seg, plru = st.valid[s], st.seg[s], st.plru[s]
        here_f = net(m, self.fill_valid & (c.f_idx == s), f"fill_here_{s}")
        here_i = net(m, self.inv_valid & (c.i_idx == s), f"inv_here_{s}")
        if self.WAYS > 1:
            b1 = Mux(c.hit & (c.r_idx == s), (plru | c.lk_on) & ~c.lk_off, plru)
            m.d.sync += plru.eq(Mux(here_f, (b1 | c.fl_on) & ~c.fl_off, b1))
        nxt = []
        for w in range(self.WAYS):
            filled = here_f & c.fill_1h[w]
            # both outcomes ready before the fill's way is known (the late signal)
            killed = self.kill_valid & (seg[w] == self.kill_seg)
            kept = valid[w] & ~(here_i & (seg[w] == self.inv.seg)) & ~killed
            nxt.append(Mux(filled, ~c.f_gone, kept))
            with m.If(filled):
                m.d.sync += seg[w].eq(self.fill.seg)
        m.d.sync += valid.eq(Cat(nxt))


@dataclass
class _State:
    """The flip-flops: per set ``valid`` (a bit per way), segment ids, PLRU bits."""

    valid: list[Signal]
    seg: list[list[Signal]]
    plru: list[Signal]


@dataclass
class _Issued:
    """The lookup's registers, from its issue cycle to its reply: valid, key, set,
    the set's ``valid`` bits, the way that cycle's fill wrote there (one-hot), the set
    invalidation and its segment, the kill and its segment."""

    valid: Signal
    key: Signal
    idx: Signal
    row: Signal
    filled: Signal
    inv: Signal
    inv_seg: Signal
    kill: Signal
    kill_seg: Signal


@dataclass
class _Nets:
    """What every set's update reads: the lookup's hit, set and PLRU masks; the fill's
    set, way (one-hot) and masks; the set invalidation's set and whether the filled
    entry is invalidated in its own cycle (by the set invalidation or the kill)."""

    hit: Value
    r_idx: Value
    lk_on: Value
    lk_off: Value
    f_idx: Value
    fill_1h: Value
    fl_on: Value
    fl_off: Value
    i_idx: Value
    f_gone: Value
