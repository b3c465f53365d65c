"""The pool's page counters match its page table: ``python -m formal.kvpool_counts``.

The counters a release reads and the cut job and the drain count down,
closed at the pool level: the harness of :mod:`formal.kvpool_allocproto`
(the whole :class:`hw.kvpool.ScaledPool` at :data:`formal.kvpool.CONFIG`,
every input free, the shadow page table ``ptes``, the block tables' shadow
lengths ``lens``, the tree shadow, the CUT's ``cnext``) with these
definitions, per block table ``t`` and index ``i`` (position ``p = tbase[t]
+ i``):

* ``(t, i)`` is *resident* when ``i < lens[t]`` or a CUT still streams it
  (``cnext <= i < n`` of the walk's table): the PTEs the pool holds;
* it is *doomed* when resident and no alive segment (used, seen by a
  sequence) of table ``t`` holds ``p``: what the cut job of a release still
  frees (a dead segment's PTEs, and the CUT's window);
* ``D0`` / ``D1``: the doomed PTEs with ``loc = 0`` / ``loc = 1``;
* ``rej``: the rejected pages the drain still pushes: while ``drain``, the
  streamed slot's nodes in the tree shadow less the ACC beats owed
  (``|nval[cs]| - owe``), else 0.

Properties (asserted every cycle out of reset):

P1. while the drain pushes a tree's rejected pages (``drain``, its accepted
    path done, no cut running) and nodes are left, ``pending != 0``
    (:mod:`formal.kvpool_allocproto`'s assumption P1, here proved);

with the invariants that make it inductive:

N1. ``pending == D0 + rej``: every page counted free but not yet pushed is a
    doomed on-chip PTE or a rejected node;
N2. while a cut runs, ``hpending == D1``;
N3. every alive segment ``g`` of table ``t``: ``hbm[g]`` is the number of
    resident PTEs of its positions with ``loc = 1`` (one less in ``SP_FREE``
    for the spill's segment ``vg``: its PTE is rewritten, its count not
    yet), and ``end - start - hbm[g]`` the number with ``loc = 0`` (one more
    for a fast insert's committed append in stage 2: counted in the segment,
    not yet in the block table);
N4. a sequential commit's ``left`` (in ``COM_BEAT``, and in a block tag's
    states on the way back to it) is its slot's nodes in the tree shadow; an
    active slot not streamed has ``slot_count`` its valid nodes (what a
    release and a commit count).

A share's split (``SH_APPLY``: the lower part's HBM count ``hb`` from the
compare) needs no invariant here: at this size the share's prefix is a whole
table (``POS_BITS = 4``, blocks of 16), so no segment straddles it
(:mod:`formal.kvpool_proto_inv`'s ``sh_apply``: ``mm <= end``). At a larger
size N3 would need ``hb`` to count the lower part's PTEs in HBM.

Assumed (every cycle out of reset): :mod:`formal.kvpool_allocproto`'s
assumptions but P1 (C1, T1 - T3, V1, V2, G2, G3) and:

D7. the segment table's property 7 (:mod:`formal.kvpool_seg_derived`) outside
    a release's walk (no segment's gain is pending then): ``xchip[s]`` /
    ``xhbm[s]`` is the sum of ``end - start - hbm`` / ``hbm`` over the used
    segments ``s`` alone sees.

Checks (:data:`CHECKS`): ``prove`` (k-induction up to :data:`PROVE_DEPTH`:
must close), ``negated`` (``pending`` claimed never equal to the nodes left
while the drain pushes them: a BMC must refute it, reaching that push),
``weak`` (P1 without N1 - N4 and the invariants: the induction must stop
``UNKNOWN``). Measured in
``build/reports/formal_kvpool.json`` (rows ``counts:``).
"""

import sys

from amaranth import Cat, Module, Mux, Value
from amaranth.hdl import Assume
from amaranth.utils import bits_for

from formal.kvpool import CONFIG, count
from formal.kvpool_allocproto import PROVE_DEPTH, AllocProtocolFormal
from formal.kvpool_proto import harness_run, weak_check
from formal.kvpool_proto_inv import TAGGING
from formal.kvpool_seg_derived import size_sum
from formal.kvpool_tlbproto import TLBProtocolFormal
from formal.kvpool_ts import committable
from formal.leaf import LeafChecks
from hw.common import sum_tree
from hw.kvpool.treeslots import TsCmd

__all__ = ["CountsFormal", "CONFIG", "run", "build_parser", "parse_args", "main"]

#: P1 with N1 - N4 and the invariants; P1 false; P1 alone
VARIANTS = ("props", "negated", "weak")
#: states the assumptions must allow (asserted absent: the counterexample is the witness)
REACH = {
    "rej": "the drain pushes a rejected page with pending at 1",
}


class CountsFormal(AllocProtocolFormal):
    """The pool, the shadows of :class:`formal.kvpool_allocproto.AllocProtocolFormal`,
    P1, N1 - N4, under its assumptions but P1 and D7.

    Parameters
    ----------
    variant : str
        One of :data:`VARIANTS`.
    reach : str or None
        A state of :data:`REACH` asserted absent instead of the properties.

    Raises
    ------
    ValueError
        An unknown variant or witness.
    """

    VARIANTS, REACH = VARIANTS, REACH

    # ------------------------------------------------------------------ assumptions
    def _assumptions(self, m: Module) -> None:
        TLBProtocolFormal._assumptions(self, m)  # C1, T1, T2, V1, G2
        self._node_stream(m)  # T3
        self._victim_page(m)  # V2
        self._cut_stream(m)  # G3
        self._excl_sums(m)  # D7

    def _excl_sums(self, m: Module) -> None:
        """D7: the sums of :func:`formal.kvpool_seg_derived.size_sum` over the used
        segments ``s`` alone sees."""
        u = self.dut.u
        seg = u.seg
        for s in range(seg.s):
            mine = [seg.used[g] & seg.excl[g] & seg.seqs[g][s] for g in range(seg.n)]
            with m.If(~u.cutting):
                m.d.comb += [
                    Assume(seg.xchip[s] == size_sum(seg, mine, 0)),
                    Assume(seg.xhbm[s] == size_sum(seg, mine, 1)),
                ]

    def _span(self, g: int) -> Value:
        seg = self.dut.u.seg
        return (seg.end[g] - seg.start[g])[: len(seg.end[g])]

    # ------------------------------------------------------------------ definitions
    def _entries(self) -> list[tuple[int, int, Value, Value, Value]]:
        """Per ``(t, i)``: ``(t, i, resident, loc, p)``."""
        u = self.dut.u
        bt, seg = u.bt, u.seg
        w = bt.state.w
        S = 1 << len(bt.cmd.payload.i)
        out = []
        for t in range(bt.TABLES):
            for i in range(S):
                pte = self.ptes[t * S + i]
                window = w.running & w.is_cut & (w.t == t) & (self.cnext <= i) & (i < w.n)
                res = (i < self.lens[t]) | window
                out.append((t, i, res, pte[0], seg.tbase[t] + i))
        return out

    def _held(self, t: int, p: Value, which: list[Value] | None = None) -> Value:
        """A used segment of table ``t`` holds position ``p``, of the segments ``which``
        (one condition per segment; by default the alive ones, seen by a sequence: a
        resident PTE there is not doomed)."""
        seg = self.dut.u.seg
        if which is None:
            which = [seg.seqs[g].any() for g in range(seg.n)]
        return Cat(*[self._has(g, t, p) & which[g] for g in range(seg.n)]).any()

    def _has(self, g: int, t: int, p: Value) -> Value:
        """Segment ``g`` is used, of table ``t``, and holds position ``p``."""
        seg = self.dut.u.seg
        return seg.used[g] & (seg.tab[g] == t) & (seg.start[g] <= p) & (p < seg.end[g])

    def _rej(self) -> Value:
        u = self.dut.u
        nv, _ = self._streamed()
        w = len(u.pending)
        return Mux(u.drain, (count(list(nv)) - self.owe)[:w], 0)

    # ------------------------------------------------------------------ properties
    def _properties(self, m: Module) -> None:
        u = self.dut.u
        nv, _ = self._streamed()
        rejecting = u.drain & ~u.drain_acc & ~u.cutting & (nv != 0)
        if self.variant == "negated":
            self._chk(m, "p1_lie", rejecting, [u.pending != count(list(nv))])
            return
        self._chk(m, "p1", rejecting, [u.pending != 0])
        if self.variant == "props":
            self._b1(m)
            self._invariants(m)
            self._tree_protocol(m)
            self._tree_flight(m)
            self._walk_flight(m)
            self._spec_adds(m)
            self._spill_flight(m)
            self._pte_flight(m)
            self._key_invariants(m)
            f = self.dut.state
            self._holds(m, "vg_free", self.at("SP_FREE"), f.vg, f.vtab, f.vpos)
            self._counts(m)

    def _counts(self, m: Module) -> None:
        """N1 - N4."""
        u, f = self.dut.u, self.dut.state
        seg = u.seg
        ents = self._entries()
        alive = [seg.seqs[g].any() for g in range(seg.n)]
        doomed = [(res & ~self._held(t, p), loc) for t, _i, res, loc, p in ents]
        wp = len(u.pending)
        width = bits_for(len(ents))
        d0 = sum_tree([(d & ~loc).as_unsigned() for d, loc in doomed], width)
        d1 = sum_tree([(d & loc).as_unsigned() for d, loc in doomed], width)
        self._chk(m, "n1", 1, [u.pending == (d0 + self._rej())[:wp]])
        ts = u.ts
        c = ts.cmd.payload
        self._chk(m, "drain_ts", u.drain, [ts.busy])
        self._chk(m, "cs_ok", ts.busy, [ts._slot_ok(ts.st.cs)])
        rel = ts.cmd.valid & ts.cmd.ready & (c.kind.as_value() == TsCmd.RELEASE.value)
        self._chk(m, "rel_slot", rel, committable(ts, c.slot))
        cut = f.cut
        self._chk(m, "n2", u.cutting, [cut.hpending == d1])
        s2 = f.s2
        for g in range(seg.n):
            mine = [(res & self._has(g, t, p), loc) for t, _i, res, loc, p in ents]
            c1 = sum_tree([(h & loc).as_unsigned() for h, loc in mine], width)
            c0 = sum_tree([(h & ~loc).as_unsigned() for h, loc in mine], width)
            sp = self.at("SP_FREE") & (f.vg == g)
            pend = s2.valid & s2.committed & (s2.t == seg.tab[g])
            pend = pend & (seg.sbase[g] + s2.i >= seg.start[g]) & (seg.sbase[g] + s2.i < seg.end[g])
            hb = seg.hbm[g] + sp
            self._chk(
                m,
                f"n3_{g}",
                seg.used[g] & alive[g],
                [hb == c1, self._span(g) - hb == c0 + pend],
            )
        self._left(m)

    def _left(self, m: Module) -> None:
        """N4's ``left``, and the tree slots' ``slot_count`` (a release's, a commit's
        count) of an active slot not streamed: its valid nodes."""
        f, ts = self.dut.state, self.dut.u.ts
        st = ts.st
        T = len(st.valid)
        cb = len(ts.slot_count) // T
        for r in range(T):
            streamed = (st.phase != 0) & (st.cs == r)
            word = ts.slot_count[r * cb : (r + 1) * cb]
            self._chk(
                m, f"slotcnt{r}", st.active[r] & ~streamed, [word == count(list(st.valid[r]))]
            )
        nv, _ = self._streamed()
        w = len(f.left)
        beats = self.at("COM_BEAT") | (self.at(*TAGGING) & f.tret)
        self._chk(m, "com_nodrain", beats, [~self.dut.u.drain])
        self._chk(m, "n4_left", beats, [f.left == (count(list(nv)))[:w]])

    def _reached(self, m: Module, what: str) -> Value:
        """The state :data:`REACH` names."""
        u = self.dut.u
        return u.alloc.push & u.drain & ~u.cutting & (u.pending == 1)


#: the harness's runs (:func:`formal.kvpool_proto.harness_run`)
run = harness_run(CountsFormal, "kvpool_counts", PROVE_DEPTH)


#: the ``weak`` check (:func:`formal.kvpool_proto.weak_check`)
_weak = weak_check(run, "P1", depth=2)


#: the checks and the command line (:class:`formal.leaf.LeafChecks`)
LEAF = LeafChecks(
    module="formal.kvpool_counts",
    title="the pool's page counters match its page table",
    doc=__doc__,
    config=CONFIG,
    run=run,
    unit="pool",
    props="P1, N1 - N4 (under C1, T1 - T3, V1, V2, G2, G3, D7)",
    negated="pending claimed never the nodes left while the drain pushes: refuted",
    unprotected=None,
    reach=REACH,
    label="counts:",
    extra={"weak": _weak},
)
CHECKS = LEAF.checks
build_parser, parse_args, main = LEAF.build_parser, LEAF.parse_args, LEAF.main

if __name__ == "__main__":
    sys.exit(main())
