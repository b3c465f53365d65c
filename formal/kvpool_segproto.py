"""The pool keeps the segment table's protocol: ``python -m formal.kvpool_segproto``.

The pool's side of :mod:`formal.kvpool_seg`'s and
:mod:`formal.kvpool_seg_derived`'s contract (their assumptions A1-A17),
closed at the pool level: the harness of :mod:`formal.kvpool_proto` (the
whole :class:`hw.kvpool.ScaledPool` at :data:`formal.kvpool.CONFIG`: 2
segments and block tables, 2 sequences, 4 position bits; every input free)
with the leaves' shadows of the pool's segment table ``u.seg``, built by the
leaves' own functions: the drain's ``dr_seq`` / ``owed`` / ``cov``
(:func:`formal.kvpool_seg.drain_shadow`), an open's awaited append
``fresh`` and a release's pending gains ``pending``
(:func:`formal.kvpool_seg_derived.derived_shadows`). The leaves' free inputs
are the pool's registers: ``share_src`` is the share's source ``sh_s``
(:class:`hw.kvpool.pool_share.ShareRegs` ``s``), ``gain_g`` the cut job's
last walked segment ``cut_kg`` (:class:`hw.kvpool.pool_release.CutRegs`
``kg``, registered with the gain ``gv``).

Properties (asserted every cycle out of reset, each assumption's conditions
as the leaves state them, :func:`formal.kvpool_seg.seg_protocol` and
:func:`formal.kvpool_seg_derived.derived_protocol`, a named assertion
``fva_a<k>_<j>`` each): A1-A13, A14 but its ``room`` conditions and its
deltas of a share (kind (c)), A15-A17. A2 is empty at this size (every
operand's width holds only valid values).

Not proved here (:data:`REMAINING`): A14's ``room`` (a spill's segment holds
a position on chip, ``hbm < end - start``; a fill's one in HBM, ``hbm !=
0``) and A14 (c)'s deltas (a share takes ``-xc``, ``-xh`` off its source's
counters: the pool counts them from the PTEs it reads, ``sh_xc`` /
``sh_xh``). Both rest on each segment's HBM count ``hbm`` matching the PTEs
of its positions in HBM, which no invariant here states, and on contracts
:mod:`formal.kvpool_proto` does not assume: a spill's victim PTE on chip
(:mod:`formal.kvpool_allocproto`'s V2), the block table's reads replying
its PTEs (:mod:`formal.kvpool_tlbproto`'s G2: a fill's, a share's).
:mod:`formal.kvpool_conserve` proves ``A14room`` (decision 0033), with
:mod:`formal.kvpool_counts`' N3 assumed; :mod:`formal.kvpool_sharecount`
proves ``A14c`` (decision 0034), on that harness with G2 and the compare's
reads tracked.
Asserted here with the rest, each stops ``UNKNOWN`` (k = 2): ``A14room`` with
``SP_WR`` -> ``SP_FREE`` on a victim segment ``[14, 15)`` whose ``hbm`` is
16; ``A14c`` with ``SH_LAST`` -> ``SH_APPLY`` -> ``SH_BITS`` sharing
``sh_s``'s two exclusive segments ``[0, 4)``, ``[4, 16)`` (``hbm = 0``)
with ``sh_xc = sh_xh = 0``, not the 16 positions on chip.

A9 and A15 hold vacuously at this size: a share's prefix is a whole
16-position block, ``M = 16 = 2**POS_BITS``, so no segment straddles it and
the pool never splits (the RTL's ``SH_APPLY`` finds ``M < end`` false).

Assumed: what :mod:`formal.kvpool_proto` assumes (C1, T1, T2, V1),
unchanged. The leaves' properties 1-11 are not assumed (assume-guarantee
would allow it: they are proved at the leaf under A1-A17; but the leaf
proofs are at their own sizes, not at the pool's): what the induction needs
of the segment table's structure is stated by :mod:`formal.kvpool_proto_inv`
and :meth:`SegProtocolFormal._seg_invariants`.

Asserted with A1-A17: B1 and :mod:`formal.kvpool_proto_inv`'s strengthening
invariants, and the ones the shadows add
(:meth:`SegProtocolFormal._seg_invariants`): ``owed`` is the tree slots'
ACC beats still owed while the drain appends a path (0 otherwise), of
``dr_seq = drain_seq``; ``fresh`` exactly while a sequential commit's
segment opened in ``COM`` is empty in ``COM_BEAT``; ``pending`` exactly the
segments of the cut job's chain seen by one sequence, holding positions,
that its ``_KILL`` walk has not passed, or whose gain it registered last;
the gain's registers (``gv``, ``gx``, ``gs``, ``ge``, ``gh``) those of
segment ``kg``; a spill's victim PTE index ``vi`` that of its position in
its table (from ``SP_RD`` on), its segment ``vg`` (registered in ``SP_RD``)
alive and holding it, ``vxv`` its ``excl`` and ``vx`` its only sequence; a
fill's segment ``g`` seen by its sequence.

Checks (:data:`CHECKS`): ``prove`` (k-induction up to :data:`PROVE_DEPTH`:
must close), ``weak`` (A1-A17 without the invariants: the induction must
stop ``UNKNOWN``), ``negated`` (A3 with an open claimed at its sequence's
length + 1: a BMC must refute it) and the witnesses of :data:`REACH` within
:data:`formal.kvpool_proto.BMC_DEPTH` steps. A split and a share are not
witnessed (a 16-token block is deeper than the BMC reaches at this size,
as in :mod:`formal.kvpool_tlbproto`). Measured (another job on the second
core; ``build/reports/formal_kvpool.json``, rows ``segproto:``): ``prove``
closes at ``k = 1`` in 213 s; ``weak`` stops ``UNKNOWN`` in 46 s; ``negated``
is refuted at step 2 (6 s); the witnesses: a drain's append at step 13
(55 s), an open awaiting its append at step 16 (92 s), a gain at step 7
(17 s).
"""

import sys

from amaranth import Array, Const, Module, Mux, Value

from formal.kvpool import CONFIG
from formal.kvpool_proto import PoolProtocolFormal, harness_run, weak_check
from formal.kvpool_proto_inv import FILLING, SPILLING
from formal.kvpool_seg import drain_shadow, seg_protocol
from formal.kvpool_seg_derived import derived_protocol, derived_shadows
from formal.leaf import LeafChecks
from hw.kvpool.layouts import PoolCode, PoolOp
from hw.kvpool.pool_release import _KILL
from hw.kvpool.pool_spill import RET_FILL

__all__ = ["SegProtocolFormal", "CONFIG", "REMAINING", "run", "build_parser", "parse_args", "main"]

PROVE_DEPTH = 2
#: A1-A17 with the invariants; A3 claimed of length + 1; A1-A17 alone
VARIANTS = ("props", "negated", "weak")
#: the leaves' assumptions' conditions not asserted here (see the module docstring)
REMAINING = ("A14room", "A14c")
#: states the assumptions must allow (asserted absent: the counterexample is the witness)
REACH = {
    "drain": "a fast commit's drain appends to its sequence's segment (A5)",
    "fresh": "a sequential commit's open awaits its first append (A12)",
    "gain": "a release's walk gives a segment with positions to its one sequence (A13)",
}


class SegProtocolFormal(PoolProtocolFormal):
    """The pool, the leaves' shadows of its segment table, A1-A17 (but
    :data:`REMAINING`), B1, the assumptions of
    :class:`formal.kvpool_proto.PoolProtocolFormal` and the invariants.

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
        f, st = self.dut.state, self.dut.u.seg
        #: the leaves' free inputs: the share's source, the gain's segment
        self.share_src, self.gain_g = f.sh.s, f.cut.kg
        self.dr = drain_shadow(m, st)
        self.sh = derived_shadows(m, st, self.dr, self.gain_g)

    def _protocol(self) -> dict[str, list[Value]]:
        """A1-A17 as the leaves state them (every condition, :data:`REMAINING` too)."""
        st = self.dut.u.seg
        a = seg_protocol(st, self.share_src, self.dr)
        return a | derived_protocol(st, self.share_src, self.gain_g, self.sh)

    # ------------------------------------------------------------------ properties
    def _properties(self, m: Module) -> None:
        if self.variant == "negated":
            st = self.dut.u.seg
            ln = Array(st.len)[st.open_seq]
            self._chk(m, "a3_lie", st.open_en, [st.open_len == ln + 1])
            return
        a = self._protocol()
        #: the keys of the leaves' statements (every one asserted but REMAINING's)
        self.keys = tuple(a)
        for key, conds in a.items():
            if key not in REMAINING:
                self._chk(m, key.lower(), 1, conds)
        if self.variant == "props":
            self._b1(m)
            self._invariants(m)
            self._seg_invariants(m)

    def _seg_invariants(self, m: Module) -> None:
        """What the shadows add to :mod:`formal.kvpool_proto_inv`'s invariants."""
        u, f = self.dut.u, self.dut.state
        seg, o, cut = u.seg, f.r.o, f.cut
        n = seg.n
        dr, sh = self.dr, self.sh
        # the drain's shadow: the ACC beats owed while the drain appends a path
        self._chk(m, "owed", 1, [dr["owed"] == Mux(u.drain_acc, self.owe, 0)])
        self._chk(m, "dr_seq", u.drain_acc, [dr["dr_seq"] == u.drain_seq])
        # fresh: a sequential commit's segment opened in COM, empty in COM_BEAT
        g = f.g
        empty = seg.used.bit_select(g, 1) & (Array(seg.start)[g] == Array(seg.end)[g]) & (g < n)
        beat = self.at("COM_BEAT") & (self.owe != 0) & (o.op == PoolOp.COMMIT)
        self._chk(
            m,
            "fresh",
            sh["fresh"],
            [beat, empty, sh["fresh_g"] == g, sh["fresh_seq"] == o.seq],
        )
        # (a block's tag states on the way back to COM_BEAT follow an append)
        self._chk(m, "fresh_com", self._beating() & (self.owe != 0) & empty, [sh["fresh"]])
        # pending: the walk's chain segments left to one sequence, not yet gained
        gain_here = [cut.gv & (cut.kg == h) for h in range(n)]
        for h in range(n):
            ahead = (cut.state == _KILL) & (cut.cur <= seg.start[h])
            want = u.cutting & cut.chain[h] & seg.excl[h] & sh["full"][h]
            want &= ahead | gain_here[h]
            self._chk(m, f"pending{h}", 1, [sh["pending"][h] == want])
        kg = cut.kg
        self._chk(
            m,
            "gain",
            cut.gv,
            [
                u.cutting,
                cut.state == _KILL,
                kg < n,
                cut.chain.bit_select(kg, 1),
                seg.used.bit_select(kg, 1),
                seg.excl.bit_select(kg, 1),
                Array(seg.seqs)[kg] == (Const(1, seg.s) << cut.gx)[: seg.s],
                Array(seg.start)[kg] == cut.gs,
                Array(seg.end)[kg] == cut.ge,
                Array(seg.end)[kg] == cut.cur,
                Array(seg.hbm)[kg] == cut.gh,
                cut.gs < cut.ge,
            ],
        )
        # a spill's victim: its PTE in its table; its segment (registered through
        # SP_RD) alive, holding it, vxv its excl, vx its only sequence
        vg, vt = f.vg, f.vtab
        self._chk(
            m,
            "victim_pte",
            self.at("SP_RD", "SP_RDW", "SP_SLOT", "SP_WR", "SP_FREE"),
            [
                Array(seg.tbase)[vt] + f.vi == f.vpos,
                f.vi < Array(seg.tlen)[vt],
                seg.tused.bit_select(vt, 1),
                vt < n,
            ],
        )
        vic = self.at("SP_RDW", "SP_SLOT", "SP_WR", "SP_FREE")
        self._chk(
            m,
            "victim",
            vic,
            [
                vg < n,
                seg.used.bit_select(vg, 1),
                Array(seg.seqs)[vg].any(),
                Array(seg.tab)[vg] == vt,
                Array(seg.start)[vg] <= f.vpos,
                f.vpos < Array(seg.end)[vg],
                f.vxv == seg.excl.bit_select(vg, 1),
                ~f.vxv | (Array(seg.seqs)[vg] == (Const(1, seg.s) << f.vx)[: seg.s]),
            ],
        )
        # a fill's segment: seen by its sequence
        fill = self.at(*FILLING) | (self.at(*SPILLING) & (f.ret == RET_FILL))
        act = self.at("ACT") & (f.code == PoolCode.NONE)
        fill = (fill | act) & (o.op == PoolOp.FILL)
        self._chk(
            m,
            "fill_seg",
            fill,
            [g < n, seg.used.bit_select(g, 1), Array(seg.seqs)[g].bit_select(o.seq, 1)],
        )

    def _reached(self, m: Module, what: str) -> Value:
        """The state :data:`REACH` names."""
        st = self.dut.u.seg
        if what == "drain":
            return st.app_en & st.app_keep_len
        if what == "fresh":
            return self.sh["fresh"]
        return self.sh["gain"] & (st.adj_chip != 0)  # "gain"


#: the harness's runs (:func:`formal.kvpool_proto.harness_run`)
run = harness_run(SegProtocolFormal, "kvpool_segproto", PROVE_DEPTH)


#: the ``weak`` check (:func:`formal.kvpool_proto.weak_check`)
_weak = weak_check(run, "A1-A17")


#: the checks and the command line (:class:`formal.leaf.LeafChecks`)
LEAF = LeafChecks(
    module="formal.kvpool_segproto",
    title="the pool keeps the segment table's protocol",
    doc=__doc__,
    config=CONFIG,
    run=run,
    unit="pool",
    props="A1-A17 of the segment table (but A14's room and share deltas; under C1, T1, T2, V1)",
    negated="A3 with an open claimed at its sequence's length + 1 refuted",
    unprotected=None,
    reach=REACH,
    label="segproto:",
    extra={"weak": _weak},
)
#: the checks of :func:`main`
CHECKS = LEAF.checks
build_parser, parse_args, main = LEAF.build_parser, LEAF.parse_args, LEAF.main

if __name__ == "__main__":
    sys.exit(main())
