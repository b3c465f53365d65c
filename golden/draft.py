"""Behavioural draft accelerator: draws the tokens of a draft tree.

The *shape* of a tree comes from a :class:`TreePolicy`; this module draws the
draft tokens of its nodes from the draft model, level by level, by one of the
three ``children`` rules of SPEC §3.1:

``iid``
    each child's token is an independent draw from ``q_a`` (duplicates allowed);
``swor``
    the children are ordered draws from ``q_a`` without replacement
    (Gumbel-top-k, which has exactly the distribution of sequential draws);
``topk``
    the children are the draft's ``k`` most likely tokens, most likely first
    (ties broken by the lower token id).

A child that cannot be drawn (``swor`` with fewer tokens of non-zero draft
probability than children, ``topk`` with more children than the vocabulary)
is pruned together with its subtree; the surviving nodes keep their order, so
the tree stays topological and siblings stay in the same order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np

from checks import boolean, choice, integer, prob_matrix
from golden import plan as _plan

__all__ = [
    "CHILDREN_RULES",
    "Model",
    "DraftTree",
    "StepRecord",
    "TreePolicy",
    "context_tail",
    "model_rows",
    "CheckedModel",
    "checked_model",
    "draw_tree",
    "check_children_rule",
    "check_context",
    "tails_fast_path",
]

CHILDREN_RULES = ("iid", "swor", "topk")


@runtime_checkable
class Model(Protocol):
    """A language model: ``probs(contexts)`` has shape ``(len(contexts), vocab_size)``.

    A model may also define ``context_window: int``: it reads only the last
    ``context_window`` tokens of a context, so callers may pass just those.

    A model with ``context_window`` may also define the fast path
    ``probs_tails(tails) -> np.ndarray``: ``tails`` is an integer matrix
    ``(m, context_window)`` whose row ``i`` holds the last ``context_window``
    tokens of context ``i``, right-aligned, ``-1`` before them when the context
    is shorter (:func:`golden.models.tails_matrix`); it returns a new array
    equal to ``probs`` of those contexts. The decoder and :func:`draw_tree`
    use it when present (one gather builds a whole tree level's contexts)
    and ``probs`` otherwise.
    """

    vocab_size: int

    def probs(self, contexts: list[list[int]]) -> np.ndarray: ...


def check_children_rule(children: str) -> str:
    """``children`` if it is one of :data:`CHILDREN_RULES` (``ValueError`` naming it)."""
    return choice("children", children, CHILDREN_RULES)  # type: ignore[return-value]


def _is_sequence(x: object) -> bool:
    """A sequence of tokens: a ``Sequence`` (not a string) or a 1-D array."""
    if isinstance(x, np.ndarray):
        return x.ndim == 1
    return isinstance(x, Sequence) and not isinstance(x, str | bytes)


def check_context(context: object, vocab: int, read: int) -> None:
    """``ValueError`` unless ``context`` is a sequence of tokens whose last ``read``
    entries (what a draft reads of it, and the root) are integers ``0 .. vocab - 1``;
    the model checks the tokens it reads itself, this names the argument."""
    if not _is_sequence(context):
        raise ValueError(f"context = {context!r}: must be a sequence of tokens")
    tail = list(context[-read:]) if read else []  # type: ignore[index]
    lo = len(context) - len(tail)
    for j, t in enumerate(tail):
        if not (type(t) is int and 0 <= t < vocab):
            integer(f"context[{lo + j}]", t, 0, vocab - 1)


def model_rows(
    role: str,
    method: str,
    out: object,
    rows: int,
    vocab: int,
    contexts: Sequence[object] | None = None,
) -> np.ndarray:
    """A model's output, checked at the decoder's boundary: ``rows`` probability
    vectors of ``vocab`` entries, finite, non-negative, each summing to 1 within
    :data:`checks.NORM_TOL` (:func:`checks.prob_matrix`, one vectorised pass).

    Raises
    ------
    ValueError
        Naming the model and the entry, e.g. ``"target.probs[3] sums to 0.0:
        must sum to 1 (within 1e-06) (context [..., 17, 4])"``; the context (its
        last 8 tokens) when ``contexts`` is given.
    """

    def context(r: int) -> str:
        ctx = list(contexts[r])  # type: ignore[index]
        return f" (context {'[..., ' + str(ctx[-8:])[1:] if len(ctx) > 8 else ctx})"

    note = None if contexts is None else context
    return prob_matrix(f"{role}.{method}", out, rows=rows, cols=vocab, row_note=note)


class CheckedModel:
    """``model`` with every output checked at the boundary (:func:`model_rows`)
    and named ``role`` (``"target"`` or ``"draft"``) in the errors.

    Offers what ``model`` offers: ``probs``, and ``probs_tails`` /
    ``probs_tails_cdf`` / ``context_window`` when ``model`` has them (the fast
    paths stay fast paths); anything else is read from ``model``.

    Raises
    ------
    ValueError
        ``model`` has no callable ``probs`` or no integer ``vocab_size >= 1``.
    """

    def __init__(self, model: object, role: str) -> None:
        if not callable(getattr(model, "probs", None)):
            raise ValueError(f"{role} = {model!r}: must be a model with probs(contexts)")
        self.model, self.role = model, role
        self.vocab_size = integer(f"{role}.vocab_size", getattr(model, "vocab_size", None), 1)
        if getattr(model, "context_window", None) is not None:
            self.context_window = model.context_window  # type: ignore[attr-defined]
        if callable(getattr(model, "probs_tails", None)):
            self.probs_tails = self._probs_tails
        if callable(getattr(model, "probs_tails_cdf", None)):
            self.probs_tails_cdf = self._probs_tails_cdf

    def __getattr__(self, name: str) -> object:
        if name in ("probs_tails", "probs_tails_cdf", "context_window", "model"):
            raise AttributeError(name)  # not offered by the wrapped model
        return getattr(self.model, name)

    def probs(self, contexts: Sequence[Sequence[int]]) -> np.ndarray:
        out = self.model.probs(contexts)  # type: ignore[attr-defined]
        return model_rows(self.role, "probs", out, len(contexts), self.vocab_size, contexts)

    def _probs_tails(self, tails: np.ndarray) -> np.ndarray:
        return model_rows(
            self.role, "probs_tails", self.model.probs_tails(tails), len(tails), self.vocab_size
        )  # type: ignore[attr-defined]

    def _probs_tails_cdf(self, tails: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        q, cdf = self.model.probs_tails_cdf(tails)  # type: ignore[attr-defined]
        return model_rows(self.role, "probs_tails_cdf", q, len(tails), self.vocab_size), cdf


def checked_model(model: object, role: str, check: bool = True) -> object:
    """``model`` wrapped in a :class:`CheckedModel` (unless ``check`` is false, it
    already is one, or its class declares ``checks_own_outputs = True``: it
    checks every row it computes itself, as :class:`golden.models.NGramModel`
    does): what the decoders do with their models by default."""
    if not boolean("check_models", check) or isinstance(model, CheckedModel):
        return model
    if getattr(type(model), "checks_own_outputs", False) is True:
        return model
    return CheckedModel(model, role)


def context_tail(model: object, context: Sequence[int]) -> list[int]:
    """The part of ``context`` that ``model`` reads (all of it without ``context_window``);
    ``ValueError`` if ``context`` is not a sequence (its tokens are the model's to check)."""
    if not _is_sequence(context):
        raise ValueError(f"context = {context!r}: must be a sequence of tokens")
    w = getattr(model, "context_window", None)
    if w is None:
        return list(context)
    return list(context[-w:]) if w > 0 else []


@dataclass
class DraftTree:
    """One step's draft tree.

    Members
    -------
    parents : list[int]
        Parent list (SPEC §2).
    tokens : np.ndarray
        ``int64``, one per node; ``tokens[0]`` is the root token (the last emitted
        token, ``-1`` if the context is empty).
    q : np.ndarray
        ``(m, V)`` draft distributions of the ``m`` expanded (internal) nodes.
    q_index : np.ndarray
        ``int64``, one per node: the row of ``q`` holding that node's draft
        distribution, ``-1`` for a node that was not expanded (a leaf).
    """

    parents: list[int]
    tokens: np.ndarray
    q: np.ndarray
    q_index: np.ndarray

    @property
    def n(self) -> int:
        return len(self.parents)

    def q_of(self, node: int) -> np.ndarray:
        r = int(self.q_index[node])
        if r < 0:
            raise ValueError(f"node {node} was not expanded: it has no draft distribution")
        return self.q[r]


@dataclass
class StepRecord:
    """What one decoding step did (kept by the decoder, fed to policies)."""

    parents: list[int]
    tokens: list[int]
    last: int
    path: list[int]  # node indices root (0) .. last
    accepted: int  # draft tokens accepted (depth of last)
    emitted: list[int]  # accepted draft tokens + the extra token
    extra: dict = field(default_factory=dict)


class TreePolicy:
    """Base class of tree policies: chooses the shape of each step's tree.

    Subclasses override :meth:`parents` (a shape; tokens then drawn by
    :func:`draw_tree`) or, for dynamic trees, :meth:`build` itself.
    :meth:`observe` sees every finished step (for adaptive policies).
    """

    #: Largest tree (nodes, root included) the policy can produce.
    max_nodes: int = 1

    def parents(self) -> list[int]:
        raise NotImplementedError

    def build(
        self,
        draft: Model,
        context: Sequence[int],
        children: str,
        rng: np.random.Generator,
    ) -> DraftTree:
        return draw_tree(self.parents(), draft, context, children, rng)

    def observe(self, record: StepRecord) -> None:
        return None


def _draw_iid(q: np.ndarray, k: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``k[r]`` i.i.d. inverse-CDF draws from each row ``q[r]``, flattened row by row.

    One ``searchsorted`` over the row-offset normalised CDFs draws them all.
    """
    m, V = q.shape
    cdf = np.cumsum(q, axis=1)
    cdf /= cdf[:, -1:]
    cdf += np.arange(m)[:, None]
    rows = np.repeat(np.arange(m), k)
    idx = np.searchsorted(cdf.ravel(), rng.random(rows.size) + rows, side="right") - rows * V
    return np.minimum(idx, V - 1)


def _draw_swor(q: np.ndarray, k: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Ordered draws without replacement (Gumbel-top-k), flattened; ``-1`` where the
    support is shorter than ``k[r]`` (that child is pruned)."""
    m, V = q.shape
    with np.errstate(divide="ignore"):
        keys = np.log(q) + rng.gumbel(size=q.shape)
    kmax = int(k.max())
    if kmax < V:
        top = np.argpartition(-keys, kmax - 1, axis=1)[:, :kmax]
    else:
        top = np.broadcast_to(np.arange(V), (m, V))
    tk = np.take_along_axis(keys, top, axis=1)
    order = np.argsort(-tk, axis=1, kind="stable")
    top = np.take_along_axis(top, order, axis=1)
    tk = np.take_along_axis(tk, order, axis=1)
    top = np.where(np.isfinite(tk), top, -1)
    if kmax > V:
        top = np.pad(top, ((0, 0), (0, kmax - V)), constant_values=-1)
    return top[np.arange(kmax)[None, :] < k[:, None]]


def _draw_topk(q: np.ndarray, k: np.ndarray) -> np.ndarray:
    """The ``k[r]`` most likely tokens of each row, most likely first, ties by lower id;
    flattened, ``-1`` past the vocabulary (that child is pruned)."""
    m, V = q.shape
    out = []
    for r in range(m):
        kr = int(k[r])
        kv = min(kr, V)
        if kv == 1:
            row = [int(np.argmax(q[r]))]
        else:
            t = np.partition(q[r], V - kv)[V - kv]  # k-th largest value: keep every tie
            cand = np.flatnonzero(q[r] >= t)
            row = cand[np.lexsort((cand, -q[r][cand]))][:kv].tolist()
        out.extend(row + [-1] * (kr - kv))
    return np.array(out, dtype=np.int64)


def _draw_iid_level(q: np.ndarray, lv: _plan.PlanLevel, u: np.ndarray) -> np.ndarray:
    """:func:`_draw_iid` for a whole :class:`~golden.plan.PlanLevel` (same draws, bit for bit).

    ``u`` holds the level's uniforms plus ``lv.rep`` (``_draw_iid``'s ``rng.random(K) + rows``).
    """
    V = q.shape[1]
    cdf = np.cumsum(q, axis=1)
    cdf /= cdf[:, -1:]
    cdf += lv.row_offset
    idx = np.searchsorted(cdf.ravel(), u, side="right") - lv.rep_times(V)
    return np.minimum(idx, V - 1)


def _draw_iid_cdf(cdf: np.ndarray, lv: _plan.PlanLevel, u: np.ndarray) -> np.ndarray:
    """:func:`_draw_iid_level` given the rows' normalised cumulative sums (``cdf``, modified)."""
    V = cdf.shape[1]
    cdf += lv.row_offset
    idx = cdf.ravel().searchsorted(u, side="right")
    idx -= lv.rep_times(V)
    return np.minimum(idx, V - 1, out=idx)


def tails_fast_path(model: object, context: Sequence[int]) -> tuple[int, list[int]] | None:
    """``(w, tail)`` if ``model`` takes context tails (``probs_tails``), else ``None``.

    ``tail`` is the last ``w = model.context_window`` tokens of ``context``,
    right-aligned in a list of ``w`` entries, ``-1`` before them when the
    context is shorter (the first ``w`` entries of the ``vec`` of
    :class:`golden.plan.TailGathers`). A context that is not a sequence of
    integers takes the slow path (where the model reports what is wrong).
    """
    w = getattr(model, "context_window", None)
    if w is None or not callable(getattr(model, "probs_tails", None)):
        return None
    w = int(w)
    if not w:
        return 0, []
    t = list(context[-w:])
    if not all(type(x) is int for x in t):
        a = np.asarray(t)
        if a.dtype.kind not in "iu":
            return None
        t = a.tolist()
    return w, [-1] * (w - len(t)) + t


def _draw(
    pl: _plan.TreePlan,
    draft: Model,
    context: Sequence[int],
    children: str,
    rng: np.random.Generator,
) -> tuple[np.ndarray, list[np.ndarray], DraftTree | None]:
    """:func:`draw_tree` on a plan.

    Returns the tokens, the draft rows of every level's nodes (one array per
    level of ``pl.levels``) and, if a child had to be pruned, the renumbered
    :class:`DraftTree` (else ``None``).
    """
    S = pl.structure
    n = pl.n
    fast = tails_fast_path(draft, context)
    if fast is not None:
        w, tail = fast
        vec = np.empty(w + n, dtype=np.int64)  # [context tail, tokens]: the tails' source
        if w:
            vec[:w] = tail
        tokens = vec[w:]
        gathers = pl.gathers(w)
        probs_tails = draft.probs_tails
        with_cdf = getattr(draft, "probs_tails_cdf", None) if children == "iid" else None
    else:
        ltail = context_tail(draft, context)
        tokens = np.empty(n, dtype=np.int64)
    tokens[0] = int(context[-1]) if len(context) else -1
    keep = None  # once a child is pruned: the surviving nodes
    expanded: list[np.ndarray] = []  # after a pruning: the nodes each level expanded
    if children == "iid":  # never prunes: every level's uniforms in one call, same stream
        u_all = rng.random(n - 1) + pl.level_rep
    q_levels: list[np.ndarray] = []
    for li, lv in enumerate(pl.levels):
        nodes, k, kids = lv.nodes, lv.counts, lv.kids
        whole = keep is None
        if not whole:  # after a pruning: only surviving nodes expand
            live = keep[nodes]
            if not live.any():
                continue
            nodes, k, kids = nodes[live], k[live], kids[np.repeat(live, k)]
            expanded.append(nodes)
        if fast is not None:
            tails = vec[gathers.levels[li] if whole else gathers.full[nodes]]
            if with_cdf is not None:  # iid, never pruned: the draws need only the cdf
                q, cdf = with_cdf(tails)
                tokens[kids] = _draw_iid_cdf(cdf, lv, u_all[lv.kid_start : lv.kid_stop])
                q_levels.append(q)
                continue
            q = probs_tails(tails)
        else:
            d = lv.depth
            if d:
                paths = lv.paths if whole else pl.ancestors[nodes, :d]
                ctx = [ltail + r for r in tokens[paths].tolist()]
            else:
                ctx = [ltail] * len(nodes)
            q = draft.probs(ctx)
        q = np.asarray(q, dtype=np.float64)
        if children == "iid":
            drawn = _draw_iid_level(q, lv, u_all[lv.kid_start : lv.kid_stop])
        elif children == "swor":
            drawn = _draw_swor(q, k, rng)
        else:
            drawn = _draw_topk(q, k)
        q_levels.append(q)
        tokens[kids] = drawn
        if children != "iid" and (drawn < 0).any():  # pruned children and their descendants
            if keep is None:
                keep = np.ones(n, dtype=bool)
                expanded = [lv2.nodes for lv2 in pl.levels[: li + 1]]
            keep[kids[drawn < 0]] = False
            par = S.parents
            for i in range(1, n):
                if not keep[par[i]]:
                    keep[i] = False
    if keep is None:
        return tokens, q_levels, None
    # renumber the surviving nodes, order preserved
    V = int(draft.vocab_size)
    qmat = np.concatenate(q_levels) if q_levels else np.zeros((0, V))
    q_index = np.full(n, -1, dtype=np.int64)
    done = np.concatenate(expanded)
    q_index[done] = np.arange(done.size)
    new_id = np.cumsum(keep) - 1
    kept = np.flatnonzero(keep)
    new_par = [-1] + [int(new_id[S.parents[i]]) for i in kept[1:]]
    return tokens, q_levels, DraftTree(new_par, tokens[kept].copy(), qmat, q_index[kept])


def draw_tree(
    parents: Sequence[int],
    draft: Model,
    context: Sequence[int],
    children: str,
    rng: np.random.Generator,
) -> DraftTree:
    """Draw the draft tokens of a tree of the given shape (see module docstring).

    One batched draft call per tree level; the draws of a level are
    vectorised across its nodes. A draft with ``probs_tails`` (and
    ``context_window``) gets every level's contexts as one tails matrix,
    gathered with index arrays computed once per shape
    (:func:`golden.plan.plan`); any other draft gets lists of tokens from
    ``probs``. Both give the same tree, bit for bit.

    Raises
    ------
    ValueError
        Naming the argument: a bad tree (``parents``), ``children`` rule,
        ``rng`` (not a ``numpy.random.Generator``), ``draft`` (no ``probs``, or
        a row that is not a distribution: :func:`checked_model`) or ``context``
        (not a sequence, or a token it reads not in ``0 .. vocab_size - 1``).
    """
    pl = _plan.plan(parents)
    check_children_rule(children)
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng = {rng!r}: must be a numpy.random.Generator")
    draft = checked_model(draft, "draft")
    w = getattr(draft, "context_window", None)
    check_context(context, int(draft.vocab_size), 1 if w is None else max(int(w), 1))
    tokens, q_levels, pruned = _draw(pl, draft, context, children, rng)
    if pruned is not None:
        return pruned
    V = int(draft.vocab_size)
    qmat = np.concatenate(q_levels) if q_levels else np.zeros((0, V))
    return DraftTree(list(pl.structure.parents), tokens.copy(), qmat, pl.level_pos.copy())
