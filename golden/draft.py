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

from golden import tree as _tree

__all__ = [
    "CHILDREN_RULES",
    "Model",
    "DraftTree",
    "StepRecord",
    "TreePolicy",
    "context_tail",
    "draw_tree",
    "check_children_rule",
]

CHILDREN_RULES = ("iid", "swor", "topk")


@runtime_checkable
class Model(Protocol):
    """A language model: ``probs(contexts)`` has shape ``(len(contexts), vocab_size)``.

    A model may also define ``context_window: int``: it reads only the last
    ``context_window`` tokens of a context, so callers may pass just those.
    """

    vocab_size: int

    def probs(self, contexts: list[list[int]]) -> np.ndarray: ...


def check_children_rule(children: str) -> str:
    if children not in CHILDREN_RULES:
        raise ValueError(f"children = {children!r}: must be one of {', '.join(CHILDREN_RULES)}")
    return children


def context_tail(model: object, context: Sequence[int]) -> list[int]:
    """The part of ``context`` that ``model`` reads (all of it without ``context_window``)."""
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


def _draw_iid(q: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    cdf = np.cumsum(q)
    u = rng.random(k) * cdf[-1]
    idx = np.searchsorted(cdf, u, side="right")
    return np.minimum(idx, len(q) - 1)


def _draw_swor(q: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    support = np.flatnonzero(q > 0)
    g = np.log(q[support]) + rng.gumbel(size=support.size)
    order = np.argsort(-g, kind="stable")
    return support[order[:k]]


def _draw_topk(q: np.ndarray, k: int) -> np.ndarray:
    if k == 1:
        return np.array([int(np.argmax(q))])
    return np.argsort(-q, kind="stable")[:k]


def draw_tree(
    parents: Sequence[int],
    draft: Model,
    context: Sequence[int],
    children: str,
    rng: np.random.Generator,
) -> DraftTree:
    """Draw the draft tokens of a tree of the given shape (see module docstring)."""
    par = _tree.validate(parents)
    check_children_rule(children)
    n = len(par)
    ch = _tree.children_lists(par)
    dep = _tree.depths(par)
    tail = context_tail(draft, context)
    tokens = np.full(n, -1, dtype=np.int64)
    if len(context):
        tokens[0] = int(context[-1])
    keep = np.ones(n, dtype=bool)
    path_tok: list[list[int]] = [[] for _ in range(n)]
    q_rows: list[np.ndarray] = []
    q_index = np.full(n, -1, dtype=np.int64)
    maxd = max(dep)
    for d in range(maxd):
        level = [a for a in range(n) if dep[a] == d and ch[a] and keep[a]]
        if not level:
            continue
        q = np.asarray(draft.probs([tail + path_tok[a] for a in level]), dtype=np.float64)
        for r, a in enumerate(level):
            kids = ch[a]
            qa = q[r]
            q_index[a] = len(q_rows)
            q_rows.append(qa)
            if children == "iid":
                toks = _draw_iid(qa, len(kids), rng)
            elif children == "swor":
                toks = _draw_swor(qa, len(kids), rng)
            else:
                toks = _draw_topk(qa, len(kids))
            for j, c in enumerate(kids):
                if j < len(toks):
                    tokens[c] = int(toks[j])
                    path_tok[c] = path_tok[a] + [int(toks[j])]
                else:
                    keep[c] = False
        # a pruned node's descendants are pruned too (parents come first)
        for i in range(1, n):
            if not keep[par[i]]:
                keep[i] = False
    V = int(draft.vocab_size)
    qmat = np.stack(q_rows) if q_rows else np.zeros((0, V))
    if keep.all():
        return DraftTree(par, tokens, qmat, q_index)
    # renumber the surviving nodes, order preserved
    new_id = np.cumsum(keep) - 1
    kept = np.flatnonzero(keep)
    new_par = [-1] + [int(new_id[par[i]]) for i in kept[1:]]
    return DraftTree(new_par, tokens[kept], qmat, q_index[kept])
