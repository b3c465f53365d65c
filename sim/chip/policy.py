"""The tree policy of a sequence, made from the configuration."""

from __future__ import annotations

from golden import builder as _builder
from golden import trees as _trees
from golden.draft import TreePolicy
from golden.tree import sibling_rank
from sim.chip.config import ChipConfig, static_parents
from sim.timing import Profile
from sim.topology import TopologyOptimiser, cost_table

__all__ = ["make_policy", "hardware_policy"]


def make_policy(cfg: ChipConfig, profile: Profile | None = None) -> TreePolicy:
    """A fresh tree policy for one sequence (each sequence adapts on its own).

    ``plain`` and ``chain``: :class:`golden.trees.Chain`; ``static``:
    :class:`golden.trees.StaticTree` of :func:`sim.chip.config.static_parents`;
    ``eagle2``: :class:`golden.trees.Eagle2Tree`; ``sequoia``: the topology
    optimiser (:class:`sim.topology.TopologyOptimiser`) ranking trees on
    ``profile`` (default: the configuration's). With ``builder = "hardware"``:
    the fixed-point twins of the tree builder and the topology optimiser
    (:func:`hardware_policy`).
    """
    if cfg.builder == "hardware":
        return hardware_policy(cfg, profile)
    if cfg.tree == "plain":
        return _trees.Chain(0)
    if cfg.tree == "chain":
        return _trees.Chain(cfg.depth)
    if cfg.tree == "static":
        return _trees.StaticTree(static_parents(cfg))
    if cfg.tree == "eagle2":
        return _trees.Eagle2Tree(cfg.nodes, cfg.depth, cfg.topk)
    prof = profile or cfg.timing_profile()
    return TopologyOptimiser(
        prof,
        cfg.nodes,
        cfg.depth,
        list(cfg.initial_acc),
        overlap=cfg.overlap,
        update_every=cfg.update_every,
        window=cfg.window,
        fallback=cfg.fallback,
        context_len=prof.workload.context_len if cfg.context_offset is None else cfg.context_offset,
    )


def hardware_policy(cfg: ChipConfig, profile: Profile | None = None) -> TreePolicy:
    """The tree builder's policies (spec §3.8 - §3.11, :mod:`golden.builder`).

    ``plain``, ``chain`` and ``static``: static mode on the shape (``K`` its
    largest child count); ``eagle2``: dynamic mode (``M = nodes``, ``D = depth``,
    ``K = W = topk``); ``sequoia``: the fixed topology optimiser (``R = 8``
    ranks) with the cost table software would load, each budget's step time on
    ``profile`` (:func:`sim.topology.cost_table`), driving static mode.
    """
    if cfg.tree == "eagle2":
        return _builder.FixedEagle2Tree(cfg.nodes, cfg.depth, cfg.topk, prob_bits=cfg.prob_bits)
    if cfg.tree == "sequoia":
        prof = profile or cfg.timing_profile()
        ctx = prof.workload.context_len if cfg.context_offset is None else cfg.context_offset
        budgets, costs, plain = cost_table(
            prof, cfg.nodes, cfg.depth, cfg.initial_acc, context_len=ctx, overlap=cfg.overlap
        )
        return _builder.FixedTopologyOptimiser(
            cfg.nodes,
            cfg.depth,
            list(cfg.initial_acc),
            costs,
            plain,
            budgets=budgets,
            update_every=cfg.update_every,
            window=cfg.window,
            fallback=cfg.fallback,
            prob_bits=cfg.prob_bits,
        )
    shape = {
        "plain": [-1],
        "chain": _trees.chain(cfg.depth),
        "static": static_parents(cfg),
    }[cfg.tree]
    k = max(1, max(sibling_rank(shape)[1:], default=0) + 1)
    return _builder.FixedStaticTree(shape, k, prob_bits=cfg.prob_bits)
