"""The pool keeps the block table's protocol, by k-induction: ``python -m formal.kvpool_proto``.

The pool's side of :mod:`formal.kvpool_bt`'s contract, closed at the pool
level: a harness around the whole :class:`hw.kvpool.ScaledPool` (through the
probe :class:`formal.kvpool_probes.Pool`; the operation FSM's registers from
its ``state``, decision 0026) at :data:`formal.kvpool.CONFIG` (16 pages, 2
sequences, 2 segments and block tables, 1 tree of 4 nodes, 4 position bits)
whose every input is free, with a shadow of each block table's length as
the commands taken set it (an APPEND's ``i + 1``, a CUT's ``min(c, n)``).
Property (asserted every cycle after the first reset, out of reset):

B1. every block-table command taken names its table's length: an APPEND is
    of ``i == len(t)``, a WRITE of ``i < len(t)``, a CUT has ``n ==
    len(t)``; ``kind`` is not 3 and ``t < TABLES``.

So the block table's leaf proof (:mod:`formal.kvpool_bt`: it answers every
lookup and streams every CUT as the page table its commands wrote, its nodes
conserved, ``error`` low), which assumes B1, holds inside the pool.

Assumed (every cycle out of reset): the other sides' contracts, which this
proof does not discharge:

C1. the acceptance sampler's: a commit taken carries its accepted path's
    length, ``acc_len = |valid & accept|`` of its sequence's tree (with the
    node a fast insert's stage 2 adds in that cycle), the path's positions
    below ``2**POS_BITS`` (``len + acc_len <= 2**POS_BITS``): the RTL trusts
    both (SPEC §4.8's ancestor chain, decision 0020);
T1. the tree slots': a COMMIT streams exactly ``|valid & accept|`` ACC beats
    before its first other beat, a RELEASE none (what the leaf streams for an
    ancestor chain from ``d0``, :class:`hw.kvpool.treeslots.TreeSlots`);
T2. the tree slots': a beat is ACC, REJ or END; ``busy`` falls exactly in the
    cycle after an END beat is taken;
V1. the page states' and the pool's: a spill's victim (``VICTIM``'s ``done``
    in ``SP_VWAIT``) is found (``none`` low) and has a live PTE: its table is
    used and its position within the table (``tbase <= pos < tbase + tlen``).

T1 and T2 are proved of the tree slots by :mod:`formal.kvpool_ts` (decision
0029), under the pool's S1 and S2 (which :mod:`formal.kvpool_allocproto`
proves of the pool) and the sampler's ancestor chain (C1's). V1's page-state
side (a victim is a live committed page, with its last COMMIT's table and
position; ``none`` only when no page is live) is proved at the leaf by
:mod:`formal.kvpool_ps` (decision 0030); the pool's side, the page-state words
of the committed pages matching the PTEs that map them (that module's L1 - L4),
and with it V1 itself, is proved by :mod:`formal.kvpool_pslink` (decisions 0036,
0037), which assumes this proof's results of earlier cycles only.

The strengthening invariants (:mod:`formal.kvpool_proto_inv`, each a named
assertion) relate the operation FSM's, the fast insert's, the drain's and the
cut job's registers to the segment table, its tables to the shadow lengths,
and the segment table's own structure (the invariants
:mod:`formal.kvpool_seg` and :mod:`formal.kvpool_seg_derived` prove of the
leaf under its protocol, here proved of the pool's use of it).

Checks (:data:`CHECKS`): ``prove`` (k-induction up to :data:`PROVE_DEPTH`:
must close), ``negated`` (B1 with an APPEND's index claimed one past the
length: a BMC must refute it), ``unprotected`` (the invariants without C1,
T1, T2 and V1: a BMC must find a failure: the proof rests on them), the
witnesses of :data:`REACH` (the BMC's counterexample to the state's absence:
the assumptions allow it), and ``weak`` (B1 without the invariants: the
induction must stop ``UNKNOWN``: they are needed). Measured in
``build/reports/formal_kvpool.json`` (rows ``proto:``).
"""

import sys
from collections.abc import Callable
from pathlib import Path

from amaranth import Array, Const, Elaboratable, Module, ResetSignal, Signal, Value
from amaranth.hdl import Assert, Assume

from formal.induct import induct
from formal.kvpool import CONFIG, tree_counts
from formal.kvpool_bt import length_shadow, protocol_b1
from formal.kvpool_probes import Pool
from formal.kvpool_proto_inv import SPILLING, Invariants
from formal.kvpool_ts import owe_shadow, stream_contract
from formal.leaf import Answer, Harness, LeafChecks, check_goals, check_run, describe
from formal.sat import MODES, Outcome, convert, joined, solve
from hw.kvpool.blocktable import BtCmd
from hw.kvpool.layouts import PoolOp

__all__ = [
    "PoolProtocolFormal",
    "CONFIG",
    "run",
    "run_harness",
    "harness_run",
    "proof_check",
    "weak_check",
    "build_parser",
    "parse_args",
    "main",
]

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "build" / "formal"
PROVE_DEPTH = 2
BMC_DEPTH = 24
#: B1 and the invariants; B1 claimed wrong; the invariants without the assumptions;
#: B1 alone
VARIANTS = ("props", "negated", "unprotected", "weak")
#: states the assumptions must allow (asserted absent: the counterexample is the witness)
REACH = {
    "append": "a committed insert's APPEND (the fast insert's stage 2)",
    "drain": "a fast commit's path appended by the drain",
    "cut": "a release's CUT of a block table",
    "spill": "a spill's WRITE (a committed page's PTE to HBM)",
}


class PoolProtocolFormal(Invariants, Harness, Elaboratable):
    """The pool, the block tables' shadow lengths, B1, the assumptions C1, T1, T2, V1
    and the strengthening invariants (:class:`formal.kvpool_proto_inv.Invariants`).

    Parameters
    ----------
    variant : str
        One of :data:`VARIANTS`.
    reach : str or None
        A state of :data:`REACH` asserted absent instead of the properties.
    goal : str or None
        One of the variant's :attr:`GOALS`: its assertions only, the others assumed of
        the cycles before.

    Raises
    ------
    ValueError
        An unknown variant, witness or goal.
    """

    VARIANTS, REACH = VARIANTS, REACH
    #: the variants whose induction is split into goals: variant -> goal -> the regular
    #: expressions of the labels it asserts (:attr:`formal.leaf.Harness.goal`)
    GOALS: dict[str, dict[str, tuple[str, ...]]] = {}
    #: the probed pool the harness builds
    POOL = Pool

    def __init__(
        self, *, variant: str = "props", reach: str | None = None, goal: str | None = None
    ) -> None:
        self._MustUse__silence = True  # a refused argument leaves nothing to elaborate
        check_run(variant, reach, self.VARIANTS, self.REACH)
        goals = self.GOALS.get(variant, {})
        if goal is not None and (reach is not None or goal not in goals):
            raise ValueError(f"goal = {goal!r}: must be one of {sorted(goals)} (no reach)")
        self._MustUse__silence = False
        self.variant, self.reach = variant, reach
        self.goal = None if goal is None else goals[goal]
        self.dut = self.POOL(**CONFIG)
        self.dut._MustUse__silence = True  # elaborated by the harness

    def at(self, *names: str) -> Value:
        """The operation FSM is in one of the states ``names``."""
        st = self.dut.state.states
        return Value.cast(sum((st.state == st.encoding[n] for n in names), Const(0, 1)) != 0)

    # ------------------------------------------------------------------ elaborate
    def elaborate(self, platform) -> Module:
        m = Module()
        d = self.dut
        m.submodules.dut = d.elaborate(platform)
        u = d.u
        for leaf in (u.bt, u.ts, *u.tlbs):
            leaf.elaborate(platform)  # the probes' state (the same modules later)
        rst = ResetSignal()
        started = Signal(reset_less=True)
        m.d.sync += started.eq(1)
        with m.If(~started):
            m.d.comb += Assume(rst)
        self._shadows(m)
        if self.variant != "unprotected":
            with m.If(~rst):
                self._assumptions(m)
        with m.If(started & ~rst):
            if self.reach is not None:
                m.d.comb += Assert(~self._reached(m, self.reach))
            else:
                self._properties(m)
        self.latch_past(m)
        if self.goal is not None:
            self.name_asserted(m)
        return m

    def _shadows(self, m: Module) -> None:
        """The harness's shadows of what the leaves were told."""
        self._lengths(m)
        self._stream(m)

    def _assumptions(self, m: Module) -> None:
        """C1, T1, T2, V1."""
        self._commit_length(m)
        self._stream_contract(m)
        self._victim(m)

    def _properties(self, m: Module) -> None:
        """The variant's assertions."""
        if self.variant == "unprotected":
            self._invariants(m)
        else:
            self._b1(m)
            if self.variant == "props":
                self._invariants(m)

    # ------------------------------------------------------------------ shadows
    def _lengths(self, m: Module) -> None:
        """Each block table's length as the commands taken set it (``lens``)."""
        self.lens, self.take = length_shadow(m, self.dut.u.bt)

    def _stream(self, m: Module) -> None:
        """``owe``: the ACC beats the tree slots' stream still owes
        (:func:`formal.kvpool_ts.owe_shadow`)."""
        self.owe = owe_shadow(m, self.dut.u.ts, len(self.dut.op.payload.acc_len))

    # ------------------------------------------------------------------ assumptions
    def _commit_length(self, m: Module) -> None:
        """C1."""
        d = self.dut
        o = d.op.payload
        with m.If(d.op.valid & d.op.ready & (o.op == PoolOp.COMMIT)):
            for mine, k in tree_counts(d, o, adding=True):
                with m.If(mine):
                    m.d.comb += Assume(o.acc_len == k)
            m.d.comb += Assume(o.acc_len + Array(d.u.seg.len)[o.seq] <= (1 << d.POS_BITS))

    def _stream_contract(self, m: Module) -> None:
        """T1 and T2 (:func:`formal.kvpool_ts.stream_contract`)."""
        for conds in stream_contract(m, self.dut.u.ts, self.owe).values():
            m.d.comb += [Assume(x) for x in conds]

    def _victim(self, m: Module) -> None:
        """V1."""
        with m.If(self.dut.u.ps.done & self.at("SP_VWAIT")):
            m.d.comb += [Assume(x) for x in self._victim_ok()]

    def _victim_ok(self) -> list[Value]:
        """V1's conditions on a spill's VICTIM answer (``done`` in ``SP_VWAIT``): found,
        its PTE live."""
        u = self.dut.u
        ps, seg = u.ps, u.seg
        v = ps.victim
        base = Array(seg.tbase)[v.tab]
        live = (
            seg.tused.bit_select(v.tab, 1)
            & (v.tab < seg.n)
            & (base <= v.pos)
            & (v.pos < base + Array(seg.tlen)[v.tab])
        )
        return [~ps.none, live]

    # ------------------------------------------------------------------ properties
    def _b1(self, m: Module) -> None:
        """B1 (``negated``: an APPEND claimed at ``len + 1``)."""
        bt = self.dut.u.bt
        c = bt.cmd.payload
        length = self.lens[c.t]
        if self.variant == "negated":
            append = c.kind.as_value() == BtCmd.APPEND.value
            self._chk(m, "b1_lie", self.take & append, [c.i == length + 1])
            return
        self._chk(m, "b1", self.take, protocol_b1(c, length, bt.TABLES))

    def _reached(self, m: Module, what: str) -> Value:
        """The state :data:`REACH` names (asserted absent: its counterexample is a
        witness that the BMC reaches it)."""
        u, s = self.dut.u, self.dut.state
        kind = u.bt.cmd.payload.kind.as_value()
        if what == "append":
            return s.s2.valid & s.s2.committed
        if what == "drain":
            return u.drain_acc & self.take & (kind == BtCmd.APPEND.value)
        if what == "cut":
            return self.take & (kind == BtCmd.CUT.value)
        return self.take & (kind == BtCmd.WRITE.value) & self.at(*SPILLING)  # "spill"


def run_harness(
    cls: type,
    prefix: str,
    prove_depth: int,
    task: str,
    variant: str,
    reach: str | None,
    depth: int | None,
    out: Path,
) -> Outcome:
    """A whole-pool harness's run (this module's and :mod:`formal.kvpool_tlbproto`'s
    ``run``): ``cls(variant=..., reach=...)`` solved in ``out/<prefix>_<name>/<task>``,
    ``depth`` by default ``prove_depth`` (``prove``) or :data:`BMC_DEPTH` (``bmc``).

    Raises
    ------
    ValueError
        An unknown task (before the harness's conversion, which takes seconds),
        variant or witness.
    """
    if task not in MODES:
        raise ValueError(f"task = {task!r}: must be one of {sorted(MODES)}")
    if depth is None:
        depth = prove_depth if task == "prove" else BMC_DEPTH
    goals = cls.GOALS.get(variant, {}) if task == "prove" and reach is None else {}
    if goals:
        return _run_goals(cls, f"{prefix}_{variant}", variant, goals, depth, out)
    h = cls(variant=variant, reach=reach)
    name = f"reach_{reach}" if reach else variant
    return solve(convert(h, h.ports()), out / f"{prefix}_{name}", task, depth)


def _run_goals(
    cls: type, name: str, variant: str, goals: dict[str, tuple[str, ...]], depth: int, out: Path
) -> Outcome:
    """An induction split into ``goals`` (:attr:`PoolProtocolFormal.GOALS`), each goal's
    by :func:`formal.induct.induct` in ``out/<name>_<goal>``, after checking that they
    cover every assertion once. Sound by induction on time: each goal's proof assumes
    the others of the cycles before only. Stops at the first goal that does not
    close."""
    done: dict[str, Outcome] = {}
    for goal in goals:
        h = cls(variant=variant, goal=goal)
        il = convert(h, h.ports())
        if not done:
            check_goals(h.asserted, goals)
        done[goal] = induct(il, out / f"{name}_{goal}", depth)
        print(f"  {goal}: {done[goal].status}, {done[goal].seconds:.0f} s", flush=True)
        if done[goal].status != "PASS":
            break
    return joined(done)


def harness_run(cls: type, prefix: str, prove_depth: int) -> Callable[..., Outcome]:
    """A whole-pool harness module's ``run(task, *, variant="props", reach=None,
    depth=None, out=...)`` (:func:`run_harness` on ``cls``, its tasks in
    ``out/<prefix>_<name>/<task>``, ``prove``'s depth by default ``prove_depth``)."""

    def run(
        task: str,
        *,
        variant: str = "props",
        reach: str | None = None,
        depth: int | None = None,
        out: Path = OUT,
    ) -> Outcome:
        return run_harness(cls, prefix, prove_depth, task, variant, reach, depth, out)

    run.__doc__ = f"""Run ``task`` (``prove``: k-induction up to ``depth``, default
    {prove_depth}; ``bmc``: from reset, default :data:`formal.kvpool_proto.BMC_DEPTH`)
    on :class:`{cls.__module__}.{cls.__qualname__}`'s ``variant`` or a witness
    (``reach``). A failure leaves its trace in ``out/{prefix}_<name>/<task>/trace.vcd``.

    Raises
    ------
    ValueError
        An unknown task, variant or witness.
    """
    run.__module__, run.__qualname__ = cls.__module__, "run"  # documented as the module's
    return run


def proof_check(run: Callable[..., Outcome], variant: str, what: str) -> Callable[[], Answer]:
    """A harness's check of a second induction (``variant``, proving ``what``) at
    :data:`formal.kvpool.CONFIG`, which must close."""

    def check() -> Answer:
        o = run("prove", variant=variant)
        size = describe("pool", CONFIG)
        return o, o.status == "PASS", f"{size}: {what} by k-induction, closed at k = {o.steps}"

    check.__doc__ = f"{what}: the induction closes."
    return check


def weak_check(
    run: Callable[..., Outcome], what: str, depth: int | None = None
) -> Callable[[], Answer]:
    """A harness's ``weak`` check: ``what`` without the invariants (variant ``weak``),
    whose k-induction (up to ``depth``, by default the harness's) must stop
    ``UNKNOWN``."""

    def check() -> Answer:
        o = run("prove", variant="weak", depth=depth)
        return o, o.status == "UNKNOWN", f"{what} alone: k-induction up to {o.steps}, {o.status}"

    check.__doc__ = f"{what} without the invariants: the induction stops with a counterexample."
    return check


#: the harness's runs (:func:`harness_run`)
run = harness_run(PoolProtocolFormal, "kvpool_proto", PROVE_DEPTH)

#: the ``weak`` check (:func:`weak_check`)
_weak = weak_check(run, "B1")


#: the checks and the command line (:class:`formal.leaf.LeafChecks`)
LEAF = LeafChecks(
    module="formal.kvpool_proto",
    title="the pool keeps the block table's protocol",
    doc=__doc__,
    config=CONFIG,
    run=run,
    unit="pool",
    props="B1 (under C1, T1, T2, V1)",
    negated="an APPEND claimed at its table's length + 1 refuted",
    unprotected="the invariants without C1, T1, T2, V1: a failure",
    reach=REACH,
    label="proto:",
    extra={"weak": _weak},
)
#: the checks of :func:`main`
CHECKS = LEAF.checks
build_parser, parse_args, main = LEAF.build_parser, LEAF.parse_args, LEAF.main

if __name__ == "__main__":
    sys.exit(main())
