"""Tree slots of the scaled pool (SPEC §4.5, §4.6; decision 0016 §5): the speculative entries."""

from dataclasses import dataclass

from amaranth import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import memory, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import bits_for

from hw.common import (
    Param,
    check_params,
    idx_bits,
    mux_tree,
    net,
    or_tree,
    prefix_add,
    prefix_or_below,
    zext,
)
from hw.kvpool.treeslots_layouts import (
    LATENCY,
    TsCmd,
    TsOut,
    cmd_layout,
    lookup_layout,
    node_word_layout,
    out_layout,
    reply_layout,
)

__all__ = [
    "TreeSlots",
    "TsCmd",
    "TsOut",
    "LATENCY",
    "cmd_layout",
    "out_layout",
    "lookup_layout",
    "reply_layout",
    "node_word_layout",
]


def lowest(m: Module, vec: Value, name: str) -> tuple[Signal, Signal, Signal]:
    """``(any, index, rest)``: the lowest set bit of ``vec`` and ``vec`` without it.

    A radix-4 prefix OR (:func:`hw.common.prefix_or_below`), the one-hot
    lowest bit, and each index bit an OR tree of the one-hot bits whose
    index has it: ``O(log n)`` levels, no ``n``-long chain (about 20 gate
    levels at 1,024 bits).
    """
    n = len(vec)
    vec = net(m, vec, f"{name}_vec")
    below = prefix_or_below(m, vec, f"{name}_below", radix=4)
    one = net(m, vec & ~below, f"{name}_one")
    nb = idx_bits(n)
    idx = Cat(or_tree([one[k] for k in range(n) if k >> b & 1]) for b in range(nb))
    return (
        net(m, or_tree(vec), f"{name}_any"),
        net(m, idx, f"{name}_idx"),
        net(m, vec & below, f"{name}_rest"),
    )


def _decode(m: Module, v: Value, n: int, name: str) -> Signal:
    """``n`` bits, bit ``k`` set iff ``v == k`` (a net: an expression sliced bit by bit
    is written out once per slice)."""
    return net(m, Cat(v == k for k in range(n)), name)


def _kept_any(m: Module, v: Value, name: str) -> Signal:
    """``v != 0`` as an OR tree, the result a kept net ``name``."""
    return net(m, or_tree(net(m, v, f"{name}_and")), name, keep=True)


def _bit(m: Module, vec: Value, idx: Value, name: str) -> Value:
    """``vec[idx]`` (0 if ``idx >= len(vec)``) as a decode, AND and OR tree."""
    return or_tree(net(m, vec & _decode(m, idx, len(vec), f"{name}_dec"), f"{name}_and"))


class _PortSignature(wiring.Signature):
    """The component's signature, whose :meth:`flatten` leaves out constant members.

    An ``always_ready`` stream's ``ready`` is ``Const(1)``; Amaranth 0.5's
    ``verilog.convert`` takes every flattened member as a port and refuses a
    constant (the same work-around as ``hw.kvpool.blocktable``'s).
    """

    def flatten(self, obj):  # noqa: ANN001, ANN201 (wiring.Signature's own signature)
        for path, member, value in super().flatten(obj):
            if not isinstance(value, Const):
                yield path, member, value


class TreeSlots(wiring.Component):
    """``TREES`` tree slots: the speculative entries of the trees in flight.

    Bit-exact with ``golden.kvpool.trees.Tree`` / ``Trees`` as
    ``golden.kvpool.pool`` uses them (speculative insert, the speculative
    part of a lookup, commit, release). A slot ``r`` holds ``active``,
    ``seq``, the window start ``lo``, an ``N_NODES``-bit ``valid`` mask and
    a ``MAX_DEPTH``-bit ``rows`` mask (the level rows written since the slot
    was opened), in flip-flops; per node its word ``{depth = pos - lo, page,
    token}`` (node table) and per depth ``d`` the level row of the nodes at
    ``lo + d`` (level masks) in memories. A level row whose ``rows`` bit is
    clear reads as empty, so opening a slot clears two flop masks only.

    Commands (``cmd``, a valid/ready stream), each taking effect at the end
    of its cycle. OPEN and ADD are taken in every cycle, also while a COMMIT /
    RELEASE streams (``cmd.ready`` high for them); COMMIT and RELEASE only
    when not ``busy`` (``cmd.ready = ~busy`` for them):

    * **OPEN** (``slot``, ``seq``, ``pos``): the slot becomes active with
      ``seq`` and ``lo = pos``, ``valid``, ``rows`` and the node count
      cleared. The pool passes ``free_slot``; opening an active slot reopens
      it empty.
    * **ADD** (``slot``, ``node``, ``pos``, ``page``, ``token``): ``valid[node]
      = 1``, the node word ``{pos - lo, page, token}``, level row ``pos - lo``
      gets bit ``node``, the slot's node count ``+ 1`` (if the node was not
      valid). One per cycle, back to back, any rows (two ADDs to one row in
      consecutive cycles, an ADD in the cycle after its OPEN).
    * **COMMIT** (``slot``, ``accept``, ``d0``): streams on ``out`` the
      accepted path, then the rejected nodes, then an END beat, and closes the
      slot. Accepted path: for ``d = d0, d0 + 1, ...`` while ``d < MAX_DEPTH``
      and row ``d`` holds a node of ``valid & accept``, a beat ``{ACC, node,
      page, token}`` of the lowest such node; it stops at the first row with
      none. Then ``{REJ, node, page}`` for every node of ``valid & ~accept`` in
      increasing node number; then ``{END}``.
    * **RELEASE** (``slot``): as COMMIT with ``accept = 0`` and no accepted
      path: a REJ beat per valid node in node order, END, the slot closed.

    Stream: **every COMMIT / RELEASE ends with an END beat** (also when
    nothing else is streamed; no ``last`` flag). Unused fields are 0 (REJ:
    ``token``; END: ``node``, ``page``, ``token``). Cycle cost: accepted in
    cycle ``t``, ``busy`` (no COMMIT / RELEASE taken) from ``t + 1``; ``out.valid``
    from ``t + 2`` and then high in every cycle until the END beat is taken,
    a new beat in the cycle after each transfer: with ``out.ready`` high,
    beat ``i`` (of ``k`` ACC, ``r`` REJ and the END) is in cycle ``t + 2 +
    i``, the END in ``t + 2 + k + r``. The slot closes (``active`` low,
    ``busy`` low) at the end of the END beat's transfer cycle.

    Lookups (``lk<k>``, ``k < PORTS``, one per cycle each, no backpressure):
    the reply ``lk<k>_rsp`` is valid exactly ``LATENCY = 2`` cycles after
    the query. ``hit`` = the slot was active at issue, ``lo <= pos < lo +
    MAX_DEPTH``, row ``pos - lo`` was written since the slot was opened, and
    ``row & valid & view != 0``; then ``page`` is the page of the lowest such
    node, else ``hit = 0, page = 0``. A lookup sees the state before the
    command of its own cycle (and before an END transfer of its cycle): after
    every command of the cycles before.

    Status (combinational from flip-flops): ``active``, ``draining`` (the
    slot being streamed, one-hot, 0 when not ``busy``; it stays active until
    its END transfer), ``free_slot`` (the lowest inactive slot, 0 when none),
    ``has_free``, ``slot_seq`` and ``slot_lo`` (the values of the slot's last
    OPEN, 0 after reset), ``slot_count`` (its valid nodes); the queries
    ``chk_valid``, ``chk2_valid`` (two independent ones: no select between
    two operands before a query) and ``chk_any`` (combinational from the
    inputs; 0 for a slot ``>= TREES``). No popcount of ``N_NODES`` bits is
    built (about 44 gate levels at 512 nodes): a COMMIT's accepted-path
    length comes with the pool's commit (decision 0020).

    Invalid input (the pool never gives it): a slot ``>= TREES`` (when
    ``TREES`` is not a power of two): OPEN / ADD ignored, COMMIT / RELEASE
    stream END only, lookups miss; an OPEN or ADD of the slot being streamed
    is taken and ignored; an ADD outside the window is dropped; an ADD
    of a valid node or to an inactive slot writes as any ADD (the node word
    and level row of the old node keep their bits: the same node in two rows
    hits in both); a COMMIT / RELEASE of an inactive slot streams END only.
    Lookups of the slot being streamed see its tree until the END transfer.

    Implementation: the level masks are a memory of ``TREES x 2**ceil(log2
    (MAX_DEPTH))`` rows of ``N_NODES`` bits with a **bit-masked write port**
    (granularity 1): an ADD writes bit ``node`` only, or, when the row's
    ``rows`` bit is clear (its first write since OPEN), the whole row as
    ``1 << node``. So no read-modify-write, no forwarding, and back-to-back
    ADDs to one row need nothing special. The node table is a memory of
    ``TREES x 2**ceil(log2(N_NODES))`` words. Each has ``PORTS + 1`` read
    ports (one per lookup port, one for COMMIT / RELEASE), none transparent:
    a read of the cycle of a write sees the word before it. A lookup reads
    its row in its issue cycle and registers ``valid & view``, the window
    check and whether its own cycle's ADD makes its row's first write (then
    the row it read is stale and ``rows`` is clear at issue); in the next
    cycle the lowest node of ``row & valid & view`` addresses the node
    table, whose data is the reply. COMMIT / RELEASE is a 3-stage pipeline
    that stalls as a whole while ``out`` holds a beat not taken: the row
    read (the first, of ``d0``, in the command's cycle), the lowest node of
    ``row & acc`` or else of the rejected mask (cleared bit by bit) and its
    node table read, the beat register. Reset clears the flip-flops only;
    no memory word is read unless written since. Design notes:
    ``docs/blocks/kvpool_leaves.md``.

    Parameters
    ----------
    TREES : int
        Tree slots, ``1 .. 16`` (default 8; SPEC §4.9).
    N_NODES : int
        Nodes per tree, ``4 .. 1024`` (default 1024).
    MAX_DEPTH : int
        Positions per tree window, ``2 .. 1024`` (default 64).
    SEQS : int
        Sequences (``seq``'s range), ``1 .. 64`` (default 64).
    POS_BITS : int
        Bits of a position, ``1 .. 20`` (default 17).
    PAGE_BITS : int
        Bits of a page, ``1 .. 22`` (default 20).
    TOKEN_BITS : int
        Bits of a token, ``1 .. 17`` (default 17).
    PORTS : int
        Lookup ports, ``1 .. 2`` (default 2).

    Members
    -------
    cmd : In(stream.Signature(cmd_layout(p)))
        OPEN / ADD / COMMIT / RELEASE; ready when not ``busy``.
    out : Out(stream.Signature(out_layout(p)))
        The beats of a COMMIT / RELEASE.
    busy : Out(1)
        A COMMIT / RELEASE is streaming.
    draining : Out(TREES)
        The slot it streams (one-hot; 0 when not ``busy``).
    lk<k> : In(stream.Signature(lookup_layout(p), always_ready=True))
        Lookup port ``k`` (``k < PORTS``): ``slot``, ``pos``, ``view``.
    lk<k>_rsp : Out(stream.Signature(reply_layout(p), always_ready=True))
        Its reply, ``LATENCY`` cycles later.
    active : Out(TREES)
        The active slots.
    free_slot : Out(idx_bits(TREES))
        The lowest inactive slot (0 if none).
    has_free : Out(1)
        A slot is inactive.
    slot_seq : Out(TREES * idx_bits(SEQS))
        Each slot's ``seq``, slot ``r`` at bits ``r * idx_bits(SEQS)`` up.
    slot_lo : Out(TREES * POS_BITS)
        Each slot's ``lo``, slot ``r`` at bits ``r * POS_BITS`` up.
    slot_count : Out(TREES * bits_for(N_NODES))
        Each slot's valid nodes, slot ``r`` at bits ``r * bits_for(N_NODES)`` up.
    chk_slot, chk_node : In(idx_bits(TREES)), In(idx_bits(N_NODES))
        The ``valid`` bit queried.
    chk_accept : In(N_NODES)
        A mask (a COMMIT's ``accept``) compared with ``valid[chk_slot]``.
    chk_valid : Out(1)
        ``valid[chk_slot][chk_node]``.
    chk2_slot, chk2_node : In(idx_bits(TREES)), In(idx_bits(N_NODES))
        A second ``valid`` bit queried.
    chk2_valid : Out(1)
        ``valid[chk2_slot][chk2_node]``.
    chk_any : Out(1)
        ``valid[chk_slot] & chk_accept != 0``.
    """

    #: the block's parameters (:class:`hw.common.Param`: default, range, small value)
    PARAMS = {
        "TREES": Param(default=8, lo=1, hi=16, small=2),
        "N_NODES": Param(default=1024, lo=4, hi=1024, small=8),
        "MAX_DEPTH": Param(default=64, lo=2, hi=1024, small=4),
        "SEQS": Param(default=64, lo=1, hi=64, small=2),
        "POS_BITS": Param(default=17, lo=1, hi=20, small=4),
        "PAGE_BITS": Param(default=20, lo=1, hi=22, small=3),
        "TOKEN_BITS": Param(default=17, lo=1, hi=17, small=2),
        "PORTS": Param(default=2, lo=1, hi=2, small=2),
    }

    def __init__(
        self,
        *,
        TREES: int = PARAMS["TREES"].default,
        N_NODES: int = PARAMS["N_NODES"].default,
        MAX_DEPTH: int = PARAMS["MAX_DEPTH"].default,
        SEQS: int = PARAMS["SEQS"].default,
        POS_BITS: int = PARAMS["POS_BITS"].default,
        PAGE_BITS: int = PARAMS["PAGE_BITS"].default,
        TOKEN_BITS: int = PARAMS["TOKEN_BITS"].default,
        PORTS: int = PARAMS["PORTS"].default,
    ) -> None:
        given = {"TREES": TREES, "N_NODES": N_NODES, "MAX_DEPTH": MAX_DEPTH, "SEQS": SEQS}
        given |= {"POS_BITS": POS_BITS, "PAGE_BITS": PAGE_BITS, "TOKEN_BITS": TOKEN_BITS}
        given |= {"PORTS": PORTS}
        p = self.p = check_params(self.PARAMS, given)
        self.TREES, self.N_NODES, self.MAX_DEPTH = p["TREES"], p["N_NODES"], p["MAX_DEPTH"]
        self.SEQS, self.POS_BITS, self.PAGE_BITS = p["SEQS"], p["POS_BITS"], p["PAGE_BITS"]
        self.TOKEN_BITS, self.PORTS = p["TOKEN_BITS"], p["PORTS"]
        T = self.TREES
        members = {
            "cmd": In(stream.Signature(cmd_layout(p))),
            "out": Out(stream.Signature(out_layout(p))),
            "busy": Out(1),
            "draining": Out(T),
            "active": Out(T),
            "free_slot": Out(idx_bits(T)),
            "has_free": Out(1),
            "slot_seq": Out(T * idx_bits(self.SEQS)),
            "slot_lo": Out(T * self.POS_BITS),
            "slot_count": Out(T * bits_for(self.N_NODES)),
            "chk_slot": In(idx_bits(T)),
            "chk_node": In(idx_bits(self.N_NODES)),
            "chk_accept": In(self.N_NODES),
            "chk_valid": Out(1),
            "chk2_slot": In(idx_bits(T)),
            "chk2_node": In(idx_bits(self.N_NODES)),
            "chk2_valid": Out(1),
            "chk_any": Out(1),
        }
        for k in range(self.PORTS):
            members[f"lk{k}"] = In(stream.Signature(lookup_layout(p), always_ready=True))
            members[f"lk{k}_rsp"] = Out(stream.Signature(reply_layout(p), always_ready=True))
        super().__init__(_PortSignature(members))

    # ------------------------------------------------------------------ helpers
    def _slot_ok(self, slot: Value) -> Value:
        """``slot < TREES`` (constant 1 when every slot number is a slot)."""
        T = self.TREES
        return Const(1, 1) if T == 1 << len(slot) else slot < T

    def _pad(self, items: list[Value]) -> list[Value]:
        """``items`` padded with zeros to every value of a slot field."""
        n = 1 << idx_bits(self.TREES)
        return items + [Const(0, len(items[0]))] * (n - len(items))

    def _window(self, m: Module, st: "_State", slot: Value, pos: Value, name: str):
        """``(in_window, d, ds)``: ``lo <= pos < lo + MAX_DEPTH`` for slot ``slot``'s
        ``lo`` and ``d = (pos - lo)`` in ``idx_bits(MAX_DEPTH)`` bits, computed for every
        slot (``ds``, a kept Kogge-Stone subtraction each) and then picked by ``slot``
        (a slot found by a search arrives late; it then only selects)."""
        ins, ds = [], []
        for r in range(self.TREES):
            in_r, d_r = self._window_of(m, st.lo[r], pos, f"{name}{r}")
            ins.append(in_r)
            ds.append(d_r)
        in_win = net(m, mux_tree(self._pad(ins), slot), f"{name}_in")
        return in_win, net(m, mux_tree(self._pad(ds), slot), f"{name}_d"), ds

    def _window_of(self, m: Module, lo: Value, pos: Value, name: str) -> tuple[Value, Value]:
        """``(in_window, d)`` of one slot's ``lo``."""
        pb, db, D = self.POS_BITS, idx_bits(self.MAX_DEPTH), self.MAX_DEPTH
        diff = prefix_add(
            m, pos, ~zext(lo, pb + 1), pb + 1, f"{name}_diff", cin=Const(1, 1), keep=True
        )
        # diff < MAX_DEPTH: no bit at or above db, and (MAX_DEPTH not a power of two) the
        # low db bits below it (a constant compare of db bits; `<` on pb bits is a ripple)
        high = ~diff[db:pb].any() if db < pb else Const(1, 1)
        below = high if D == 1 << db or D >= 1 << pb else high & (diff[:db] < D)
        return (
            net(m, ~diff[pb] & below, f"{name}_in", keep=True),
            net(m, zext(diff[:pb], db), f"{name}_d", keep=True),
        )

    # ------------------------------------------------------------------ elaborate
    def elaborate(self, platform) -> Module:
        m = Module()
        T, N, D = self.TREES, self.N_NODES, self.MAX_DEPTH
        sb, nb, db, qb = idx_bits(T), idx_bits(N), idx_bits(D), idx_bits(self.SEQS)
        cb = bits_for(N)
        st = _State(
            active=Signal(T, name="active_r"),
            seq=[Signal(qb, name=f"seq_{r}") for r in range(T)],
            lo=[Signal(self.POS_BITS, name=f"lo_{r}") for r in range(T)],
            valid=[Signal(N, name=f"valid_{r}") for r in range(T)],
            rows=[Signal(D, name=f"rows_{r}") for r in range(T)],
            count=[Signal(cb, name=f"count_{r}") for r in range(T)],
            phase=Signal(2, name="phase"),  # 0 idle, 1 accepted path, 2 rejected, 3 END out
            cs=Signal(sb, name="cs"),
        )
        word = node_word_layout(self.p)
        m.submodules.nodes = nodes = memory.Memory(shape=word.size, depth=T << nb, init=[])
        m.submodules.levels = levels = memory.Memory(shape=N, depth=T << db, init=[])

        # status
        inactive = ~st.active
        below = prefix_or_below(m, inactive, "free_below") if T > 1 else Const(0, 1)
        free_one = net(m, inactive & ~below, "free_one")
        # the node's bit of every slot, then the slot (the slot arrives late: a search)
        node1h = _decode(m, self.chk_node, N, "chk_node_dec")
        # (kept: synthesis sees every input arrive at once and would rather pick the
        # row first, one reduction instead of TREES)
        chk_bits = [_kept_any(m, v & node1h, f"chk_bit{r}") for r, v in enumerate(st.valid)]
        node2 = _decode(m, self.chk2_node, N, "chk2_node_dec")
        chk2_bits = [_kept_any(m, v & node2, f"chk2_bit{r}") for r, v in enumerate(st.valid)]
        acc = self.chk_accept
        chk_anys = [_kept_any(m, v & acc, f"chk_acc{r}") for r, v in enumerate(st.valid)]
        m.d.comb += [
            self.active.eq(st.active),
            self.has_free.eq(inactive.any()),
            self.free_slot.eq(
                or_tree([Const(r, sb) & free_one[r].replicate(sb) for r in range(T)])
            ),
            self.chk_valid.eq(mux_tree(self._pad(chk_bits), self.chk_slot)),
            self.chk2_valid.eq(mux_tree(self._pad(chk2_bits), self.chk2_slot)),
            self.chk_any.eq(mux_tree(self._pad(chk_anys), self.chk_slot)),
            self.slot_seq.eq(Cat(st.seq)),
            self.slot_lo.eq(Cat(st.lo)),
            self.slot_count.eq(Cat(st.count)),
            self.draining.eq(Mux(st.phase != 0, _decode(m, st.cs, T, "draining_dec"), 0)),
        ]

        add = self._commands(m, st, nodes, levels)
        for k in range(self.PORTS):
            self._lookup(m, st, nodes, levels, add, k)
        self._stream(m, st, nodes, levels)
        return m

    def _commands(self, m: Module, st: "_State", nodes, levels) -> "_Add":
        """OPEN and ADD: the flops and both memories' write ports. Returns the ADD's
        terms a lookup of the same cycle needs."""
        T, N, D = self.TREES, self.N_NODES, self.MAX_DEPTH
        c = self.cmd.payload
        fire = net(m, self.cmd.valid & self.cmd.ready, "cmd_fire")
        # a slot number in range, and not the slot being streamed
        ok = self._slot_ok(c.slot) & ~((st.phase != 0) & (c.slot == st.cs))
        is_open = net(m, fire & (c.kind == TsCmd.OPEN) & ok, "cmd_open")
        in_win, d, ds = self._window(m, st, c.slot, c.pos, "add")
        # per slot, then picked by the slot (as the window)
        rows_hit = [
            net(m, _bit(m, st.rows[r], ds[r], f"add_row{r}"), f"add_row{r}_hit", keep=True)
            for r in range(T)
        ]
        first = net(m, ~mux_tree(self._pad(rows_hit), c.slot), "add_first")
        # the command's own terms kept apart from its valid: a late valid (the pool's
        # checks) then meets them in the last gate rather than under them
        add_pre = net(m, (c.kind == TsCmd.ADD) & ok & in_win, "add_pre", keep=True)
        add_ok = net(m, fire & add_pre, "add_ok", keep=True)
        one = _decode(m, c.node, N, "add_one")
        d_one = _decode(m, d, D, "add_d_one")
        dups = [_kept_any(m, st.valid[r] & one, f"add_dup{r}") for r in range(T)]
        dup = net(m, mux_tree(self._pad(dups), c.slot), "add_dup")

        nw = nodes.write_port()
        lw = levels.write_port(granularity=1)
        m.d.comb += [
            nw.addr.eq(Cat(c.node, c.slot)),
            nw.data.eq(Cat(d, c.page, c.token)),
            nw.en.eq(add_ok),
            lw.addr.eq(Cat(d, c.slot)),
            lw.data.eq(one),
            lw.en.eq(Mux(add_ok, Mux(first, Const(-1, N), one), 0)),
        ]
        for r in range(T):
            here = c.slot == r
            with m.If(is_open & here):
                m.d.sync += [
                    st.active[r].eq(1),
                    st.seq[r].eq(c.seq),
                    st.lo[r].eq(c.pos),
                    st.valid[r].eq(0),
                    st.rows[r].eq(0),
                    st.count[r].eq(0),
                ]
            w = len(st.count[r])  # (built outside the If: a net assigned in it depends on it)
            inc = prefix_add(
                m, st.count[r], Const(0, w), w, f"count_{r}_inc", cin=Const(1, 1), keep=True
            )
            with m.If(add_ok & here):
                m.d.sync += [st.valid[r].eq(st.valid[r] | one), st.rows[r].eq(st.rows[r] | d_one)]
                with m.If(~dup):
                    m.d.sync += st.count[r].eq(inc)
        return _Add(ok=add_ok, slot=c.slot, pos=c.pos, first=first)

    def _lookup(self, m: Module, st: "_State", nodes, levels, add: "_Add", k: int) -> None:
        """Lookup port ``k``: issue (row read, window, ``valid & view``), the lowest node
        (node table read), the reply."""
        lk, rsp = getattr(self, f"lk{k}"), getattr(self, f"lk{k}_rsp")
        q = lk.payload
        n = f"lk{k}"
        lr = levels.read_port()
        nr = nodes.read_port()
        in_win, d, _ = self._window(m, st, q.slot, q.pos, n)
        act = mux_tree(self._pad([st.active[r] for r in range(self.TREES)]), q.slot)
        m.d.comb += lr.addr.eq(Cat(d, q.slot))
        # issue cycle -> registers
        v1, ok1 = Signal(name=f"{n}_v1"), Signal(name=f"{n}_ok1")
        slot1 = Signal.like(q.slot, name=f"{n}_slot1")
        d1 = Signal.like(d, name=f"{n}_d1")
        mask1 = Signal(self.N_NODES, name=f"{n}_mask1")
        fresh1 = Signal(name=f"{n}_fresh1")
        m.d.sync += [
            v1.eq(lk.valid),
            ok1.eq(lk.valid & net(m, act & in_win, f"{n}_pre", keep=True)),
            slot1.eq(q.slot),
            d1.eq(d),
            mask1.eq(mux_tree(self._pad(st.valid), q.slot) & q.view),
            fresh1.eq(add.ok & add.first & (add.slot == q.slot) & (add.pos == q.pos)),
        ]
        # cycle 1: the row & valid & view, its lowest node -> the node table
        rowbit = _bit(m, mux_tree(self._pad(st.rows), slot1), d1, f"{n}_row")
        hit_any, idx, _ = lowest(m, lr.data & mask1, f"{n}_hit")
        m.d.comb += nr.addr.eq(Cat(idx, slot1))
        v2, hit2 = Signal(name=f"{n}_v2"), Signal(name=f"{n}_hit2")
        m.d.sync += [v2.eq(v1), hit2.eq(ok1 & rowbit & ~fresh1 & hit_any)]
        # cycle 2: the reply
        page = nr.data[idx_bits(self.MAX_DEPTH) :][: self.PAGE_BITS]
        m.d.comb += [
            rsp.valid.eq(v2),
            rsp.payload.hit.eq(hit2),
            rsp.payload.page.eq(Mux(hit2, page, 0)),
        ]

    def _stream(self, m: Module, st: "_State", nodes, levels) -> None:
        """COMMIT / RELEASE: row read (A), lowest node and node read (B), beat (C)."""
        T, N, D = self.TREES, self.N_NODES, self.MAX_DEPTH
        db, nb = idx_bits(D), idx_bits(N)
        c = self.cmd.payload
        phase, cs = st.phase, st.cs
        acc, rej = Signal(N, name="acc"), Signal(N, name="rej")
        a_d = Signal(db + 1, name="a_d")
        b_valid, b_d = Signal(name="b_valid"), Signal(db, name="b_d")
        c_valid, c_kind = Signal(name="c_valid"), Signal(2, name="c_kind")
        c_node = Signal(nb, name="c_node")
        busy = net(m, phase != 0, "busy_n")
        grows = (c.kind == TsCmd.OPEN) | (c.kind == TsCmd.ADD)
        m.d.comb += [self.busy.eq(busy), self.cmd.ready.eq(~busy | grows)]

        sr, snr = levels.read_port(), nodes.read_port()
        adv = net(m, ~c_valid | self.out.ready, "adv")
        fire = self.cmd.valid & ~busy
        is_commit = c.kind == TsCmd.COMMIT
        start = net(m, fire & (is_commit | (c.kind == TsCmd.RELEASE)), "st_start")
        act = mux_tree(self._pad([st.active[r] for r in range(T)]), c.slot)
        mine = Mux(act, mux_tree(self._pad(st.valid), c.slot), 0)
        d0_ok = Const(1, 1) if D == 1 << db else c.d0 < D
        inc = prefix_add(m, a_d, Const(0, 1), db + 1, "a_inc", cin=Const(1, 1))
        d0_inc = prefix_add(m, c.d0, Const(0, 1), db + 1, "d0_inc", cin=Const(1, 1))
        with m.If(start):
            m.d.sync += [
                phase.eq(Mux(is_commit, 1, 2)),
                cs.eq(c.slot),
                acc.eq(Mux(is_commit, mine & c.accept, 0)),
                rej.eq(Mux(is_commit, mine & ~c.accept, mine)),
                b_valid.eq(is_commit & d0_ok),
                b_d.eq(c.d0),
                a_d.eq(d0_inc),
            ]
        m.d.comb += [
            sr.addr.eq(Mux(busy, Cat(a_d[:db], cs), Cat(c.d0, c.slot))),
            sr.en.eq(Mux(busy, (phase == 1) & adv, start & is_commit)),
        ]

        # B: the lowest accepted node of the row read, else the lowest rejected one
        rowbit = _bit(m, mux_tree(self._pad(st.rows), cs), b_d, "st_row")
        a_any, a_idx, _ = lowest(m, sr.data & acc, "st_acc")
        r_any, r_idx, r_rest = lowest(m, rej, "st_rej")
        found = net(m, (phase == 1) & b_valid & rowbit & a_any, "st_found")
        produce = net(m, adv & ((phase == 1) | (phase == 2)), "st_produce")
        m.d.comb += [snr.addr.eq(Cat(Mux(found, a_idx, r_idx), cs)), snr.en.eq(adv)]
        a_more = a_d < D
        with m.If(produce):
            m.d.sync += c_valid.eq(1)
            with m.If(found):
                m.d.sync += [c_kind.eq(TsOut.ACC), c_node.eq(a_idx)]
                m.d.sync += [b_valid.eq(a_more), b_d.eq(a_d[:db]), a_d.eq(inc)]
            with m.Else():
                m.d.sync += b_valid.eq(0)
                with m.If(r_any):
                    m.d.sync += [c_kind.eq(TsOut.REJ), c_node.eq(r_idx), rej.eq(r_rest)]
                    m.d.sync += phase.eq(2)
                with m.Else():
                    m.d.sync += [c_kind.eq(TsOut.END), c_node.eq(0), phase.eq(3)]
        with m.Elif(adv):
            m.d.sync += c_valid.eq(0)
        with m.If((phase == 3) & c_valid & self.out.ready):
            m.d.sync += [phase.eq(0), acc.eq(0)]
            for r in range(T):
                with m.If(cs == r):
                    m.d.sync += st.active[r].eq(0)

        # C: the beat
        w = node_word_layout(self.p)
        page = snr.data[w["page"].offset :][: self.PAGE_BITS]
        token = snr.data[w["token"].offset :][: self.TOKEN_BITS]
        m.d.comb += [
            self.out.valid.eq(c_valid),
            self.out.payload.kind.eq(c_kind),
            self.out.payload.node.eq(c_node),
            self.out.payload.page.eq(Mux(c_kind == TsOut.END, 0, page)),
            self.out.payload.token.eq(Mux(c_kind == TsOut.ACC, token, 0)),
        ]


@dataclass
class _State:
    """The flip-flops of every slot, and the stream's phase and slot."""

    active: Signal
    seq: list[Signal]
    lo: list[Signal]
    valid: list[Signal]
    rows: list[Signal]
    count: list[Signal]  # valid nodes
    phase: Signal  # the stream's: 0 idle, 1 accepted path, 2 rejected, 3 END out
    cs: Signal  # the slot streamed


@dataclass
class _Add:
    """This cycle's ADD, as a lookup of the same cycle needs it: taken, slot, pos, and
    whether it is its row's first write since OPEN."""

    ok: Value
    slot: Value
    pos: Value
    first: Value
