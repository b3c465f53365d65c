"""The scaled pool's segment table, block-table registers and sequence lengths (flops).

SPEC §4.5's *sequence* (``len``) and *segment* (``seqs``, ``start``, ``end``,
its block table) rows and, per block table, its ``base`` (the position of
index 0) and ``tlen`` (its PTE count): the state every operation reads in
parallel (decision 0016 §3). The PTEs themselves live in
:class:`hw.kvpool.blocktable.BlockTable`.

:class:`SegState` is not a component: :class:`hw.kvpool.pool.ScaledPool`
creates it inside its module, reads it through the query methods (each
builds combinational logic over every segment: a match is one-hot by the
invariant that a sequence's chain covers ``0 .. len - 1`` once) and changes it
through the ``*_en`` controls, which its operation FSM drives (comb, default
0; at most one of open / append / fork / release / bury / cut / split /
share per cycle; ``tag_en`` may come with any; ``app_en`` may come with
``open_en`` to append the new segment's first position, ``app_g =
free_g``, ``app_t = free_t``). ``app_keep_len`` makes an append leave the sequence's length (a
commit's drain, whose length moved at once by ``len_add``, a control of
its own: ``len[len_seq] += len_k``). Per segment, ``hbm`` counts its positions
whose page is in HBM (``hbm_inc`` / ``hbm_dec`` at a spill / fill, given
the lower part's count at a split, ``split_hbm``), so that a release knows
what its dead segments free without reading them (the per-sequence
``xchip`` / ``xhbm``, :meth:`excl_counts`).
A sequence's running dedup tag (SPEC §4.6 *Tags*) is kept beside its
length: fork copies it, release clears it.

A segment is *used* from its opening until the release that kills it has
reclaimed its PTEs (``bury``); it is *alive* while ``seqs`` is not 0. A
block table is used while a used segment names it.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value

from hw.common import (
    idx_bits,
    less_than,
    net,
    or_tree,
    prefix_add,
    prefix_dec,
    prefix_inc,
    prefix_sub,
    priority_lowest,
)

__all__ = ["SegState"]


class SegState:
    """Segment, block-table and sequence registers with their queries and controls.

    Parameters
    ----------
    m : Module
        The module the registers and logic belong to.
    segs, seqs, pos_bits : int
        ``SEGS`` (segments and block tables), ``SEQS`` and ``POS_BITS``.
    """

    def __init__(self, m: Module, *, segs: int, seqs: int, pos_bits: int) -> None:
        self.m = m
        # the queries' logic: a module of its own, so that a query made inside an FSM
        # state or an If builds the same unconditional nets (a net assigned inside
        # one would depend on its test)
        self.q = Module()
        m.submodules.seg_q = self.q
        self.n, self.s = segs, seqs
        pb1 = pos_bits + 1
        self.gb, self.sb = idx_bits(segs), idx_bits(seqs)
        self.used = Signal(segs, name="seg_used")
        self.seqs = [Signal(seqs, name=f"seg{g}_seqs") for g in range(segs)]
        self.start = [Signal(pb1, name=f"seg{g}_start") for g in range(segs)]
        self.end = [Signal(pb1, name=f"seg{g}_end") for g in range(segs)]
        self.tab = [Signal(self.gb, name=f"seg{g}_tab") for g in range(segs)]
        self.tused = Signal(segs, name="tab_used")
        self.tbase = [Signal(pb1, name=f"tab{t}_base") for t in range(segs)]
        self.tlen = [Signal(pb1, name=f"tab{t}_len") for t in range(segs)]
        self.len = [Signal(pb1, name=f"seq{s}_len") for s in range(seqs)]
        self.tag = [Signal(64, name=f"seq{s}_tag") for s in range(seqs)]
        self.hbm = [Signal(pb1, name=f"seg{g}_hbm") for g in range(segs)]
        # derived state, kept in step by the controls (so that no query searches)
        self.last = [Signal(self.gb, name=f"seq{s}_last") for s in range(seqs)]
        self.excl = Signal(segs, name="seg_excl")
        self.sbase = [Signal(pb1, name=f"seg{g}_base") for g in range(segs)]  # tbase[tab[g]]
        # per sequence, its exclusive segments' positions on chip and in HBM
        self.xchip = [Signal(pb1, name=f"seq{s}_xchip") for s in range(seqs)]
        self.xhbm = [Signal(pb1, name=f"seq{s}_xhbm") for s in range(seqs)]
        # controls (driven by the FSM)
        self.open_en = Signal()
        self.open_seq = Signal(self.sb)
        self.open_len = Signal(pb1)
        self.app_en = Signal()
        self.app_g = Signal(self.gb)
        self.app_t = Signal(self.gb)  # its block table (the FSM knows it: no lookup)
        self.app_seq = Signal(self.sb)
        self.app_keep_len = Signal()
        self.len_add = Signal()
        self.len_seq = Signal(self.sb)
        self.len_k = Signal(pb1)
        self.fork_en = Signal()
        self.fork_from = Signal(self.sb)
        self.fork_dst = Signal(self.sb)
        self.rel_en = Signal()
        self.rel_seq = Signal(self.sb)
        self.bury_en = Signal()
        self.bury_mask = Signal(segs)
        self.cut_en = Signal()
        self.cut_t = Signal(self.gb)
        self.cut_c = Signal(pb1)
        self.tag_en = Signal()
        self.tag_seq = Signal(self.sb)
        self.tag_val = Signal(64)
        self.split_en = Signal()
        self.split_g = Signal(self.gb)
        self.split_m = Signal(pb1)
        self.split_hbm = Signal(pb1)  # HBM positions of the split's lower part
        self.hbm_inc = Signal()
        self.hbm_inc_g = Signal(self.gb)
        self.hbm_dec = Signal()
        self.hbm_dec_g = Signal(self.gb)
        self.share_en = Signal()
        self.share_mask = Signal(segs)
        self.share_dst = Signal(self.sb)
        self.share_len = Signal(pb1)
        self.share_last = Signal(self.gb)  # the segment that ends at share_len
        self.adj_en = Signal()  # xchip[adj_seq] += adj_chip, xhbm[adj_seq] += adj_hbm
        self.adj_seq = Signal(self.sb)
        self.adj_chip = Signal(pb1)  # two's complement
        self.adj_hbm = Signal(pb1)
        self.free_any, self.free_g = priority_lowest(m, ~self.used)
        self.tfree_any, self.free_t = priority_lowest(m, ~self.tused)
        self._update()

    # ------------------------------------------------------------------ decoders
    def dec(self, sel: Value, n: int, name: str) -> Signal:
        """One-hot of ``sel`` over ``n`` (``==`` per value: no shift, which synthesis
        could share with another behind a multiplexer of the controls)."""
        return net(self.q, Cat(*[sel == k for k in range(n)]), name)

    def sel(self, items: list[Value], sel: Value, name: str) -> Signal:
        """``items[sel]`` (0 for ``sel >= len(items)``), an AND-OR over its one-hot."""
        one = self.dec(sel, len(items), f"{name}_1h")
        w = max(len(v) for v in items)
        return net(self.q, or_tree([Mux(one[k], items[k], 0) for k in range(len(items))]), name)[:w]

    def bit(self, vec: Value, one: Value) -> Value:
        """The bit of ``vec`` that one-hot ``one`` names."""
        return (vec & one).any()

    # ------------------------------------------------------------------ queries
    def len_of(self, seq: Value, name: str) -> Signal:
        """``len(seq)`` (a mux over the sequences; 0 for ``seq >= SEQS``)."""
        return self.sel(self.len, seq, name)

    def len_vs(self, seq: Value, pos: Value, name: str) -> tuple[Signal, Signal]:
        """``(pos < len(seq), pos == len(seq))``: ``pos`` compared with every sequence's
        length, then picked by ``seq`` (beside the length's multiplexer, not after
        it; 0 for ``seq >= SEQS``)."""
        lt = Cat(*[less_than(self.q, pos, self.len[s], f"{name}_lt{s}") for s in range(self.s)])
        eq = Cat(*[pos == self.len[s] for s in range(self.s)])
        one = self.dec(seq, self.s, f"{name}_seq")
        pick = [net(self.q, self.bit(v, one), f"{name}_{k}") for v, k in ((lt, "lt"), (eq, "eq"))]
        return pick[0], pick[1]

    def len_nz(self, seq: Value, name: str) -> Signal:
        """``len(seq) != 0``, picked from every sequence's (0 for ``seq >= SEQS``)."""
        nz = Cat(*[self.len[s] != 0 for s in range(self.s)])
        return net(self.q, self.bit(nz, self.dec(seq, self.s, f"{name}_seq")), name)

    def find(self, seq: Value, pos: Value, name: str) -> Signal:
        """One-hot: the used segment seen by ``seq`` with ``start <= pos < end``."""
        one = self.dec(seq, self.s, f"{name}_seq")
        bits = [
            self.used[g] & self.bit(self.seqs[g], one) & self.holds(g, pos, f"{name}{g}")
            for g in range(self.n)
        ]
        return net(self.q, Cat(*bits), name)

    def holds(self, g: int, pos: Value, name: str) -> Value:
        """``start[g] <= pos < end[g]`` (prefix comparators, not carry chains)."""
        m = self.q
        return ~less_than(m, pos, self.start[g], f"{name}_lo") & less_than(
            m, pos, self.end[g], f"{name}_hi"
        )

    def own(self, seq: Value, length: Value, name: str) -> Signal:
        """One-hot: ``seq``'s own segment (seen by ``seq`` alone, ending at ``length
        = len(seq)``), if any: the definition, a search over every segment (the
        proofs compare :meth:`own_of` with it)."""
        one = net(self.q, Const(1, self.s) << seq, f"{name}_bit")
        bits = [
            self.used[g] & (self.seqs[g] == one) & (self.end[g] == length) for g in range(self.n)
        ]
        return net(self.q, Mux(length == 0, 0, Cat(*bits)), name)

    def own_of(self, seq: Value, name: str) -> tuple[Signal, Signal]:
        """``(has, g)``: ``seq``'s own segment, from the registers: its last segment
        ``last[seq]`` (the one ending at ``len(seq)``) if only ``seq`` sees it
        (``excl``) and ``len(seq)`` is not 0. Equal to :meth:`own` outside
        a fast commit's drain of ``seq`` (whose length runs ahead of its segment's
        end; then it is the segment the drain appends to). ``has`` is one bit of
        a per-sequence vector of the registers (:meth:`owns`), picked by ``seq``
        beside ``g``, not after it."""
        g = self.sel(self.last, seq, f"{name}_g")
        one = self.dec(seq, self.s, f"{name}_seq")
        has = net(self.q, self.bit(self.owns(), one), f"{name}_has")
        return has, g

    def owns(self) -> Signal:
        """Per sequence ``s``: ``len(s) != 0`` and ``excl[last[s]]`` (built once)."""
        if not hasattr(self, "_owns"):
            last1h = [self.dec(self.last[s], self.n, f"seq{s}_last_1h") for s in range(self.s)]
            bits = [(self.len[s] != 0) & self.bit(self.excl, last1h[s]) for s in range(self.s)]
            self._owns = net(self.q, Cat(*bits), "seq_owns")
        return self._owns

    def of_table(self, t: Value, pos: Value, name: str) -> Signal:
        """One-hot: the alive segment of block table ``t`` holding ``pos``."""
        bits = [
            self.used[g]
            & self.seqs[g].any()
            & (self.tab[g] == t)
            & self.holds(g, pos, f"{name}{g}")
            for g in range(self.n)
        ]
        return net(self.q, Cat(*bits), name)

    def locate(
        self, onehot: Value, pos: Value, name: str, *, each: bool = False
    ) -> tuple[Signal, Signal]:
        """``(t, i)``: the block table and PTE index of ``pos`` in the segment of one-hot
        ``onehot`` (``i = pos - base``, the base from the segment's own copy
        ``sbase``, picked beside the table rather than read by it). ``each``: ``pos -
        base`` for every segment, then picked (a subtractor per segment, beside the
        search that makes ``onehot`` rather than after it: a lookup's)."""
        t = self.pick(onehot, self.tab, f"{name}_t")
        w = len(self.sbase[0])
        if each:
            q, base = self.q, self.sbase
            diffs = [prefix_sub(q, pos, base[g], w, f"{name}_i{g}") for g in range(self.n)]
            return t, self.pick(onehot, diffs, f"{name}_i")
        base = self.pick(onehot, self.sbase, f"{name}_base")
        return t, prefix_sub(self.q, pos, base, w, f"{name}_i")

    def chain(self, seq: Value, name: str) -> Signal:
        """The used segments seen by ``seq``."""
        one = self.dec(seq, self.s, f"{name}_seq")
        return net(
            self.q,
            Cat(*[self.used[g] & self.bit(self.seqs[g], one) for g in range(self.n)]),
            name,
        )

    def only(self, seq: Value, name: str) -> Signal:
        """The used segments seen by ``seq`` alone (those its release kills)."""
        one = self.dec(seq, self.s, f"{name}_seq")
        return net(
            self.q,
            Cat(*[self.excl[g] & self.bit(self.seqs[g], one) for g in range(self.n)]),
            name,
        )

    def excl_counts(self, seq: Value, name: str) -> tuple[Signal, Signal]:
        """``(on_chip, in_hbm)``: the positions of the segments ``seq`` alone sees (what
        its release frees), from the per-sequence counters."""
        return self.sel(self.xchip, seq, f"{name}_chip"), self.sel(self.xhbm, seq, f"{name}_hbm")

    def owner(self, onehot: Value, name: str) -> Signal:
        """The index of the lowest sequence that sees the segment of one-hot ``onehot``
        (its only one when ``excl``)."""
        seqs = self.pick(onehot, self.seqs, f"{name}_seqs")
        return net(self.q, or_tree([Mux(seqs[s], s, 0) for s in range(self.s)]), name)[: self.sb]

    def index(self, onehot: Value, name: str) -> Signal:
        """The index of a one-hot vector's set bit (0 if none)."""
        return self.pick(onehot, [Const(g, self.gb) for g in range(self.n)], name)

    def pick(self, onehot: Value, items: list[Value], name: str) -> Signal:
        """``items[g]`` for the one-hot vector's set bit ``g`` (0 if none)."""
        w = max(len(v) for v in items)
        return net(self.q, or_tree([Mux(onehot[g], items[g], 0) for g in range(self.n)]), name)[:w]

    def table_of(self, g: Value, name: str) -> Signal:
        """``tab`` of segment ``g``."""
        return self.sel(self.tab, g, name)

    def tag_of(self, seq: Value, name: str) -> Signal:
        """``tag(seq)``: the running dedup tag."""
        return self.sel(self.tag, seq, name)

    def table_base(self, t: Value, name: str) -> Signal:
        """``base`` of block table ``t``."""
        return self.sel(self.tbase, t, name)

    def table_len(self, t: Value, name: str) -> Signal:
        """``tlen`` of block table ``t``."""
        return self.sel(self.tlen, t, name)

    # ------------------------------------------------------------------ updates
    def _update(self) -> None:
        m = self.m
        S, G = self.s, self.n
        self.ctl = c = {  # every control's one-hot, decoded once
            "open": self.dec(self.open_seq, S, "seg_open_1h"),
            "rel": self.dec(self.rel_seq, S, "seg_rel_1h"),
            "from": self.dec(self.fork_from, S, "seg_from_1h"),
            "dst": self.dec(self.fork_dst, S, "seg_dst_1h"),
            "share": self.dec(self.share_dst, S, "seg_share_1h"),
            "app_seq": self.dec(self.app_seq, S, "seg_app_seq_1h"),
            "len": self.dec(self.len_seq, S, "seg_len_1h"),
            "tag": self.dec(self.tag_seq, S, "seg_tag_1h"),
            "adj": self.dec(self.adj_seq, S, "seg_adj_1h"),
            "free": self.dec(self.free_g, G, "seg_free_1h"),
            "free_t": self.dec(self.free_t, G, "seg_free_t_1h"),
            "app": self.dec(self.app_g, G, "seg_app_1h"),
            "split": self.dec(self.split_g, G, "seg_split_1h"),
            "inc": self.dec(self.hbm_inc_g, G, "seg_inc_1h"),
            "dec": self.dec(self.hbm_dec_g, G, "seg_dec_1h"),
            "cut": self.dec(self.cut_t, G, "seg_cut_1h"),
        }
        rel_keep = ~c["rel"]
        dst_bit = c["dst"]
        app_t1h = self.dec(self.app_t, G, "seg_app_t_1h")
        split1h = c["split"]
        split_seqs = self.pick(split1h, self.seqs, "seg_split_seqs")
        split_end = self.pick(split1h, self.end, "seg_split_end")
        split_tab = self.pick(split1h, self.tab, "seg_split_tab")
        split_hbm = self.pick(split1h, self.hbm, "seg_split_hbm")
        split_base = self.pick(split1h, self.sbase, "seg_split_base")
        w = len(split_hbm)
        split_upper_hbm = prefix_sub(m, split_hbm, self.split_hbm, w, "seg_split_up")
        open_inc = prefix_inc(m, self.open_len, "seg_open_inc")
        for g in range(self.n):
            # adders built outside the Ifs (a net assigned inside one depends on its test)
            hbm_up = prefix_inc(m, self.hbm[g], f"seg{g}_hbm_up")
            hbm_dn = prefix_dec(m, self.hbm[g], f"seg{g}_hbm_dn")
            end_inc = prefix_inc(m, self.end[g], f"seg{g}_end_inc")
            is_open = self.open_en & c["free"][g]
            with m.If(is_open):
                m.d.sync += [
                    self.used[g].eq(1),
                    self.seqs[g].eq(c["open"]),
                    self.start[g].eq(self.open_len),
                    self.end[g].eq(self.open_len),
                    self.tab[g].eq(self.free_t),
                    self.sbase[g].eq(self.open_len),
                    self.hbm[g].eq(0),
                ]
            inc = self.hbm_inc & c["inc"][g]
            dec = self.hbm_dec & c["dec"][g]
            with m.If(inc | dec):
                m.d.sync += self.hbm[g].eq(Mux(inc, hbm_up, hbm_dn))
            with m.If(self.app_en & c["app"][g]):  # an open's first append too
                m.d.sync += self.end[g].eq(Mux(is_open, open_inc, end_inc))
            with m.If(self.fork_en & self.bit(self.seqs[g], c["from"])):
                m.d.sync += self.seqs[g].eq(self.seqs[g] | dst_bit)
            with m.If(self.rel_en):
                m.d.sync += self.seqs[g].eq(self.seqs[g] & rel_keep)
            with m.If(self.bury_en & self.bury_mask[g]):
                m.d.sync += [self.used[g].eq(0), self.seqs[g].eq(0)]
            with m.If(self.share_en & self.share_mask[g]):
                m.d.sync += self.seqs[g].eq(self.seqs[g] | c["share"])
            with m.If(self.split_en & c["split"][g]):
                m.d.sync += [self.end[g].eq(self.split_m), self.hbm[g].eq(self.split_hbm)]
            with m.If(self.split_en & c["free"][g]):
                m.d.sync += [
                    self.used[g].eq(1),
                    self.seqs[g].eq(split_seqs),
                    self.start[g].eq(self.split_m),
                    self.end[g].eq(split_end),
                    self.tab[g].eq(split_tab),
                    self.sbase[g].eq(split_base),
                    self.hbm[g].eq(split_upper_hbm),
                ]
        self._update_derived(split1h)
        for t in range(self.n):
            tlen_inc = prefix_inc(m, self.tlen[t], f"tab{t}_len_inc")
            t_open = self.open_en & c["free_t"][t]
            with m.If(t_open):
                m.d.sync += [
                    self.tused[t].eq(1),
                    self.tbase[t].eq(self.open_len),
                    self.tlen[t].eq(0),
                ]
            with m.If(self.app_en & app_t1h[t]):
                m.d.sync += self.tlen[t].eq(Mux(t_open, 1, tlen_inc))
            with m.If(self.cut_en & c["cut"][t]):
                m.d.sync += self.tlen[t].eq(self.cut_c)
                with m.If(self.cut_c == 0):
                    m.d.sync += self.tused[t].eq(0)
        fork_len = self.len_of(self.fork_from, "seg_fork_len")
        fork_tag = self.sel(self.tag, self.fork_from, "seg_fork_tag")
        for s in range(self.s):
            w = len(self.len[s])
            len_inc = prefix_inc(m, self.len[s], f"seq{s}_len_inc")
            len_add = prefix_add(m, self.len[s], self.len_k, w, f"seq{s}_len_add", keep=True)
            with m.If(self.app_en & ~self.app_keep_len & c["app_seq"][s]):
                m.d.sync += self.len[s].eq(len_inc)
            with m.If(self.len_add & c["len"][s]):
                m.d.sync += self.len[s].eq(len_add)
            with m.If(self.fork_en & c["dst"][s]):
                m.d.sync += [self.len[s].eq(fork_len), self.tag[s].eq(fork_tag)]
            with m.If(self.rel_en & c["rel"][s]):
                m.d.sync += [self.len[s].eq(0), self.tag[s].eq(0)]
            with m.If(self.tag_en & c["tag"][s]):
                m.d.sync += self.tag[s].eq(self.tag_val)
            with m.If(self.share_en & c["share"][s]):
                m.d.sync += self.len[s].eq(self.share_len)

    def _update_derived(self, split1h: Value) -> None:
        """``excl`` (a segment seen by exactly one sequence) and ``last`` (a sequence's
        segment ending at its length), moved by the same controls as the registers
        they summarise (the proofs check them against their definitions)."""
        m, c = self.m, self.ctl
        rel_keep = ~c["rel"]
        split_excl = or_tree([split1h[g] & self.excl[g] for g in range(self.n)])
        gain = []
        for g in range(self.n):
            with m.If(self.open_en & c["free"][g]):
                m.d.sync += self.excl[g].eq(1)
            with m.If(self.fork_en & self.bit(self.seqs[g], c["from"])):
                m.d.sync += self.excl[g].eq(0)
            single = _single(self.seqs[g] & rel_keep)
            gain.append(self.bit(self.seqs[g], c["rel"]) & single)
            with m.If(self.rel_en):
                m.d.sync += self.excl[g].eq(single)
            with m.If(self.bury_en & self.bury_mask[g]):
                m.d.sync += self.excl[g].eq(0)
            with m.If(self.share_en & self.share_mask[g]):
                m.d.sync += self.excl[g].eq(0)
            with m.If(self.split_en & c["free"][g]):
                m.d.sync += self.excl[g].eq(split_excl)
        #: the segments a release of rel_seq leaves to exactly one other sequence
        self.rel_gain = net(m, Cat(*gain), "seg_rel_gain")
        fork_last = self.sel(self.last, self.fork_from, "seg_fork_last")
        for s in range(self.s):
            with m.If(self.split_en & (self.last[s] == self.split_g)):
                m.d.sync += self.last[s].eq(self.free_g)
            with m.If(self.open_en & c["open"][s]):
                m.d.sync += self.last[s].eq(self.free_g)
            with m.If(self.fork_en & c["dst"][s]):
                m.d.sync += self.last[s].eq(fork_last)
            with m.If(self.share_en & c["share"][s]):
                m.d.sync += self.last[s].eq(self.share_last)
            inc = self.app_en & c["app_seq"][s]
            adj = self.adj_en & c["adj"][s]
            w = len(self.xchip[s])
            chip_d, hbm_d = Mux(adj, self.adj_chip, 0), Mux(adj, self.adj_hbm, 0)
            # inc is a fast insert's late decision: both sums from early operands, then
            # a multiplexer (as a carry-in it would run through the adder)
            x0 = prefix_add(m, self.xchip[s], chip_d, w, f"seq{s}_xchip0", keep=True)
            one = Const(1, 1)
            x1 = prefix_add(m, self.xchip[s], chip_d, w, f"seq{s}_xchip1", cin=one, keep=True)
            xchip = Mux(inc, x1, x0)
            xhbm = prefix_add(m, self.xhbm[s], hbm_d, w, f"seq{s}_xhbm", keep=True)
            with m.If(inc | adj):
                m.d.sync += [self.xchip[s].eq(xchip), self.xhbm[s].eq(xhbm)]
            gone = (self.fork_en & c["from"][s]) | (self.rel_en & c["rel"][s])
            with m.If(gone):  # its segments shared, or dead
                m.d.sync += [self.xchip[s].eq(0), self.xhbm[s].eq(0)]


def _single(v: Value) -> Value:
    """Exactly one bit of ``v`` is set: a balanced tree of (any, more than one)."""
    items = [(v[k], Const(0, 1)) for k in range(len(v))]
    while len(items) > 1:
        nxt = []
        for k in range(0, len(items) - 1, 2):
            (a1, m1), (a2, m2) = items[k], items[k + 1]
            nxt.append((a1 | a2, m1 | m2 | (a1 & a2)))
        if len(items) % 2:
            nxt.append(items[-1])
        items = nxt
    any_, many = items[0]
    return any_ & ~many
