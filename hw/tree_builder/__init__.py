"""Tree builder (SPEC §3.6 - §3.9): top-K per node, then a static or a dynamic tree.

The block (:class:`TreeBuilder`) puts one top-K unit (:class:`hw.topk.TopK`)
between its ``dist`` input and two engines, one per mode, each in its own
module: :class:`~hw.tree_builder.static.StaticBuilder` (SPEC §3.8, a shape
filled with top-K entries) and :class:`~hw.tree_builder.dynamic.DynamicBuilder`
(SPEC §3.9, EAGLE-2's expansion and rerank, with two
:class:`~hw.tree_builder.sorted_list.SortedList` s). Layouts and the
confidence product: :mod:`hw.tree_builder.common`. Design notes:
``docs/blocks/tree_builder.md``.
"""

from amaranth import Const, Module, Mux, Signal, Value
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import bits_for

from hw.common import Param, check_params, check_target, idx_bits, less_than, net
from hw.topk import TopK
from hw.tree_builder.common import (
    K_BITS,
    K_MAX,
    MODE_DYNAMIC,
    MODE_STATIC,
    W_MAX,
    cfg_layout,
    dist_layout,
    mul,
    out_layout,
    req_layout,
    result_layout,
)
from hw.tree_builder.dynamic import DynamicBuilder
from hw.tree_builder.sorted_list import SortedList
from hw.tree_builder.static import StaticBuilder
from hw.tree_mask_gen import parent_layout

__all__ = [
    "K_MAX",
    "W_MAX",
    "MODE_STATIC",
    "MODE_DYNAMIC",
    "TreeBuilder",
    "StaticBuilder",
    "DynamicBuilder",
    "SortedList",
    "cfg_layout",
    "dist_layout",
    "req_layout",
    "out_layout",
    "parent_layout",
    "result_layout",
    "worst_candidates",
]


def worst_candidates(m: int, d: int, k: int, w: int) -> int:
    """Most candidates a dynamic build can create, root included:
    ``1 + K * (1 + W * (min(D, M - 1) - 1))`` (1 when ``M = 1``)."""
    r = min(d, m - 1)
    return 1 if r < 1 else 1 + k * (1 + w * (r - 1))


class TreeBuilder(wiring.Component):
    """Tree builder: a static (shaped) or dynamic (EAGLE-2) draft tree from top-K results.

    **Protocol.** A tree starts with one beat on ``cfg``: ``mode``
    (:data:`MODE_STATIC` or :data:`MODE_DYNAMIC`), ``k`` (SPEC §3.6) and, in
    dynamic mode, the budget ``m``, the rounds ``d`` and the width ``w``
    (SPEC §3.9). In static mode the shape follows on ``shape`` in the mask
    generator's format (``hw.tree_mask_gen.parent_layout``: parents of nodes
    ``1 .. n-1``, then an ``end`` beat), as the topology optimiser emits it.
    The block then asks for distributions on ``req``: ``{node, parent,
    token}``, where ``path(node) = path(parent) + [token]`` (the root's
    request, the first, is all zero); static mode: shape indices, every
    surviving node with children in node order, a node's request issued once
    its parent's top-K result is in; dynamic mode: candidate indices (creation
    order, root 0), each round's frontier in frontier order. The draft side
    answers every request, in request order, with the node's quantised draft
    distribution on ``dist`` (SPEC §3.6: ``LANES`` per beat in token order,
    ``last`` on the final beat); ``dist`` is ready only while a request is
    unanswered. The built tree leaves on ``o``: nodes ``1 .. n-1`` in order
    (``{parent, end=0, token, q, conf}``, renumbered, SPEC §3.8 / §3.9; the
    low bits ``{parent, end}`` are the mask generator's input beat), then one
    ``end`` beat (a lone ``end`` beat is the root-only tree). ``busy`` is high
    from the ``cfg`` beat until the tree's ``end`` beat is taken (or the tree
    is dropped); the next ``cfg`` beat is taken after that. Bit-exact with
    ``golden.topk.build_static`` and ``golden.dynamic.build_dynamic``.

    **Invalid input** (a one-cycle ``error`` pulse, one per tree; nothing is
    emitted for the tree, the next tree is built normally): a ``cfg`` field
    out of range (``k`` 0 or above 16; dynamic mode: ``m`` outside
    ``1 .. N_NODES``, ``d`` outside ``1 .. N_NODES - 1``, ``w`` 0 or above 16,
    or :func:`worst_candidates` above ``C_MAX``): in static mode the tree's
    shape is dropped up to its ``end`` beat; a shape with a parent ``>=`` its
    node, more than ``N_NODES`` nodes, or a node of rank ``>= k``: the rest of
    the shape is dropped; a top-K error on a distribution (longer than
    ``2**TOKEN_BITS`` tokens, :class:`hw.topk.TopK`): no further request is
    issued and the distributions of the requests already issued are taken
    and dropped.

    **Latency** (measured by ``tb/test_tree_builder.py``, no stalls): static
    mode, the ``end`` beat at most ``n + 4`` cycles after the last
    distribution beat is taken; dynamic mode, at most ``C + M + 8`` (``C``
    candidates created). Design: ``docs/blocks/tree_builder.md``.

    Parameters
    ----------
    N_NODES : int
        Largest tree, and largest budget ``M``, ``4 .. 1024`` (SPEC §5, default 64).
    LANES : int
        Probabilities per ``dist`` beat, ``1 .. 16`` (default 4).
    TOKEN_BITS : int
        Width of a token, ``1 .. 17`` (SPEC §5, default 17).
    PROB_BITS : int
        Width of a quantised probability, ``8 .. 32`` (SPEC §5, default 16).
    CONF_BITS : int
        Width of a confidence, ``8 .. 64`` and at least ``PROB_BITS`` (SPEC §3.7,
        default 32).
    C_MAX : int
        Candidates a dynamic build may create, root included, ``17 .. 4096``
        (default 512): the candidate table's size.
    TARGET : str
        ``"asic"`` (default): every product a carry-save tree of gates with a
        parallel-prefix adder (:func:`~hw.tree_builder.common.mul`).
        ``"fpga"``: the same pipeline, cycle for cycle, with every product
        Amaranth's ``*``, for FPGA multiplier blocks.

    Members
    -------
    cfg : In(stream.Signature(cfg_layout(N_NODES)))
        One beat per tree.
    shape : In(stream.Signature(parent_layout(N_NODES)))
        Static mode: the shape.
    dist : In(stream.Signature(dist_layout(LANES, PROB_BITS)))
        Distributions, one per request.
    req : Out(stream.Signature(req_layout(max(idx_bits(N_NODES), idx_bits(C_MAX)), TOKEN_BITS)))
        Requests for distributions.
    o : Out(stream.Signature(out_layout(N_NODES, TOKEN_BITS, PROB_BITS, CONF_BITS)))
        The built tree.
    error : Out(1)
        One-cycle pulse per invalid tree.
    busy : Out(1)
        A tree is in progress.
    """

    #: the block's parameters (:class:`hw.common.Param`: default, range, small value)
    PARAMS = {
        "N_NODES": Param(default=64, lo=4, hi=1024, small=4),
        "LANES": Param(default=4, lo=1, hi=16, small=2),
        "TOKEN_BITS": Param(default=17, lo=1, hi=17, small=4),
        "PROB_BITS": Param(default=16, lo=8, hi=32, small=8),
        "CONF_BITS": Param(default=32, lo=8, hi=64, small=8),
        "C_MAX": Param(default=512, lo=17, hi=4096, small=17),
    }

    def __init__(
        self,
        *,
        N_NODES: int = PARAMS["N_NODES"].default,
        LANES: int = PARAMS["LANES"].default,
        TOKEN_BITS: int = PARAMS["TOKEN_BITS"].default,
        PROB_BITS: int = PARAMS["PROB_BITS"].default,
        CONF_BITS: int = PARAMS["CONF_BITS"].default,
        C_MAX: int = PARAMS["C_MAX"].default,
        TARGET: str = "asic",
    ) -> None:
        self.TARGET = check_target(TARGET)
        given = {
            "N_NODES": N_NODES,
            "LANES": LANES,
            "TOKEN_BITS": TOKEN_BITS,
            "PROB_BITS": PROB_BITS,
            "CONF_BITS": CONF_BITS,
            "C_MAX": C_MAX,
        }
        p = check_params(self.PARAMS, given)
        if p["CONF_BITS"] < p["PROB_BITS"]:
            raise ValueError(
                f"CONF_BITS = {CONF_BITS!r}: must be an integer in "
                f"PROB_BITS ({p['PROB_BITS']}) .. 64"
            )
        self.N_NODES, self.LANES, self.TOKEN_BITS, self.PROB_BITS, self.CONF_BITS, self.C_MAX = (
            p[k] for k in given
        )
        #: width of a request's ``node`` and ``parent`` (shape or candidate index)
        self.REQ_BITS = max(idx_bits(self.N_NODES), idx_bits(self.C_MAX))
        super().__init__(
            {
                "cfg": In(stream.Signature(cfg_layout(self.N_NODES))),
                "shape": In(stream.Signature(parent_layout(self.N_NODES))),
                "dist": In(stream.Signature(dist_layout(self.LANES, self.PROB_BITS))),
                "req": Out(stream.Signature(req_layout(self.REQ_BITS, self.TOKEN_BITS))),
                "o": Out(
                    stream.Signature(
                        out_layout(self.N_NODES, self.TOKEN_BITS, self.PROB_BITS, self.CONF_BITS)
                    )
                ),
                "error": Out(1),
                "busy": Out(1),
            }
        )

    def elaborate(self, platform) -> Module:
        m = Module()
        N, TB, PB, CW = self.N_NODES, self.TOKEN_BITS, self.PROB_BITS, self.CONF_BITS
        MB = bits_for(N)
        m.submodules.topk = topk = TopK(LANES=self.LANES, TOKEN_BITS=TB, PROB_BITS=PB)
        fpga = self.TARGET == "fpga"
        m.submodules.static = st = StaticBuilder(
            N_NODES=N, TOKEN_BITS=TB, PROB_BITS=PB, CONF_BITS=CW, fpga=fpga
        )
        m.submodules.dynamic = dy = DynamicBuilder(
            N_NODES=N, TOKEN_BITS=TB, PROB_BITS=PB, CONF_BITS=CW, C_MAX=self.C_MAX, fpga=fpga
        )

        # ------------------------------------------------------------------ cfg
        IDLE, CHK0, CHK1, CHK2, CHK3, CHK4, START, RUN, DROP = range(9)
        tphase = Signal(range(9))
        mode = Signal()
        k = Signal(K_BITS)
        mm = Signal(MB)
        dd = Signal(MB)
        ww = Signal(K_BITS)
        ok = Signal()  # the fields are in range
        r_zero = Signal()  # min(d, m - 1) = 0: one candidate, the root
        r1 = Signal(MB)  # min(d, m - 1) - 1
        P1 = K_BITS + MB
        P2 = K_BITS + P1 + 1
        p1 = Signal(P2)  # w * r1, then w * r1 + 1
        p2 = Signal(P2)  # k * (1 + w * r1): the worst-case candidates, root excluded
        cfg_err = Signal()
        m.d.sync += cfg_err.eq(0)
        m.d.comb += self.cfg.ready.eq(tphase == IDLE)
        c = self.cfg.payload
        with m.If(self.cfg.valid & self.cfg.ready):
            m.d.sync += [
                mode.eq(c.mode),
                k.eq(c.k),
                mm.eq(c.m),
                dd.eq(c.d),
                ww.eq(c.w),
                tphase.eq(CHK0),
            ]

        def in_range(v: Value, lo: int, hi: int) -> Value:
            return (v >= lo) & (v <= hi)

        mm1 = Signal(MB)
        m.d.comb += mm1.eq(mm - 1)
        rr = Mux(dd < mm1, dd, mm1)
        dyn_ok = in_range(mm, 1, N) & in_range(dd, 1, N - 1) & in_range(ww, 1, W_MAX)
        # the checks, one step a cycle (the configuration is not on a fast path)
        with m.Switch(tphase):
            with m.Case(CHK0):
                m.d.sync += [
                    ok.eq(in_range(k, 1, K_MAX) & ((mode == MODE_STATIC) | dyn_ok)),
                    r_zero.eq(rr == 0),
                    r1.eq(rr - 1),
                    tphase.eq(CHK1),
                ]
            with m.Case(CHK1):
                m.d.sync += [p1.eq(mul(m, r1, ww, P1, "chk_w", fpga=fpga)), tphase.eq(CHK2)]
            with m.Case(CHK2):
                m.d.sync += [p1.eq(p1 + 1), tphase.eq(CHK3)]
            with m.Case(CHK3):
                m.d.sync += [p2.eq(mul(m, p1, k, P2, "chk_k", fpga=fpga)), tphase.eq(CHK4)]
            with m.Case(CHK4):
                fits = less_than(m, p2, Const(self.C_MAX, P2), "chk_fits")
                bound_ok = (mode == MODE_STATIC) | r_zero | fits
                with m.If(ok & bound_ok):
                    m.d.sync += tphase.eq(START)
                with m.Else():
                    m.d.sync += [cfg_err.eq(1), tphase.eq(Mux(mode == MODE_STATIC, DROP, IDLE))]
            with m.Case(START):
                m.d.sync += tphase.eq(RUN)
            with m.Case(RUN):
                with m.If(~st.busy & ~dy.busy):
                    m.d.sync += tphase.eq(IDLE)
            with m.Case(DROP):
                with m.If(self.shape.valid & self.shape.payload.end):
                    m.d.sync += tphase.eq(IDLE)

        static = mode == MODE_STATIC
        m.d.comb += [
            st.start.eq((tphase == START) & static),
            st.k.eq(k),
            dy.start.eq((tphase == START) & ~static),
            dy.m.eq(mm),
            dy.d.eq(dd),
            dy.w.eq(ww),
            self.busy.eq(tphase != IDLE),
            self.error.eq(cfg_err | st.error | dy.error),
        ]

        # ------------------------------------------------------------------ shape
        m.d.comb += [
            st.shape.payload.eq(self.shape.payload),
            st.shape.valid.eq(self.shape.valid & (tphase != DROP)),
            self.shape.ready.eq((tphase == DROP) | st.shape.ready),
        ]

        # ------------------------------------------------------------------ requests, dist
        m.d.comb += [
            self.req.valid.eq(Mux(static, st.req.valid, dy.req.valid)),
            st.req.ready.eq(self.req.ready & static),
            dy.req.ready.eq(self.req.ready & ~static),
        ]
        for f in ("node", "parent", "token"):  # field by field: the index widths differ
            m.d.comb += self.req.payload[f].eq(Mux(static, st.req.payload[f], dy.req.payload[f]))
        # distributions are taken only while a request is unanswered
        pending = Signal(bits_for(max(N, W_MAX)) + 1)
        up = self.req.valid & self.req.ready
        down = self.dist.valid & self.dist.ready & self.dist.payload.last
        m.d.sync += pending.eq(pending + up - down)
        open_ = net(m, pending != 0, "dist_open")
        m.d.comb += [
            topk.i.valid.eq(self.dist.valid & open_),
            self.dist.ready.eq(topk.i.ready & open_),
            topk.i.payload.q.eq(self.dist.payload.q),
            topk.i.payload.k.eq(k),
            topk.i.payload.last.eq(self.dist.payload.last),
        ]

        # ------------------------------------------------------------------ results, tree
        m.d.comb += [
            st.res.payload.eq(topk.o.payload),
            dy.res.payload.eq(topk.o.payload),
            st.res.valid.eq(topk.o.valid & static),
            dy.res.valid.eq(topk.o.valid & ~static),
            topk.o.ready.eq(Mux(static, st.res.ready, dy.res.ready)),
            st.res_err.eq(topk.error & static),
            dy.res_err.eq(topk.error & ~static),
            self.o.valid.eq(Mux(static, st.o.valid, dy.o.valid)),
            st.o.ready.eq(self.o.ready & static),
            dy.o.ready.eq(self.o.ready & ~static),
        ]
        with m.If(static):
            m.d.comb += self.o.payload.eq(st.o.payload)
        with m.Else():
            m.d.comb += self.o.payload.eq(dy.o.payload)
        return m
