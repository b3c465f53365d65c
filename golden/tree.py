"""Draft-tree structure: validation, tree-mask rows and depths (SPEC §2).

A tree of ``n`` nodes is given by its parent list: ``parents[0] == -1`` (node 0
is the root) and ``0 <= parents[i] < i`` for every ``i >= 1`` (topological
order; siblings are ordered by index, lower index tried first).

The tree-mask row of node ``i`` is a Python ``int`` whose bit ``j`` is set iff
``j`` is ``i`` or an ancestor of ``i``: ``row[0] = 1``,
``row[i] = row[parents[i]] | (1 << i)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from checks import int_array, integer
from golden._check import parents_key

__all__ = [
    "MAX_NODES",
    "validate",
    "mask_rows",
    "depths",
    "children_lists",
    "mask_matrix",
    "sibling_rank",
    "paths",
    "Structure",
    "structure",
]


#: the largest tree (SPEC §5: ``N_NODES`` up to 1,024)
MAX_NODES = 1024


def validate(parents: Sequence[int], *, max_nodes: int | None = None) -> list[int]:
    """Check a parent list and return it as a list of Python ints.

    Parameters
    ----------
    parents : sequence of int
        ``parents[0] == -1`` and ``0 <= parents[i] < i``; Python or numpy
        integers (a float, ``bool`` or string entry is refused, never truncated).
    max_nodes : int, optional
        The largest tree accepted (``N_NODES``); at most :data:`MAX_NODES`,
        which is the bound without it.

    Raises
    ------
    ValueError
        Naming the offending node (``parents[i]``) or the size.
    """
    limit = MAX_NODES if max_nodes is None else integer("max_nodes", max_nodes, 1, MAX_NODES)
    if hasattr(parents, "__len__") and len(parents) > limit:  # before converting anything
        raise ValueError(f"tree has {len(parents)} nodes, more than N_NODES = {limit}")
    par = int_array("parents", parents).tolist()
    n = len(par)
    if n == 0:
        raise ValueError("parents is empty: a tree has at least the root node 0")
    if n > limit:
        raise ValueError(f"tree has {n} nodes, more than N_NODES = {limit}")
    if par[0] != -1:
        raise ValueError(f"parents[0] = {par[0]}: node 0 is the root and its parent must be -1")
    for i in range(1, n):
        if not 0 <= par[i] < i:
            raise ValueError(
                f"parents[{i}] = {par[i]}: node {i}'s parent must satisfy 0 <= parent < {i}"
            )
    return par


def mask_rows(parents: Sequence[int]) -> list[int]:
    """Tree-mask rows (ancestor-or-self bitmasks), one Python int per node."""
    return list(structure(parents).rows)


def depths(parents: Sequence[int]) -> list[int]:
    """Depth of every node: ``depth[0] = 0``, ``depth[i] = depth[parent[i]] + 1``."""
    return list(structure(parents).depths)


def children_lists(parents: Sequence[int]) -> list[list[int]]:
    """Children of every node, in sibling (index) order."""
    return [list(c) for c in structure(parents).children]


def sibling_rank(parents: Sequence[int]) -> list[int]:
    """0-based rank of every node among its siblings (root: 0)."""
    return list(structure(parents).rank)


def paths(parents: Sequence[int]) -> list[list[int]]:
    """Node indices from the first draft node (depth 1) down to each node.

    ``paths(parents)[0] == []``; ``paths(parents)[i]`` ends with ``i``.
    """
    return [list(p) for p in structure(parents).paths]


def mask_matrix(parents: Sequence[int]) -> np.ndarray:
    """The tree mask as an ``(n, n)`` boolean matrix: ``M[i, j]`` iff ``j`` in row ``i``."""
    par = validate(parents)
    n = len(par)
    m = np.zeros((n, n), dtype=bool)
    m[0, 0] = True
    for i in range(1, n):
        m[i] = m[par[i]]
        m[i, i] = True
    return m


@dataclass(frozen=True)
class Structure:
    """Everything derived from a parent list, computed once per distinct tree.

    Members
    -------
    parents, depths, rows, rank : tuple[int, ...]
        Per node: parent, depth, mask row, sibling rank.
    children, paths : tuple[tuple[int, ...], ...]
        Per node: its children in sibling order; the nodes from depth 1 down to it.
    internal : tuple[int, ...]
        Nodes with at least one child, in index order.
    levels : tuple[tuple[int, ...], ...]
        ``levels[d]``: the internal nodes at depth ``d``.
    rank_groups : tuple[tuple[np.ndarray, np.ndarray, np.ndarray], ...]
        ``rank_groups[j] = (rows, kids, more)``: for every internal node with
        more than ``j`` children, its position in ``internal``, its child of
        rank ``j`` and whether it has a child of rank ``j + 1``.
    level_arrays : tuple[tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray], ...]
        Per level with internal nodes: ``(depth, nodes, counts, kids, kid_parent)``,
        ``kids`` the children of ``nodes`` in order, flattened.
    """

    parents: tuple[int, ...]
    depths: tuple[int, ...]
    rows: tuple[int, ...]
    rank: tuple[int, ...]
    children: tuple[tuple[int, ...], ...]
    paths: tuple[tuple[int, ...], ...]
    internal: tuple[int, ...]
    levels: tuple[tuple[int, ...], ...]
    rank_groups: tuple[tuple[np.ndarray, np.ndarray, np.ndarray], ...]
    level_arrays: tuple[tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray], ...]

    @property
    def n(self) -> int:
        return len(self.parents)


@lru_cache(maxsize=1024)
def _structure(par: tuple[int, ...]) -> Structure:
    p = validate(par)
    n = len(p)
    rows, dep, rank, paths_ = [1], [0], [0], [()]
    ch: list[list[int]] = [[] for _ in range(n)]
    for i in range(1, n):
        a = p[i]
        rows.append(rows[a] | (1 << i))
        dep.append(dep[a] + 1)
        rank.append(len(ch[a]))
        ch[a].append(i)
        paths_.append(paths_[a] + (i,))
    internal = [a for a in range(n) if ch[a]]
    levels: list[list[int]] = [[] for _ in range(max(dep) + 1)]
    for a in internal:
        levels[dep[a]].append(a)
    kmax = max((len(ch[a]) for a in internal), default=0)
    groups = []
    for j in range(kmax):
        rows_j = [r for r, a in enumerate(internal) if len(ch[a]) > j]
        kids_j = [ch[internal[r]][j] for r in rows_j]
        more_j = [len(ch[internal[r]]) > j + 1 for r in rows_j]
        groups.append(
            (
                np.array(rows_j, dtype=np.int64),
                np.array(kids_j, dtype=np.int64),
                np.array(more_j, dtype=bool),
            )
        )
    level_arrays = []
    for d, lv in enumerate(levels):
        if lv:
            kids = [c for a in lv for c in ch[a]]
            level_arrays.append(
                (
                    d,
                    np.array(lv, dtype=np.int64),
                    np.array([len(ch[a]) for a in lv], dtype=np.int64),
                    np.array(kids, dtype=np.int64),
                    np.array([p[c] for c in kids], dtype=np.int64),
                )
            )
    return Structure(
        parents=tuple(p),
        depths=tuple(dep),
        rows=tuple(rows),
        rank=tuple(rank),
        children=tuple(tuple(c) for c in ch),
        paths=tuple(paths_),
        internal=tuple(internal),
        levels=tuple(tuple(lv) for lv in levels if lv),
        rank_groups=tuple(groups),
        level_arrays=tuple(level_arrays),
    )


def structure(parents: Sequence[int]) -> Structure:
    """The cached :class:`Structure` of a tree (validated; ``ValueError`` if invalid)."""
    return _structure(parents_key(parents))
