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

import numpy as np

__all__ = [
    "validate",
    "mask_rows",
    "depths",
    "children_lists",
    "mask_matrix",
    "sibling_rank",
    "paths",
]


def validate(parents: Sequence[int], *, max_nodes: int | None = None) -> list[int]:
    """Check a parent list and return it as a list of Python ints.

    Raises
    ------
    ValueError
        Naming the offending node (``parents[i]``) or the size.
    """
    try:
        par = [int(p) for p in parents]
    except (TypeError, ValueError) as exc:
        raise ValueError(f"parents must be a sequence of integers, got {parents!r}") from exc
    n = len(par)
    if n == 0:
        raise ValueError("parents is empty: a tree has at least the root node 0")
    if max_nodes is not None and n > max_nodes:
        raise ValueError(f"tree has {n} nodes, more than N_NODES = {max_nodes}")
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
    par = validate(parents)
    rows = [1]
    for i in range(1, len(par)):
        rows.append(rows[par[i]] | (1 << i))
    return rows


def depths(parents: Sequence[int]) -> list[int]:
    """Depth of every node: ``depth[0] = 0``, ``depth[i] = depth[parent[i]] + 1``."""
    par = validate(parents)
    d = [0]
    for i in range(1, len(par)):
        d.append(d[par[i]] + 1)
    return d


def children_lists(parents: Sequence[int]) -> list[list[int]]:
    """Children of every node, in sibling (index) order."""
    par = validate(parents)
    ch: list[list[int]] = [[] for _ in par]
    for i in range(1, len(par)):
        ch[par[i]].append(i)
    return ch


def sibling_rank(parents: Sequence[int]) -> list[int]:
    """0-based rank of every node among its siblings (root: 0)."""
    par = validate(parents)
    count = [0] * len(par)
    rank = [0] * len(par)
    for i in range(1, len(par)):
        rank[i] = count[par[i]]
        count[par[i]] += 1
    return rank


def paths(parents: Sequence[int]) -> list[list[int]]:
    """Node indices from the first draft node (depth 1) down to each node.

    ``paths(parents)[0] == []``; ``paths(parents)[i]`` ends with ``i``.
    """
    par = validate(parents)
    out: list[list[int]] = [[]]
    for i in range(1, len(par)):
        out.append(out[par[i]] + [i])
    return out


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
