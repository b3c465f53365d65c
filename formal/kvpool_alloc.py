"""The page allocator conserves its pages, by k-induction: ``python -m formal.kvpool_alloc``.

SPEC §4.3 (no leak, no page held twice) at the leaf level, assume-guarantee: a
harness around :class:`hw.kvpool.allocator.PageAllocator` (through the probe
:class:`formal.kvpool_probes.Allocator`, which reads its FIFO's words and its
``head`` / ``tail``) at ``PAGES = 16`` (the smallest the leaf takes) with a
*shadow* ``held``: the pages handed out (shown by ``page_valid`` / ``page``
in an earlier cycle) and not pushed back since. Its inputs (``alloc``,
``push``, ``push_page``) and reset are free, except the pool's protocol,
assumed in every cycle without reset:

A1. a push is of a held page (in ``held``, or the page handed out in this
    very cycle): the pool frees only pages it holds, each once.

Properties (asserted every cycle; 5 and 6 are the strengthening invariants
that make 1-4 inductive, each true on its own):

1. no page is handed out twice while held: ``page_valid`` shows no page of
   ``held``;
2. conservation: ``free_pages + |held| + page_valid == PAGES`` (a page
   handed out this cycle counts as held);
3. ``error`` never rises (no push is refused);
4. an allocation is refused (``no_page``) only when every page is held;
5. ``free_pages == level + PAGES - mark``, ``level <= PAGES``, ``mark <=
   PAGES`` and ``tail == (head + level) mod PAGES``;
6. every page ``p < mark`` is in exactly one place, queued in the FIFO (the
   ``level`` words from ``head``), held, or handed out this cycle, and no
   page ``>= mark`` is anywhere; stated as: every queued word is below
   ``mark``, not held and not the page handed out, the queued words are
   distinct, every held page and the page handed out are below ``mark``, and
   ``level + |held| + page_valid == mark``.

The pool's side of the contract (A1) is proved on the whole pool by
:mod:`formal.kvpool_allocproto` (by k-induction, with the ownership of every
on-chip page; decision 0028) for the page allocator; for the HBM-slot
allocator the pool-level BMC of :mod:`formal.kvpool` checks, from reset to
its depth, that its ``error`` stays low and its counts are conserved.
Checks (:data:`CHECKS`): ``prove`` (k-induction up to :data:`PROVE_DEPTH`:
must close), ``negated`` (property 2 with ``PAGES + 1``: must be refuted),
``unprotected`` (properties 1-3 without A1: a BMC must find a failure), and
the witnesses of :data:`REACH` (the BMC's counterexample to the state's
absence, within :data:`BMC_DEPTH` steps: the proof is not vacuous).
Properties 1-4 alone are not inductive (the FIFO's words are free in an
induction step): the harness's variant ``weak`` shows it (``UNKNOWN``). The
counts are balanced adder trees: with a chain of adders the induction took
78 s instead of 26, with property 6 as a count per page 155 s.
"""

import sys
from pathlib import Path

from amaranth import Const, Elaboratable, Module, Mux, ResetSignal, Signal, Value
from amaranth.hdl import Assert, Assume
from amaranth.utils import bits_for

from formal.kvpool_probes import Allocator
from formal.leaf import Harness, LeafChecks, check_run
from formal.sat import (
    Outcome,
    convert,
    solve,
)
from hw.common import sum_tree

__all__ = [
    "AllocFormal",
    "CONFIG",
    "held_shadow",
    "fifo_invariants",
    "run",
    "build_parser",
    "parse_args",
    "main",
]

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "build" / "formal"
#: the proved size (:class:`hw.kvpool.allocator.PageAllocator`'s smallest)
CONFIG = {"PAGES": 16}
PROVE_DEPTH = 4
BMC_DEPTH = 20
#: the harness's variants: properties 1-6; a false one; properties 1-3 without A1;
#: properties 1-4 alone (not inductive without 5 and 6)
VARIANTS = ("props", "negated", "unprotected", "weak")
#: states the assumptions must allow (asserted absent: the counterexample is the witness)
REACH = {
    "reuse": "a page handed out again through the FIFO's memory (pushed back 2+ cycles before)",
    "empty": "an allocation refused: every page held",
}


def _count(bits: Value) -> Value:
    """The set bits of ``bits``: a balanced adder tree (a chain is slower to solve)."""
    return sum_tree([bits[i].as_unsigned() for i in range(len(bits))], bits_for(len(bits)))


class AllocFormal(Harness, Elaboratable):
    """The allocator, the shadow ``held``, assumption A1 and properties 1-6."""

    def __init__(self, *, variant: str = "props", reach: str | None = None) -> None:
        self._MustUse__silence = True  # a refused argument leaves nothing to elaborate
        check_run(variant, reach, VARIANTS, REACH)
        self._MustUse__silence = False
        self.variant, self.reach = variant, reach
        self.dut = Allocator(**CONFIG)
        self.dut._MustUse__silence = True  # elaborated by the harness

    def elaborate(self, platform) -> Module:
        m = Module()
        d = self.dut
        P = d.PAGES
        m.submodules.dut = d.elaborate(platform)
        rst = ResetSignal()
        started = Signal(reset_less=True)
        m.d.sync += started.eq(1)
        with m.If(~started):
            m.d.comb += Assume(rst)
        held, shown = held_shadow(m, d, "fv_held")  # reset with the allocator
        ever = Signal(P, name="fv_ever")  # pushed back at least once
        ever_d = Signal(P, name="fv_ever_d")  # ... before the last cycle
        pushed = Mux(d.push, Const(1, P) << d.push_page, 0)[:P]
        m.d.sync += [ever.eq(ever | pushed), ever_d.eq(ever)]
        if self.variant != "unprotected":
            with m.If(~rst):
                m.d.comb += Assume(~d.push | (held | shown).bit_select(d.push_page, 1))
        total = d.free_pages + _count(held) + d.page_valid
        with m.If(started):
            if self.reach == "reuse":
                m.d.comb += Assert(~(d.page_valid & ever_d.bit_select(d.page, 1)))
            elif self.reach == "empty":
                m.d.comb += Assert(~d.no_page)
            elif self.variant == "negated":
                m.d.comb += Assert(total == P + 1)
            else:
                m.d.comb += [
                    Assert(~(d.page_valid & held.bit_select(d.page, 1))),
                    Assert(total == P),
                    Assert(~d.error),
                ]
                if self.variant != "unprotected":
                    m.d.comb += Assert(~d.no_page | held.all())
                if self.variant == "props":
                    self._fifo(m, held)
        return m

    def _fifo(self, m: Module, held: Signal) -> None:
        """Properties 5 and 6 over the FIFO's words and pointers."""
        fifo_invariants(m, self.dut, held)


def held_shadow(m: Module, al: object, name: str) -> tuple[Signal, Value]:
    """``(held, shown)`` of an allocator ``al`` (any with ``page_valid`` / ``page`` and
    ``push`` / ``push_page``): ``held`` (a register, reset with the design, named
    ``name``) the pages handed out in cycles before and not pushed back since,
    ``shown`` the page handed out this cycle, as ``PAGES`` bits. Shared by the
    harnesses that state the allocator's protocol (A1: a push is of a page in
    ``held | shown``)."""
    P = al.PAGES
    held = Signal(P, name=name)
    shown = Mux(al.page_valid, Const(1, P) << al.page, 0)[:P]
    pushed = Mux(al.push, Const(1, P) << al.push_page, 0)[:P]
    m.d.sync += held.eq((held | shown) & ~pushed)
    return held, shown


def fifo_invariants(m: Module, d: Allocator, held: Value, stmt: type = Assert) -> None:
    """Properties 5 and 6 of a probed allocator ``d`` as assertions in ``m`` (``stmt``
    :class:`~amaranth.hdl.Assume` where another proof has proved them): ``held``
    (``PAGES`` bits) is the set of pages handed out in cycles before and not pushed
    back since (the page shown this cycle apart). :mod:`formal.kvpool_bt` states
    them of the block table's node allocators."""
    P = d.PAGES
    m.d.comb += [
        stmt(d.free_pages == d.level + P - d.mark),
        stmt(d.level <= P),
        stmt(d.mark <= P),
        stmt(d.tail == (d.head + d.level)[: len(d.tail)]),
    ]
    pb = len(d.head)
    queued = [(j - d.head)[:pb] < d.level for j in range(P)]
    w = d.words
    for j in range(P):
        with m.If(queued[j]):
            m.d.comb += [
                stmt(w[j] < d.mark),
                stmt(~held.bit_select(w[j], 1)),
                stmt(~(d.page_valid & (d.page == w[j]))),
            ]
        for i in range(j):
            m.d.comb += stmt(~(queued[i] & queued[j] & (w[i] == w[j])))
    for q in range(P):
        m.d.comb += stmt(~held[q] | (d.mark > q))
    m.d.comb += [
        stmt(~d.page_valid | (d.page < d.mark)),
        stmt(d.level + _count(held) + d.page_valid == d.mark),
    ]


def run(
    task: str,
    *,
    variant: str = "props",
    reach: str | None = None,
    depth: int | None = None,
    out: Path = OUT,
) -> Outcome:
    """Run ``task`` (``prove``: k-induction up to ``depth``, default
    :data:`PROVE_DEPTH`; ``bmc``: from reset, default :data:`BMC_DEPTH`) on the
    harness's ``variant`` or a :data:`REACH` witness. A failure leaves its trace
    in ``out/kvpool_alloc_<name>/<task>/trace.vcd``.

    Raises
    ------
    ValueError
        An unknown task, variant or witness.
    """
    h = AllocFormal(variant=variant, reach=reach)
    if depth is None:
        depth = PROVE_DEPTH if task == "prove" else BMC_DEPTH
    name = f"reach_{reach}" if reach else variant
    return solve(convert(h, h.ports()), out / f"kvpool_alloc_{name}", task, depth)


#: the checks and the command line (:class:`formal.leaf.LeafChecks`)
LEAF = LeafChecks(
    module="formal.kvpool_alloc",
    title="page allocator conservation",
    doc=__doc__,
    config=CONFIG,
    run=run,
    unit="allocator",
    props="properties 1-6",
    negated="free + held == PAGES + 1 refuted",
    unprotected="without A1, a failure",
    reach=REACH,
    label="alloc:",
)
#: the checks of :func:`main`: the induction, the false property, the unprotected
#: run, the witnesses
CHECKS = LEAF.checks
build_parser, parse_args, main = LEAF.build_parser, LEAF.parse_args, LEAF.main

if __name__ == "__main__":
    sys.exit(main())
