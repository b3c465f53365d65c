"""The block table is the page table, by k-induction: ``python -m formal.kvpool_bt``.

SPEC §4.3 (no leak, no page table entry lost or aliased) at the leaf level,
assume-guarantee: a harness around :class:`hw.kvpool.blocktable.BlockTable`
(through the probe :class:`formal.kvpool_probes.ProbedBlockTable`: its
pipeline registers from ``state``, its memories' words by asynchronous reads,
its node allocators' FIFOs) at a small size (:data:`CONFIG`: 2 tables of 16
indices, 16 leaf and 16 mid nodes, one lookup port, 3-bit PTEs) with a
*shadow page table*: per table its length and its PTEs, written by the
commands as they are taken (an APPEND's and a WRITE's PTE, a CUT's length;
a CUT leaves the PTEs above the new length in the shadow, as the streamed
values), and the *held* nodes of each allocator (handed out in an earlier
cycle, not pushed back since). Every input and reset are free, except the
pool's protocol, assumed for a command taken in a cycle without reset:

B1. an APPEND is of ``i == len(t)``, a WRITE of ``i < len(t)``, a CUT has
    ``n == len(t)``; ``kind`` is not 3 and ``t < TABLES``.

Properties (asserted every cycle; 1-4 are the contract, 5-10 the
strengthening invariants that make them inductive, each true on its own):

1. ``error`` never rises: no allocation finds no node, no push is refused;
2. a lookup of ``(t, i)`` with ``i < len(t)``, not the index of an APPEND in
   its write cycle (stage A) nor of a WRITE in progress, replies three cycles
   later the shadow's PTE of ``(t, i)`` as of its issue cycle: *the block
   table answers as the page table*;
3. a CUT's stream: every beat is ``{i, pte}`` with ``i`` the next index from
   ``c`` (in order, each once) and ``pte`` the shadow's, and the walk ends
   with every index below ``n`` streamed (its pipeline below);
4. node conservation: each allocator's ``free_pages`` plus its held nodes
   plus the node it shows is its size, and the held nodes are exactly the
   nodes of the tables that hold indices (a table's mid and leaf node; during
   a CUT to 0, until the walk pushes them);
5. the allocators' FIFOs (:func:`formal.kvpool_alloc.fifo_invariants`, their
   properties 5 and 6, with the held nodes above); a page shown is not held;
6. per table: its root points at a held mid node, the mid node at a held
   leaf node, distinct from every other table's (no node is shared), and
   its cursor word is ``{mid, leaf}`` of those;
7. per table and index below its length (and per index a CUT still has to
   stream): the leaf word is the shadow's PTE, except at stage A's index and
   a WRITE's in progress;
8. stage A: its index is its table's last (length - 1), its PTE the shadow's, a
   new node is shown by both allocators exactly when its index is 0, else
   the cursor value it reads (or forwards) is the table's nodes; no walk runs;
9. the walker: a WRITE's index and PTE against the shadow at each stage
   (``j``, stage 1 or 2; written in stage 2), a CUT's stages holding
   consecutive indices ending at ``j - 1`` with the next beat's index below
   them, the stages' read data (root, mid, leaf words) the table's;
10. the lookup port: a tracked read's index, read data and leaf word at each
    stage, its index still below its table's length or not yet passed by a
    CUT taken since (nor an APPEND's, nor written by a WRITE taken since).

The harness's node invariants assume one mid and one leaf node per table:
``INDEX_BITS <= 6`` (leaves of ``2**INDEX_BITS`` PTEs, a mid and a root of one
pointer). The radix levels of larger tables (a mid of up to 64 leaf pointers,
a root of several mids) are exercised by the testbench (``tb/kvpool``), not
here.

The pool's side of the contract (B1) is proved on the whole pool by
:mod:`formal.kvpool_proto` (k-induction, decision 0026): the pool keeps the
tables' lengths in its segment table, and every command site names them.

Checks (:data:`CHECKS`): ``prove`` (k-induction up to :data:`PROVE_DEPTH`:
must close), ``prove:larger`` (two lookup ports, as the pool has), ``negated``
(property 3 with the shadow's PTE XOR 1: must be refuted), ``unprotected``
(properties 1-3 without B1: a BMC must find a failure), and the witnesses of
:data:`REACH` (the state's absence asserted: the BMC's counterexample shows
that the assumptions allow it within :data:`BMC_DEPTH` steps). Properties 1-3
alone are not inductive (a free initial state holds a stage A or a walk whose
registers contradict the memories): the harness's variant ``weak`` shows it
(``UNKNOWN``).
"""

import sys
from pathlib import Path

from amaranth import Array, Cat, Const, Elaboratable, Module, Mux, ResetSignal, Signal, Value
from amaranth.hdl import Assert, Assume
from amaranth.utils import bits_for

from formal.kvpool_alloc import fifo_invariants, held_shadow
from formal.kvpool_probes import ProbedBlockTable
from formal.leaf import Harness, LeafChecks, check_run
from formal.sat import Outcome, convert, solve
from hw.common import sum_tree
from hw.kvpool.blocktable import BtCmd

__all__ = [
    "BlockTableFormal",
    "CONFIG",
    "LARGER",
    "protocol_b1",
    "length_shadow",
    "write_pending",
    "run",
    "build_parser",
    "parse_args",
    "main",
]

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "build" / "formal"
#: the proved size (the allocators' smallest, 16 nodes each)
CONFIG = {
    "TABLES": 2,
    "INDEX_BITS": 4,
    "ADDR_BITS": 1,
    "TOKEN_BITS": 1,
    "LEAVES": 16,
    "MIDS": 16,
    "PORTS": 1,
}
#: a second proved size: both lookup ports (the pool's; minutes more than one port)
LARGER = {"PORTS": 2}
PROVE_DEPTH = 3
BMC_DEPTH = 12
#: properties 1-10; a false one; 1-3 without B1; 1-3 alone (not inductive without 4-10)
VARIANTS = ("props", "negated", "unprotected", "weak")
#: states the assumptions must allow (asserted absent: the counterexample is the witness)
REACH = {
    "reuse": "a leaf node handed out again after a CUT pushed it",
    "stall": "a CUT's beat held by out.ready low",
    "read_in_cut": "a lookup answered while a CUT streams",
}


def length_shadow(m: Module, bt: object, name: str = "fv_bt_len") -> tuple[Array, Value]:
    """``(lens, take)`` of a block table ``bt`` (its ``cmd`` stream): ``lens[t]`` each
    table's length as the commands taken set it (an APPEND's ``i + 1``, a CUT's
    ``min(c, n)``; registers reset with the design, named ``<name><t>``), ``take`` a
    command is taken this cycle. What :func:`protocol_b1` checks a command against,
    in the pool's harnesses (:mod:`formal.kvpool`, :mod:`formal.kvpool_proto`)."""
    c = bt.cmd.payload
    take = bt.cmd.valid & bt.cmd.ready
    lens = Array(Signal(len(c.i) + 1, name=f"{name}{t}") for t in range(bt.TABLES))
    kind = c.kind.as_value()
    with m.If(take & (kind == BtCmd.APPEND.value)):
        m.d.sync += lens[c.t].eq(c.i + 1)
    with m.If(take & (kind == BtCmd.CUT.value)):
        m.d.sync += lens[c.t].eq(Mux(c.i > c.n, c.n, c.i))
    return lens, take


def protocol_b1(cmd: object, length: Value, tables: int) -> list[Value]:
    """B1 for a command ``cmd`` (a block table's ``cmd.payload``) taken with its
    table's length ``length``: the conditions the pool must keep (assumed here,
    asserted by :mod:`formal.kvpool`'s property 7)."""
    kind = cmd.kind.as_value()
    append, write, cut = (kind == k.value for k in (BtCmd.APPEND, BtCmd.WRITE, BtCmd.CUT))
    return [
        cmd.t < tables,
        kind != 3,
        ~append | (cmd.i == length),
        ~write | (cmd.i < length),
        ~cut | (cmd.n == length),
    ]


def write_pending(m: Module, bt: object, write: Value) -> tuple[Signal, Signal]:
    """``(wp, wi)`` of a block table ``bt`` (its ``state``): a WRITE taken (``write``: in
    this cycle) whose PTE its walker has not written yet, and its index. Property 2's
    reads exclude its index; :mod:`formal.kvpool_tlbproto` assumes property 2."""
    w = bt.state.w
    wp = Signal(name="fv_wp")
    wi = Signal(len(bt.cmd.payload.i), name="fv_wi")
    with m.If(write):
        m.d.sync += [wp.eq(1), wi.eq(bt.cmd.payload.i)]
    with m.Elif(w.v[1] & ~w.is_cut):
        m.d.sync += wp.eq(0)
    return wp, wi


def _count(bits: list[Value]) -> Value:
    return sum_tree([b.as_unsigned() for b in bits], bits_for(len(bits)))


class BlockTableFormal(Harness, Elaboratable):
    """The block table, its shadow page table, assumption B1 and properties 1-10."""

    def __init__(self, *, variant: str = "props", reach: str | None = None, **params: int):
        self._MustUse__silence = True  # a refused argument leaves nothing to elaborate
        check_run(variant, reach, VARIANTS, REACH)
        cfg = {**CONFIG, **params}
        if cfg["INDEX_BITS"] > 6:
            raise ValueError(f"INDEX_BITS = {cfg['INDEX_BITS']!r}: the harness takes 1 .. 6")
        self._MustUse__silence = False
        self.variant, self.reach = variant, reach
        self.dut = ProbedBlockTable(**cfg)
        self.dut._MustUse__silence = True  # elaborated by the harness

    # ------------------------------------------------------------------ elaborate
    def elaborate(self, platform) -> Module:
        m = Module()
        d = self.dut
        m.submodules.dut = d.elaborate(platform)
        d.la.elaborate(platform)  # the probes' FIFO reads (the same module later)
        d.ma.elaborate(platform)
        rst = ResetSignal()
        started = Signal(reset_less=True)
        m.d.sync += started.eq(1)
        with m.If(~started):
            m.d.comb += Assume(rst)
        self._shadow(m, rst)
        self._nodes_of(m)
        beats = self._beats(m)
        reads = [self._reads(m, k) for k in range(d.PORTS)]
        self._held(m)
        with m.If(started):
            if self.reach is not None:
                m.d.comb += Assert(~self._reached(m, self.reach))
            elif self.variant == "negated":
                o = d.out.payload
                lie = self.pte_of(d.state.w.t, o.i) ^ 1
                m.d.comb += Assert(~d.out.valid | (o.pte.as_value() == lie))
            else:
                self._chk(m, "error", 1, [~d.error])
                self._chk(m, "beats", 1, beats)
                for k, r in enumerate(reads):
                    self._chk(m, f"read{k}", 1, r)
                if self.variant == "props":
                    self._invariants(m)
        return m

    # ------------------------------------------------------------------ the shadow
    def _shadow(self, m: Module, rst: Value) -> None:
        """The shadow page table, written by the commands taken; assumption B1."""
        d = self.dut
        T, S, ib = d.TABLES, 1 << d.INDEX_BITS, d.INDEX_BITS
        pw = len(d.cmd.payload.pte.as_value())
        self.sh_len = Array(Signal(ib + 1, name=f"fv_len{t}") for t in range(T))
        self.sh_pte = [[Signal(pw, name=f"fv_pte{t}_{i}") for i in range(S)] for t in range(T)]
        c = d.cmd.payload
        take = d.cmd.valid & d.cmd.ready
        length = self.sh_len[c.t]
        kind = c.kind.as_value()
        append, write, cut = (kind == k.value for k in (BtCmd.APPEND, BtCmd.WRITE, BtCmd.CUT))
        c_eff = Mux(c.i > c.n, c.n, c.i)
        for t in range(T):
            with m.If(take & (c.t == t)):
                with m.If(append):
                    m.d.sync += self.sh_len[t].eq(c.i + 1)
                with m.If(cut):
                    m.d.sync += self.sh_len[t].eq(c_eff)
                for i in range(S):
                    with m.If((append | write) & (c.i == i)):
                        m.d.sync += self.sh_pte[t][i].eq(c.pte)
        if self.variant != "unprotected":
            with m.If(~rst & take):
                m.d.comb += [Assume(x) for x in protocol_b1(c, length, T)]
        # the WRITE in progress (taken, its PTE not yet written) and the CUT's next beat
        self.wp, self.wi = write_pending(m, d, take & write)
        self.next = Signal(ib + 1, name="fv_next")
        with m.If(take & cut):
            m.d.sync += self.next.eq(c.i)
        with m.Elif(d.out.valid & d.out.ready):
            m.d.sync += self.next.eq(self.next + 1)

    def pte_of(self, t: Value, i: Value) -> Value:
        """The shadow's PTE of ``(t, i)``."""
        return Array(Array(row) for row in self.sh_pte)[t][i]

    # ------------------------------------------------------------------ nodes
    def _nodes_of(self, m: Module) -> None:
        """Per table: its root word (the mid node), that mid's word (the leaf node),
        its cursor word; who owns its nodes."""
        d = self.dut
        T = d.TABLES
        a, w = d.state.a, d.state.w
        self.mid_of = [d.word(m, d.root, Const(t, len(d.cmd.payload.t))) for t in range(T)]
        self.leaf_of = [d.word(m, d.mid, self.mid_of[t]) for t in range(T)]
        self.cursor_of = [d.word(m, d.cursor, Const(t, len(d.cmd.payload.t))) for t in range(T)]
        ib = d.INDEX_BITS
        self.word_of = [
            [d.word(m, d.leaf, Cat(Const(i, ib), self.leaf_of[t])) for i in range(1 << ib)]
            for t in range(T)
        ]
        v1, v2, _ = w.v
        j1, j2, _ = w.js
        self.has, self.apend0, self.walking, self.m_own, self.l_own = [], [], [], [], []
        for t in range(T):
            has = self.sh_len[t] != 0
            apend0 = a.v & (a.t == t) & a.mid
            walking = w.running & w.is_cut & (w.t == t)
            first = walking & (w.n != 0) & ((w.j == 0) | v1 & (j1 == 0))
            self.has.append(has)
            self.apend0.append(apend0)
            self.walking.append(walking)
            self.m_own.append(has & ~apend0 | first)
            self.l_own.append(has & ~apend0 | first | walking & (w.n != 0) & v2 & (j2 == 0))

    def _held(self, m: Module) -> None:
        """The held nodes of each allocator: shown in an earlier cycle, not pushed since."""
        d = self.dut
        self.held = {}
        for name, al in (("leaf", d.la), ("mid", d.ma)):
            self.held[name], _ = held_shadow(m, al, f"fv_held_{name}")

    # ------------------------------------------------------------------ properties 2, 3
    def _beats(self, m: Module) -> list:
        """Property 3 (the beats; the pipeline's part is in property 9)."""
        d = self.dut
        w, o = d.state.w, d.out.payload
        return [
            ~d.out.valid
            | (
                w.running
                & w.is_cut
                & (o.i == self.next[: d.INDEX_BITS])
                & (self.next < w.n)
                & (o.pte.as_value() == self.pte_of(w.t, o.i))
            )
        ]

    def _reads(self, m: Module, k: int) -> list:
        """Property 2 for port ``k`` (trackers of its reads; property 10 states their
        stages)."""
        d = self.dut
        a, w = d.state.a, d.state.w
        rd, rsp = getattr(d, f"rd{k}"), getattr(d, f"rd{k}_rsp")
        t, i = rd.payload.t, rd.payload.i
        ok0 = (
            rd.valid
            & (t < d.TABLES)
            & (i < self.sh_len[t])
            & ~(a.v & (a.t == t) & (a.i == i))
            & ~(self.wp & (w.t == t) & (self.wi == i))
        )
        pw = len(rsp.payload.as_value())
        ok = [ok0] + [Signal(name=f"fv_rd{k}_ok{s}") for s in (1, 2, 3)]
        ts = [t] + [Signal.like(t, name=f"fv_rd{k}_t{s}") for s in (1, 2, 3)]
        ix = [i] + [Signal.like(i, name=f"fv_rd{k}_i{s}") for s in (1, 2, 3)]
        exp = [self.pte_of(t, i)] + [Signal(pw, name=f"fv_rd{k}_exp{s}") for s in (1, 2, 3)]
        for s in (1, 2, 3):
            m.d.sync += [
                ok[s].eq(ok[s - 1]),
                ts[s].eq(ts[s - 1]),
                ix[s].eq(ix[s - 1]),
                exp[s].eq(exp[s - 1]),
            ]
        self.tracked = getattr(self, "tracked", []) + [(k, ok, ts, ix, exp)]
        return [~ok[3] | (rsp.valid & (rsp.payload.as_value() == exp[3]))]

    # ------------------------------------------------------------------ 4 - 10
    def _invariants(self, m: Module) -> None:
        self._conservation(m)
        self._tables(m)
        self._stage_a(m)
        self._walker(m)
        self._lookups(m)

    def _conservation(self, m: Module) -> None:
        """Properties 4 and 5."""
        d = self.dut
        for name, al, own in (("leaf", d.la, self.l_own), ("mid", d.ma, self.m_own)):
            held = self.held[name]
            fifo_invariants(m, al, held)
            count = _count([held[q] for q in range(al.PAGES)])
            self._chk(
                m,
                f"{name}_held",
                1,
                [~(al.page_valid & held.bit_select(al.page, 1)), count == _count(own)],
            )

    def _tables(self, m: Module) -> None:
        """Properties 6 and 7."""
        d = self.dut
        T, S = d.TABLES, 1 << d.INDEX_BITS
        a, w = d.state.a, d.state.w
        hm, hl = self.held["mid"], self.held["leaf"]
        for t in range(T):
            mid, leaf = self.mid_of[t], self.leaf_of[t]
            self._chk(m, f"t{t}_mid_held", self.m_own[t], [hm.bit_select(mid, 1)])
            self._chk(m, f"t{t}_leaf_held", self.l_own[t], [hl.bit_select(leaf, 1)])
            own = self.has[t] & ~self.apend0[t]
            self._chk(m, f"t{t}_len", 1, [self.sh_len[t] <= S])
            self._chk(m, f"t{t}_cursor", own, [self.cursor_of[t] == Cat(mid, leaf)])
            for u in range(t):
                self._chk(
                    m,
                    f"t{t}_t{u}_distinct",
                    1,
                    [
                        ~(self.m_own[t] & self.m_own[u] & (mid == self.mid_of[u])),
                        ~(self.l_own[t] & self.l_own[u] & (leaf == self.leaf_of[u])),
                    ],
                )
            for i in range(S):
                stable = (
                    own
                    & (i < self.sh_len[t])
                    & ~(a.v & (a.t == t) & (a.i == i))
                    & ~(self.wp & (w.t == t) & (self.wi == i))
                )
                cut = self.walking[t] & (self.next <= i) & (i < w.n)
                self._chk(
                    m, f"t{t}_pte{i}", stable | cut, [self.word_of[t][i] == self.sh_pte[t][i]]
                )

    def _nodes(self, t: Value) -> Value:
        """``{mid, leaf}`` of table ``t`` (a cursor word)."""
        return Cat(Array(self.mid_of)[t], Array(self.leaf_of)[t])

    def _stage_a(self, m: Module) -> None:
        """Property 8."""
        d = self.dut
        a, w = d.state.a, d.state.w
        la, ma = d.la, d.ma
        fwd = a.last_v & (a.last_t == a.t)
        last = (a.last_t < d.TABLES) & (a.last_cur == self._nodes(a.last_t))
        self._chk(
            m,
            "alloc_shown",
            1,
            [la.page_valid == (a.v & a.leaf), ma.page_valid == (a.v & a.mid)],
        )
        self._chk(m, "a_last", a.last_v, [last])
        self._chk(
            m,
            "a",
            a.v,
            [
                a.t < d.TABLES,
                self.sh_len[a.t] == a.i + 1,
                a.pte == self.pte_of(a.t, a.i),
                a.leaf == (a.i == 0),
                a.mid == (a.i == 0),
                ~w.running,
            ],
        )
        self._chk(m, "a_cursor", a.v & ~a.mid & ~fwd, [a.cur == self._nodes(a.t)])

    def _walker(self, m: Module) -> None:
        """Property 9."""
        d = self.dut
        w = d.state.w
        v1, v2, v3 = w.v
        j1, j2, j3 = w.js
        S = 1 << d.INDEX_BITS
        mid = Array(self.mid_of)[w.t]
        leaf = Array(self.leaf_of)[w.t]
        self._chk(m, "w_idle", ~w.running, [~v1 & ~v2 & ~v3, ~self.wp])
        self._chk(
            m,
            "w",
            w.running,
            [
                w.t < d.TABLES,
                w.j <= w.n,
                w.n <= S,
                ~v1 | (w.data[0] == mid),
                ~v2 | (w.m2 == mid) & (w.data[1] == leaf),
            ],
        )
        self._chk(
            m,
            "w_cut",
            w.running & w.is_cut,
            [
                ~self.wp,
                ~v1 | (j1 == w.j - 1),
                ~v2 | (j2 == w.j - 1 - v1),
                ~v3 | (j3 == w.j - 1 - v1 - v2),
                self.next == w.j - v1 - v2 - v3,
                self.sh_len[w.t] <= self.next,
                ~v3 | (w.data[2] == self.pte_of(w.t, j3)),
            ],
        )
        at_j = self.wp & ~v1 & ~v2 & (w.j == self.wi)
        at_1 = self.wp & v1 & ~v2 & (j1 == self.wi) & (w.j == w.n)
        at_2 = self.wp & ~v1 & v2 & (j2 == self.wi) & (w.j == w.n)
        done = ~self.wp & ~v1 & ~v2 & (w.j == w.n)
        self._chk(
            m,
            "w_write",
            w.running & ~w.is_cut,
            [
                ~v3,
                w.n == self.wi + 1,
                at_j | at_1 | at_2 | done,
                self.wi < self.sh_len[w.t],
                self.sh_len[w.t] != 0,
                ~self.wp | (w.pte == self.pte_of(w.t, self.wi)),
            ],
        )

    def _lookups(self, m: Module) -> None:
        """Property 10."""
        d = self.dut
        words = Array(Array(row) for row in self.word_of)
        for k, ok, ts, ix, exp in self.tracked:
            p = d.state.rd[k]
            for s in (1, 2):
                t, i = ts[s], ix[s]
                self._chk(
                    m,
                    f"rd{k}_s{s}",
                    ok[s],
                    [
                        t < d.TABLES,
                        p.v[s - 1] & (p.i[s - 1] == i),
                        Array(self.l_own)[t],
                        words[t][i] == exp[s],
                    ],
                )
            # the index is still the table's, or a CUT taken since has not passed it
            w = d.state.w
            v1, v2, v3 = w.v
            for s, quiet in ((1, ~v1 & ~v2 & ~v3), (2, ~v2 & ~v3)):
                t, i = ts[s], ix[s]
                walking = w.running & w.is_cut & (w.t == t) & quiet
                cut = walking & (self.next <= i) & (i < w.n)
                a = d.state.a
                appended = a.v & (a.t == t) & (a.i == i)  # an APPEND after: a new index
                # a WRITE of the index taken since has not written it yet
                written = self.wp & (w.t == t) & (self.wi == i) & (v2 | (v1 if s == 1 else 0))
                checks = [(i < self.sh_len[t]) | cut, ~appended, ~written]
                self._chk(m, f"rd{k}_live{s}", ok[s], checks)
            self._chk(m, f"rd{k}_d1", ok[1], [p.data[0] == Array(self.mid_of)[ts[1]]])
            self._chk(m, f"rd{k}_d2", ok[2], [p.data[1] == Array(self.leaf_of)[ts[2]]])
            self._chk(m, f"rd{k}_s3", ok[3], [p.v[2]])

    # ------------------------------------------------------------------ witnesses
    def _reached(self, m: Module, what: str) -> Value:
        """The state of :data:`REACH` ``what`` (its absence is asserted)."""
        d = self.dut
        w = d.state.w
        if what == "reuse":
            ever = Signal(d.LEAVES, name="fv_ever")
            pushed = Mux(d.la.push, Const(1, d.LEAVES) << d.la.push_page, 0)[: d.LEAVES]
            m.d.sync += ever.eq(ever | pushed)
            return d.la.page_valid & ever.bit_select(d.la.page, 1)
        if what == "stall":
            return d.out.valid & ~d.out.ready
        ok3 = Cat(*[ok[3] for _, ok, _, _, _ in self.tracked]).any()
        return ok3 & w.running & w.is_cut & (w.n != 0)


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
    ``out/kvpool_bt_<name>/<task>/trace.vcd``.

    Raises
    ------
    ValueError
        An unknown task, variant or witness, or ``INDEX_BITS`` above 6.
    """
    h = BlockTableFormal(variant=variant, reach=reach, **params)
    if depth is None:
        depth = PROVE_DEPTH if task == "prove" else BMC_DEPTH
    size = "_".join(f"{k}{v}" for k, v in sorted(params.items()))
    name = (f"reach_{reach}" if reach else variant) + (f"_{size}" if size else "")
    return solve(convert(h, h.ports()), out / f"kvpool_bt_{name}", task, depth)


#: the checks and the command line (:class:`formal.leaf.LeafChecks`)
LEAF = LeafChecks(
    module="formal.kvpool_bt",
    title="block table as the page table",
    doc=__doc__,
    config=CONFIG,
    run=run,
    unit="block table",
    props="properties 1-10",
    negated="a CUT's beat claimed the shadow's PTE XOR 1: refuted",
    unprotected="without B1, a failure",
    reach=REACH,
    label="bt:",
    larger=LARGER,
)
#: the checks of :func:`main`: the induction at :data:`CONFIG` and at :data:`LARGER`,
#: the false property, the unprotected run, the witnesses
CHECKS = LEAF.checks
build_parser, parse_args, main = LEAF.build_parser, LEAF.parse_args, LEAF.main

if __name__ == "__main__":
    sys.exit(main())
