"""The pool conserves its pages and HBM slots: ``python -m formal.kvpool_conserve``.

SPEC §4.8's first invariant, ``free_pages + spec_pages + committed_pages ==
PAGES`` and ``hbm_used + hbm_free == HBM_PAGES``, and the HBM-slot
allocator's protocol (:mod:`formal.kvpool_alloc`'s A1 for the second
allocator), proved by k-induction at the pool level (decision 0033): the
harness of :mod:`formal.kvpool_counts` (the whole
:class:`hw.kvpool.ScaledPool` at :data:`formal.kvpool.CONFIG`, every input
free, the shadow page table, the block tables' shadow lengths, the tree
shadow, the page allocator's ``held``, the CUT's ``cnext``) with one more
shadow, ``hheld``: the HBM slots the HBM-slot allocator handed out in an
earlier cycle and that were not pushed back since
(:func:`formal.kvpool_alloc.held_shadow`).

Two inductions, the second assuming what the first proves:

*the pages* (variant ``props``, check ``prove``), asserted every cycle out of
reset:

E1. the page counters against the page allocator: the pages held or shown
    are ``committed_pages + spec_pages + pending``, plus one while an
    operation holds an allocated page it has not counted yet (``GOT_INS_GO``,
    ``INS_GO``, ``GOT_FILL_GO``, ``FILL_GO``, ``FILL_PSC``), at most
    ``PAGES``;
C.  when no operation holds such a page: ``free_pages + spec_pages +
    committed_pages == PAGES`` (the pool's ``free_pages`` output: the
    allocator's free pages plus ``pending``; SPEC §4.8 at every idle point);
K1. ``committed_pages`` (one more in ``FILL_PSC``: the fill's PTE written, its
    count not yet) is the sum of ``end - start - hbm`` over the alive
    segments (by :mod:`formal.kvpool_counts`' N3, their PTEs on chip) plus
    the ACC beats the drain still owes (a fast commit's path, counted when
    taken, appended by the drain);
K2. ``spec_pages`` is the tree shadow's nodes, less the streamed slot's while
    the drain owns the stream, plus a fast speculative insert's stage 2;
K3. ``hbm_used`` (one more while a fill has pushed its slot and not written
    its PTE) is the sum of ``hbm`` over the alive segments, at most
    ``HBM_PAGES``;
Q.  a page is shown only to its consumer (``GOT_*``, a fast insert's stage 2);
    outside a drain or a cut ``pending`` is 0 and every resident PTE is held
    by an alive segment (a commit and a release overwrite ``pending``);
R.  an insert past its checks (``ACT``, ``INS``) or a fill (``FILL_ALLOC``)
    that finds no page free can spill (its ``NO_PAGE`` check, registered in
    ``CHECK``, stays true); a spill's states have ``hbm_used < HBM_PAGES``
    and no cut;
A14room, for :mod:`formal.kvpool_segproto`
    (:func:`formal.kvpool_seg_derived.hbm_room`): a spill's segment holds a
    position on chip, a fill's one in HBM (by N3);

*the HBM slots* (variant ``slots``, check ``slots``), asserted every cycle out
of reset with the pages' properties assumed. The *owners* of an HBM slot
``q``: a resident PTE (below its table's shadow length, or in the window a
CUT still streams) with ``loc = 1`` and ``addr = q``, except a fill's own PTE
once the fill has pushed its slot (``FILL``: the PTE keeps it until the
fill's WRITE); the operation FSM's ``addr`` in ``SP_WR`` (a spill's slot, not
yet written).

H1. a push to the HBM-slot allocator is of a slot it handed out and has not
    taken back (in ``hheld`` or shown this cycle);
H2. a spill's allocation (``SP_RDW``) finds a free slot; the allocator shows
    a slot only in ``SP_SLOT``, never a held one;
O2. every owner's slot is held, no two owners name the same slot, and the
    owners are as many as the slots held: each held slot has one owner;
E2. the HBM counters against the HBM-slot allocator: the slots held or shown
    are ``hbm_used``, plus the cut's ``hpending`` while a cut runs, plus one
    in a spill's ``SP_SLOT``, ``SP_WR`` and ``SP_FREE`` (allocated, counted
    in ``SP_FREE``'s cycle), at most ``HBM_PAGES``;
C.  outside those spill states: ``hbm_used + hbm_free + hpending ==
    HBM_PAGES``, the cut's ``hpending`` counted only while it runs;

with the HBM-slot allocator's FIFO invariants
(:func:`formal.kvpool_alloc.fifo_invariants` against ``hheld``).

Assumed by both (every cycle out of reset): :mod:`formal.kvpool_counts`'
assumptions (C1, T1 - T3, V1, V2, G2, G3, D7) and, as facts proved by other
inductions under assumptions this proof makes too, what they assert:
:mod:`formal.kvpool_counts`' P1, N1 - N4 and their invariants, and
:mod:`formal.kvpool_allocproto`'s A1, O1 and theirs, with the page
allocator's FIFO invariants. An invariant that holds in every reachable
state constrains nothing reachable, so assuming it is sound; it makes the
induction's arbitrary first state one the other proofs allow.

Checks (:data:`CHECKS`): ``prove`` (the pages: k-induction up to
:data:`PROVE_DEPTH`, must close), ``slots`` (the HBM slots: the same, must
close), ``weak`` (H1 alone, without the other proofs' facts: the induction
must stop ``UNKNOWN``), ``negated`` (E1 without the pages an operation holds
uncounted: a BMC must refute it, reaching a sequential insert's allocated
page). No witnesses: a fill's and a cut's HBM pushes need a spill first (a
spill's WRITE is 21 steps from reset, :mod:`formal.kvpool_tlbproto`), and a
BMC of this harness runs out of memory at step 23. Measured in
``build/reports/formal_kvpool.json`` (rows ``conserve:``).
"""

import sys

from amaranth import Cat, Const, Module, Mux, Value
from amaranth.utils import bits_for

from formal.kvpool import CONFIG, count
from formal.kvpool_alloc import fifo_invariants, held_shadow
from formal.kvpool_allocproto import FILL_ON, AllocProtocolFormal
from formal.kvpool_counts import CountsFormal
from formal.kvpool_proto import harness_run, proof_check, weak_check
from formal.kvpool_proto_inv import SPILLING
from formal.kvpool_seg_derived import hbm_room
from formal.leaf import LeafChecks
from hw.common import sum_tree
from hw.kvpool.layouts import PoolCode, PoolOp
from hw.kvpool.pool_spill import RET_FILL

__all__ = ["ConserveFormal", "CONFIG", "run", "build_parser", "parse_args", "main"]

PROVE_DEPTH = 2
#: the pages; the HBM slots (the pages assumed); E1 off by one; H1 alone
VARIANTS = ("props", "slots", "negated", "weak")
#: no witnesses: a fill's and a cut's HBM pushes come after a spill (21 steps from
#: reset, decision 0027) and beyond what the solver holds in memory (step 23)
REACH: dict[str, str] = {}
#: the states in which an operation holds an allocated page it has not counted (E1)
UNCOUNTED = ("GOT_INS_GO", "INS_GO", "GOT_FILL_GO", "FILL_GO", "FILL_PSC")
#: the states in which a spill holds an HBM slot it has not counted (E2)
SLOTTED = ("SP_SLOT", "SP_WR", "SP_FREE")


class ConserveFormal(CountsFormal):
    """The pool, the shadows of :class:`formal.kvpool_counts.CountsFormal` and
    ``hheld``: the pages' properties (``props``) or the HBM slots' (``slots``, the
    pages' assumed), under its assumptions and the properties it and
    :class:`formal.kvpool_allocproto.AllocProtocolFormal` prove.

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

    # ------------------------------------------------------------------ shadows
    def _shadows(self, m: Module) -> None:
        super()._shadows(m)
        h = self.dut.u.halloc
        h.elaborate(None)  # the probe's FIFO reads (the same module later)
        self.hheld, self.hshown = held_shadow(m, h, "fv_hheld")

    # ------------------------------------------------------------------ proved facts
    def _proved(self, m: Module) -> None:
        """What :mod:`formal.kvpool_counts` and :mod:`formal.kvpool_allocproto` prove,
        assumed (their ``props`` properties, stated by their own methods)."""
        with self.assuming(variant="props"):
            CountsFormal._properties(self, m)  # P1, N1 - N4, their invariants
            AllocProtocolFormal._properties(self, m)  # A1, O1, their invariants

    # ------------------------------------------------------------------ properties
    def _properties(self, m: Module) -> None:
        if self.variant != "weak":
            self._proved(m)
        if self.variant == "negated":
            self._pages(m, negated=True)
            return
        if self.variant == "weak":
            h = self.dut.u.halloc
            self._chk(m, "h1", h.push, [(self.hheld | self.hshown).bit_select(h.push_page, 1)])
            return
        if self.variant == "slots":
            with self.assuming():  # the pages part, proved by ``props``
                self._page_part(m)
            self._slot_part(m)
        else:
            self._page_part(m)

    def _page_part(self, m: Module) -> None:
        """The pages: E1, C's pages, K1 - K3, Q, R, ``A14room``."""
        self._pages(m)
        self._quiet(m)
        self._counters(m)
        self._allocating(m)

    def _slot_part(self, m: Module) -> None:
        """The HBM slots: H1, H2, O2, E2, C's slots."""
        h = self.dut.u.halloc
        self._chk(m, "h1", h.push, [(self.hheld | self.hshown).bit_select(h.push_page, 1)])
        fifo_invariants(m, h, self.hheld)
        self._chk(m, "h_shown", h.page_valid, [~self.hheld.bit_select(h.page, 1)])
        self._h_owners(m)
        self._h_flight(m)
        self._slots(m)

    def _filling(self) -> Value:
        """A fill has pushed its HBM slot and not yet written its PTE (its segment's
        ``hbm`` not yet decremented)."""
        f = self.dut.state
        spilling = self.at(*SPILLING) & (f.ret == RET_FILL)
        return (f.r.o.op == PoolOp.FILL) & (self.at(*FILL_ON) | spilling)

    def _h_owners(self, m: Module) -> None:
        """O2: the HBM slots' owners (a ``(here, slot)`` term each) name held slots, no
        two the same, and are as many as the slots held (a bijection onto ``hheld``;
        stated pairwise, which the solver closes, rather than as a count per slot)."""
        u, f = self.dut.u, self.dut.state
        fill = self._filling()
        S = 1 << len(u.bt.cmd.payload.i)
        terms = []
        for t, i, res, loc, _p in self._entries():
            mine = fill & (f.t == t) & (f.i == i)
            terms.append((res & loc & ~mine, self.ptes[t * S + i][1:]))
        terms.append((self.at("SP_WR"), f.addr))
        for k, (here, slot) in enumerate(terms):
            self._chk(m, f"hown{k}", here, [self.hheld.bit_select(slot, 1)])
            for j, (there, other) in enumerate(terms[:k]):
                self._chk(m, f"hone{k}_{j}", here & there, [slot != other])
        width = bits_for(len(terms))
        owners = sum_tree([here.as_unsigned() for here, _ in terms], width)
        self._chk(m, "hcount", 1, [owners == count(list(self.hheld))[:width]])

    def _h_flight(self, m: Module) -> None:
        """H2, and where the HBM-slot allocator's page is shown and taken."""
        u = self.dut.u
        h = u.halloc
        self._chk(m, "h2", self.at("SP_RDW"), [h.free_pages != 0])
        self._chk(m, "h_alloc", h.alloc, [self.at("SP_RDW")])
        self._chk(m, "h_got", h.page_valid, [self.at("SP_SLOT")])
        self._chk(m, "h_slot", self.at("SP_SLOT"), [h.page_valid])

    def _allocating(self, m: Module) -> None:
        """R (an allocation with no page free can spill: the operation's ``NO_PAGE``
        check found room; a spill has room and no cut), K3's bound, ``A14room``."""
        u, f = self.dut.u, self.dut.state
        page_free = (u.alloc.free_pages != 0) | (u.pending != 0)
        can_spill = (u.committed_pages != 0) & (u.hbm_used < self.dut.HBM_PAGES)
        ins = self.at("ACT") & (f.r.o.op == PoolOp.INSERT) & (f.code == PoolCode.NONE)
        allocating = (self.at("INS", "FILL_ALLOC") | ins) & ~page_free
        self._chk(m, "h_ins", allocating, [can_spill])
        room = self.at(*SPILLING)
        self._chk(m, "h_room", room, [u.hbm_used < self.dut.HBM_PAGES, ~u.cutting])
        self._chk(m, "h_bound", 1, [u.hbm_used <= self.dut.HBM_PAGES])
        # segproto's remaining A14 room: a spill's or a fill's segment has the position
        self._chk(m, "a14room", 1, hbm_room(u.seg))

    def _pages(self, m: Module, negated: bool = False) -> None:
        """E1 (``negated``: without the pages an operation holds uncounted), and C's pages
        when no operation holds one uncounted."""
        u = self.dut.u
        a = u.alloc
        w = len(u.committed_pages)
        held = (count(list(self.held)) + a.page_valid)[:w]
        uncounted = self.at(*UNCOUNTED)
        total = u.committed_pages + u.spec_pages + u.pending + (0 if negated else uncounted)
        self._chk(m, "e1", 1, [held == total[:w]])
        if not negated:
            self._chk(m, "e1_le", 1, [total <= a.PAGES])
            free = (a.free_pages + u.pending + u.spec_pages + u.committed_pages)[:w]
            self._chk(m, "c_pages", ~uncounted, [free == a.PAGES])

    def _quiet(self, m: Module) -> None:
        """What E1 needs at a commit's or a release's overwrite of ``pending``: a page is
        shown only to its consumer; outside a drain or a cut nothing is pending, and
        every resident PTE is held by an alive segment (N1's and N2's ``D0``, ``D1``
        are 0)."""
        u, f = self.dut.u, self.dut.state
        got = self.at("GOT_INS_GO", "GOT_FILL_GO") | f.s2.valid
        self._chk(m, "e1_shown", u.alloc.page_valid, [got])
        self._chk(m, "e1_quiet", ~u.drain & ~u.cutting, [u.pending == 0])
        for t, i, res, _loc, p in self._entries():
            self._chk(m, f"orphan{t}_{i}", res & ~u.cutting, [self._held(t, p)])

    def _counters(self, m: Module) -> None:
        """K1 - K3: ``committed_pages`` and ``hbm_used`` against the alive segments'
        positions on chip and in HBM (N3: their PTEs), ``spec_pages`` against the tree
        shadow."""
        u, f = self.dut.u, self.dut.state
        seg, s2 = u.seg, f.s2
        w = len(seg.end[0])
        on_chip = [
            Mux(seg.used[g] & seg.seqs[g].any(), (self._span(g) - seg.hbm[g])[:w], 0)
            for g in range(seg.n)
        ]
        c0 = sum_tree(on_chip, w + bits_for(seg.n))
        owed = Mux(u.drain_acc, self.owe, 0)  # a fast commit's path, counted, not appended
        self._chk(m, "k1", 1, [u.committed_pages + self.at("FILL_PSC") == c0 + owed])
        in_hbm = [Mux(seg.used[g] & seg.seqs[g].any(), seg.hbm[g], 0) for g in range(seg.n)]
        h0 = sum_tree(in_hbm, w + bits_for(seg.n))
        self._chk(m, "k3", 1, [u.hbm_used + self._filling() == h0])
        nv, _ = self._streamed()
        nodes = sum((count(list(r)) for r in self.nval), Const(0, 8))
        spec = nodes + (s2.valid & ~s2.committed)
        self._chk(m, "k2", 1, [u.spec_pages + Mux(u.drain, count(list(nv)), 0) == spec])

    def _slots(self, m: Module) -> None:
        """E2, and C's slots when no spill holds one."""
        u = self.dut.u
        h = u.halloc
        w = len(u.hbm_used)
        hp = Cat(self.dut.state.cut.hpending)
        cut = (hp & u.cutting.replicate(len(hp)))[:w]
        held = (count(list(self.hheld)) + h.page_valid)[:w]
        total = u.hbm_used + cut + self.at(*SLOTTED)
        self._chk(m, "e2", 1, [held == total[:w], total <= h.PAGES])
        free = (h.free_pages + u.hbm_used + cut)[: w + 1]
        self._chk(m, "c_slots", ~self.at(*SLOTTED), [free == h.PAGES])


#: the harness's runs (:func:`formal.kvpool_proto.harness_run`)
run = harness_run(ConserveFormal, "kvpool_conserve", PROVE_DEPTH)


#: what the ``slots`` check proves
SLOTS = "H1, H2, O2, E2, C's slots (assuming the pages' properties too)"


#: the ``slots`` check (:func:`formal.kvpool_proto.proof_check`)
_slot_proof = proof_check(run, "slots", SLOTS)


#: the ``weak`` check (:func:`formal.kvpool_proto.weak_check`)
_weak = weak_check(run, "H1", depth=2)


#: the checks and the command line (:class:`formal.leaf.LeafChecks`)
LEAF = LeafChecks(
    module="formal.kvpool_conserve",
    title="the pool conserves its pages and HBM slots",
    doc=__doc__,
    config=CONFIG,
    run=run,
    unit="pool",
    props="E1, C's pages, K1 - K3, Q, R, A14room (assuming counts' and allocproto's results)",
    negated="E1 without an operation's uncounted page: refuted",
    unprotected=None,
    reach=REACH,
    label="conserve:",
    extra={"slots": _slot_proof, "weak": _weak},
)
CHECKS = LEAF.checks
build_parser, parse_args, main = LEAF.build_parser, LEAF.parse_args, LEAF.main

if __name__ == "__main__":
    sys.exit(main())
