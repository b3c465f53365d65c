"""Batched golden decoding: many independent sequences in lock step.

:func:`speculative_generate_batch` runs ``B`` sequences through the same
static tree shape at once, every numpy call covering the whole batch (one
draft-model call per tree level and one target call per step for all
sequences), which is how the chip serves a batch of up to ``SEQS``
sequences and what makes large statistical runs cheap.

Sequence ``b`` uses exactly the random streams it would use alone
(``LaneRNG(seeds[b], lanes)`` and its own draft ``Generator``), so its tokens
equal ``speculative_generate(..., seed=seeds[b])`` bit for bit; a test checks
that. Supported: static shapes (a parent list, :class:`golden.trees.Chain`,
:class:`golden.trees.StaticTree`, :class:`golden.trees.SequoiaTree`), every
``children`` rule as long as no child has to be pruned (full-support draft
models never prune), both arithmetics and greedy mode.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from golden import accept as _acc
from golden import tree as _tree
from golden.accept import _finish_walk, _normalize_rows, check_arith, extra_token
from golden.decoder import DRAFT_STREAM, SpecResult, _check_common, _check_mode
from golden.draft import (
    Model,
    StepRecord,
    TreePolicy,
    _draw_swor,
    _draw_topk,
    check_children_rule,
    context_tail,
)
from golden.rng import lane_states, xoshiro_step
from golden.sampler import quantize

__all__ = ["BatchLaneRNG", "speculative_generate_batch"]


class BatchLaneRNG:
    """``LaneRNG`` for a batch of seeds: ``next()`` returns ``(B, lanes)`` uint32."""

    def __init__(self, seeds: Sequence[int], lanes: int) -> None:
        st = np.stack([lane_states(int(s), lanes) for s in seeds], axis=1)  # (4, B, lanes)
        self.state = np.ascontiguousarray(st)

    def keep(self, rows: np.ndarray) -> None:
        self.state = np.ascontiguousarray(self.state[:, rows])

    def next(self) -> np.ndarray:
        return xoshiro_step(self.state)


def _static_parents(tree: TreePolicy | Sequence[int]) -> list[int]:
    if isinstance(tree, TreePolicy):
        if type(tree).build is not TreePolicy.build or type(tree).observe is not TreePolicy.observe:
            raise ValueError(
                f"tree = {tree!r}: batched decoding needs a static shape "
                "(use speculative_generate for dynamic or adaptive policies)"
            )
        return list(tree.parents())
    return _tree.validate(tree)


def speculative_generate_batch(
    target: Model,
    draft: Model,
    prompts: Sequence[Sequence[int]],
    max_new_tokens: int,
    *,
    tree: TreePolicy | Sequence[int],
    mode: str = "sample",
    children: str = "iid",
    arith: str = "float",
    seeds: Sequence[int] | None = None,
    prob_bits: int = 16,
    rand_bits: int = 16,
    weight_bits: int = 16,
    lanes: int | None = None,
    keep_steps: bool = False,
    max_steps: int | None = None,
) -> list[SpecResult]:
    """``speculative_generate`` for a batch of prompts; one result per prompt.

    Same parameters as :func:`golden.decoder.speculative_generate`, with
    ``prompts`` (one per sequence) and ``seeds`` (default ``0 .. B-1``).
    """
    B = len(prompts)
    if B == 0:
        raise ValueError("prompts is empty")
    seeds = list(range(B)) if seeds is None else [int(s) for s in seeds]
    if len(seeds) != B:
        raise ValueError(f"seeds has {len(seeds)} entries for {B} prompts")
    for b in range(B):
        _check_common(target, prompts[b], max_new_tokens, seeds[b])
    _check_mode(mode)
    check_children_rule(children)
    check_arith(arith)
    if int(draft.vocab_size) != int(target.vocab_size):
        raise ValueError(
            f"draft.vocab_size = {draft.vocab_size} differs from "
            f"target.vocab_size = {target.vocab_size}"
        )
    par = _static_parents(tree)
    S = _tree.structure(par)
    n, V = S.n, int(target.vocab_size)
    n_lanes = int(lanes if lanes is not None else n)
    if n > n_lanes:
        raise ValueError(f"the tree has {n} nodes, more than lanes = {n_lanes}")
    greedy = mode == "greedy"

    lane_rng = BatchLaneRNG(seeds, n_lanes)
    draft_rngs = [np.random.default_rng([s, DRAFT_STREAM]) for s in seeds]
    ctxs = [[int(t) for t in p] for p in prompts]
    outs: list[list[int]] = [[] for _ in range(B)]
    accepted: list[list[int]] = [[] for _ in range(B)]
    steps: list[list[StepRecord]] = [[] for _ in range(B)]
    active = np.arange(B)
    internal = list(S.internal)
    ipos = np.full(n, -1, dtype=np.int64)
    ipos[internal] = np.arange(len(internal))
    depth = max(S.depths)
    n_steps = 0

    def done(b: int) -> bool:
        return len(outs[b]) >= max_new_tokens or (max_steps is not None and n_steps >= max_steps)

    keep = np.array([not done(b) for b in active], dtype=bool)
    active = active[keep]
    lane_rng.keep(keep)
    while active.size:
        A = active.size
        # ---- draft: one draft.probs call per level for the whole batch
        tokens = np.full((A, n), -1, dtype=np.int64)
        tokens[:, 0] = [ctxs[b][-1] if ctxs[b] else -1 for b in active]
        pathmat = np.zeros((A, n, max(depth, 1)), dtype=np.int64)
        qmat = np.zeros((A, len(internal), V))
        tails = [context_tail(draft, ctxs[b]) for b in active]
        for d, nodes, k, kids, kid_parent in S.level_arrays:
            m, K = len(nodes), int(k.sum())
            if d:
                rows = pathmat[:, nodes, :d].tolist()
                ctx = [tails[a] + r for a in range(A) for r in rows[a]]
            else:
                ctx = [tails[a] for a in range(A) for _ in range(m)]
            q = np.asarray(draft.probs(ctx), dtype=np.float64).reshape(A, m, V)
            qmat[:, ipos[nodes]] = q
            if children == "iid":
                # exactly golden.draft._draw_iid per sequence (same offsets, same rounding)
                cdf = np.cumsum(q, axis=2)
                cdf /= cdf[:, :, -1:]
                cdf += np.arange(m)[None, :, None]
                r = np.repeat(np.arange(m), k)
                drawn = np.empty((A, K), dtype=np.int64)
                for a, b in enumerate(active.tolist()):
                    u = draft_rngs[b].random(K)
                    drawn[a] = np.searchsorted(cdf[a].ravel(), u + r, side="right") - r * V
                drawn = np.minimum(drawn, V - 1)
            elif children == "swor":
                drawn = np.stack([_draw_swor(q[a], k, draft_rngs[b]) for a, b in enumerate(active)])
            else:
                drawn = _draw_topk(q.reshape(A * m, V), np.tile(k, A)).reshape(A, K)
            if (drawn < 0).any():
                raise ValueError(
                    f"children = {children!r}: a child had to be pruned (draft support "
                    "smaller than the tree's branching); use speculative_generate"
                )
            tokens[:, kids] = drawn
            if d:
                pathmat[:, kids, :d] = pathmat[:, kid_parent, :d]
            if d < pathmat.shape[2]:
                pathmat[:, kids, d] = drawn
        # ---- verify: one target call for every node of every sequence
        ttails = [context_tail(target, ctxs[b]) for b in active]
        ptoks = tokens.tolist()
        ctx = [ttails[a] + [ptoks[a][j] for j in path] for a in range(A) for path in S.paths]
        p = np.asarray(target.probs(ctx), dtype=np.float64).reshape(A, n, V)
        lane_out = lane_rng.next()[:, :n]
        # ---- pt / qt of every node (SPEC §3.2), vectorised over the batch
        pt = np.zeros((A, n))
        qt = np.zeros((A, n))
        ai = np.arange(A)[:, None]
        if greedy:
            am = np.argmax(p, axis=2)
            if n > 1:
                pt[:, 1:] = tokens[:, 1:] == am[:, list(par[1:])]
            qt[:, 1:] = 1.0
        else:
            P = p[:, internal].copy()
            Q = None if children == "topk" else qmat.copy()
            for rows, c, more in S.rank_groups:
                x = tokens[:, c]
                pt[:, c] = P[ai, rows[None, :], x]
                qt[:, c] = 1.0 if Q is None else Q[ai, rows[None, :], x]
                rows, x = rows[more], x[:, more]
                if rows.size == 0:
                    continue
                Pr = P[:, rows]
                if Q is None:
                    Pr[ai, np.arange(rows.size)[None, :], x] = 0.0
                    P[:, rows] = _normalize_rows(Pr.reshape(-1, V)).reshape(Pr.shape)
                else:
                    Qr = Q[:, rows]
                    np.subtract(Pr, Qr, out=Pr)
                    np.maximum(Pr, 0.0, out=Pr)
                    P[:, rows] = _normalize_rows(Pr.reshape(-1, V)).reshape(Pr.shape)
                    if children == "swor":
                        Qr[ai, np.arange(rows.size)[None, :], x] = 0.0
                        Q[:, rows] = _normalize_rows(Qr.reshape(-1, V)).reshape(Qr.shape)
        if arith == "fixed":
            u = (lane_out >> np.uint32(32 - rand_bits)).astype(np.int64)
            pf, qf = quantize(pt, prob_bits), quantize(qt, prob_bits)
            if rand_bits + prob_bits <= 62:
                acc = u * qf < (pf << rand_bits)
            else:
                acc = np.array(
                    [
                        [
                            int(a) * int(b) < (int(c) << rand_bits)
                            for a, b, c in zip(*t, strict=True)
                        ]
                        for t in zip(u, qf, pf, strict=True)
                    ]
                )
        else:
            acc = lane_out.astype(np.float64) / 2.0**32 * qt < pt
        # ---- per sequence: the accepted path and the extra token
        n_steps += 1
        for a, b in enumerate(active.tolist()):
            dcs = _finish_walk(S, acc[a])
            p_last = p[a, dcs.last]
            if greedy:
                x = int(np.argmax(p_last))
            else:
                qa = qmat[a] if internal else qmat[a].reshape(0, V)
                res = _acc.residual_at(p[a], qa, par, tokens[a], dcs.last, children, q_index=ipos)
                x = extra_token(
                    res, p_last, int(lane_out[a, 0]), arith=arith, weight_bits=weight_bits
                )
            emitted = [ptoks[a][j] for j in dcs.path[1:]] + [x]
            accepted[b].append(dcs.accepted)
            outs[b].extend(emitted)
            ctxs[b].extend(emitted)
            if keep_steps:
                steps[b].append(
                    StepRecord(list(par), ptoks[a], dcs.last, dcs.path, dcs.accepted, emitted)
                )
        keep = np.array([not done(b) for b in active.tolist()], dtype=bool)
        if not keep.all():
            active = active[keep]
            lane_rng.keep(keep)
    return [SpecResult(outs[b], accepted[b], steps[b]) for b in range(B)]
