"""Tree policies: the shapes of the draft trees (the topology optimiser, SPEC §1-§3).

Every tree is a parent list (SPEC §2): node 0 is the root, ``parents[i] < i``,
siblings are tried in index order, so the most promising child of a node gets
the lowest index among its siblings. Node counts (``n_nodes``, ``max_nodes``)
always *include* the root: a chain of ``k`` draft tokens has ``k + 1`` nodes.

Policies
--------
:class:`Chain`, :class:`StaticTree`
    Fixed shapes (helpers :func:`chain`, :func:`full_tree`, :func:`star`).
:class:`SequoiaTree`, :class:`AdaptiveSequoia`
    The expected-value optimal tree of Sequoia (Chen et al. 2024, "Sequoia:
    Scalable, Robust, and Hardware-aware Speculative Decoding",
    arXiv:2402.12374) under the positional acceptance model, solved by dynamic
    programming (:func:`sequoia_tree`); the adaptive one re-estimates the
    acceptance vector from the decoder's :class:`~golden.draft.StepRecord`\\ s
    (:func:`estimate_acceptance`) and re-solves.
:class:`Eagle2Tree` (:mod:`golden.eagle`)
    The dynamic, context-dependent draft tree of EAGLE-2 (Li et al. 2024,
    "EAGLE-2: Faster Inference of Language Models with Dynamic Draft Trees",
    arXiv:2406.16858): expansion by cumulative draft confidence, then rerank.

Positional acceptance model
---------------------------
``acc = (p_1, ..., p_K)``: given that a node is on the accepted path and has at
least ``b`` children, ``p_b`` is the probability that its ``b``-th child
(sibling rank ``b``, 1-based) is the accepted one. The events are disjoint, so
``sum(acc) <= 1``; ranks beyond ``K`` have probability 0. A node is on the
accepted path with probability ``prod p_rank`` over the nodes of its path, and
the expected number of accepted draft tokens of a tree is the sum of that over
its draft nodes (:func:`expected_accepted`). For a chain, ``acc = [alpha]``
gives the classic ``alpha (1 - alpha**gamma) / (1 - alpha)`` of Leviathan et
al. 2023 (:func:`chain_expected_accepted`).
"""

from __future__ import annotations

import math
import operator
from collections import deque
from collections.abc import Iterable, Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from checks import float_array, int_array, integer, real
from golden import tree as _tree
from golden.draft import StepRecord, TreePolicy
from golden.eagle import Eagle2Tree

__all__ = [
    "chain",
    "star",
    "full_tree",
    "Chain",
    "StaticTree",
    "chain_expected_accepted",
    "expected_accepted",
    "estimate_acceptance",
    "sequoia_tree",
    "tree_from_choices",
    "SequoiaTree",
    "AdaptiveSequoia",
    "Eagle2Tree",
]

#: Largest tree :func:`full_tree`, :func:`chain` and :func:`star` agree to build
#: (a guard against typos; a policy's trees have at most ``N_NODES`` nodes).
FULL_TREE_LIMIT = 1 << 20

#: Most sibling ranks tracked (a node of an ``N_NODES`` tree has fewer children).
MAX_RANKS = _tree.MAX_NODES - 1

#: Tolerance on ``sum(acc) <= 1``.
ACC_SUM_TOL = 1e-9


# --------------------------------------------------------------------------- checks


def _check_acc(acc: Sequence[float], name: str = "acc") -> np.ndarray:
    """An acceptance vector as ``float64``: non-empty, 1-D, every entry a number
    in ``[0, 1]`` (:func:`checks.real`: no bool, no string), sum ``<= 1``."""
    a = float_array(name, acc)
    if a.size == 0:
        raise ValueError(f"{name} = {acc!r}: must be a non-empty sequence of probabilities")
    entries = acc.tolist() if isinstance(acc, np.ndarray) else list(acc)
    for i, v in enumerate(entries):
        real(f"{name}[{i}]", v, 0, 1)
    s = float(a.sum())
    if s > 1.0 + ACC_SUM_TOL:
        raise ValueError(
            f"{name} sums to {s!r}: must be at most 1 (within {ACC_SUM_TOL:g}; "
            "ranks are disjoint events)"
        )
    return a


# --------------------------------------------------------------------------- shapes


def chain(k: int) -> list[int]:
    """Parent list of a chain of ``k`` draft tokens (``k + 1`` nodes).

    Parameters
    ----------
    k : int
        Number of draft tokens, ``0 .. FULL_TREE_LIMIT - 1``; ``k = 0`` is plain
        decoding (root only).

    Returns
    -------
    list[int]
        ``[-1, 0, 1, ..., k - 1]``.
    """
    k = integer("k", k, 0, FULL_TREE_LIMIT - 1)
    return [-1] + list(range(k))


def star(k: int) -> list[int]:
    """Parent list of a root with ``k`` children (``k + 1`` nodes).

    Parameters
    ----------
    k : int
        Number of children of the root, ``0 .. FULL_TREE_LIMIT - 1``.

    Returns
    -------
    list[int]
        ``[-1, 0, 0, ..., 0]``.
    """
    k = integer("k", k, 0, FULL_TREE_LIMIT - 1)
    return [-1] + [0] * k


def full_tree(branching: Sequence[int]) -> list[int]:
    """Parent list of a complete tree, numbered breadth first.

    Parameters
    ----------
    branching : Sequence[int]
        ``branching[d]`` children for every node of depth ``d`` (each ``>= 1``);
        ``(2, 2, 1)``: the root has 2 children, each of them 2, each of those 1.
        An empty sequence gives the root alone.

    Returns
    -------
    list[int]
        The parent list; a node's children have consecutive indices.
    """
    try:
        br = list(branching)
    except TypeError as exc:
        raise ValueError(f"branching = {branching!r}: must be a sequence of integers") from exc
    total, level = 1, 1
    for d, b in enumerate(br):
        integer(f"branching[{d}]", b, 1)
        level *= int(b)
        total += level
        if total > FULL_TREE_LIMIT:
            raise ValueError(
                f"branching = {br!r}: the tree would have more than {FULL_TREE_LIMIT} nodes"
            )
    parents = [-1]
    frontier = [0]
    for b in br:
        nxt = []
        for a in frontier:
            for _ in range(int(b)):
                nxt.append(len(parents))
                parents.append(a)
        frontier = nxt
    return parents


class StaticTree(TreePolicy):
    """A tree policy that always returns the same shape.

    Parameters
    ----------
    parents : Sequence[int]
        The parent list (checked with :func:`golden.tree.validate`).
    """

    def __init__(self, parents: Sequence[int]) -> None:
        self._parents = _tree.validate(parents)
        self.max_nodes = len(self._parents)

    def parents(self) -> list[int]:
        return list(self._parents)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._parents!r})"


class Chain(StaticTree):
    """A chain of ``k`` draft tokens (``max_nodes = k + 1``; ``k = 0``: plain decoding).

    Parameters
    ----------
    k : int
        Number of draft tokens, ``0 .. N_NODES - 1`` (1,023).
    """

    def __init__(self, k: int) -> None:
        self.k = integer("k", k, 0, _tree.MAX_NODES - 1)
        super().__init__(chain(self.k))

    def __repr__(self) -> str:
        return f"Chain({self.k})"


# --------------------------------------------------------------------------- positional model


def chain_expected_accepted(alpha: float, gamma: int) -> float:
    """Expected accepted draft tokens of a chain of ``gamma`` with acceptance rate ``alpha``.

    ``alpha (1 - alpha**gamma) / (1 - alpha)`` (``gamma`` if ``alpha == 1``): the
    number of *draft* tokens kept, excluding the extra token (Leviathan et al.
    2023 count ``1 +`` this as tokens per step).

    Parameters
    ----------
    alpha : float
        Per-token acceptance probability, in ``[0, 1]``.
    gamma : int
        Chain length (draft tokens), ``>= 0``.

    Returns
    -------
    float
        ``sum_{i=1..gamma} alpha**i``.
    """
    a = real("alpha", alpha, 0, 1)
    g = integer("gamma", gamma, 0)
    if a == 1.0:
        return float(g)
    if a == 0.0 or g == 0:
        return 0.0
    # -expm1(g log a) = 1 - a**g without cancellation for a close to 1
    return a * -math.expm1(g * math.log(a)) / (1.0 - a)


def expected_accepted(parents: Sequence[int], acc: Sequence[float]) -> float:
    """Expected accepted draft tokens of a tree under the positional acceptance model.

    Parameters
    ----------
    parents : Sequence[int]
        The tree (SPEC §2).
    acc : Sequence[float]
        ``(p_1, ..., p_K)`` (module docstring); children of rank ``> K`` count 0.

    Returns
    -------
    float
        ``sum over draft nodes i of prod_{j on the path to i} p_rank(j)``.
    """
    par = _tree.validate(parents)
    p = _check_acc(acc)
    ranks = _tree.sibling_rank(par)
    val = [1.0] * len(par)
    total = 0.0
    for i in range(1, len(par)):
        r = ranks[i]
        val[i] = val[par[i]] * (float(p[r]) if r < p.size else 0.0)
        total += val[i]
    return total


def _count_record(record: StepRecord, hits: np.ndarray, trials: np.ndarray) -> None:
    """Add one record's rank statistics to ``hits`` / ``trials`` (in place, and only
    once the whole record is checked: a bad record changes nothing)."""
    if not (hasattr(record, "parents") and hasattr(record, "path")):
        raise ValueError(f"record = {record!r}: must be a StepRecord (parents and path)")
    par = _tree.validate(record.parents)
    path = int_array("record.path", record.path).tolist()
    n, kmax = len(par), hits.size
    if not path or path[0] != 0:
        raise ValueError(f"record.path = {path!r}: must start at the root 0")
    nchild = [0] * n
    rank = [0] * n
    for i in range(1, n):
        rank[i] = nchild[par[i]]
        nchild[par[i]] += 1
    for t, a in enumerate(path):
        if not 0 <= a < n:
            raise ValueError(f"record.path = {path!r}: node {a} is not in the {n}-node tree")
        if t > 0 and par[a] != path[t - 1]:
            raise ValueError(
                f"record.path = {path!r}: node {a} is not a child of node {path[t - 1]}"
            )
    for t, a in enumerate(path):
        if t > 0 and rank[a] < kmax:
            hits[rank[a]] += 1
        trials[: min(nchild[a], kmax)] += 1


def estimate_acceptance(records: Iterable[StepRecord], max_children: int) -> np.ndarray:
    """Estimate the positional acceptance vector from finished steps.

    For every node ``a`` on a record's accepted path (``record.path``) with
    ``k_a`` children in ``record.parents``, each rank ``b <= k_a`` is one trial;
    it is a hit if the next path node is ``a``'s ``b``-th child. ``p_b`` is
    hits / trials. A rank never offered (0 trials) gets 0: nothing is known
    about it (:class:`AdaptiveSequoia` adds a prior instead). The ratios have
    different denominators, so on finite or mixed data their sum may exceed 1;
    callers feeding :func:`sequoia_tree` must renormalise.

    Parameters
    ----------
    records : Iterable[StepRecord]
        The steps (only ``parents`` and ``path`` are read).
    max_children : int
        Length of the returned vector, ``1 .. MAX_RANKS`` (1,023); ranks beyond
        it are ignored.

    Returns
    -------
    np.ndarray
        ``float64``, shape ``(max_children,)``.
    """
    k = integer("max_children", max_children, 1, MAX_RANKS)
    hits = np.zeros(k, dtype=np.int64)
    trials = np.zeros(k, dtype=np.int64)
    if isinstance(records, str | bytes) or not hasattr(records, "__iter__"):
        raise ValueError(f"records = {records!r}: must be an iterable of StepRecords")
    for rec in records:
        _count_record(rec, hits, trials)
    out = np.zeros(k, dtype=np.float64)
    np.divide(hits, trials, out=out, where=trials > 0)
    return out


# --------------------------------------------------------------------------- Sequoia DP


def _solve(p: np.ndarray, budget: int, levels: int) -> tuple[np.ndarray, float]:
    """Sequoia DP tables: choices[l, b, m] and the optimal forest value.

    ``G_l,b[m]``: the best value of a forest of subtrees hanging at sibling
    ranks ``b, b+1, ...`` (contiguous from ``b``) below a node that is reached
    with probability 1, using at most ``m`` nodes, each subtree at most ``l``
    levels deep. ``T_l[s] = 1 + G_{l-1},1[s - 1]`` is a subtree of at most ``s``
    nodes and ``l`` levels. ``G_l,b[m] = max(0, max_{s=1..m} p_b T_l[s] +
    G_l,b+1[m - s])``; ``choices[l, b, m]`` is the chosen ``s`` (0: stop, no
    child of rank ``b``). The inner max over ``s`` is one numpy max-plus
    convolution over all ``m`` at once.
    """
    K = p.size
    M = budget
    choices = np.zeros((levels + 1, K + 1, M + 1), dtype=np.int32)
    rows = np.arange(M + 1)
    T = np.ones(M + 1)  # T_1: a lone node (T[0] is never read: s >= 1)
    G = np.zeros(M + 1)
    neg = np.full(M, -np.inf)
    for lv in range(1, levels + 1):
        Ts = T[1:]  # T_l[s], s = 1..M
        G = np.zeros(M + 1)  # G_l,K+1 = 0
        for b in range(K, 0, -1):
            # B[m, s-1] = G[m - s] (or -inf for s > m): a sliding window over
            # f = reversed([-inf]*M + G), rows M+1 .. 1 of the window view.
            f = np.concatenate((neg, G))[::-1]
            B = sliding_window_view(f, M)[M + 1 : 0 : -1]
            A = p[b - 1] * Ts + B
            s = np.argmax(A, axis=1)
            best = A[rows, s]
            take = best > 0.0  # equal value: the smaller option (stop, or smaller s)
            choices[lv, b] = np.where(take, s + 1, 0)
            G = np.where(take, best, 0.0)
        T = np.empty(M + 1)
        T[0] = 0.0
        T[1:] = 1.0 + G[:-1]
    return choices, float(G[M])


def sequoia_tree(acc: Sequence[float], n_nodes: int, max_depth: int) -> tuple[list[int], float]:
    """The Sequoia tree: the tree of highest expected accepted draft tokens.

    Solves the dynamic program of Chen et al. 2024 (Sequoia, §3.1) under the
    positional acceptance model (module docstring). The budget is **at most**
    ``n_nodes``: the DP maximises over all trees of ``<= n_nodes`` nodes and, of
    alternatives of exactly equal value, takes the smaller, so a node that adds
    nothing (e.g. below or after ranks with ``p_b = 0``, or past the depth
    limit) is never used. With every ``p_b > 0`` each extra node adds value, so
    the tree has exactly ``n_nodes`` nodes unless the depth limit and ``K``
    allow fewer (or the gain of a node is below float64 resolution).

    Parameters
    ----------
    acc : Sequence[float]
        ``(p_1, ..., p_K)``, entries in ``[0, 1]``, ``sum <= 1``.
    n_nodes : int
        Node budget, root included, ``1 .. N_NODES`` (1,024).
    max_depth : int
        Largest depth of a draft node (the root has depth 0), ``>= 1``.

    Returns
    -------
    parents : list[int]
        The tree, numbered breadth first, siblings by rank (rank 1 first).
    expected : float
        Its expected number of accepted draft tokens (equal, up to rounding, to
        :func:`expected_accepted` of ``parents``).
    """
    p = _check_acc(acc)
    n = integer("n_nodes", n_nodes, 1, _tree.MAX_NODES)
    depth = integer("max_depth", max_depth, 1)
    nz = np.flatnonzero(p > 0.0)
    budget = n - 1
    K = min(int(nz[-1]) + 1 if nz.size else 0, budget)  # trailing zero ranks add nothing
    levels = min(depth, budget)  # a path of budget draft nodes is the deepest possible
    if K == 0 or budget == 0:
        return [-1], 0.0
    choices, value = _solve(p[:K], budget, levels)
    return tree_from_choices(choices, K, levels, budget), value


def tree_from_choices(choices: np.ndarray, ranks: int, levels: int, budget: int) -> list[int]:
    """The tree a Sequoia DP's choice table gives for a forest budget.

    Breadth first from the root with ``rem = budget`` draft nodes and
    ``levels`` levels: for ranks ``b = 1, 2, ...`` while levels, ranks and
    nodes remain, ``s = choices[lv, b, rem]``; 0 ends the node's children,
    otherwise a child of rank ``b`` is queued with ``s - 1`` nodes and one
    level less, and ``rem`` drops by ``s``. Used by :func:`sequoia_tree` and
    the fixed-point DP (:class:`golden.optimiser.Solution`).

    Returns
    -------
    list[int]
        The parent list, numbered breadth first, siblings by rank.
    """
    parents = [-1]
    queue = deque([(0, budget, levels)])  # node, forest budget, levels below it
    while queue:
        node, rem, lv = queue.popleft()
        b = 1
        while lv > 0 and b <= ranks and rem > 0:
            s = int(choices[lv, b, rem])
            if s == 0:
                break
            queue.append((len(parents), s - 1, lv - 1))
            parents.append(node)
            rem -= s
            b += 1
    return parents


class SequoiaTree(StaticTree):
    """Static policy: the Sequoia tree for a fixed acceptance vector.

    Parameters
    ----------
    acc, n_nodes, max_depth
        As for :func:`sequoia_tree`.

    Attributes
    ----------
    acc : np.ndarray
        The acceptance vector.
    expected : float
        Expected accepted draft tokens of the tree.
    """

    def __init__(self, acc: Sequence[float], n_nodes: int, max_depth: int) -> None:
        parents, self.expected = sequoia_tree(acc, n_nodes, max_depth)
        self.acc = _check_acc(acc)
        self.n_nodes = operator.index(n_nodes)  # checked by sequoia_tree
        self.max_depth = operator.index(max_depth)
        super().__init__(parents)

    def __repr__(self) -> str:
        return f"SequoiaTree({self.acc.tolist()!r}, {self.n_nodes}, {self.max_depth})"


def check_prior(
    initial_acc: Sequence[float], max_children: int, prior_weight: float
) -> tuple[float, np.ndarray]:
    """Validate a topology optimiser's prior: ``(prior_weight, prior)``, where
    ``prior`` is ``initial_acc`` padded with zeros to ``max_children`` entries
    (``1 .. MAX_RANKS``)."""
    max_children = integer("max_children", max_children, 1, MAX_RANKS)
    init = _check_acc(initial_acc, "initial_acc")
    if init.size > max_children:
        raise ValueError(
            f"initial_acc = {init.tolist()!r}: {init.size} entries, more than "
            f"max_children = {max_children}"
        )
    w = real("prior_weight", prior_weight, 0)
    prior = np.zeros(max_children)
    prior[: init.size] = init
    return w, prior


class AdaptiveSequoia(TreePolicy):
    """Sequoia tree re-solved from observed acceptances (the topology optimiser).

    Every finished step is fed to :meth:`observe`, which accumulates the rank
    statistics of :func:`estimate_acceptance` (hardware: two counters per
    rank). Every ``update_every`` observations the acceptance vector is
    re-estimated with a prior of ``prior_weight`` pseudo-trials per rank at
    ``initial_acc`` (zero-padded to ``max_children``)::

        p_b = (hits_b + prior_weight * prior_b) / (trials_b + prior_weight)

    so a rank seen rarely or never keeps its prior instead of collapsing to 0
    (which would remove it from every later tree and so from the statistics).
    If the estimate sums to more than 1 (possible, see
    :func:`estimate_acceptance`) it is scaled to sum 1. Then the DP is re-solved.

    Parameters
    ----------
    n_nodes : int
        Node budget, root included, ``1 .. N_NODES`` (1,024).
    max_depth : int
        Largest draft-node depth, ``>= 1``.
    initial_acc : Sequence[float]
        Acceptance vector before any observation, also the prior; at most
        ``max_children`` entries.
    update_every : int
        Observations between re-solves, ``>= 1`` (default 16).
    max_children : int
        Ranks tracked, ``1 .. MAX_RANKS`` (default 8).
    prior_weight : float
        Pseudo-trials per rank, ``>= 0`` (default 2.0; 0: plain estimate).

    Attributes
    ----------
    acc : np.ndarray
        The acceptance vector of the current tree.
    expected : float
        Expected accepted draft tokens of the current tree under ``acc``.
    n_observed, n_solves : int
        Steps observed; DP solutions computed (the initial one included).
    hits, trials : np.ndarray
        The accumulated rank statistics.
    """

    def __init__(
        self,
        n_nodes: int,
        max_depth: int,
        initial_acc: Sequence[float],
        *,
        update_every: int = 16,
        max_children: int = 8,
        prior_weight: float = 2.0,
    ) -> None:
        self.n_nodes = integer("n_nodes", n_nodes, 1, _tree.MAX_NODES)
        self.max_depth = integer("max_depth", max_depth, 1)
        self.update_every = integer("update_every", update_every, 1)
        self.max_children = integer("max_children", max_children, 1, MAX_RANKS)
        self.prior_weight, self.prior = check_prior(initial_acc, self.max_children, prior_weight)
        self.max_nodes = self.n_nodes
        self.hits = np.zeros(self.max_children, dtype=np.int64)
        self.trials = np.zeros(self.max_children, dtype=np.int64)
        self.n_observed = 0
        self.n_solves = 0
        self._resolve(self.prior.copy())

    def _resolve(self, acc: np.ndarray) -> None:
        self._parents, self.expected = sequoia_tree(acc, self.n_nodes, self.max_depth)
        self.acc = acc
        self.n_solves += 1

    def current_estimate(self) -> np.ndarray:
        """The prior-smoothed acceptance vector from the statistics so far.

        Returns
        -------
        np.ndarray
            Shape ``(max_children,)``, entries in ``[0, 1]``, sum ``<= 1``.
        """
        num = self.hits + self.prior_weight * self.prior
        den = self.trials + self.prior_weight
        est = np.zeros(self.max_children)
        np.divide(num, den, out=est, where=den > 0)
        s = float(est.sum())
        if s > 1.0:
            est /= s
        return np.clip(est, 0.0, 1.0)

    def parents(self) -> list[int]:
        return list(self._parents)

    def observe(self, record: StepRecord) -> None:
        """Add a finished step's rank statistics (``ValueError`` naming a bad
        ``record``, which changes nothing); re-solve every ``update_every``."""
        _count_record(record, self.hits, self.trials)
        self.n_observed += 1
        if self.n_observed % self.update_every == 0:
            self._resolve(self.current_estimate())
