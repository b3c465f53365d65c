"""The arguments of one verification step, checked: lane outputs, the draft
rows ``q`` (shape, the rows a tree uses) and a node's distributions.

Shared by :mod:`golden.accept` (precompute, the parallel and sequential
steps) and :mod:`golden.walk` (the decoder's walk); every error a
``ValueError`` naming the argument and, for a row, the node.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from checks import choice, int_array, prob_matrix

__all__ = ["ARITHS", "check_arith", "check_q_shape", "check_rows", "dist_rows", "lanes"]

ARITHS = ("float", "fixed")


def check_arith(arith: object) -> str:
    """``arith``, one of :data:`ARITHS` (``"float"``: the mathematical
    reference; ``"fixed"``: bit-exact with the RTL).

    Raises
    ------
    ValueError
        ``"arith = <value!r>: must be one of 'float', 'fixed'"``.
    """
    return choice("arith", arith, ARITHS)  # type: ignore[return-value]


def lanes(lane_out: object, n: int) -> np.ndarray:
    """``lane_out`` as ``uint32``: at least ``n`` 32-bit lane outputs (nothing wraps)."""
    out = int_array("lane_out", lane_out, 0, (1 << 32) - 1)
    if out.shape[0] < n:
        raise ValueError(f"lane_out has {out.shape[0]} lanes, the tree {n} nodes")
    return out.astype(np.uint32)


def check_rows(name: str, rows: np.ndarray, nodes: Sequence[int]) -> None:
    """``rows[r]`` (node ``nodes[r]``'s distribution) a probability vector each;
    an error names the node: ``q[<node>] sums to ...``."""
    prob_matrix(name, rows, row_ids=nodes)


def check_q_shape(q: object, q_index: object, last: int) -> None:
    """``q`` a 2-D array of draft rows with a row for node ``last`` (the highest
    internal node) when ``q_index`` is ``None``.

    Raises
    ------
    ValueError
        ``"q has shape ...: expected (n, V) draft distributions"``.
    """
    if (
        isinstance(q, str | bytes)
        or np.ndim(q) != 2
        or (q_index is None and np.shape(q)[0] <= last)
    ):
        raise ValueError(f"q has shape {np.shape(q)}: expected (n, V) draft distributions")


def dist_rows(q: np.ndarray, q_index: np.ndarray | None, nodes: Sequence[int]) -> np.ndarray:
    check_q_shape(q, q_index, max(nodes, default=0))
    try:
        q = np.asarray(q, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError("q: must be an (n, V) array of draft distributions") from None
    if q_index is None:
        return np.array(q[list(nodes)], dtype=np.float64)
    qi = int_array("q_index", q_index, -1, np.shape(q)[0] - 1)
    rows = qi[list(nodes)]
    if (rows < 0).any():
        bad = int(np.asarray(nodes)[rows < 0][0])
        raise ValueError(f"q_index[{bad}] = -1: node {bad} has children but no draft distribution")
    return np.array(q[rows], dtype=np.float64)
