"""The strengthening invariants of :mod:`formal.kvpool_proto`: what makes "the pool keeps
the block table's protocol" inductive.

:class:`Invariants` is a mixin of the harness (it reads ``self.dut``, the probed
pool, whose operation FSM exposes its registers as ``state``, decision 0026;
``self.at``, ``self._chk``, the shadows ``self.lens`` and ``self.owe``). Each
group is a method, each assertion a named signal ``fva_<group>_<k>``, so that a
counterexample to induction names what failed. The groups (every cycle after
the first reset, out of reset):

* ``_ops``: the FSM's state is one of its states, and every state beyond the
  frame (``IDLE``, ``CHECK``, ``ACT``, ``RESULT``) holds an operation that
  reaches it, passed its checks, with its return registers (``ret``, ``tret``)
  consistent;
* ``_tables``: per block table, the block table's length is the segment
  table's ``tlen`` (one less while a fast insert's stage 2 appends, the cut's
  ``c`` while a CUT streams); an unused table is empty, a used one named by a
  used segment, non-empty but while its first append is owed;
* ``_segments``, ``_disjoint``, ``_tiling``: a used segment's base is its
  table's, it holds a position (but the one whose first append is owed), an
  alive one lies within its table, a dead one too or above its table's top
  (cut already); two segments of a table are disjoint; a used table's indices
  are held by exactly one used segment each;
* ``_sequences``, ``_coverage``: a sequence's last segment is seen by it and
  ends at its length (a drain's at its position); its own segment is the top
  of its table, or the cut job will cut the table down to it; each position
  below the length is held by exactly one segment it sees (the released
  chain likewise, while the cut job runs);
* ``_background``: the drain and the cut job exclude every operation but a
  speculative insert, the fast insert's stage 2 is in ``IDLE`` with a live
  tree window, the block table walks only for the cut job or an operation past
  ``ACT``; the drain appends at its segment's end, at its table's top, with
  the positions it is owed within the sequence's length;
* ``_cut``: the cut job's chain, registers and table, and no alive segment
  above the index it cuts from;
* ``_insert``, ``_commit``, ``_fill``, ``_spill``, ``_share``, ``_act``: each
  operation's registers against the state: an insert's table and index (a
  fresh one's or its own segment's top), a commit's slot, path length and
  beats, a fill's and a spill's PTE index below the length, a share's empty
  destination and the segment it splits, what ``CHECK`` checked still holding
  in ``ACT``.
"""

from amaranth import Array, Cat, Const, Module, Mux, Value

from formal.kvpool import count, tree_counts
from hw.kvpool.layouts import PoolCode, PoolOp
from hw.kvpool.pool_release import _CUT, _ISSUE, _KILL, _TEST
from hw.kvpool.pool_spill import RET_FILL, RET_INSERT, RET_SPILL

__all__ = ["Invariants", "SPILLING", "TAGGING", "FILLING"]

SPILLING = ("SP_VIC", "SP_VWAIT", "SP_RD", "SP_RDW", "SP_SLOT", "SP_WR", "SP_FREE")
TAGGING = ("TAG_RD", "TAG_WAIT", "TAG_CRC", "TAG_ENT", "TAG_PUT")
FILLING = (
    "PTE",
    "PTE_GOT",
    "FILL",
    "FILL_ALLOC",
    "ALLOC_FILL_GO",
    "GOT_FILL_GO",
    "FILL_GO",
    "FILL_PSC",
)


class Invariants:
    """The invariant groups (a mixin of :class:`formal.kvpool_proto.PoolProtocolFormal`)."""

    #: the operation FSM's states beyond the frame, and the ops that reach each
    OPS_OF = {
        ("INS", "ALLOC_INS_GO", "GOT_INS_GO", "INS_GO"): ("INSERT",),
        ("COM", "COM_BEAT"): ("COMMIT",),
        ("REL",): ("RELEASE",),
        ("TAG_RD", "TAG_WAIT", "TAG_CRC", "TAG_ENT", "TAG_PUT"): ("INSERT", "COMMIT"),
        ("SPL",): ("SPILL",),
        ("SP_VIC", "SP_VWAIT", "SP_RD", "SP_RDW", "SP_SLOT", "SP_WR", "SP_FREE"): (
            "INSERT",
            "FILL",
            "SPILL",
        ),
        ("PTE", "PTE_GOT"): ("FILL", "SCORE"),
        ("SCORE",): ("SCORE",),
        ("FILL", "FILL_ALLOC", "ALLOC_FILL_GO", "GOT_FILL_GO", "FILL_GO", "FILL_PSC"): ("FILL",),
        (
            "SH",
            "SH_IN",
            "SH_NEXT",
            "SH_PROBE",
            "SH_FOUND",
            "SH_CMP",
            "SH_LAST",
            "SH_APPLY",
            "SH_BITS",
        ): ("SHARE",),
    }

    def _ops(self, m: Module, o: Value) -> None:
        """Every state beyond the frame holds an operation that reaches it."""
        names = set(self.dut.state.states.encoding)
        seen = {n for group in self.OPS_OF for n in group}
        missing = names - seen - {"IDLE", "CHECK", "ACT", "RESULT"}
        if missing:
            raise ValueError(f"states {sorted(missing)!r}: no operation named for them")
        for group, ops in self.OPS_OF.items():
            ok = sum((o.op == PoolOp[x] for x in ops), Const(0, 1)) != 0
            self._chk(m, f"st_{group[0].lower()}", self.at(*group), [ok])
        # a fast insert's tag states skip CHECK (a commit's do not)
        beyond = self.at(*(seen - set(TAGGING))) | (self.at(*TAGGING) & self.dut.state.tret)
        self._chk(
            m, "st_code", beyond & (o.op != PoolOp.SHARE), [self.dut.state.code == PoolCode.NONE]
        )
        ret = self.dut.state.ret
        by_ret = (
            ((ret == RET_INSERT) & (o.op == PoolOp.INSERT))
            | ((ret == RET_FILL) & (o.op == PoolOp.FILL))
            | ((ret == RET_SPILL) & (o.op == PoolOp.SPILL))
        )
        self._chk(m, "sp_ret", self.at(*SPILLING), [by_ret])
        tret = self.dut.state.tret
        by_tret = Mux(tret, o.op == PoolOp.COMMIT, (o.op == PoolOp.INSERT) & o.committed)
        self._chk(m, "tag_ret", self.at(*TAGGING), [by_tret])

    # ------------------------------------------------------------------ invariants
    def _invariants(self, m: Module) -> None:
        """The strengthening invariants, by group."""
        d = self.dut
        self.o = d.state.r.o
        st = d.state.states
        self._chk(m, "fsm", 1, [st.state < len(st.encoding)])
        self._ops(m, self.o)
        self._tables(m)
        self._segments(m)
        self._disjoint(m)
        self._tiling(m)
        self._sequences(m)
        self._background(m)
        self._stage2(m)
        self._drain(m)
        self._cut(m)
        self._insert(m)
        self._commit(m)
        self._fill(m)
        self._spill(m)
        self._share(m)
        self._coverage(m)
        self._act(m)

    def _own(self, seq: Value) -> tuple[Value, Value]:
        """``(own, last)``: ``seq`` has an own segment (a length and an exclusive last
        segment), and its last segment."""
        seg = self.dut.u.seg
        last = Array(seg.last)[seq]
        return (Array(seg.len)[seq] != 0) & seg.excl.bit_select(last, 1), last

    def _beating(self) -> Value:
        """A sequential commit appends its path (``COM_BEAT``, or a block's tag states
        on the way back to it)."""
        return self.at("COM_BEAT") | (self.at(*TAGGING) & self.dut.state.tret)

    def _first(self, drain_here: Value, com_here: Value) -> Value:
        """A fresh segment's or table's first append is owed here (``drain_here``: the
        drain's target, ``com_here``: the sequential commit's): ACC beats are owed."""
        drain = self.dut.u.drain_acc & drain_here
        return (self.owe != 0) & (drain | (self._beating() & com_here))

    def _tables(self, m: Module) -> None:
        """Per block table: the block table's length is the segment table's, but for a
        stage-2 append (one behind) and a cut streaming (cut already)."""
        u = self.dut.u
        seg, s2, cut = u.seg, self.dut.state.s2, self.dut.state.cut
        P = 1 << self.dut.POS_BITS
        for t in range(seg.n):
            tl, bl = seg.tlen[t], self.lens[t]
            s2_here = s2.valid & s2.committed & (s2.t == t)
            cut_here = u.cutting & (cut.state == _CUT) & (cut.t == t)
            self._chk(m, f"len{t}", ~s2_here & ~cut_here, [bl == tl])
            self._chk(m, f"s2len{t}", s2_here, [bl + 1 == tl, s2.i == bl])
            self._chk(m, f"cutlen{t}", cut_here, [bl == cut.c, tl == cut.n, cut.c < cut.n])
            self._chk(m, f"unused{t}", ~seg.tused[t], [tl == 0])
            named = count([seg.used[g] & (seg.tab[g] == t) for g in range(seg.n)])
            self._chk(m, f"named{t}", seg.tused[t], [named != 0, seg.tbase[t] + tl <= P])
            first = self._first(u.drain_t == t, self.dut.state.t == t)
            self._chk(m, f"empty{t}", seg.tused[t] & (tl == 0), [first])

    def _segments(self, m: Module) -> None:
        """Per segment: its table used, ``excl``, an alive one inside its table."""
        seg = self.dut.u.seg
        tl = Array(seg.tlen)
        for g in range(seg.n):
            t = seg.tab[g]
            kept = seg.used[g] & (seg.seqs[g].any() | ~self.dut.u.cutting)  # (a cut frees first)
            self._chk(m, f"seg{g}_tab", kept, [seg.tused.bit_select(t, 1)])
            self._chk(m, f"seg{g}_t", seg.used[g], [t < seg.n])
            pop = count([seg.seqs[g][x] for x in range(seg.s)])
            alive = seg.seqs[g].any()
            self._chk(m, f"seg{g}_excl", 1, [seg.excl[g] == (pop == 1), ~alive | seg.used[g]])
            self._chk(
                m,
                f"seg{g}_in",
                seg.used[g],
                [
                    seg.end[g] <= (1 << self.dut.POS_BITS),
                    seg.sbase[g] == Array(seg.tbase)[t],
                    seg.sbase[g] <= seg.start[g],
                    seg.start[g] <= seg.end[g],
                ],
            )
            inside = seg.end[g] <= seg.sbase[g] + tl[t]
            self._chk(m, f"seg{g}_top", alive, [inside])
            first = self._first(self.dut.u.drain_g == g, self.dut.state.g == g)
            self._chk(m, f"seg{g}_held", seg.used[g] & ~first, [seg.start[g] < seg.end[g]])
            # a dead one: its PTEs all there, or its table cut below its start already
            cut_below = seg.sbase[g] + tl[t] <= seg.start[g]
            self._chk(m, f"seg{g}_dead", seg.used[g] & ~alive, [inside | cut_below])

    def _disjoint(self, m: Module) -> None:
        """Two used segments of one table hold disjoint positions."""
        seg = self.dut.u.seg
        for g in range(seg.n):
            for h in range(g):
                both = seg.used[g] & seg.used[h] & (seg.tab[g] == seg.tab[h])
                apart = (seg.end[g] <= seg.start[h]) | (seg.end[h] <= seg.start[g])
                self._chk(m, f"apart{h}_{g}", both, [apart])

    def _tiling(self, m: Module) -> None:
        """A used table's PTEs are its used segments' positions: each one held by exactly
        one of them."""
        seg = self.dut.u.seg
        for t in range(seg.n):
            base, top = seg.tbase[t], seg.tbase[t] + seg.tlen[t]
            for p in range(1 << self.dut.POS_BITS):
                holders = [
                    seg.used[g] & (seg.tab[g] == t) & (seg.start[g] <= p) & (p < seg.end[g])
                    for g in range(seg.n)
                ]
                here = seg.tused[t] & (base <= p) & (p < top)
                self._chk(m, f"tile{t}_{p}", here, [count(holders) == 1])

    def _sequences(self, m: Module) -> None:
        """Per sequence: its last segment ends at its length (a drain's: behind it),
        its own one is the top of its table."""
        u = self.dut.u
        seg = u.seg
        P = 1 << self.dut.POS_BITS
        tl = Array(seg.tlen)
        for x in range(seg.s):
            last, ln = seg.last[x], seg.len[x]
            self._chk(m, f"seq{x}_max", 1, [ln <= P])
            self._chk(
                m,
                f"seq{x}_last",
                ln != 0,
                [last < seg.n, seg.used.bit_select(last, 1), Array(seg.seqs)[last][x]],
            )
            draining = u.drain_acc & (u.drain_seq == x)
            self._chk(m, f"seq{x}_end", (ln != 0) & ~draining, [Array(seg.end)[last] == ln])
            lt = Array(seg.tab)[last]
            own = (ln != 0) & seg.excl.bit_select(last, 1)
            end = Array(seg.end)[last]
            top = Array(seg.tbase)[lt] + tl[lt] == end
            self._chk(m, f"seq{x}_top", own, [top | (u.cutting & self._to_cut(lt, end))])
            self._chk(
                m, f"seq{x}_drain", draining, [u.drain_g == last, seg.excl.bit_select(last, 1)]
            )

    def _to_cut(self, t: Value, end: Value) -> Value:
        """The cut job will cut table ``t`` down to position ``end``: a dead segment of
        its chain starts there, not yet scanned, or the cut of ``t`` from ``end`` is
        being issued or streamed."""
        u = self.dut.u
        seg, cut = u.seg, self.dut.state.cut
        ahead = []
        for h in range(seg.n):
            dead = seg.used[h] & ~seg.seqs[h].any() & cut.chain[h]
            here = (seg.tab[h] == t) & (seg.start[h] == end)
            ahead.append(dead & here & ((cut.state == _KILL) | (cut.cur <= seg.start[h])))
        now = ((cut.state == _TEST) & cut.dead) | (cut.state == _ISSUE) | (cut.state == _CUT)
        now = now & (cut.t == t) & (Array(seg.tbase)[t] + cut.c == end)
        return Cat(*ahead).any() | now

    def _background(self, m: Module) -> None:
        """The drain's and the cut job's exclusions; the block table's walker runs only
        for the cut job or an operation past ``ACT``."""
        u, o = self.dut.u, self.o
        s2 = self.dut.state.s2
        spec_ins = (o.op == PoolOp.INSERT) & ~o.committed
        bg = u.cutting | u.drain_acc
        self._chk(m, "bg_fsm", bg & ~self.at("IDLE", "CHECK", "RESULT"), [spec_ins])
        self._chk(m, "rel_idle", self.at("REL"), [~u.drain, ~u.cutting, ~u.ts.busy])
        streams = (o.op == PoolOp.COMMIT) | (o.op == PoolOp.RELEASE) | (o.op == PoolOp.SPILL)
        self._chk(m, "act_idle", self.at("ACT") & streams, [~u.drain, ~u.cutting, ~u.ts.busy])
        self._chk(m, "bg_s2", bg, [~(s2.valid & s2.committed), ~self.at(*SPILLING)])
        cutting = u.cutting & (self.dut.state.cut.state == _CUT)
        frame = self.at("IDLE", "CHECK", "ACT", "REL")
        self._chk(m, "walk", u.bt.state.w.running, [cutting | (~u.cutting & ~frame)])

    def _stage2(self, m: Module) -> None:
        """The fast insert's stage 2: in ``IDLE``; a speculative one's tree window holds
        its position; a block tag's insert is the registered operation."""
        u, o = self.dut.u, self.o
        s2 = self.dut.state.s2
        self._chk(m, "s2_idle", s2.valid, [self.at("IDLE"), ~(s2.tag | s2.tagfast) | s2.committed])
        ts, pb = u.ts, self.dut.POS_BITS
        T = len(ts.st.active)
        sl = s2.slot if T > 1 else Const(0, 1)
        lo = Value.cast(ts.slot_lo).word_select(sl, pb)
        self._chk(
            m,
            "s2_spec",
            s2.valid & ~s2.committed,
            [
                Value.cast(ts.active).bit_select(sl, 1),
                ~Value.cast(ts.draining).bit_select(sl, 1),
                Array(ts.st.seq)[sl] == s2.seq,
                lo <= s2.pos,
                s2.pos < lo + self.dut.MAX_DEPTH,
                s2.slot < T,
            ],
        )
        self._chk(m, "s2_tag", s2.valid & s2.tag, [(o.op == PoolOp.INSERT) & o.committed])

    def _drain(self, m: Module) -> None:
        """A fast commit's drain appends at its segment's end, its table's top, with the
        positions owed within its sequence's length."""
        u = self.dut.u
        seg = u.seg
        P = 1 << self.dut.POS_BITS
        tl = Array(seg.tlen)
        dg, dt = u.drain_g, u.drain_t
        self._chk(
            m,
            "drain",
            u.drain_acc,
            [
                u.drain,
                ~u.cutting,
                u.drain_pos + self.owe == Array(seg.len)[u.drain_seq],
                Array(seg.end)[dg] == u.drain_pos,
                Array(seg.tab)[dg] == dt,
                Array(seg.tbase)[dt] + tl[dt] == u.drain_pos,
                seg.used.bit_select(dg, 1),
                Array(seg.seqs)[dg].bit_select(u.drain_seq, 1),
                dg < seg.n,
                u.drain_seq < seg.s,
                u.drain_pos + self.owe <= P,
                (self.owe != 0) | (tl[dt] != 0),
            ],
        )

    def _cut(self, m: Module) -> None:
        """The cut job: its chain used, its table used, no alive segment above ``c``."""
        u = self.dut.u
        seg, cut = u.seg, self.dut.state.cut
        table = (cut.state == _TEST) | (cut.state == _ISSUE) | (cut.state == _CUT)
        cutting_t = u.cutting & (
            ((cut.state == _TEST) & cut.dead) | (cut.state == _ISSUE) | (cut.state == _CUT)
        )
        for g in range(seg.n):
            mine = seg.seqs[g].any() & (seg.tab[g] == cut.t)
            self._chk(m, f"cut_alive{g}", cutting_t & mine, [seg.end[g] <= seg.sbase[g] + cut.c])
        picked = []
        for h in range(seg.n):
            dead_h = ~seg.seqs[h].any()
            picked.append(
                cut.chain[h]
                & (seg.tab[h] == cut.t)
                & (seg.sbase[h] + cut.c == seg.start[h])
                & (seg.end[h] == cut.cur)
                & (dead_h == cut.dead)
            )
        issuing = (cut.state == _ISSUE) | (cut.state == _CUT)
        self._chk(m, "cut_seg", u.cutting & table, [Cat(*picked).any(), ~issuing | cut.dead])
        edge = Cat(*[cut.chain[h] & (seg.end[h] == cut.cur) for h in range(seg.n)]).any()
        self._chk(
            m,
            "cut_ln",
            u.cutting,
            [cut.ln <= (1 << self.dut.POS_BITS), cut.cur <= cut.ln, (cut.cur == 0) | edge],
        )
        self._chk(m, "chain_used", u.cutting, [(cut.chain & ~seg.used) == 0])
        for g in range(seg.n):
            dead = seg.used[g] & ~seg.seqs[g].any()
            self._chk(m, f"dead{g}", dead, [u.cutting, cut.chain[g], seg.end[g] <= cut.ln])
            t = seg.tab[g]
            base = seg.sbase[g]
            scanned = (cut.state != _KILL) & (seg.start[g] < cut.cur)
            cut_below = base + Array(seg.tlen)[t] <= seg.start[g]
            now = ((cut.state == _TEST) & cut.dead) | (cut.state == _ISSUE) | (cut.state == _CUT)
            now = now & (cut.t == t) & (base + cut.c <= seg.start[g])
            self._chk(m, f"scanned{g}", dead & scanned, [cut_below | now])
        self._chk(m, "cut_used", u.cutting & issuing, [seg.tused.bit_select(cut.t, 1)])
        issue = u.cutting & (cut.state == _ISSUE)
        self._chk(
            m, "issue", issue, [cut.n == Array(seg.tlen)[cut.t], cut.c < cut.n, cut.t < seg.n]
        )

    def _insert(self, m: Module) -> None:
        """A sequential committed insert: its table and index (an open's, or its own
        segment's top)."""
        u, o, f = self.dut.u, self.o, self.dut.state
        seg = u.seg
        tl, tu = Array(seg.tlen), seg.tused
        ins = self.at("INS", "ALLOC_INS_GO", "GOT_INS_GO", "INS_GO")
        ins_c = (ins | (self.at(*SPILLING) & (f.ret == RET_INSERT))) & o.committed
        own, lastx = self._own(o.seq)
        self._chk(m, "ins_pos", ins_c, [Array(seg.len)[o.seq] == o.pos, f.ln == o.pos])
        self._chk(
            m,
            "ins_open",
            ins_c & f.opening,
            [
                f.i == 0,
                f.t == seg.free_t,
                ~tu.bit_select(seg.free_t, 1),
                ~own,
                o.seq < seg.s,
                f.g == seg.free_g,
                ~seg.used.bit_select(seg.free_g, 1),
            ],
        )
        self._chk(
            m,
            "ins_own",
            ins_c & ~f.opening,
            [
                f.i == tl[f.t],
                tu.bit_select(f.t, 1),
                f.t < seg.n,
                own,
                f.g == lastx,
                f.t == Array(seg.tab)[f.g],
                o.seq < seg.s,
            ],
        )

    def _commit(self, m: Module) -> None:
        """A sequential commit's beats: appended to its sequence's own segment, at the
        top of its table, within the positions."""
        u, o, f = self.dut.u, self.o, self.dut.state
        seg = u.seg
        P = 1 << self.dut.POS_BITS
        tl = Array(seg.tlen)
        before = self.at("CHECK", "ACT", "COM") & (o.op == PoolOp.COMMIT)
        ln0 = Array(seg.len)[o.seq]
        self._chk(m, "com_len", before, [o.acc_len + ln0 <= P])
        self._chk(m, "com_ln", self.at("ACT", "COM") & (o.op == PoolOp.COMMIT), [f.ln == ln0])
        for r, (mine, k) in enumerate(tree_counts(self.dut, o)):
            self._chk(m, f"com_acc{r}", before & mine, [k == o.acc_len])
        ts = u.ts
        com_ok = (self.at("COM") | (self.at("ACT") & (o.op == PoolOp.COMMIT))) & (
            f.code == PoolCode.NONE
        )
        self._chk(
            m,
            "com_slot",
            com_ok,
            [
                o.seq < seg.s,
                f.slot < len(ts.st.active),
                Array(ts.st.seq)[f.slot] == o.seq,
                Value.cast(ts.active).bit_select(f.slot, 1),
                ~Value.cast(ts.draining).bit_select(f.slot, 1),
            ],
        )
        acc_any = f.f["facts"].acc_any
        own, lastx = self._own(o.seq)
        self._chk(m, "com_own", com_ok & own, [f.g == lastx, f.t == Array(seg.tab)[lastx]])
        self._chk(
            m,
            "com_free",
            com_ok & acc_any & ~own,
            [~seg.used.bit_select(seg.free_g, 1), ~seg.tused.bit_select(seg.free_t, 1)],
        )
        owner = u.drain | self._beating()
        self._chk(m, "ts_owner", ts.busy, [owner])
        self._chk(m, "ts_owe", self.owe != 0, [ts.busy, ~u.drain | u.drain_acc])
        self._chk(m, "com_idle", self.at("COM"), [~ts.busy, ~u.drain])
        com = self._beating() & (self.owe != 0)
        ln = Array(seg.len)[o.seq]
        self._chk(
            m,
            "combeat",
            com,
            [
                f.g == Array(seg.last)[o.seq],
                seg.excl.bit_select(f.g, 1),
                Array(seg.seqs)[f.g].bit_select(o.seq, 1),
                seg.used.bit_select(f.g, 1),
                f.t == Array(seg.tab)[f.g],
                Array(seg.end)[f.g] == ln,
                Array(seg.tbase)[f.t] + tl[f.t] == ln,
                ln + self.owe <= P,
                o.seq < seg.s,
            ],
        )

    def _fill(self, m: Module) -> None:
        """A fill's PTE index is below its table's length."""
        u, o, f = self.dut.u, self.o, self.dut.state
        seg = u.seg
        tl = Array(seg.tlen)
        fill = self.at(*FILLING) | (self.at(*SPILLING) & (f.ret == RET_FILL))
        fill = fill & (o.op == PoolOp.FILL)
        act = self.at("ACT") & (o.op == PoolOp.FILL) & (f.code == PoolCode.NONE)
        self._chk(m, "fill", fill | act, [f.i < tl[f.t], seg.tused.bit_select(f.t, 1), f.t < seg.n])

    def _spill(self, m: Module) -> None:
        """A spill's PTE index (its victim's) is below its table's length."""
        u, f = self.dut.u, self.dut.state
        seg = u.seg
        tl = Array(seg.tlen)
        vic = self.at("SP_RD", "SP_RDW", "SP_SLOT", "SP_WR")
        self._chk(
            m, "spill", vic, [f.vi < tl[f.vtab], seg.tused.bit_select(f.vtab, 1), f.vtab < seg.n]
        )

    def _share(self, m: Module) -> None:
        """A share: an empty destination; the source's prefix ``mm`` within its length;
        the segment holding ``mm - 1`` (registered), split at ``mm`` before the bits."""
        u, o, f = self.dut.u, self.o, self.dut.state
        seg, sh = u.seg, f.sh
        ln = Array(seg.len)
        searching = self.at(
            "SH_NEXT", "SH_PROBE", "SH_FOUND", "SH_CMP", "SH_LAST", "SH_APPLY", "SH_BITS"
        )
        self._chk(m, "sh_dst", searching, [o.dst < seg.s, ln[o.dst] == 0])
        ok = self.dut.state.r.code == PoolCode.NONE
        taking = (self.at("SH", "SH_IN") & ok) | (
            self.at("ACT") & (o.op == PoolOp.SHARE) & (f.code == PoolCode.NONE)
        )
        self._chk(m, "sh_in", taking, [o.dst < seg.s, ln[o.dst] == 0])
        found = self.at("SH_CMP", "SH_LAST", "SH_APPLY", "SH_BITS")
        self._chk(m, "sh_src", found, [sh.s < seg.s, sh.mm <= ln[sh.s], sh.mm != 0])
        g = sh.g
        holds = seg.used.bit_select(g, 1) & Array(seg.seqs)[g].bit_select(sh.s, 1) & (g < seg.n)
        holds = holds & (Array(seg.start)[g] < sh.mm)
        self._chk(
            m,
            "sh_apply",
            self.at("SH_APPLY"),
            [holds, sh.mm <= sh.end, sh.end == Array(seg.end)[g]],
        )
        self._chk(m, "sh_bits", self.at("SH_BITS"), [holds, Array(seg.end)[g] == sh.mm])

    def _coverage(self, m: Module) -> None:
        """Per sequence and position: one used segment seen by the sequence holds it
        exactly when it is below the length (a drain's: below its position)."""
        u = self.dut.u
        seg = u.seg
        for x in range(seg.s):
            draining = u.drain_acc & (u.drain_seq == x)
            top = Mux(draining, u.drain_pos, seg.len[x])
            for p in range(1 << self.dut.POS_BITS):
                holders = [
                    seg.used[g] & seg.seqs[g][x] & (seg.start[g] <= p) & (p < seg.end[g])
                    for g in range(seg.n)
                ]
                self._chk(m, f"cov{x}_{p}", 1, [count(holders) == (p < top)])
        cut = self.dut.state.cut
        for p in range(1 << self.dut.POS_BITS):
            holders = [cut.chain[g] & (seg.start[g] <= p) & (p < seg.end[g]) for g in range(seg.n)]
            self._chk(m, f"cov_cut{p}", u.cutting, [count(holders) == (p < cut.ln)])

    def _act(self, m: Module) -> None:
        """``ACT`` of an operation that passed its checks: what they checked still
        holds (nothing but the drain's pushes ran since ``CHECK``)."""
        u, o, f = self.dut.u, self.o, self.dut.state
        seg = u.seg
        ln = Array(seg.len)
        ok = self.at("ACT") & (f.code == PoolCode.NONE)
        fork = ok & (o.op == PoolOp.FORK)
        self._chk(
            m,
            "act_fork",
            fork,
            [o.seq < seg.s, o.dst < seg.s, o.seq != o.dst, ln[o.seq] != 0, ln[o.dst] == 0],
        )
        own, lastx = self._own(o.seq)
        ins = ok & (o.op == PoolOp.INSERT) & o.committed
        self._chk(
            m,
            "act_ins",
            ins,
            [
                o.seq < seg.s,
                ln[o.seq] == o.pos,
                f.opening == ~own,
                f.ln == o.pos,
                ~f.opening | ~seg.tused.bit_select(seg.free_t, 1),
                ~f.opening | ~seg.used.bit_select(seg.free_g, 1),
                f.opening | ((f.g == lastx) & (f.t == Array(seg.tab)[lastx])),
            ],
        )
