"""The tree slots stream what they hold, by k-induction: ``python -m formal.kvpool_ts``.

The tree slots' contracts T1-T3 (which :mod:`formal.kvpool_proto` and
:mod:`formal.kvpool_allocproto` assume of the leaf) at the leaf level,
assume-guarantee: a harness around :class:`hw.kvpool.treeslots.TreeSlots`
(through :class:`ProbedTreeSlots`, a subclass of the probe
:class:`formal.kvpool_probes.TreeSlots` that also keeps the stream's
registers and reads every node-table word and level row asynchronously) at
a small size (:data:`CONFIG`: 2 slots of 4 nodes, windows of 2 positions,
one lookup port) with a *tree shadow*: per slot ``r`` and node ``n``
``nval[r][n]`` (set by an ADD taken, ``add.ok``; cleared for the whole slot
by an OPEN taken, ``fire & OPEN & slot < TREES`` and not the slot streamed,
and for one node by its ACC or REJ beat taken, ``out.valid & out.ready``,
of slot ``cs``), and the ADD's word ``ndepth = pos - lo``, ``npage``,
``ntoken`` (written by an ADD taken, never reset: the node table is a
memory); and ``owe``, the ACC beats still owed (set by a COMMIT taken to
``|valid & accept|`` of its slot, 0 by a RELEASE, one less per ACC beat
taken: :func:`owe_shadow`, the pool's harnesses' too). Every input and reset are
free (the lookup ports and the ``chk`` queries too: they drive nothing the
properties see), except the pool's protocol, assumed for a command taken in a
cycle without reset:

S1. an ADD is of a slot ``< TREES``, active, not the slot streamed, of a
    node not ``valid`` in it, with ``lo <= pos < lo + MAX_DEPTH``
    (:func:`addable`);
S2. a COMMIT is of a slot ``< TREES``, active (:func:`committable`; ``owe``
    counts ``valid & accept`` whatever the slot, but the leaf streams an
    inactive slot's COMMIT as END only, whatever its stale ``valid``; a
    RELEASE owes nothing and needs no assumption);
S3. the sampler's contract (SPEC §4.8, decision 0020): the nodes of
    ``valid & accept`` of a COMMIT's slot are an ancestor chain from ``d0``:
    with ``k = |valid & accept|``, their shadow depths are ``d0 <= ndepth <
    d0 + k``, two by two distinct (so exactly ``d0, ..., d0 + k - 1``, one
    node per depth).

An OPEN needs no assumption (the pool opens ``free_slot``; reopening an
active slot, or an OPEN of the slot streamed, is harmless to T1-T3).

Properties (asserted every cycle; T1-T3 are the contract, 1-6 the
strengthening invariants that make them inductive, each true on its own):

T1. an ACC beat comes only while ``owe != 0``, any other beat only when
    ``owe == 0``: a COMMIT streams exactly ``|valid & accept|`` ACC beats
    before its first other beat, a RELEASE none;
T2. a beat's kind is ACC, REJ or END (never 3); ``busy`` falls exactly in the
    cycle after an END beat is taken;
T3. a beat comes only while ``busy``; an ACC or REJ beat is of a node of the
    streamed slot ``cs`` with ``nval`` set and the shadow's ``npage``; the END
    beat comes only when no node of the slot is left (``nval[cs] == 0``);
1. node table: every word ``(r, n)`` is the shadow's ``{ndepth, npage,
   ntoken}`` (both written by the same ADDs, neither reset);
2. level rows: per slot ``r`` and depth ``d`` whose ``rows`` bit is set, the
   row is exactly the nodes of ``valid[r]`` of shadow depth ``d``; a node of
   ``valid[r]`` has its depth's ``rows`` bit set;
3. ``nval`` against the flops: an inactive slot has ``nval == 0``, an active
   one not streamed ``nval == valid``;
4. phase 1 (the accepted path), with ``live = acc & nval[cs]`` (the accepted
   nodes not yet taken) and ``nd = a_d - 1 - c_valid`` (the depth of the next
   ACC beat): ``acc`` within ``valid[cs]``, ``nval[cs] & ~acc == rej``,
   ``owe == |live|``, ``1 + c_valid <= a_d <= MAX_DEPTH + 1``, ``b_valid ==
   (a_d <= MAX_DEPTH)`` with ``b_d = a_d - 1`` (the row in stage B); a beat
   in C is an ACC of a node of ``live`` at depth ``nd``; the nodes of
   ``live`` have distinct depths in ``[nd, nd + owe)``, the accepted nodes
   taken depths below ``nd``; the row read (``sr.data``) is the level row
   ``b_d`` of ``cs`` when ``b_valid`` and its ``rows`` bit is set;
5. phase 2 (the rejected nodes): ``owe == 0``, a beat in C is a REJ,
   ``nval[cs] == rej | {c_node}`` (``c_node`` not in ``rej``);
6. phase 3 (the END beat held): ``c_valid``, ``c_kind`` END, ``nval[cs] ==
   0``, ``owe == 0``.

Each of 1-6 is needed (without any one the induction stays ``UNKNOWN`` up to
6 steps); the beat's node-table read data needs no invariant of its own (T3's
page, held through a stall, is it).

The proof is the leaf's side of T1-T3; the pool's side of S1 and S2 is proved
by :mod:`formal.kvpool_allocproto`; S3 is the sampler's (C1 of
:mod:`formal.kvpool_proto` trusts the same chain). Each contract is stated
once, by a function of this module that both sides call: S1 :func:`addable`,
S2 :func:`committable`, T1 and T2 :func:`stream_contract` (with
:func:`owe_shadow`), T3 :func:`node_stream` (with :func:`tree_shadow`); what
the leaf assumes is what the pool proves, and the other way round.

Checks (:data:`CHECKS`): ``prove`` (k-induction up to :data:`PROVE_DEPTH`:
must close), ``prove:larger`` (at :data:`LARGER`: 3 slots and 3 positions,
not powers of two, 8 nodes, both lookup ports), ``weak`` (T1-T3 without 1-6:
the induction must stop ``UNKNOWN``: they are needed), ``negated`` (T3 with
the shadow's page XOR 1: must be refuted), ``unprotected`` (T1-T3 without S3:
a BMC must find a failure: a node accepted off the path is never streamed as
ACC), and the witnesses of :data:`REACH` (the state's absence asserted in
cycles without reset: the BMC's counterexample shows that the assumptions
allow it within :data:`BMC_DEPTH` steps).
"""

import sys
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

from amaranth import Array, Cat, Const, Elaboratable, Module, Mux, ResetSignal, Signal, Value
from amaranth.hdl import Assert, Assume
from amaranth.utils import bits_for

from formal.kvpool import count
from formal.kvpool_probes import TreeSlots
from formal.leaf import Answer, Harness, LeafChecks, check_run
from formal.sat import Outcome, convert, solve
from hw.common import check_params, idx_bits
from hw.kvpool.treeslots import TsCmd, TsOut

__all__ = [
    "ProbedTreeSlots",
    "TreeSlotsFormal",
    "TreeShadow",
    "tree_shadow",
    "owe_shadow",
    "addable",
    "committable",
    "stream_contract",
    "node_stream",
    "CONFIG",
    "LARGER",
    "run",
    "build_parser",
    "parse_args",
    "main",
]

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "build" / "formal"
#: the proved size
CONFIG = {
    "TREES": 2,
    "N_NODES": 4,
    "MAX_DEPTH": 2,
    "SEQS": 2,
    "POS_BITS": 3,
    "PAGE_BITS": 2,
    "TOKEN_BITS": 1,
    "PORTS": 1,
}
#: a second proved size: slot and depth counts not powers of two, both lookup ports
LARGER = {"TREES": 3, "N_NODES": 8, "MAX_DEPTH": 3, "PORTS": 2}
PROVE_DEPTH = 4
BMC_DEPTH = 12
#: T1-T3 and invariants 1-6; a false one; T1-T3 without S3; T1-T3 alone
VARIANTS = ("props", "negated", "unprotected", "weak")
#: states the assumptions must allow (asserted absent: the counterexample is the witness)
REACH = {
    "commit": "a COMMIT's stream of 2 ACC beats, then a REJ beat",
    "release": "a RELEASE's END beat after 2 REJ beats",
    "stall": "an ACC or REJ beat held by out.ready low",
    "add_in_stream": "an ADD taken while a COMMIT / RELEASE streams",
}
#: the stream's registers (locals of ``TreeSlots._stream``), found by name
STREAM_REGS = ("acc", "rej", "a_d", "b_valid", "b_d", "c_valid", "c_kind", "c_node")


class ProbedTreeSlots(TreeSlots):
    """The probe :class:`formal.kvpool_probes.TreeSlots` (``st``, ``add``) with the
    stream's registers (``regs``: :data:`STREAM_REGS`, found among the signals the
    module drives), its two read ports (``sr``: the level row, ``snr``: the node
    word), and asynchronous reads of every node-table word (``words[r][n]``) and
    level row (``rows[r][d]``)."""

    def _probe(self, m: Module) -> None:
        nodes, levels = m.submodules.nodes, m.submodules.levels
        k = self.PORTS  # the lookup ports' read ports come first, then the stream's
        if len(levels.read_ports) != k + 1 or len(nodes.read_ports) != k + 1:
            raise RuntimeError("TreeSlots: read ports not as the probe expects")
        self.sr, self.snr = levels.read_ports[k], nodes.read_ports[k]
        named: dict[str, list[Signal]] = {}
        for sig in m._driving:  # (Amaranth 0.5's Module: every signal it drives)
            named.setdefault(sig.name, []).append(sig)
        if any(len(named.get(n, [])) != 1 for n in STREAM_REGS):
            raise RuntimeError("TreeSlots: the stream's registers not found by name")
        self.regs = SimpleNamespace(**{n: named[n][0] for n in STREAM_REGS})
        sb, nb, db = idx_bits(self.TREES), idx_bits(self.N_NODES), idx_bits(self.MAX_DEPTH)

        def read(mem: object, addr: Value) -> Value:
            rp = mem.read_port(domain="comb")
            m.d.comb += rp.addr.eq(addr)
            return rp.data

        T, N, D = self.TREES, self.N_NODES, self.MAX_DEPTH
        self.words = [
            [read(nodes, Cat(Const(n, nb), Const(r, sb))) for n in range(N)] for r in range(T)
        ]
        self.rows = [
            [read(levels, Cat(Const(d, db), Const(r, sb))) for d in range(D)] for r in range(T)
        ]


@dataclass
class TreeShadow:
    """The tree shadow of a probed :class:`~hw.kvpool.treeslots.TreeSlots`: per slot
    ``r`` the nodes held (``nval[r]``, ``N_NODES`` bits), per node the word its
    last ADD wrote (``ndepth``, ``npage``, ``ntoken``; never reset, as the node
    table)."""

    nval: list[Signal]
    ndepth: list[list[Signal]]
    npage: list[list[Signal]]
    ntoken: list[list[Signal]]

    def streamed(self, ts: TreeSlots) -> tuple[Value, Value]:
        """``(nval, npage)`` of the slot streamed (``cs``) and the beat's node."""
        cs = ts.st.cs
        nv = Array(self.nval)[cs]
        np = Array(Array(row) for row in self.npage)[cs][ts.out.payload.node]
        return nv, np


def tree_shadow(m: Module, ts: TreeSlots) -> TreeShadow:
    """The tree shadow of ``ts`` (elaborated: its ``st`` and ``add``), in ``m``: a node
    is held from the ADD the slots take (``add.ok``) until its ACC or REJ beat is
    taken (of slot ``cs``), or an OPEN they take of its slot (in range, not the slot
    streamed). Shared by this proof and :mod:`formal.kvpool_allocproto`."""
    st, c, out = ts.st, ts.cmd.payload, ts.out
    T, N, db = ts.TREES, ts.N_NODES, idx_bits(ts.MAX_DEPTH)

    def words(name: str, width: int) -> list[list[Signal]]:
        return [
            [Signal(width, name=f"fv_{name}{r}_{n}", reset_less=True) for n in range(N)]
            for r in range(T)
        ]

    sh = TreeShadow(
        nval=[Signal(N, name=f"fv_nval{r}") for r in range(T)],
        ndepth=words("ndepth", db),
        npage=words("npage", ts.PAGE_BITS),
        ntoken=words("ntoken", ts.TOKEN_BITS),
    )
    fire = ts.cmd.valid & ts.cmd.ready
    streamed = (st.phase != 0) & (c.slot == st.cs)
    is_open = fire & (c.kind == TsCmd.OPEN) & ts._slot_ok(c.slot) & ~streamed
    node = (Const(1, N) << c.node)[:N]
    gone = (Const(1, N) << out.payload.node)[:N]
    beat = out.valid & out.ready & (out.payload.kind != TsOut.END)
    depth = (c.pos - Array(st.lo)[c.slot])[:db]
    for r in range(T):
        with m.If(is_open & (c.slot == r)):
            m.d.sync += sh.nval[r].eq(0)
        with m.Elif(ts.add.ok & (c.slot == r)):
            m.d.sync += sh.nval[r].eq(sh.nval[r] | node)
        with m.Elif(beat & (st.cs == r)):
            m.d.sync += sh.nval[r].eq(sh.nval[r] & ~gone)
        for n in range(N):
            with m.If(ts.add.ok & (c.slot == r) & (c.node == n)):
                m.d.sync += [
                    sh.ndepth[r][n].eq(depth),
                    sh.npage[r][n].eq(c.page),
                    sh.ntoken[r][n].eq(c.token),
                ]
    return sh


# ---------------------------------------------------------------------- the contracts
# Each stated once: the leaf proof below assumes S1, S2 and proves T1-T3 with
# them; the pool's harnesses (formal.kvpool_proto, formal.kvpool_allocproto)
# assume T1-T3 and prove S1, S2 with the same functions.


def owe_shadow(m: Module, ts: TreeSlots, width: int) -> Signal:
    """``owe`` of ``ts``, in ``m``: the ACC beats its stream still owes (set by a COMMIT
    taken to ``|valid & accept|`` of its slot, 0 by a RELEASE, one less per ACC beat
    taken), ``width`` bits."""
    c, st, out = ts.cmd.payload, ts.st, ts.out
    owe = Signal(width, name="fv_owe")
    fire = ts.cmd.valid & ts.cmd.ready
    acc = Array(st.valid)[c.slot] & c.accept
    beat = out.valid & out.ready & (out.payload.kind == TsOut.ACC)
    with m.If(fire & (c.kind == TsCmd.COMMIT)):
        m.d.sync += owe.eq(count(list(acc)))
    with m.Elif(fire & (c.kind == TsCmd.RELEASE)):
        m.d.sync += owe.eq(0)
    with m.Elif(beat):
        m.d.sync += owe.eq(owe - 1)
    return owe


def addable(ts: TreeSlots, slot: Value, node: Value, pos: Value, seq: Value | None = None) -> list:
    """S1 for an ADD to ``slot`` of ``node`` at ``pos``: the slot is in range, active
    (of ``seq`` if given), not the slot streamed, ``node`` not valid in it, ``pos`` in
    its window ``lo <= pos < lo + MAX_DEPTH``."""
    st = ts.st
    lo = Array(st.lo)[slot]
    mine = [] if seq is None else [Array(st.seq)[slot] == seq]
    return [
        ts._slot_ok(slot),
        st.active.bit_select(slot, 1),
        *mine,
        ~((st.phase != 0) & (st.cs == slot)),
        ~Array(st.valid)[slot].bit_select(node, 1),
        lo <= pos,
        pos < lo + ts.MAX_DEPTH,
    ]


def committable(ts: TreeSlots, slot: Value) -> list:
    """S2 for a COMMIT of ``slot``: the slot is in range and active."""
    return [ts._slot_ok(slot), ts.st.active.bit_select(slot, 1)]


def stream_contract(m: Module, ts: TreeSlots, owe: Value) -> dict[str, list]:
    """T1 and T2 of ``ts`` with its ``owe`` (:func:`owe_shadow`): ``{"t1": [...],
    "t2": [...]}``; T2's "``busy`` fell after an END beat" through two registers
    made in ``m``."""
    out = ts.out
    kind = out.payload.kind.as_value()
    end = Signal(name="fv_ts_end")  # an END beat taken in the previous cycle
    was = Signal(name="fv_ts_was_busy")
    m.d.sync += [
        end.eq(out.valid & out.ready & (kind == TsOut.END.value)),
        was.eq(ts.busy),
    ]
    acc = out.valid & (kind == TsOut.ACC.value)
    return {
        "t1": [~acc | (owe != 0), ~(out.valid & ~acc) | (owe == 0)],
        "t2": [~out.valid | (kind != 3), end == (was & ~ts.busy)],
    }


def node_stream(ts: TreeSlots, tree: "TreeShadow") -> list:
    """T3 of ``ts`` with its tree shadow: a beat only while ``busy``; an ACC or REJ beat
    of a node the shadow holds, with its page; END when the slot holds none."""
    out, o = ts.out, ts.out.payload
    nv, np = tree.streamed(ts)
    is_end = o.kind.as_value() == TsOut.END.value
    return [
        ~out.valid | ts.busy,
        ~(out.valid & ~is_end) | (nv.bit_select(o.node, 1) & (o.page == np)),
        ~(out.valid & is_end) | (nv == 0),
    ]


class TreeSlotsFormal(Harness, Elaboratable):
    """The tree slots, the tree shadow and ``owe``, assumptions S1-S3, T1-T3 and
    invariants 1-6."""

    def __init__(self, *, variant: str = "props", reach: str | None = None, **params: int):
        self._MustUse__silence = True  # a refused argument leaves nothing to elaborate
        check_run(variant, reach, VARIANTS, REACH)
        cfg = check_params(TreeSlots.PARAMS, {**CONFIG, **params})
        self._MustUse__silence = False
        self.variant, self.reach = variant, reach
        self.dut = ProbedTreeSlots(**cfg)
        self.dut._MustUse__silence = True  # elaborated by the harness

    # ------------------------------------------------------------------ elaborate
    def elaborate(self, platform) -> Module:
        m = Module()
        d = self.dut
        m.submodules.dut = d.elaborate(platform)
        rst = ResetSignal()
        started = Signal(reset_less=True)
        m.d.sync += started.eq(1)
        with m.If(~started):
            m.d.comb += Assume(rst)
        self._shadow(m)
        with m.If(~rst):
            self._protocol(m)
        with m.If(started):
            if self.reach is not None:
                m.d.comb += Assert(rst | ~self._reached(m, self.reach))
            elif self.variant == "negated":
                out, o = d.out, d.out.payload
                _, np = self._streamed()
                end = o.kind.as_value() == TsOut.END.value
                m.d.comb += Assert(~(out.valid & ~end) | (o.page == np ^ 1))
            else:
                self._contract(m)
                if self.variant == "props":
                    self._invariants(m)
        return m

    # ------------------------------------------------------------------ the shadow
    def _shadow(self, m: Module) -> None:
        """The tree shadow (:func:`tree_shadow`) and ``owe``."""
        d = self.dut
        st, c = d.st, d.cmd.payload
        self.tree = tree_shadow(m, d)
        self.nval, self.ndepth = self.tree.nval, self.tree.ndepth
        self.npage, self.ntoken = self.tree.npage, self.tree.ntoken
        self.fire = d.cmd.valid & d.cmd.ready
        self.valid_acc = Array(st.valid)[c.slot] & c.accept  # S3's nodes
        self.owe = owe_shadow(m, d, bits_for(d.N_NODES))

    def _streamed(self) -> tuple[Value, Value]:
        """The shadow of the slot streamed (:meth:`TreeShadow.streamed`)."""
        return self.tree.streamed(self.dut)

    # ------------------------------------------------------------------ assumptions
    def _protocol(self, m: Module) -> None:
        """S1, S2, S3 (``unprotected``: without S3)."""
        d = self.dut
        c = d.cmd.payload
        with m.If(self.fire & (c.kind == TsCmd.ADD)):
            m.d.comb += [Assume(x) for x in addable(d, c.slot, c.node, c.pos)]
        with m.If(self.fire & (c.kind == TsCmd.COMMIT)):
            m.d.comb += [Assume(x) for x in committable(d, c.slot)]
            if self.variant != "unprotected":
                m.d.comb += [Assume(x) for x in self._chain(c.slot, c.d0, self.valid_acc)]

    def _chain(self, slot: Value, d0: Value, va: Value) -> list[Value]:
        """S3: the nodes of ``va`` (``valid & accept`` of ``slot``) have the shadow depths
        ``d0, ..., d0 + |va| - 1``, one each."""
        N = self.dut.N_NODES
        dep = Array(Array(row) for row in self.ndepth)[slot]
        k = count(list(va))
        conds = [~va[n] | ((d0 <= dep[n]) & (dep[n] < d0 + k)) for n in range(N)]
        conds += [~(va[n] & va[j]) | (dep[n] != dep[j]) for n in range(N) for j in range(n + 1, N)]
        return conds

    # ------------------------------------------------------------------ T1 - T3
    def _contract(self, m: Module) -> None:
        """T1, T2, T3 (:func:`stream_contract`, :func:`node_stream`)."""
        d = self.dut
        for label, conds in stream_contract(m, d, self.owe).items():
            self._chk(m, label, 1, conds)
        self._chk(m, "t3", 1, node_stream(d, self.tree))

    # ------------------------------------------------------------------ 1 - 6
    def _invariants(self, m: Module) -> None:
        """Invariants 1-3: the memories' words and ``nval`` against the flops."""
        d = self.dut
        st = d.st
        T, N, D = d.TREES, d.N_NODES, d.MAX_DEPTH
        for r in range(T):
            for n in range(N):
                shadow = Cat(self.ndepth[r][n], self.npage[r][n], self.ntoken[r][n])
                self._chk(m, f"word{r}_{n}", 1, [d.words[r][n] == shadow])
            valid = st.valid[r]
            for dd in range(D):
                at = Cat(valid[n] & (self.ndepth[r][n] == dd) for n in range(N))
                self._chk(m, f"row{r}_{dd}", st.rows[r][dd], [d.rows[r][dd] == at])
            self._chk(
                m,
                f"rowbit{r}",
                1,
                [~valid[n] | st.rows[r].bit_select(self.ndepth[r][n], 1) for n in range(N)],
            )
            streamed = (st.phase != 0) & (st.cs == r)
            self._chk(m, f"nval{r}_off", ~st.active[r], [self.nval[r] == 0])
            self._chk(m, f"nval{r}_idle", st.active[r] & ~streamed, [self.nval[r] == valid])
        self._stream(m)

    def _stream(self, m: Module) -> None:
        """Invariants 4-6: the stream's registers, per phase."""
        d = self.dut
        st, g = d.st, d.regs
        N, D = d.N_NODES, d.MAX_DEPTH
        db = idx_bits(D)
        phase, cs = st.phase, st.cs
        nv = Array(self.nval)[cs]
        valid = Array(st.valid)[cs]
        dep = Array(Array(row) for row in self.ndepth)[cs]
        rows = Array(Array(row) for row in d.rows)[cs]
        kind = g.c_kind
        node1 = (Const(1, N) << g.c_node)[:N]
        # phase 1: the accepted path
        nd = Signal(db + 1, name="fv_nd")  # the depth of the next ACC beat
        m.d.comb += nd.eq(g.a_d - 1 - g.c_valid)
        live = g.acc & nv
        p1 = [
            (g.acc & ~valid) == 0,
            (nv & ~g.acc) == g.rej,
            self.owe == count(list(live)),
            g.a_d >= 1 + g.c_valid,
            g.a_d <= D + 1,
            g.b_valid == (g.a_d <= D),
            ~g.b_valid | (g.b_d == (g.a_d - 1)[:db]),
            ~g.c_valid | (kind == TsOut.ACC.value),
            ~g.c_valid | (g.acc.bit_select(g.c_node, 1) & nv.bit_select(g.c_node, 1)),
            ~g.c_valid | (dep[g.c_node] == nd),
        ]
        p1 += [~live[n] | ((nd <= dep[n]) & (dep[n] < nd + self.owe)) for n in range(N)]
        p1 += [~(g.acc[n] & ~nv[n]) | (dep[n] < nd) for n in range(N)]
        p1 += [~(live[n] & live[j]) | (dep[n] != dep[j]) for n in range(N) for j in range(n + 1, N)]
        rowset = Array(st.rows)[cs].bit_select(g.b_d, 1)
        p1 += [~(g.b_valid & rowset) | (d.sr.data == rows[g.b_d])]
        self._chk(m, "p1", phase == 1, p1)
        # phase 2: the rejected nodes
        self._chk(
            m,
            "p2",
            phase == 2,
            [
                self.owe == 0,
                ~g.c_valid | (kind == TsOut.REJ.value),
                nv == (g.rej | Mux(g.c_valid, node1, 0)),
                ~g.c_valid | ~g.rej.bit_select(g.c_node, 1),
            ],
        )
        self._chk(
            m,
            "p3",
            phase == 3,
            [g.c_valid, kind == TsOut.END.value, nv == 0, self.owe == 0],
        )

    # ------------------------------------------------------------------ witnesses
    def _reached(self, m: Module, what: str) -> Value:
        """The state of :data:`REACH` ``what`` (its absence is asserted)."""
        d = self.dut
        out, c = d.out, d.cmd.payload
        kind = out.payload.kind.as_value()
        taken = out.valid & out.ready
        start = self.fire & ((c.kind == TsCmd.COMMIT) | (c.kind == TsCmd.RELEASE))
        if what == "stall":
            return out.valid & ~out.ready & (kind != TsOut.END.value)
        if what == "add_in_stream":
            return d.add.ok & d.busy
        # the ACC / REJ beats taken since the last COMMIT / RELEASE (saturating at 3)
        seen = Signal(2, name="fv_seen")
        rel = Signal(name="fv_rel")
        want = TsOut.ACC.value if what == "commit" else TsOut.REJ.value
        with m.If(start):
            m.d.sync += [seen.eq(0), rel.eq(c.kind == TsCmd.RELEASE)]
        with m.Elif(taken & (kind == want) & (seen != 3)):
            m.d.sync += seen.eq(seen + 1)
        if what == "commit":
            return out.valid & (kind == TsOut.REJ.value) & (seen == 2) & ~rel
        return out.valid & (kind == TsOut.END.value) & (seen == 2) & rel


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
    ``out/kvpool_ts_<name>/<task>/trace.vcd``.

    Raises
    ------
    ValueError
        An unknown task, variant or witness, or a parameter out of its range.
    """
    h = TreeSlotsFormal(variant=variant, reach=reach, **params)
    if depth is None:
        depth = PROVE_DEPTH if task == "prove" else BMC_DEPTH
    size = "_".join(f"{k}{v}" for k, v in sorted(params.items()))
    name = (f"reach_{reach}" if reach else variant) + (f"_{size}" if size else "")
    return solve(convert(h, h.ports()), out / f"kvpool_ts_{name}", task, depth)


def _weak() -> Answer:
    """T1-T3 without invariants 1-6: the induction stops with a counterexample."""
    o = run("prove", variant="weak")
    what = f"{LEAF.size({})}: T1-T3 alone: k-induction up to {o.steps}, {o.status}"
    return o, o.status == "UNKNOWN", what


#: the checks and the command line (:class:`formal.leaf.LeafChecks`)
LEAF = LeafChecks(
    module="formal.kvpool_ts",
    title="tree slots' stream contracts",
    doc=__doc__,
    config=CONFIG,
    run=run,
    unit="tree slots",
    props="T1-T3 (under S1-S3), invariants 1-6",
    negated="T3 with a beat's page claimed the shadow's XOR 1: refuted",
    unprotected="without S3 (the ancestor chain), a failure",
    reach=REACH,
    label="ts:",
    larger=LARGER,
    extra={"weak": _weak},
)
#: the checks of :func:`main`: the induction, ``weak``, the false property, the
#: unprotected run, the witnesses
CHECKS = LEAF.checks
build_parser, parse_args, main = LEAF.build_parser, LEAF.parse_args, LEAF.main

if __name__ == "__main__":
    sys.exit(main())
