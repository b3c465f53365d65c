"""The segment table's derived registers equal their definitions, by k-induction:
``formal.kvpool_seg_derived``.

:class:`hw.kvpool.segtable.SegState` keeps, beside the segment table, registers
derived from it so that the pool's fast paths search no segments: ``excl``,
``sbase``, ``last``, ``xchip`` / ``xhbm`` (see there). The harness
:class:`DerivedFormal` is :class:`formal.kvpool_seg.SegFormal` (its drain's
shadow ``owed`` / ``cov`` and assumptions A1-A10; read its docstring first)
with the controls that one leaves at 0 free too (``app_t``, ``share_last``
and the counters' port ``adj_*``), a free ``gain_g`` and two more shadows: ``fresh``
(an open without its append or ``len_add``: segment ``fresh_g`` of
``fresh_seq`` awaits its first append) and ``pending`` (per segment: a release
left it, holding a position, to one other sequence, and the walk's gain of it,
kind (d) below, has not come: set at ``rel_en`` to ``chain(rel_seq) & rel_gain``
and the segments with ``start < end``, the ones the walk visits; a gain of an
empty one would move nothing). The pool's protocol adds (assumed in every cycle
without reset; stated once by :func:`derived_protocol` on the shadows of
:func:`derived_shadows`; the pool's side is proved by
:mod:`formal.kvpool_segproto`, but A14's ``room`` conditions and its
deltas (c), decision 0031):

A11. an open only when ``own_of(open_seq)`` has no segment (``opening =
     acc_any & ~has_own``); an open with a ``len_add`` is of ``len_seq`` with
     ``len_k != 0`` (``acc_any``); a committed append without its open goes to
     the segment ``fresh`` awaits or else to ``own_of``'s (``own_g``, with
     ``has_own``); a drain's append has ``app_seq = dr_seq`` (``drain_seq``) and
     goes to ``last[dr_seq]`` (``drain_g``: the own or opened segment at the
     ``len_add``, which ``last`` names, unchanged since);
A12. while ``fresh``, nothing but that append (the sequential commit's ``COM``
     opens, ``COM_BEAT`` appends its first accepted node): no other operation,
     no spill, fill or ``adj``;
A13. while a release's walk runs (a used segment is dead, or a gain is
     pending: ``cutting``): no operation of A1 but a bury, no spill or fill
     (only speculative inserts are taken); an ``adj_en`` not of kinds (a)-(c)
     is the gain (d) of one pending segment ``gain_g``: ``adj_seq`` its only
     sequence, deltas its ``end - start - hbm`` and ``hbm`` (the walk's
     ``_gain``); it clears it;
A14. ``hbm_inc`` / ``hbm_dec`` (``SP_FREE`` / ``FILL_GO``) not together, alone or
     beside a drain's append, on a segment below ``SEGS`` with a position on
     chip (``hbm < end - start``) / in HBM; with (a) / (b): ``adj_en = excl[g]``,
     ``adj_seq`` its only sequence / one seeing it, deltas ``(-1, +1)`` /
     ``(+1, -1)``; a share with (c): ``adj_en``, ``adj_seq = share_src``, deltas
     minus the on-chip and HBM positions of ``share_src``'s exclusive segments
     in ``share_mask`` (``SH_BITS``' ``xc``, ``xh``);
A15. a split's ``split_hbm`` (the lower part's HBM positions) is at most the
     segment's ``hbm`` and ``split_m - start``, and ``hbm - split_hbm`` at most
     ``end - split_m``;
A16. a share with ``share_len != 0`` has ``share_last`` in ``share_mask``,
     ending at ``share_len`` (``SH_LAST``: the segment holding ``M - 1``, after
     the split its lower part);
A17. an open has a free block table (a used table is named by a used
     segment, and there are as many tables as segments); a cut to index 0
     (which frees its table) is of a table a dead segment names and no
     alive one (the cut's segment starts at its table's base: the lowest of
     the table's split parts, and a sequence that sees a part sees the
     lower ones).

A fork into its own source (``SAME_SEQ``) needs nothing: of length 0, it sees
no segment (by 1 and 8), so the fork changes nothing. Without any one of
A11-A17 a BMC finds a failure (``run(..., drop=[...])``).

Properties (asserted every cycle after the first reset):

4. ``excl[g] == (popcount(seqs[g]) == 1)`` for every segment;
5. every used segment has ``tab < SEGS`` and ``sbase == tbase[tab]``;
6. for every sequence ``s`` with ``cov(s) != 0``, ``last[s]`` is a used
   segment seen by ``s`` ending at ``cov(s)``; outside a drain of ``s``,
   ``own_of(s)`` (``(has, g)``) is the search ``own(s, len(s))``:
   ``has == own.any()`` and, when ``has``, ``own == 1 << g``;
7. ``xchip[s]`` / ``xhbm[s]`` is the sum (modulo ``2**(POS_BITS + 1)``, the
   counters' width) of ``end - start - hbm`` / ``hbm`` over the segments ``s``
   alone sees (``excl``, bit ``s``) that are not pending: by 11 (pending ones
   are exclusive) the same as ``xchip[s] + pending_chip(s)`` equal to the
   sum over all of them (``pending_chip(s)``: over the pending ones of
   ``s``), likewise ``xhbm``;

and the strengthening invariants: 8. a used segment holds a position, but the
one ``fresh`` awaits and, while a drain is owed, ``last[dr_seq]``; 9. a used
segment's ``hbm + start <= end``; 10. an alive segment's table is used; 11. a
pending segment is used, exclusive, holds a position; while a gain is
pending no drain is owed and no open awaits its append; ``fresh`` names a
used segment seen by ``fresh_seq`` alone, its ``last``, ending at its length.

Proofs are split (assume-guarantee: a property proved to hold in every
reachable state may be assumed in another proof): ``prove`` shows 4-6 and
8-11 assuming 1-3 (proved by :mod:`formal.kvpool_seg` under A1-A10, which
this harness's assumptions include); ``counters`` shows 7 assuming 2-3, 4,
9 and 11, a proof per sequence (each sequence's counters move alone). Proved
together (with the earlier RTL) they did not close in 10 minutes; 7 for all
sequences at once, or written as ``xchip + pending == sum``, is slower too
(sums of sums). Checks (:data:`CHECKS`; times measured with another Yosys job
on the second core): ``prove`` (k = 1, 14 s), ``prove:larger`` (5 segments,
k = 1, 12 s), ``counters`` (k = 1 each, 196 s for the three), ``counters:small``
(``POS_BITS = 2``, k = 1 each, 16 s for the three: the ones ``make test``
runs), ``negated`` (``xhbm`` claimed one short when not 0: refuted at step 4,
after a spill), ``unprotected`` (4-11 without A11-A17: a BMC fails at step 3)
and the witnesses of :data:`REACH` (each BMC about a second; reached at steps
3-5). ``prove`` at ``POS_BITS = 4`` closes too (k = 1, 66 s; it assumes 1-3 at
that size, which :mod:`formal.kvpool_seg` proved in 889 s): no check.
"""

import re
import sys
from collections.abc import Iterable

from amaranth import Cat, Const, Module, Mux, ResetSignal, Signal, Value
from amaranth.hdl import Assert, Assume

from formal import kvpool_seg
from formal.kvpool_seg import OUT, SegFormal, drain_shadow, seg_ops
from formal.leaf import LeafChecks, check_run
from formal.sat import Outcome, convert, solve
from hw.kvpool.segtable import SegState

__all__ = [
    "DerivedFormal",
    "fresh_shadow",
    "pending_shadow",
    "derived_shadows",
    "derived_protocol",
    "hbm_room",
    "share_deltas",
    "size_sum",
    "CONFIG",
    "run",
    "build_parser",
    "parse_args",
    "main",
]

#: the proved size (as :data:`formal.kvpool_seg.CONFIG`)
CONFIG = dict(kvpool_seg.CONFIG)
PROVE_DEPTH = 4
BMC_DEPTH = 10
#: the harness's variants: properties 1-11; property 7 off by one; 1-11 without A11-A17
VARIANTS = ("props", "negated", "unprotected")
#: the added assumptions (``unprotected``: all of them left out)
PRECONDITIONS = ("A11", "A12", "A13", "A14", "A15", "A16", "A17")
#: the controls :data:`formal.kvpool_seg.CONTROLS` leaves out (driven 0 there)
EXTRA = ("app_t", "share_last", "adj_en", "adj_seq", "adj_chip", "adj_hbm")
#: the properties' groups: 1 and 2-3 (proved by :mod:`formal.kvpool_seg`); 4, 9 and 11
#: (exclusive segments, HBM counts, pending gains); 5, 6, 8 and 10 (base copies,
#: last segments, tables); 7 (the counters)
PARTS = ("cover", "wellformed", "excl", "derived", "counters")
#: per part proved (``derived``: 4-6 and 8-11; ``counters``: 7), the groups it asserts
#: and those it assumes (proved on their own)
PROVED = {"derived": ("excl", "derived"), "counters": ("counters",)}
LEMMAS = {"derived": ("cover", "wellformed"), "counters": ("wellformed", "excl")}
#: states the assumptions must allow (asserted absent: the counterexample is the witness)
REACH = {
    "spill_adj": "a spill of an exclusive segment moves its sequence's counters (a)",
    "fill_adj": "a fill of an exclusive segment moves its sequence's counters (b)",
    "share_adj": "a share takes exclusive positions off its source's counters (c)",
    "gain": "a release's walk gives a segment with positions to its one sequence (d)",
    "split_last": "a split moves a sequence's last segment to its upper part",
}


def fresh_shadow(m: Module, st: SegState) -> dict[str, Signal]:
    """``fresh`` (an open of segment table ``st`` without its append or ``len_add``:
    segment ``fresh_g`` of ``fresh_seq`` waits for its first append; any append ends
    it), registers in ``m``'s ``sync`` domain."""
    fresh = Signal(name="fv_fresh")
    fresh_g = Signal(st.gb, name="fv_fresh_g")
    fresh_seq = Signal(st.sb, name="fv_fresh_seq")
    with m.If(st.open_en & ~st.app_en & ~st.len_add):
        m.d.sync += [fresh.eq(1), fresh_g.eq(st.free_g), fresh_seq.eq(st.open_seq)]
    with m.Elif(st.app_en):
        m.d.sync += fresh.eq(0)
    return {"fresh": fresh, "fresh_g": fresh_g, "fresh_seq": fresh_seq}


def pending_shadow(m: Module, st: SegState, gain_g: Value) -> dict[str, Value]:
    """``pending`` (per segment of ``st``: a release left it, holding a position, to one
    other sequence, and its gain has not come: set at ``rel_en`` to ``chain(rel_seq) &
    rel_gain`` and the segments with ``start < end``) and ``gain`` (an ``adj_en`` not
    of a spill, a fill or a share: the gain of segment ``gain_g``, which it clears);
    ``full``: the segments with ``start < end``."""
    pending = Signal(st.n, name="fv_pending")
    full = Cat(*[st.start[g] < st.end[g] for g in range(st.n)])
    gain = st.adj_en & ~st.hbm_inc & ~st.hbm_dec & ~st.share_en
    with m.If(st.rel_en):
        m.d.sync += pending.eq(st.chain(st.rel_seq, "fv_rel_chain") & st.rel_gain & full)
    with m.Elif(gain):
        m.d.sync += pending.eq(pending & ~(Const(1, st.n) << gain_g)[: st.n])
    return {"pending": pending, "gain": gain, "full": full}


def derived_shadows(m: Module, st: SegState, dr: dict, gain_g: Value) -> dict[str, Value]:
    """Every shadow A11-A17 and properties 4-11 read: the drain's ``dr``
    (:func:`formal.kvpool_seg.drain_shadow`: ``dr_seq``, ``owed``), :func:`fresh_shadow`'s,
    :func:`pending_shadow`'s, ``dead`` (the used segments no sequence sees) and
    ``last_dr`` (``last[dr_seq]``)."""
    dead = Cat(*[st.used[g] & ~st.seqs[g].any() for g in range(st.n)])
    pad = [Const(0, st.gb)] * ((1 << st.sb) - st.s)
    last_dr = Cat(*st.last, *pad).word_select(dr["dr_seq"], st.gb)
    return {
        "dr_seq": dr["dr_seq"],
        "owed": dr["owed"],
        **fresh_shadow(m, st),
        **pending_shadow(m, st, gain_g),
        "dead": dead,
        "last_dr": last_dr,
    }


def _size(st: SegState, g: int) -> tuple[Value, Value]:
    """Segment ``g``'s positions on chip (``end - start - hbm``) and in HBM."""
    w = len(st.end[0])
    return (st.end[g] - st.start[g] - st.hbm[g])[:w], st.hbm[g]


def _sel(items: list[Value], i: Value) -> Value:
    """``items[i]`` (0 for ``i`` past the end)."""
    w = len(items[0])
    pad = [Const(0, w)] * ((1 << len(i)) - len(items))
    return Cat(*items, *pad).word_select(i, w)


def size_sum(st: SegState, mask: list[Value], which: int) -> Value:
    """The sum (modulo ``2**(POS_BITS + 1)``) of the segments of ``mask``'s sizes
    (``which``: 0 on chip, 1 in HBM)."""
    w = len(st.end[0])
    total = Const(0, w)
    for g in range(st.n):
        total = (total + Mux(mask[g], _size(st, g)[which], 0))[:w]
    return total


def _one(st: SegState, seq: Value) -> Value:
    return (Const(1, st.s) << seq)[: st.s]


def derived_protocol(
    st: SegState, share_src: Value, gain_g: Value, sh: dict
) -> dict[str, list[Value]]:
    """Assumptions A11-A17 (the module docstring) on segment table ``st``'s controls,
    ``share_src`` (the share's source), ``gain_g`` (a gain's segment) and the shadows
    ``sh`` (:func:`derived_shadows`): per assumption, the conditions that must hold in
    every cycle out of reset (A14 under three keys, ``A14``, ``A14room`` and ``A14c``,
    :func:`_hbm_ops`; ``drop`` names the assumption, all three). Assumed by
    :class:`DerivedFormal`, asserted of the pool by :mod:`formal.kvpool_segproto`:
    one statement of the contract."""
    w = len(st.end[0])
    n_ops, keep = seg_ops(st)
    committed = st.app_en & ~st.app_keep_len
    fresh, fresh_g, fresh_seq = sh["fresh"], sh["fresh_g"], sh["fresh_seq"]
    to_fresh = fresh & (st.app_g == fresh_g) & (st.app_seq == fresh_seq)
    hbm = st.hbm_inc | st.hbm_dec
    a: dict[str, list[Value]] = {}
    has_o, _ = st.own_of(st.open_seq, "fv_own_open")
    has_a, g_a = st.own_of(st.app_seq, "fv_own_app")
    pair = st.open_en & st.len_add
    a["A11"] = [
        ~st.open_en | ~has_o,
        ~pair | ((st.len_k != 0) & (st.len_seq == st.open_seq)),
        ~(committed & ~st.open_en) | to_fresh | (has_a & (st.app_g == g_a)),
        ~keep | ((st.app_seq == sh["dr_seq"]) & (st.app_g == sh["last_dr"])),
    ]
    only_app = (n_ops == 0) | ((n_ops == 1) & committed & to_fresh)
    a["A12"] = [~fresh | (only_app & ~hbm & ~st.adj_en)]
    walk = sh["pending"].any() | sh["dead"].any()
    g = gain_g
    size = _sel([_size(st, h)[0] for h in range(st.n)], g)
    h_g = _sel(st.hbm, g)
    ok = sh["pending"].bit_select(g, 1) & (g < st.n)
    ok &= (_sel(st.seqs, g) == _one(st, st.adj_seq)) & (st.adj_chip == size)
    a["A13"] = [
        ~walk | ((n_ops == st.bury_en.as_unsigned()) & ~hbm),
        ~sh["gain"] | (ok & (st.adj_hbm == h_g)),
    ]
    a |= _hbm_ops(st, share_src, n_ops, keep, w)
    g1h = Const(1, st.n) << st.split_g
    h = st.pick(g1h, st.hbm, "fv_split_hbm")
    start = st.pick(g1h, st.start, "fv_sp_start")
    end = st.pick(g1h, st.end, "fv_sp_end")
    ok = (st.split_hbm <= h) & (start + st.split_hbm <= st.split_m)
    a["A15"] = [~st.split_en | (ok & (st.split_m + h <= end + st.split_hbm))]
    e = _sel(st.end, st.share_last)
    ok = st.share_mask.bit_select(st.share_last, 1) & (e == st.share_len)
    a["A16"] = [~st.share_en | (st.share_len == 0) | ((st.share_last < st.n) & ok)]
    names = [st.used[g] & (st.tab[g] == st.cut_t) for g in range(st.n)]
    alive = Cat(*[names[g] & st.seqs[g].any() for g in range(st.n)])
    dead = Cat(*[names[g] & ~st.seqs[g].any() for g in range(st.n)])
    a["A17"] = [
        ~st.open_en | st.tfree_any,
        ~(st.cut_en & (st.cut_c == 0)) | (dead.any() & ~alive.any()),
    ]
    return a


def _hbm_ops(
    st: SegState, share_src: Value, n_ops: Value, keep: Value, w: int
) -> dict[str, list[Value]]:
    """A14: a spill / fill alone (or beside a drain's append), with its counters'
    deltas (a) / (b) (``A14``), on a segment with a position on chip / in HBM
    (``A14room``); a share's (c) (``A14`` its port, ``A14c`` its deltas)."""
    a = [~(st.hbm_inc & st.hbm_dec)]
    a.append(~(st.hbm_inc | st.hbm_dec) | (n_ops == 0) | ((n_ops == 1) & keep))
    for en, g, dc, dh in ((st.hbm_inc, st.hbm_inc_g, -1, 1), (st.hbm_dec, st.hbm_dec_g, 1, -1)):
        ex = st.excl.bit_select(g, 1)
        seqs = _sel(st.seqs, g)
        who = seqs == _one(st, st.adj_seq) if dc < 0 else seqs.bit_select(st.adj_seq, 1)
        delta = (st.adj_chip == Const(dc % (1 << w), w)) & (st.adj_hbm == Const(dh % (1 << w), w))
        a.append(~en | ((g < st.n) & (st.adj_en == ex) & (~ex | (who & delta))))
    a.append(~st.share_en | (st.adj_en & (st.adj_seq == share_src)))
    return {"A14": a, "A14room": hbm_room(st), "A14c": share_deltas(st, share_src)}


def share_deltas(st: SegState, share_src: Value) -> list[Value]:
    """A14 (c)'s deltas: a share takes off ``share_src``'s counters the on-chip and HBM
    positions of its exclusive segments in ``share_mask``. Asserted of the pool by
    :mod:`formal.kvpool_sharecount`."""
    w = len(st.end[0])
    mask = [
        st.share_mask[g] & st.excl[g] & st.seqs[g].bit_select(share_src, 1) for g in range(st.n)
    ]
    xc, xh = size_sum(st, mask, 0), size_sum(st, mask, 1)
    return [~st.share_en | ((st.adj_chip == (-xc)[:w]) & (st.adj_hbm == (-xh)[:w]))]


def hbm_room(st: SegState) -> list[Value]:
    """A14's ``room``: a spill's segment (``hbm_inc``) holds a position on chip (``hbm +
    start < end``), a fill's (``hbm_dec``) one in HBM (``hbm != 0``). Asserted of the
    pool by :mod:`formal.kvpool_conserve`."""
    room = []
    for en, g, on_chip in ((st.hbm_inc, st.hbm_inc_g, True), (st.hbm_dec, st.hbm_dec_g, False)):
        h = _sel(st.hbm, g)
        here = (h + _sel(st.start, g) < _sel(st.end, g)) if on_chip else (h != 0)
        room.append(~en | here)
    return room


class DerivedFormal(SegFormal):
    """:class:`formal.kvpool_seg.SegFormal` with the shadows of an open's pending append
    and of a release's pending gains, assumptions A11-A17 and properties 4-11."""

    def __init__(
        self,
        *,
        variant: str = "props",
        reach: str | None = None,
        part: str = "derived",
        seq: int | None = None,
        drop: Iterable[str] = (),
        **params: int,
    ) -> None:
        self._MustUse__silence = True  # a refused argument leaves nothing to elaborate
        check_run(variant, reach, VARIANTS, REACH)
        drop = frozenset(drop)
        known = set(kvpool_seg.PRECONDITIONS) | set(PRECONDITIONS)
        if not drop <= known:
            raise ValueError(f"drop = {sorted(drop)}: each must be one of {sorted(known)}")
        if part not in LEMMAS:
            raise ValueError(f"part = {part!r}: must be one of {sorted(LEMMAS)}")
        if seq is not None and not 0 <= seq < {**CONFIG, **params}["SEQS"]:
            raise ValueError(f"seq = {seq!r}: must be a sequence")
        super().__init__(drop=drop & set(kvpool_seg.PRECONDITIONS), **params)
        self.variant, self.reach, self.part, self.seq = variant, reach, part, seq
        new = frozenset(PRECONDITIONS)
        self.ddrop = new if variant == "unprotected" else drop & new
        #: the segment a gain (d) is of (the walk's ``here``; free: A13 constrains it)
        self.gain_g = Signal(self.st.gb, name="gain_g")

    def ports(self) -> list[Signal]:
        """The base harness's free inputs, the controls it leaves out and ``gain_g``."""
        return [*super().ports(), *[getattr(self.st, n) for n in EXTRA], self.gain_g]

    def elaborate(self, platform) -> Module:
        m, st = self._m, self.st
        if self._done:
            return m
        self._done = True
        rst = ResetSignal()
        started = Signal(reset_less=True)
        m.d.sync += started.eq(1)
        with m.If(~started):
            m.d.comb += Assume(rst)
        dr = drain_shadow(m, st)
        dr_seq, owed, cov = dr["dr_seq"], dr["owed"], dr["cov"]
        sh = derived_shadows(m, st, dr, self.gain_g)
        self._protocol(m, rst, dr)
        self._derived_protocol(m, rst, sh)
        with m.If(started):
            if self.reach is not None:
                m.d.comb += Assert(~self._reach(m, rst, sh))
                return m
            if self.variant == "negated":
                self._counters(m, sh, Assert, off=True)
                return m
            chk = {g: _skip for g in PARTS} | {g: Assume for g in LEMMAS[self.part]}
            chk |= {g: Assert for g in PROVED[self.part]}
            if self.variant == "unprotected":
                chk |= {g: Assert for g in ("excl", "derived", "counters")}
            self._cover_p(m, cov, chk["cover"])
            self._wellformed_p(m, dr_seq, owed, chk["wellformed"])
            self._derived(m, sh, cov, chk)
            self._helpers(m, sh, chk)
            self._counters(m, sh, chk["counters"])
        return m

    # ------------------------------------------------------------------ protocol
    def _derived_protocol(self, m: Module, rst: Value, sh: dict) -> None:
        """Assumptions A11-A17 (:func:`derived_protocol`; but those of ``ddrop``), in
        cycles without reset."""
        a = derived_protocol(self.st, self.share_src, self.gain_g, sh)
        with m.If(~rst):
            m.d.comb += [Assume(x) for k, xs in a.items() if _base(k) not in self.ddrop for x in xs]

    # ------------------------------------------------------------------ properties
    def _cover_p(self, m: Module, cov: list, chk) -> None:
        """Property 1 of :mod:`formal.kvpool_seg` (``chk``: assumed, as proved there:
        this harness's assumptions include that one's)."""
        st = self.st
        top = 1 << self.p["POS_BITS"]
        for s in range(st.s):
            for p in range(top):
                f = st.find(Const(s, st.sb), Const(p, len(st.end[0])), f"fv_find{s}_{p}")
                two = [f[g] & f[h] for g in range(st.n) for h in range(g)]
                one = f.any() & ~Cat(*two).any()
                m.d.comb += chk(Mux(p < cov[s], one, f == 0))

    def _wellformed_p(self, m: Module, dr_seq: Signal, owed: Signal, chk) -> None:
        """Properties 2 and 3 of :mod:`formal.kvpool_seg` (assumed, as 1)."""
        st = self.st
        top = 1 << self.p["POS_BITS"]
        for g in range(st.n):
            ok = Mux(st.used[g], (st.start[g] <= st.end[g]) & (st.end[g] <= top), st.seqs[g] == 0)
            m.d.comb += chk(ok)
        m.d.comb += [chk(n <= top) for n in st.len]
        ok = (dr_seq < st.s) & (owed <= st.len_of(dr_seq, "fv_len_dr"))
        m.d.comb += chk((owed == 0) | ok)

    def _derived(self, m: Module, sh: dict, cov: list, chks: dict) -> None:
        """Properties 4-6: ``excl``, ``sbase``, ``last`` and ``own_of``."""
        st, chk = self.st, chks["derived"]
        for g in range(st.n):
            m.d.comb += chks["excl"](st.excl[g] == _single(st.seqs[g]))
            base = _sel(st.tbase, st.tab[g])
            m.d.comb += chk(~st.used[g] | ((st.tab[g] < st.n) & (st.sbase[g] == base)))
        for s in range(st.s if chk is not _skip else 0):
            g = st.last[s]
            ok = (g < st.n) & st.used.bit_select(g, 1) & _sel(st.seqs, g)[s]
            m.d.comb += chk((cov[s] == 0) | (ok & (_sel(st.end, g) == cov[s])))
            seq = Const(s, st.sb)
            own = st.own(seq, st.len[s], f"fv_own{s}")
            has, og = st.own_of(seq, f"fv_ownof{s}")
            same = (has == own.any()) & (~has | (own == (Const(1, st.n) << og)[: st.n]))
            outside = (sh["owed"] == 0) | (sh["dr_seq"] != s)
            m.d.comb += chk(~outside | same)

    def _counters(self, m: Module, sh: dict, chk, off: bool = False) -> None:
        """Property 7 (``off``: ``xhbm`` claimed one less when not 0, which must be
        refuted)."""
        st = self.st
        w = len(st.end[0])
        for s in range(st.s) if self.seq is None else [self.seq]:
            mine = [st.excl[g] & st.seqs[g][s] & ~sh["pending"][g] for g in range(st.n)]
            want = size_sum(st, mine, 1)
            if off:
                want = Mux(want == 0, 0, want - 1)[:w]
            m.d.comb += chk(st.xhbm[s] == want)
            if not off:
                m.d.comb += chk(st.xchip[s] == size_sum(st, mine, 0))

    def _helpers(self, m: Module, sh: dict, chks: dict) -> None:
        """Properties 8-11, the strengthening invariants."""
        st, chk, chx = self.st, chks["derived"], chks["excl"]
        fresh, fg, fs, owed = sh["fresh"], sh["fresh_g"], sh["fresh_seq"], sh["owed"]
        pending = sh["pending"]
        for g in range(st.n):
            # 8: a used segment holds a position, but an open's awaiting its append
            # or the segment a drain appends to
            waits = (fresh & (fg == g)) | ((owed != 0) & (sh["last_dr"] == g))
            m.d.comb += chk(~st.used[g] | sh["full"][g] | waits)
            # 9: its HBM positions are some of its positions; 10: its table is used
            m.d.comb += chx(~st.used[g] | (st.hbm[g] + st.start[g] <= st.end[g]))
            alive = st.used[g] & st.seqs[g].any()
            m.d.comb += chk(~alive | st.tused.bit_select(st.tab[g], 1))
            # 11: a pending gain is of a used, exclusive segment with positions
            m.d.comb += chx(~pending[g] | (st.used[g] & st.excl[g] & sh["full"][g]))
        # 11: an open's awaiting append, a pending gain: nothing else in progress
        fresh_ok = (fg < st.n) & st.used.bit_select(fg, 1) & (fs < st.s)
        fresh_ok &= (_sel(st.seqs, fg) == _one(st, fs)) & (_sel(st.last, fs) == fg)
        fresh_ok &= (_sel(st.end, fg) == st.len_of(fs, "fv_len_fresh")) & (owed == 0)
        m.d.comb += chk(~fresh | fresh_ok)
        m.d.comb += chx(~pending.any() | ((owed == 0) & ~fresh))

    # ------------------------------------------------------------------ witnesses
    def _reach(self, m: Module, rst: Value, sh: dict) -> Value:
        """The state of :data:`REACH` ``self.reach`` (its absence is asserted)."""
        st = self.st
        if self.reach == "spill_adj":
            return ~rst & st.hbm_inc & st.adj_en
        if self.reach == "fill_adj":
            return ~rst & st.hbm_dec & st.adj_en
        if self.reach == "share_adj":
            return ~rst & st.share_en & (st.adj_chip != 0)
        if self.reach == "gain":
            return ~rst & sh["gain"] & (st.adj_chip != 0)
        moved = [(st.last[s] == st.split_g) & (st.len[s] != 0) for s in range(st.s)]
        return ~rst & st.split_en & Cat(*moved).any()


def _base(key: str) -> str:
    """The assumption a key of :func:`derived_protocol` is part of (``"A14room"``:
    ``"A14"``)."""
    return re.match(r"A\d+", key).group()


def _skip(v: Value) -> list:
    """A property neither asserted nor assumed."""
    return []


def _single(v: Value) -> Value:
    """Exactly one bit of ``v`` set (the definition: a sum of its bits)."""
    return sum(v[k].as_unsigned() for k in range(len(v))) == 1


def run(
    task: str,
    *,
    variant: str = "props",
    reach: str | None = None,
    part: str = "derived",
    seq: int | None = None,
    drop: Iterable[str] = (),
    depth: int | None = None,
    out=OUT,
    **params: int,
) -> Outcome:
    """Run ``task`` (``prove``: k-induction up to ``depth``, default
    :data:`PROVE_DEPTH`; ``bmc``: from reset, default :data:`BMC_DEPTH`) on the
    harness's ``variant`` or a :data:`REACH` witness, without the assumptions of
    ``drop``, at :data:`CONFIG` with ``params`` overriding it. A failure leaves its
    trace in ``out/kvpool_segd_<name>/<task>/trace.vcd``.

    Raises
    ------
    ValueError
        An unknown task, variant, witness or assumption.
    """
    h = DerivedFormal(variant=variant, reach=reach, part=part, seq=seq, drop=drop, **params)
    if depth is None:
        depth = PROVE_DEPTH if task == "prove" else BMC_DEPTH
    size = "_".join(f"{k}{v}" for k, v in sorted(params.items()))
    name = f"reach_{reach}" if reach else variant + ("" if part == "derived" else f"_{part}")
    name += "" if seq is None else f"{seq}"
    name += "".join(f"_no{a}" for a in sorted(drop))
    name += f"_{size}" if size else ""
    return solve(convert(h, h.ports()), out / f"kvpool_segd_{name}", task, depth)


#: a second size for properties 4-6 and 8-11 (5 segments: an operand can be out of range)
LARGER = {"SEGS": 5}
#: the size of the counters' quick proof (2 position bits)
SMALL = {"POS_BITS": 2}


def _counters(params: dict) -> tuple[Outcome, bool, str]:
    """Property 7 for each sequence (a proof each): the outcomes joined."""
    outs = [run("prove", part="counters", seq=s, **params) for s in range(CONFIG["SEQS"])]
    bad = [o for o in outs if o.status != "PASS"]
    o = bad[0] if bad else outs[-1]
    o = Outcome(o.status, sum(x.seconds for x in outs), max(x.steps for x in outs), o.log)
    steps = ", ".join(str(x.steps) for x in outs)
    what = f"{LEAF.size(params)}: property 7 by k-induction per sequence, closed at k = {steps}"
    return o, not bad, what


#: the checks and the command line (:class:`formal.leaf.LeafChecks`): properties 4-6
#: and 8-11 by induction at :data:`CONFIG` and :data:`LARGER`; property 7 at
#: :data:`SMALL` and at :data:`CONFIG` (per sequence)
LEAF = LeafChecks(
    module="formal.kvpool_seg_derived",
    title="derived segment registers",
    doc=__doc__,
    config=CONFIG,
    run=run,
    unit="segment table",
    props="properties 4-6, 8-11",
    negated="a sequence's HBM counter claimed one short: refuted",
    unprotected="without A11-A17, a failure",
    reach=REACH,
    label="segd:",
    larger=LARGER,
    extra={"counters:small": lambda: _counters(SMALL), "counters": lambda: _counters({})},
)
#: the checks of :func:`main`: the inductions, the false property, the unprotected
#: run, the witnesses
CHECKS = LEAF.checks
build_parser, parse_args, main = LEAF.build_parser, LEAF.parse_args, LEAF.main

if __name__ == "__main__":
    sys.exit(main())
