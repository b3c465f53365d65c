"""Per-tree-shape index arrays of the decoder's hot path, computed once per shape.

A decoding step touches the same tree shape over and over: which nodes the
draft expands level by level, where each node's context tail comes from,
which rows of the residual update each sibling rank touches. :func:`plan`
derives all of it from a parent list once (cached like
:func:`golden.tree.structure`), so a step is a fixed, short sequence of numpy
calls over whole levels and ranks.

Internal nodes (nodes with children) are kept in one order, :attr:`TreePlan.order`:
most children first, ties by index. The internal nodes with more than ``j``
children are then a prefix of it, so the residual update of sibling rank ``j``
(SPEC §3.2) works on a slice of the rows, in place, without gathers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from golden import tree as _tree
from golden._check import parents_key

__all__ = ["PlanLevel", "RankGroup", "TreePlan", "TailGathers", "plan"]


@dataclass(frozen=True, eq=False)
class PlanLevel:
    """The internal nodes of one depth, expanded together by the draft.

    Attributes
    ----------
    depth : int
    nodes : np.ndarray
        The internal nodes of this depth, in index order.
    counts : np.ndarray
        Number of children of each.
    kids : np.ndarray
        Their children in order, flattened.
    kid_parent : np.ndarray
        Parent of every entry of ``kids``.
    rep : np.ndarray
        Row (position in ``nodes``) of every entry of ``kids``.
    row_offset : np.ndarray
        ``arange(len(nodes))[:, None]``.
    q_rows : np.ndarray
        Rows of the draft's ``q`` matrix holding these nodes (levels in order).
    kid_start, kid_stop : int
        ``kids`` is ``TreePlan.kids[kid_start:kid_stop]``.
    paths : np.ndarray
        ``(len(nodes), depth)``: the nodes from depth 1 down to each node.
    """

    depth: int
    nodes: np.ndarray
    counts: np.ndarray
    kids: np.ndarray
    kid_parent: np.ndarray
    rep: np.ndarray
    row_offset: np.ndarray
    q_rows: np.ndarray
    kid_start: int
    kid_stop: int
    paths: np.ndarray
    _rep_v: dict[int, np.ndarray] = field(default_factory=dict, repr=False)

    def rep_times(self, V: int) -> np.ndarray:
        """``rep * V`` (cached per vocabulary size)."""
        r = self._rep_v.get(V)
        if r is None:
            r = self._rep_v[V] = self.rep * V
        return r


@dataclass(frozen=True, eq=False)
class RankGroup:
    """Sibling rank ``j``: the first ``count`` nodes of ``order`` have a child of rank ``j``.

    Attributes
    ----------
    count : int
    kids : np.ndarray
        That child of each (``count`` entries).
    rows : np.ndarray
        ``arange(count)``.
    more : int
        How many of them have a child of rank ``j + 1`` (a prefix again).
    """

    count: int
    kids: np.ndarray
    rows: np.ndarray
    more: int


@dataclass(frozen=True, eq=False)
class TailGathers:
    """Where the context tails of the nodes come from, for a model reading ``window`` tokens.

    The tails are rows of ``vec[index]`` with ``vec = [tail, tokens]``: ``tail``
    the last ``window`` tokens of the context (right-aligned, ``-1`` before a
    short one; its last entry is the root's token) and ``tokens`` the tree's
    ``n`` tokens.

    Attributes
    ----------
    full : np.ndarray
        ``(n, window)``: every node, in index order.
    order : np.ndarray
        ``(len(order), window)``: the internal nodes in :attr:`TreePlan.order`.
    levels : tuple[np.ndarray, ...]
        Per :class:`PlanLevel`: its nodes.
    """

    full: np.ndarray
    order: np.ndarray
    levels: tuple[np.ndarray, ...]


@dataclass(frozen=True, eq=False)
class TreePlan:
    """Everything a decoding step needs about a tree shape (see the module docstring).

    Attributes
    ----------
    structure : golden.tree.Structure
    n : int
    levels : tuple[PlanLevel, ...]
        Depths with internal nodes, shallowest first: the draft's expansion order.
    level_pos : np.ndarray
        Node -> its row in the draft's ``q`` matrix (levels in order), ``-1`` for leaves.
    level_rep : np.ndarray
        The levels' ``rep`` concatenated (one entry per non-root node, levels in order).
    level_row : list[tuple[int, int]]
        Node -> (its level's index in ``levels``, its row in that level), ``(-1, -1)``
        for leaves.
    order : np.ndarray
        Internal nodes, most children first, ties by index.
    pos : np.ndarray
        Node -> its position in ``order``, ``-1`` for leaves.
    pos_list : list[int]
        ``pos`` as a list.
    q_perm : np.ndarray
        ``level_pos[order]``: the draft's ``q`` rows in ``order``.
    ranks : tuple[RankGroup, ...]
        One per sibling rank.
    parent_pos : np.ndarray
        ``pos[parents[i]]`` for ``i = 1 .. n-1``.
    ancestors : np.ndarray
        ``(n, max(depth, 1))``: ``ancestors[i, j]`` is the node of ``i``'s path at
        depth ``j + 1`` (``i`` itself at its own depth), 0 past it.
    """

    structure: _tree.Structure
    n: int
    levels: tuple[PlanLevel, ...]
    level_pos: np.ndarray
    level_rep: np.ndarray
    level_row: list[tuple[int, int]]
    order: np.ndarray
    pos: np.ndarray
    pos_list: list[int]
    q_perm: np.ndarray
    ranks: tuple[RankGroup, ...]
    parent_pos: np.ndarray
    ancestors: np.ndarray = field(repr=False)
    _gathers: dict[int, TailGathers] = field(default_factory=dict, repr=False)

    def gathers(self, window: int) -> TailGathers:
        """The :class:`TailGathers` for a model with ``context_window = window`` (cached)."""
        g = self._gathers.get(window)
        if g is None:
            g = self._gathers[window] = self._build_gathers(window)
        return g

    def _build_gathers(self, w: int) -> TailGathers:
        dep = np.asarray(self.structure.depths, dtype=np.int64)
        e = w - np.arange(w, dtype=np.int64)  # column c reads the token e = w - c from the end
        from_path = e[None, :] <= dep[:, None]
        # a path token: the ancestor at depth dep - e + 1 (the node itself for e = 1)
        col = np.clip(dep[:, None] - e[None, :], 0, None)
        anc = np.take_along_axis(self.ancestors, col, axis=1) if w else col
        full = np.where(from_path, w + anc, w - (e[None, :] - dep[:, None]))
        return TailGathers(
            full=full,
            order=full[self.order],
            levels=tuple(full[lv.nodes] for lv in self.levels),
        )


def _build(par: tuple[int, ...]) -> TreePlan:
    S = _tree.structure(par)
    n = S.n
    ch = S.children
    depth = max(S.depths)
    # ancestors[i, j]: the node of i's path at depth j + 1 (i itself at its own depth)
    ancestors = np.zeros((n, max(depth, 1)), dtype=np.int64)
    for i in range(1, n):
        p = S.paths[i]
        ancestors[i, : len(p)] = p
    levels = []
    level_pos = np.full(n, -1, dtype=np.int64)
    rows = n_kids = 0
    for d, nodes, k, kids, kid_parent in S.level_arrays:
        m = len(nodes)
        level_pos[nodes] = np.arange(rows, rows + m)
        levels.append(
            PlanLevel(
                depth=d,
                nodes=nodes,
                counts=k,
                kids=kids,
                kid_parent=kid_parent,
                rep=np.repeat(np.arange(m), k),
                row_offset=np.arange(m)[:, None],
                q_rows=np.arange(rows, rows + m),
                kid_start=n_kids,
                kid_stop=n_kids + len(kids),
                paths=ancestors[nodes, :d],
            )
        )
        rows += m
        n_kids += len(kids)
    level_row = [(-1, -1)] * n
    for li, lv in enumerate(levels):
        for r, a in enumerate(lv.nodes.tolist()):
            level_row[a] = (li, r)
    order = np.array(sorted(S.internal, key=lambda a: (-len(ch[a]), a)), dtype=np.int64)
    pos = np.full(n, -1, dtype=np.int64)
    pos[order] = np.arange(order.size)
    ranks = []
    kmax = len(ch[order[0]]) if order.size else 0
    for j in range(kmax):
        cnt = sum(1 for a in order.tolist() if len(ch[a]) > j)
        more = sum(1 for a in order.tolist() if len(ch[a]) > j + 1)
        ranks.append(
            RankGroup(
                count=cnt,
                kids=np.array([ch[a][j] for a in order[:cnt].tolist()], dtype=np.int64),
                rows=np.arange(cnt),
                more=more,
            )
        )
    return TreePlan(
        structure=S,
        n=n,
        levels=tuple(levels),
        level_pos=level_pos,
        level_rep=np.concatenate([lv.rep for lv in levels]) if levels else np.zeros(0, np.int64),
        level_row=level_row,
        order=order,
        pos=pos,
        pos_list=pos.tolist(),
        q_perm=level_pos[order],
        ranks=tuple(ranks),
        parent_pos=pos[np.asarray(S.parents[1:], dtype=np.int64)],
        ancestors=ancestors,
    )


@lru_cache(maxsize=1024)
def _plan(par: tuple[int, ...]) -> TreePlan:
    return _build(par)


def plan(parents: Sequence[int]) -> TreePlan:
    """The cached :class:`TreePlan` of a tree (validated; ``ValueError`` if invalid)."""
    return _plan(parents_key(parents))
