"""The pool keeps the page allocator's protocol: ``python -m formal.kvpool_allocproto``.

The pool's side of :mod:`formal.kvpool_alloc`'s contract (its A1), closed at
the pool level: the harness of :mod:`formal.kvpool_tlbproto` (the whole
:class:`hw.kvpool.ScaledPool` at :data:`formal.kvpool.CONFIG`, every input
free, the shadow page table and the block tables' shadow lengths) built on
:class:`formal.kvpool_probes.AllocPool` (the allocators' FIFOs probed), with
three more shadows:

* ``held``: the on-chip pages the page allocator handed out in an earlier
  cycle and that were not pushed back since (:func:`formal.kvpool_alloc.held_shadow`);
* the *tree shadow*: per tree slot and node, ``nval`` and ``npage``: set by
  an ADD the tree slots take (their own ``ok``: in range, not the slot
  streamed, in the window), cleared by an OPEN they take and by the node's
  ACC or REJ beat taken;
* ``cnext``: the next index of the block table's CUT in progress (a CUT's
  ``c`` when taken, one more per beat taken).

The *owners* of an on-chip page ``p``: a PTE with ``loc = 0`` and ``addr =
p`` of a table at an index below its shadow length, or at an index a CUT
still streams (``cnext <= i < n`` of the walk's table); a tree node with
``nval`` and ``npage = p``; the operation FSM's ``page`` in ``INS_GO`` and
``FILL_GO`` (allocated, not yet written); its ``vpage`` in ``SP_FREE`` (a
spilled page, its PTE already rewritten to HBM).

Property (asserted every cycle out of reset):

A1. a push to the page allocator is of a page it handed out and has not
    taken back: ``push_page`` in ``held`` or shown this cycle
    (:mod:`formal.kvpool_alloc`'s assumption, here proved of the pool);

with the invariant that makes it inductive, SPEC §4.3's *no leak, no double
allocation* on the pool's own state:

O1. every on-chip page has as many owners as it is held: one if ``held``,
    else none (a page shown this cycle has none yet; a page in the free FIFO
    none);

and the pool's side of the tree slots' contract (:mod:`formal.kvpool_ts`,
which proves T1 - T3 of the leaf under it):

S1. every ADD the tree slots take is of a slot in range, active, not the
    slot streamed, of a node not valid in it, at a position in its window;
S2. every COMMIT they take is of an active slot in range.

So the allocator's leaf proof (no page handed out twice while held,
``free_pages`` plus the held pages is ``PAGES``), which assumes A1, holds
inside the pool, and with O1 ``free_pages`` plus the pages the pool's
structures hold is ``PAGES``.

Assumed (every cycle out of reset): :mod:`formal.kvpool_tlbproto`'s
assumptions (C1, T1, T2, V1, G2) and:

T3. the tree slots': a beat comes while ``busy``; an ACC or REJ beat is of a
    node of the streamed slot in the tree shadow, with its ``npage``; the END
    beat comes when no node of the slot is left (what the leaf streams when ``valid & accept`` is an
    ancestor chain from ``d0``, the sampler's contract C1 trusts);
V2. the page states': a spill's victim page is the page of its PTE
    (``loc = 0``, ``addr = page``; V1's live PTE);
G3. the block table's property 3 (:mod:`formal.kvpool_bt`): a CUT's beat is
    of index ``cnext``, below the walk's end, with the shadow's PTE;
P1. the pool's page accounting: while the drain pushes a tree's rejected
    pages (``drain``, its accepted path done, no cut running), ``pending`` is
    not 0 (it counts the pages the cut and the drain still push; a spill in
    that window would push in the drain's cycle).

T1 - T3 are proved of the tree slots by :mod:`formal.kvpool_ts` under S1, S2
(asserted here) and the sampler's ancestor chain (C1's); V2 is a contract of
the page states, whose leaf's side :mod:`formal.kvpool_ps` proves (the pool's
:mod:`formal.kvpool_pslink`, decisions 0036, 0037); P1
is proved by :mod:`formal.kvpool_counts` under this proof's other contracts (the
page counters against the page table).

Asserted with A1 and O1: B1, :mod:`formal.kvpool_proto_inv`'s invariants
and :mod:`formal.kvpool_tlbproto`'s key invariants, the allocator's FIFO
invariants (:func:`formal.kvpool_alloc.fifo_invariants`: its properties 5
and 6 against ``held``), and the ones O1 adds (:meth:`AllocProtocolFormal._flight`):
the tree shadow against the slots' ``valid`` and ``active``; the CUT's
``cnext`` against its walk; a page allocated is shown in the cycle its
consumer takes it (a fast insert's stage 2, ``GOT_*``), an ``ALLOC_*`` state
finds the allocator not empty; a fill's PTE read and PTE (in HBM until its
WRITE); a spill's victim PTE (the page ``vpage``, below its table's length).

The HBM-slot allocator's A1 is not stated here: it needs the ownership of the
HBM slots and ``hbm_used`` against the PTEs in HBM (:mod:`formal.kvpool_counts`
proves the cut's ``hpending`` and the segments' HBM counts against them).

Checks (:data:`CHECKS`): ``prove`` (k-induction up to :data:`PROVE_DEPTH`:
must close), ``negated`` (A1 of ``push_page ^ 1``: a BMC must refute it),
``weak`` (A1 without O1 and the invariants it adds: the induction must stop
``UNKNOWN``), and the witnesses of :data:`REACH` within
:data:`formal.kvpool_proto.BMC_DEPTH` steps. Measured in
``build/reports/formal_kvpool.json`` (rows ``allocproto:``).
"""

import sys

from amaranth import Array, Cat, Const, Module, Mux, Signal, Value
from amaranth.hdl import Assume
from amaranth.utils import bits_for

from formal.kvpool import CONFIG
from formal.kvpool_alloc import fifo_invariants, held_shadow
from formal.kvpool_probes import AllocPool
from formal.kvpool_proto import harness_run, weak_check
from formal.kvpool_proto_inv import SPILLING
from formal.kvpool_tlbproto import TLBProtocolFormal
from formal.kvpool_ts import addable, committable, node_stream, tree_shadow
from formal.leaf import LeafChecks
from hw.common import sum_tree
from hw.kvpool.blocktable import BtCmd
from hw.kvpool.layouts import PoolOp
from hw.kvpool.pool_release import _CUT
from hw.kvpool.pool_score import QUEUE
from hw.kvpool.pool_spill import RET_FILL, RET_INSERT, RET_SPILL
from hw.kvpool.treeslots import TsCmd

__all__ = ["AllocProtocolFormal", "CONFIG", "run", "build_parser", "parse_args", "main"]

PROVE_DEPTH = 2
#: A1, O1 and the invariants; A1 of push_page XOR 1; A1 alone
VARIANTS = ("props", "negated", "weak")
#: states the assumptions must allow (asserted absent: the counterexample is the witness)
REACH = {
    "rej": "a rejected node's page pushed by the drain",
    "cut": "a cut page pushed by the cut job (a CUT's beat of an on-chip PTE)",
    "reuse": "a page the pool pushed handed out again",
}
#: the fill's states from its PTE's check to its WRITE (the PTE in HBM)
FILL_ON = ("FILL_ALLOC", "ALLOC_FILL_GO", "GOT_FILL_GO", "FILL_GO")


class AllocProtocolFormal(TLBProtocolFormal):
    """The pool, ``held``, the tree shadow, ``cnext``, A1, O1, S1, S2, the assumptions of
    :class:`formal.kvpool_tlbproto.TLBProtocolFormal` and T3, V2, G3, P1, and the
    invariants.

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
    POOL = AllocPool

    # ------------------------------------------------------------------ shadows
    def _shadows(self, m: Module) -> None:
        super()._shadows(m)
        a = self.dut.u.alloc
        a.elaborate(None)  # the probe's FIFO reads (the same module later)
        self.held, self.shown = held_shadow(m, a, "fv_held")
        self._tree(m)
        self._cut_next(m)

    def _tree(self, m: Module) -> None:
        """``nval[r]`` and ``npage[r][n]``: the tree shadow
        (:func:`formal.kvpool_ts.tree_shadow`)."""
        self.tree = tree_shadow(m, self.dut.u.ts)
        self.nval, self.npage = self.tree.nval, self.tree.npage

    def _cut_next(self, m: Module) -> None:
        """``cnext``: the next index the block table's CUT in progress streams."""
        bt = self.dut.u.bt
        c = bt.cmd.payload
        self.cnext = Signal(len(c.n), name="fv_cnext")
        with m.If(self.take & (c.kind.as_value() == BtCmd.CUT.value)):
            m.d.sync += self.cnext.eq(Mux(c.i > c.n, c.n, c.i))
        with m.Elif(bt.out.valid & bt.out.ready):
            m.d.sync += self.cnext.eq(self.cnext + 1)

    # ------------------------------------------------------------------ assumptions
    def _assumptions(self, m: Module) -> None:
        super()._assumptions(m)
        self._node_stream(m)
        self._victim_page(m)
        self._cut_stream(m)
        self._pending(m)

    def _streamed(self) -> tuple[Value, Value]:
        """The tree shadow of the slot streamed: ``(nval, npage of the beat's node)``."""
        return self.tree.streamed(self.dut.u.ts)

    def _node_stream(self, m: Module) -> None:
        """T3 (:func:`formal.kvpool_ts.node_stream`)."""
        m.d.comb += [Assume(x) for x in node_stream(self.dut.u.ts, self.tree)]

    def _victim_page(self, m: Module) -> None:
        """V2."""
        with m.If(self.dut.u.ps.done & self.at("SP_VWAIT")):
            m.d.comb += [Assume(x) for x in self._victim_page_ok()]

    def _victim_page_ok(self) -> list[Value]:
        """V2's condition on a spill's VICTIM answer: its PTE maps its page on chip."""
        u = self.dut.u
        ps, seg = u.ps, u.seg
        v = ps.victim
        i = (v.pos - Array(seg.tbase)[v.tab])[: self.dut.POS_BITS]
        return [self._pte(v.tab, i) == Cat(Const(0, 1), v.page)]

    def _cut_stream(self, m: Module) -> None:
        """G3."""
        bt = self.dut.u.bt
        w, o = bt.state.w, bt.out.payload
        ok = (
            w.running
            & w.is_cut
            & (o.i == self.cnext)
            & (self.cnext < w.n)
            & (self._pte(w.t, o.i) == Cat(o.pte.loc, o.pte.addr))
        )
        m.d.comb += Assume(~bt.out.valid | ok)

    def _pending(self, m: Module) -> None:
        """P1."""
        u = self.dut.u
        nv, _ = self._streamed()
        rejecting = u.drain & ~u.drain_acc & ~u.cutting & (nv != 0)
        m.d.comb += Assume(~rejecting | (u.pending != 0))

    # ------------------------------------------------------------------ properties
    def _properties(self, m: Module) -> None:
        a = self.dut.u.alloc
        may = self.held | self.shown
        if self.variant == "negated":
            self._chk(m, "a1_lie", a.push, [may.bit_select(a.push_page ^ 1, 1)])
            return
        self._chk(m, "a1", a.push, [may.bit_select(a.push_page, 1)])
        if self.variant == "props":
            self._tree_protocol(m)
            self._b1(m)
            self._invariants(m)
            self._key_invariants(m)
            fifo_invariants(m, a, self.held, self._stmt)
            m.d.comb += self._stmt(~(a.page_valid & self.held.bit_select(a.page, 1)))
            self._owners(m)
            self._flight(m)

    def _owners(self, m: Module) -> None:
        """O1: per page, its owners (a ``(here, page)`` term each) counted against ``held``."""
        u, f = self.dut.u, self.dut.state
        bt = u.bt
        w = bt.state.w
        S = 1 << len(bt.cmd.payload.i)
        terms = []
        for t in range(bt.TABLES):
            for i in range(S):
                pte = self.ptes[t * S + i]
                cutting = w.running & w.is_cut & (w.t == t) & (self.cnext <= i) & (i < w.n)
                terms.append((((i < self.lens[t]) | cutting) & ~pte[0], pte[1:]))
        for nv, row in zip(self.nval, self.npage, strict=True):
            terms += [(nv[n], page) for n, page in enumerate(row)]
        terms.append((self.at("INS_GO", "FILL_GO"), f.page))
        terms.append((self.at("SP_FREE"), f.vpage))
        width = bits_for(len(terms))
        for p in range(u.alloc.PAGES):
            n = sum_tree([(here & (page == p)).as_unsigned() for here, page in terms], width)
            self._chk(m, f"own{p}", 1, [n == self.held[p]])

    def _flight(self, m: Module) -> None:
        """What O1 adds: the tree shadow, the CUT's ``cnext``, pages allocated and in
        flight, a fill's and a spill's PTE."""
        self._tree_flight(m)
        self._walk_flight(m)
        self._spec_adds(m)
        self._spill_flight(m)
        self._alloc_flight(m)
        self._pte_flight(m)

    def _tree_flight(self, m: Module) -> None:
        """The tree shadow against the slots' ``valid`` and ``active``."""
        st = self.dut.u.ts.st
        for r, nv in enumerate(self.nval):
            streamed = (st.phase != 0) & (st.cs == r)
            self._chk(m, f"nval{r}", ~st.active[r], [nv == 0])
            self._chk(m, f"nval{r}_idle", st.active[r] & ~streamed, [nv == st.valid[r]])
            self._chk(m, f"nval{r}_out", streamed, [(nv & ~st.valid[r]) == 0])

    def _walk_flight(self, m: Module) -> None:
        """The block table's walk: idle stages when stopped, a CUT's for the cut job,
        ``cnext`` against its stages."""
        u = self.dut.u
        w = u.bt.state.w
        v1, v2, v3 = w.v
        self._chk(m, "w_idle", ~w.running, [~v1 & ~v2 & ~v3])
        cut = self.dut.state.cut
        self._chk(m, "w_cut", w.running & w.is_cut, [u.cutting, cut.state == _CUT])
        self._chk(
            m,
            "cnext",
            w.running & w.is_cut,
            [
                self.cnext == w.j - v1 - v2 - v3,
                self.cnext <= w.n,
                self.lens[w.t] <= self.cnext,
            ],
        )

    def _spill_flight(self, m: Module) -> None:
        """Spills beside the drain, posted scores beside the frame."""
        u, f = self.dut.u, self.dut.state
        o = f.r.o
        # spill(n) waits for the drain in CHECK: its pushes never meet the drain's
        spill_n = self.at("SPL") | (self.at(*SPILLING) & (f.ret == RET_SPILL))
        self._chk(m, "spill_n", spill_n, [~u.drain])
        # an insert's or a fill's spill starts with no page free nor pending (P1: the
        # drain has no rejected page left)
        nv, _ = self._streamed()
        self._chk(m, "spill_drain", self.at(*SPILLING) & u.drain, [nv == 0])
        # posted scores (their PTE reads on port 0) run beside the frame or a
        # speculative insert only (which does not spill while they do)
        spec = (o.op == PoolOp.INSERT) & ~o.committed
        quiet = self.at("IDLE", "CHECK", "RESULT") | (spec & ~self.at(*SPILLING))
        self._chk(m, "score", f.sc.n != 0, [u.scoring, quiet])
        self._chk(m, "score_r", u.scoring, [f.sc.n != 0])
        sc = f.sc
        self._chk(m, "score_q", 1, [sc.ngot <= sc.nrd, sc.nrd <= sc.n, sc.n <= QUEUE])

    def _alloc_flight(self, m: Module) -> None:
        """A page allocated: shown when its consumer takes it; an ``ALLOC_*`` finds one."""
        f, a = self.dut.state, self.dut.u.alloc
        got = self.at("GOT_INS_GO", "GOT_FILL_GO") | f.s2.valid
        self._chk(m, "got", got, [a.page_valid])
        self._chk(m, "alloc", self.at("ALLOC_INS_GO", "ALLOC_FILL_GO"), [a.free_pages != 0])

    def _pte_flight(self, m: Module) -> None:
        """A fill's PTE read (port 0), then its PTE as read, in HBM until its WRITE; a
        spill's victim PTE (below its table's length) maps ``vpage``."""
        f = self.dut.state
        o = f.r.o
        fill = o.op == PoolOp.FILL
        here = self._pte(f.t, f.i)
        (ok, exp) = self.rtrack[0]
        reading = self.at("PTE", "PTE_GOT")
        self._chk(m, "pte_rd", reading, [~self.writing[0], ~self.at("PTE") | (f.wait <= 2)])
        for s in (1, 2):
            at = self.at("PTE") & (f.wait == s)
            self._chk(m, f"fill_rd{s}", fill & at, [ok[s], exp[s] == here])
        self._chk(m, "fill_rd3", fill & self.at("PTE_GOT"), [ok[3], exp[3] == here])
        self._chk(m, "fill_pte", fill & self.at("FILL"), [Cat(f.loc, f.addr) == here])
        on = self.at(*FILL_ON) | (self.at(*SPILLING) & (f.ret == RET_FILL))
        self._chk(m, "fill_hbm", fill & on, [here[0]])
        vic = self.at("SP_RD", "SP_RDW", "SP_SLOT", "SP_WR")
        self._chk(
            m,
            "vpage",
            vic,
            [self._pte(f.vtab, f.vi) == Cat(Const(0, 1), f.vpage), f.vi < self.lens[f.vtab]],
        )

    def _tree_protocol(self, m: Module) -> None:
        """S1 and S2 of :mod:`formal.kvpool_ts` (:func:`~formal.kvpool_ts.addable`,
        :func:`~formal.kvpool_ts.committable`): every ADD taken is addable, every
        COMMIT taken is of an active slot."""
        ts = self.dut.u.ts
        c = ts.cmd.payload
        fire = ts.cmd.valid & ts.cmd.ready
        kind = c.kind.as_value()
        self._chk(m, "s1", fire & (kind == TsCmd.ADD.value), addable(ts, c.slot, c.node, c.pos))
        self._chk(m, "s2", fire & (kind == TsCmd.COMMIT.value), committable(ts, c.slot))

    def _spec_adds(self, m: Module) -> None:
        """A speculative insert's ADD will be taken: a fast one's stage 2, a sequential
        one (its slot the sequence's tree once it has one)."""
        f, o = self.dut.state, self.dut.state.r.o
        s2, ts = f.s2, self.dut.u.ts
        self._chk(
            m,
            "s2_add",
            s2.valid & ~s2.committed,
            addable(ts, s2.slot, s2.owner, s2.pos, s2.seq),
        )
        ins = self.at("INS", "ALLOC_INS_GO", "GOT_INS_GO", "INS_GO")
        ins = (ins | (self.at(*SPILLING) & (f.ret == RET_INSERT))) & ~o.committed
        has = f.f["has_tree"]
        self._chk(m, "ins_slot", ins & has, [f.f["slot"] == f.slot])
        self._chk(m, "ins_add", ins & has, addable(ts, f.slot, o.owner, o.pos, o.seq))
        self._chk(m, "ins_open", ins & ~has, [f.f["facts"].tree_free])

    def _reached(self, m: Module, what: str) -> Value:
        """The state :data:`REACH` names."""
        u = self.dut.u
        a = u.alloc
        if what == "rej":
            return a.push & u.drain & ~u.cutting
        if what == "cut":
            return a.push & u.cutting & u.bt.out.valid
        P = a.PAGES  # "reuse"
        ever = Signal(P, name="fv_ever")  # pushed at least once, in cycles before
        pushed = Mux(a.push, Const(1, P) << a.push_page, 0)[:P]
        m.d.sync += ever.eq(ever | pushed)
        return a.page_valid & ever.bit_select(a.page, 1)


#: the harness's runs (:func:`formal.kvpool_proto.harness_run`)
run = harness_run(AllocProtocolFormal, "kvpool_allocproto", PROVE_DEPTH)


#: the ``weak`` check (:func:`formal.kvpool_proto.weak_check`)
_weak = weak_check(run, "A1")


#: the checks and the command line (:class:`formal.leaf.LeafChecks`)
LEAF = LeafChecks(
    module="formal.kvpool_allocproto",
    title="the pool keeps the page allocator's protocol",
    doc=__doc__,
    config=CONFIG,
    run=run,
    unit="pool",
    props="A1 (the allocator's), O1, S1, S2 (under C1, T1 - T3, V1, V2, G2, G3, P1)",
    negated="A1 of push_page XOR 1 refuted",
    unprotected=None,
    reach=REACH,
    label="allocproto:",
    extra={"weak": _weak},
)
#: the checks of :func:`main`
CHECKS = LEAF.checks
build_parser, parse_args, main = LEAF.build_parser, LEAF.parse_args, LEAF.main

if __name__ == "__main__":
    sys.exit(main())
