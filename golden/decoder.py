"""The golden speculative decoder (SPEC §1-§3) and its autoregressive baseline.

One step of :func:`speculative_generate`:

1. the tree policy builds the draft tree (the draft accelerator, behavioural:
   its own numpy ``Generator`` draws the draft tokens);
2. the target model scores the nodes' contexts (the verifier) and the
   accepted path is picked: SPEC §3.1's loop (:func:`golden.accept.walk_step`)
   walks the tree from the root, testing children in index order; it needs
   the target distribution only of the nodes it visits, and a target with
   ``probs_tails`` is asked for just those (any other target scores every
   node in one call). Its decisions, ``pt``/``qt`` and residuals are exactly
   those of SPEC §3.2's parallel form (:func:`golden.accept.parallel_step`,
   what the hardware computes; the tests check the two agree);
3. the extra token is drawn from the residual of ``last``;
4. the emitted tokens are appended to the context.

Static shapes are drawn on a :class:`golden.plan.TreePlan` (index arrays
computed once per shape), so a step is a short, fixed sequence of numpy
calls; a draft with ``probs_tails`` gets each tree level's contexts with one
gather.

All acceptance randomness comes from :class:`golden.rng.LaneRNG` (lane ``i``
for node ``i``, lane 0 for the extra token), advanced once per step, so with
``arith="fixed"`` a step is bit-exact with the RTL given the same ``pt``,
``qt`` and residual weights.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from checks import bits, int_array, integer
from checks import seed as seed_check
from golden import accept as _acc
from golden import plan as _plan
from golden.draft import (
    Model,
    StepRecord,
    TreePolicy,
    _draw,
    check_children_rule,
    checked_model,
    context_tail,
    tails_fast_path,
)
from golden.rng import LaneRNG
from golden.sampler import sample_float
from golden.trees import StaticTree

__all__ = ["SpecResult", "speculative_generate", "autoregressive_generate", "MODES"]

MODES = ("sample", "greedy")

#: Salt that separates the draft accelerator's random stream from the lanes'.
DRAFT_STREAM = 0x5EED_D2AF


@dataclass
class SpecResult:
    """Output of :func:`speculative_generate`.

    Members
    -------
    tokens : list[int]
        New tokens (at least ``max_new_tokens``; the last step may add a few more).
    accepted : list[int]
        Per step, draft tokens accepted (excluding the extra token).
    steps : list[StepRecord]
        Per step: the tree, the accepted path and the emitted tokens.
    """

    tokens: list[int]
    accepted: list[int]
    steps: list[StepRecord] = field(default_factory=list)

    @property
    def n_steps(self) -> int:
        return len(self.accepted)

    @property
    def mean_accepted(self) -> float:
        """Mean draft tokens accepted per step (a step emits one more)."""
        return float(np.mean(self.accepted)) if self.accepted else 0.0

    @property
    def tokens_per_step(self) -> float:
        return self.mean_accepted + 1.0 if self.accepted else 0.0


def _check_mode(mode: str) -> str:
    if mode not in MODES:
        raise ValueError(f"mode = {mode!r}: must be 'sample' or 'greedy'")
    return mode


def _check_common(model: Model, prompt: Sequence[int], max_new_tokens: int, seed: int) -> None:
    integer("max_new_tokens", max_new_tokens, 0)
    seed_check("seed", seed)
    V = integer("vocab_size", model.vocab_size, 1)
    int_array("prompt", prompt, 0, V - 1)


def _check_pair(target: Model, draft: Model, mode: str, children: str, arith: str) -> None:
    """The checks of ``mode``, ``children``, ``arith`` and the two vocabularies, in that order."""
    _check_mode(mode)
    check_children_rule(children)
    _acc.check_arith(arith)
    if int(draft.vocab_size) != int(target.vocab_size):
        raise ValueError(
            f"draft.vocab_size = {draft.vocab_size} differs from "
            f"target.vocab_size = {target.vocab_size}"
        )


def _as_policy(tree: TreePolicy | Sequence[int]) -> TreePolicy:
    if isinstance(tree, TreePolicy):
        return tree
    try:
        return StaticTree(list(tree))
    except TypeError as exc:
        raise ValueError(f"tree = {tree!r}: must be a parent list or a TreePolicy") from exc


def _draft_step(
    policy: TreePolicy,
    static: bool,
    last_plan: list,
    draft: Model,
    ctx: list[int],
    children: str,
    draft_rng: np.random.Generator,
    V: int,
) -> tuple[list[int], _plan.TreePlan, np.ndarray, Callable[[int], np.ndarray]]:
    """One step's draft tree: ``(parents, plan, tokens, q_row)``.

    A static policy (``static``) is drawn on its shape's plan, kept in
    ``last_plan`` (``[parents, plan]``, updated when the shape changes); a
    dynamic one builds a :class:`~golden.draft.DraftTree`, whose tokens are
    checked against ``V``. ``q_row(j)`` is node ``j``'s draft distribution.
    """
    dt = None
    if static:
        par = policy.parents()
        if par != last_plan[0]:
            last_plan[1], last_plan[0] = _plan.plan(par), list(par)
        pl = last_plan[1]
        tok, q_levels, dt = _draw(pl, draft, ctx, children, draft_rng)
    else:
        dt = policy.build(draft, ctx, children, draft_rng)
    if dt is None:
        level_row = pl.level_row

        def q_row(j: int) -> np.ndarray:
            li, r = level_row[j]
            return q_levels[li][r]

        return par, pl, tok, q_row
    par = dt.parents
    pl = _plan.plan(par)
    tok = np.asarray(dt.tokens, dtype=np.int64)
    if not static and pl.n > 1 and ((tok[1:] < 0) | (tok[1:] >= V)).any():
        i = int(np.flatnonzero((tok[1:] < 0) | (tok[1:] >= V))[0]) + 1
        raise ValueError(f"tokens[{i}] = {int(tok[i])}: out of range 0 .. {V - 1}")
    qmat, qidx = dt.q, dt.q_index.tolist()

    def q_row_tree(j: int) -> np.ndarray:
        r = qidx[j]
        if r < 0:
            raise ValueError(f"q_index[{j}] = -1: node {j} has children but no draft distribution")
        return np.asarray(qmat[r], dtype=np.float64)

    return par, pl, tok, q_row_tree


def _target_rows(
    target: Model, ctx: list[int], pl: _plan.TreePlan, tok: np.ndarray, toks: list[int]
) -> Callable[[int], np.ndarray]:
    """The verifier: ``p_row(j)``, the target distribution after node ``j``'s context.

    A target with ``probs_tails`` is asked for each visited node's row alone;
    any other target scores every node of the tree in one call, here.
    """
    fast = tails_fast_path(target, ctx)
    if fast is None:
        ttail = context_tail(target, ctx)
        contexts = [ttail + [toks[j] for j in path] for path in pl.structure.paths]
        p = np.asarray(target.probs(contexts), dtype=np.float64)
        return p.__getitem__
    w, tail = fast
    vec = np.empty(w + pl.n, dtype=np.int64)
    vec[:w] = tail
    vec[w:] = tok
    full = pl.gathers(w).full
    probs_tails = target.probs_tails

    def p_row(j: int) -> np.ndarray:
        return np.asarray(probs_tails(vec[full[j : j + 1]])[0], dtype=np.float64)

    return p_row


def speculative_generate(
    target: Model,
    draft: Model,
    prompt: Sequence[int],
    max_new_tokens: int,
    *,
    tree: TreePolicy | Sequence[int],
    mode: str = "sample",
    children: str = "iid",
    arith: str = "float",
    seed: int = 0,
    prob_bits: int = 16,
    rand_bits: int = 16,
    weight_bits: int = 16,
    lanes: int | None = None,
    keep_steps: bool = True,
    max_steps: int | None = None,
    check_models: bool = True,
) -> SpecResult:
    """Speculative decoding with a draft tree, lossless by rejection sampling.

    Parameters
    ----------
    target, draft : Model
        Models with the same ``vocab_size``.
    prompt : sequence of int
        Context so far; its last token is each first step's root.
    max_new_tokens : int
        Stop once at least this many tokens were generated.
    tree : TreePolicy or parent list
        The tree shape (node 0 the root; the decoder draws the tokens) or a
        policy (:mod:`golden.trees`: chain, static, Sequoia, EAGLE-2).
    mode : {"sample", "greedy"}
        ``greedy`` accepts the first child whose token is ``argmax p_a`` and
        emits ``argmax p_last`` (SPEC §3.1); output equals greedy autoregressive.
    children : {"iid", "swor", "topk"}
        How the draft tokens of a node's children are drawn (SPEC §3.1).
    arith : {"float", "fixed"}
        ``float`` is the mathematical reference; ``fixed`` is bit-exact with
        the RTL (SPEC §3.3, §3.5).
    seed : int
        Seeds the lanes (:class:`golden.rng.LaneRNG`) and the draft's stream.
    prob_bits, rand_bits, weight_bits : int
        Fixed-point widths (SPEC §3.3, §3.5).
    lanes : int, optional
        RNG lanes (``N_NODES``); default the policy's ``max_nodes``. The lane
        streams do not depend on it; a tree larger than it is an error.
    keep_steps : bool
        Keep a :class:`~golden.draft.StepRecord` per step in the result.
    max_steps : int, optional
        Also stop after this many steps (for statistics and benchmarks).
    check_models : bool
        Check every output of the models at the boundary (shape, finite,
        non-negative, rows summing to 1; :class:`golden.draft.CheckedModel`),
        naming the model and the context; on by default, ``False`` for trusted
        models (what it costs: ``make bench``, the ``checks off`` rows).
    """
    target = checked_model(target, "target", check_models)
    draft = checked_model(draft, "draft", check_models)
    _check_common(target, prompt, max_new_tokens, seed)
    _check_pair(target, draft, mode, children, arith)
    for name, b in (("prob_bits", prob_bits), ("rand_bits", rand_bits)):
        bits(name, b)
    bits("weight_bits", weight_bits)
    policy = _as_policy(tree)
    n_lanes = int(lanes if lanes is not None else max(1, policy.max_nodes))
    lane_rng = LaneRNG(int(seed), n_lanes)
    draft_rng = np.random.default_rng([int(seed), DRAFT_STREAM])
    greedy = mode == "greedy"

    ctx = list(int(t) for t in prompt)
    out: list[int] = []
    accepted: list[int] = []
    steps: list[StepRecord] = []
    if max_steps is not None:
        integer("max_steps", max_steps, 0)
    # static shapes (TreePolicy.build: a shape, then draw_tree) are drawn here, on
    # their plan, without building a DraftTree unless a child had to be pruned
    static = type(policy).build is TreePolicy.build
    V = int(target.vocab_size)
    last_plan: list = [None, None]  # a static policy's last parents and their plan
    while len(out) < max_new_tokens and (max_steps is None or len(accepted) < max_steps):
        par, pl, tok, q_row = _draft_step(
            policy, static, last_plan, draft, ctx, children, draft_rng, V
        )
        n = pl.n
        if n > n_lanes:
            raise ValueError(f"the policy built a tree of {n} nodes, more than lanes = {n_lanes}")
        toks = tok.tolist()
        p_row = _target_rows(target, ctx, pl, tok, toks)
        lane_out = lane_rng.next()
        emitted, path = _acc.walk_step(
            pl,
            p_row,
            q_row,
            toks,
            lane_out,
            children=children,
            arith=arith,
            greedy=greedy,
            prob_bits=prob_bits,
            rand_bits=rand_bits,
            weight_bits=weight_bits,
        )
        rec = StepRecord(par, toks, path[-1], path, len(path) - 1, emitted)
        policy.observe(rec)
        if keep_steps:
            steps.append(rec)
        accepted.append(rec.accepted)
        out.extend(emitted)
        ctx.extend(emitted)
    return SpecResult(out, accepted, steps)


def autoregressive_generate(
    target: Model,
    prompt: Sequence[int],
    max_new_tokens: int,
    *,
    mode: str = "sample",
    seed: int = 0,
    check_models: bool = True,
) -> list[int]:
    """Plain decoding, one target call per token.

    ``greedy`` takes ``argmax``; ``sample`` draws by inverse CDF with
    ``U = out / 2**32`` from lane 0 of ``LaneRNG(seed, 1)``. ``check_models``
    as in :func:`speculative_generate`.
    """
    target = checked_model(target, "target", check_models)
    _check_common(target, prompt, max_new_tokens, seed)
    _check_mode(mode)
    rng = LaneRNG(int(seed), 1)
    ctx = list(int(t) for t in prompt)
    out: list[int] = []
    for _ in range(max_new_tokens):
        p = np.asarray(target.probs([context_tail(target, ctx)])[0], dtype=np.float64)
        if mode == "greedy":
            x = int(np.argmax(p))
        else:
            x = sample_float(p, int(rng.next()[0]) / 2.0**32)
        out.append(x)
        ctx.append(x)
    return out
