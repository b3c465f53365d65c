"""The tree builder's dynamic mode (EAGLE-2) in fixed point.

The golden twin of spec §3.9: expansion by path confidence (§3.7) over the
top-K children (§3.6) of each expanded node, then a rerank that keeps the
``M - 1`` most confident candidates, output in creation order. The float
policy it approximates is :class:`golden.eagle.Eagle2Tree`; the differences
(quantisation, truncated products, ``q = 0`` never a child, creation-order
numbering) are listed in decision 0039 and measured by
``tests/test_builder_twins.py``. :class:`golden.builder.FixedEagle2Tree` is
the tree policy built on it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from checks import bits as check_bits
from checks import integer
from golden import tree as _tree
from golden.topk import CONF_BITS, K_MAX, check_conf_bits, root_confidence, topk

__all__ = [
    "W_MAX",
    "DynamicBuild",
    "build_dynamic",
    "expand_and_rerank",
    "check_dynamic",
]

#: most nodes expanded per round (spec §3.9)
W_MAX = 16


@dataclass
class DynamicBuild:
    """A tree built in dynamic mode (spec §3.9).

    Members
    -------
    parents, tokens, q, confidence : list[int]
        The kept tree in creation order (§2), each node's token (``tokens[0]``
        the root token given), top-K ``q`` (root 0) and confidence.
    source : list[int]
        Each kept node's candidate index (creation order, root 0).
    expanded : list[int]
        The candidates expanded, in expansion order (the order their
        distributions were read).
    cand_parents, cand_conf : list[int]
        Every candidate's parent and confidence, creation order.
    """

    parents: list[int] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    q: list[int] = field(default_factory=list)
    confidence: list[int] = field(default_factory=list)
    source: list[int] = field(default_factory=list)
    expanded: list[int] = field(default_factory=list)
    cand_parents: list[int] = field(default_factory=list)
    cand_conf: list[int] = field(default_factory=list)


def _by_confidence(conf: list[Any], idx: Sequence[int]) -> list[int]:
    """``idx`` ranked by confidence: higher first, equal the one created first."""
    return sorted(idx, key=lambda i: (-conf[i], i))


def check_dynamic(n_nodes: int, depth: int, k: int, width: int) -> tuple[int, int, int, int]:
    """The dynamic builder's parameters (spec §3.9), checked: ``(M, D, K, W)``."""
    return (
        integer("n_nodes", n_nodes, 1, _tree.MAX_NODES),
        integer("depth", depth, 1, _tree.MAX_NODES - 1),
        integer("k", k, 1, K_MAX),
        integer("width", width, 1, W_MAX),
    )


def build_dynamic(
    dist: Callable[[list[int]], Sequence[Sequence[int]]],
    n_nodes: int,
    depth: int,
    k: int,
    width: int,
    *,
    prob_bits: int = 16,
    conf_bits: int = CONF_BITS,
    root_token: int = -1,
) -> DynamicBuild:
    """Build a tree in dynamic mode (spec §3.9).

    Parameters
    ----------
    dist : callable
        ``dist(paths)``: the quantised draft distributions (§3.6's ``q``) of
        the nodes to expand, given as their token paths from the root (the
        root's path is empty), in that order: one round's expansion.
    n_nodes : int
        ``M``, the budget, root included, ``1 .. N_NODES``.
    depth : int
        ``D``, the largest number of expansion rounds, ``1 .. N_NODES - 1``.
    k : int
        ``K``: top-K children of an expanded node, ``1 .. 16``.
    width : int
        ``W``: nodes expanded per round after the first, ``1 .. 16``.
    prob_bits, conf_bits : int
        ``PROB_BITS``, ``CONF_BITS`` (§3.7).
    root_token : int
        Put in ``tokens[0]``.

    Returns
    -------
    DynamicBuild

    Raises
    ------
    ValueError
        A parameter out of range, or a distribution ``dist`` returned out of
        §3.6's ranges (naming it).
    """
    P = check_bits("prob_bits", prob_bits)
    C = check_conf_bits(conf_bits, P)
    return expand_and_rerank(
        dist,
        check_dynamic(n_nodes, depth, k, width),
        prob_bits=P,
        root=root_confidence(C),
        child=lambda c, q: (c * q) >> P,
        root_token=root_token,
    )


def expand_and_rerank(
    dist: Callable[[list[int]], Sequence[Sequence[int]]],
    params: tuple[int, int, int, int],
    *,
    prob_bits: int,
    root: Any,
    child: Callable[[Any, int], Any],
    root_token: int = -1,
) -> DynamicBuild:
    """§3.9's expansion and rerank with the confidence arithmetic given:
    ``root`` the root's confidence, ``child(c_parent, q)`` a child's.
    :func:`build_dynamic` passes §3.7's; a test passes exact rationals to
    separate the truncation's effect from the quantisation's."""
    M, D, K, W = params
    par, tok, qs, conf, paths = [-1], [int(root_token)], [0], [root], [[]]
    out = DynamicBuild(expanded=[], cand_parents=par, cand_conf=conf)
    frontier = [0]
    for _ in range(min(D, M - 1)):
        rows = dist([paths[a] for a in frontier])
        if len(rows) != len(frontier):
            raise ValueError(f"dist returned {len(rows)} distributions for {len(frontier)} nodes")
        new: list[int] = []
        for a, row in zip(frontier, rows, strict=True):
            out.expanded.append(a)
            for e in topk(row, K, prob_bits=prob_bits):
                new.append(len(par))
                par.append(a)
                tok.append(e.token)
                qs.append(e.q)
                conf.append(child(conf[a], e.q))
                paths.append(paths[a] + [e.token])
        frontier = _by_confidence(conf, new)[:W]
        if not frontier:
            break
    kept = sorted(_by_confidence(conf, range(1, len(par)))[: M - 1])
    new_id = {0: 0}
    out.parents, out.tokens, out.q, out.confidence, out.source = [-1], [tok[0]], [0], [root], [0]
    for c in kept:
        new_id[c] = len(out.parents)
        out.parents.append(new_id[par[c]])  # the parent ranks first, so it is kept
        out.tokens.append(tok[c])
        out.q.append(qs[c])
        out.confidence.append(conf[c])
        out.source.append(c)
    return out
