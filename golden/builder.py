"""The tree builder as tree policies: static, EAGLE-2 and the topology optimiser.

The fixed-point twins (:mod:`golden.topk`, :mod:`golden.dynamic`,
:mod:`golden.optimiser`) as :class:`golden.draft.TreePolicy` objects, so that
``golden.decoder.speculative_generate(..., children="topk", arith="fixed")``
decodes on exactly the trees the RTL tree builder builds:

:class:`FixedStaticTree`
    Static mode (spec §3.8) on a fixed shape.
:class:`FixedEagle2Tree`
    Dynamic mode (spec §3.9).
:class:`FixedTopologyOptimiser`
    Static mode on the shapes of the fixed topology optimiser (spec §3.10,
    §3.11): statistics from every step, a re-solve every ``U`` steps, the
    budget chosen from a cost table, fallback to plain decoding with probes.

The float draft distributions are quantised (§3.3) to ``PROB_BITS`` before
the builder sees them; the trees carry the float rows (the decoder's ``q``),
which ``topk`` children never read for acceptance (§3.1).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from checks import bits as check_bits
from checks import boolean, float_array, integer, real
from golden import optimiser as _opt
from golden import tree as _tree
from golden.draft import (
    DraftTree,
    Model,
    StepRecord,
    TreePolicy,
    check_context,
    checked_model,
    context_tail,
)
from golden.dynamic import DynamicBuild, build_dynamic, check_dynamic
from golden.sampler import quantize
from golden.topk import CONF_BITS, K_MAX, StaticBuild, build_static, check_conf_bits, topk
from golden.trees import chain

__all__ = [
    "FixedStaticTree",
    "FixedEagle2Tree",
    "FixedTopologyOptimiser",
    "FixedSolve",
    "acc_fixed",
]


def _draft_rows(draft: Model, tail: list[int], paths: list[list[int]], V: int) -> np.ndarray:
    q = np.asarray(draft.probs([tail + p for p in paths]), dtype=np.float64)
    if q.shape != (len(paths), V):
        raise ValueError(f"draft.probs returned shape {q.shape}, expected {(len(paths), V)}")
    return q


def _draft_tree(
    parents: list[int], tokens: list[int], rows: dict[int, np.ndarray], V: int
) -> DraftTree:
    """A :class:`DraftTree` whose internal nodes carry their float draft rows."""
    has_kids = [False] * len(parents)
    for i in range(1, len(parents)):
        has_kids[parents[i]] = True
    q_index = np.full(len(parents), -1, dtype=np.int64)
    mat = []
    for i, h in enumerate(has_kids):
        if h:
            q_index[i] = len(mat)
            mat.append(rows[i])
    qmat = np.stack(mat) if mat else np.zeros((0, V))
    return DraftTree(list(parents), np.array(tokens, dtype=np.int64), qmat, q_index)


def _check_topk_build(children: str, draft: Model, context: Sequence[int]) -> tuple:
    if not isinstance(children, str) or children != "topk":
        raise ValueError(
            f"children = {children!r}: the fixed tree builder builds top-k trees, "
            "children must be 'topk'"
        )
    draft = checked_model(draft, "draft")
    V = int(draft.vocab_size)
    w = getattr(draft, "context_window", None)
    check_context(context, V, 1 if w is None else max(int(w), 1))
    root = int(context[-1]) if len(context) else -1
    return draft, V, context_tail(draft, context), root


class FixedEagle2Tree(TreePolicy):
    """EAGLE-2 in the tree builder's fixed point (spec §3.9): a tree policy.

    The draft's float distributions are quantised (§3.3) to ``prob_bits``
    and the tree is :func:`build_dynamic`'s. ``rng`` is not used.

    Parameters
    ----------
    n_nodes, depth, k, width : int
        ``M``, ``D``, ``K``, ``W`` of :func:`build_dynamic`; ``width`` defaults
        to ``k`` (EAGLE-2's choice, and :class:`golden.eagle.Eagle2Tree`'s).
    prob_bits, conf_bits : int
        ``PROB_BITS`` (default 16), ``CONF_BITS`` (default 32).

    Attributes
    ----------
    last : DynamicBuild or None
        The last tree built.
    """

    def __init__(
        self,
        n_nodes: int,
        depth: int,
        k: int,
        width: int | None = None,
        *,
        prob_bits: int = 16,
        conf_bits: int = CONF_BITS,
    ) -> None:
        self.n_nodes, self.depth, self.k, self.width = check_dynamic(
            n_nodes, depth, k, k if width is None else width
        )
        self.prob_bits = check_bits("prob_bits", prob_bits)
        self.conf_bits = check_conf_bits(conf_bits, self.prob_bits)
        self.max_nodes = self.n_nodes
        self.last: DynamicBuild | None = None

    def __repr__(self) -> str:
        return f"FixedEagle2Tree({self.n_nodes}, {self.depth}, {self.k}, {self.width})"

    def parents(self) -> list[int]:
        raise NotImplementedError("FixedEagle2Tree is dynamic: its shape comes from build()")

    def build(
        self, draft: Model, context: Sequence[int], children: str, rng: np.random.Generator
    ) -> DraftTree:
        draft, V, tail, root = _check_topk_build(children, draft, context)
        rows: dict[tuple[int, ...], np.ndarray] = {}

        def dist(paths: list[list[int]]) -> list[np.ndarray]:
            q = _draft_rows(draft, tail, paths, V)
            for p, r in zip(paths, q, strict=True):
                rows[tuple(p)] = r
            return [quantize(r, self.prob_bits) for r in q]

        b = build_dynamic(
            dist, self.n_nodes, self.depth, self.k, self.width,
            prob_bits=self.prob_bits, conf_bits=self.conf_bits, root_token=root,
        )  # fmt: skip
        self.last = b
        path_of = [()] * len(b.parents)
        float_rows = {}
        for i in range(1, len(b.parents)):
            path_of[i] = path_of[b.parents[i]] + (b.tokens[i],)
        for i in range(len(b.parents)):
            if path_of[i] in rows:
                float_rows[i] = rows[path_of[i]]
        return _draft_tree(b.parents, b.tokens, float_rows, V)


class FixedStaticTree(TreePolicy):
    """Static mode of the tree builder (spec §3.8) as a tree policy.

    Each step's tree is :func:`golden.topk.build_static` of the current shape
    over the quantised draft distributions; the shape comes from
    :meth:`shape` (a fixed one here; the fixed topology optimiser overrides it).

    Parameters
    ----------
    shape : sequence of int
        The shape (§2); no node with more than ``k`` children.
    k : int
        ``K``, ``1 .. 16``.
    prob_bits, conf_bits : int
        ``PROB_BITS`` (default 16), ``CONF_BITS`` (default 32).

    Attributes
    ----------
    last : golden.topk.StaticBuild or None
        The last tree built.
    """

    def __init__(
        self, shape: Sequence[int], k: int, *, prob_bits: int = 16, conf_bits: int = CONF_BITS
    ) -> None:
        self.k = integer("k", k, 1, K_MAX)
        self.prob_bits = check_bits("prob_bits", prob_bits)
        self.conf_bits = check_conf_bits(conf_bits, self.prob_bits)
        self._shape = _tree.validate(shape)
        ranks = _tree.sibling_rank(self._shape)
        if len(self._shape) > 1 and max(ranks[1:]) >= self.k:
            i = ranks.index(max(ranks[1:]))
            raise ValueError(
                f"shape[{i}] = {self._shape[i]}: node {i} is child {ranks[i] + 1} of its "
                f"parent, more than k = {self.k} children"
            )
        self.max_nodes = len(self._shape)
        self.last: StaticBuild | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._shape!r}, {self.k})"

    def shape(self) -> list[int]:
        """The shape the next tree is built on."""
        return list(self._shape)

    def parents(self) -> list[int]:
        raise NotImplementedError("the tree builder prunes: the tree comes from build()")

    def build(
        self, draft: Model, context: Sequence[int], children: str, rng: np.random.Generator
    ) -> DraftTree:
        draft, V, tail, root = _check_topk_build(children, draft, context)
        shape = self.shape()
        kids = _tree.children_lists(shape)
        ranks = _tree.sibling_rank(shape)
        paths: dict[int, list[int]] = {0: []}
        float_rows: dict[int, np.ndarray] = {}
        qrows: dict[int, np.ndarray] = {}
        level = [0]
        while level:
            need = [a for a in level if kids[a] and a in paths]
            if need:
                q = _draft_rows(draft, tail, [paths[a] for a in need], V)
                for a, r in zip(need, q, strict=True):
                    float_rows[a] = r
                    qrows[a] = quantize(r, self.prob_bits)
                    ent = topk(qrows[a], self.k, prob_bits=self.prob_bits)
                    for c in kids[a]:
                        if ranks[c] < len(ent):
                            paths[c] = paths[a] + [ent[ranks[c]].token]
            level = [c for a in level for c in kids[a]]
        b = build_static(
            shape, qrows, self.k, prob_bits=self.prob_bits, conf_bits=self.conf_bits,
            root_token=root,
        )  # fmt: skip
        self.last = b
        rows = {i: float_rows[s] for i, s in enumerate(b.source) if s in float_rows}
        return _draft_tree(b.parents, b.tokens, rows, V)


@dataclass(frozen=True)
class FixedSolve:
    """One solve of :class:`FixedTopologyOptimiser` (spec §3.11).

    Attributes
    ----------
    step : int
        Steps observed when it was made.
    mode : str
        ``"spec"`` or ``"plain"`` after it.
    n_nodes : int
        The chosen budget's tree size (1 when plain).
    expected, expected_raw : int
        ``E`` of the chosen budget and ``E_raw`` of its tree (``A``-bit; 0 when plain).
    estimate, raw : tuple[int, ...]
        The normalised smoothed and raw estimates (``A``-bit).
    """

    step: int
    mode: str
    n_nodes: int
    expected: int
    expected_raw: int
    estimate: tuple[int, ...]
    raw: tuple[int, ...]


#: node budgets (root included) the fixed optimiser's table holds by default
DEFAULT_BUDGETS = (2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


def acc_fixed(acc: Sequence[float], ranks: int, acc_bits: int) -> list[int]:
    """A float acceptance vector as §3.10's fixed-point prior: each entry
    ``floor(x * 2**A + 0.5)`` (at most ``2**A``), zero-padded to ``ranks``,
    normalised.

    Raises
    ------
    ValueError
        Naming ``initial_acc``: an entry outside ``[0, 1]``, more entries than
        ``ranks``.
    """
    a = float_array("initial_acc", acc)
    if not 1 <= a.size <= ranks:
        raise ValueError(f"initial_acc has {a.size} entries: must be 1 .. ranks = {ranks}")
    for i, v in enumerate(a.tolist()):
        real(f"initial_acc[{i}]", v, 0, 1)
    one = 1 << acc_bits
    q = [min(int(np.floor(v * one + 0.5)), one) for v in a.tolist()]
    return _opt.normalised(q + [0] * (ranks - a.size), acc_bits)


class FixedTopologyOptimiser(FixedStaticTree):
    """The fixed topology optimiser (spec §3.10, §3.11) driving static mode.

    Parameters
    ----------
    n_nodes : int
        ``M``: the largest budget, root included, ``2 .. N_NODES``.
    max_depth : int
        ``D``, ``1 .. N_NODES - 1``.
    initial_acc : sequence of float
        The prior as probabilities (:func:`acc_fixed`), at most ``ranks`` entries.
    costs : sequence of int
        Step cost of each budget in ``budgets`` (``1 .. 2**32 - 1``).
    cost_plain : int
        Step cost of plain decoding (``cost_0``).
    budgets : sequence of int, optional
        Increasing budgets in ``2 .. n_nodes``, at most 16 (default
        :data:`DEFAULT_BUDGETS` up to ``n_nodes``, and ``n_nodes``).
    update_every : int
        ``U``: steps between re-solves, ``1 .. 2**16``.
    window : int
        ``WIN``: steps with a trial in the statistics, ``1 .. 64``.
    prior_weight : int
        ``PW``: pseudo-trials, ``0 .. 255``.
    ranks : int
        ``R``, ``1 .. 16``; also the builder's ``K`` unless ``k`` is given.
    fallback : bool
        Allow plain decoding.
    probe_depth : int
        ``PROBE``: draft nodes of a probe chain, ``1 .. n_nodes - 1``.
    acc_bits, prob_bits, conf_bits : int
        ``A``, ``PROB_BITS``, ``CONF_BITS``.
    k : int, optional
        The static builder's ``K`` (``ranks .. 16``).

    Attributes
    ----------
    mode : str
        ``"spec"`` or ``"plain"``.
    stats : golden.optimiser.RankStats
        The window.
    history : list[FixedSolve]
        Every solve, the one at configuration first.
    n_observed : int
        Steps observed.
    """

    def __init__(
        self,
        n_nodes: int,
        max_depth: int,
        initial_acc: Sequence[float],
        costs: Sequence[int],
        cost_plain: int,
        *,
        budgets: Sequence[int] | None = None,
        update_every: int = 16,
        window: int = 32,
        prior_weight: int = 2,
        ranks: int = 8,
        fallback: bool = True,
        probe_depth: int = 1,
        acc_bits: int = 16,
        prob_bits: int = 16,
        conf_bits: int = CONF_BITS,
        k: int | None = None,
    ) -> None:
        self.n_nodes = integer("n_nodes", n_nodes, 2, _tree.MAX_NODES)
        self.max_depth = integer("max_depth", max_depth, 1, _tree.MAX_NODES - 1)
        self.ranks = integer("ranks", ranks, 1, _opt.R_MAX)
        self.acc_bits = _opt.check_acc_bits(acc_bits)
        super().__init__(
            [-1], self.ranks if k is None else integer("k", k, self.ranks, K_MAX),
            prob_bits=prob_bits, conf_bits=conf_bits,
        )  # fmt: skip
        self.prior = acc_fixed(initial_acc, self.ranks, self.acc_bits)
        if budgets is None:
            budgets = [b for b in DEFAULT_BUDGETS if b < self.n_nodes] + [self.n_nodes]
        self.budgets, self.costs = _opt.check_costs(budgets, costs, self.n_nodes)
        self.cost_plain = integer("cost_plain", cost_plain, 1, _opt.COST_MAX)
        self.update_every = integer("update_every", update_every, 1, 1 << 16)
        self.prior_weight = integer("prior_weight", prior_weight, 0, _opt.PW_MAX)
        self.fallback = boolean("fallback", fallback)
        self.probe_depth = integer("probe_depth", probe_depth, 1, self.n_nodes - 1)
        self.stats = _opt.RankStats(self.ranks, window)
        self.max_nodes = self.n_nodes
        self.mode = "spec"
        self.n_observed = 0
        self.history: list[FixedSolve] = []
        self._resolve(initial=True)

    def __repr__(self) -> str:
        return (
            f"FixedTopologyOptimiser({self.n_nodes}, {self.max_depth}, prior={self.prior!r}, "
            f"update_every={self.update_every})"
        )

    def _resolve(self, initial: bool = False) -> None:
        A, st = self.acc_bits, self.stats
        est = _opt.smoothed(st.hits, st.trials, self.prior, self.prior_weight, A)
        rw = _opt.raw(st.hits, st.trials, A)
        sol = _opt.solve(est, self.n_nodes, self.max_depth, A)
        j = _opt.choose_budget(sol, self.budgets, self.costs, A)
        mode, shape, e, e_raw = "plain", [-1], 0, 0
        if j is not None:
            m = self.budgets[j]
            shape, e = sol.tree(m), int(sol.values[m])
            e_raw = _opt.tree_value(shape, rw, A)
            if not self.fallback or initial:
                spec = True
            elif not st.trials[0]:  # no evidence since the last change: keep the mode
                spec = self.mode == "spec"
            else:
                spec = _opt.speculate(e, e_raw, self.costs[j], self.cost_plain, A)
            if spec:
                mode = "spec"
            else:
                shape, e = [-1], 0
        if mode == "plain" and self.mode != "plain":
            st.clear()
        self.mode = mode
        self._shape = shape
        self.history.append(
            FixedSolve(self.n_observed, mode, len(shape), e, e_raw, tuple(est), tuple(rw))
        )

    def is_probe_step(self) -> bool:
        """True if the next step is a probe (plain mode, the step before a re-solve)."""
        return self.mode == "plain" and (self.n_observed + 1) % self.update_every == 0

    def shape(self) -> list[int]:
        return chain(self.probe_depth) if self.is_probe_step() else list(self._shape)

    def observe(self, record: StepRecord) -> None:
        """Count a finished step (§3.10; ``ValueError`` naming a bad record, which
        changes nothing); re-solve every ``update_every`` steps (§3.11)."""
        hits, trials = _opt.step_counts(record.parents, record.path, self.ranks)
        if self.mode == "plain" and any(trials):  # a probe: only the latest one counts
            self.stats.clear()
        self.stats.add(hits, trials)
        self.n_observed += 1
        if self.n_observed % self.update_every == 0:
            self._resolve()
