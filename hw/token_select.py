"""One-pass token sampler (spec §3.12): the totals before the decision, one selection pass after."""

from amaranth import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import data, enum, fifo, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from hw.common import (
    Param,
    carry_out,
    check_params,
    csa_rows,
    encode,
    idx_bits,
    net,
    or_tree,
    prefix_add,
    priority_lowest,
    sign_of_sum,
    zext,
)
from hw.token_sampler import U_BITS, beat_layout, token_layout

__all__ = ["GROUP", "Phase", "TokenSelect", "sel_layout", "tot_layout"]

#: lanes summed together in the first stage (a group); a hit is found by group, then by lane
GROUP = 8


def tot_layout(lanes: int, weight_bits: int, n_nodes: int) -> data.StructLayout:
    """A totals beat: ``lanes`` weights of node ``node``, ``last`` on the node's final beat."""
    return data.StructLayout(
        {"node": idx_bits(n_nodes), "w": data.ArrayLayout(weight_bits, lanes), "last": 1}
    )


def sel_layout(n_nodes: int) -> data.StructLayout:
    """A selection beat: the decision's last node."""
    return data.StructLayout({"node": idx_bits(n_nodes)})


class Phase(enum.Enum, shape=3):
    """What the inputs are doing."""

    IDLE = 0  # between streams: a totals beat or a selection may come
    TOT = 1  # inside a node's totals stream
    TDROP = 2  # dropping the rest of a bad totals stream
    CHECK = 3  # a selection taken: its total read and checked
    SEL = 4  # taking the selection's weights
    END = 5  # the selection's last beat taken: waiting for the token
    WDROP = 6  # dropping the rest of a bad selection stream


class TokenSelect(wiring.Component):
    """One-pass token sampler: totals summed before the decision, one selection pass after.

    Contract: spec §3.12 (bit-exact with ``golden.sampler.select_one_pass``, and with
    ``golden.sampler.sample_weights`` when the two streams agree). Streams
    follow Appendix A (valid/ready; a struct payload is one vector).

    **Totals.** ``tot`` beats carry ``LANES`` weights of node ``node``; the
    node's last beat has ``last = 1``. Nodes come one at a time, in any order.
    At one beat per cycle the block sums each node's weights into ``T[node]``
    (a memory of ``N_NODES`` totals) and marks it valid; a later stream for the
    same node replaces its total.

    **Selection.** A ``sel`` beat names node ``l`` (the decision's last node).
    ``u`` is sampled when the beat is taken. ``sel`` is ready while no totals
    stream is open or in the pipeline, and ``tot`` is not valid: a totals beat
    on the bus goes first. Then ``w`` takes ``l``'s weights once, and ``o``
    gives the smallest ``v`` with ``w[0] + ... + w[v] > (u * T[l]) >> 32``. A
    selection that gives a token invalidates every total.

    Pipeline of a ``w`` or ``tot`` beat: ``S1`` sums each group of
    :data:`GROUP` lanes (resolved); ``S2`` either adds the beat to the node's
    running total, or compares every group's prefix sum with the remainder
    ``rem = (u * T) >> 32 - (weights so far)`` and takes the beat off ``rem``.
    The first beat with a hit goes on: ``S3`` takes the groups before the hit
    group off ``rem``, and ``S4`` finds the lane in the hit group. The token
    goes to a 2-entry output FIFO once the stream's last beat has passed
    ``S2``.

    Invalid input: one-cycle ``error`` pulse, nothing emitted, the stored
    totals unchanged.

    - A ``tot`` stream longer than ``2**TOKEN_BITS`` weights (more than
      ``ceil(2**TOKEN_BITS / LANES)`` beats, or a non-zero weight past index
      ``2**TOKEN_BITS - 1`` in the last allowed beat), or a ``tot`` node
      ``>= N_NODES``: that node's total is left as it was, and the rest of
      its stream is dropped.
    - A ``sel`` node with no valid total (``>= N_NODES`` included), or with
      ``T[l] = 0``: its ``w`` stream is dropped.
    - A ``w`` stream longer than ``2**TOKEN_BITS`` weights (the rest is
      dropped), or one whose weights never exceed the threshold. The totals
      stay valid.

    Latency: with ``N = ceil(V / LANES)``, ``sel`` taken at edge 0, ``w`` beats
    taken at edges ``2 .. N + 1`` at full speed, the token is taken from ``o``
    at edge ``N + 7``. ``error`` is high for the one cycle from edge ``e + 1``
    to ``e + 2`` (``e`` the edge that takes the offending beat or ``sel``), or,
    for a stream that selects nothing, from ``e + 2`` (``e`` its last beat's).

    Parameters
    ----------
    LANES : int
        Weights per beat, ``1 .. 128``, a power of two (default 64).
    WEIGHT_BITS : int
        Width of one weight, ``8 .. 32`` (default 16).
    TOKEN_BITS : int
        Width of a token, ``1 .. 17``: vocabularies up to ``2**TOKEN_BITS`` (default 17).
    N_NODES : int
        Totals stored (nodes of the largest tree), ``2 .. 1024`` (default 64).

    Members
    -------
    u : In(32)
        Lane 0's output, sampled when ``sel`` is taken.
    tot : In(stream.Signature(tot_layout(LANES, WEIGHT_BITS, N_NODES)))
    sel : In(stream.Signature(sel_layout(N_NODES)))
    w : In(stream.Signature(hw.token_sampler.beat_layout(LANES, WEIGHT_BITS)))
    o : Out(stream.Signature(hw.token_sampler.token_layout(TOKEN_BITS)))
    error : Out(1)
    """

    OUT_DEPTH = 2

    #: the block's parameters (:class:`hw.common.Param`: default, range, small value)
    PARAMS = {
        "LANES": Param(default=64, lo=1, hi=128, small=1),
        "WEIGHT_BITS": Param(default=16, lo=8, hi=32, small=8),
        "TOKEN_BITS": Param(default=17, lo=1, hi=17, small=4),
        "N_NODES": Param(default=64, lo=2, hi=1024, small=4),
    }

    def __init__(
        self,
        *,
        LANES: int = PARAMS["LANES"].default,
        WEIGHT_BITS: int = PARAMS["WEIGHT_BITS"].default,
        TOKEN_BITS: int = PARAMS["TOKEN_BITS"].default,
        N_NODES: int = PARAMS["N_NODES"].default,
    ) -> None:
        given = {"LANES": LANES, "WEIGHT_BITS": WEIGHT_BITS, "TOKEN_BITS": TOKEN_BITS}
        given["N_NODES"] = N_NODES
        p = check_params(self.PARAMS, given)
        if p["LANES"] & (p["LANES"] - 1):
            raise ValueError(f"LANES = {LANES!r}: must be a power of two in 1 .. 128")
        self.LANES, self.WEIGHT_BITS = p["LANES"], p["WEIGHT_BITS"]
        self.TOKEN_BITS, self.N_NODES = p["TOKEN_BITS"], p["N_NODES"]
        L, WB, TB = self.LANES, self.WEIGHT_BITS, self.TOKEN_BITS
        #: lanes per group and groups per beat
        self.G = min(L, GROUP)
        self.NG = L // self.G
        #: most beats in one stream
        self.MAX_BEATS = -(-(1 << TB) // L)
        #: width of a total (the largest valid one is ``2**TOKEN_BITS * (2**WEIGHT_BITS - 1)``)
        self.TOTAL_BITS = TB + WB
        #: width of a group's sum
        self.GROUP_BITS = (self.G * ((1 << WB) - 1)).bit_length()
        super().__init__(
            {
                "u": In(U_BITS),
                "tot": In(stream.Signature(tot_layout(L, WB, self.N_NODES))),
                "sel": In(stream.Signature(sel_layout(self.N_NODES))),
                "w": In(stream.Signature(beat_layout(L, WB))),
                "o": Out(stream.Signature(token_layout(TB))),
                "error": Out(1),
            }
        )

    def _too_long(self, m: Module, cnt: Value, w: list[Value], name: str) -> Value:
        """The beat ``cnt`` of a stream (weights ``w``) makes it longer than ``2**TOKEN_BITS``."""
        M, L, TB = self.MAX_BEATS, self.LANES, self.TOKEN_BITS
        bad = cnt == M
        if M * L > (1 << TB):  # lanes of beat M-1 past the vocabulary must be zero
            first_out = (1 << TB) - (M - 1) * L
            bad = bad | ((cnt == M - 1) & or_tree(Cat(*w[first_out:])))
        return net(m, bad, name)

    def elaborate(self, platform) -> Module:
        m = Module()
        s = _State(self, m)
        m.d.sync += self.error.eq(s.err)
        m.d.comb += [
            self.o.valid.eq(s.q.r_rdy),
            self.o.payload.eq(s.q.r_data),
            s.q.r_en.eq(self.o.ready),
        ]
        self._ready(m, s)
        self._take_tot(m, s)
        self._take_sel(m, s)
        self._take_w(m, s)
        self._group_sums(m, s)
        self._totals(m, s)
        self._remainder(m, s)
        self._lane(m, s)
        self._finish(m, s)
        return m

    def _ready(self, m: Module, s: "_State") -> None:
        """Which input is taken in which phase (``sel``: no totals beat on the bus or in
        the pipeline, and room for its token)."""
        with m.If(s.phase == Phase.IDLE):
            m.d.comb += [
                self.tot.ready.eq(1),
                self.sel.ready.eq(~self.tot.valid & ~s.inflight & s.q.w_rdy),
            ]
        with m.Elif((s.phase == Phase.TOT) | (s.phase == Phase.TDROP)):
            m.d.comb += self.tot.ready.eq(1)
        with m.Elif((s.phase == Phase.SEL) | (s.phase == Phase.WDROP)):
            m.d.comb += self.w.ready.eq(1)

    def _take_tot(self, m: Module, s: "_State") -> None:
        """S0 of a totals beat: into ``r1``, or an error and the rest of the stream dropped."""
        L, N = self.LANES, self.N_NODES
        tb_ = self.tot.payload
        tw = [tb_.w[j] for j in range(L)]
        bad = self._too_long(m, s.cnt, tw, "tot_long")
        if N < 1 << idx_bits(N):  # a node number past the memory
            bad = net(m, bad | (tb_.node >= N), "tot_bad")
        with m.If(self.tot.valid & self.tot.ready):
            with m.If(s.phase == Phase.TDROP):
                with m.If(tb_.last):
                    m.d.sync += s.phase.eq(Phase.IDLE)
            with m.Elif(bad):
                m.d.comb += s.err.eq(1)
                m.d.sync += [s.cnt.eq(0), s.phase.eq(Mux(tb_.last, Phase.IDLE, Phase.TDROP))]
            with m.Else():
                r1 = s.r1
                m.d.sync += [
                    r1.valid.eq(1),
                    r1.sel.eq(0),
                    r1.last.eq(tb_.last),
                    r1.node.eq(tb_.node),
                    r1.cnt.eq(s.cnt),  # 0: the stream's first beat (its total starts at 0)
                ]
                m.d.sync += [r1.w[j].eq(tw[j]) for j in range(L)]
                m.d.sync += [s.cnt.eq(Mux(tb_.last, 0, s.cnt + 1))]
                m.d.sync += s.phase.eq(Mux(tb_.last, Phase.IDLE, Phase.TOT))

    def _take_sel(self, m: Module, s: "_State") -> None:
        """A ``sel`` beat; ``CHECK``: its total valid and non-zero (else an error and its
        ``w`` stream dropped), and the total registered for the threshold."""
        with m.If(self.sel.valid & self.sel.ready):
            m.d.sync += [
                s.node.eq(self.sel.payload.node),
                s.u_reg.eq(self.u),
                s.phase.eq(Phase.CHECK),
            ]
        m.d.comb += s.t_rd.addr.eq(self.sel.payload.node)
        t_sel = s.t_rd.data
        m.d.sync += s.load_rem.eq(0)
        with m.If(s.phase == Phase.CHECK):
            with m.If(~s.valid.bit_select(s.node, 1) | ~or_tree(t_sel)):
                m.d.comb += s.err.eq(1)
                m.d.sync += s.phase.eq(Phase.WDROP)
            with m.Else():  # the total registered: its read is all of this cycle's path
                m.d.sync += [s.t_reg.eq(t_sel), s.load_rem.eq(1)]
                m.d.sync += [s.phase.eq(Phase.SEL), s.cnt.eq(0)]

    def _take_w(self, m: Module, s: "_State") -> None:
        """S0 of a selection beat: into ``r1``; a stream too long is an error that flushes
        the selection's pipeline (``kill``) and drops the rest of the stream."""
        L = self.LANES
        wb_ = self.w.payload
        ww = [wb_.w[j] for j in range(L)]
        bad = self._too_long(m, s.cnt, ww, "w_long")
        r1 = s.r1
        with m.If(self.w.valid & self.w.ready):
            with m.If(s.phase == Phase.WDROP):
                with m.If(wb_.last):
                    m.d.sync += [s.phase.eq(Phase.IDLE), s.cnt.eq(0)]
            with m.Elif(bad):
                m.d.comb += [s.err.eq(1), s.kill.eq(1)]
                m.d.sync += [s.cnt.eq(0), s.phase.eq(Mux(wb_.last, Phase.IDLE, Phase.WDROP))]
            with m.Else():
                m.d.sync += [r1.valid.eq(1), r1.sel.eq(1), r1.last.eq(wb_.last), r1.cnt.eq(s.cnt)]
                m.d.sync += [r1.w[j].eq(ww[j]) for j in range(L)]
                m.d.sync += s.cnt.eq(Mux(wb_.last, 0, s.cnt + 1))
                with m.If(wb_.last):
                    m.d.sync += s.phase.eq(Phase.END)

    def _group_sums(self, m: Module, s: "_State") -> None:
        """S1: ``r1`` into ``r2`` with the sum of each group of ``G`` lanes."""
        G, NG, GW = self.G, self.NG, self.GROUP_BITS
        r1, r2 = s.r1, s.r2
        m.d.sync += [r2.valid.eq(r1.valid & ~s.kill), r2.sel.eq(r1.sel), r2.last.eq(r1.last)]
        m.d.sync += [r2.node.eq(r1.node), r2.cnt.eq(r1.cnt)]
        m.d.sync += [r2.w[j].eq(r1.w[j]) for j in range(self.LANES)]
        for k in range(NG):
            grp = [r1.w[k * G + j] for j in range(G)]
            if G == 1:
                m.d.sync += s.g2[k].eq(grp[0])
            else:
                a, b = csa_rows(m, grp, GW, f"g{k}", keep=True)
                m.d.sync += s.g2[k].eq(prefix_add(m, a, b, GW, f"g{k}", keep=True))
        m.d.comb += s.inflight.eq((r1.valid & ~r1.sel) | (r2.valid & ~r2.sel))

    def _remainder(self, m: Module, s: "_State") -> None:
        """S2 of a selection beat: every group's prefix sum against ``rem``; the beat off
        ``rem``; every beat into ``r3`` until the first hit, which makes ``r3`` valid and
        freezes it (decision 0055); a stream that ends with no hit is an error."""
        NG, G, RW = self.NG, self.G, s.RW
        r2, g2, rem = s.r2, s.g2, s.rem
        self._threshold(m, s)
        m.d.sync += s.r3_valid.eq(0)
        hits = Signal(NG)
        for k in range(NG):
            rows = [rem, *(~zext(g2[i], RW) for i in range(k + 1)), Const(k + 1, RW)]
            a, b = csa_rows(m, rows, RW, f"h{k}", keep=True)
            m.d.comb += hits[k].eq(sign_of_sum(m, a, b, RW, f"h{k}", keep=True))
        rows = [rem, *(~zext(g2[i], RW) for i in range(NG)), Const(NG, RW)]
        a, b = csa_rows(m, rows, RW, "rem", keep=True)
        rem_next = prefix_add(m, a, b, RW, "rem", keep=True)
        # prefix sums never decrease, so the hits are 0 .. 0 1 .. 1: the first hit group is
        # one-hot as `hits & ~(hits << 1)` (an AND-OR select, no priority encoder), and a
        # hit anywhere hits the last group
        first_oh = net(m, hits & ~Cat(Const(0, 1), hits[:-1]), "first_oh")
        first = encode(m, first_oh, max(1, (NG - 1).bit_length()), "first")
        any_hit = hits[NG - 1]
        picks = [
            net(
                m,
                or_tree([Mux(first_oh[k], r2.w[k * G + j], 0) for k in range(NG)]),
                f"pick{j}",
            )
            for j in range(G)
        ]
        with m.If(r2.valid & r2.sel):
            m.d.sync += rem.eq(rem_next)
            # every beat until the hit loads r3 (S3 and S4 use it only with r3_valid):
            # the hit sets r3_valid, not the load enable of r3's ~400 flip-flops
            with m.If(~s.found):
                m.d.sync += [s.r3_rem.eq(rem), s.r3_f.eq(first), s.r3_cnt.eq(r2.cnt)]
                m.d.sync += [s.r3_g[k].eq(g2[k]) for k in range(NG)]
                m.d.sync += [s.r3_wg[j].eq(picks[j]) for j in range(G)]
            with m.If(any_hit & ~s.found):
                m.d.sync += [s.found.eq(1), s.r3_valid.eq(1)]
            with m.If(r2.last):
                m.d.sync += s.end_seen.eq(1)
                with m.If(~s.found & ~any_hit):  # the stream selected nothing
                    m.d.comb += [s.err.eq(1), s.miss.eq(1)]
                    m.d.sync += [s.phase.eq(Phase.IDLE), s.end_seen.eq(0)]

    def _lane(self, m: Module, s: "_State") -> None:
        """S3: the remainder before the hit group (``r4``); S4: the lane in the hit group,
        and the token."""
        NG, G, RW, TB = self.NG, self.G, s.RW, self.TOKEN_BITS
        m.d.sync += s.r4_valid.eq(s.r3_valid)
        before = [Mux(s.r3_f > i, ~zext(s.r3_g[i], RW), 0) for i in range(NG - 1)]
        a, b = csa_rows(m, [s.r3_rem, *before, zext(s.r3_f, RW)], RW, "rg", keep=True)
        m.d.sync += [s.r4_rem.eq(prefix_add(m, a, b, RW, "rg", keep=True)), s.r4_f.eq(s.r3_f)]
        m.d.sync += [s.r4_cnt.eq(s.r3_cnt), *(s.r4_wg[j].eq(s.r3_wg[j]) for j in range(G))]
        lane_hits = Signal(G)
        for j in range(G):
            rows = [s.r4_rem, *(~zext(s.r4_wg[i], RW) for i in range(j + 1)), Const(j + 1, RW)]
            a, b = csa_rows(m, rows, RW, f"l{j}", keep=True)
            m.d.comb += lane_hits[j].eq(sign_of_sum(m, a, b, RW, f"l{j}", keep=True))
        _, lane = priority_lowest(m, lane_hits)
        gb, lb = (NG - 1).bit_length(), (G - 1).bit_length()
        with m.If(s.r4_valid):
            index = Cat(lane[:lb], s.r4_f[:gb], s.r4_cnt)
            m.d.sync += [s.tok.eq(index[:TB]), s.tok_ready.eq(1)]

    def _finish(self, m: Module, s: "_State") -> None:
        """``END``: the token into the output FIFO, every total invalidated; a selection's
        pipeline state reset at its start, on ``kill`` and at its end."""
        q = s.q
        done = (s.phase == Phase.END) & s.end_seen & s.tok_ready
        m.d.comb += [q.w_data.eq(s.tok), q.w_en.eq(done & q.w_rdy)]
        with m.If(done & q.w_rdy):
            m.d.sync += [s.phase.eq(Phase.IDLE), s.valid.eq(0), s.end_seen.eq(0)]
        with m.If((s.phase == Phase.CHECK) | s.kill | (done & q.w_rdy) | s.miss):
            m.d.sync += [s.found.eq(0), s.tok_ready.eq(0)]
        with m.If(s.kill):
            m.d.sync += [s.r3_valid.eq(0), s.r4_valid.eq(0), s.end_seen.eq(0)]

    def _totals(self, m: Module, s: "_State") -> None:
        """S2 of a totals beat: the running total; at the node's last beat, ``T[node]``."""
        TW, r2, N = self.TOTAL_BITS, s.r2, self.N_NODES
        acc = Signal(TW)
        base = Mux(r2.cnt == 0, 0, acc)  # a stream dropped midway leaves no partial sum
        a, b = csa_rows(m, [base, *s.g2], TW, "acc", keep=True)
        acc_next = prefix_add(m, a, b, TW, "acc", keep=True)
        # the node's valid bit set through a one-hot OR: a write to `bit_select` becomes a
        # case over every node, deeper at 1,024 nodes (48 levels)
        node_oh = net(m, Cat(*[r2.node == k for k in range(N)]), "tot_node_oh")
        with m.If(r2.valid & ~r2.sel):
            with m.If(r2.last):
                m.d.sync += [acc.eq(0), s.valid.eq(s.valid | node_oh)]
                m.d.comb += [s.t_wr.addr.eq(r2.node), s.t_wr.data.eq(acc_next), s.t_wr.en.eq(1)]
            with m.Else():
                m.d.sync += acc.eq(acc_next)

    def _product(self, m: Module, u: Value, t: Value) -> tuple[Value, Value]:
        """``u * t`` as two carry-save rows (the 32 partial products of ``t``)."""
        TW = self.TOTAL_BITS
        pp = [Mux(u[k], t, 0) for k in range(U_BITS)]
        return csa_rows(m, pp, U_BITS + TW, "mul", shifts=list(range(U_BITS)), keep=True)

    def _threshold(self, m: Module, s: "_State") -> None:
        """``rem = (u * T) >> 32`` in two stages after the total is registered (``load_rem``:
        the product's two carry-save rows; the cycle after: the low half's carry into the
        high halves' sum, into ``rem``), ready for the selection's first beat in ``S2``."""
        TW = self.TOTAL_BITS
        load = Signal()
        m.d.sync += load.eq(s.load_rem)
        # nets built outside any `m.If` (a net assigned under a condition is gated by it),
        # their networks kept (else re-derived deeper)
        rows = self._product(m, s.u_reg, s.t_reg)
        low = carry_out(m, s.s_reg[:U_BITS], s.c_reg[:U_BITS], U_BITS, "thrlo", keep=True)
        hi = prefix_add(m, s.s_reg[U_BITS:], s.c_reg[U_BITS:], TW, "thrhi", cin=low, keep=True)
        with m.If(s.load_rem):
            m.d.sync += [s.s_reg.eq(rows[0]), s.c_reg.eq(rows[1])]
        with m.If(load):
            m.d.sync += s.rem.eq(zext(hi, s.RW))


class _Beat:
    """A pipeline stage's beat registers (``<prefix>_valid``, ``_sel``, ``_w<j>``, ...)."""

    def __init__(self, lanes: int, weight_bits: int, node_bits: int, cnt_bits: int, p: str):
        self.valid = Signal(name=f"{p}_valid")
        self.sel = Signal(name=f"{p}_sel")  # a selection beat (else a totals beat)
        self.last = Signal(name=f"{p}_last")
        self.node = Signal(node_bits, name=f"{p}_node")
        self.cnt = Signal(cnt_bits, name=f"{p}_cnt")
        self.w = [Signal(weight_bits, name=f"{p}_w{j}") for j in range(lanes)]


class _State:
    """The block's storage and the registers its stages share (:meth:`TokenSelect.elaborate`)."""

    def __init__(self, blk: TokenSelect, m: Module) -> None:
        L, WB, TB, N = blk.LANES, blk.WEIGHT_BITS, blk.TOKEN_BITS, blk.N_NODES
        G, NG, TW, GW = blk.G, blk.NG, blk.TOTAL_BITS, blk.GROUP_BITS
        B, CB = idx_bits(N), idx_bits(blk.MAX_BEATS + 1)
        m.submodules.out = self.q = fifo.SyncFIFO(width=TB, depth=blk.OUT_DEPTH)
        m.submodules.totals = tmem = memory.Memory(shape=TW, depth=N, init=[])
        self.t_wr, self.t_rd = tmem.write_port(), tmem.read_port(domain="sync")
        self.valid = Signal(N)  # T[a] is valid
        self.phase = Signal(Phase)
        self.err = Signal()  # pulsed on `error` next cycle
        self.kill = Signal()  # a selection stream too long: flush its pipeline
        self.miss = Signal()  # a selection stream that selected nothing
        self.cnt = Signal(CB)  # beats taken of the current stream
        self.node = Signal(B)  # the selection's node
        self.u_reg = Signal(U_BITS)
        self.t_reg = Signal(TW)  # the selection's total, registered after the read
        self.s_reg, self.c_reg = Signal(U_BITS + TW), Signal(U_BITS + TW)  # u * T, two rows
        self.load_rem = Signal()
        self.inflight = Signal()  # a totals beat in S1 or S2
        self.r1 = _Beat(L, WB, B, CB, "r1")
        m.d.sync += self.r1.valid.eq(0)  # a beat stays one cycle unless S0 takes another
        self.r2 = _Beat(L, WB, B, CB, "r2")
        self.g2 = [Signal(GW, name=f"r2_g{k}") for k in range(NG)]
        self.RW = RW = TW + 2  # signed: holds rem - (a beat's prefix) and the threshold
        self.rem = Signal(RW)
        self.found = Signal()  # the hit beat has passed S2
        self.end_seen = Signal()  # the selection's last beat has passed S2
        self.r3_valid, self.r3_rem = Signal(), Signal(RW)
        self.r3_g = [Signal(GW, name=f"r3_g{k}") for k in range(NG)]
        self.r3_f, self.r3_cnt = Signal(range(NG)), Signal(CB)
        self.r3_wg = [Signal(WB, name=f"r3_wg{j}") for j in range(G)]
        self.r4_valid, self.r4_rem = Signal(), Signal(RW)
        self.r4_f, self.r4_cnt = Signal(range(NG)), Signal(CB)
        self.r4_wg = [Signal(WB, name=f"r4_wg{j}") for j in range(G)]
        self.tok, self.tok_ready = Signal(TB), Signal()
