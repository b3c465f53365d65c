"""The verifier engine (behavioural): each node's context read from the KV pool
through its view (:func:`kv_walk`), and the fixed-point ``pt``/``qt`` and residual
weights computed from the target's probabilities (:func:`fixed_point`).

The phase is described in :mod:`sim.chip.loop`'s docstring (2. **Verify**).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from golden import accept as _acc
from golden.sampler import quantize, quantize_weights
from sim.backend import KVBackend
from sim.chip.config import ChipConfig

__all__ = ["fixed_point", "kv_walk"]


def kv_walk(
    kv: KVBackend,
    pages: dict[int, int],
    seq: int,
    tip: int,
    dep: Sequence[int],
    rows: Sequence[int],
    *,
    window: int,
    layers: int,
) -> tuple[np.ndarray, int, int]:
    """Every node's context tail, read from the KV pool through its view.

    ``tip`` is the root's position, ``dep`` the nodes' depths, ``rows`` their mask
    rows (the lookup views), ``pages`` the token each page holds; a node's tail is
    the ``window`` positions ending at its own, ``-1`` where there is none or where
    a miss masks it out. Every one of ``layers`` layers is read and must agree
    (``RuntimeError`` otherwise).

    Returns the ``(n, window)`` tails matrix, the number of lookups and of misses.
    """
    w = window
    n = len(dep)
    L = layers
    tails = np.full((n, w), -1, dtype=np.int64)
    if w == 0:
        return tails, 0, 0
    lo = max(0, tip - (w - 1))
    pre_pos = list(range(lo, tip))  # committed prefix in the window, read once
    queries = [(seq, layer, pos, 1) for layer in range(L) for pos in pre_pos]
    spans = []
    for i in range(n):
        d0 = max(0, dep[i] - (w - 1))
        span = range(tip + d0, tip + dep[i] + 1)
        spans.append(span)
        queries.extend((seq, layer, pos, rows[i]) for layer in range(L) for pos in span)
    got = kv.lookups(queries)
    vals = [None if g is None else pages.get(g) for g in got]
    misses = sum(v is None for v in vals)
    # layers must agree; layer 0's value is the context token
    k = 0
    pre = {}
    for layer in range(L):
        for pos in pre_pos:
            v = vals[k]
            k += 1
            if layer == 0:
                pre[pos] = v
            elif v != pre[pos]:
                raise RuntimeError(f"KV pool: layer {layer} and layer 0 disagree at {pos}")
    for i in range(n):
        span = spans[i]
        m = len(span)
        mine = vals[k : k + m * L]
        k += m * L
        for layer in range(1, L):
            if mine[layer * m : (layer + 1) * m] != mine[:m]:
                raise RuntimeError(f"KV pool: layer {layer} and layer 0 disagree for node {i}")
        # the window of node i: positions tip + dep[i] - (w - 1) .. tip + dep[i]
        row = tails[i]
        first = tip + dep[i] - (w - 1)
        for pos in range(max(first, 0), span.start):
            row[pos - first] = -2 if pre[pos] is None else pre[pos]
        for j, pos in enumerate(span):
            row[pos - first] = -2 if mine[j] is None else mine[j]
        hole = np.flatnonzero(row == -2)
        if hole.size:  # a miss: that position and everything before it are masked out
            row[: hole[-1] + 1] = -1
    return tails, len(queries), misses


def fixed_point(
    c: ChipConfig, p: np.ndarray, dt: Any, par: list[int], tok: np.ndarray, vocab: int
) -> tuple[np.ndarray, np.ndarray, Callable[[int], list[int]]]:
    """The verifier's fixed-point outputs for the target's probabilities ``p`` of a
    draft tree ``dt`` (``parents`` ``par``, tokens ``tok``): ``pt``, ``qt`` of every
    node (SPEC §3.2 parallel form; greedy: one-hot targets) and the function giving the
    residual weights of ``last`` the tree manager asks for (SPEC §3.5, with its
    fallbacks: the residual, else ``p_last``, else ``argmax p_last``)."""
    greedy = c.mode == "greedy"
    if greedy:
        ptf, qtf = _acc.greedy_pt_qt(p, par, tok)
        pt, qt = quantize(ptf, c.prob_bits), quantize(qtf, c.prob_bits)
    else:
        pre = _acc.precompute(
            p,
            dt.q,
            par,
            tok,
            c.children_rule,
            q_index=dt.q_index,
            prob_bits=c.prob_bits,
            weight_bits=c.weight_bits,
            residuals=False,
        )
        pt, qt = pre.pt_fixed, pre.qt_fixed
    wb = c.weight_bits
    children = c.children_rule

    def residual(last: int) -> list[int]:
        p_last = p[last]
        if greedy:
            w = np.zeros(vocab, dtype=np.int64)
            w[int(np.argmax(p_last))] = 1
            return w.tolist()
        r = _acc.residual_at(p, dt.q, par, tok, last, children, q_index=dt.q_index)
        w = quantize_weights(r, wb)
        if not w.any():  # zero residual (quantisation): SPEC §3.5's fallback to p_last
            w = quantize_weights(p_last, wb)
            if not w.any():
                w = np.zeros(vocab, dtype=np.int64)
                w[int(np.argmax(p_last))] = 1
        return w.tolist()

    return pt, qt, residual
