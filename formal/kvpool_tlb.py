"""The TLB never maps a key differently from the page table, by k-induction: ``formal.kvpool_tlb``.

SPEC §4.3 (*a TLB entry never maps a key differently from the page table*) at
the leaf level, assume-guarantee: a harness around one
:class:`hw.kvpool.tlb.TLB` (through the probe :class:`formal.kvpool_probes.TLB`,
which reads its ``valid`` / generation flip-flops and its memory words) at a
small size (:data:`CONFIG`: 2 sets x 2 ways, 4 segment ids, 2 position bits,
2 address bits, 2-bit generations, so that a segment's fourth kill wraps its
generation and flushes inside the proof) with a *shadow page table*: per key
``(segment, pos)`` (16 keys) a register ``(mapped, loc, addr)``, whose next
value is a free input. Every TLB input and reset are free too, except the
pool's protocol, stated as assumptions in every cycle without reset (in a
reset cycle anything goes: the TLB's flip-flops are cleared):

A1. a mapped key's shadow entry changes (another ``loc`` / ``addr``, or
    unmapped) only in a cycle that invalidates the key's set (``inv_valid``
    with ``set_index(inv) == set_index(key)``: the pool's spill or fill of
    that position) or kills the key's segment (``kill_valid``, ``kill_seg``:
    the segment's death or split); an unmapped key may become mapped in any
    cycle (an insert);
A2. a fill is of a mapped key and carries the shadow's current ``loc`` /
    ``addr`` of it (the pool fills from the block-table walk issued with
    the lookup, with operations held until the fill: its PTE is current).

Properties (asserted every cycle; 2 and 3 are the strengthening invariants
that make 1 inductive, each true on its own):

1. a lookup answered by a hit replies exactly the shadow's mapping of its key
   as of its issue cycle (mapped, same ``loc`` and ``addr``), and as of its
   reply cycle: *a TLB entry never maps a key differently from the page table*;
2. every live entry (``valid`` flop set, its word's generation its segment's
   current one) is in its key's set, and its key is mapped in the shadow to
   the entry's ``loc`` / ``addr``;
3. every valid entry's generation is at most its segment's current one (none
   ahead: the kill that wraps a generation flushes, so an old entry never
   becomes live again).

The pool's side of the contract (A1, A2) is proved on the whole pool by
:mod:`formal.kvpool_tlbproto` (k-induction, decision 0027), against the
pool's *key map* (a key's segment and position through the segment table to
the block table's PTE): the pool invalidates a key in both TLBs in the cycle
it issues that position's PTE write (a spill, a fill), kills a segment in the
cycle it is split and, after a release, before its table is cut, and holds the
operations that do either while a lookup is in flight (its K1); a walk's fill
carries the PTE its key maps to (K2). The pool-level BMC of
:mod:`formal.kvpool` checks the consequence from reset, to its depth (its
properties 4 and 5: every live TLB entry, and every hit, against the block
table).

Checks (:data:`CHECKS`): ``prove`` (k-induction up to :data:`PROVE_DEPTH` at
:data:`CONFIG`: must close), ``prove:larger`` (the same at :data:`LARGER`: 4
sets, 8 positions, 32 keys), ``negated`` (property 1 with the shadow's
``addr`` XOR 1: must be refuted), ``unprotected`` (property 1 alone, A1
dropped: a BMC must find a wrong hit, so the proof rests on the protocol),
and the witnesses of :data:`REACH` (the state's absence asserted: the BMC's
counterexample shows that the assumptions allow it within :data:`BMC_DEPTH`
steps, so the proof is not vacuous). Property 1 alone is not inductive (an
unreachable entry of a generation ahead of its segment's becomes live after
kills): the harness's variant ``only1`` shows it (``UNKNOWN``).
"""

import sys
from pathlib import Path

from amaranth import Cat, Const, Elaboratable, Module, ResetSignal, Signal
from amaranth.hdl import Assert, Assume
from amaranth.lib import data

from formal.kvpool_probes import TLB
from formal.leaf import LeafChecks, check_run
from formal.sat import (
    Outcome,
    convert,
    free_inputs,
    solve,
)
from hw.common import idx_bits
from hw.kvpool.tlb import entry_layout, set_index

__all__ = ["TLBFormal", "CONFIG", "run", "build_parser", "parse_args", "main"]

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "build" / "formal"
#: the proved size (:class:`hw.kvpool.tlb.TLB` parameters)
CONFIG = {"SETS": 2, "WAYS": 2, "SEGS": 4, "POS_BITS": 2, "ADDR_BITS": 2, "GEN_BITS": 2}
PROVE_DEPTH = 4
BMC_DEPTH = 12
#: the harness's variants: properties 1-3; a false one; property 1 without A1;
#: property 1 alone (not inductive without 2 and 3)
VARIANTS = ("props", "negated", "unprotected", "only1")
#: states the assumptions must allow (asserted absent: the counterexample is the witness)
REACH = {
    "hit": "a lookup answered by a hit",
    "flush_hit": "a hit after a generation wrapped (a flush)",
}


class TLBFormal(Elaboratable):
    """The TLB, the shadow page table, assumptions A1-A2 and properties 1-3."""

    def __init__(self, *, variant: str = "props", reach: str | None = None, **params: int) -> None:
        self._MustUse__silence = True  # a refused argument leaves nothing to elaborate
        check_run(variant, reach, VARIANTS, REACH)
        self._MustUse__silence = False
        self.variant, self.reach = variant, reach
        self.dut = TLB(**{**CONFIG, **params})
        self.dut._MustUse__silence = True  # elaborated by the harness
        d = self.dut
        self.kb = idx_bits(d.SEGS) + d.POS_BITS  # a key's bits: Cat(pos, seg)
        self.vb = 2 + d.ADDR_BITS  # a shadow entry: Cat(mapped, loc, addr)
        #: the shadow's next value (free: the assumptions constrain it)
        self.sh_next = Signal((1 << self.kb) * self.vb, name="sh_next")

    def ports(self) -> list[Signal]:
        """The TLB's inputs and the shadow's next value (free for the solver)."""
        return [*free_inputs(self.dut), self.sh_next]

    def _entry(self, sh: Signal, seg, pos):
        """The shadow entry of ``(seg, pos)``: ``(mapped, Cat(loc, addr))``."""
        v = sh.word_select(Cat(pos, seg), self.vb)
        return v[0], v[1:]

    def elaborate(self, platform) -> Module:
        m = Module()
        d = self.dut
        m.submodules.dut = d.elaborate(platform)
        rst = ResetSignal()
        started = Signal(reset_less=True)
        m.d.sync += started.eq(1)
        with m.If(~started):
            m.d.comb += Assume(rst)
        sh = Signal.like(self.sh_next, name="sh", reset_less=True)
        m.d.sync += sh.eq(self.sh_next)
        self._protocol(m, sh, rst)
        hit = d.rsp_valid & d.rsp.hit
        rsp = Cat(d.rsp.loc, d.rsp.addr)
        # property 1: the shadow of the key as of the issue cycle, and now
        key = Signal(self.kb, name="fv_key")
        then = Signal(self.vb, name="fv_sh_then")
        lk = Cat(d.lk.pos, d.lk.seg)
        m.d.sync += [key.eq(lk), then.eq(sh.word_select(lk, self.vb))]
        now = sh.word_select(key, self.vb)
        flushed = Signal(name="fv_flushed")  # a generation wrapped since reset
        gens = Cat(*d.st.gen)
        with m.If(d.kill_valid & gens.word_select(d.kill_seg, d.GEN_BITS).all()):
            m.d.sync += flushed.eq(1)
        with m.If(started):
            if self.reach == "hit":
                m.d.comb += Assert(~hit)
            elif self.reach == "flush_hit":
                m.d.comb += Assert(~(hit & flushed))
            elif self.variant == "negated":
                m.d.comb += Assert(~hit | (rsp == (then[1:] ^ (1 << 1))))
            else:
                with m.If(hit):
                    m.d.comb += [
                        Assert(then[0] & (then[1:] == rsp)),
                        Assert(now[0] & (now[1:] == rsp)),
                    ]
                if self.variant == "props":
                    self._entries(m, sh, gens)
        return m

    def _protocol(self, m: Module, sh: Signal, rst) -> None:
        """Assumptions A1 (unless ``unprotected``) and A2, in cycles without reset."""
        d = self.dut
        sets, pb, gb = d.SETS, d.POS_BITS, idx_bits(d.SEGS)
        inv_set = set_index(d.inv.seg, d.inv.pos, sets)
        f_mapped, f_val = self._entry(sh, d.fill.seg, d.fill.pos)
        with m.If(~rst):
            with m.If(d.fill_valid):
                m.d.comb += Assume(f_mapped & (f_val == Cat(d.fill.loc, d.fill.addr)))
            if self.variant == "unprotected":
                return
            for k in range(1 << self.kb):
                pos, seg = k & ((1 << pb) - 1), k >> pb
                old = sh.word_select(k, self.vb)
                new = self.sh_next.word_select(k, self.vb)
                inv = d.inv_valid & (inv_set == set_index(Const(seg, gb), Const(pos, pb), sets))
                kill = d.kill_valid & (d.kill_seg == seg)
                with m.If(old[0] & (new != old)):
                    m.d.comb += Assume(inv | kill)

    def _entries(self, m: Module, sh: Signal, gens) -> None:
        """Properties 2 and 3 over every way's flip-flops and memory word."""
        d = self.dut
        layout = entry_layout(d.SEGS, d.POS_BITS, d.GEN_BITS, d.ADDR_BITS)
        ew = layout.size
        for s in range(d.SETS):
            for w in range(d.WAYS):
                e = data.View(layout, d.words[s][w * ew : (w + 1) * ew])
                cur = gens.word_select(e.seg, d.GEN_BITS)
                valid = d.st.valid[s][w]
                mapped, val = self._entry(sh, e.seg, e.pos)
                with m.If(valid):
                    m.d.comb += Assert(e.gen <= cur)
                with m.If(valid & (e.gen == cur)):
                    m.d.comb += [
                        Assert(set_index(e.seg, e.pos, d.SETS) == s),
                        Assert(mapped & (val == Cat(e.loc, e.addr))),
                    ]


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
    ``out/kvpool_tlb_<name>/<task>/trace.vcd``.

    Raises
    ------
    ValueError
        An unknown task, variant or witness.
    """
    h = TLBFormal(variant=variant, reach=reach, **params)
    if depth is None:
        depth = PROVE_DEPTH if task == "prove" else BMC_DEPTH
    size = "_".join(f"{k}{v}" for k, v in sorted(params.items()))
    name = (f"reach_{reach}" if reach else variant) + (f"_{size}" if size else "")
    return solve(convert(h, h.ports()), out / f"kvpool_tlb_{name}", task, depth)


#: a second proved size (4 sets, 32 keys; about 20 s)
LARGER = {"SETS": 4, "POS_BITS": 3, "ADDR_BITS": 3}
#: the checks and the command line (:class:`formal.leaf.LeafChecks`)
LEAF = LeafChecks(
    module="formal.kvpool_tlb",
    title="TLB coherence",
    doc=__doc__,
    config=CONFIG,
    run=run,
    unit="TLB",
    props="properties 1-3",
    negated="a hit replying the shadow's addr XOR 1 found",
    unprotected="without A1, a wrong hit",
    reach=REACH,
    label="tlb:",
    larger=LARGER,
)
#: the checks of :func:`main`: the induction at :data:`CONFIG` and at :data:`LARGER`,
#: the false property, the unprotected run, the witnesses
CHECKS = LEAF.checks
build_parser, parse_args, main = LEAF.build_parser, LEAF.parse_args, LEAF.main

if __name__ == "__main__":
    sys.exit(main())
