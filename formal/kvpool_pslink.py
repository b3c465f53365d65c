"""The pool's side of the page states' contract: ``python -m formal.kvpool_pslink``.

What :mod:`formal.kvpool_ps` left to the pool (its L1 - L4), and with it V1
and V2, which every whole-pool harness since :mod:`formal.kvpool_proto`
assumes of a spill's VICTIM answer, proved at the pool level (decision 0036):
the harness of :mod:`formal.kvpool_conserve` (the whole
:class:`hw.kvpool.ScaledPool` at :data:`formal.kvpool.CONFIG`, every input
free, the shadow page table ``ptes``, the block tables' shadow lengths, the
tree shadow, ``held``, ``hheld``, the CUT's ``cnext``) with the page states'
*page shadow* (:func:`formal.kvpool_ps_contract.page_shadow`: per page
``written``, ``st``, ``tab``, ``pos``, ``out``; ``vpend``, ``took``).

Assumed (every cycle out of reset): the other leaves' contracts as in
:mod:`formal.kvpool_counts` (C1, T1 - T3, G2, G3, D7) but V1 and V2, and in
their place the page states' own, V-a - V-c
(:func:`formal.kvpool_ps_contract.victim_contract`: a VICTIM's answer names a
live page with its last COMMIT's table and position, ``none`` only when no
page is live, ``done`` once per command, ``cmd.ready`` low exactly while a
VICTIM is pending), which :mod:`formal.kvpool_ps` proves of the leaf under
Q0 - Q2. And, in every cycle *before* the current one (``assuming(past=True)``,
:meth:`formal.leaf.Harness.latch_past`), what :mod:`formal.kvpool_counts`,
:mod:`formal.kvpool_allocproto` and :mod:`formal.kvpool_conserve` (its pages)
prove: those proofs assume V1 and V2, which this one proves, so each may
use the other's results of earlier cycles only (decision 0036 gives the
induction on time that makes the pair sound).

Two inductions, the second assuming what the first proves:

*the commands* (variant ``written``, check ``written``):

L1. Q0 - Q2 for every page-state command the pool issues (SPEC, COMMIT,
    FREE, SCORE): its page below ``PAGES``; ``fresh`` exactly when the page
    was never written since reset;
L2. a VICTIM is pending exactly in ``SP_VWAIT``, and no other command's
    ``done`` is due there;

with W0 (an unwritten page is FREE, at table and position 0, not ``out``),
W1 (a written page is below the page allocator's ``mark``), W2 (the free
FIFO's pages are written), W3 (a held page is written, but the FSM's own
page from its allocation to its first command), W4 (``fresh`` registered at
an allocation is "not written"; an allocation with the FIFO empty has
nothing pending), and the score queue's and port 0's reads (W5 - W12: an
answered entry on chip names a written page; a read in flight while scores
are queued is the queue's; the FSM's reads are over outside the states
that read; no cut, drain path or committed stage 2 beside a queued score;
a sequential score's PTE read as a fill's);

*the mapping* (variant ``props``, check ``prove``), the commands' properties
assumed:

V1. (asserted) a spill's VICTIM answer (``done`` in ``SP_VWAIT``) is found
    and names a live PTE: its table used, its position within the table;
V2. (asserted) that PTE maps the victim's page on chip;
L3. in ``SP_VIC`` and ``SP_VWAIT`` some page is live in the shadow (L3a) and
    ``committed_pages`` is not 0 (L3n);
L4. every live page ``p`` is mapped: ``tbase[tab[p]] <= pos[p]``, the PTE at
    index ``pos[p] - tbase`` of table ``tab[p]`` is resident (below the
    shadow length, or in a CUT's window) and ``{loc = 0, addr = p}``; and
    conversely every resident PTE on chip names a COMMITTED page with that
    table and position, not ``out`` (but the victim shown, until its PTE
    moves to HBM; and a fill's PTE in ``FILL_PSC``, written before its
    COMMIT); every COMMIT names the PTE appended or written in its cycle
    (a table opened in that cycle has its new base); a committed page is
    ``out`` only as the victim of the spill under way.

Each induction is split into goals (:data:`GOALS`, decision 0037): each goal's
labels asserted, the others' assumed of the cycles before, every goal proved
apart (:attr:`formal.leaf.Harness.goal`; sound by induction on time, the goals
checked to cover every assertion once), its step solved by CaDiCaL
(:func:`formal.induct.induct`). Unsplit on Yosys' MiniSat, neither induction
answered within 30 - 40 minutes at ``k = 1``.

Checks (:data:`CHECKS`): ``prove`` (the mapping: k-induction up to
:data:`PROVE_DEPTH`, each goal must close), ``written`` (the commands: the
same), ``weak`` (V1 and V2 alone, without the other proofs' facts and the
invariants: the induction must stop ``UNKNOWN``), ``negated`` (a COMMIT's
position claimed its PTE's XOR 1: a BMC must refute it, reaching the first
committed page). Run by ``make formal``; measured in
``build/reports/formal_kvpool.json`` (rows ``pslink:``).
"""

import sys

from amaranth import Array, Cat, Const, Module, Mux, Value
from amaranth.hdl import Assume

from formal.kvpool import CONFIG, count
from formal.kvpool_allocproto import AllocProtocolFormal
from formal.kvpool_conserve import ConserveFormal
from formal.kvpool_counts import CountsFormal
from formal.kvpool_proto import harness_run, proof_check, weak_check
from formal.kvpool_ps_contract import commandable, page_shadow, victim_contract
from formal.leaf import LeafChecks
from hw.kvpool.blocktable import BtCmd
from hw.kvpool.crc64 import BLOCK
from hw.kvpool.layouts import PoolCode, PoolOp
from hw.kvpool.pagestate import COMMITTED, FREE, PsCmd

__all__ = ["PsLinkFormal", "CONFIG", "run", "build_parser", "parse_args", "main"]

PROVE_DEPTH = 2
VARIANTS = ("props", "written", "negated", "weak")
REACH: dict[str, str] = {}
#: a spill's states after its victim is shown and before its PTE moves to HBM
SHOWN = ("SP_RD", "SP_RDW", "SP_SLOT", "SP_WR")
#: the states that read block-table port 0 for the operation (a share's compare too)
READING = ("PTE", "PTE_GOT", "SP_RD", "SP_RDW", "TAG_RD", "TAG_WAIT", "SH_CMP")


def _fours(label: str, n: int) -> dict[str, tuple[str, ...]]:
    """Goals of four labels each: ``label`` formatted with ``0 .. n - 1`` (named by it
    formatted with the first)."""
    return {
        label.format(k): tuple(label.format(j) for j in range(k, k + 4)) for k in range(0, n, 4)
    }


#: the two inductions' goals, each proved apart (the others assumed of the cycles
#: before): variant -> goal -> its labels (regular expressions); L4's two ways four
#: pages or PTEs a goal
GOALS = {
    "written": {
        "commands": ("l1.*",),
        "victim": ("l2", "w11", "w12"),
        "pages": (r"w[0-3]_.*",),
        "fresh": (r"w4_.*",),
        "answers": (r"w[5-79]_.*", r"w10_.*"),
        "port0": (r"w8.*",),
        "score": (r"score_.*", "act_wait", "pte_first"),
    },
    "props": {
        "v1": ("v1",),
        "v2": ("v2",),
        "l3a": ("l3a",),
        "l3n": ("l3n",),
        **_fours("l4b_{}", CONFIG["PAGES"]),
        "l4out": (r"l4out_.*",),
        **{
            k: v
            for t in range(CONFIG["SEGS"])  # the block tables
            for k, v in _fours(f"l4a_{t}_{{}}", 1 << CONFIG["POS_BITS"]).items()
        },
        "transients": ("l4fill", "l4c", "l4fc", "l4s2", "l4v"),
    },
}


class PsLinkFormal(ConserveFormal):
    """The pool with the page states' shadow, their contract V-a - V-c assumed, V1 and
    V2 asserted."""

    VARIANTS, REACH = VARIANTS, REACH
    GOALS = GOALS

    # ------------------------------------------------------------------ shadows
    def _shadows(self, m: Module) -> None:
        super()._shadows(m)
        self.pss = page_shadow(m, self.dut.u.ps)

    # ------------------------------------------------------------------ assumptions
    def _victim(self, m: Module) -> None:
        """V-a - V-c of the page states (in place of V1, proved here)."""
        ps = self.dut.u.ps
        for conds in victim_contract(ps, self.pss).values():
            m.d.comb += [Assume(x) for x in conds]

    def _victim_page(self, m: Module) -> None:
        """Nothing: V2 is proved here."""

    # ------------------------------------------------------------------ properties
    def _properties(self, m: Module) -> None:
        if self.variant != "weak":
            with self.assuming(variant="props", past=True):
                CountsFormal._properties(self, m)
                AllocProtocolFormal._properties(self, m)
                self._page_part(m)
        guard = self.dut.u.ps.done & self.at("SP_VWAIT")
        if self.variant == "negated":
            self._named(m, negated=True)
            return
        if self.variant == "written":
            self._commands(m)
            self._written(m)
            return
        if self.variant == "props":
            with self.assuming():  # proved by ``written``
                self._commands(m)
                self._written(m)
        self._chk(m, "v1", guard, self._victim_ok())
        self._chk(m, "v2", guard, self._victim_page_ok())
        if self.variant == "props":
            self._mapped(m)

    def _commands(self, m: Module) -> None:
        """L1: Q0 - Q2 of every page-state command taken."""
        for k, conds in commandable(self.dut.u.ps, self.pss).items():
            self._chk(m, f"l1{k}", 1, conds)

    # ------------------------------------------------------------------ L1's invariants
    def _written(self, m: Module) -> None:
        """The commands' invariants: W0 - W4 (pages written), W5 - W12 (reads), L2."""
        self._pages_written(m)
        self._fresh(m)
        self._score_answers(m)
        self._port0(m)
        self._score_op(m)
        u, f, sh = self.dut.u, self.dut.state, self.pss
        # L2: the VICTIM pending is the spill's, answered in SP_VWAIT
        self._chk(m, "l2", 1, [sh.vpend == self.at("SP_VWAIT"), ~sh.vpend | ~sh.took])
        self._chk(m, "w11", f.s2.valid, [u.ps.cmd.ready])
        beside = [~u.cutting, ~u.drain_acc, ~(f.s2.valid & f.s2.committed)]
        self._chk(m, "w12", f.sc.n != 0, beside)

    def _pages_written(self, m: Module) -> None:
        """W0 - W3: unwritten pages reset in the shadow; written ones below the mark; the
        free FIFO's and the held pages written (but the FSM's page in flight)."""
        u, f = self.dut.u, self.dut.state
        a, sh = u.alloc, self.pss
        wr = sh.written
        P = a.PAGES
        pb = len(a.head)
        inflight = self.at("INS_GO", "FILL_GO", "FILL_PSC")
        for q in range(P):
            unw = [sh.st[q] == FREE, sh.tab[q] == 0, sh.pos[q] == 0, ~sh.out[q]]
            self._chk(m, f"w0_{q}", ~wr[q], unw)
            self._chk(m, f"w1_{q}", wr[q], [a.mark > q])
            queued = (q - a.head)[:pb] < a.level  # FIFO entry q holds a page
            self._chk(m, f"w2_{q}", queued, [wr.bit_select(a.words[q], 1)])
            mine = inflight & (f.page == q)
            self._chk(m, f"w3_{q}", self.held[q] & ~mine, [wr[q]])
        self._chk(m, "w3_mark", inflight, [f.page < a.mark])

    def _fresh(self, m: Module) -> None:
        """W4: ``fresh`` registered at an allocation is "never written"; an allocation with
        the FIFO empty has nothing pending (no push can bypass it)."""
        u, f = self.dut.u, self.dut.state
        a, wr = u.alloc, self.pss.written
        asking = self.at("ALLOC_INS_GO", "ALLOC_FILL_GO")
        self._chk(m, "w4_alloc", asking, [(a.level != 0) | (u.pending == 0)])
        got = self.at("GOT_INS_GO", "GOT_FILL_GO")
        self._chk(m, "w4_got", got, [f.fresh == ~wr.bit_select(a.page, 1), a.page_valid])
        self._chk(m, "w4_s2", f.s2.valid, [f.s2.fresh == ~wr.bit_select(a.page, 1)])
        inflight = self.at("INS_GO", "FILL_GO", "FILL_PSC")
        self._chk(m, "w4_go", inflight, [f.fresh == ~wr.bit_select(f.page, 1)])

    def _score_answers(self, m: Module) -> None:
        """W5 - W7, W9, W10: the score queue's answers on chip, the reads in flight and the
        resident PTEs on chip name written pages; queued entries are resident, and an
        entry read does not race a write of its PTE."""
        u, f = self.dut.u, self.dut.state
        wr, sc, bt = self.pss.written, f.sc, u.bt
        w = len(sc.head)
        ok, exp = self.rtrack[0]
        for s in (1, 2, 3):
            self._chk(m, f"w6_{s}", ok[s] & ~exp[s][0], [wr.bit_select(exp[s][1:], 1)])
        S = 1 << len(bt.cmd.payload.i)
        for t, i, res, loc, _p in self._entries():
            addr = self.ptes[t * S + i][1:]
            mine = self.at("FILL_PSC") & (f.t == t) & (f.i == i)
            self._chk(m, f"w7_{t}_{i}", res & ~loc & ~mine, [wr.bit_select(addr, 1)])
        lens = Array(self.lens)
        ba, wst = bt.state.a, bt.state.w
        wp, wi = self.writing
        for e in range(len(sc.t)):
            j = (e - sc.head)[:w]
            t, i = sc.t[e], sc.i[e]
            self._chk(m, f"w5_{e}", (j < sc.ngot) & ~sc.loc[e], [wr.bit_select(sc.page[e], 1)])
            self._chk(m, f"w9_{e}", j < sc.n, [t < bt.TABLES, i < lens[t]])
            clash = (ba.v & (ba.t == t) & (ba.i == i)) | (wp & (wst.t == t) & (wi == i))
            self._chk(m, f"w10_{e}", j < sc.nrd, [~clash])

    def _port0(self, m: Module) -> None:
        """W8: block-table port 0's reads of the FSM (``rd_pipe``): the queue's while scores
        are queued, none outside the states that read, counted in those states."""
        f = self.dut.state
        sc = f.sc
        ok, _exp = self.rtrack[0]
        for j in range(len(f.rd_pipe)):
            self._chk(m, f"w8_{j}", f.rd_pipe[j] & (sc.n != 0), [ok[j + 1]])
        inflight = count(list(f.rd_pipe))
        nq = len(sc.n)
        self._chk(m, "w8n", sc.n != 0, [(sc.nrd - sc.ngot)[:nq] == inflight[:nq]])
        self._chk(m, "w8i", ~self.at(*READING) & (sc.n == 0), [f.rd_pipe == 0])
        shr = f.sh
        self._chk(m, "w8_sh", self.at("SH_CMP"), [shr.cp + inflight <= shr.ip])
        self._chk(m, "w8_tag", self.at("TAG_RD"), [f.collect, f.got + inflight <= f.wait])
        self._chk(m, "w8_tagw", self.at("TAG_WAIT"), [f.collect, f.got + inflight <= BLOCK])
        pipe = Mux(f.wait == 1, 1, Mux(f.wait == 2, 2, 0))
        for st, done in (("PTE", "PTE_GOT"), ("SP_RD", "SP_RDW")):
            self._chk(m, f"w8_{st}", self.at(st), [f.rd_pipe == pipe])
            self._chk(m, f"w8_{done}", self.at(done), [f.rd_pipe == 0b100])

    def _score_op(self, m: Module) -> None:
        """A sequential score's PTE read (port 0), then its PTE as read."""
        f = self.dut.state
        o = f.r.o
        score = o.op == PoolOp.SCORE
        here = self._pte(f.t, f.i)
        ok, exp = self.rtrack[0]
        act = self.at("ACT") & (f.code == PoolCode.NONE)  # t, i, g registered in CHECK
        states = (self.at("PTE", "PTE_GOT", "SCORE") | act) & score
        self._holds(m, "score_g", states, f.g, f.t, o.pos)
        reads = act & ((o.op == PoolOp.SCORE) | (o.op == PoolOp.FILL))
        self._chk(m, "act_wait", reads, [f.wait == 0, ~self.dut.u.bt.cmd.valid])
        first = self.at("PTE") & (f.wait == 0)
        self._chk(m, "pte_first", first, [~self.dut.u.bt.state.a.v])
        self._chk(m, "score_i", states, [Array(self.dut.u.seg.sbase)[f.g] + f.i == o.pos])
        for s in (1, 2):
            at = self.at("PTE") & (f.wait == s)
            self._chk(m, f"score_rd{s}", score & at, [ok[s], exp[s] == here])
        self._chk(m, "score_rd3", score & self.at("PTE_GOT"), [ok[3], exp[3] == here])
        self._chk(m, "score_pte", score & self.at("SCORE"), [Cat(f.loc, f.addr) == here])

    # ------------------------------------------------------------------ L3, L4
    def _resident(self, t: Value, i: Value) -> Value:
        """``(t, i)`` is below its table's shadow length or in a CUT's window."""
        w = self.dut.u.bt.state.w
        window = w.running & w.is_cut & (w.t == t) & (self.cnext <= i) & (i < w.n)
        return (i < Array(self.lens)[t]) | window

    def _named(self, m: Module, *, negated: bool = False) -> None:
        """A COMMIT names the PTE appended or written in its cycle (a fill's, written
        before, in ``FILL_PSC``); ``negated``: its position claimed the PTE's XOR 1."""
        u, f = self.dut.u, self.dut.state
        seg, ps, bt = u.seg, u.ps, u.bt
        pb = self.dut.POS_BITS
        tbase = Array(seg.tbase)
        fill = self.at("FILL_PSC")
        pc, bc = ps.cmd.payload, bt.cmd.payload
        bkind = bc.kind.as_value()
        put = self.take & ((bkind == BtCmd.APPEND.value) | (bkind == BtCmd.WRITE.value))
        commit = ps.cmd.valid & ps.cmd.ready & (pc.kind.as_value() == PsCmd.COMMIT.value)
        # a table opened in the cycle of its first append has its base from then on
        opened = seg.open_en & (seg.free_t == bc.t)
        base = Mux(opened, seg.open_len, tbase[bc.t])
        pos = pc.pos ^ 1 if negated else pc.pos
        same = (
            put
            & (bc.t == pc.tab)
            & ((base + bc.i)[:pb] == pos)
            & (Cat(bc.pte.loc, bc.pte.addr) == Cat(Const(0, 1), pc.page))
        )
        self._chk(m, "l4c", commit & ~fill, [same])
        if not negated:
            self._chk(m, "l4fc", commit & fill, [pc.page == f.page, pc.tab == f.t])

    def _mapped(self, m: Module) -> None:
        """The mapping: L4 both ways, its transient states, L3."""
        self._live_mapped(m)
        self._ptes_named(m)
        self._transients(m)
        u, sh = self.dut.u, self.pss
        live = Cat(*[sh.live(p) for p in range(u.alloc.PAGES)]).any()
        spilling = self.at("SP_VIC", "SP_VWAIT")
        self._chk(m, "l3a", spilling, [live])
        self._chk(m, "l3n", spilling, [u.committed_pages != 0])

    def _live_mapped(self, m: Module) -> None:
        """L4, one way: a live page is mapped by the resident PTE at its table and
        position; a committed page ``out`` is the victim of the spill under way."""
        u, f = self.dut.u, self.dut.state
        sh, tbase = self.pss, Array(u.seg.tbase)
        pb = self.dut.POS_BITS
        for p in range(u.alloc.PAGES):
            t = sh.tab[p]
            i = (sh.pos[p] - tbase[t])[:pb]
            here = Cat(Const(0, 1), Const(p, len(u.alloc.page)))
            mapped = [tbase[t] <= sh.pos[p], self._resident(t, i), self._pte(t, i) == here]
            self._chk(m, f"l4b_{p}", sh.live(p), mapped)
            out = (sh.st[p] == COMMITTED) & sh.out[p]
            self._chk(m, f"l4out_{p}", out, [self.at(*SHOWN, "SP_FREE"), f.vpage == p])

    def _ptes_named(self, m: Module) -> None:
        """L4, the other way: a resident PTE on chip names a committed page at its table
        and position, not ``out`` (but the victim shown; a fill's PTE before its COMMIT)."""
        u, f, sh = self.dut.u, self.dut.state, self.pss
        S = 1 << len(u.bt.cmd.payload.i)
        st, tab, pos = Array(sh.st), Array(sh.tab), Array(sh.pos)
        shown = self.at(*SHOWN)
        fill = self.at("FILL_PSC")
        for t, i, res, loc, posn in self._entries():
            addr = self.ptes[t * S + i][1:]
            mine = fill & (f.t == t) & (f.i == i)
            named = [
                st[addr] == COMMITTED,
                tab[addr] == t,
                pos[addr] == posn,
                ~sh.out.bit_select(addr, 1) | (shown & (f.vpage == addr)),
            ]
            self._chk(m, f"l4a_{t}_{i}", res & ~loc & ~mine, named)

    def _transients(self, m: Module) -> None:
        """A fill's PTE before its COMMIT, a COMMIT's PTE, a fast insert's stage 2, the
        victim shown until its FREE."""
        u, f, sh = self.dut.u, self.dut.state, self.pss
        tbase = Array(u.seg.tbase)
        pb = self.dut.POS_BITS
        st, tab, pos = Array(sh.st), Array(sh.tab), Array(sh.pos)
        fill = [
            self._pte(f.t, f.i) == Cat(Const(0, 1), f.page),
            self._resident(f.t, f.i),
            f.r.o.pos == (tbase[f.t] + f.i)[:pb],
            st[f.page] != COMMITTED,
        ]
        self._chk(m, "l4fill", self.at("FILL_PSC"), fill)
        self._named(m)
        s2 = f.s2
        s2pos = (tbase[s2.t] + s2.i)[:pb]
        self._chk(m, "l4s2", s2.valid & s2.committed, [s2.pos == s2pos])
        vp = f.vpage
        victim = [sh.out.bit_select(vp, 1), st[vp] == COMMITTED, tab[vp] == f.vtab]
        self._chk(m, "l4v", self.at(*SHOWN, "SP_FREE"), [*victim, pos[vp] == f.vpos])


run = harness_run(PsLinkFormal, "kvpool_pslink", PROVE_DEPTH)


#: what the ``written`` check proves
WRITTEN = "L1 (Q0 - Q2 of every page-state command), L2, W0 - W12"


#: the ``written`` check (:func:`formal.kvpool_proto.proof_check`)
_written_proof = proof_check(run, "written", WRITTEN)


#: the ``weak`` check (:func:`formal.kvpool_proto.weak_check`)
_weak = weak_check(run, "V1, V2", depth=2)


#: the checks and the command line (:class:`formal.leaf.LeafChecks`)
LEAF = LeafChecks(
    module="formal.kvpool_pslink",
    title="the pool keeps the page states' contract (V1, V2 proved)",
    doc=__doc__,
    config=CONFIG,
    run=run,
    unit="pool",
    props="V1, V2, L3, L4 (assuming the commands' properties; counts', allocproto's "
    "and conserve's results of earlier cycles)",
    negated="a COMMIT's position claimed its PTE's XOR 1: refuted",
    unprotected=None,
    reach=REACH,
    label="pslink:",
    extra={"written": _written_proof, "weak": _weak},
)
CHECKS = LEAF.checks
build_parser, parse_args, main = LEAF.build_parser, LEAF.parse_args, LEAF.main

if __name__ == "__main__":
    sys.exit(main())
