"""A sequence's chain covers ``0 .. len - 1`` exactly once, by k-induction: ``formal.kvpool_seg``.

SPEC §4.8 (*a sequence's chain covers 0 .. len(seq) - 1 exactly once*) at the
leaf level, assume-guarantee: a harness around the scaled pool's segment
table :class:`hw.kvpool.segtable.SegState` (not a component: the harness
builds it in its own module, as :class:`hw.kvpool.ScaledPool` does, and its
``*_en`` controls and their operands are the harness's free inputs) at a
small size (:data:`CONFIG`: 4 segments, 3 sequences, 3 position bits). Every
operation that changes ``used`` / ``seqs`` / ``start`` / ``end`` / ``len`` is
in: open (with or without its first append), append, the fast commit's
``len_add`` and its drain's appends (``app_keep_len``), fork, release, bury,
split and share. The other controls (cut, tag, ``hbm_inc`` / ``hbm_dec``)
change none of that state and are free. A *shadow* ``owed`` (with ``dr_seq``)
counts the positions a ``len_add`` moved ``len(dr_seq)`` ahead of its chain
that its drain has not yet appended: ``len_add`` sets it to ``len_k``, a
drain's append takes 1 off. ``cov(s) = len(s) - owed`` for ``s = dr_seq``,
else ``len(s)``. Reset is free, and so is every input, except the pool's
protocol (derived from :mod:`hw.kvpool.pool` and its ``pool_*`` modules),
assumed in every cycle without reset (in a reset cycle anything goes: the
registers are cleared):

A1. at most one of open, append, fork, release, bury, split, share and
    ``len_add`` per cycle, except an open with the append of the segment it
    opens (``app_g = free_g``, ``app_seq = open_seq``, not ``app_keep_len``: a
    committed insert) or with a ``len_add`` (a fast commit's first cycle);
    while a drain is owed (``owed != 0``) nothing but the drain's appends
    (``spec_only``: the pool takes only speculative inserts), and only then an
    append with ``app_keep_len``;
A2. every sequence operand of an operation is below ``SEQS``, every segment
    operand below ``SEGS`` (the pool's ``SEQ_RANGE`` / ``DST_RANGE`` checks;
    segments by construction);
A3. an open has a free segment (``free_any``) and ``open_len = len(open_seq)``;
A4. an append (not ``app_keep_len``: a committed insert's, a sequential
    commit's) of ``app_seq`` with ``len(app_seq) < 2**POS_BITS`` (the
    ``FIELD`` check of ``pos``, the tree's positions) goes to the segment
    opened with it, or else to a used segment seen by ``app_seq`` alone that
    ends at ``len(app_seq)`` (its own segment, ``own_g``);
A5. a drain's append (``app_keep_len``; its ``app_seq`` is unused) goes to
    a used segment seen by ``dr_seq`` alone that ends at ``cov(dr_seq)``
    (``drain_g``: the own segment as of the ``len_add``, nothing else
    changed since);
A6. a ``len_add`` keeps ``len(len_seq) + len_k <= 2**POS_BITS``;
A7. a fork has ``len(fork_dst) = 0`` (``DST_BUSY``);
A8. a bury's mask names dead segments only (used, ``seqs = 0``: the cut's
    ``chain & ~seqs.any()``);
A9. a split has a free segment and splits a used segment strictly inside it
    (``start < split_m < end``: ``SH_APPLY`` splits the segment holding
    ``M - 1`` when it ends above ``M``);
A10. a share has ``len(share_dst) = 0`` (``DST_BUSY``) and a source sequence
    ``s`` (the harness's free input ``share_src``, the pool's ``sh_s``) with
    ``share_len <= len(s)``, whose chain no segment straddles (``start <
    share_len < end``: the split before) and whose segments starting below
    ``share_len`` are exactly ``share_mask`` (``SH_BITS``' ``below``).

A release needs nothing but A1. The pool checks more than this (an open only
without an own segment, a fork's ``SAME_SEQ`` and ``SRC_EMPTY``, a share's
``M`` a multiple of 16 and not 0): none of it is needed. Properties
(asserted every cycle after the first reset; 2 and 3 are the strengthening
invariants that make 1 inductive, each true on its own):

1. for every sequence ``s`` and position ``p < 2**POS_BITS``, the pool's own
   query ``find(s, p)`` (the used segments seen by ``s`` holding ``p``) is
   one-hot if ``p < cov(s)``, else 0: outside a drain *a sequence's chain
   covers 0 .. len(seq) - 1 exactly once* and nothing beyond it; during one,
   the drained sequence's chain covers the positions appended so far (the
   pool holds that sequence's lookups until the drain is done);
2. every used segment has ``start <= end <= 2**POS_BITS``, every unused one
   is seen by no sequence, and every ``len(s) <= 2**POS_BITS``;
3. a drain owed is of a sequence below ``SEQS`` and ``owed <= len(dr_seq)``.

By 1, ``own(s)`` reports at most one segment with positions (two would both
hold ``len - 1``); an empty own segment beside it (an open whose append has
not come, which the pool never leaves across another operation) is not
excluded here. The pool's side of the contract (A1-A10: that the drain
appends exactly the ``len_k`` positions of its ``len_add``, that ``own_g``
and ``drain_g`` name the own segment, that nothing but speculative inserts
is taken while a commit's path is appended or a cut runs) is not proved
here: :mod:`formal.kvpool_segproto` proves it of the whole pool, asserting
the same statements (:func:`seg_protocol`, on the shadow of
:func:`drain_shadow`: one statement of the contract, decision 0031). The
pool-level BMC of :mod:`formal.kvpool` checks the consequence from reset,
to its depth (its property 6, at idle points).

Checks (:data:`CHECKS`): ``prove`` (k-induction up to :data:`PROVE_DEPTH` at
:data:`CONFIG`: must close; 15 - 25 s), ``prove:larger`` (the same at
:data:`LARGER`: 5 segments, so that a segment operand can be out of range;
about 30 s), ``negated`` (property 1 with ``cov(s) - 1``: position ``len -
1`` claimed uncovered; must be refuted), ``unprotected`` (properties 1-3
without A3-A10, the operations' preconditions: a BMC must find a failure)
and the witnesses of :data:`REACH` (the state's absence asserted: the BMC's
counterexample shows that the assumptions allow it within :data:`BMC_DEPTH`
steps, so the proof is not vacuous); each BMC takes about a second.
Property 1 alone is not inductive (a used segment with ``start > end =
len``, appended to, covers nothing): the harness's variant ``only1`` shows
it (``UNKNOWN``). ``run(..., drop=[...])`` leaves out single assumptions:
without any one of A3-A10 a BMC finds a failure. Positions cost most: with
``POS_BITS = 4`` the induction closes at ``k = 1`` too, but took 889 s (4
segments) and 1,234 s (6 segments), so it is no check; the chain's shape
stated besides 1 (disjoint segments, each but the first ending where
another starts, the last at ``cov``) made even ``CONFIG`` take over 15
minutes.
"""

import sys
from collections.abc import Iterable
from pathlib import Path

from amaranth import Cat, Const, Elaboratable, Module, Mux, ResetSignal, Signal, Value
from amaranth.hdl import Assert, Assume

from formal.leaf import LeafChecks, check_run
from formal.sat import Outcome, convert, solve
from hw.kvpool.segtable import SegState

__all__ = [
    "SegFormal",
    "drain_shadow",
    "seg_ops",
    "seg_protocol",
    "CONFIG",
    "run",
    "build_parser",
    "parse_args",
    "main",
]

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "build" / "formal"
#: the proved size (:class:`hw.kvpool.segtable.SegState` parameters)
CONFIG = {"SEGS": 4, "SEQS": 3, "POS_BITS": 3}
PROVE_DEPTH = 4
BMC_DEPTH = 10
#: the harness's variants: properties 1-3; a false one; properties 1-3 without
#: A3-A10; property 1 alone (not inductive without 2 and 3)
VARIANTS = ("props", "negated", "unprotected", "only1")
#: the assumptions ``drop`` may leave out (``unprotected``: all of them)
PRECONDITIONS = ("A3", "A4", "A5", "A6", "A7", "A8", "A9", "A10")
#: states the assumptions must allow (asserted absent: the counterexample is the witness)
REACH = {
    "two_segments": "a sequence with two segments in its chain (positions in both)",
    "forked": "a segment with positions shared by two sequences (a fork)",
    "killed": "a release killed a segment with positions (used, seen by none)",
    "split_share": "a share of the positions below a split made in the cycle before",
    "drained": "the last append of a fast commit's drain of 2 positions",
}
#: the controls the pool drives (every one free: the assumptions constrain them)
CONTROLS = (
    "open_en open_seq open_len app_en app_g app_seq app_keep_len len_add len_seq len_k "
    "fork_en fork_from fork_dst rel_en rel_seq bury_en bury_mask cut_en cut_t cut_c "
    "tag_en tag_seq tag_val split_en split_g split_m split_hbm hbm_inc hbm_inc_g "
    "hbm_dec hbm_dec_g share_en share_mask share_dst share_len"
).split()


def drain_shadow(m: Module, st: SegState) -> dict[str, Value]:
    """The drain's shadow of segment table ``st`` (registers in ``m``'s ``sync``
    domain): ``dr_seq`` and ``owed`` (a ``len_add`` sets them to ``len_seq`` and
    ``len_k``, a drain's append, ``app_en & app_keep_len``, takes 1 off ``owed``) and
    ``cov`` (per sequence ``s``, the positions its chain must cover: ``len(s) - owed``
    for ``s = dr_seq``, else ``len(s)``). What A1, A5 and property 1 read; stated once
    for this module's harness, :mod:`formal.kvpool_seg_derived`'s and the pool's
    (:mod:`formal.kvpool_segproto`)."""
    dr_seq = Signal(st.sb, name="fv_dr_seq")
    owed = Signal(len(st.len[0]), name="fv_owed")
    keep = st.app_en & st.app_keep_len
    with m.If(st.len_add):
        m.d.sync += [dr_seq.eq(st.len_seq), owed.eq(st.len_k)]
    with m.Elif(keep):
        m.d.sync += owed.eq(owed - 1)
    cov = [Signal(len(st.len[0]), name=f"fv_cov{s}") for s in range(st.s)]
    for s in range(st.s):
        m.d.comb += cov[s].eq(st.len[s] - Mux(dr_seq == s, owed, 0))
    return {"dr_seq": dr_seq, "owed": owed, "cov": cov}


def seg_ops(st: SegState) -> tuple[Value, Value]:
    """``(n_ops, keep)``: how many of A1's operations (open, append, fork, release,
    bury, split, share, ``len_add``) ``st``'s controls take this cycle, and whether an
    append is a drain's (``app_keep_len``)."""
    ops = [st.open_en, st.app_en, st.fork_en, st.rel_en, st.bury_en]
    ops += [st.split_en, st.share_en, st.len_add]
    return sum(op.as_unsigned() for op in ops), st.app_en & st.app_keep_len


def seg_protocol(st: SegState, share_src: Value, dr: dict) -> dict[str, list[Value]]:
    """Assumptions A1-A10 (the module docstring) on segment table ``st``'s controls,
    ``share_src`` (the share's source sequence) and the drain's shadow ``dr``
    (:func:`drain_shadow`): per assumption, the conditions that must hold in every
    cycle out of reset (A2 is empty when every operand's width holds only valid
    values). Assumed by :class:`SegFormal` (and :mod:`formal.kvpool_seg_derived`),
    asserted of the pool by :mod:`formal.kvpool_segproto`: one statement of the
    contract."""
    top = 1 << (len(st.len[0]) - 1)
    dr_seq, owed, cov = dr["dr_seq"], dr["owed"], dr["cov"]
    n_ops, keep = seg_ops(st)
    pairs = (st.open_en & st.app_en & ~st.app_keep_len) | (st.open_en & st.len_add)
    ln = {name: st.len_of(v, f"fv_len_{name}") for name, v in _seq_operands(st, share_src).items()}
    a: dict[str, list[Value]] = {}
    # A1: one operation (or open + its append, open + len_add); a drain alone
    a["A1"] = [
        (n_ops <= 1) | ((n_ops == 2) & pairs),
        Mux(owed != 0, ~(n_ops.bool() & ~(keep & (n_ops == 1))), ~keep),
    ]
    # A2: operands in range (for the operation that uses them)
    a["A2"] = _ranges(st, share_src)
    a["A3"] = [~st.open_en | (st.free_any & (st.open_len == ln["open_seq"]))]
    with_open = st.open_en & (st.app_g == st.free_g) & (st.app_seq == st.open_seq)
    own = ~st.open_en & _alone(st, st.app_g, st.app_seq, ln["app_seq"])
    ok = (ln["app_seq"] < top) & (with_open | own)
    a["A4"] = [~(st.app_en & ~st.app_keep_len) | ok]
    c = Cat(*cov).word_select(dr_seq, len(cov[0])) if st.s > 1 else cov[0]
    a["A5"] = [~keep | _alone(st, st.app_g, dr_seq, c)]
    a["A6"] = [~st.len_add | (ln["len_seq"] + st.len_k <= top)]
    a["A7"] = [~st.fork_en | (ln["fork_dst"] == 0)]
    dead = Cat(*[st.used[g] & ~st.seqs[g].any() for g in range(st.n)])
    a["A8"] = [~st.bury_en | ((st.bury_mask & ~dead) == 0)]
    s1h = Const(1, st.n) << st.split_g
    start = st.pick(s1h, st.start, "fv_split_start")
    end = st.pick(s1h, st.end, "fv_split_end")
    inside = st.used.bit_select(st.split_g, 1) & (start < st.split_m) & (st.split_m < end)
    a["A9"] = [~st.split_en | (st.free_any & inside)]
    a["A10"] = [~st.share_en | _share_ok(st, share_src, ln)]
    return a


def _alone(st: SegState, g: Value, seq: Value, e: Value) -> Value:
    """A4, A5: segment ``g`` is used, seen by ``seq`` alone and ends at ``e``."""
    seqs = Cat(*st.seqs).word_select(g, st.s)
    end = Cat(*st.end).word_select(g, len(st.end[0]))
    return st.used.bit_select(g, 1) & (seqs == (Const(1, st.s) << seq)[: st.s]) & (end == e)


def _seq_operands(st: SegState, share_src: Value) -> dict[str, Value]:
    names = ("open_seq", "app_seq", "len_seq", "fork_from", "fork_dst", "share_dst")
    return {**{n: getattr(st, n) for n in names}, "share_src": share_src}


def _ranges(st: SegState, share_src: Value) -> list[Value]:
    """A2: the operands of the operation taken below ``SEQS`` / ``SEGS``."""
    seq_of = [
        (st.open_en, st.open_seq),
        (st.app_en, st.app_seq),
        (st.len_add, st.len_seq),
        (st.fork_en, st.fork_from),
        (st.fork_en, st.fork_dst),
        (st.rel_en, st.rel_seq),
        (st.share_en, st.share_dst),
        (st.share_en, share_src),
    ]
    seg_of = [(st.app_en, st.app_g), (st.split_en, st.split_g)]
    out = [~en | (v < st.s) for en, v in seq_of if st.s < (1 << len(v))]
    return out + [~en | (v < st.n) for en, v in seg_of if st.n < (1 << len(v))]


def _share_ok(st: SegState, share_src: Value, ln: dict) -> Value:
    """A10: ``dst`` empty, ``share_mask`` the source's chain below ``share_len``, no
    segment of it straddling ``share_len``, ``share_len <= len(source)``."""
    mm = st.share_len
    chain = st.chain(share_src, "fv_share_chain")
    below = Cat(*[chain[g] & (st.start[g] < mm) for g in range(st.n)])
    straddle = Cat(*[chain[g] & (st.start[g] < mm) & (mm < st.end[g]) for g in range(st.n)])
    return (
        (ln["share_dst"] == 0)
        & (mm <= ln["share_src"])
        & (straddle == 0)
        & (st.share_mask == below)
    )


class SegFormal(Elaboratable):
    """The segment table, the drain's shadow, assumptions A1-A10 and properties 1-3."""

    def __init__(
        self,
        *,
        variant: str = "props",
        reach: str | None = None,
        drop: Iterable[str] = (),
        **params: int,
    ) -> None:
        self._MustUse__silence = True  # a refused argument leaves nothing to elaborate
        check_run(variant, reach, VARIANTS, REACH)
        drop = frozenset(drop)
        if not drop <= set(PRECONDITIONS):
            raise ValueError(f"drop = {sorted(drop)}: each must be one of {PRECONDITIONS}")
        self._MustUse__silence = False
        self.variant, self.reach = variant, reach
        self.drop = frozenset(PRECONDITIONS) if variant == "unprotected" else drop
        self.p = {**CONFIG, **params}
        self._m = Module()
        self._done = False
        self.st = SegState(
            self._m, segs=self.p["SEGS"], seqs=self.p["SEQS"], pos_bits=self.p["POS_BITS"]
        )
        #: the share's source sequence (the pool's ``sh_s``; free: A10 constrains it)
        self.share_src = Signal(self.st.sb, name="share_src")

    def ports(self) -> list[Signal]:
        """The segment table's controls and the share's source (free for the solver)."""
        return [getattr(self.st, name) for name in CONTROLS] + [self.share_src]

    def elaborate(self, platform) -> Module:
        m, st = self._m, self.st
        if self._done:  # the controls' logic is in the module already
            return m
        self._done = True
        rst = ResetSignal()
        started = Signal(reset_less=True)
        m.d.sync += started.eq(1)
        with m.If(~started):
            m.d.comb += Assume(rst)
        dr = drain_shadow(m, st)
        dr_seq, owed, cov = dr["dr_seq"], dr["owed"], dr["cov"]
        self._protocol(m, rst, dr)
        with m.If(started):
            if self.reach is not None:
                m.d.comb += Assert(~self._witness(m, rst, owed))
            elif self.variant == "negated":
                self._cover(m, [Mux(c == 0, 0, c - 1) for c in cov])
            else:
                self._cover(m, cov)
                if self.variant != "only1":
                    self._wellformed(m, dr_seq, owed)
        return m

    # ------------------------------------------------------------------ protocol
    def _protocol(self, m: Module, rst: Value, dr: dict) -> None:
        """Assumptions A1-A10 (:func:`seg_protocol`; but those of ``drop``), in cycles
        without reset."""
        a = seg_protocol(self.st, self.share_src, dr)
        with m.If(~rst):
            m.d.comb += [Assume(x) for k, xs in a.items() if k not in self.drop for x in xs]

    # ------------------------------------------------------------------ properties
    def _cover(self, m: Module, cov: list) -> None:
        """Property 1 (with ``cov``): ``find(s, p)`` one-hot below ``cov[s]``, else 0."""
        st = self.st
        for s in range(st.s):
            for p in range(1 << self.p["POS_BITS"]):
                f = st.find(Const(s, st.sb), Const(p, len(st.end[0])), f"fv_find{s}_{p}")
                two = [f[g] & f[h] for g in range(st.n) for h in range(g)]
                one = f.any() & ~Cat(*two).any()
                m.d.comb += Assert(Mux(p < cov[s], one, f == 0))

    def _wellformed(self, m: Module, dr_seq: Signal, owed: Signal) -> None:
        """Properties 2 and 3."""
        st = self.st
        top = 1 << self.p["POS_BITS"]
        for g in range(st.n):
            ok = Mux(st.used[g], (st.start[g] <= st.end[g]) & (st.end[g] <= top), st.seqs[g] == 0)
            m.d.comb += Assert(ok)
        m.d.comb += [Assert(n <= top) for n in st.len]
        ok = (dr_seq < st.s) & (owed <= st.len_of(dr_seq, "fv_len_dr"))
        m.d.comb += Assert((owed == 0) | ok)

    def _witness(self, m: Module, rst: Value, owed: Signal) -> Value:
        """The state of :data:`REACH` ``self.reach`` (its absence is asserted)."""
        st, n = self.st, self.st.n
        full = [st.used[g] & (st.start[g] < st.end[g]) for g in range(n)]
        if self.reach == "two_segments":
            return Cat(
                *[
                    full[g] & full[h] & (st.seqs[g] & st.seqs[h]).any()
                    for g in range(n)
                    for h in range(g)
                ]
            ).any()
        if self.reach == "forked":
            pairs = [(a, b) for a in range(st.s) for b in range(a)]
            return Cat(
                *[full[g] & st.seqs[g][a] & st.seqs[g][b] for g in range(n) for a, b in pairs]
            ).any()
        if self.reach == "killed":
            return Cat(*[full[g] & ~st.seqs[g].any() for g in range(n)]).any()
        if self.reach == "split_share":
            split_d = Signal(name="fv_split_d")
            split_at = Signal.like(st.split_m, name="fv_split_at")
            m.d.sync += [split_d.eq(st.split_en & ~rst), split_at.eq(st.split_m)]
            return ~rst & split_d & st.share_en & (st.share_len == split_at)
        long_drain = Signal(name="fv_long_drain")  # "drained": the drain is of 2+
        with m.If(st.len_add):
            m.d.sync += long_drain.eq(st.len_k >= 2)
        return ~rst & long_drain & st.app_en & st.app_keep_len & (owed == 1)


def run(
    task: str,
    *,
    variant: str = "props",
    reach: str | None = None,
    drop: Iterable[str] = (),
    depth: int | None = None,
    out: Path = OUT,
    **params: int,
) -> Outcome:
    """Run ``task`` (``prove``: k-induction up to ``depth``, default
    :data:`PROVE_DEPTH`; ``bmc``: from reset, default :data:`BMC_DEPTH`) on the
    harness's ``variant`` or a :data:`REACH` witness, without the assumptions of
    ``drop``, at :data:`CONFIG` with ``params`` overriding it. A failure leaves its
    trace in ``out/kvpool_seg_<name>/<task>/trace.vcd``.

    Raises
    ------
    ValueError
        An unknown task, variant, witness or assumption.
    """
    h = SegFormal(variant=variant, reach=reach, drop=drop, **params)
    if depth is None:
        depth = PROVE_DEPTH if task == "prove" else BMC_DEPTH
    size = "_".join(f"{k}{v}" for k, v in sorted(params.items()))
    name = (f"reach_{reach}" if reach else variant) + "".join(f"_no{a}" for a in sorted(drop))
    name += f"_{size}" if size else ""
    return solve(convert(h, h.ports()), out / f"kvpool_seg_{name}", task, depth)


#: a second proved size (5 segments: a segment operand can be out of range; about 30 s)
LARGER = {"SEGS": 5}
#: the checks and the command line (:class:`formal.leaf.LeafChecks`)
LEAF = LeafChecks(
    module="formal.kvpool_seg",
    title="segment chains",
    doc=__doc__,
    config=CONFIG,
    run=run,
    unit="segment table",
    props="properties 1-3",
    negated="position len - 1 claimed uncovered: refuted",
    unprotected="without A3-A10, a failure",
    reach=REACH,
    label="seg:",
    larger=LARGER,
)
#: the checks of :func:`main`: the induction at :data:`CONFIG` and at :data:`LARGER`,
#: the false property, the unprotected run, the witnesses
CHECKS = LEAF.checks
build_parser, parse_args, main = LEAF.build_parser, LEAF.parse_args, LEAF.main

if __name__ == "__main__":
    sys.exit(main())
