"""Trees from the RTL tree builder: the ``rtl`` backend's hardware-builder policy.

With ``ChipConfig(builder="hardware", backend="rtl")`` every tree comes from
the tree manager's built path on the co-simulation (``hw/tree_manager``: the
tree builder and, for ``sequoia``, the topology optimiser), not from the
golden twins. :class:`RTLTreePolicy` is the :class:`golden.draft.TreePolicy`
the chip loop uses: it takes its configuration from the golden twin the
``python`` backend would use (:func:`sim.chip.policy.hardware_policy`), so
both backends run the same trees by construction only if the RTL is right:

* ``FixedStaticTree``: static mode on the twin's shape, sent on ``shape``
  (``opt = 0``);
* ``FixedEagle2Tree``: dynamic mode (``M``, ``D``, ``K``, ``W``);
* ``FixedTopologyOptimiser``: the optimiser configured once from the twin's
  fields (:func:`ocfg_beat`), then static mode on its shapes (``opt = 1``).
  The optimiser counts every step from the decision itself: ``observe``
  sends nothing.

The draft model answers the builder's requests: a request ``{node, parent,
token}`` extends the parent's path by ``token`` (the root's is the empty
path); its distribution is the draft's row for ``context + path``, quantised
(spec §3.6) and sent ``LANES`` per beat.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from golden import builder as _builder
from golden.draft import DraftTree, Model, StepRecord, TreePolicy
from golden.sampler import quantize
from sim.build_cycles import BuildCycles, stream_cycles

if TYPE_CHECKING:
    from sim.rtl.cosim import Cosim

__all__ = ["RTLTreePolicy", "BuildsTrees", "BuiltTree", "ocfg_beat", "bcfg_of", "run_build"]


def ocfg_beat(twin: _builder.FixedTopologyOptimiser, nb: int) -> dict:
    """The topology optimiser's configuration beat for the golden twin ``twin``
    (spec §3.10, §3.11): its ``M``, ``D``, ``U``, ``PW``, fallback, ``PROBE``,
    budgets and costs (padded to the RTL's ``NB`` entries) and fixed prior."""
    b = len(twin.budgets)
    if b > nb:
        raise ValueError(f"budgets: {b} entries, more than the RTL's NB = {nb}")
    return {
        "m": twin.n_nodes,
        "d": twin.max_depth,
        "u": twin.update_every,
        "pw": twin.prior_weight,
        "fallback": int(twin.fallback),
        "probe": twin.probe_depth,
        "nb": b,
        "budget": list(twin.budgets) + [0] * (nb - b),
        "cost": list(twin.costs) + [0] * (nb - b),
        "cost_plain": twin.cost_plain,
        "prior": list(twin.prior),
    }


def bcfg_of(twin: TreePolicy) -> tuple[dict, list[int] | None]:
    """The ``bcfg`` beat of one tree, and the software shape (static, ``opt =
    0``) or ``None``, for the golden twin ``twin``."""
    if isinstance(twin, _builder.FixedEagle2Tree):
        cfg = {"mode": 1, "k": twin.k, "m": twin.n_nodes, "d": twin.depth, "w": twin.width}
        return {**cfg, "opt": 0}, None
    if isinstance(twin, _builder.FixedTopologyOptimiser):
        return {"mode": 0, "k": twin.k, "m": 0, "d": 0, "w": 0, "opt": 1}, None
    if isinstance(twin, _builder.FixedStaticTree):
        return {"mode": 0, "k": twin.k, "m": 0, "d": 0, "w": 0, "opt": 0}, twin.shape()
    raise ValueError(f"policy = {twin!r}: not a tree builder policy of golden.builder")


class BuildsTrees(Protocol):
    """What :class:`RTLTreePolicy` needs of the tree manager
    (:class:`sim.rtl.RTLTreeManager` is one)."""

    hdl: dict[str, int]

    def configure_optimiser(self, beat: dict) -> int: ...

    def build_tree(
        self, cfg: dict, shape: list[int] | None, dist: Callable[[dict], list[int]]
    ) -> BuiltTree: ...


class RTLTreePolicy(TreePolicy):
    """Trees built by the RTL (module docstring).

    Parameters
    ----------
    tm : BuildsTrees
        The co-simulation's tree manager (:class:`sim.rtl.RTLTreeManager`).
    twin : TreePolicy
        The golden twin whose configuration is used (:func:`bcfg_of`).

    Attributes
    ----------
    last : BuiltTree or None
        The last tree the RTL built, with its measured cycles.
    """

    def __init__(self, tm: BuildsTrees, twin: TreePolicy) -> None:
        self.tm = tm
        self.twin = twin
        self.cfg, self.fixed_shape = bcfg_of(twin)
        self.prob_bits = twin.prob_bits
        self.max_nodes = twin.max_nodes
        self.configured = not isinstance(twin, _builder.FixedTopologyOptimiser)
        self.last = None

    def __repr__(self) -> str:
        return f"RTLTreePolicy({self.twin!r})"

    def parents(self) -> list[int]:
        raise NotImplementedError("the RTL builds the tree: it comes from build()")

    def build(
        self, draft: Model, context: Sequence[int], children: str, rng: np.random.Generator
    ) -> DraftTree:
        draft, V, tail, root = _builder._check_topk_build(children, draft, context)
        if not self.configured:
            self.tm.configure_optimiser(ocfg_beat(self.twin, self.tm.hdl["NB"]))
            self.configured = True
        paths: dict[int, tuple[int, ...]] = {}
        rows: dict[tuple[int, ...], np.ndarray] = {}

        def dist(req: dict) -> list[int]:
            node, parent, token = req["node"], req["parent"], req["token"]
            path = () if not paths else paths[parent] + (token,)
            paths[node] = path
            (r,) = _builder._draft_rows(draft, tail, [list(path)], V)
            rows[path] = r
            return quantize(r, self.prob_bits).tolist()

        b = self.tm.build_tree(self.cfg, self.fixed_shape, dist)
        self.last = b
        par, tok = [-1] + b.parents, [root] + b.tokens
        path_of: list[tuple[int, ...]] = [()] * len(par)
        float_rows = {}
        for i in range(1, len(par)):
            path_of[i] = path_of[par[i]] + (tok[i],)
        for i, p in enumerate(path_of):
            if p in rows:
                float_rows[i] = rows[p]
        return _builder._draft_tree(par, tok, float_rows, V)

    def build_cycles(self, vocab: int, lanes: int) -> BuildCycles:
        """The last tree's builder cycles for the chip's timing: ``build``
        measured on the RTL, ``stream`` modelled for the profile's ``vocab`` and
        ``lanes`` (:func:`sim.build_cycles.stream_cycles` of the distributions the
        RTL asked for: the functional workload's vocabulary is not the chip's)."""
        if self.last is None:
            return BuildCycles()
        return BuildCycles(
            stream=stream_cycles(vocab, lanes, self.last.expanded),
            build=self.last.cycles["build"],
        )

    def observe(self, record: StepRecord) -> None:
        """Nothing to send: the tree manager feeds the optimiser from the decision."""


@dataclass(frozen=True)
class BuiltTree:
    """A tree the RTL built (nodes ``1 .. n-1``) and its measured cycles.

    ``cycles``: ``build``, the tree's end beat after the last distribution
    beat (``t_end - t_last``; spec §6's tail); ``stream``, the distribution
    beats' span (``t_last - t_first + 1``). ``packet``: a static tree on the
    optimiser's shape, whose decision the tree manager sends the optimiser.
    """

    parents: list[int]
    tokens: list[int]
    q: list[int]
    conf: list[int]
    vrows: list[int]
    expanded: int
    cycles: dict[str, int]
    packet: bool


def run_build(
    sim: Cosim, cfg: dict, shape: list[int] | None, dist: Callable[[dict], list[int]], lanes: int
) -> BuiltTree:
    """One tree through the co-simulation's ``build`` / ``dist`` requests
    (:mod:`sim.rtl.serve_builder`), answering the builder's requests in order
    with ``dist(request)`` (a quantised distribution, one entry per token)."""
    r = sim.call("build", cfg=cfg, shape=shape)
    pending: deque[dict] = deque()
    asked = 0
    while True:
        if r["tm_error"]:
            sim._fail(f"tree manager error {r['tm_error']:#x} building a valid tree ({cfg})")
        pending.extend(r["reqs"])
        if r["done"]:
            break
        if not pending:
            sim._fail("tree builder: waiting for a distribution, but no request is open")
        q = dist(pending.popleft())
        asked += 1
        beats = [
            q[k : k + lanes] + [0] * (lanes - len(q[k : k + lanes]))
            for k in range(0, len(q), lanes)
        ]
        r = sim.call("dist", beats=beats)
    nodes = r["tree"]
    if len(r["vrows"]) != len(nodes) + 1:
        sim._fail(f"tree manager: {len(r['vrows'])} pre-verify rows for {len(nodes) + 1} nodes")
    return BuiltTree(
        parents=[b["parent"] for b in nodes],
        tokens=[b["token"] for b in nodes],
        q=[b["q"] for b in nodes],
        conf=[b["conf"] for b in nodes],
        vrows=list(r["vrows"]),
        expanded=asked,
        packet=cfg["mode"] == 0 and bool(cfg["opt"]),
        cycles={"build": r["t_end"] - r["t_last"], "stream": r["t_last"] - r["t_first"] + 1},
    )
