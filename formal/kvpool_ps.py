"""The page states answer a VICTIM with a live page, by k-induction: ``python -m formal.kvpool_ps``.

The page states' side of V1 and V2 (which :mod:`formal.kvpool_proto` and
:mod:`formal.kvpool_allocproto` assume of the pool: a spill's victim is found
and names a page whose ``(tab, pos)`` is a live PTE mapping it on chip) at the
leaf level, assume-guarantee: a harness around
:class:`hw.kvpool.pagestate.PageState` (through :class:`ProbedPageState`, a
subclass that keeps the locals of its RMW stage and passes, :data:`LOCALS`,
found by name, and reads every page word and queue entry asynchronously) at a
small size (:data:`CONFIG`: 4 pages, 1 table bit, 2 position bits; the leaf
declares pages from 16, the probe admits 4 and up: the RTL is generic in
``PAGES``, its pointers wrap by ``prefix_inc_mod`` and a pass's ``more`` reads
``level[2:]`` and ``level[:2]``, 3 bits from 4 pages on) with a *page shadow*
(:func:`formal.kvpool_ps_contract.page_shadow`) kept from the leaf's interface alone: per page ``p``
``written`` (a command of kind SPEC .. SCORE taken since reset), ``st[p]``
(FREE, SPEC, COMMITTED, as the commands taken set it: SCORE keeps it, a
``fresh`` SCORE makes it FREE), ``tab[p]`` / ``pos[p]`` (its last
COMMIT's; 0 after a ``fresh`` command of another kind), ``out[p]`` (shown as a
victim since its last COMMIT or ``fresh`` command: the leaf leaves a victim
COMMITTED and unqueued until the pool frees it); ``vpend`` (a VICTIM taken, its
``done`` not yet shown) and ``took`` (a command other than VICTIM taken in the
previous cycle). A page is *live* when ``st[p]`` is COMMITTED and ``out[p]``
low. Every input and reset are free (a VICTIM's ``page``, ``tab``, ``pos``,
``s``, ``fresh`` fields and the kinds 5 .. 7 too), except the pool's protocol,
assumed for a command of kind SPEC .. SCORE taken in a cycle without reset
(:func:`formal.kvpool_ps_contract.commandable`):

Q0. its page is below ``PAGES`` (vacuous at a power of two);
Q1. a command not ``fresh`` is of a page written since reset (the leaf's
    first invalid input: such a word is arbitrary);
Q2. a ``fresh`` command is of a page not written since reset (the pool sets
    ``fresh`` on a page just taken from the never-used mark). The leaf's
    docstring does not list the converse as invalid, but it is: a ``fresh``
    command of a page still in the queue (freed, not yet popped) clears its
    ``queued`` flag, a COMMIT then queues it a second time, and the queue
    overflows (``level`` wraps).

Nothing else is assumed: a SPEC, FREE, SCORE or COMMIT of any written page in
any state, a VICTIM while ``busy``, a COMMIT into a full queue (impossible:
invariants 5 and 6 prove it, as the leaf's docstring argues).

Properties (asserted every cycle; V-a - V-c are the contract,
:func:`formal.kvpool_ps_contract.victim_contract`; 1-9 the strengthening invariants that make them
inductive, each true on its own):

V-a. a VICTIM's answer with a victim (``done`` while ``vpend``, ``none``
     low) names a page below ``PAGES`` that is live in the shadow, and
     ``victim.tab`` / ``victim.pos`` are the shadow's ``tab`` / ``pos`` of
     that page (its last COMMIT's);
V-b. a VICTIM answers ``none`` only when no page is live in the shadow (so
     it finds a victim whenever a page is committed and not already handed
     out as a victim);
V-c. ``done`` comes once per command, in order: in the cycle after a command
     other than VICTIM is taken (``took``), with ``none`` low and ``victim``
     0; else only as the pending VICTIM's answer (``vpend``); ``cmd.ready``
     is low exactly while a VICTIM is pending and unanswered (a fast
     insert's stage 2 issues its command without waiting); ``none`` and
     ``victim`` are 0 outside a VICTIM's answer;
1. page words: a written page's word ``{state, tab, pos}`` is the shadow's
   (the page of a command in the RMW stage apart); an unwritten page is FREE
   and not ``out`` in the shadow;
2. the RMW stage (``_r_*``): a command of kind SPEC .. SCORE there is of a
   written page below ``PAGES``, and applied to that page's word (all zero if
   ``fresh``) gives the shadow's state, ``tab`` and ``pos``; a COMMIT's or a
   ``fresh`` command's page is not ``out``;
3. ``fwd_word`` is the word of ``fwd_page`` (below ``PAGES``) when
   ``fwd_valid``; the read port's data is the word of the RMW stage's page
   when a command or pass there is not ``fresh`` and not forwarded;
4. the queue's pointers: ``head``, ``tail``, ``rp`` below ``PAGES``, ``level
   <= PAGES``, ``tail == (head + level) mod PAGES``;
5. ``level`` is the number of written pages whose word is ``queued`` (a
   ``fresh`` command's page in the RMW stage apart);
6. the ``level`` entries from ``head`` are pages below ``PAGES`` counted in 5
   (their flag set), two by two distinct (so, with 5, a written page's flag
   is set exactly when the page is in the queue, once);
7. a live page's word is ``queued`` (a COMMIT's page in the RMW stage and
   the victim shown this cycle apart); an ``out`` page's is not;
8. the passes: in victim mode the RMW stage holds passes only (not
   ``fresh``), ``rp == head + passes in flight (mod PAGES)``, the passes in
   flight are at most ``level``, the pass in the RMW stage is of the head
   entry's page and the one in the queue-read stage reads the next entry's;
   out of victim mode no pass is in the RMW stage and ``rp == head``;
9. the answer: ``vpend == vmode | vdone``, ``took`` is a command other than
   VICTIM in the RMW stage; with ``vdone`` victim mode is over and the RMW
   stage empty; ``none`` only with ``vdone`` and ``level == 0``; ``victim``
   and ``none`` 0 without ``vdone``; a victim shown is a written page whose
   word is COMMITTED, not ``queued``, with the victim's ``tab`` / ``pos``, and
   not ``out``.

Without any one of 1, 2 and 4-9 the induction stays ``UNKNOWN`` up to 6
steps; without 3 it closes at ``k = 2`` instead of 1. Invariant 6 states
"its flag set" per page (entry ``j`` holds ``p`` -> ``p``'s flag), not as the
flag indexed by the entry: the induction took 2.7 s instead of 11.9 s at 8
pages, 42 s instead of 267 s at 16 (the two cores shared with other runs).
2, 3, 8 and 9 are stated per page or entry likewise (``rp == p -> ...``).

The pool link (what the pool must prove to discharge V1 and V2 from V-a -
V-c; :mod:`formal.kvpool_pslink` proves it, decisions 0036, 0037):

L1. Q0 - Q2 for every page-state command it issues: the page below
    ``PAGES``; ``fresh`` exactly when the page was not written since reset
    (the allocator's ``level == 0`` at the request must mean that its page
    comes from the never-used mark, and the page states are written only for
    pages the allocator handed out);
L2. in ``SP_VWAIT`` the VICTIM taken in ``SP_VIC`` is pending (``vpend``):
    the FSM leaves ``SP_VIC`` on its acceptance, and by V-c no other command
    is taken before its answer, so ``done`` in ``SP_VWAIT`` is its answer;
L3. (V1's ``none`` low) when that VICTIM is taken, some page is live in the
    shadow: e.g. ``committed_pages`` equals the number of COMMITTED pages of
    the shadow, no page is ``out`` outside a spill (its victim is freed in
    ``SP_FREE`` before the next VICTIM), and the pool spills only while
    ``committed_pages`` is not 0;
L4. (V1's live PTE, V2) every live page ``p`` is mapped by the PTE at its
    shadow's ``(tab[p], pos[p])``: table ``tab[p]`` used, ``tbase <= pos[p]
    < tbase + tlen``, and the PTE at index ``pos[p] - tbase`` is ``loc = 0``,
    ``addr = p``; i.e. every COMMIT the pool issues names the PTE it appends
    or rewrites for that page, and the pool frees the page (FREE) or
    re-COMMITs it whenever that PTE is cut, moved to HBM or its segment's
    base changes.

With L1 - L4, V-a gives V2 and V1's live PTE, and V-b V1's "found".

Checks (:data:`CHECKS`): ``prove`` (k-induction up to :data:`PROVE_DEPTH`:
must close), ``prove:larger`` (at :data:`LARGER`: 17 pages, inside the leaf's
range and not a power of two), ``weak`` (V-a - V-c without 1-9: the
induction must stop ``UNKNOWN``: they are needed), ``unfresh`` (V-a - V-c
without Q2: a BMC must fail: fresh COMMITs of a queued page overflow the
queue and a VICTIM answers ``none`` with pages committed), ``unranged``
(without Q0 at :data:`LARGER`: a BMC must fail: a page beyond ``PAGES`` is
queued and named as the victim), ``negated`` (V-a with the victim's ``pos``
claimed the shadow's XOR 1: must be refuted), ``unprotected`` (V-a - V-c
without Q1: a BMC must fail: a word's stale ``queued`` flag, left by a
COMMIT before a reset, keeps a non-fresh COMMIT out of the queue, and a
VICTIM answers ``none``), and the witnesses of :data:`REACH` (the state's
absence asserted in cycles without reset: the BMC's counterexample shows
that the assumptions allow it within :data:`BMC_DEPTH` steps). Measured in
``build/reports/formal_kvpool.json`` (rows ``ps:``): ``prove`` closes at
``k = 1`` in 1 s, ``prove:larger`` at ``k = 1`` in 52 - 92 s, every other
check in 0.4 - 1.7 s (three runs, the two cores shared with other runs; the
last with V-c's ``cmd.ready`` exact, decision 0036).
"""

import sys
from pathlib import Path
from types import SimpleNamespace

from amaranth import Array, Cat, Const, Elaboratable, Module, Mux, ResetSignal, Signal, Value
from amaranth.hdl import Assert, Assume
from amaranth.lib import data
from amaranth.utils import bits_for

from formal.kvpool_probes import Cached
from formal.kvpool_ps_contract import WRITERS, commandable, page_shadow, victim_contract
from formal.leaf import Answer, Harness, LeafChecks, check_run
from formal.sat import Outcome, convert, solve
from hw.common import Param, check_params, sum_tree
from hw.kvpool.pagestate import COMMITTED, FREE, SPEC, PageState, PsCmd, word_layout

__all__ = [
    "ProbedPageState",
    "PageStateFormal",
    "CONFIG",
    "LARGER",
    "run",
    "build_parser",
    "parse_args",
    "main",
]

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "build" / "formal"
#: the proved size (4 pages: below the leaf's declared 16, admitted by the probe)
CONFIG = {"PAGES": 4, "TABLE_BITS": 1, "POS_BITS": 2}
#: a second proved size: inside the leaf's range, not a power of two (the pointers
#: wrap at PAGES)
LARGER = {"PAGES": 17}
PROVE_DEPTH = 4
BMC_DEPTH = 14
#: V-a - V-c and invariants 1-9; a false one; V-a - V-c without Q1, without Q2, without
#: Q0; V-a - V-c alone
VARIANTS = ("props", "negated", "unprotected", "unfresh", "unranged", "weak")
#: the assumption each variant leaves out
_DROPPED = {"unprotected": "q1", "unfresh": "q2", "unranged": "q0"}
#: states the assumptions must allow (asserted absent: the counterexample is the witness)
REACH = {
    "pushback": "a victim found after a push-back (a pass with c > 0 decremented it)",
    "drop": "a pass drops a page no longer committed from the queue",
    "none": "a VICTIM answers none after at least one pass",
    "recommit": "a COMMIT of a queued page (no second push)",
    "cancel": "a victim found with a pass behind it (cancelled)",
    "forward": "two commands on one page back to back (the word forwarded)",
}
#: the signals of ``PageState._rmw`` / ``_passes`` the harness reads, found by name
LOCALS = (
    "fwd_valid",
    "fwd_page",
    "fwd_word",
    "fwd_hit",
    "vdone",
    "pop",
    "push_back",
    "push_new",
    "found",
)


class ProbedPageState(Cached, PageState):
    """:class:`hw.kvpool.pagestate.PageState` with the locals of :data:`LOCALS`
    (``regs``, found among the signals the module drives; ``fwd_word`` as a word
    view) and asynchronous reads of every page word (``words[p]``, views of
    :func:`~hw.kvpool.pagestate.word_layout`) and queue entry (``qwords[j]``). Its
    own registers (``_r_*``, ``_vmode``, ``_p_valid``, ``_head``, ``_tail``,
    ``_rp``) and ports (``_rd``, ``_qrd``) are attributes already."""

    #: the leaf's parameters, with pages from 4 (the RTL is generic in ``PAGES``; the
    #: pool's smallest is 16)
    PARAMS = PageState.PARAMS | {"PAGES": Param(default=2**20, lo=4, hi=2**22, small=16)}

    def _probe(self, m: Module) -> None:
        named: dict[str, list[Signal]] = {}
        for sig in m._driving:  # (Amaranth 0.5's Module: every signal it drives)
            named.setdefault(sig.name, []).append(sig)
        if any(len(named.get(n, [])) != 1 for n in LOCALS):
            raise RuntimeError("PageState: its locals not found by name")
        wl = word_layout(self.TABLE_BITS, self.POS_BITS)
        self.regs = SimpleNamespace(**{n: named[n][0] for n in LOCALS})
        self.regs.fwd_word = data.View(wl, self.regs.fwd_word)
        page, queue = m.submodules.page, m.submodules.queue

        def read(mem: object, addr: int) -> Value:
            rp = mem.read_port(domain="comb")
            m.d.comb += rp.addr.eq(addr)
            return rp.data

        self.words = [read(page, p) for p in range(self.PAGES)]
        self.qwords = [read(queue, j) for j in range(self.PAGES)]


# ---------------------------------------------------------------------- the contracts
def _mod(x: Value, P: int, width: int) -> Value:
    """``x mod P`` for ``0 <= x < 2 P``, in ``width`` bits."""
    return Mux(x >= P, x - P, x)[:width]


class PageStateFormal(Harness, Elaboratable):
    """The page states, the page shadow, assumptions Q0-Q2, V-a - V-c and invariants
    1-9."""

    def __init__(self, *, variant: str = "props", reach: str | None = None, **params: int):
        self._MustUse__silence = True  # a refused argument leaves nothing to elaborate
        check_run(variant, reach, VARIANTS, REACH)
        cfg = check_params(ProbedPageState.PARAMS, {**CONFIG, **params})
        self._MustUse__silence = False
        self.variant, self.reach = variant, reach
        self.dut = ProbedPageState(**cfg)
        self.dut._MustUse__silence = True  # elaborated by the harness

    # ------------------------------------------------------------------ elaborate
    def elaborate(self, platform) -> Module:
        m = Module()
        d = self.dut
        m.submodules.dut = d.elaborate(platform)
        rst = ResetSignal()
        started = Signal(reset_less=True)
        m.d.sync += started.eq(1)
        with m.If(~started):
            m.d.comb += Assume(rst)
        self.sh = page_shadow(m, d)
        with m.If(~rst):
            for label, conds in commandable(d, self.sh).items():
                if label != _DROPPED.get(self.variant):
                    m.d.comb += [Assume(x) for x in conds]
        with m.If(started):
            if self.reach is not None:
                m.d.comb += Assert(rst | ~self._reached(m, self.reach))
            elif self.variant == "negated":
                v = d.victim
                pos = Array(self.sh.pos)[v.page]
                found = d.done & self.sh.vpend & ~d.none
                m.d.comb += Assert(~found | (v.pos == pos ^ 1))
            else:
                for label, conds in victim_contract(d, self.sh).items():
                    self._chk(m, label, 1, conds)
                if self.variant == "props":
                    self._invariants(m)
        return m

    # ------------------------------------------------------------------ 1 - 9
    def _invariants(self, m: Module) -> None:
        """Invariants 1-9."""
        d, sh, g = self.dut, self.sh, self.dut.regs
        P = d.PAGES
        pb = len(d._head)
        words, qw = d.words, d.qwords
        wl = word_layout(d.TABLE_BITS, d.POS_BITS)
        kind = d._r_kind.as_value()
        rcmd = d._r_valid & (kind < WRITERS)  # a command in the RMW stage
        rwr = d._r_valid & (kind <= PsCmd.VICTIM.value)  # ... or a pass
        rp = d._r_page
        vmode, pv = d._vmode, d._p_valid
        is_pass = d._r_valid & (kind == PsCmd.VICTIM.value)
        shadow = [Cat(sh.st[p], sh.tab[p], sh.pos[p]) for p in range(P)]
        # 1. page words against the shadow (the RMW stage's page apart)
        for p in range(P):
            guard = sh.written[p] & ~(rcmd & (rp == p))
            w = words[p]
            self._chk(m, f"i1_word{p}", guard, [Cat(w.state, w.tab, w.pos) == shadow[p]])
            self._chk(m, f"i1_free{p}", ~sh.written[p], [sh.st[p] == FREE, ~sh.out[p]])
        # 2. the RMW stage's command, applied to its word (0 if fresh), is the shadow's
        commit = kind == PsCmd.COMMIT.value
        self._chk(m, "i2_rmw", rcmd, [rp < P])
        for p in range(P):
            base = data.View(wl, Mux(d._r_fresh, 0, Value.cast(words[p])))
            states = [Const(SPEC, 2), Const(COMMITTED, 2), Const(FREE, 2), base.state]
            new_st = Array(states)[kind[:2]]
            new = Cat(new_st, Mux(commit, d._r_tab, base.tab), Mux(commit, d._r_pos, base.pos))
            self._chk(
                m,
                f"i2_rmw{p}",
                rcmd & (rp == p),
                [
                    sh.written[p],
                    new == shadow[p],
                    ~(commit | d._r_fresh) | ~sh.out[p],
                ],
            )
        # 3. forwarding and the read port's data
        fwd, rd = Value.cast(g.fwd_word), Value.cast(d._rd.data)
        reads = rwr & ~d._r_fresh & ~g.fwd_hit
        self._chk(m, "i3_fwd", g.fwd_valid, [g.fwd_page < P])
        self._chk(m, "i3_rd", reads, [rp < P])
        for p in range(P):
            w = Value.cast(words[p])
            self._chk(m, f"i3_fwd{p}", g.fwd_valid & (g.fwd_page == p), [fwd == w])
            self._chk(m, f"i3_rd{p}", reads & (rp == p), [rd == w])
        # 4. the queue's pointers
        lv = d.level
        self._chk(
            m,
            "i4_ptr",
            1,
            [
                d._head < P,
                d._tail < P,
                d._rp < P,
                lv <= P,
                d._tail == _mod(d._head + lv, P, pb),
            ],
        )
        # 5. the queued flags: a written page's (a fresh command's page in the RMW
        # stage apart: its word is still to be zeroed); as many set as entries
        flags = Cat(
            sh.written[p] & ~(rcmd & d._r_fresh & (rp == p)) & words[p].queued for p in range(P)
        )
        total = sum_tree([flags[p].as_unsigned() for p in range(P)], bits_for(P))
        self._chk(m, "i5_count", 1, [lv == total])
        # 6. the entries (the ``level`` from ``head``): pages in range, their flags set,
        # distinct
        inside = []
        for j in range(P):
            off = _mod(Const(j + P, pb + 2) - d._head, P, pb + 1)
            inside.append(off < lv)
        for j in range(P):
            self._chk(
                m,
                f"i6_entry{j}",
                inside[j],
                [qw[j] < P, *(~(qw[j] == p) | flags[p] for p in range(P))],
            )
            self._chk(
                m,
                f"i6_distinct{j}",
                inside[j],
                [~inside[i] | (qw[i] != qw[j]) for i in range(j)],
            )
        # 7. a live page is queued, a page shown as a victim is not (a COMMIT's page in
        # the RMW stage and the victim shown this cycle apart)
        shown = g.vdone & ~d.none
        for p in range(P):
            exempt = (rcmd & commit & (rp == p)) | (shown & (d.victim.page == p))
            self._chk(m, f"i7_live{p}", sh.live(p) & ~exempt, [words[p].queued])
            self._chk(m, f"i7_out{p}", sh.written[p] & sh.out[p], [~words[p].queued])
        # 8. the passes
        h1 = _mod(d._head + d._r_valid, P, pb)
        self._chk(
            m,
            "i8_vmode",
            vmode,
            [
                ~d._r_valid | (kind == PsCmd.VICTIM.value),
                d._rp == _mod(d._head + pv + d._r_valid, P, pb),
                pv + d._r_valid <= lv,
                ~d._r_valid | ~d._r_fresh,
            ],
        )
        for j in range(P):
            self._chk(
                m,
                f"i8_entry{j}",
                vmode,
                [
                    ~(d._r_valid & (d._head == j)) | (rp == qw[j]),
                    ~(pv & (h1 == j)) | (d._qrd.data == qw[j]),
                ],
            )
        self._chk(m, "i8_idle", ~vmode, [~is_pass, d._rp == d._head])
        # 9. the answer
        v = d.victim
        self._chk(
            m,
            "i9_answer",
            1,
            [
                sh.vpend == (vmode | g.vdone),
                sh.took == (d._r_valid & (kind != PsCmd.VICTIM.value)),
                ~g.vdone | (~vmode & ~d._r_valid),
                ~d.none | (g.vdone & (lv == 0)),
                g.vdone | ((Value.cast(v) == 0) & ~d.none),
            ],
        )
        self._chk(m, "i9_victim", shown, [v.page < P])
        for p in range(P):
            vw = words[p]
            self._chk(
                m,
                f"i9_victim{p}",
                shown & (v.page == p),
                [
                    sh.written[p],
                    vw.state == COMMITTED,
                    vw.tab == v.tab,
                    vw.pos == v.pos,
                    ~vw.queued,
                    ~sh.out[p],
                ],
            )

    # ------------------------------------------------------------------ witnesses
    def _reached(self, m: Module, what: str) -> Value:
        """The state of :data:`REACH` ``what`` (its absence is asserted)."""
        d, sh, g = self.dut, self.sh, self.dut.regs
        c = d.cmd.payload
        kind = d._r_kind.as_value()
        if what == "recommit":
            return d._r_valid & (kind == PsCmd.COMMIT.value) & ~g.push_new
        if what == "cancel":
            return g.found & d._p_valid
        if what == "forward":
            return d._r_valid & (kind < WRITERS) & g.fwd_hit
        drop = g.pop & ~g.push_back & ~g.found
        if what == "drop":
            return drop
        # a push-back (pushback) or a pass (none) since the VICTIM was taken
        seen = Signal(name="fv_seen")
        event = g.push_back if what == "pushback" else g.pop
        with m.If(d.cmd.valid & d.cmd.ready & (c.kind == PsCmd.VICTIM)):
            m.d.sync += seen.eq(0)
        with m.Elif(event):
            m.d.sync += seen.eq(1)
        answer = d.done & sh.vpend & seen
        return answer & (~d.none if what == "pushback" else d.none)


def run(
    task: str,
    *,
    variant: str = "props",
    reach: str | None = None,
    depth: int | None = None,
    out: Path = OUT,
    **params: int,
) -> Outcome:
    """Run ``task`` (``prove``: k-induction up to ``depth``, default
    :data:`PROVE_DEPTH`; ``bmc``: from reset, default :data:`BMC_DEPTH`) on the
    harness's ``variant`` or a :data:`REACH` witness, at :data:`CONFIG` with
    ``params`` overriding it. A failure leaves its trace in
    ``out/kvpool_ps_<name>/<task>/trace.vcd``.

    Raises
    ------
    ValueError
        An unknown task, variant or witness, or a parameter out of its range.
    """
    h = PageStateFormal(variant=variant, reach=reach, **params)
    if depth is None:
        depth = PROVE_DEPTH if task == "prove" else BMC_DEPTH
    size = "_".join(f"{k}{v}" for k, v in sorted(params.items()))
    name = (f"reach_{reach}" if reach else variant) + (f"_{size}" if size else "")
    return solve(convert(h, h.ports()), out / f"kvpool_ps_{name}", task, depth)


def _weak() -> Answer:
    """V-a - V-c without invariants 1-9: the induction stops with a counterexample."""
    o = run("prove", variant="weak")
    what = f"{LEAF.size({})}: V-a - V-c alone: k-induction up to {o.steps}, {o.status}"
    return o, o.status == "UNKNOWN", what


def _unfresh() -> Answer:
    """V-a - V-c without Q2: a BMC finds a failure (a page queued twice, the queue
    overflowing)."""
    o = run("bmc", variant="unfresh")
    what = f"{LEAF.size({})}: without Q2 (fresh only on an unwritten page), a failure"
    return o, o.status == "FAIL", f"{what} at step {o.steps}"


def _unranged() -> Answer:
    """V-a - V-c without Q0 at :data:`LARGER` (a page count not a power of two: a page
    number at or above it exists): a BMC finds a failure."""
    o = run("bmc", variant="unranged", **LARGER)
    what = f"{LEAF.size(LARGER)}: without Q0 (pages below PAGES), a failure"
    return o, o.status == "FAIL", f"{what} at step {o.steps}"


#: the checks and the command line (:class:`formal.leaf.LeafChecks`)
LEAF = LeafChecks(
    module="formal.kvpool_ps",
    title="page states' victim contracts",
    doc=__doc__,
    config=CONFIG,
    run=run,
    unit="page states",
    props="V-a - V-c (under Q0-Q2), invariants 1-9",
    negated="V-a with a victim's pos claimed the shadow's XOR 1: refuted",
    unprotected="without Q1 (non-fresh only on a written page), a failure",
    reach=REACH,
    label="ps:",
    larger=LARGER,
    extra={"weak": _weak, "unfresh": _unfresh, "unranged": _unranged},
)
#: the checks of :func:`main`: the inductions, ``weak``, the runs without Q2 and Q0, the
#: false property, the run without Q1, the witnesses
CHECKS = LEAF.checks
build_parser, parse_args, main = LEAF.build_parser, LEAF.parse_args, LEAF.main

if __name__ == "__main__":
    sys.exit(main())
