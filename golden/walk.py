"""SPEC §3's acceptance on a :class:`golden.plan.TreePlan`: the decoders' hot path.

:func:`walk_step` is SPEC §3.1's loop, asking only for the target rows of the
nodes it visits; :func:`plan_step` is SPEC §3.2's parallel form, one numpy
pass per sibling rank. Both compute every number with the same float
operations as the reference forms of :mod:`golden.accept` (which re-exports
this module's public names), so their results agree bit for bit. Arguments
are trusted: the callers check them. :func:`extra_token` samples the extra
token from a residual.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from checks import bits, integer, prob_vector
from golden import plan as _plan
from golden.sampler import quantize, quantize_weights, sample_float
from golden.steparg import check_arith, check_q_shape

__all__ = ["extra_token", "plan_q_rows", "plan_step", "walk_step"]


def extra_token(
    dist: np.ndarray,
    fallback: np.ndarray,
    u32: int,
    *,
    arith: str = "fixed",
    weight_bits: int = 16,
) -> int:
    """Sample the extra token from ``dist`` (a residual) with lane 0's output.

    ``fixed``: the token sampler on ``dist`` quantised to ``weight_bits``;
    ``float``: inverse CDF with ``U = u32 / 2**32``. A zero distribution falls
    back to ``fallback`` (``p_last``), then to ``argmax fallback``.

    Raises
    ------
    ValueError
        ``u32`` not in ``0 .. 2**32 - 1``, ``arith`` not ``"fixed"`` or
        ``"float"``, ``weight_bits`` not in ``1 .. 32``.
    """
    u32 = integer("u32", u32, 0, (1 << 32) - 1)
    check_arith(arith)
    weight_bits = bits("weight_bits", weight_bits)
    dist = prob_vector("dist", dist, allow_zero=True)
    fallback = prob_vector("fallback", fallback, length=dist.shape[0], allow_zero=True)
    if arith == "fixed":
        for d in (dist, fallback):
            w = quantize_weights(d, weight_bits)
            cum = np.cumsum(w)
            total = int(cum[-1])
            if total:  # sample_weights(w, u32) without re-validating what we just built
                return int(np.searchsorted(cum, (int(u32) * total) >> 32, side="right"))
        return int(np.argmax(fallback))
    for d in (dist, fallback):
        if np.asarray(d).sum() > 0:
            return sample_float(d, int(u32) / 2.0**32)
    return int(np.argmax(fallback))


def _normalize_rows_inplace(x: np.ndarray) -> None:
    """:func:`golden.accept._normalize_rows` in place (``x`` a C-contiguous block of rows)."""
    s = x.sum(axis=1, keepdims=True)
    ok = s > 0
    np.divide(x, s, out=x, where=ok)
    if not ok.all():
        x[~ok[:, 0]] = 0.0


def plan_q_rows(q: np.ndarray, q_index: np.ndarray | None, pl: _plan.TreePlan) -> np.ndarray:
    """The draft rows of the internal nodes in ``pl.order`` (a new ``float64`` array)."""
    check_q_shape(q, q_index, int(pl.order.max()) if pl.order.size else 0)
    if q_index is None:
        return np.array(np.asarray(q)[pl.order], dtype=np.float64)
    rows = np.asarray(q_index)[pl.order]
    if rows.size and rows.min() < 0:
        bad = int(pl.order[rows < 0][0])
        raise ValueError(f"q_index[{bad}] = -1: node {bad} has children but no draft distribution")
    return np.array(np.asarray(q)[rows], dtype=np.float64)


def _extra_fast(res: np.ndarray, p_last: np.ndarray, u32: int, arith: str, weight_bits: int) -> int:
    """:func:`extra_token` with fewer numpy calls in the common fixed-point case (same result)."""
    if arith == "fixed":
        s = res.sum()
        if s > 0:  # quantize_weights: rows are >= 0, so the clip is a minimum
            w = res / s
            w *= float(1 << weight_bits)
            w += 0.5
            np.floor(w, out=w)
            np.minimum(w, (1 << weight_bits) - 1, out=w)
            cum = w.cumsum()  # integers below 2**53: exact in float64
            total = int(cum[-1])
            if total:
                return int(cum.searchsorted((u32 * total) >> 32, side="right"))
    elif res.sum() > 0:  # sample_float(res, u32 / 2**32)
        cum = res.cumsum()
        v = int(cum.searchsorted(u32 / 2.0**32 * cum[-1], side="right"))
        if v < res.size and res[v] > 0:  # then v <= the last non-zero entry: no clamp
            return v
    return extra_token(res, p_last, u32, arith=arith, weight_bits=weight_bits)


def plan_step(
    pl: _plan.TreePlan,
    P0: np.ndarray,
    Q: np.ndarray | None,
    tok: np.ndarray,
    lane_out: np.ndarray,
    p_leaf: Callable[[int], np.ndarray],
    *,
    children: str,
    arith: str,
    greedy: bool,
    prob_bits: int,
    rand_bits: int,
    weight_bits: int,
) -> tuple[list[int], list[int], np.ndarray]:
    """One step of the parallel form on a :class:`golden.plan.TreePlan` (the decoder's hot path).

    Arguments are trusted (the callers check them). ``P0`` holds the target
    rows of the internal nodes in ``pl.order`` (not modified), ``Q`` their
    draft rows (modified for ``swor``; unused for ``topk`` and greedy),
    ``p_leaf(node)`` returns the target row of a leaf. The residual-adjusted
    ``pt``/``qt`` come from one pass per sibling rank over a prefix of the
    rows, updating every row's residual in place, so the residual of ``last``
    is at hand for the extra token.

    Returns the emitted tokens, the accepted path (root first) and the accept bits.
    """
    n = pl.n
    pq = np.zeros((2, n))
    pt, qt = pq
    P = None
    if greedy:
        if n > 1:
            pt[1:] = tok[1:] == np.argmax(P0, axis=1)[pl.parent_pos]
            qt[1:] = 1.0
    elif n > 1:
        P = P0.copy()
        if children == "topk":
            qt[1:] = 1.0
        elif children == "iid":
            qt[1:] = Q[pl.parent_pos, tok[1:]]
        for g in pl.ranks:
            x = tok[g.kids]
            Pc = P[: g.count]
            pt[g.kids] = Pc[g.rows, x]
            if children == "topk":
                Pc[g.rows, x] = 0.0
                _normalize_rows_inplace(Pc)
                continue
            Qc = Q[: g.count]
            if children == "swor":
                qt[g.kids] = Qc[g.rows, x]
            np.subtract(Pc, Qc, out=Pc)
            np.maximum(Pc, 0.0, out=Pc)
            _normalize_rows_inplace(Pc)
            if children == "swor" and g.more:
                Qm = Q[: g.more]
                Qm[g.rows[: g.more], x[: g.more]] = 0.0
                _normalize_rows_inplace(Qm)
    lanes = lane_out[:n]
    if arith == "fixed":
        u = (lanes >> np.uint32(32 - rand_bits)).astype(np.int64)
        pf, qf = quantize(pq, prob_bits)
        if rand_bits + prob_bits <= 62:
            acc = u * qf < (pf << rand_bits)
        else:
            acc = np.array(
                [int(x) * int(y) < (int(z) << rand_bits) for x, y, z in zip(u, qf, pf, strict=True)]
            )
    else:
        acc = lanes.astype(np.float64) / 2.0**32 * qt < pt
    # the accepted path: from the root, the first accepted child in index order
    accl = acc.tolist()
    ch = pl.structure.children
    a, path = 0, [0]
    while True:
        for c in ch[a]:
            if accl[c]:
                break
        else:
            break
        path.append(c)
        a = c
    r = pl.pos_list[a]
    p_last = P0[r] if r >= 0 else np.asarray(p_leaf(a), dtype=np.float64)
    if greedy:
        x = int(np.argmax(p_last))
    else:
        res = P[r] if r >= 0 else p_last
        x = _extra_fast(res, p_last, int(lane_out[0]), arith, weight_bits)
    toks = tok.tolist()
    return [toks[j] for j in path[1:]] + [x], path, acc


def _quantize1(x: float, scale: float, top: int) -> int:
    """:func:`golden.sampler.quantize` of one number (same float operations)."""
    y = math.floor(x * scale + 0.5)
    return 0 if y < 0 else (top if y > top else y)


def _residual1(R: np.ndarray, Qr: np.ndarray | None, x: int, children: str) -> np.ndarray:
    """The residual after rejecting ``x`` (a row, as :func:`golden.accept.sequential_step`)."""
    if children == "topk":
        R = R.copy()
        R[x] = 0.0
    else:
        R = R - Qr
        np.maximum(R, 0.0, out=R)
    s = R.sum()
    if s > 0:
        R /= s
    else:
        R[:] = 0.0
    return R


def walk_step(
    pl: _plan.TreePlan,
    p_row: Callable[[int], np.ndarray],
    q_row: Callable[[int], np.ndarray],
    toks: list[int],
    lane_out: np.ndarray,
    *,
    children: str,
    arith: str,
    greedy: bool,
    prob_bits: int,
    rand_bits: int,
    weight_bits: int,
) -> tuple[list[int], list[int]]:
    """One step by the reference loop of SPEC §3.1 on a plan (the decoder's hot path).

    Arguments are trusted (the callers check them). ``p_row(node)`` returns
    the target distribution at a node, ``q_row(node)`` the draft distribution
    of an internal node (unused for ``topk`` and greedy), ``toks`` the node
    tokens. Only the nodes the loop visits are asked for: a rejected child
    costs one residual update of its parent's row, an accepted one a few
    scalar operations. Every number is computed with the same float
    operations as :func:`golden.accept.parallel_step` (whose decisions agree
    with this loop's by SPEC §3.2), so the result is the same bit for bit.

    Returns the emitted tokens and the accepted path (root first).
    """
    n = pl.n
    ch = pl.structure.children
    fixed = arith == "fixed"
    if fixed:
        u = (lane_out[:n] >> np.uint32(32 - rand_bits)).tolist()
        scale, top = float(1 << prob_bits), (1 << prob_bits) - 1
    else:
        u = lane_out[:n].tolist()
    topk = children == "topk"
    swor = children == "swor"
    a, path = 0, [0]
    while True:
        P = p_row(a)  # the target distribution at `a`
        R = P  # its residual
        if not ch[a]:
            break
        Qr = None if (topk or greedy) else q_row(a)
        best = int(P.argmax()) if greedy else -1
        nxt = -1
        for c in ch[a]:
            x = toks[c]
            if greedy:
                if x == best:
                    nxt = c
                    break
                continue
            pt = R[x]
            qt = 1.0 if topk else Qr[x]
            if fixed:
                ok = u[c] * _quantize1(qt, scale, top) < (_quantize1(pt, scale, top) << rand_bits)
            else:
                ok = u[c] / 2.0**32 * qt < pt
            if ok:
                nxt = c
                break
            R = _residual1(R, Qr, x, children)
            if swor:
                Qr = Qr.copy()
                Qr[x] = 0.0
                s = Qr.sum()
                if s > 0:
                    Qr /= s
                else:
                    Qr[:] = 0.0
        if nxt < 0:
            break
        path.append(nxt)
        a = nxt
    if greedy:
        x = int(np.argmax(P))
    else:
        x = _extra_fast(R, P, int(lane_out[0]), arith, weight_bits)
    return [toks[j] for j in path[1:]] + [x], path
