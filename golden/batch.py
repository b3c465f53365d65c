"""Batched golden decoding: many independent sequences in lock step.

:func:`speculative_generate_batch` runs ``B`` sequences through the same
static tree shape at once: the draft runs one draft-model call per tree
level for all sequences, which is how the chip serves a batch of up to
``SEQS`` sequences and what makes large statistical runs cheap. Acceptance
then walks each sequence's tree with :func:`golden.accept.walk_step` (the
decoder's own step), asking the target only for the rows of the nodes it
visits when the target has ``probs_tails``, else scoring every node of every
sequence in one target call.

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

from checks import int_array, seed
from golden import accept as _acc
from golden import plan as _plan
from golden import tree as _tree
from golden.decoder import DRAFT_STREAM, SpecResult, _check_common, _check_pair
from golden.draft import (
    Model,
    StepRecord,
    TreePolicy,
    _draw_swor,
    _draw_topk,
    checked_model,
    context_tail,
    tails_fast_path,
)
from golden.rng import lane_states, xoshiro_step

__all__ = ["BatchLaneRNG", "speculative_generate_batch"]


def _seeds(seeds: object) -> list[int]:
    """``seeds`` as a list of ints, each :func:`checks.seed` (``int()`` would truncate 1.7)."""
    if isinstance(seeds, str | bytes) or not isinstance(seeds, Sequence | np.ndarray):
        raise ValueError(f"seeds = {seeds!r}: must be a sequence of integers")
    return [seed(f"seeds[{b}]", s) for b, s in enumerate(seeds)]


class BatchLaneRNG:
    """``LaneRNG`` for a batch of seeds: ``next()`` returns ``(B, lanes)`` uint32."""

    def __init__(self, seeds: Sequence[int], lanes: int) -> None:
        seeds = _seeds(seeds)
        st = np.stack([lane_states(s, lanes) for s in seeds], axis=1)  # (4, B, lanes)
        self.state = np.ascontiguousarray(st)

    def keep(self, rows: np.ndarray) -> None:
        """Keep the sequences ``rows``: a boolean mask of the batch, or their indices
        (``ValueError`` naming ``rows`` otherwise, the state unchanged)."""
        B = self.state.shape[1]
        if isinstance(rows, np.ndarray) and rows.dtype == bool:
            if rows.shape != (B,):
                raise ValueError(f"rows has shape {rows.shape}: expected ({B},)")
        else:
            rows = int_array("rows", rows, 0, B - 1)
        self.state = np.ascontiguousarray(self.state[:, rows])

    def next(self) -> np.ndarray:
        return xoshiro_step(self.state)


def _tails_vec(
    model: Model, contexts: list[list[int]], tokens: np.ndarray
) -> tuple[np.ndarray, int] | None:
    """``([tail, tokens] per sequence, w)`` for a model with ``probs_tails``, else ``None``.

    Row ``a`` is the ``vec`` of :class:`golden.plan.TailGathers` for sequence ``a``.
    """
    first = tails_fast_path(model, contexts[0]) if contexts else None
    if first is None:
        return None
    w = first[0]
    vec = np.empty((tokens.shape[0], w + tokens.shape[1]), dtype=np.int64)
    if w:
        vec[:, :w] = [tails_fast_path(model, c)[1] for c in contexts]
    vec[:, w:] = tokens
    return vec, w


def _static_parents(tree: TreePolicy | Sequence[int]) -> list[int]:
    if isinstance(tree, TreePolicy):
        if type(tree).build is not TreePolicy.build or type(tree).observe is not TreePolicy.observe:
            raise ValueError(
                f"tree = {tree!r}: batched decoding needs a static shape "
                "(use speculative_generate for dynamic or adaptive policies)"
            )
        return list(tree.parents())
    return _tree.validate(tree)


def _draft_batch(
    draft: Model,
    pl: _plan.TreePlan,
    contexts: list[list[int]],
    rngs: list[np.random.Generator],
    tokens: np.ndarray,
    children: str,
    ipos: np.ndarray,
    V: int,
) -> np.ndarray:
    """Draw the draft tokens of a static tree for ``A`` sequences, level by level.

    ``tokens`` (``(A, n)``, roots filled in) receives the drawn tokens; returns
    ``qmat`` (``(A, internal nodes, V)``): row ``ipos[j]`` of sequence ``a`` is
    node ``j``'s draft distribution. One ``draft.probs`` (or ``probs_tails``)
    call per level for the whole batch; sequence ``a`` draws from ``rngs[a]``.

    Raises
    ------
    ValueError
        If a child had to be pruned (draft support smaller than the branching).
    """
    S = pl.structure
    A, n = tokens.shape
    pathmat = np.zeros((A, n, max(max(S.depths), 1)), dtype=np.int64)
    qmat = np.zeros((A, len(S.internal), V))
    dvec = _tails_vec(draft, contexts, tokens)
    if dvec is None:
        tails = [context_tail(draft, c) for c in contexts]
    for li, (d, nodes, k, kids, kid_parent) in enumerate(S.level_arrays):
        m, K = len(nodes), int(k.sum())
        if dvec is not None:  # the draft's fast path: one gather for the level
            vec, w = dvec
            vec[:, w:] = tokens
            ctx_tails = vec[:, pl.gathers(w).levels[li]].reshape(A * m, w)
            q = np.asarray(draft.probs_tails(ctx_tails), dtype=np.float64).reshape(A, m, V)
        else:
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
            for a, rng in enumerate(rngs):
                u = rng.random(K)
                drawn[a] = np.searchsorted(cdf[a].ravel(), u + r, side="right") - r * V
            drawn = np.minimum(drawn, V - 1)
        elif children == "swor":
            drawn = np.stack([_draw_swor(q[a], k, rng) for a, rng in enumerate(rngs)])
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
    return qmat


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
    check_models: bool = True,
) -> list[SpecResult]:
    """``speculative_generate`` for a batch of prompts; one result per prompt.

    Same parameters as :func:`golden.decoder.speculative_generate`, with
    ``prompts`` (one per sequence) and ``seeds`` (default ``0 .. B-1``).
    """
    target = checked_model(target, "target", check_models)
    draft = checked_model(draft, "draft", check_models)
    B = len(prompts)
    if B == 0:
        raise ValueError("prompts is empty")
    seeds = list(range(B)) if seeds is None else _seeds(seeds)
    if len(seeds) != B:
        raise ValueError(f"seeds has {len(seeds)} entries for {B} prompts")
    for b in range(B):
        _check_common(target, prompts[b], max_new_tokens, seeds[b])
    _check_pair(target, draft, mode, children, arith)
    par = _static_parents(tree)
    S = _tree.structure(par)
    pl = _plan.plan(par)
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
    ipos_l = ipos.tolist()
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
        contexts = [ctxs[b] for b in active]
        rngs = [draft_rngs[b] for b in active.tolist()]
        qmat = _draft_batch(draft, pl, contexts, rngs, tokens, children, ipos, V)
        # ---- verify, sequence by sequence: SPEC §3.1's walk (golden.accept.walk_step,
        # as in speculative_generate), target rows of the visited nodes only when
        # the target has probs_tails, else one target call for every node of every
        # sequence
        ptoks = tokens.tolist()
        tvec = _tails_vec(target, contexts, tokens)
        if tvec is None:
            ttails = [context_tail(target, ctxs[b]) for b in active]
            ctx = [ttails[a] + [ptoks[a][j] for j in path] for a in range(A) for path in S.paths]
            p = np.asarray(target.probs(ctx), dtype=np.float64).reshape(A, n, V)
        else:
            vec, w = tvec
            full = pl.gathers(w).full
        lane_out = lane_rng.next()
        n_steps += 1
        for a, b in enumerate(active.tolist()):
            if tvec is None:

                def p_row(j: int, pa=p[a]) -> np.ndarray:
                    return pa[j]

            else:

                def p_row(j: int, va=vec[a], full=full) -> np.ndarray:
                    return np.asarray(target.probs_tails(va[full[j : j + 1]])[0], dtype=np.float64)

            def q_row(j: int, qa=qmat[a]) -> np.ndarray:
                return qa[ipos_l[j]]

            emitted, path = _acc.walk_step(
                pl,
                p_row,
                q_row,
                ptoks[a],
                lane_out[a],
                children=children,
                arith=arith,
                greedy=greedy,
                prob_bits=prob_bits,
                rand_bits=rand_bits,
                weight_bits=weight_bits,
            )
            accepted[b].append(len(path) - 1)
            outs[b].extend(emitted)
            ctxs[b].extend(emitted)
            if keep_steps:
                steps[b].append(
                    StepRecord(list(par), ptoks[a], path[-1], path, len(path) - 1, emitted)
                )
        keep = np.array([not done(b) for b in active.tolist()], dtype=bool)
        if not keep.all():
            active = active[keep]
            lane_rng.keep(keep)
    return [SpecResult(outs[b], accepted[b], steps[b]) for b in range(B)]
