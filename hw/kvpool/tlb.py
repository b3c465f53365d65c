"""One lookup port's TLB (SPEC §4.6 *TLB*): set-associative, tree-PLRU, segment generations."""

from dataclasses import dataclass

from amaranth import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import data, memory, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from hw.common import (
    Param,
    check_params,
    idx_bits,
    mux_tree,
    net,
    prefix_inc,
    priority_tree,
)

__all__ = [
    "TLB",
    "COUNT_BITS",
    "key_layout",
    "fill_layout",
    "entry_layout",
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


def entry_layout(segs: int, pos_bits: int, gen_bits: int, addr_bits: int) -> data.StructLayout:
    """One way's memory word: ``pos``, ``seg``, ``gen`` (the segment's generation
    when written), ``loc``, ``addr``, in this order from bit 0."""
    return data.StructLayout(
        {"pos": pos_bits, "seg": idx_bits(segs), "gen": gen_bits, "loc": 1, "addr": addr_bits}
    )


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


def _masks(m: Module, way: Value, ways: int, name: str) -> tuple[Value, Value]:
    """:func:`plru_masks` as nets ``(set, keep)`` (``<name>_on``, ``<name>_keep``):
    an access to ``way`` makes the bits ``(bits | set) & keep``."""
    on, off = plru_masks(way, ways)
    return net(m, on, f"{name}_on"), net(m, ~off, f"{name}_keep")


class TLB(wiring.Component):
    """One lookup port's TLB: ``(segment, pos) -> (loc, addr)``, ``SETS x WAYS``, tree-PLRU.

    SPEC §4.6 *TLB*, bit-exact with ``golden.kvpool.tlb.PortTLB(SETS, WAYS,
    GEN_BITS)``: set ``(pos XOR (segment << 4)) mod SETS``. Per entry a
    ``valid`` flag; per segment id a generation ``gen`` (``GEN_BITS`` bits, 0
    after reset); an entry stores its segment's generation when it is written
    and is *live* when it is valid and that generation is its segment's
    current one. A lookup hits when a live way holds the key (the lowest such
    way) and updates the set's tree-PLRU; a fill writes the lowest way whose
    ``valid`` flag is 0 (an entry of an older generation is valid: it
    occupies its way), else the tree-PLRU victim, and updates the PLRU as a
    hit on that way. Invalidations leave the PLRU bits as they are.
    Tree-PLRU in heap order (``WAYS - 1`` bits per set, 0 after reset: the
    first victim of a full set is way 0), as ``golden.kvpool.tlb`` states.

    Operations (each may be issued in every cycle, all four in one cycle):

    * **lookup** (``lk_valid``, ``lk``): the reply ``rsp`` (``hit``, and the
      entry's ``loc`` and ``addr``, both 0 on a miss) is shown in the next
      cycle, with ``rsp_valid``; ``hits`` or ``misses`` counts it.
    * **fill** (``fill_valid``, ``fill``): write the key, the PTE and
      ``gen[fill.seg]``.
    * **invalidate a set** (``inv_valid``, ``inv``): clear ``valid`` of every
      way of the set of ``(inv.seg, inv.pos)``, whatever segment it holds (a
      spill or fill of that position).
    * **invalidate a segment** (``kill_valid``, ``kill_seg``): ``gen[kill_seg]
      += 1`` modulo ``2**GEN_BITS`` (a segment that died or was split: its
      entries are no longer live); one segment per cycle. When the
      generation wraps to 0, every ``valid`` flag is cleared in that cycle
      (a flush), so that an entry of an old generation never becomes live
      again: from its write to a generation equal to its own, its segment
      takes ``2**GEN_BITS`` kills, one of which wraps.

    **Order within a cycle**: the operations issued in one cycle take effect
    as if performed in the order *fill, invalidate a set, invalidate
    a segment, lookup*, after every operation of the cycles before. So a
    lookup sees a fill and invalidations issued in its own cycle (a fill
    of ``kill_seg`` in the kill's cycle stores the generation before the
    kill: it is not live; a flush clears it), and a fill issued in the
    cycle after a lookup chooses its victim with the PLRU as that lookup
    left it. The golden model's order is the same: ``fill``,
    ``invalidate_set``, ``invalidate_segment(kill_seg)`` (when
    ``kill_valid``), ``lookup``, per cycle. A key filled twice without a
    lookup in between occupies two ways (the golden model alike); a lookup
    then hits the lower one.

    Segment ids: ``idx_bits(SEGS)`` bits; every id has a generation, so an
    id ``>= SEGS`` (when ``SEGS`` is not a power of two) is a valid key and
    a ``kill_seg >= SEGS`` kills that id like any other (the golden model
    alike). There is no invalid input.

    Latency: a lookup's reply 1 cycle after it is issued, one lookup per
    cycle sustained; a fill or invalidation takes effect for the lookups of
    its own cycle on. ``hits`` and ``misses`` (``COUNT_BITS = 32`` bits,
    wrapping) count the lookups replied to before the current cycle.

    Implementation (decision 0017): flip-flops hold ``valid`` (``SETS x
    WAYS``), the PLRU bits (``SETS x (WAYS - 1)``) and the generations
    (``2**idx_bits(SEGS) x GEN_BITS``); reset clears them (nothing is swept).
    Each way's ``pos``, segment id, generation, ``loc`` and ``addr``
    (:func:`entry_layout`) are in one ``amaranth.lib.memory.Memory`` of
    ``SETS`` words of ``WAYS`` entries (written per way by a fill; one
    synchronous read port, transparent to the write port so that a fill
    reaches a lookup of the same cycle). A kill reads and increments one
    generation; a set invalidation clears one set's ``valid`` flops. In its
    issue cycle a lookup reads its set's word and registers its set's
    ``valid`` bits from the flops, with the way that cycle's fill writes
    there and cleared by that cycle's set invalidation or flush, and the
    generation of the key's segment after that cycle's kill (a way matches
    only if it holds the key's segment, so that is the only generation a
    match needs); in the reply cycle each way compares the word's tag,
    segment and generation with those, and the lowest hit selects ``loc``
    and ``addr``: no path of the reply cycle grows with ``SETS`` or
    ``SEGS``. The fill's victim should each way hit is computed beside the
    lookup and selected with the hit (the PLRU update forwarded without a
    chain through it). Design notes: ``docs/blocks/kvpool_leaves.md``.

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
    GEN_BITS : int
        Bits of a segment's generation, ``1 .. 16`` (default 8): a segment's
        ``2**GEN_BITS``-th kill flushes the TLB.

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
        Invalidate every way of the set of ``inv``.
    inv : In(key_layout(SEGS, POS_BITS))
        Its key.
    kill_valid : In(1)
        Invalidate every entry of segment ``kill_seg`` this cycle (its
        generation incremented; a flush when it wraps).
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
        "GEN_BITS": Param(default=8, lo=1, hi=16, small=2),
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
        GEN_BITS: int = PARAMS["GEN_BITS"].default,
    ) -> None:
        given = {"SETS": SETS, "WAYS": WAYS, "SEGS": SEGS, "POS_BITS": POS_BITS}
        given |= {"ADDR_BITS": ADDR_BITS, "GEN_BITS": GEN_BITS}
        p = check_params(self.PARAMS, given, powers_of_two=self.POWERS_OF_TWO)
        self.SETS, self.WAYS, self.SEGS = p["SETS"], p["WAYS"], p["SEGS"]
        self.POS_BITS, self.ADDR_BITS, self.GEN_BITS = p["POS_BITS"], p["ADDR_BITS"], p["GEN_BITS"]
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

    def _entry(self) -> data.StructLayout:
        return entry_layout(self.SEGS, self.POS_BITS, self.GEN_BITS, self.ADDR_BITS)

    def elaborate(self, platform) -> Module:
        m = Module()
        S, W = self.SETS, self.WAYS
        gb = idx_bits(self.SEGS)
        ew = self._entry().size

        # state: flops (valid, PLRU, generations) and the memory (one entry per way)
        st = _State(
            valid=[Signal(W, name=f"valid_{s}") for s in range(S)],
            plru=[Signal(max(1, W - 1), name=f"plru_{s}") for s in range(S)],
            gen=[Signal(self.GEN_BITS, name=f"gen_{g}") for g in range(1 << gb)],
        )
        m.submodules.mem = mem = memory.Memory(shape=W * ew, depth=S, init=[])
        wr = mem.write_port(granularity=ew)
        rd = mem.read_port(transparent_for=(wr,))

        f_idx = net(m, set_index(self.fill.seg, self.fill.pos, S), "fill_idx")
        i_idx = net(m, set_index(self.inv.seg, self.inv.pos, S), "inv_idx")
        lk_idx = net(m, set_index(self.lk.seg, self.lk.pos, S), "lk_idx")
        flush, lk_gen = self._kill(m, st)

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
            gen=Signal(self.GEN_BITS, name="lk_r_gen"),
        )
        hit, hit_way, hit_victim = self._reply(m, rd, r, after)
        lk_on, lk_keep = _masks(m, hit_way, W, "lk_plru")
        same_set = net(m, r.idx == f_idx, "fill_lk_same_set")
        victim = net(
            m, Mux(hit & same_set, hit_victim, plru_victim(old, W)), "fill_victim", keep=True
        )
        fill_way = self._fill(m, st, wr, f_idx, victim)
        fl_on, fl_keep = _masks(m, fill_way, W, "fill_plru")
        fill_1h = net(m, (Const(1, W) << fill_way)[:W], "fill_way_1h")

        # the lookup's issue cycle: its set's word; its set's valid bits with this cycle's
        # fill, set invalidation and flush applied; its segment's generation after the kill
        m.d.comb += rd.addr.eq(lk_idx)
        row = mux_tree(st.valid, lk_idx) | Mux(self.fill_valid & (f_idx == lk_idx), fill_1h, 0)
        m.d.sync += [
            r.valid.eq(self.lk_valid),
            r.key.eq(self.lk),
            r.idx.eq(lk_idx),
            r.row.eq(Mux((self.inv_valid & (i_idx == lk_idx)) | flush, 0, row)),
            r.gen.eq(lk_gen),
        ]

        c = _Nets(
            hit=hit,
            r_idx=r.idx,
            lk_on=lk_on,
            lk_keep=lk_keep,
            f_idx=f_idx,
            fill_1h=fill_1h,
            fl_on=fl_on,
            fl_keep=fl_keep,
            i_idx=i_idx,
            flush=flush,
        )
        for s in range(S):
            self._set_next(m, s, st, c)
        return m

    def _kill(self, m: Module, st: "_State") -> tuple[Value, Value]:
        """The kill: ``gen[kill_seg]`` incremented. Returns the flush (it wraps to 0)
        and ``gen[lk.seg]`` after this cycle's kill."""
        old = net(m, mux_tree(st.gen, self.kill_seg), "kill_gen")
        new = prefix_inc(m, old, "kill_gen_inc")
        for g, sig in enumerate(st.gen):
            with m.If(self.kill_valid & (self.kill_seg == g)):
                m.d.sync += sig.eq(new)
        lk_gen = mux_tree(st.gen, self.lk.seg)
        lk_killed = self.kill_valid & (self.kill_seg == self.lk.seg)
        flush = net(m, self.kill_valid & old.all(), "flush", keep=True)
        return flush, net(m, Mux(lk_killed, new, lk_gen), "lk_gen")

    def _reply(self, m: Module, rd, r: "_Issued", after: list[Value]) -> tuple[Value, Value, Value]:
        """The lookup's reply cycle: each way's registered ``valid`` bit, its word's
        segment, tag and generation compared with the key and the key's segment's
        generation (a way of another segment does not match whatever its
        generation), the lowest match's ``loc`` / ``addr`` replied, the counters.
        ``after[w]``: the fill's victim should way ``w`` hit. Returns ``(hit, the hit
        way, after[hit way])``."""
        W = self.WAYS
        wb = max(1, exact_log2(W))
        layout = self._entry()
        ew, ab = layout.size, self.ADDR_BITS
        match = []
        payload = []
        for w in range(W):
            e = data.View(layout, rd.data[w * ew : (w + 1) * ew])
            key = (e.seg == r.key.seg) & (e.pos == r.key.pos)
            match.append(r.row[w] & key & (e.gen == r.gen))
            payload.append(Cat(e.loc, e.addr, Const(w, wb), after[w]))
        any_hit, sel = priority_tree(m, Cat(match), payload, highest=False, name="lk_hit")
        hit = net(m, r.valid & any_hit, "lk_hit", keep=True)
        m.d.comb += [
            self.rsp_valid.eq(r.valid),
            self.rsp.hit.eq(hit),
            self.rsp.loc.eq(Mux(hit, sel[0], 0)),
            self.rsp.addr.eq(Mux(hit, sel[1 : 1 + ab], 0)),
        ]
        hits_inc = prefix_inc(m, self.hits, "hits_inc")  # outside the Ifs: unconditional
        misses_inc = prefix_inc(m, self.misses, "misses_inc")
        with m.If(hit):
            m.d.sync += self.hits.eq(hits_inc)
        with m.If(r.valid & ~any_hit):
            m.d.sync += self.misses.eq(misses_inc)
        hit_way = net(m, sel[1 + ab : 1 + ab + wb], "lk_hit_way")
        return hit, hit_way, net(m, sel[1 + ab + wb :], "lk_hit_victim")

    def _fill(self, m: Module, st: "_State", wr, f_idx: Value, victim: Value) -> Value:
        """The fill's way (the lowest of set ``f_idx`` whose ``valid`` flop is 0, else
        ``victim``) and the memory write (with ``gen[fill.seg]``); returns the way."""
        W = self.WAYS
        wb = max(1, exact_log2(W))
        f = self.fill
        f_valid = net(m, mux_tree(st.valid, f_idx), "fill_row_valid")
        any_inv, low_inv = priority_tree(
            m, ~f_valid, [Const(w, wb) for w in range(W)], highest=False, name="fill_inv"
        )
        way = net(m, Mux(any_inv, low_inv, victim), "fill_way")
        gen = net(m, mux_tree(st.gen, f.seg), "fill_gen")
        m.d.comb += [
            wr.addr.eq(f_idx),
            wr.data.eq(Cat(*[Cat(f.pos, f.seg, gen, f.loc, f.addr)] * W)),
            wr.en.eq(Mux(self.fill_valid, (Const(1, W) << way)[:W], 0)),
        ]
        return way

    def _set_next(self, m: Module, s: int, st: "_State", c: "_Nets") -> None:
        """Set ``s``'s next state: PLRU touched by the lookup, then the fill; ``valid``
        set by the fill, then cleared whole by the set invalidation or a flush."""
        valid, plru = st.valid[s], st.plru[s]
        here_f = net(m, self.fill_valid & (c.f_idx == s), f"fill_here_{s}")
        here_i = self.inv_valid & (c.i_idx == s)
        if self.WAYS > 1:
            hit_here = c.hit & (c.r_idx == s)
            b1 = net(m, Mux(hit_here, (plru | c.lk_on) & c.lk_keep, plru), f"plru_hit_{s}")
            m.d.sync += plru.eq(Mux(here_f, (b1 | c.fl_on) & c.fl_keep, b1))
        m.d.sync += valid.eq(Mux(here_i | c.flush, 0, valid | Mux(here_f, c.fill_1h, 0)))


@dataclass
class _State:
    """The flip-flops: per set ``valid`` (a bit per way) and PLRU bits; per segment id
    its generation."""

    valid: list[Signal]
    plru: list[Signal]
    gen: list[Signal]


@dataclass
class _Issued:
    """The lookup's registers, from its issue cycle to its reply: valid, key, set, the
    set's ``valid`` bits after that cycle's fill, set invalidation and flush, and the
    key's segment's generation after that cycle's kill."""

    valid: Signal
    key: Signal
    idx: Signal
    row: Signal
    gen: Signal


@dataclass
class _Nets:
    """What every set's update reads: the lookup's hit, set and PLRU masks; the fill's
    set, way (one-hot) and masks; the set invalidation's set; the flush."""

    hit: Value
    r_idx: Value
    lk_on: Value
    lk_keep: Value
    f_idx: Value
    fill_1h: Value
    fl_on: Value
    fl_keep: Value
    i_idx: Value
    flush: Value
