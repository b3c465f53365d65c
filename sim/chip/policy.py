"""The tree policy of a sequence, made from the configuration."""

from __future__ import annotations

from golden import trees as _trees
from golden.draft import TreePolicy
from sim.chip.config import ChipConfig, static_parents
from sim.timing import Profile
from sim.topology import TopologyOptimiser

__all__ = ["make_policy"]


def make_policy(cfg: ChipConfig, profile: Profile | None = None) -> TreePolicy:
    """A fresh tree policy for one sequence (each sequence adapts on its own).

    ``plain`` and ``chain``: :class:`golden.trees.Chain`; ``static``:
    :class:`golden.trees.StaticTree` of :func:`sim.chip.config.static_parents`;
    ``eagle2``: :class:`golden.trees.Eagle2Tree`; ``sequoia``: the topology
    optimiser (:class:`sim.topology.TopologyOptimiser`) ranking trees on
    ``profile`` (default: the configuration's).
    """
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
