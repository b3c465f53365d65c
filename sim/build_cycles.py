"""Cycle model of the tree builder and the topology optimiser (spec §3.6 - §3.11).

The hardware builder (``ChipConfig(builder="hardware")``) adds three costs to a
step, each a pure function of the step's quantities:

``stream`` = ``expanded * ceil(V / LANES)``
    The top-K unit takes the draft's distribution of every expanded node,
    ``LANES`` probabilities per cycle, without a stall. It runs while the
    draft model produces them and is exposed only beyond the draft time.
``build`` = ``n + STATIC_TAIL`` (static) or ``C + M + DYNAMIC_TAIL`` (dynamic)
    After the last distribution beat, until the built tree's end beat. Its
    nodes stream into the mask generator, so the mask adds only its latency
    after it.
``optimise`` = :func:`solve_cycles` on a re-solve step, else 0
    The topology optimiser's re-solve after the step's decision, before the
    next shape: on the critical path.

``n``: the shape's nodes (the static builder passes over every one, pruned or
not); ``C``: the dynamic builder's candidates; ``M``: its budget. The tails
are the RTL testbenches' worst measured counts
(``docs/blocks/tree_builder.md``), within the issue's targets ``n + 4`` and
``C + M + 8``; :func:`dp_cycles` is the optimiser's engine schedule, which its
testbench measures cycle for cycle, and :func:`solve_cycles` the bound its
testbench checks every re-solve against (``docs/blocks/topology_optimiser.md``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from checks import integer
from golden.builder import FixedEagle2Tree, FixedStaticTree, FixedTopologyOptimiser
from hw.topology import dp as hw_dp

__all__ = [
    "STATIC_TAIL",
    "DYNAMIC_TAIL",
    "BuildCycles",
    "stream_cycles",
    "static_build_cycles",
    "dynamic_build_cycles",
    "dp_cycles",
    "draft_cycles",
    "solve_cycles",
    "resolve_cycles",
]

#: static mode: the end beat this many cycles after the tree's ``n`` (measured bound)
STATIC_TAIL = 4
#: dynamic mode: the end beat at most ``C + M + DYNAMIC_TAIL`` after the last beat (measured bound)
DYNAMIC_TAIL = 5


@dataclass(frozen=True)
class BuildCycles:
    """One step's tree-builder and optimiser cycles (module docstring).

    Attributes
    ----------
    stream, build, optimise : int
    """

    stream: int = 0
    build: int = 0
    optimise: int = 0


def stream_cycles(vocab: int, lanes: int, expanded: int) -> int:
    """``expanded * ceil(vocab / lanes)``: the top-K unit's input beats."""
    v = integer("vocab", vocab, 1, 1 << 17)
    ln = integer("lanes", lanes, 1, 16)
    return integer("expanded", expanded, 0) * math.ceil(v / ln)


def static_build_cycles(n_nodes: int) -> int:
    """Static mode: ``n + STATIC_TAIL`` after the last distribution beat, ``n``
    the shape's nodes."""
    return integer("n_nodes", n_nodes, 1, 1024) + STATIC_TAIL


def dynamic_build_cycles(candidates: int, budget: int) -> int:
    """Dynamic mode: ``C + M + DYNAMIC_TAIL`` after the last distribution beat."""
    c = integer("candidates", candidates, 0)
    return c + integer("budget", budget, 1, 1024) + DYNAMIC_TAIL


def dp_cycles(budget: int, depth: int, ranks: int) -> int:
    """The optimiser's DP for the largest budget ``M``, depth ``D`` and ``K``
    ranks (``K`` capped at ``M - 1``): the engine's schedule,
    :func:`hw.topology.dp.dp_cycles`, which its testbench checks cycle for cycle."""
    M = integer("budget", budget, 2, 1024)
    D = integer("depth", depth, 1, 1023)
    K = integer("ranks", ranks, 1, 16)
    return hw_dp.dp_cycles(M, D, min(K, M - 1))


def solve_cycles(
    budget: int, depth: int, ranks: int, tracked: int, acc_bits: int, budgets: int, nodes: int
) -> int:
    """A whole re-solve, bounded as the optimiser's testbench checks it:
    :func:`hw.topology.dp.solve_cycles_bound` (the DP, the estimates of
    ``tracked`` ranks, the budget choice over ``budgets``, the tree walk of the
    chosen ``nodes``-node tree and the rest)."""
    M = integer("budget", budget, 2, 1024)
    return hw_dp.solve_cycles_bound(
        M,
        integer("depth", depth, 1, 1023),
        min(integer("ranks", ranks, 1, 16), M - 1),
        integer("tracked", tracked, 1, 16),
        integer("acc_bits", acc_bits, 8, 24),
        integer("budgets", budgets, 1, 16),
        integer("nodes", nodes, 1, 1024),
    )


def draft_cycles(policy: object, vocab: int, lanes: int) -> BuildCycles:
    """The builder's cycles of the tree ``policy`` just built (``stream`` and
    ``build``); zero for a policy that is not the hardware builder's.

    ``vocab`` and ``lanes`` are the profile's (the functional workload's
    vocabulary is a byte-level n-gram's; the timing is the modelled chip's).
    A policy with a ``build_cycles(vocab, lanes)`` method (the ``rtl``
    backend's, :class:`sim.rtl.builder.RTLTreePolicy`) gives its own.
    """
    own = getattr(policy, "build_cycles", None)
    if callable(own):
        return own(vocab, lanes)
    if isinstance(policy, FixedEagle2Tree) and policy.last is not None:
        b = policy.last
        return BuildCycles(
            stream=stream_cycles(vocab, lanes, len(b.expanded)),
            build=dynamic_build_cycles(len(b.cand_parents) - 1, policy.n_nodes),
        )
    if isinstance(policy, FixedStaticTree) and policy.last is not None:
        b = policy.last
        return BuildCycles(
            stream=stream_cycles(vocab, lanes, len(b.expanded)),
            build=static_build_cycles(b.shape_nodes),
        )
    return BuildCycles()


def resolve_cycles(policy: object, solves_before: int) -> int:
    """The optimiser's re-solve cycles (:func:`solve_cycles`) if ``policy``
    solved since it had ``solves_before`` solves (else 0)."""
    if not isinstance(policy, FixedTopologyOptimiser) or len(policy.history) <= solves_before:
        return 0
    last = policy.history[-1]
    k = max((b + 1 for b, p in enumerate(last.estimate) if p > 0), default=1)
    return solve_cycles(
        policy.n_nodes,
        policy.max_depth,
        k,
        policy.ranks,
        policy.acc_bits,
        len(policy.budgets),
        last.n_nodes,
    )
