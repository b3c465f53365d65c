"""A share counts its source's exclusive positions: ``python -m formal.kvpool_sharecount``.

A share (``SH_*``, :mod:`hw.kvpool.pool_share`) takes off its source's
counters the positions of the source's exclusive segments that the
destination now shares: ``SH_BITS`` drives the segment table's ``adj_chip``
/ ``adj_hbm`` with ``-sh_xc`` / ``-sh_xh``, which ``SH_CMP`` counted from the
PTEs it read, one position per cycle, three cycles per read. The segment
table's leaf proof assumes these deltas are the sizes of those segments on
chip and in HBM (:mod:`formal.kvpool_seg_derived`'s A14 (c),
:func:`~formal.kvpool_seg_derived.share_deltas`, ``A14c``);
:mod:`formal.kvpool_segproto` leaves it to this proof. On the harness of
:mod:`formal.kvpool_conserve` (the whole :class:`hw.kvpool.ScaledPool` at
:data:`formal.kvpool.CONFIG`, every input free, the shadow page table, the
block tables' shadow lengths, the reads' tracks of
:mod:`formal.kvpool_tlbproto`) with two more shadows, ``gxc`` / ``gxh``: per
compare read the FSM issues with its exclusive bit (``sh_xbit``), the shadow
PTE's ``loc`` as of the read, counted (0 / 1), cleared in ``SH_FOUND`` as
``sh_xc`` / ``sh_xh`` are.

A position ``p`` of the source ``s = sh_s`` is *exclusive* when a used
segment seen by ``s`` alone (``excl``) holds it; its PTE is the resident entry
``(t, p - tbase[t])`` of that segment's table ``t``.

Properties (asserted every cycle out of reset):

X1. in ``SH_CMP`` the reads in flight are the FSM's own, each one the block
    table answers with the shadow's PTE (:mod:`formal.kvpool_tlbproto`'s
    G2), and ``sh_ip - sh_cp`` of them;
X2. from ``SH_CMP`` to ``SH_BITS``: ``sh_xc`` plus the exclusive reads in
    flight that read ``loc = 0`` is ``gxc`` (``sh_xh``, ``loc = 1``, ``gxh``);
X3. ``gxc`` / ``gxh`` are the source's exclusive positions below ``sh_ip``
    whose PTE is on chip / in HBM;
X4. from ``SH_LAST`` on, the compare has read and checked ``sh_m``
    positions;
A14c. (:func:`formal.kvpool_seg_derived.share_deltas`) ``SH_BITS``' deltas
    are minus the sizes on chip and in HBM of the source's exclusive
    segments below ``sh_m``.

Assumed (every cycle out of reset): :mod:`formal.kvpool_counts`'
assumptions and, as facts proved by other inductions under assumptions this
one makes too, what :mod:`formal.kvpool_counts`,
:mod:`formal.kvpool_allocproto` and :mod:`formal.kvpool_conserve` (its
pages) prove (:class:`formal.kvpool_conserve.ConserveFormal`).

Checks (:data:`CHECKS`): ``prove`` (k-induction up to :data:`PROVE_DEPTH`:
must close), ``weak`` (A14c alone: the induction must stop ``UNKNOWN``),
``zero`` (the properties and ``sh_xc == 0`` at ``SH_BITS``: the k = 1
induction must stop ``UNKNOWN``, so the invariants do not make a counted
update unreachable), ``negated`` (X3 of every exclusive position, not only
those below ``sh_ip``, at every cycle: a BMC must refute it, reaching a
committed PTE of the source's exclusive segment). No witnesses: a compare needs a committed
16-position block and 16 tokens in, beyond what a BMC of this harness holds
in memory. Measured in ``build/reports/formal_kvpool.json`` (rows
``sharecount:``).
"""

import sys

from amaranth import Module, Signal, Value

from formal.kvpool import CONFIG, count
from formal.kvpool_conserve import ConserveFormal
from formal.kvpool_proto import harness_run, weak_check
from formal.kvpool_seg_derived import share_deltas
from formal.leaf import Answer, LeafChecks
from hw.common import sum_tree

__all__ = ["ShareCountFormal", "CONFIG", "run", "build_parser", "parse_args", "main"]

PROVE_DEPTH = 2
#: X1 - X4 and A14c; X3 of every exclusive position at every cycle; A14c alone; the
#: properties with no position counted at ``SH_BITS``
VARIANTS = ("props", "negated", "weak", "zero")
#: no witnesses: a compare is beyond the BMC's reach (the module docstring)
REACH: dict[str, str] = {}
#: the share's states from its compare to its counters' update
FOUND = ("SH_CMP", "SH_LAST", "SH_APPLY", "SH_BITS")


class ShareCountFormal(ConserveFormal):
    """The pool and the shadows of :class:`formal.kvpool_conserve.ConserveFormal` with
    ``gxc`` / ``gxh``; X1 - X4 and A14c under its assumptions and the properties it,
    :class:`formal.kvpool_counts.CountsFormal` and
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
        sh = self.dut.state.sh
        w = len(sh.xc)
        self.gxc, self.gxh = Signal(w, name="fv_gxc"), Signal(w, name="fv_gxh")
        loc = self.rtrack[0][1][0][0]  # the shadow PTE's loc, as of the read
        issue = self.at("SH_CMP") & (sh.ip < sh.mm) & ~sh.bad & sh.xbit
        with m.If(self.at("SH_FOUND")):
            m.d.sync += [self.gxc.eq(0), self.gxh.eq(0)]
        with m.Elif(issue):
            m.d.sync += [self.gxc.eq(self.gxc + ~loc), self.gxh.eq(self.gxh + loc)]

    # ------------------------------------------------------------------ properties
    def _properties(self, m: Module) -> None:
        if self.variant != "weak":
            self._proved(m)
            with self.assuming():  # conserve's pages
                self._page_part(m)
        if self.variant == "negated":
            self._counted(m, negated=True)
            return
        self._chk(m, "a14c", 1, share_deltas(self.dut.u.seg, self.dut.state.sh.s))
        if self.variant in ("props", "zero"):
            self._flight(m)
            self._counted(m)

    def _exclusive(self, t: int, p: Value) -> Value:
        """Position ``p`` of table ``t`` is held by a used segment seen by the source
        alone."""
        seg, s = self.dut.u.seg, self.dut.state.sh.s
        return self._held(t, p, [seg.excl[g] & seg.seqs[g].bit_select(s, 1) for g in range(seg.n)])

    def _flight(self, m: Module) -> None:
        """X1, X2, X4."""
        f = self.dut.state
        sh, pipe = f.sh, f.rd_pipe
        ok, exp = self.rtrack[0]
        cmp = self.at("SH_CMP")
        n = len(pipe)
        for j in range(n):
            self._chk(m, f"x1_ok{j}", cmp & pipe[j], [ok[j + 1]])
        self._chk(m, "x1_n", cmp, [sh.ip == (sh.cp + count(list(pipe)))[: len(sh.ip)]])
        self._chk(m, "x1_idle", self.at(*FOUND[1:]), [pipe == 0])
        w = len(sh.xc)
        on = [(pipe[j] & sh.xp[j] & ~exp[j + 1][0]).as_unsigned() for j in range(n)]
        off = [(pipe[j] & sh.xp[j] & exp[j + 1][0]).as_unsigned() for j in range(n)]
        found = self.at(*FOUND)
        self._chk(m, "x2c", found, [(sh.xc + sum_tree(on, w))[:w] == self.gxc])
        self._chk(m, "x2h", found, [(sh.xh + sum_tree(off, w))[:w] == self.gxh])
        self._chk(m, "x4", self.at(*FOUND[1:]), [sh.cp == sh.mm, sh.ip == sh.mm])

    def _counted(self, m: Module, negated: bool = False) -> None:
        """X3 (``negated``: every exclusive position of the source, not only those below
        ``sh_ip``, claimed counted in ``gxc`` at every cycle)."""
        sh = self.dut.state.sh
        w = len(sh.xc)
        on, off = [], []
        for t, _i, res, loc, p in self._entries():
            here = res & self._exclusive(t, p) & (negated | (p < sh.ip))
            on.append((here & ~loc).as_unsigned())
            off.append((here & loc).as_unsigned())
        found = 1 if negated else self.at(*FOUND)
        self._chk(m, "x3c", found, [self.gxc == sum_tree(on, w)])
        if not negated:
            self._chk(m, "x3h", found, [self.gxh == sum_tree(off, w)])
        if self.variant == "zero":
            self._chk(m, "zero", self.at("SH_BITS"), [sh.xc == 0])


#: the harness's runs (:func:`formal.kvpool_proto.harness_run`)
run = harness_run(ShareCountFormal, "kvpool_sharecount", PROVE_DEPTH)


def _zero() -> Answer:
    """The properties with ``sh_xc`` claimed 0 at ``SH_BITS``: the induction stops with a
    counterexample (the invariants leave a share's counted update possible)."""
    o = run("prove", variant="zero", depth=1)
    what = f"sh_xc claimed 0 at SH_BITS: k-induction up to {o.steps}, {o.status}"
    return o, o.status == "UNKNOWN", what


#: the ``weak`` check (:func:`formal.kvpool_proto.weak_check`)
_weak = weak_check(run, "A14c", depth=2)


#: the checks and the command line (:class:`formal.leaf.LeafChecks`)
LEAF = LeafChecks(
    module="formal.kvpool_sharecount",
    title="a share's compare counts its source's exclusive positions",
    doc=__doc__,
    config=CONFIG,
    run=run,
    unit="pool",
    props="A14c, X1 - X4 (assuming counts', allocproto's and conserve's results)",
    negated="X3 of every exclusive position at every cycle: refuted",
    unprotected=None,
    reach=REACH,
    label="sharecount:",
    extra={"weak": _weak, "zero": _zero},
)
CHECKS = LEAF.checks
build_parser, parse_args, main = LEAF.build_parser, LEAF.parse_args, LEAF.main

if __name__ == "__main__":
    sys.exit(main())
