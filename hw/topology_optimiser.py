"""Topology optimiser (SPEC §3.10, §3.11): acceptance statistics, the fixed-point
Sequoia DP, the budget choice and the fallback to plain decoding."""

from amaranth import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import bits_for

from hw.common import (
    Param,
    check_params,
    idx_bits,
    less_than,
    mux_tree,
    prefix_sub,
)
from hw.topology import ConfigCheck, DPEngine, Estimator, SeqMul, Window
from hw.topology.config import COST_BITS, PW_BITS, U_MAX
from hw.tree_mask_gen import parent_layout

__all__ = ["TopologyOptimiser", "cfg_layout", "step_layout", "shape_layout", "U_MAX"]


def cfg_layout(n_max: int, d_max: int, ranks: int, acc_bits: int, nb: int) -> data.StructLayout:
    """The configuration beat: ``m`` (``M``), ``d`` (``D``), ``u`` (``U``), ``pw``,
    ``fallback``, ``probe`` (``PROBE``), ``nb`` (budgets used), ``budget[NB]``,
    ``cost[NB]``, ``cost_plain`` (``cost_0``) and ``prior[R]`` (``A + 1`` bits)."""
    nw = bits_for(n_max)
    return data.StructLayout(
        {
            "m": nw,
            "d": bits_for(d_max),
            "u": bits_for(U_MAX),
            "pw": PW_BITS,
            "fallback": 1,
            "probe": nw,
            "nb": bits_for(nb),
            "budget": data.ArrayLayout(nw, nb),
            "cost": data.ArrayLayout(COST_BITS, nb),
            "cost_plain": COST_BITS,
            "prior": data.ArrayLayout(acc_bits + 1, ranks),
        }
    )


def step_layout(n_max: int) -> data.StructLayout:
    """A step beat: one node of the accepted path (root first), its sibling
    ``rank`` (ignored on the root), its number of children ``kids`` in the
    step's tree, and ``last`` on the path's final node."""
    ib = idx_bits(n_max)
    return data.StructLayout({"rank": ib, "kids": ib, "last": 1})


def shape_layout(n_max: int) -> data.StructLayout:
    """A shape beat: :func:`hw.tree_mask_gen.parent_layout` (the tree mask
    generator's input)."""
    return parent_layout(n_max)


def _pick(items: list[Value], sel: Value) -> Value:
    return mux_tree(items, sel) if len(items) > 1 else items[0]


class _Parts:
    """What :meth:`TopologyOptimiser.elaborate`'s stages share: the configuration
    (:class:`hw.topology.config.ConfigCheck`) and the registers, declared here;
    the engines, the shape FIFO and the nets, set by the datapath stages
    (``_engines``, ``_emitter``, ``_step_beat``, ``_choice_nets``) for the main
    FSM's states.

    Registers: the step being counted (``cur_h``, ``cur_t``: hits and trials per
    rank; ``in_packet``; ``beats``; ``prev_kids``), ``phase`` (steps mod ``U``),
    ``initial`` (the solve at configuration); the choice (``j``, ``best_ok``,
    ``e1_best``: ``E + 2**A`` of the best budget, ``cost_best``, ``m_best``),
    ``spec`` (the decision), ``shape_n`` (the chosen tree's nodes); the
    emission (``e_i``: the next node, from 1; ``e_n``: the shape's nodes;
    ``e_mem``: parents from the tree memory, else a chain).
    """

    def __init__(self, n_max: int, d_max: int, ranks: int, acc_bits: int, nb: int) -> None:
        N, R, NB, VW = n_max, ranks, nb, acc_bits + bits_for(n_max)
        ib, nw = idx_bits(N), bits_for(N)
        scw = bits_for(N)  # one step's count per rank: at most m beats
        self.config = ConfigCheck(N, d_max, R, acc_bits, NB)
        # ---- the step being counted
        self.cur_h = [Signal(scw, name=f"cur_h{b}") for b in range(R)]
        self.cur_t = [Signal(scw, name=f"cur_t{b}") for b in range(R)]
        self.in_packet = Signal()
        self.beats = Signal(nw)
        self.prev_kids = Signal(ib)
        self.phase = Signal(bits_for(U_MAX))  # steps % U
        self.initial = Signal()
        # ---- the solve's choice
        self.j = Signal(bits_for(NB))
        self.best_ok = Signal()
        self.e1_best = Signal(VW)  # E + 2**A of the best budget
        self.cost_best = Signal(COST_BITS)
        self.m_best = Signal(nw)
        self.spec = Signal()
        self.shape_n = Signal(nw, init=1)
        # ---- the emission
        self.e_i = Signal(nw)  # the next node to emit (from 1)
        self.e_n = Signal(nw)  # nodes of the shape
        self.e_mem = Signal()  # parents from the tree memory (else a chain)


class TopologyOptimiser(wiring.Component):
    """Topology optimiser: the shape of the next step's tree (SPEC §3.10, §3.11).

    Bit-exact with ``golden.builder.FixedTopologyOptimiser`` (its shapes,
    mode, chosen tree's size and value), built from ``golden.optimiser``'s
    :func:`~golden.optimiser.step_counts`, :class:`~golden.optimiser.RankStats`,
    the estimates, :func:`~golden.optimiser.solve` and the budget choice.
    Design rationale: ``docs/blocks/topology_optimiser.md``.

    **Configuration.** One beat on ``cfg`` (:func:`cfg_layout`). While it is
    presented the block checks it, one budget and one prior entry per cycle
    (``max(NB, R) + 2`` cycles; the payload must hold, as a stream's does),
    then takes it. A valid configuration clears the window, sets the mode to
    speculate and the step count to 0, solves on the prior alone (§3.11's
    solve at configuration: a budget left means speculate) and emits the
    first shape. ``cfg`` is taken between step packets, before a packet's
    first beat when both are valid.

    **Steps.** One packet per finished verification step on ``step``
    (:func:`step_layout`): the accepted path, root first. Each beat adds a
    trial to ranks ``0 .. min(kids, R) - 1`` and each beat after the root
    with ``rank < R`` a hit to its rank (§3.10). At ``last``: the step's
    counts enter the window if it had a trial (in plain mode such a step
    clears the window first); ``steps += 1``; every ``U`` steps the block
    re-solves; then it emits the next shape.

    **Solve.** The estimates (:class:`hw.topology.Estimator`); if some rank's
    ``p`` is positive, the DP for every budget (:class:`hw.topology.DPEngine`);
    the best budget of the cost table (roots alone skipped, ``(E + 1) *
    cost`` compared by cross-multiplication, an equal rate keeping the
    smaller budget, :class:`hw.topology.SeqMul`); its tree and ``E_raw``; the
    fallback test of §3.11. Entering plain decoding clears the window.

    **Shapes** on ``shape`` (:func:`shape_layout`): the parents of nodes ``1
    .. n-1``, then an end beat. Speculating: the chosen budget's tree (breadth
    first, siblings by rank, ``golden.optimiser.Solution.tree``). Plain: the
    root alone, or the probe chain ``[-1, 0, .., PROBE-1]`` when ``(steps +
    1) % U == 0``. The shape goes through a small FIFO; ``shape`` may stall.

    **Status.** ``mode`` (1: speculating), ``budget`` (the chosen tree's
    nodes, root included; 1 when plain), ``expected`` (``E`` of the chosen
    budget, ``A`` fraction bits; 0 when plain), updated when a solve ends;
    ``busy`` while checking, counting a finished step, solving or emitting.

    Invalid input (``error`` pulses for one cycle, the cycle after the
    offending beat is taken; nothing else changes and no shape is emitted):

    - a configuration with a field out of range: ``m`` not in ``2 .. N_MAX``,
      ``d`` not in ``1 .. D_MAX``, ``u`` not in ``1 .. 2**16``, ``probe`` not
      in ``1 .. m - 1``, ``nb`` not in ``1 .. NB``, a used budget not in ``2 ..
      m`` or not above the one before, a used cost or ``cost_plain`` of 0, a
      prior entry above ``2**A`` or priors summing above ``2**A`` (the previous
      configuration, window and mode stay);
    - a step packet before any valid configuration; a beat whose ``rank`` is
      not below the previous beat's ``kids``; more than ``m`` beats (no path
      of a tree of at most ``m`` nodes is longer). The packet is dropped up
      to its ``last`` beat; nothing of it is counted.

    Cycles (checked by the testbench at full speed): a re-solve, from the beat
    that starts it to the shape's first beat, is at least the DP's
    :func:`hw.topology.dp.dp_cycles` (``L * K * (B (B + 1) / 2 + 6) + 2``, ``B
    = M - 1``, ``L = min(D, B)``) and at most
    :func:`hw.topology.dp.solve_cycles_bound` (the DP, the estimates, the
    choice, the tree walk and the decision); at ``M = 64``, ``D = 8``, ``K =
    8`` 130,314 cycles (this block's target: at most ``2**18``). A step
    without a re-solve: its shape's first beat at most 7 cycles after its
    ``last`` beat is taken; the shape's beats one per cycle.

    Parameters
    ----------
    N_MAX : int
        Largest budget ``M`` (nodes, root included), ``4 .. 1024`` (default 64).
    D_MAX : int
        Largest depth ``D``, ``1 .. 32`` (default 8).
    R : int
        Ranks counted and solved, ``1 .. 16`` (default 8).
    ACC_BITS : int
        ``A``, fraction bits of the estimates and values, ``8 .. 24`` (default 16).
    NB : int
        Entries of the cost table, ``1 .. 16`` (default 8).
    WIN : int
        Steps with a trial in the statistics window, ``1 .. 64`` (default 32).

    Members
    -------
    cfg : In(stream.Signature(cfg_layout(N_MAX, D_MAX, R, ACC_BITS, NB)))
        Configuration beats.
    step : In(stream.Signature(step_layout(N_MAX)))
        Accepted paths, one packet per step.
    shape : Out(stream.Signature(shape_layout(N_MAX)))
        The next step's shape, after every valid configuration and packet.
    busy, mode : Out(1)
        Working; speculating.
    budget : Out(bits_for(N_MAX))
        Nodes of the chosen tree (1 when plain).
    expected : Out(ACC_BITS + bits_for(N_MAX))
        ``E`` of the chosen budget.
    error : Out(1)
        One-cycle pulse on invalid input.
    """

    #: the block's parameters (:class:`hw.common.Param`: default, range, small value)
    PARAMS = {
        "N_MAX": Param(default=64, lo=4, hi=1024, small=8),
        "D_MAX": Param(default=8, lo=1, hi=32, small=3),
        "R": Param(default=8, lo=1, hi=16, small=2),
        "ACC_BITS": Param(default=16, lo=8, hi=24, small=8),
        "NB": Param(default=8, lo=1, hi=16, small=2),
        "WIN": Param(default=32, lo=1, hi=64, small=4),
    }

    #: depth of the shape FIFO
    OUT_DEPTH = 4

    def __init__(
        self,
        *,
        N_MAX: int = PARAMS["N_MAX"].default,
        D_MAX: int = PARAMS["D_MAX"].default,
        R: int = PARAMS["R"].default,
        ACC_BITS: int = PARAMS["ACC_BITS"].default,
        NB: int = PARAMS["NB"].default,
        WIN: int = PARAMS["WIN"].default,
    ) -> None:
        given = {"N_MAX": N_MAX, "D_MAX": D_MAX, "R": R, "ACC_BITS": ACC_BITS, "NB": NB, "WIN": WIN}
        p = check_params(self.PARAMS, given)
        self.N_MAX, self.D_MAX, self.R, self.ACC_BITS, self.NB, self.WIN = (p[k] for k in given)
        #: width of a value (``E + 2**A`` up to ``N_MAX * 2**A``)
        self.VW = self.ACC_BITS + bits_for(self.N_MAX)
        super().__init__(
            {
                "cfg": In(
                    stream.Signature(
                        cfg_layout(self.N_MAX, self.D_MAX, self.R, self.ACC_BITS, self.NB)
                    )
                ),
                "step": In(stream.Signature(step_layout(self.N_MAX))),
                "shape": Out(stream.Signature(shape_layout(self.N_MAX))),
                "busy": Out(1),
                "mode": Out(1),
                "budget": Out(bits_for(self.N_MAX), init=1),
                "expected": Out(self.VW),
                "error": Out(1),
            }
        )

    def elaborate(self, platform) -> Module:
        m = Module()
        r = _Parts(self.N_MAX, self.D_MAX, self.R, self.ACC_BITS, self.NB)
        # In this order: the pulses' defaults (``_engines``, ``_emitter``) before the
        # states that raise them, and the nets (the Verilog's) in a stable order.
        self._engines(m, r)
        self._emitter(m, r)
        self._step_beat(m, r)
        r.config.build(m, self.cfg.payload)
        self._choice_nets(m, r)
        with m.FSM(name="main") as fsm:
            self._input_states(m, r)
            r.config.states(m, done="TAKE")
            self._take_state(m, r)
            self._step_states(m, r)
            self._solve_states(m, r)
            self._choice_states(m, r)
            self._decision_states(m, r)
            self._emit_states(m, r)
        m.d.comb += self.busy.eq(
            ~(fsm.ongoing("IDLE") | fsm.ongoing("DROP")) | r.p_valid | r.q.r_rdy
        )
        return m

    # ------------------------------------------------------------------ datapath
    def _engines(self, m: Module, r: _Parts) -> None:
        """The window, the estimator, the DP engine and the two multipliers of the
        choice, their start pulses and the DP's inputs."""
        N, R, A, WIN, VW, c = self.N_MAX, self.R, self.ACC_BITS, self.WIN, self.VW, r.config
        scw = bits_for(N)
        m.submodules.win = r.win = Window(R, WIN, scw, bits_for(WIN * N), r.cur_h, r.cur_t)
        r.sum_t = r.win.trials
        m.submodules.est = r.est = est = Estimator(
            R, A, WIN * N, r.win.hits, r.sum_t, c.c_prior, c.c_pw
        )
        m.submodules.dp = r.dp = dp = DPEngine(N, self.D_MAX, R, A, est.p, est.r)
        m.submodules.mul_a = r.mul_a = mul_a = SeqMul(VW, COST_BITS, "cmp_a")
        m.submodules.mul_b = r.mul_b = mul_b = SeqMul(VW, COST_BITS, "cmp_b")
        m.d.sync += [est.start.eq(0), dp.dp_start.eq(0), dp.tree_start.eq(0)]
        m.d.sync += [mul_a.start.eq(0), mul_b.start.eq(0), self.error.eq(0)]
        m.d.comb += [dp.b_max.eq(c.c_b), dp.levels.eq(c.c_l)]
        r.k_cap = k_cap = Signal(len(dp.k))
        m.d.comb += dp.k.eq(k_cap)
        r.a_gt_b = less_than(m, mul_b.p, mul_a.p, "cmp_gt")

    def _emitter(self, m: Module, r: _Parts) -> None:
        """The shape FIFO and its feeder: one beat a cycle while the FIFO has room,
        a parent from the DP's tree memory or of the chain, then the end beat."""
        ib = idx_bits(self.N_MAX)
        m.submodules.out = r.q = q = fifo.SyncFIFO(
            width=shape_layout(self.N_MAX).size, depth=self.OUT_DEPTH
        )
        m.d.comb += [
            self.shape.valid.eq(q.r_rdy),
            self.shape.payload.eq(q.r_data),
            q.r_en.eq(self.shape.ready),
        ]
        p_valid, p_end, p_mem = Signal(), Signal(), Signal()
        r.p_valid, r.p_end, r.p_mem = p_valid, p_end, p_mem
        r.p_const = p_const = Signal(ib)
        r.room = room = Signal()
        m.d.comb += [
            room.eq(q.level + p_valid < self.OUT_DEPTH),
            r.dp.node_addr.eq(r.e_i[:ib]),
            q.w_en.eq(p_valid),
            q.w_data.eq(Cat(Mux(p_end, 0, Mux(p_mem, r.dp.node_parent, p_const)), p_end)),
        ]
        m.d.sync += p_valid.eq(0)

    def _step_beat(self, m: Module, r: _Parts) -> None:
        """A step beat: taken (``fire``), invalid (``bad_beat``: its rank not below
        the previous beat's ``kids``, or beyond ``m`` beats) and the step's counts
        with it (``nxt_h``, ``nxt_t``)."""
        R, scw = self.R, bits_for(self.N_MAX)
        beat = r.beat = self.step.payload
        r.fire = fire = Signal()
        m.d.comb += fire.eq(self.step.valid & self.step.ready)
        rank_ok = less_than(m, beat.rank, r.prev_kids, "rank_ok")
        r.bad_beat = bad_beat = Signal()
        m.d.comb += bad_beat.eq(r.in_packet & (~rank_ok | (r.beats == r.config.c_m)))
        r.nxt_h = nxt_h = [Signal(scw, name=f"nxt_h{b}") for b in range(R)]
        r.nxt_t = nxt_t = [Signal(scw, name=f"nxt_t{b}") for b in range(R)]
        for b in range(R):
            hit = r.in_packet & (beat.rank == b)
            m.d.comb += [
                nxt_h[b].eq(Mux(r.in_packet, r.cur_h[b], 0) + hit),
                nxt_t[b].eq(Mux(r.in_packet, r.cur_t[b], 0) + (beat.kids > b)),
            ]
        r.has_trial = has_trial = Signal()
        m.d.comb += has_trial.eq(r.cur_t[0] != 0)

    def _choice_nets(self, m: Module, r: _Parts) -> None:
        """Budget ``j``'s entry, cost and value (``E + 2**A``, read from the DP one
        cycle after ``val_addr``), the chosen ``E`` and the fallback comparisons
        (``2**A * cost`` of the best budget against the multipliers' products)."""
        NB, A, VW, ib, dp = self.NB, self.ACC_BITS, self.VW, idx_bits(self.N_MAX), r.dp
        r.budget_j = budget_j = _pick(r.config.c_budget, r.j[: max(1, idx_bits(NB))])
        r.costj = _pick(r.config.c_cost, r.j[: max(1, idx_bits(NB))])
        r.e1 = dp.val_data
        m.d.comb += dp.val_addr.eq((budget_j - 1)[:ib])
        r.e_minus = prefix_sub(m, r.e1_best, Const(1 << A, VW), VW, "e_minus")
        m.d.comb += dp.tree_m.eq(r.m_best)
        plain_cost = Cat(Const(0, A), r.cost_best)  # 2**A * cost_j
        r.spec_raw = less_than(m, plain_cost, r.mul_a.p, "spec_raw")
        r.spec_smooth = less_than(m, plain_cost, r.mul_b.p, "spec_smooth")

    # ------------------------------------------------------------------ the main FSM
    def _input_states(self, m: Module, r: _Parts) -> None:
        """``IDLE``: a configuration beat starts its check (between packets); a
        step beat is counted, or rejected (the rest of its packet dropped in
        ``DROP``); a packet's ``last`` beat goes on to the window."""
        beat, fire, R = r.beat, r.fire, self.R
        with m.State("IDLE"):
            take_cfg = self.cfg.valid & ~r.in_packet
            with m.If(take_cfg):
                m.d.sync += r.config.begin()
                m.next = "CHECK"
            with m.Else():
                m.d.comb += self.step.ready.eq(1)
            with m.If(fire):
                with m.If(~r.config.configured | r.bad_beat):
                    m.d.sync += [self.error.eq(1), r.in_packet.eq(0)]
                    with m.If(~beat.last):
                        m.next = "DROP"
                with m.Else():
                    m.d.sync += [
                        *[r.cur_h[b].eq(r.nxt_h[b]) for b in range(R)],
                        *[r.cur_t[b].eq(r.nxt_t[b]) for b in range(R)],
                        r.prev_kids.eq(beat.kids),
                        r.beats.eq(Mux(r.in_packet, r.beats + 1, 1)),
                        r.in_packet.eq(~beat.last),
                    ]
                    with m.If(beat.last):
                        m.next = "WINDOW"
        with m.State("DROP"):
            m.d.comb += self.step.ready.eq(1)
            with m.If(fire & beat.last):
                m.next = "IDLE"

    def _take_state(self, m: Module, r: _Parts) -> None:
        """``TAKE``: the checked configuration beat is taken; valid, it becomes the
        active configuration (window cleared, speculating, step count 0) and the
        solve at configuration starts."""
        with m.State("TAKE"):
            m.d.comb += self.cfg.ready.eq(1)
            with m.If(r.config.c_bad):
                m.d.sync += self.error.eq(1)
                m.next = "IDLE"
            with m.Else():
                m.d.sync += [
                    *r.config.load(),
                    self.mode.eq(1),
                    r.phase.eq(0),
                    r.initial.eq(1),
                    r.est.start.eq(1),
                ]
                m.d.comb += r.win.clear.eq(1)
                m.next = "ESTIMATE"

    def _step_states(self, m: Module, r: _Parts) -> None:
        """``WINDOW``, ``ADD``: a finished step's counts into the window (if it had
        a trial; a probe's clear it first); ``STEPS``: every ``U`` steps a re-solve."""
        with m.State("WINDOW"):  # the step's counts into the window
            with m.If(~r.has_trial):
                m.next = "STEPS"
            with m.Else():
                with m.If(~self.mode):  # a probe: only the latest one counts
                    m.d.comb += r.win.clear.eq(1)
                m.next = "ADD"
        with m.State("ADD"):
            m.d.comb += r.win.add.eq(1)
            m.next = "STEPS"
        with m.State("STEPS"):
            with m.If(r.phase == r.config.c_um1):
                m.d.sync += [r.phase.eq(0), r.initial.eq(0), r.est.start.eq(1)]
                m.next = "ESTIMATE"
            with m.Else():
                m.d.sync += r.phase.eq(r.phase + 1)
                m.next = "EMIT_START"

    def _solve_states(self, m: Module, r: _Parts) -> None:
        """``ESTIMATE``: the estimates; with no positive ``p``, plain decoding,
        else ``K`` (capped at ``B``) and ``DP``: the DP for every budget."""
        est, dp, c_b = r.est, r.dp, r.config.c_b
        with m.State("ESTIMATE"):
            with m.If(~est.start & ~est.busy):
                m.d.sync += r.k_cap.eq(Mux(est.k > c_b, c_b, est.k))
                with m.If(est.k == 0):
                    m.d.sync += r.spec.eq(0)
                    m.next = "FINISH"
                with m.Else():
                    m.d.sync += dp.dp_start.eq(1)
                    m.next = "DP"
        with m.State("DP"):
            with m.If(~dp.dp_start & ~dp.dp_busy):
                m.d.sync += [r.j.eq(0), r.best_ok.eq(0)]
                m.next = "CHOOSE"

    def _choice_states(self, m: Module, r: _Parts) -> None:
        """``CHOOSE`` .. ``CHOOSE_NEXT``: the best budget of the cost table, one
        entry at a time (the root alone skipped; ``(E_j + 1) cost_best > (E + 1)
        cost_j`` by the two multipliers, an equal rate keeping the smaller
        budget); its tree next (``TREE``), or plain decoding if none is left."""
        e1, costj, budget_j, mul_a, mul_b = r.e1, r.costj, r.budget_j, r.mul_a, r.mul_b
        with m.State("CHOOSE"):  # vals[budget_j - 1] is being read
            m.next = "CHOOSE_GET"
        with m.State("CHOOSE_GET"):
            with m.If(e1 == (1 << self.ACC_BITS)):  # the root alone: skipped
                m.next = "CHOOSE_NEXT"
            with m.Elif(~r.best_ok):
                m.d.sync += [
                    r.best_ok.eq(1),
                    r.e1_best.eq(e1),
                    r.cost_best.eq(costj),
                    r.m_best.eq(budget_j),
                ]
                m.next = "CHOOSE_NEXT"
            with m.Else():
                m.d.sync += [
                    mul_a.a.eq(e1),
                    mul_a.c.eq(r.cost_best),
                    mul_b.a.eq(r.e1_best),
                    mul_b.c.eq(costj),
                    mul_a.start.eq(1),
                    mul_b.start.eq(1),
                ]
                m.next = "CHOOSE_MUL"
        with m.State("CHOOSE_MUL"):  # j beats the best: (E_j + 1) cost_best > (E + 1) cost_j
            with m.If(~mul_a.start & ~mul_a.busy & ~mul_b.busy):
                with m.If(r.a_gt_b):
                    m.d.sync += [
                        r.e1_best.eq(mul_a.a),
                        r.cost_best.eq(costj),
                        r.m_best.eq(budget_j),
                    ]
                m.next = "CHOOSE_NEXT"
        with m.State("CHOOSE_NEXT"):
            with m.If(r.j == r.config.c_nbm1):
                with m.If(r.best_ok):
                    m.d.sync += r.dp.tree_start.eq(1)
                    m.next = "TREE"
                with m.Else():
                    m.d.sync += r.spec.eq(0)
                    m.next = "FINISH"
            with m.Else():
                m.d.sync += r.j.eq(r.j + 1)
                m.next = "CHOOSE"

    def _decision_states(self, m: Module, r: _Parts) -> None:
        """``TREE``: the chosen budget's tree; ``DECIDE``: the fallback test of
        §3.11 (both ``(E + 1) cost_0 > cost_j << A``, raw and smoothed);
        ``FINISH``: the mode and status (entering plain decoding clears the window)."""
        dp, mul_a, mul_b, spec, c = r.dp, r.mul_a, r.mul_b, r.spec, r.config
        with m.State("TREE"):
            with m.If(~dp.tree_start & ~dp.tree_busy):
                with m.If(r.initial | ~c.c_fb):
                    m.d.sync += spec.eq(1)
                    m.next = "FINISH"
                with m.Elif(r.sum_t[0] == 0):  # no evidence: keep the mode
                    m.d.sync += spec.eq(self.mode)
                    m.next = "FINISH"
                with m.Else():
                    m.d.sync += [
                        mul_a.a.eq(dp.e_raw1),
                        mul_a.c.eq(c.c_cost0),
                        mul_b.a.eq(r.e1_best),
                        mul_b.c.eq(c.c_cost0),
                        mul_a.start.eq(1),
                        mul_b.start.eq(1),
                    ]
                    m.next = "DECIDE"
        with m.State("DECIDE"):  # both (E + 1) cost_0 > cost_j << A
            with m.If(~mul_a.start & ~mul_a.busy & ~mul_b.busy):
                m.d.sync += spec.eq(r.spec_raw & r.spec_smooth)
                m.next = "FINISH"
        with m.State("FINISH"):
            with m.If(spec):
                m.d.sync += [
                    self.mode.eq(1),
                    r.shape_n.eq(dp.tree_n),
                    self.budget.eq(dp.tree_n),
                    self.expected.eq(r.e_minus),
                ]
            with m.Else():
                m.d.sync += [
                    self.mode.eq(0),
                    r.shape_n.eq(1),
                    self.budget.eq(1),
                    self.expected.eq(0),
                ]
                with m.If(self.mode):  # entering plain decoding
                    m.d.comb += r.win.clear.eq(1)
            m.next = "EMIT_START"

    def _emit_states(self, m: Module, r: _Parts) -> None:
        """``EMIT_START``: the shape's size (the chosen tree, the probe chain or the
        root alone); ``EMIT``: its beats into the FIFO, then the end beat."""
        e_i, e_n, ib = r.e_i, r.e_n, idx_bits(self.N_MAX)
        with m.State("EMIT_START"):
            probe = ~self.mode & (r.phase == r.config.c_um1)
            m.d.sync += [
                e_i.eq(1),
                e_n.eq(Mux(probe, r.config.c_probe + 1, Mux(self.mode, r.shape_n, 1))),
                r.e_mem.eq(self.mode),
            ]
            m.next = "EMIT"
        with m.State("EMIT"):
            with m.If(r.room):
                m.d.sync += [
                    r.p_valid.eq(1),
                    r.p_end.eq(e_i == e_n),
                    r.p_mem.eq(r.e_mem),
                    r.p_const.eq((e_i - 1)[:ib]),
                ]
                with m.If(e_i == e_n):
                    m.next = "IDLE"
                with m.Else():
                    m.d.sync += e_i.eq(e_i + 1)
