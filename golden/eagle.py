"""The EAGLE-2 tree policy: a dynamic, context-dependent draft tree (SPEC §1-§3).

EAGLE-2 (Li et al. 2024, "EAGLE-2: Faster Inference of Language Models with
Dynamic Draft Trees", arXiv:2406.16858): expansion by cumulative draft
confidence, then rerank. One of the policies of :mod:`golden.trees` (which
re-exports :class:`Eagle2Tree`).
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

import numpy as np

from checks import integer
from golden.draft import DraftTree, Model, TreePolicy, check_context, checked_model, context_tail
from golden.tree import MAX_NODES

__all__ = ["Eagle2Tree"]


class Eagle2Tree(TreePolicy):
    """EAGLE-2 dynamic draft tree (Li et al. 2024, §4).

    *Expansion.* Starting at the root, for ``depth`` rounds (at most
    ``n_nodes - 1``: a deeper node could not be kept): the draft distribution
    of every node selected for expansion is computed (one batched
    ``draft.probs`` call per round, contexts ``context_tail(draft, context) +
    path tokens``); each expanded node gets its ``topk`` most likely tokens as
    candidate children (ties: lower token id), with value ``parent value *
    q(token)`` (the cumulative draft confidence, root value 1). The next round
    expands the ``topk`` highest-value candidates created in this round (ties:
    creation order).

    *Rerank.* The ``n_nodes - 1`` candidates of highest value are kept (ties:
    creation order), best first from the root, so a node is only taken after
    its parent: the kept set is always a tree (with a normalised draft the
    value never grows along a path, so this is exactly the global top
    ``n_nodes - 1``). The kept nodes are numbered breadth first, siblings by
    decreasing ``q`` (their creation order), the order in which they are tried.

    The tree is a deterministic function of the draft and the context: ``rng``
    is not used. The policy is meant for ``children = "topk"`` (SPEC §3.1).

    Parameters
    ----------
    n_nodes : int
        Node budget, root included, ``1 .. N_NODES`` (1,024).
    depth : int
        Expansion rounds (largest draft-node depth), ``>= 1``.
    topk : int
        Children per expanded node and nodes expanded per round, ``>= 1``.

    Attributes
    ----------
    last_values : np.ndarray
        Values (cumulative draft confidence) of the nodes of the last tree built,
        root included (1.0).
    """

    def __init__(self, n_nodes: int, depth: int, topk: int) -> None:
        self.n_nodes = integer("n_nodes", n_nodes, 1, MAX_NODES)
        self.depth = integer("depth", depth, 1)
        self.topk = integer("topk", topk, 1)
        self.max_nodes = self.n_nodes
        self.last_values = np.ones(1)

    def __repr__(self) -> str:
        return f"Eagle2Tree({self.n_nodes}, {self.depth}, {self.topk})"

    def parents(self) -> list[int]:
        raise NotImplementedError("Eagle2Tree is dynamic: its shape comes from build()")

    def build(
        self,
        draft: Model,
        context: Sequence[int],
        children: str,
        rng: np.random.Generator,
    ) -> DraftTree:
        """Build one step's tree (see the class docstring).

        Parameters
        ----------
        draft : Model
            The draft model.
        context : Sequence[int]
            Tokens so far; the last one is the root.
        children : str
            Must be ``"topk"``.
        rng : np.random.Generator
            Unused (the tree is deterministic).

        Returns
        -------
        DraftTree
            ``q`` holds the draft distribution of every kept node with kept
            children (``q_index`` -1 for the leaves).
        """
        if not isinstance(children, str) or children != "topk":
            raise ValueError(
                f"children = {children!r}: Eagle2Tree builds top-k trees, children must be 'topk'"
            )
        draft = checked_model(draft, "draft")  # a draft without probs: named
        V = int(draft.vocab_size)
        w = getattr(draft, "context_window", None)
        check_context(context, V, 1 if w is None else max(int(w), 1))
        tail = context_tail(draft, context)
        root_tok = int(context[-1]) if len(context) else -1
        # candidate nodes, in creation order (index 0 = root)
        c_par = [-1]
        c_tok = [root_tok]
        c_val = [1.0]
        c_path: list[list[int]] = [[]]
        c_qrow = [-1]  # row of q_rows for expanded candidates
        q_rows: list[np.ndarray] = []
        k = min(self.topk, V)
        frontier = [0]
        for _ in range(min(self.depth, self.n_nodes - 1)):
            q = np.asarray(draft.probs([tail + c_path[a] for a in frontier]), dtype=np.float64)
            if q.shape != (len(frontier), V):
                raise ValueError(
                    f"draft.probs returned shape {q.shape}, expected {(len(frontier), V)}"
                )
            new = []
            for r, a in enumerate(frontier):
                c_qrow[a] = len(q_rows)
                q_rows.append(q[r])
                toks = np.argsort(-q[r], kind="stable")[:k]
                for t in toks:
                    new.append(len(c_par))
                    c_par.append(a)
                    c_tok.append(int(t))
                    c_val.append(c_val[a] * float(q[r, t]))
                    c_path.append(c_path[a] + [int(t)])
                    c_qrow.append(-1)
            new.sort(key=lambda i: (-c_val[i], i))
            frontier = new[: self.topk]
        # rerank: best first, a node eligible once its parent is kept
        kids: list[list[int]] = [[] for _ in c_par]
        for i in range(1, len(c_par)):
            kids[c_par[i]].append(i)
        kept = {0}
        heap = [(-c_val[c], c) for c in kids[0]]
        heapq.heapify(heap)
        while heap and len(kept) < self.n_nodes:
            _, c = heapq.heappop(heap)
            kept.add(c)
            for g in kids[c]:
                heapq.heappush(heap, (-c_val[g], g))
        # number breadth first; siblings in creation order = decreasing q
        order = [0]
        new_id = {0: 0}
        parents = [-1]
        for a in order:  # grows while iterating
            for c in kids[a]:
                if c in kept:
                    new_id[c] = len(order)
                    order.append(c)
                    parents.append(new_id[a])
        has_kids = [False] * len(order)
        for i in range(1, len(order)):
            has_kids[parents[i]] = True
        rows = []
        q_index = np.full(len(order), -1, dtype=np.int64)
        for i, c in enumerate(order):
            if has_kids[i]:
                q_index[i] = len(rows)
                rows.append(q_rows[c_qrow[c]])
        tokens = np.array([c_tok[c] for c in order], dtype=np.int64)
        qmat = np.stack(rows) if rows else np.zeros((0, V))
        self.last_values = np.array([c_val[c] for c in order])
        return DraftTree(parents, tokens, qmat, q_index)
