"""A refused operation changes nothing: ``python -m formal.kvpool_refuse``.

SPEC §4.3's *bad input raises ``error`` and changes nothing*, on the whole
pool, for the operations that take the long way (``CHECK``): every refused
one, since a fast path answers code 0 and takes only operations that pass
its own checks (that those are the golden model's is the scoreboards'
part: every error class, on the port's fast and long ways). On the harness of
:mod:`formal.kvpool_conserve` (the whole :class:`hw.kvpool.ScaledPool` at
:data:`formal.kvpool.CONFIG`, every input free, the shadow page table and
lengths, the tree shadow, the allocators' ``held`` and ``hheld``) with a
*snapshot* of the pool's state taken in the operation's first ``CHECK``
cycle, field by field: ``counters`` (``committed_pages``, ``spec_pages``,
``hbm_used``, ``pending``), ``segs`` / ``tables`` / ``seqs`` / ``tags``
(every register of the segment table: the segments, the block tables'
bases and lengths, the sequences' lengths, last segments, exclusive
counters and block tags), ``lens`` and ``ptes`` (the block tables' shadow
lengths and page table), ``nodes`` (the tree shadow), ``held`` (the pages
and HBM slots handed out: held or shown). The snapshot is *quiet* while no
background engine has run since it was taken (no drain, no cut job, no fast
insert's stage 2 or block tag, no posted score queued: they change the
state beside any operation); it is dropped when the FSM is back in
``IDLE``.

Properties (asserted every cycle out of reset):

Z1. while quiet, in the states an operation passes before its first change
    (``CHECK``, ``ACT``, ``PTE``, ``PTE_GOT``, ``FILL``, ``SH`` up to
    ``SH_APPLY``: its checks, a fill's PTE read, a share's token intake and
    search) and in ``RESULT`` with an error code, every field is the
    snapshot's and the page states take no command: a refused operation
    changes nothing, and its result shows the state it found;
Z2. (the invariant that makes it inductive) the result's code is not set
    before the operation ends, but by a share's ``ACT`` (its tokens are
    taken in any case): an operation that went past its first change is
    not refused.

Not in the snapshot: the TLBs (a cache of the page table: a lookup's answer
is the page table's, :mod:`formal.kvpool_tlbproto`), the tag table's
entries (written only by a block tag's ``TAG_PUT`` and stage 3, after an
insert or commit that changed the state), the page states' words (their
commands are: none is taken).

Assumed (every cycle out of reset): :mod:`formal.kvpool_counts`'
assumptions and, as facts proved by other inductions under assumptions this
one makes too, what :mod:`formal.kvpool_counts` and
:mod:`formal.kvpool_allocproto` prove.

Checks (:data:`CHECKS`): ``prove`` (k-induction up to :data:`PROVE_DEPTH`:
must close), ``weak`` (Z1 without Z2 and the other proofs' facts: the
induction must stop ``UNKNOWN``), ``negated`` (Z1 claimed in ``RESULT``
whatever the code: a BMC must refute it, reaching an operation that the
long way carries out), ``reach:refused`` (a refused operation's quiet
``RESULT``: Z1 is not vacuous). Measured in
``build/reports/formal_kvpool.json`` (rows ``refuse:``).
"""

import sys

from amaranth import Cat, Module, Signal, Value

from formal.kvpool import CONFIG
from formal.kvpool_conserve import ConserveFormal
from formal.kvpool_proto import harness_run, weak_check
from formal.leaf import LeafChecks
from hw.kvpool.layouts import PoolCode

__all__ = ["RefuseFormal", "CONFIG", "run", "build_parser", "parse_args", "main"]

PROVE_DEPTH = 2
#: Z1, Z2; Z1 at every result; Z1 alone
VARIANTS = ("props", "negated", "weak")
REACH = {"refused": "a refused operation's quiet result"}
#: the states an operation passes before its first change (its checks, a fill's PTE
#: read, a share's token intake and search)
BEFORE = (
    "CHECK",
    "ACT",
    "PTE",
    "PTE_GOT",
    "FILL",
    "SH",
    "SH_IN",
    "SH_NEXT",
    "SH_PROBE",
    "SH_FOUND",
    "SH_CMP",
    "SH_LAST",
    "SH_APPLY",
)


class RefuseFormal(ConserveFormal):
    """The pool and the shadows of :class:`formal.kvpool_conserve.ConserveFormal` with
    a snapshot of the state at an operation's checks; Z1, Z2 under its assumptions and the
    properties :class:`formal.kvpool_counts.CountsFormal` and
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
    def _state(self) -> dict[str, Value]:
        """Everything an operation may change, by name."""
        u = self.dut.u
        seg = u.seg
        state = {
            "counters": Cat(u.committed_pages, u.spec_pages, u.hbm_used, u.pending),
            "segs": Cat(seg.used, seg.excl, *seg.seqs, *seg.start, *seg.end, *seg.hbm),
            "tables": Cat(seg.tused, *seg.tab, *seg.tbase, *seg.tlen, *seg.sbase),
            "seqs": Cat(*seg.len, *seg.last, *seg.xchip, *seg.xhbm),
            "tags": Cat(*seg.tag),
            "lens": Cat(*self.lens),
            "ptes": Cat(*self.ptes),
            "nodes": Cat(*self.nval),
            "held": Cat(self.held | self.shown, self.hheld | self.hshown),
        }
        return state

    def _shadows(self, m: Module) -> None:
        super()._shadows(m)
        u, f = self.dut.u, self.dut.state
        self.now = self._state()
        self.snap = {k: Signal(len(v), name=f"fv_snap_{k}") for k, v in self.now.items()}
        self.armed = Signal(name="fv_armed")
        self.quiet = Signal(name="fv_quiet")
        bg = u.drain | u.cutting | f.s2.valid | f.s2.s3 | (f.sc.n != 0)
        first = self.at("CHECK") & ~self.armed
        with m.If(first):
            m.d.sync += [self.armed.eq(1), self.quiet.eq(~bg)]
            m.d.sync += [self.snap[k].eq(v) for k, v in self.now.items()]
        with m.Elif(self.at("IDLE")):  # the operation is over
            m.d.sync += self.armed.eq(0)
        with m.Else():
            m.d.sync += self.quiet.eq(self.quiet & ~bg)

    # ------------------------------------------------------------------ properties
    def _refused(self) -> Value:
        """A quiet ``RESULT`` with an error code, the snapshot armed."""
        code = self.dut.state.r.code
        return self.armed & self.quiet & self.at("RESULT") & (code != PoolCode.NONE)

    def _reached(self, m: Module, what: str) -> Value:
        """The witness ``refused`` (the only one)."""
        return self._refused()

    def _properties(self, m: Module) -> None:
        if self.variant != "weak":
            self._proved(m)
        f = self.dut.state
        result = self.at("RESULT")
        if self.variant != "negated":
            result = result & (f.r.code != PoolCode.NONE)
        watched = self.armed & self.quiet & (self.at(*BEFORE) | result)
        for k, v in self.now.items():
            self._chk(m, f"z1_{k}", watched, [v == self.snap[k]])
        ps = self.dut.u.ps
        self._chk(m, "z1_ps", watched, [~(ps.cmd.valid & ps.cmd.ready)])
        if self.variant == "props":
            # Z2: the result's code is set only as the operation ends (a share's in
            # ACT, for its token intake)
            running = (self.armed | self.at("CHECK")) & ~self.at("SH", "SH_IN", "RESULT", "IDLE")
            self._chk(m, "z2", running, [f.r.code == PoolCode.NONE])


#: the harness's runs (:func:`formal.kvpool_proto.harness_run`)
run = harness_run(RefuseFormal, "kvpool_refuse", PROVE_DEPTH)

#: the ``weak`` check (:func:`formal.kvpool_proto.weak_check`)
_weak = weak_check(run, "Z1", depth=2)

#: the checks and the command line (:class:`formal.leaf.LeafChecks`)
LEAF = LeafChecks(
    module="formal.kvpool_refuse",
    title="a refused operation changes nothing",
    doc=__doc__,
    config=CONFIG,
    run=run,
    unit="pool",
    props="Z1, Z2 (assuming counts' and allocproto's results)",
    negated="Z1 claimed of every result: refuted",
    unprotected=None,
    reach=REACH,
    label="refuse:",
    extra={"weak": _weak},
)
CHECKS = LEAF.checks
build_parser, parse_args, main = LEAF.build_parser, LEAF.parse_args, LEAF.main

if __name__ == "__main__":
    sys.exit(main())
