"""Stimulus, monitors and golden-model glue of the tree manager's testbench
(:mod:`tb.test_tree_manager`), built on the blocks' own testbench helpers.

* :class:`Strobe`: a one-cycle pulse on a 1-bit input (``advance``).
* :class:`OptP`: the topology optimiser's parameters as
  :mod:`tb.topology_optimiser_stim` expects them (``N_MAX`` is ``N_NODES``);
  :func:`opt_status`, the golden twin's status as the block shows it.
* :func:`random_pq` (:mod:`tb.common`'s, re-exported): ``pt``/``qt`` of an
  ``n``-node tree, as :func:`tb.common.random_step` draws them.
* :func:`static_opt_case`: a :class:`tb.tree_builder_stim.Case` on the
  optimiser's shape; :class:`DraftQ`, the builder's draft side
  (:class:`tb.tree_builder_stim.Draft`) with trees added as they are sent.
* :class:`Taps`: the step packets the block sends the optimiser and the
  shapes the optimiser emits (the ``tap_*`` nets), with the status seen at
  each shape's first beat; :class:`Errors`, every ``error`` pulse by field.
* :class:`Extra`: the verifier's residuals for the extra token (either
  sampler), sent and predicted; :func:`residual`, :func:`one_pass`.
"""

import random

from flows.layouts import unpack
from golden import tree as gtree
from golden.sampler import sample_weights, select_one_pass
from hw.token_sampler import beat_layout
from hw.token_sampler import token_layout as extra_layout
from hw.token_select import tot_layout
from hw.topology_optimiser import step_layout
from hw.tree_builder import MODE_STATIC
from hw.tree_manager import error_layout
from hw.tree_mask_gen import parent_layout
from tb.common import TB, StreamSink, StreamSource, params, random_pq
from tb.tree_builder_stim import Case, Cfg, Draft, finish, pick_vocab

__all__ = [
    "Strobe",
    "OptP",
    "opt_status",
    "random_pq",
    "static_opt_case",
    "DraftQ",
    "Taps",
    "Errors",
    "Extra",
    "residual",
    "one_pass",
    "expect_rows",
]


class Strobe:
    """Drives a one-cycle pulse on a 1-bit input when ``fire()`` is called."""

    def __init__(self, tb: TB, sig) -> None:
        self.sig, self.pending, self.up = sig, 0, False
        sig.value = 0
        tb.add(self)

    def fire(self) -> None:
        self.pending += 1

    def drive(self) -> None:
        up = self.pending > 0
        if up:
            self.pending -= 1
        if up != self.up:
            self.sig.value = int(up)
            self.up = up

    def sample(self) -> None:
        pass


class OptP:
    """The optimiser's parameter set of this run, named as
    :class:`tb.topology_optimiser_stim.P` names it."""

    def __init__(self) -> None:
        p = params()
        self.N, self.D, self.R = p["N_NODES"], p["D_MAX"], p["R"]
        self.A, self.NB, self.WIN = p["ACC_BITS"], p["NB"], p["WIN"]
        self.one = 1 << self.A


def opt_status(gold) -> tuple[int, int, int]:
    """``(opt_mode, opt_budget, opt_expected)`` of a ``FixedTopologyOptimiser``."""
    h = gold.history[-1]
    return int(gold.mode == "spec"), h.n_nodes, h.expected


def static_opt_case(rng: random.Random, cfg: Cfg, shape: list[int], ranks: int) -> Case:
    """A static tree on the optimiser's ``shape`` (its ranks are below ``R``, so any
    ``K >= R`` fits), with its golden build (:func:`tb.tree_builder_stim.finish`)."""
    k = rng.choice([ranks, rng.randint(ranks, 16)])
    kind = rng.choice(["mixed", "mixed", "random", "ties", "zeros", "full"])
    c = Case(MODE_STATIC, k, pick_vocab(rng, cfg), rng.getrandbits(32), kind, shape=shape)
    c.label = "static opt"
    return finish(c, cfg, rng)


class DraftQ(Draft):
    """The builder's draft side, its trees added one by one (:meth:`add`)."""

    def __init__(self, tb: TB, cfg: Cfg, src) -> None:
        super().__init__(tb, cfg, src, [])

    def add(self, case: Case) -> None:
        if case.requests:
            self.queue.append(case)
            for lst, v in ((self.got, []), (self.req_cycles, []), (self.dist_end, 0)):
                lst.append(v)
            self.beats.append(0)


class Taps:
    """The ``tap_*`` nets: the step packets taken by the optimiser (``packets``:
    ``(first cycle, last cycle, beats)``) and the shapes it emits (``shapes``:
    ``(first cycle, parents, status at the first beat)``)."""

    def __init__(self, tb: TB, n_nodes: int) -> None:
        self.tb, self.d = tb, tb.dut
        self.step_l, self.shape_l = step_layout(n_nodes), parent_layout(n_nodes)
        self.packets: list[tuple[int, int, list[dict]]] = []
        self.shapes: list[tuple[int, list[int], tuple[int, int, int]]] = []
        self._pk: list[dict] = []
        self._pk_first = 0
        self._sh: list[int] | None = None
        self._sh_first = 0
        self._sh_status = (0, 0, 0)
        tb.add(self)

    def drive(self) -> None:
        pass

    def sample(self) -> None:
        d, c = self.d, self.tb.cycle
        if d.tap_step_valid.value == 1 and d.tap_step_ready.value == 1:
            b = unpack(self.step_l, d.tap_step.value)
            if not self._pk:
                self._pk_first = c
            self._pk.append(b)
            if b["last"]:
                self.packets.append((self._pk_first, c, self._pk))
                self._pk = []
        if d.tap_oshape_valid.value == 1 and d.tap_oshape_ready.value == 1:
            b = unpack(self.shape_l, d.tap_oshape.value)
            if self._sh is None:
                self._sh, self._sh_first = [-1], c
                self._sh_status = (
                    int(d.opt_mode.value),
                    int(d.opt_budget.value),
                    int(d.opt_expected.value),
                )
            if b["end"]:
                self.shapes.append((self._sh_first, self._sh, self._sh_status))
                self._sh = None
            else:
                self._sh.append(b["parent"])


class Errors:
    """Every cycle with an ``error`` bit set: ``pulses[field]`` lists the cycles."""

    def __init__(self, tb: TB) -> None:
        self.tb = tb
        self.pulses: dict[str, list[int]] = {f: [] for f, _ in error_layout}
        tb.add(self)

    def drive(self) -> None:
        pass

    def sample(self) -> None:
        v = self.tb.dut.error.value
        if v.is_resolvable and int(v):
            e = unpack(error_layout, v)
            for f, x in e.items():
                if x:
                    self.pulses[f].append(self.tb.cycle)

    def counts(self) -> dict[str, int]:
        return {f: len(c) for f, c in self.pulses.items()}


def residual(rng: random.Random, weight_bits: int, token_bits: int) -> list[int]:
    """A residual weight vector: some zeros, at least one non-zero, at most the
    ``2**token_bits`` tokens of the vocabulary (and at most 40)."""
    V = rng.randint(1, min(40, 1 << token_bits))
    w = [rng.randrange(1 << weight_bits) if rng.random() < 0.7 else 0 for _ in range(V)]
    w[rng.randrange(V)] = rng.randint(1, (1 << weight_bits) - 1)
    return w


def one_pass(w: list[int], lanes: int) -> list[dict]:
    """The beats of one pass over ``w``: ``lanes`` weights each (the last zero-padded,
    ``last = 1``)."""
    beats = [
        {"w": w[k : k + lanes] + [0] * (lanes - len(w[k : k + lanes])), "last": 0}
        for k in range(0, len(w), lanes)
    ]
    beats[-1]["last"] = 1
    return beats


class Extra:
    """The verifier's side of the extra token, for either sampler of the tree manager.

    Two-pass (``SELECT_LANES = 0``): after the decision, ``last``'s residual on
    ``w`` twice. One-pass: before the decision, every node's residual on ``tot``
    (nodes in a random order; with ``stale``, one node's totals from another
    vector), after it ``last``'s residual once on ``w``. :meth:`want` is the
    token the block must give (``None``: the selection is invalid, an
    ``error.token`` pulse and no token). The totals the block holds are
    modelled as it keeps them (``hw.token_select``): a node's total stays valid
    until a selection gives a token, so a refused selection leaves them all for
    the next tree, whose own totals replace theirs node by node.
    """

    def __init__(self, tb: TB, pattern: str) -> None:
        P = params()
        self.tb, self.rng = tb, tb.rng
        self.WB, self.TB, self.N = P["WEIGHT_BITS"], P["TOKEN_BITS"], P["N_NODES"]
        self.one_pass = P.get("SELECT_LANES", 0) > 0
        self.L = P.get("SELECT_LANES", 0) or P["LANES"]
        self.w_src = StreamSource(tb, "w", beat_layout(self.L, self.WB), pattern)
        self.extra = StreamSink(tb, "extra", extra_layout(self.TB), pattern)
        self.tot_src = None
        if self.one_pass:
            self.tot_src = StreamSource(tb, "tot", tot_layout(self.L, self.WB, self.N), pattern)
        self.res: list[list[int]] = []
        self.totals: dict[int, int] = {}

    def before(self, n: int, *, skip: int | None = None, stale: bool = False) -> None:
        """The residuals of a tree's ``n`` nodes; one-pass: their totals sent (but
        ``skip``'s, whose total is then missing)."""
        self.res = [residual(self.rng, self.WB, self.TB) for _ in range(n)]
        if not self.one_pass:
            return
        order = list(range(n))
        self.rng.shuffle(order)
        odd = self.rng.randrange(n) if stale else None
        for j in order:
            if j == skip:
                continue
            w = residual(self.rng, self.WB, self.TB) if j == odd else self.res[j]
            self.totals[j] = sum(w)
            for b in one_pass(w, self.L):
                self.tot_src.send({"node": j, **b})

    async def drained(self) -> None:
        """Every totals beat sent is taken (the tree's last beat may follow: the
        decision's selection must find them all)."""
        if self.one_pass:
            await self.tb.wait_for(lambda: self.tot_src.idle, what="totals taken")

    def after(self, last: int) -> None:
        """``last``'s residual on ``w`` (twice for the two-pass sampler)."""
        beats = one_pass(self.res[last], self.L)
        for b in beats * (1 if self.one_pass else 2):
            self.w_src.send(dict(b))

    def want(self, last: int, u32: int) -> int | None:
        """The extra token for a decision ending at ``last`` (``u32``: lane 0)."""
        if not self.one_pass:
            return sample_weights(self.res[last], u32)
        total = self.totals.get(last, 0)
        if total == 0:
            return None
        try:
            token = select_one_pass(self.res[last], u32, total)
        except ValueError:  # the stale total's threshold is never passed
            return None
        self.totals = {}  # a selection that gives a token invalidates every total
        return token


def expect_rows(parents: list[int]) -> list[dict]:
    """The mask rows of ``parents`` as the mask generator emits them (SPEC §2)."""
    rows, depth, n = gtree.mask_rows(parents), gtree.depths(parents), len(parents)
    return [
        {"node": i, "depth": depth[i], "row": rows[i], "last": int(i == n - 1)} for i in range(n)
    ]
