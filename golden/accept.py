"""Acceptance: multi-candidate speculative sampling over a draft tree (SPEC §3).

Two independent forms of the same algorithm:

* :func:`sequential_step`: the reference loop of SPEC §3.1, walking the tree
  from the root, testing children in index order and updating the residual
  after each rejection;
* :func:`precompute` + :func:`decide` (+ the extra token from the residual of
  ``last``): the parallel form of SPEC §3.2 that the hardware computes. The
  verifier precomputes the residual-adjusted ``pt``/``qt`` of every node, and
  one parallel decision picks the accepted path.

Both exist in ``float`` (float64, the mathematical reference) and ``fixed``
(SPEC §3.3, bit-exact with the RTL) arithmetic. In float arithmetic the test
``U < pt / qt`` is computed as ``U * qt < pt`` (so ``qt = 0`` accepts iff
``pt > 0``, as in fixed point), with ``U = out / 2**32`` from the node's lane.

Zero residuals: a residual ``max(0, P - Q)`` that sums to zero stays all zero
(every later sibling then has ``pt = 0`` and is rejected). In float arithmetic
it needs a rejection of probability zero; in fixed arithmetic it arises from
quantisation (``pt == qt == 0``). The extra token is then drawn from ``p_last``
instead (SPEC §3.5's fallback), and from ``argmax p_last`` if even ``p_last``
quantises to all-zero weights.

The decoders' hot path, the same algorithm on a :class:`golden.plan.TreePlan`
(:func:`walk_step`, :func:`plan_step`, and :func:`extra_token`), lives in
:mod:`golden.walk` and is re-exported here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from checks import bits, float_array, int_array, prob_matrix
from golden import plan as _plan
from golden import steparg as _args
from golden import tree as _tree
from golden.draft import check_children_rule
from golden.sampler import quantize, quantize_weights
from golden.steparg import ARITHS, check_arith
from golden.walk import extra_token, plan_q_rows, plan_step, walk_step

__all__ = [
    "ARITHS",
    "Decision",
    "Precomputed",
    "precompute",
    "greedy_pt_qt",
    "decide",
    "decide_detail",
    "decide_float",
    "residual_at",
    "extra_token",
    "sequential_step",
    "parallel_step",
    "plan_step",
    "plan_q_rows",
    "walk_step",
]


def _normalize_rows(x: np.ndarray) -> np.ndarray:
    """Normalise each row to sum 1; an all-zero row stays all zero."""
    s = x.sum(axis=1, keepdims=True)
    return np.divide(x, s, out=np.zeros_like(x), where=s > 0)


# ---------------------------------------------------------------------------
# Parallel form: precompute (the verifier's job) and decide (the sampler's)
# ---------------------------------------------------------------------------


@dataclass
class Precomputed:
    """Residual-adjusted probabilities of every node (SPEC §3.2).

    Members
    -------
    pt, qt : np.ndarray
        float64, one per node (index 0 unused, 0): the residual target and the
        adjusted draft probability of ``tok[i]`` when node ``i`` is tested.
    pt_fixed, qt_fixed : np.ndarray
        int64, the same quantised to ``prob_bits`` (SPEC §3.3).
    residual : np.ndarray or None
        ``(n, V)`` float64: the distribution left at node ``a`` once all its
        children were rejected (``p_a`` for a leaf), normalised; an all-zero
        row is a zero residual (see module docstring).
    residual_fixed : np.ndarray or None
        ``(n, V)`` int64: ``residual`` quantised to ``weight_bits`` (the token
        sampler's weights).
    """

    pt: np.ndarray
    qt: np.ndarray
    pt_fixed: np.ndarray
    qt_fixed: np.ndarray
    residual: np.ndarray | None
    residual_fixed: np.ndarray | None


def precompute(
    p: np.ndarray,
    q: np.ndarray,
    parents: Sequence[int],
    tokens: Sequence[int] | np.ndarray,
    children: str = "iid",
    *,
    q_index: np.ndarray | None = None,
    prob_bits: int = 16,
    weight_bits: int = 16,
    residuals: bool = True,
) -> Precomputed:
    """Residual-adjusted ``pt``/``qt`` of every node and every node's residual.

    Parameters
    ----------
    p : np.ndarray
        ``(n, V)`` target distributions, ``p[a]`` at node ``a`` (after its path).
    q : np.ndarray
        Draft distributions: ``(n, V)`` with ``q[a]`` the distribution the
        children of ``a`` were drawn from (leaf rows ignored), or ``(m, V)``
        rows selected by ``q_index``.
    parents : sequence of int
        The tree (SPEC §2).
    tokens : sequence of int
        ``tokens[i]`` the draft token of node ``i`` (``tokens[0]`` ignored).
    children : {"iid", "swor", "topk"}
        How the children's tokens were drawn (SPEC §3.1); fixes ``Q``.
    q_index : np.ndarray, optional
        Row of ``q`` for every node (``-1`` for leaves).
    prob_bits, weight_bits : int
        Fixed-point widths of ``pt``/``qt`` and of the sampler weights.
    residuals : bool
        Also return the residual of every node (costs ``n * V`` memory).

    Work is vectorised across nodes: one pass per sibling rank, each pass
    over all nodes with at least that many children.
    """
    S = _tree.structure(parents)
    check_children_rule(children)
    prob_bits = bits("prob_bits", prob_bits)
    weight_bits = bits("weight_bits", weight_bits)
    n = S.n
    p = prob_matrix("p", p, rows=n)
    V = p.shape[1]
    tok = int_array("tokens", tokens, length=n)
    if n > 1 and ((tok[1:] < 0) | (tok[1:] >= V)).any():
        i = int(np.flatnonzero((tok[1:] < 0) | (tok[1:] >= V))[0]) + 1
        raise ValueError(f"tokens[{i}] = {int(tok[i])}: out of range 0 .. {V - 1}")
    internal = list(S.internal)
    pt = np.zeros(n)
    qt = np.zeros(n)
    P = p[internal].copy()
    if internal and children != "topk":
        Q = _args.dist_rows(q, q_index, internal)
        if Q.shape[1] != V:
            raise ValueError(f"q has {Q.shape[1]} columns, p has {V}: vocabularies differ")
        _args.check_rows("q", Q, internal)
    for rows, c, more in S.rank_groups:
        x = tok[c]
        pt[c] = P[rows, x]
        qt[c] = 1.0 if children == "topk" else Q[rows, x]
        if not residuals:  # only rows with a next sibling need the residual
            rows, x = rows[more], x[more]
            if rows.size == 0:
                continue
        Pr = P[rows]
        if children == "topk":
            Pr[np.arange(len(rows)), x] = 0.0
            P[rows] = _normalize_rows(Pr)
        else:
            Qr = Q[rows]
            np.subtract(Pr, Qr, out=Pr)
            np.maximum(Pr, 0.0, out=Pr)
            P[rows] = _normalize_rows(Pr)
            if children == "swor":
                Qr[np.arange(len(rows)), x] = 0.0
                Q[rows] = _normalize_rows(Qr)
    res = res_fixed = None
    if residuals:
        res = p.copy()
        if internal:
            res[internal] = P
        res_fixed = quantize_weights(res, weight_bits)
    return Precomputed(
        pt=pt,
        qt=qt,
        pt_fixed=quantize(pt, prob_bits),
        qt_fixed=quantize(qt, prob_bits),
        residual=res,
        residual_fixed=res_fixed,
    )


def residual_at(
    p: np.ndarray,
    q: np.ndarray,
    parents: Sequence[int],
    tokens: Sequence[int] | np.ndarray,
    node: int,
    children: str = "iid",
    *,
    q_index: np.ndarray | None = None,
) -> np.ndarray:
    """The residual of one node (row ``node`` of ``precompute(...).residual``)."""
    ch = _tree.structure(parents).children
    P = np.array(p[node], dtype=np.float64)[None, :]
    if not ch[node]:
        return P[0]
    Q = None if children == "topk" else _args.dist_rows(q, q_index, [node])
    for c in ch[node]:
        x = int(tokens[c])
        if children == "topk":
            P[0, x] = 0.0
            P = _normalize_rows(P)
        else:
            P = _normalize_rows(np.maximum(P - Q, 0.0))
            if children == "swor":
                Q[0, x] = 0.0
                Q = _normalize_rows(Q)
    return P[0]


def greedy_pt_qt(
    p: np.ndarray, parents: Sequence[int], tokens: Sequence[int] | np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Greedy mode (temperature 0) as a decision: ``pt = 1`` iff ``tok == argmax p_parent``.

    With ``qt = 1`` every node whose token is its parent's argmax is accepted
    (``U * 1 < 1``) and no other; the first such sibling is chosen, as SPEC §3.1
    asks. Returns float ``(pt, qt)``; quantised they become ``2**PROB_BITS - 1``
    or 0, and ``u * qt < pt << RAND_BITS`` gives the same decisions.
    """
    par = _tree.structure(parents).parents
    am = np.argmax(np.asarray(p), axis=1)
    tok = np.asarray(tokens, dtype=np.int64)
    pt = np.zeros(len(par))
    if len(par) > 1:
        pt[1:] = (tok[1:] == am[np.asarray(par[1:])]).astype(np.float64)
    qt = np.ones(len(par))
    qt[0] = 0.0
    return pt, qt


@dataclass
class Decision:
    """The parallel decision of SPEC §3.2 for one step.

    Members
    -------
    accept, chosen, on_path : np.ndarray
        bool, one per node (node 0: ``accept``/``chosen`` False, ``on_path`` True).
    last : int
        Highest index with ``on_path`` set (the deepest accepted node).
    path_mask : int
        ``row[last]``: bit ``j`` set for every node of the accepted path.
    path : list[int]
        Nodes of the accepted path in depth order, root (0) first.
    """

    accept: np.ndarray
    chosen: np.ndarray
    on_path: np.ndarray
    last: int
    path_mask: int
    path: list[int]

    @property
    def accepted(self) -> int:
        """Draft tokens accepted (the depth of ``last``)."""
        return len(self.path) - 1


def _check_vec(name: str, v: Sequence[int] | np.ndarray, n: int, bits: int) -> np.ndarray:
    a = np.asarray(v)
    if a.shape != (n,):
        raise ValueError(f"{name} has shape {a.shape}: expected ({n},), one per node")
    if not np.issubdtype(a.dtype, np.integer):
        raise ValueError(f"{name} must hold integers (fixed point), got dtype {a.dtype}")
    a = a.astype(np.int64) if bits < 63 else a
    bad = np.flatnonzero((a < 0) | (a >= (1 << bits)))
    bad = bad[bad >= 1]
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"{name}[{i}] = {int(a[i])}: out of range 0 .. 2**{bits} - 1")
    return a


def _finish(S: _tree.Structure, accept: np.ndarray) -> Decision:
    """chosen, on_path, last from the accept bits, exactly as SPEC §3.2 words them."""
    parents = S.parents
    n = len(parents)
    accept = accept.copy()
    accept[0] = False
    chosen = np.zeros(n, dtype=bool)
    seen: set[int] = set()
    for i in range(1, n):  # first accepted sibling, in index order
        if accept[i] and parents[i] not in seen:
            chosen[i] = True
            seen.add(parents[i])
    chosen_mask = sum(1 << i for i in np.flatnonzero(chosen).tolist())
    rows = S.rows
    on_path = np.array([(r & ~chosen_mask & ~1) == 0 for r in rows], dtype=bool)
    last = int(np.flatnonzero(on_path)[-1])
    path_mask = rows[last]
    path = [j for j in range(n) if (path_mask >> j) & 1]
    return Decision(accept, chosen, on_path, last, path_mask, path)


def _finish_walk(S: _tree.Structure, accept: np.ndarray) -> Decision:
    """Same result as :func:`_finish`, by walking from the root (the decoder's fast path).

    Tests check it against the literal SPEC §3.2 form of :func:`_finish`.
    """
    parents = S.parents
    first: dict[int, int] = {}
    for i in (np.flatnonzero(accept[1:]) + 1).tolist():
        first.setdefault(parents[i], i)
    a, path = 0, [0]
    while a in first:
        a = first[a]
        path.append(a)
    n = S.n
    chosen = np.zeros(n, dtype=bool)
    chosen[list(first.values())] = True
    on_path = np.zeros(n, dtype=bool)
    on_path[path] = True
    acc = accept.copy()
    acc[0] = False
    return Decision(acc, chosen, on_path, a, S.rows[a], path)


def decide_detail(
    parents: Sequence[int],
    pt: Sequence[int] | np.ndarray,
    qt: Sequence[int] | np.ndarray,
    u: Sequence[int] | np.ndarray,
    *,
    rand_bits: int = 16,
    prob_bits: int = 16,
) -> Decision:
    """Fixed-point parallel decision (SPEC §3.2, §3.3) with every intermediate.

    ``accept[i] = u[i] * qt[i] < pt[i] << rand_bits`` for every ``i >= 1``;
    ``pt[0]``, ``qt[0]``, ``u[0]`` are ignored.
    """
    S = _tree.structure(parents)
    rand_bits = bits("rand_bits", rand_bits)
    prob_bits = bits("prob_bits", prob_bits)
    n = S.n
    pt_a = _check_vec("pt", pt, n, prob_bits)
    qt_a = _check_vec("qt", qt, n, prob_bits)
    u_a = _check_vec("u", u, n, rand_bits)
    if rand_bits + prob_bits <= 62:
        accept = u_a * qt_a < (pt_a << rand_bits)
    else:  # exact with Python integers
        accept = np.array(
            [
                int(a) * int(b) < (int(c) << rand_bits)
                for a, b, c in zip(u_a, qt_a, pt_a, strict=True)
            ],
            dtype=bool,
        )
    return _finish(S, accept)


def decide(
    parents: Sequence[int],
    pt: Sequence[int] | np.ndarray,
    qt: Sequence[int] | np.ndarray,
    u: Sequence[int] | np.ndarray,
    *,
    rand_bits: int = 16,
    prob_bits: int = 16,
) -> tuple[int, int]:
    """Fixed-point parallel decision of SPEC §3.2/§3.3: returns ``(last, path_mask)``."""
    d = decide_detail(parents, pt, qt, u, rand_bits=rand_bits, prob_bits=prob_bits)
    return d.last, d.path_mask


def decide_float(parents: Sequence[int], pt: np.ndarray, qt: np.ndarray, U: np.ndarray) -> Decision:
    """Float parallel decision: ``accept[i] = U[i] * qt[i] < pt[i]``.

    Raises
    ------
    ValueError
        An entry of ``U`` outside ``[0, 1)`` (or NaN), naming it.
    """
    S = _tree.structure(parents)
    U = float_array("U", U, length=S.n)
    pt, qt = float_array("pt", pt, length=S.n), float_array("qt", qt, length=S.n)
    bad = ~((U >= 0) & (U < 1))
    if bad.any():
        i = int(np.flatnonzero(bad.ravel())[0])
        raise ValueError(f"U[{i}] = {float(U.ravel()[i])!r}: must be a finite number in [0, 1)")
    return _finish(S, U * np.asarray(qt) < np.asarray(pt))


def parallel_step(
    p: np.ndarray,
    q: np.ndarray,
    parents: Sequence[int],
    tokens: Sequence[int] | np.ndarray,
    lane_out: np.ndarray,
    *,
    children: str = "iid",
    arith: str = "fixed",
    greedy: bool = False,
    q_index: np.ndarray | None = None,
    prob_bits: int = 16,
    rand_bits: int = 16,
    weight_bits: int = 16,
) -> tuple[list[int], Decision]:
    """One step in the parallel form: precompute, decide, sample the extra token.

    ``lane_out`` holds the 32-bit lane outputs of this step (at least one per
    node): lane ``i`` gives node ``i``'s uniform, lane 0 the extra token's.
    Returns the emitted tokens (accepted draft tokens, then the extra token)
    and the :class:`Decision`.

    ``pt``/``qt`` are exactly :func:`precompute`'s, the decision
    :func:`decide`'s (fixed) or :func:`decide_float`'s, and the extra token is
    :func:`extra_token` on the residual of ``last`` (:func:`residual_at`).
    """
    check_arith(arith)
    pl = _plan.plan(parents)
    S = pl.structure
    n = pl.n
    rand_bits = bits("rand_bits", rand_bits)
    lane_out = _args.lanes(lane_out, n)
    tok = int_array("tokens", tokens, length=n)
    p = prob_matrix("p", p, rows=n)
    Q = None
    if not greedy:
        check_children_rule(children)
        prob_bits = bits("prob_bits", prob_bits)
        weight_bits = bits("weight_bits", weight_bits)
        V = p.shape[1]
        if n > 1 and ((tok[1:] < 0) | (tok[1:] >= V)).any():
            i = int(np.flatnonzero((tok[1:] < 0) | (tok[1:] >= V))[0]) + 1
            raise ValueError(f"tokens[{i}] = {int(tok[i])}: out of range 0 .. {V - 1}")
        if children != "topk" and pl.order.size:
            Q = plan_q_rows(q, q_index, pl)
            if Q.shape[1] != V:
                raise ValueError(f"q has {Q.shape[1]} columns, p has {V}: vocabularies differ")
            _args.check_rows("q", Q, pl.order.tolist())
    emitted, path, acc = plan_step(
        pl,
        p[pl.order],
        Q,
        tok,
        lane_out,
        lambda j: p[j],
        children=children,
        arith=arith,
        greedy=greedy,
        prob_bits=prob_bits,
        rand_bits=rand_bits,
        weight_bits=weight_bits,
    )
    return emitted, _finish_walk(S, acc)


# ---------------------------------------------------------------------------
# Sequential reference (SPEC §3.1)
# ---------------------------------------------------------------------------


def sequential_step(
    p: np.ndarray,
    q: np.ndarray,
    parents: Sequence[int],
    tokens: Sequence[int] | np.ndarray,
    lane_out: np.ndarray,
    *,
    children: str = "iid",
    arith: str = "fixed",
    greedy: bool = False,
    q_index: np.ndarray | None = None,
    prob_bits: int = 16,
    rand_bits: int = 16,
    weight_bits: int = 16,
) -> tuple[list[int], list[int]]:
    """The reference loop of SPEC §3.1, one node at a time.

    Same arguments as :func:`parallel_step`. Node ``c`` is tested with the
    uniform of lane ``c``; the extra token uses lane 0. Returns the emitted
    tokens and the accepted path's nodes (root first).
    """
    check_arith(arith)
    check_children_rule(children)
    par = _tree.validate(parents)
    ch = _tree.children_lists(par)
    n = len(par)
    rand_bits = bits("rand_bits", rand_bits)
    prob_bits = bits("prob_bits", prob_bits)
    weight_bits = bits("weight_bits", weight_bits)
    tok = int_array("tokens", tokens, length=n)
    lane_out = _args.lanes(lane_out, n)
    p = prob_matrix("p", p, rows=n)
    a = 0
    path = [0]
    emitted: list[int] = []
    while True:
        pa = np.asarray(p[a], dtype=np.float64)
        P = pa[None, :].copy()
        Q = None
        if ch[a] and children != "topk" and not greedy:
            Q = _args.dist_rows(q, q_index, [a])
            if Q.shape[1] != pa.shape[0]:
                raise ValueError(
                    f"q has {Q.shape[1]} columns, p has {pa.shape[0]}: vocabularies differ"
                )
            _args.check_rows("q", Q, [a])
        moved = False
        for c in ch[a]:
            x = int(tok[c])
            if greedy:
                ok = x == int(np.argmax(pa))
            else:
                Px = P[0, x]
                Qx = 1.0 if children == "topk" else Q[0, x]
                if arith == "fixed":
                    uc = int(lane_out[c]) >> (32 - rand_bits)
                    qf = int(quantize(Qx, prob_bits))
                    pf = int(quantize(Px, prob_bits))
                    ok = uc * qf < (pf << rand_bits)
                else:
                    ok = (int(lane_out[c]) / 2.0**32) * Qx < Px
            if ok:
                emitted.append(x)
                path.append(c)
                a = c
                moved = True
                break
            if greedy:
                continue
            if children == "topk":
                P[0, x] = 0.0
                P = _normalize_rows(P)
            else:
                P = _normalize_rows(np.maximum(P - Q, 0.0))
                if children == "swor":
                    Q[0, x] = 0.0
                    Q = _normalize_rows(Q)
        if not moved:
            if greedy:
                emitted.append(int(np.argmax(pa)))
            else:
                emitted.append(
                    extra_token(P[0], pa, int(lane_out[0]), arith=arith, weight_bits=weight_bits)
                )
            return emitted, path
