"""The pool keeps the TLB's protocol, by k-induction: ``python -m formal.kvpool_tlbproto``.

The pool's side of :mod:`formal.kvpool_tlb`'s contract (its A1 and A2),
closed at the pool level: the harness of :mod:`formal.kvpool_proto` (the
whole :class:`hw.kvpool.ScaledPool` at :data:`formal.kvpool.CONFIG`, every
input free, the operation FSM's registers from its ``state``, the lookup
ports' stage registers from ``lookups``) with a *shadow page table* besides
the block tables' shadow lengths: per block table and index, the ``loc`` /
``addr`` of the last APPEND or WRITE taken there. From it and the segment
table, the *key map*: what a TLB key ``(g, pos)`` maps to.

* ``(g, pos)`` is *mapped* when segment ``g`` is used and *live* (seen by a
  sequence, or dead by a release but not yet killed in the TLBs: in the cut
  job's chain and not yet passed by its ``_KILL`` walk, or the kill that walk
  registered last), holds ``pos`` (``start <= pos < end``), and ``pos -
  base`` is below its table's shadow length;
* it then maps to the shadow PTE of ``g``'s table at ``pos - base``.

Properties (asserted every cycle out of reset; K1 and K2 for each of the two
TLBs, B2 for each lookup port):

K1. a key mapped in one cycle maps to the same ``loc`` / ``addr`` in the
    next, unless in that cycle the TLB was told to invalidate that key
    (``inv_valid``, ``inv == (g, pos)``: a spill's or a fill's PTE write) or
    to kill its segment (``kill_valid``, ``kill_seg == g``: the cut job
    passing a dead segment, a share splitting one). A key may become mapped
    in any cycle (an insert, a commit, a split's upper part);
K2. a fill (a walk's, ``fill_valid``) is of a mapped key and carries its
    ``loc`` / ``addr``;
B2. a committed lookup issues, with its TLB lookup, a block-table read that
    the block table answers (:mod:`formal.kvpool_bt`'s property 2: an index
    below its table's length, not stage A's nor a WRITE's in progress) of
    the PTE its key maps to.

K1 is the TLB's A1 at the key (stronger: the invalidated key itself, not
only its set), K2 its A2. So the TLB's leaf proof (a hit replies the shadow
page table's mapping of its key) holds against the pool's key map: *a TLB
entry never maps a key differently from the page table*, from the leaf proofs
and this one, by induction; B2 is the lookups' side of the block table's
contract (B1 is its commands').

Assumed: what :mod:`formal.kvpool_proto` assumes (C1, T1, T2, V1), and what
the block table's leaf proof guarantees under B1 (asserted here too):

G2. its property 2 on ``loc`` and ``addr``: a read it answers replies three
    cycles later the shadow's PTE as of the read; and of its property 9, that
    a WRITE taken and not yet written is being walked (``running``, not a
    CUT).

Asserted with the properties: B1 and :mod:`formal.kvpool_proto_inv`'s
strengthening invariants, and the ones these properties add
(:meth:`TLBProtocolFormal._key_invariants`,
:meth:`TLBProtocolFormal._lookup_invariants`): the cut job's registered kill
is of a dead segment of its chain that its walk just passed; a spill's victim
segment (``vg``) and a fill's segment (``g``) hold the PTE they rewrite; a
WRITE's walk runs only past ``ACT``, never during a cut; a committed lookup in
flight is at one stage, its key and read tracked, its key still mapped as at
its read's issue, while the FSM waits (``IDLE``, ``CHECK``, ``RESULT`` or a
fast insert's tag reads) and no kill is registered.

Checks (:data:`CHECKS`): ``prove`` (k-induction up to :data:`PROVE_DEPTH`:
must close), ``negated`` (K2 with a fill's ``addr`` XOR 1: a BMC must refute
it), ``weak`` (K1, K2, B1 and B2 without the
strengthening invariants: the induction must stop ``UNKNOWN``), and the
witnesses of :data:`REACH` within :data:`formal.kvpool_proto.BMC_DEPTH`
steps. A fill's and a share split's changes of a mapped key are proved but
not witnessed: a fill needs a spilled page and a split a 16-token block, both
deeper than the solver reaches from reset at this size (the BMC runs out of
memory at step 22); the pool's testbench runs both. Measured in
``build/reports/formal_kvpool.json`` (rows ``tlbproto:``).
"""

import sys

from amaranth import Array, Cat, Const, Module, Signal, Value
from amaranth.hdl import Assume

from formal.kvpool import CONFIG
from formal.kvpool_bt import write_pending
from formal.kvpool_proto import PoolProtocolFormal, harness_run, weak_check
from formal.kvpool_proto_inv import FILLING, SPILLING, TAGGING
from formal.leaf import LeafChecks
from hw.kvpool.blocktable import BtCmd
from hw.kvpool.layouts import PoolCode, PoolOp
from hw.kvpool.pool_release import _KILL
from hw.kvpool.pool_spill import RET_FILL

__all__ = ["TLBProtocolFormal", "CONFIG", "run", "build_parser", "parse_args", "main"]

PROVE_DEPTH = 2
#: K1, K2, B1, B2 with the invariants; K2 of a fill's addr XOR 1; the four alone
VARIANTS = ("props", "negated", "weak")
#: states the assumptions must allow (asserted absent: the counterexample is the witness)
REACH = {
    "walk": "a committed lookup's miss walked and filled into the TLB",
    "kill": "a released segment's keys unmapped by the cut job's kill",
    "spill": "a mapped key's PTE rewritten by a spill's WRITE (its key invalidated)",
}


class TLBProtocolFormal(PoolProtocolFormal):
    """The pool, the shadow page table, the key map, the lookups' trackers, K1, K2, B1
    and B2, the assumptions of :class:`formal.kvpool_proto.PoolProtocolFormal` and G2,
    and the invariants (its own and the proto's).

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
        self._ptes(m)
        self._keys(m)
        self._reads(m)
        self._lookups(m)

    def _assumptions(self, m: Module) -> None:
        super()._assumptions(m)
        self._read_contract(m)

    def _ptes(self, m: Module) -> None:
        """``ptes``: per table and index, ``Cat(loc, addr)`` of the last APPEND or WRITE
        taken there."""
        bt = self.dut.u.bt
        c = bt.cmd.payload
        w = 1 + len(c.pte.addr)
        n = 1 << len(c.i)
        self.ptes = Array(
            Signal(w, name=f"fv_pte{t}_{i}") for t in range(bt.TABLES) for i in range(n)
        )
        kind = c.kind.as_value()
        put = (kind == BtCmd.APPEND.value) | (kind == BtCmd.WRITE.value)
        with m.If(self.take & put):
            m.d.sync += self.ptes[Cat(c.i, c.t[: max(1, (bt.TABLES - 1).bit_length())])].eq(
                Cat(c.pte.loc, c.pte.addr)
            )

    def _pte(self, t: Value, i: Value) -> Value:
        """The shadow's ``Cat(loc, addr)`` of ``(t, i)``."""
        tb = max(1, (self.dut.u.bt.TABLES - 1).bit_length())
        return self.ptes[Cat(i[: self.dut.POS_BITS], t[:tb])]

    def _key_of(self, key: Value) -> tuple[Value, Value]:
        """The key map at a TLB key's bits (``hw.kvpool.tlb.key_layout``: ``seg`` then
        ``pos``); a segment id beyond ``SEGS`` is unmapped."""
        sb = len(self.dut.u.tlbs[0].lk.seg)
        seg, pos = key[:sb], key[sb:]
        flat = [kv for row in self.key for kv in row]  # index Cat(pos, seg)
        ok = seg < len(self.key) if len(self.key) < (1 << sb) else Const(1)
        at = Cat(pos, seg)
        return ok & Array(mp for mp, _ in flat)[at], Array(v for _, v in flat)[at]

    def _reads(self, m: Module) -> None:
        """Per block-table read port, the reads issued 1 - 3 cycles ago (``rtrack[k]``:
        ``(ok, exp)``, index 0 this cycle's): ``ok`` a read that property 2 of
        :mod:`formal.kvpool_bt` answers (an index below its table's shadow length, not
        stage A's nor a WRITE's in progress), ``exp`` the shadow's ``Cat(loc, addr)``
        of it as of its issue."""
        bt = self.dut.u.bt
        a, w = bt.state.a, bt.state.w
        kind = bt.cmd.payload.kind.as_value()
        self.writing = write_pending(m, bt, self.take & (kind == BtCmd.WRITE.value))
        wp, wi = self.writing
        self.rtrack = []
        for k in range(bt.PORTS):
            rd = getattr(bt, f"rd{k}")
            t, i = rd.payload.t, rd.payload.i
            ok0 = (
                rd.valid
                & (t < bt.TABLES)
                & (i < self.lens[t])
                & ~(a.v & (a.t == t) & (a.i == i))
                & ~(wp & (w.t == t) & (wi == i))
            )
            exp0 = self._pte(t, i)
            ok = [ok0] + [Signal(name=f"fv_rd{k}_ok{s}") for s in (1, 2, 3)]
            exp = [exp0] + [Signal(len(exp0), name=f"fv_rd{k}_exp{s}") for s in (1, 2, 3)]
            for s in (1, 2, 3):
                m.d.sync += [ok[s].eq(ok[s - 1]), exp[s].eq(exp[s - 1])]
            self.rtrack.append((ok, exp))

    def _lookups(self, m: Module) -> None:
        """Per TLB, the committed lookups issued 0 - 3 cycles ago (``ltrack[k]``:
        ``(valid, key)``)."""
        self.ltrack = []
        for k, tlb in enumerate(self.dut.u.tlbs):
            key0 = tlb.lk.as_value()
            v = [tlb.lk_valid] + [Signal(name=f"fv_lk{k}_v{s}") for s in (1, 2, 3)]
            key = [key0] + [Signal(len(key0), name=f"fv_lk{k}_key{s}") for s in (1, 2, 3)]
            for s in (1, 2, 3):
                m.d.sync += [v[s].eq(v[s - 1]), key[s].eq(key[s - 1])]
            self.ltrack.append((v, key))

    def _read_contract(self, m: Module) -> None:
        """G2: the block table's property 2 (:mod:`formal.kvpool_bt`), on ``loc`` and
        ``addr``: a read it answers replies, three cycles on, the shadow's PTE as of
        the read."""
        bt = self.dut.u.bt
        w = bt.state.w
        # and its property 9 (``w_idle``, ``w_cut``): a WRITE pending is being walked
        m.d.comb += Assume(~self.writing[0] | (w.running & ~w.is_cut))
        for k, (ok, exp) in enumerate(self.rtrack):
            rsp = getattr(bt, f"rd{k}_rsp")
            got = Cat(rsp.payload.loc, rsp.payload.addr)
            m.d.comb += Assume(~ok[3] | (rsp.valid & (got == exp[3])))

    def _live(self, g: int) -> Value:
        """Segment ``g`` is used and live: seen by a sequence, or dead and still to be
        killed in the TLBs by the cut job."""
        u, cut = self.dut.u, self.dut.state.cut
        seg = u.seg
        ahead = (cut.state == _KILL) & (cut.cur <= seg.start[g])
        pending = u.cutting & cut.chain[g] & (ahead | (cut.kv & (cut.kg == g)))
        return seg.used[g] & (seg.seqs[g].any() | pending)

    def _keys(self, m: Module) -> None:
        """``key[g][p]``: ``(mapped, Cat(loc, addr))`` of the key map now; ``was``: the
        same, registered (reset: unmapped)."""
        seg = self.dut.u.seg
        pb = self.dut.POS_BITS
        tb = max(1, (seg.n - 1).bit_length())
        self.key, self.was = [], []
        for g in range(seg.n):
            live = self._live(g)
            t = seg.tab[g]
            row, prow = [], []
            for p in range(1 << pb):
                i = (Const(p, pb + 1) - seg.sbase[g])[: pb + 1]
                held = (seg.start[g] <= p) & (p < seg.end[g])
                mapped = Signal(name=f"fv_key{g}_{p}")
                value = Signal(len(self.ptes[0]), name=f"fv_keyv{g}_{p}")
                m.d.comb += [
                    mapped.eq(live & held & (i < self.lens[t])),
                    value.eq(self.ptes[Cat(i[:pb], t[:tb])]),
                ]
                was_m = Signal(name=f"fv_was{g}_{p}")
                was_v = Signal.like(value, name=f"fv_wasv{g}_{p}")
                m.d.sync += [was_m.eq(mapped), was_v.eq(value)]
                row.append((mapped, value))
                prow.append((was_m, was_v))
            self.key.append(row)
            self.was.append(prow)
        # what each TLB was told in the previous cycle
        self.told = []
        for k, tlb in enumerate(self.dut.u.tlbs):
            regs = (
                Signal(name=f"fv_inv{k}"),
                Signal.like(tlb.inv.seg, name=f"fv_inv{k}_seg"),
                Signal.like(tlb.inv.pos, name=f"fv_inv{k}_pos"),
                Signal(name=f"fv_kill{k}"),
                Signal.like(tlb.kill_seg, name=f"fv_kill{k}_seg"),
            )
            now = (tlb.inv_valid, tlb.inv.seg, tlb.inv.pos, tlb.kill_valid, tlb.kill_seg)
            m.d.sync += [r.eq(v) for r, v in zip(regs, now, strict=True)]
            self.told.append(regs)

    # ------------------------------------------------------------------ properties
    def _properties(self, m: Module) -> None:
        if self.variant == "negated":
            self._k2(m)
            return
        self._k1(m)
        self._k2(m)
        self._b1(m)
        if self.variant == "props":
            self._invariants(m)
            self._key_invariants(m)
            self._lookup_invariants(m)

    def _k2(self, m: Module) -> None:
        """K2 and B2 (``negated``: K2 of a fill's ``addr`` XOR 1, alone)."""
        for k, tlb in enumerate(self.dut.u.tlbs):
            f = tlb.fill
            mapped, value = self._key_of(Cat(f.seg, f.pos))
            if self.variant == "negated":
                self._chk(m, f"k2_lie{k}", tlb.fill_valid, [value == Cat(f.loc, f.addr ^ 1)])
                continue
            self._chk(m, f"k2_{k}", tlb.fill_valid, [mapped, value == Cat(f.loc, f.addr)])
            (ok, exp), (v, key) = self.rtrack[k], self.ltrack[k]
            mapped, value = self._key_of(key[0])
            self._chk(m, f"b2_{k}", v[0], [ok[0], mapped, value == exp[0]])

    def _lookup_invariants(self, m: Module) -> None:
        """A committed lookup in flight: its key at each stage, still mapped as it was
        when its read was issued; nothing that changes a key runs meanwhile."""
        f = self.dut.state
        cut = f.cut
        w = self.dut.u.bt.state.w
        # a WRITE's walk belongs to the operation that issued it (past ACT; not during a cut)
        busy = ~self.at("IDLE", "CHECK", "ACT") & ~self.dut.u.cutting
        self._chk(m, "w_write", w.running & ~w.is_cut, [busy])
        for k, lp in enumerate(self.dut.lookups):
            (ok, exp), (v, key) = self.rtrack[k], self.ltrack[k]
            stages = (
                (1, lp.s1 & (lp.s1_kind == 1), Value.cast(lp.s1_key)),
                (2, lp.w2, Value.cast(lp.w_key)),
                (3, lp.w3, Value.cast(lp.w_key)),
            )
            for s, here, kk in stages:
                mapped, value = self._key_of(kk)
                self._chk(
                    m, f"lk{k}_s{s}", here, [v[s], kk == key[s], ok[s], mapped, value == exp[s]]
                )
            flight = lp.s1 | lp.w2 | lp.w3
            one = (lp.s1 & lp.w2) | (lp.s1 & lp.w3) | (lp.w2 & lp.w3)
            self._chk(m, f"lk{k}_one", 1, [~one, ~v[1] | (lp.s1 & (lp.s1_kind == 1))])
            # the FSM waits in CHECK for the lookups; a fast insert's block tag reads
            quiet = self.at("IDLE", "CHECK", "RESULT") | (self.at(*TAGGING) & ~f.tret)
            self._chk(m, f"lk{k}_quiet", flight, [~cut.kv, quiet])

    def _k1(self, m: Module) -> None:
        """K1."""
        for k, (inv, iseg, ipos, kill, kseg) in enumerate(self.told):
            for g, row in enumerate(self.key):
                for p, (mapped, value) in enumerate(row):
                    was_m, was_v = self.was[g][p]
                    changed = was_m & ((mapped != was_m) | (value != was_v))
                    excuse = (inv & (iseg == g) & (ipos == p)) | (kill & (kseg == g))
                    self._chk(m, f"k1_{k}_{g}_{p}", changed, [excuse])

    def _key_invariants(self, m: Module) -> None:
        """What K1 adds to :mod:`formal.kvpool_proto_inv`'s invariants."""
        u, f, o = self.dut.u, self.dut.state, self.dut.state.r.o
        seg, cut = u.seg, f.cut
        n = seg.n
        kg = cut.kg
        self._chk(
            m,
            "kv",
            cut.kv,
            [
                u.cutting,
                cut.state == _KILL,
                kg < n,
                cut.chain.bit_select(kg, 1),
                seg.used.bit_select(kg, 1),
                ~Array(seg.seqs)[kg].any(),
                Array(seg.end)[kg] == cut.cur,
            ],
        )
        # a spill's victim: its segment (registered through SP_RD) holds its PTE
        self._chk(
            m,
            "vi",
            self.at("SP_RD", "SP_RDW", "SP_SLOT", "SP_WR"),
            [Array(seg.tbase)[f.vtab] + f.vi == f.vpos],
        )
        self._holds(m, "vg", self.at("SP_RDW", "SP_SLOT", "SP_WR"), f.vg, f.vtab, f.vpos)
        # a fill's segment holds the PTE it rewrites
        fill = self.at(*FILLING) | (self.at(*SPILLING) & (f.ret == RET_FILL))
        act = self.at("ACT") & (f.code == PoolCode.NONE)
        fill = (fill | act) & (o.op == PoolOp.FILL)
        self._holds(m, "fill_g", fill, f.g, f.t, o.pos)
        self._chk(m, "fill_i", fill, [Array(seg.sbase)[f.g] + f.i == o.pos])

    def _holds(self, m: Module, label: str, guard: Value, g: Value, t: Value, pos: Value) -> None:
        """Segment ``g`` is used, of table ``t``, and holds ``pos``."""
        seg = self.dut.u.seg
        self._chk(
            m,
            label,
            guard,
            [
                g < seg.n,
                seg.used.bit_select(g, 1),
                Array(seg.tab)[g] == t,
                Array(seg.start)[g] <= pos,
                pos < Array(seg.end)[g],
            ],
        )

    def _reached(self, m: Module, what: str) -> Value:
        """The state :data:`REACH` names: a walk's fill, or a mapped key changed with the
        excuse named (the cut job's kill, a spill's WRITE: registered with what the TLB
        was told)."""
        if what == "walk":
            return self.dut.u.tlbs[0].fill_valid
        changed = Cat(
            *[
                was_m & ((mapped != was_m) | (value != was_v))
                for row, prow in zip(self.key, self.was, strict=True)
                for (mapped, value), (was_m, was_v) in zip(row, prow, strict=True)
            ]
        ).any()
        inv, _iseg, _ipos, kill, _kseg = self.told[0]
        by = Signal(name="fv_by")  # the excuse's source, in the previous cycle
        if what == "kill":
            m.d.sync += by.eq(self.dut.state.cut.kv)
            return changed & kill & by
        m.d.sync += by.eq(self.at("SP_WR"))  # "spill"
        return changed & inv & by


#: the harness's runs (:func:`formal.kvpool_proto.harness_run`)
run = harness_run(TLBProtocolFormal, "kvpool_tlbproto", PROVE_DEPTH)


#: the ``weak`` check (:func:`formal.kvpool_proto.weak_check`)
_weak = weak_check(run, "K1, K2, B1, B2")


#: the checks and the command line (:class:`formal.leaf.LeafChecks`)
LEAF = LeafChecks(
    module="formal.kvpool_tlbproto",
    title="the pool keeps the TLB's protocol",
    doc=__doc__,
    config=CONFIG,
    run=run,
    unit="pool",
    props="K1, K2 (the TLB's A1, A2), B1, B2 (under C1, T1, T2, V1, G2)",
    negated="K2 of a fill's addr XOR 1 refuted",
    unprotected=None,
    reach=REACH,
    label="tlbproto:",
    extra={"weak": _weak},
)
#: the checks of :func:`main`
CHECKS = LEAF.checks
build_parser, parse_args, main = LEAF.build_parser, LEAF.parse_args, LEAF.main

if __name__ == "__main__":
    sys.exit(main())
