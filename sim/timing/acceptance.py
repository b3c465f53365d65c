"""The acceptance model of the timing model: a tree as its chain equivalent.

A tree that accepts ``mean_accepted`` draft tokens per step at depth ``depth``
is modelled as the chain with per-token acceptance ``alpha`` that accepts as
many (:func:`chain_alpha`, SPEC §7). From ``alpha`` follow the distribution of
accepted tokens per step (:func:`accepted_distribution`) and the probability
that a speculative draft's predicted tip is right
(:func:`predicted_tip_probability`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from checks import integer, real
from golden import tree as _tree

__all__ = [
    "accepted_distribution",
    "chain_alpha",
    "draft_evals_of",
    "predicted_tip_probability",
]

#: The deepest tree: a chain of ``N_NODES`` (1,024) nodes.
MAX_DEPTH = _tree.MAX_NODES - 1


def chain_alpha(mean_accepted: float, depth: int) -> float:
    """Per-token acceptance ``alpha`` of the chain equivalent to a tree.

    Solves SPEC §7's ``alpha (1 - alpha**depth) / (1 - alpha) = mean_accepted``
    by bisection (the left side increases with ``alpha``).

    Parameters
    ----------
    mean_accepted : float
        Mean accepted draft tokens per step, in ``[0, depth]``.
    depth : int
        Tree depth (the longest acceptable path), ``0 .. MAX_DEPTH`` (1,023).

    Returns
    -------
    float
        ``alpha`` in ``[0, 1]``.

    Raises
    ------
    ValueError
        Naming ``depth`` or ``mean_accepted``.
    """
    depth = integer("depth", depth, 0, MAX_DEPTH)
    mean_accepted = real("mean_accepted", mean_accepted, 0, depth)
    if depth == 0 or mean_accepted == 0:
        return 0.0
    if mean_accepted == depth:
        return 1.0

    def f(a: float) -> float:
        return sum(a**i for i in range(1, depth + 1))

    lo, hi = 0.0, 1.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if f(mid) < mean_accepted else (lo, mid)
    return 0.5 * (lo + hi)


def predicted_tip_probability(mean_accepted: float, depth: int) -> float:
    """Probability that the speculative draft's predicted tip is right.

    Assumption (module docstring): the tree behaves as its chain
    equivalent (:func:`chain_alpha`); the prediction is the draft's top path to
    ``depth`` plus its top guess for the extra token, right with probability
    ``alpha ** (depth + 1)``. Optimistic for bushy trees (siblings raise the
    mean accepted without raising the top path's probability); pessimistic in
    that no partially right speculative draft is salvaged.
    """
    a = chain_alpha(mean_accepted, depth)
    return a ** (depth + 1)


def accepted_distribution(alpha: float, depth: int) -> np.ndarray:
    """``P(accepted = k)``, ``k = 0..depth``, for a chain with acceptance ``alpha``
    (``[0, 1]``) and ``depth`` ``0 .. MAX_DEPTH``; ``ValueError`` naming either."""
    alpha = real("alpha", alpha, 0, 1)
    depth = integer("depth", depth, 0, MAX_DEPTH)
    k = np.arange(depth + 1)
    p = alpha**k * (1.0 - alpha)
    p[depth] = alpha**depth
    return p


def draft_evals_of(parents: Sequence[int]) -> int:
    """Draft-model evaluations a tree needs: its nodes with children (root included).

    ``parents`` is checked (:func:`golden.tree.structure`, cached per tree):
    ``int()`` would have truncated a float parent.
    """
    return len(_tree.structure(parents).internal)
