"""Token tree manager (SPEC §1 - §3): the tree builder, the topology optimiser and the
verify path (mask generator -> acceptance sampler -> token sampler) wired as the chip uses them.

Modules: :mod:`~hw.tree_manager.verify` (the verify path, external trees'
protocol), :mod:`~hw.tree_manager.hold` (the built tree held for the
verifier's ``pq`` join), :mod:`~hw.tree_manager.arbiter` (the verify path's
two sources), :mod:`~hw.tree_manager.packet` (the optimiser's step packets)
and :mod:`~hw.tree_manager.shapes` (the optimiser's shapes to the builder).
Design notes: ``docs/blocks/tree_manager.md``.
"""

from amaranth import Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import bits_for

from checks import power_of_two
from hw.accept_sampler import AcceptSampler
from hw.common import Param, check_params, merge_params, pick
from hw.rng_lanes import RngLanes
from hw.token_sampler import TokenSampler
from hw.topology_optimiser import TopologyOptimiser, step_layout
from hw.topology_optimiser import cfg_layout as opt_cfg_layout
from hw.tree_builder import (
    MODE_STATIC,
    TreeBuilder,
    cfg_layout,
    dist_layout,
    out_layout,
    req_layout,
)
from hw.tree_manager.arbiter import Arbiter
from hw.tree_manager.hold import BUILD, FREE, HoldBuffer, pq_layout
from hw.tree_manager.packet import StepPacket
from hw.tree_manager.shapes import ShapeFeed
from hw.tree_manager.verify import VerifyPath, draft_layout
from hw.tree_mask_gen import TreeMaskGen, parent_layout, row_layout

__all__ = [
    "TreeManager",
    "draft_layout",
    "error_layout",
    "bcfg_layout",
    "pq_layout",
    "check_select_lanes",
]


def bcfg_layout(n_nodes: int) -> data.StructLayout:
    """A ``bcfg`` beat: the tree builder's :func:`hw.tree_builder.cfg_layout` (``mode``,
    ``k``, ``m``, ``d``, ``w``) and ``opt`` (static mode: the shape is the topology
    optimiser's, else the ``shape`` port's)."""
    return data.StructLayout({**{n: f.shape for n, f in cfg_layout(n_nodes)}, "opt": 1})


#: the one-cycle error pulses, one per block (``build``: the tree builder, ``opt``:
#: the topology optimiser)
error_layout = data.StructLayout(
    {"mask": 1, "accept": 1, "token": 1, "rng": 1, "build": 1, "opt": 1}
)

#: the topology optimiser's parameters but ``N_MAX`` (the tree manager's ``N_NODES``)
_OPT_PARAMS = {k: v for k, v in TopologyOptimiser.PARAMS.items() if k != "N_MAX"}

#: the extra token's sampler: 0, the two-pass token sampler (SPEC §3.5, ``LANES`` weights
#: a beat); a power of two, the one-pass token select (spec §3.12) with that many lanes
_SELECT = {"SELECT_LANES": Param(default=0, lo=0, hi=128, small=0)}


def check_select_lanes(value: int, name: str = "SELECT_LANES") -> int:
    """``value`` if it is 0 or a power of two up to 128, else ``ValueError`` quoting it
    under ``name`` (the co-simulation's and the chip model's lower-case ``select_lanes``)."""
    return power_of_two(name, value, 128, zero="two-pass sampler")


class TreeManager(wiring.Component):
    """Token tree manager: trees built (or given), verified, decided; the optimiser fed.

    **Two tree sources, one verify path.** A tree reaches the verify path
    (:class:`hw.tree_manager.verify.VerifyPath`) either on ``i``, as a draft
    tree of the caller's (nodes ``1 .. n-1`` in order with parent, token and
    the verifier's ``pt``, ``qt``, then an ``end`` beat), or from the tree
    builder through the hold buffer. A locked arbiter passes one tree at a
    time: the source whose first beat is taken keeps the path until its
    ``end`` beat (the held tree wins a tie). On the path the mask generator
    turns parents into mask rows; each row is joined with its node's data and
    loaded into the acceptance sampler (uniforms ``out[i] >> (32 -
    RAND_BITS)`` of the RNG lanes); ``result`` (``last``, ``path_mask``,
    ``accepted``) and ``tokens`` (the accepted draft tokens in depth order)
    come out; the verifier streams the residual weights of ``last`` twice on
    ``w`` and the token sampler draws the extra token on ``extra`` with lane
    0's full output. With ``SELECT_LANES > 0`` the one-pass token select
    draws it instead (spec §3.12): before the decision the verifier streams
    each node's residual on ``tot`` (the node's totals; every node the
    decision may end at), the ``result`` beat taken selects ``last`` at the
    next edge (the next ``result`` waits until that selection is taken), and
    the verifier streams ``last``'s residual once on ``w``. ``advance`` (one
    cycle, after a ``seed`` once) steps every lane; it must not be raised
    between a tree's first beat on the verify path and the extra token of
    that step. ``rows`` mirrors the mask rows the
    sampler loads and must be taken (tie ``rows.ready`` high if unused).

    **Built trees.** One ``bcfg`` beat per tree (:func:`bcfg_layout`). It is
    taken when the hold buffer is free (no built tree held whose
    verification has not yet been joined and sent down the verify path), the
    builder takes it, and, for a static ``opt = 1`` tree, no step packet is
    owed (below). Static mode takes its shape from the topology optimiser
    (``opt = 1``) or from ``shape`` (``opt = 0``, the tree builder's format);
    dynamic mode ignores ``opt``. The builder's requests and distributions
    are ``req`` and ``dist`` (:class:`hw.tree_builder.TreeBuilder`'s
    protocol). The built tree leaves on ``tree`` (nodes ``1 .. n-1``, then an
    end beat) and, through a second mask generator, as its mask rows on
    ``vrows`` (node 0 first, SPEC §2), so that the verifier has its
    tree-attention masks before it computes ``pt``/``qt``; both must be taken
    (either one's backpressure stalls the builder). As each node leaves it is
    written into the hold buffer (parent, token) and, for a static ``opt =
    1`` tree, its sibling rank and its parent's child count are updated.
    Once the end beat has left, the tree is held.

    **Join.** The verifier answers with exactly one ``pq`` beat per node ``1 ..
    n-1`` of the held tree, in node order, no end beat (``pq.ready`` is low
    while no tree is held). Each beat is joined with the held node's parent
    and token and goes down the verify path as a draft beat in the same
    cycle; after the ``n-1``-th beat (at once for a root-only tree) the join
    sends the end beat, and the hold buffer is free again.

    **Step packets.** When the ``result`` beat of a static ``opt = 1`` tree is
    taken, the block sends the optimiser one step packet
    (:func:`hw.topology_optimiser.step_layout`): for each node ``j`` of
    ``path_mask``, ascending, ``{rank[j], kids[j], last: j == result.last}``
    with the built tree's counts (``golden.trees._count_record``'s). Dynamic
    trees, static ``opt = 0`` trees and trees on ``i`` send none. While such a
    packet is owed (from the tree's ``bcfg`` beat until its last beat is taken
    by the optimiser), the next static ``opt = 1`` ``bcfg`` beat waits: the
    counts of one tree are kept. The optimiser's shapes go through a
    ``N_NODES``-beat FIFO to the builder, for static ``opt = 1`` trees only (a
    shape not yet used waits there).

    **Optimiser configuration.** ``ocfg`` is the optimiser's ``cfg``. A valid
    configuration restarts the loop: the shapes emitted before it and not
    yet taken by the builder are dropped (the next ``opt = 1`` tree is built
    on the new configuration's first shape), and the packet of an ``opt = 1``
    tree built on an earlier shape is not sent.

    **Status.** ``opt_mode``, ``opt_budget``, ``opt_expected``: the optimiser's
    ``mode``, ``budget``, ``expected``. ``opt_busy``: the optimiser checks a
    configuration, counts a packet, solves or emits a shape not yet in the
    shape FIFO, or a packet is being sent (low: its next shape is ready).
    ``build_busy``: the builder's ``busy``.

    **Invalid input.** ``error`` pulses each block's error for one cycle.
    Recovered: the RNG lanes' and the token sampler's (a refused ``advance``
    changes nothing; an invalid draw is dropped); the builder's (``error.build``:
    nothing is emitted for the tree, the hold buffer is free again; a refused
    static ``opt = 1`` configuration beat leaves the optimiser's shape for the
    next ``opt = 1`` tree); the optimiser's (``error.opt``: nothing changes).
    Not recovered: a static ``opt = 1`` tree refused after taking its shape
    (a rank ``>= k``, which ``k >= R`` avoids; a top-K error) drops that
    shape, so the next ``opt = 1`` tree (and every tree after it) waits for
    the next valid ``ocfg``; an
    invalid tree on ``i`` (``error.mask``: a parent ``>=`` its node, more than
    ``N_NODES`` nodes) leaves stale node data and rows in the verify path and
    its tag without a result: reset the block after ``error.mask``. ``pq``
    beats beyond the held tree's nodes are not taken (the next tree's).

    **Latency.** The blocks' own (their docstrings), plus: the join adds no
    cycle (a ``pq`` beat is on the verify path in the cycle it is taken, as a
    beat on ``i`` is); the root's step-packet beat is valid the cycle after
    the ``result`` beat is taken, the others one per cycle; the optimiser's
    next shape (no re-solve) is at the builder's input two cycles after it
    leaves the optimiser (the shape FIFO's registered output). Measured by
    ``tb/test_tree_manager.py``; design rationale: ``docs/blocks/tree_manager.md``.

    **Taps.** The attribute ``taps`` names nets that are not ports, for a
    testbench (``tb/test_tree_manager.py`` makes them visible): the step
    packets (``tap_step_valid``, ``tap_step_ready``, ``tap_step``) and the
    optimiser's shapes (``tap_oshape_valid``, ``tap_oshape_ready``,
    ``tap_oshape``).

    Parameters
    ----------
    N_NODES, TOKEN_BITS, PROB_BITS, RAND_BITS, WEIGHT_BITS, LANES : int
        As in the blocks (SPEC §5); ``N_NODES`` (4 .. 1024) is also the
        optimiser's ``N_MAX``. ``LANES`` is
        both the token sampler's weights and the builder's probabilities per
        beat.
    SELECT_LANES : int
        ``0 .. 128``, default 0. 0: the two-pass token sampler draws the extra
        token (SPEC §3.5, ``LANES`` weights a beat, the small configuration).
        A power of two: the one-pass token select with that many weights a
        beat (:class:`hw.token_select.TokenSelect`, spec §3.12; from the
        ``result`` beat taken to the extra token at most
        ``ceil(V / SELECT_LANES) + 8`` cycles).
    CONF_BITS, C_MAX : int
        The tree builder's (:class:`hw.tree_builder.TreeBuilder`).
    D_MAX, R, ACC_BITS, NB, WIN : int
        The topology optimiser's (:class:`hw.topology_optimiser.TopologyOptimiser`).

    Members
    -------
    seed : In(stream.Signature(64))
    busy : Out(1)
    advance : In(1)
    i : In(stream.Signature(draft_layout(...)))
    rows : Out(stream.Signature(tree_mask_gen.row_layout(N_NODES)))
    result, tokens : Out(stream.Signature(...)) of the acceptance sampler
    tot : In(stream.Signature(token_select.tot_layout(SELECT_LANES, WEIGHT_BITS, N_NODES)))
        Only with ``SELECT_LANES > 0``: each node's totals, before the decision.
    w : In(stream.Signature(...)) of the token sampler (``LANES`` weights) or select
    extra : Out(stream.Signature(...)) of the token sampler or select
    bcfg : In(stream.Signature(bcfg_layout(N_NODES)))
    shape : In(stream.Signature(tree_mask_gen.parent_layout(N_NODES)))
    req, dist : Out / In(stream.Signature(...)) of the tree builder
    tree : Out(stream.Signature(tree_builder.out_layout(...)))
    vrows : Out(stream.Signature(tree_mask_gen.row_layout(N_NODES)))
    pq : In(stream.Signature(pq_layout(PROB_BITS)))
    ocfg : In(stream.Signature(topology_optimiser.cfg_layout(N_NODES, D_MAX, R, ACC_BITS, NB)))
    opt_mode, opt_busy, build_busy : Out(1)
    opt_budget : Out(bits_for(N_NODES))
    opt_expected : Out(ACC_BITS + bits_for(N_NODES))
    error : Out(error_layout)
        One-cycle error pulses of each block.
    """

    #: the blocks' parameters, a shared name accepting what every block accepts
    PARAMS = merge_params(
        TreeMaskGen.PARAMS,
        RngLanes.PARAMS,
        AcceptSampler.PARAMS,
        TokenSampler.PARAMS,
        TreeBuilder.PARAMS,
        _OPT_PARAMS,
        _SELECT,
    )

    def __init__(self, **params: int) -> None:
        # check everything before building any block (no half-built blocks left over)
        p = check_params(self.PARAMS, params)
        if p["CONF_BITS"] < p["PROB_BITS"]:
            raise ValueError(
                f"CONF_BITS = {p['CONF_BITS']!r}: must be an integer in "
                f"PROB_BITS ({p['PROB_BITS']}) .. 64"
            )
        check_select_lanes(p["SELECT_LANES"])
        for name, value in p.items():
            setattr(self, name, value)
        N, TB, PB = p["N_NODES"], p["TOKEN_BITS"], p["PROB_BITS"]
        self.verify = VerifyPath(p)
        self.builder = TreeBuilder(**pick(p, TreeBuilder.PARAMS))
        self.vmask = TreeMaskGen(N_NODES=N)
        self.optimiser = TopologyOptimiser(N_MAX=N, **pick(p, _OPT_PARAMS))
        vp, bd, op = self.verify, self.builder, self.optimiser
        vsig = vp.signature.members
        super().__init__(
            {
                **{n: vsig[n] for n in ("seed", "busy", "advance", "i", "rows")},
                **{n: vsig[n] for n in ("result", "tokens", "tot", "w", "extra") if n in vsig},
                "bcfg": In(stream.Signature(bcfg_layout(N))),
                "shape": In(stream.Signature(parent_layout(N))),
                "req": Out(stream.Signature(req_layout(bd.REQ_BITS, TB))),
                "dist": In(stream.Signature(dist_layout(p["LANES"], PB))),
                "tree": Out(stream.Signature(out_layout(N, TB, PB, p["CONF_BITS"]))),
                "vrows": Out(stream.Signature(row_layout(N))),
                "pq": In(stream.Signature(pq_layout(PB))),
                "ocfg": In(
                    stream.Signature(opt_cfg_layout(N, p["D_MAX"], p["R"], p["ACC_BITS"], p["NB"]))
                ),
                "opt_mode": Out(1),
                "opt_budget": Out(bits_for(N)),
                "opt_expected": Out(op.VW),
                "opt_busy": Out(1),
                "build_busy": Out(1),
                "error": Out(error_layout),
            }
        )
        # what a testbench may read besides the ports (not used by the design)
        self.taps = {
            "tap_step_valid": Signal(name="tap_step_valid"),
            "tap_step_ready": Signal(name="tap_step_ready"),
            "tap_step": Signal(step_layout(N), name="tap_step"),
            "tap_oshape_valid": Signal(name="tap_oshape_valid"),
            "tap_oshape_ready": Signal(name="tap_oshape_ready"),
            "tap_oshape": Signal(parent_layout(N), name="tap_oshape"),
        }

    def elaborate(self, platform) -> Module:
        m = Module()
        N, sl = self.N_NODES, self.SELECT_LANES
        m.submodules.verify = vp = self.verify
        m.submodules.builder = bd = self.builder
        m.submodules.vmask = vm = self.vmask
        m.submodules.optimiser = op = self.optimiser
        m.submodules.hold = hold = HoldBuffer(N, self.TOKEN_BITS, self.PROB_BITS)
        m.submodules.arbiter = arb = Arbiter(N, self.TOKEN_BITS, self.PROB_BITS)
        m.submodules.packet = pk = StepPacket(N)
        m.submodules.shapes = sf = ShapeFeed(N)

        # ---- the verify path, fed by the arbiter (the held tree's join wins a tie)
        for name in ("seed", "tot", "w") if sl else ("seed", "w"):
            wiring.connect(m, wiring.flipped(getattr(self, name)), getattr(vp, name))
        for name in ("rows", "result", "tokens", "extra"):
            wiring.connect(m, getattr(vp, name), wiring.flipped(getattr(self, name)))
        m.d.comb += [self.busy.eq(vp.busy), vp.advance.eq(self.advance)]
        wiring.connect(m, hold.o, arb.a)
        wiring.connect(m, wiring.flipped(self.i), arb.b)
        wiring.connect(m, arb.o, vp.i)
        result_fire = self.result.valid & self.result.ready
        m.d.comb += [arb.a_tag.eq(hold.held_stats), arb.pop.eq(result_fire)]

        # ---- bcfg: the hold buffer free, the builder ready, one packet's counts at a time
        c = self.bcfg.payload
        wants_opt = (c.mode == MODE_STATIC) & c.opt
        ok = (hold.state == FREE) & ~(wants_opt & pk.owed)
        for f in ("mode", "k", "m", "d", "w"):
            m.d.comb += bd.cfg.payload[f].eq(c[f])
        m.d.comb += [
            bd.cfg.valid.eq(self.bcfg.valid & ok),
            self.bcfg.ready.eq(bd.cfg.ready & ok),
        ]
        take = self.bcfg.valid & self.bcfg.ready
        cur_static, cur_opt = Signal(), Signal()  # of the tree being built
        with m.If(take):
            m.d.sync += [cur_static.eq(c.mode == MODE_STATIC), cur_opt.eq(c.opt)]
        m.d.comb += [hold.take.eq(take), hold.stats.eq(wants_opt)]

        # ---- the builder's shape: the optimiser's (opt = 1) or the port's (opt = 0)
        building = hold.state == BUILD
        route_sw = building & cur_static & ~cur_opt
        m.d.comb += [sf.route.eq(building & cur_static & cur_opt), sf.take.eq(take)]
        m.d.comb += [
            bd.shape.valid.eq(sf.o.valid | (route_sw & self.shape.valid)),
            bd.shape.payload.eq(sf.o.payload),
            sf.o.ready.eq(bd.shape.ready),
            self.shape.ready.eq(route_sw & bd.shape.ready),
            sf.build_error.eq(bd.error),
        ]
        with m.If(route_sw):
            m.d.comb += bd.shape.payload.eq(self.shape.payload)
        wiring.connect(m, op.shape, sf.i)

        # ---- requests and distributions pass through; the built tree to tree, vmask, hold
        wiring.connect(m, bd.req, wiring.flipped(self.req))
        wiring.connect(m, wiring.flipped(self.dist), bd.dist)
        o = bd.o
        m.d.comb += [
            self.tree.payload.eq(o.payload),
            vm.i.payload.parent.eq(o.payload.parent),
            vm.i.payload.end.eq(o.payload.end),
            self.tree.valid.eq(o.valid & vm.i.ready),
            vm.i.valid.eq(o.valid & self.tree.ready),
            o.ready.eq(self.tree.ready & vm.i.ready),
        ]
        wiring.connect(m, vm.o, wiring.flipped(self.vrows))
        m.d.comb += [
            hold.w_fire.eq(o.valid & o.ready),
            hold.w_end.eq(o.payload.end),
            hold.w_parent.eq(o.payload.parent),
            hold.w_token.eq(o.payload.token),
            hold.builder_busy.eq(bd.busy),
        ]
        wiring.connect(m, wiring.flipped(self.pq), hold.pq)

        # ---- the optimiser: configuration, packets, status
        wiring.connect(m, wiring.flipped(self.ocfg), op.cfg)
        cfg_taken = Signal()  # a configuration beat was taken: valid unless error now
        m.d.sync += cfg_taken.eq(self.ocfg.valid & self.ocfg.ready)
        reconf = Signal()
        m.d.comb += reconf.eq(cfg_taken & ~op.error)
        m.d.comb += [
            pk.take_opt.eq(take & wants_opt),
            pk.shape_beat.eq(sf.took),
            pk.dropped.eq(hold.dropped & hold.held_stats),
            pk.reconf.eq(reconf),
            pk.result_fire.eq(result_fire),
            pk.send.eq(arb.head),
            pk.path_mask.eq(self.result.payload.path_mask),
            pk.rank.eq(hold.rank),
            pk.kids.eq(hold.kids),
            sf.reconf.eq(reconf),
            sf.request.eq(pk.sent),
        ]
        wiring.connect(m, pk.step, op.step)
        m.d.comb += [
            self.opt_mode.eq(op.mode),
            self.opt_budget.eq(op.budget),
            self.opt_expected.eq(op.expected),
            self.opt_busy.eq(op.busy | pk.busy),
            self.build_busy.eq(bd.busy),
            self.error.mask.eq(vp.error.mask),
            self.error.accept.eq(vp.error.accept),
            self.error.token.eq(vp.error.token),
            self.error.rng.eq(vp.error.rng),
            self.error.build.eq(bd.error),
            self.error.opt.eq(op.error),
        ]
        t = self.taps
        m.d.comb += [
            t["tap_step_valid"].eq(pk.step.valid),
            t["tap_step_ready"].eq(pk.step.ready),
            t["tap_step"].eq(pk.step.payload),
            t["tap_oshape_valid"].eq(op.shape.valid),
            t["tap_oshape_ready"].eq(op.shape.ready),
            t["tap_oshape"].eq(op.shape.payload),
        ]
        return m
