"""The topology optimiser in fixed point: statistics, the Sequoia DP and the budget choice.

The golden twin of spec §3.10 and §3.11, pure integer arithmetic:

- :class:`RankStats` (§3.10): per-rank trials and hits over a window of steps;
  :func:`smoothed`, :func:`raw` and :func:`normalised`, the estimates.
- :func:`solve` (§3.11): Sequoia's DP in fixed point, solved once for the
  largest budget; :class:`Solution` gives every smaller budget's value and
  tree from the same tables.
- :func:`tree_value` (``E_raw``), :func:`choose_budget` and :func:`speculate`:
  the hardware-aware choice and the fallback to plain decoding.

:class:`golden.fixed_policy.FixedTopologyOptimiser` puts them together as a
tree policy. The float policies they approximate are
:func:`golden.trees.sequoia_tree`, :class:`golden.trees.AdaptiveSequoia` and
:class:`sim.topology.TopologyOptimiser`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from checks import int_array, integer
from golden import tree as _tree
from golden.draft import StepRecord
from golden.trees import _count_record as count_record
from golden.trees import tree_from_choices

__all__ = [
    "R_MAX",
    "NB_MAX",
    "check_acc_bits",
    "check_prior",
    "step_counts",
    "RankStats",
    "smoothed",
    "raw",
    "normalised",
    "Solution",
    "solve",
    "tree_value",
    "choose_budget",
    "speculate",
]

#: most sibling ranks counted (spec §3.10)
R_MAX = 16
#: most budgets in the cost table (spec §3.11)
NB_MAX = 16
#: largest cost (spec §3.11)
COST_MAX = (1 << 32) - 1
#: most steps in the statistics window (spec §3.10)
WIN_MAX = 64
#: largest prior weight (spec §3.10)
PW_MAX = 255


def check_acc_bits(acc_bits: int) -> int:
    """``ACC_BITS`` (``A``), ``8 .. 24``."""
    return integer("acc_bits", acc_bits, 8, 24)


def check_prior(prior: Sequence[int], ranks: int, acc_bits: int) -> np.ndarray:
    """A fixed-point prior: ``ranks`` entries in ``0 .. 2**A``, sum at most ``2**A``.

    Raises
    ------
    ValueError
        ``prior[<b>]`` out of range, a wrong length, or the sum above ``2**A``.
    """
    one = 1 << acc_bits
    a = int_array("prior", prior, 0, one, length=ranks)
    if int(a.sum()) > one:
        raise ValueError(
            f"prior = {a.tolist()!r}: sums to {int(a.sum())}, more than 2**acc_bits = {one}"
        )
    return a


def step_counts(parents: Sequence[int], path: Sequence[int], ranks: int) -> tuple[list, list]:
    """One step's ``(hits, trials)`` per rank (spec §3.10): the counts of
    :func:`golden.trees.estimate_acceptance`, by its own counter.

    Parameters
    ----------
    parents : sequence of int
        The step's tree (§2).
    path : sequence of int
        The accepted path, root (0) to ``last``.
    ranks : int
        ``R``, ``1 .. 16``.

    Raises
    ------
    ValueError
        A bad tree, or a path that does not start at the root or leaves the
        tree's edges (naming ``record.path``).
    """
    R = integer("ranks", ranks, 1, R_MAX)
    hits = np.zeros(R, dtype=np.int64)
    trials = np.zeros(R, dtype=np.int64)
    count_record(StepRecord(list(parents), [], 0, list(path), 0, []), hits, trials)
    return hits.tolist(), trials.tolist()


class RankStats:
    """Per-rank trials and hits over the last ``window`` steps with a trial (§3.10).

    Parameters
    ----------
    ranks : int
        ``R``, ``1 .. 16``.
    window : int
        ``WIN``, ``1 .. 64``.
    """

    def __init__(self, ranks: int, window: int) -> None:
        self.ranks = integer("ranks", ranks, 1, R_MAX)
        self.window = integer("window", window, 1, WIN_MAX)
        self.hits = [0] * self.ranks
        self.trials = [0] * self.ranks
        self._steps: deque[tuple[list, list]] = deque()

    def clear(self) -> None:
        """Empty the window."""
        self._steps.clear()
        self.hits = [0] * self.ranks
        self.trials = [0] * self.ranks

    def add(self, hits: Sequence[int], trials: Sequence[int]) -> bool:
        """Add one step's counts (:func:`step_counts`); a step without a trial
        is not kept. Returns whether it was kept."""
        if not any(trials):
            return False
        self._steps.append((list(hits), list(trials)))
        self.hits = [a + b for a, b in zip(self.hits, hits, strict=True)]
        self.trials = [a + b for a, b in zip(self.trials, trials, strict=True)]
        if len(self._steps) > self.window:
            h, t = self._steps.popleft()
            self.hits = [a - b for a, b in zip(self.hits, h, strict=True)]
            self.trials = [a - b for a, b in zip(self.trials, t, strict=True)]
        return True


def normalised(x: Sequence[int], acc_bits: int) -> list[int]:
    """``x`` scaled to sum at most ``2**A``: ``(x_b << A) // S`` if ``S > 2**A`` (§3.10)."""
    s = sum(x)
    one = 1 << acc_bits
    return [(v << acc_bits) // s for v in x] if s > one else list(x)


def smoothed(
    hits: Sequence[int], trials: Sequence[int], prior: Sequence[int], pw: int, acc_bits: int
) -> list[int]:
    """The normalised smoothed estimate (§3.10):
    ``((hits << A) + PW * prior) // (trials + PW)``, 0 where the divisor is 0."""
    pw = integer("prior_weight", pw, 0, PW_MAX)
    out = []
    for h, t, p in zip(hits, trials, prior, strict=True):
        d = t + pw
        out.append(((h << acc_bits) + pw * int(p)) // d if d else 0)
    return normalised(out, acc_bits)


def raw(hits: Sequence[int], trials: Sequence[int], acc_bits: int) -> list[int]:
    """The normalised raw estimate (§3.10): ``(hits << A) // trials``, 0 where ``trials = 0``."""
    return normalised(
        [(h << acc_bits) // t if t else 0 for h, t in zip(hits, trials, strict=True)], acc_bits
    )


@dataclass(frozen=True)
class Solution:
    """The DP's tables for the largest budget (spec §3.11).

    Members
    -------
    values : np.ndarray
        ``values[m]`` = ``E(m)``, the best value of a tree of at most ``m``
        nodes (``m = 0 .. M``; 0 for ``m <= 1``), ``A``-bit fixed point.
    choice : np.ndarray
        ``choice[l, b, m]`` (``l = 1 .. L``, ``b = 1 .. K``, ``m = 0 .. M - 1``);
        shape ``(L + 1, K + 2, M)``.
    levels, ranks : int
        ``L`` and ``K``.
    """

    values: np.ndarray
    choice: np.ndarray
    levels: int
    ranks: int

    def tree(self, m: int) -> list[int]:
        """Budget ``m``'s tree (``1 .. M`` nodes, root included), breadth first."""
        m = integer("m", m, 1, self.values.size - 1)
        return tree_from_choices(self.choice, self.ranks, self.levels, m - 1)


def solve(p: Sequence[int], n_nodes: int, max_depth: int, acc_bits: int = 16) -> Solution:
    """Sequoia's DP in fixed point (spec §3.11), for every budget up to ``n_nodes``.

    Parameters
    ----------
    p : sequence of int
        ``p_1 .. p_R``: the normalised smoothed estimate, ``A``-bit, each
        ``0 .. 2**A``, sum at most ``2**A``; ``R`` in ``1 .. 16``.
    n_nodes : int
        ``M``, the largest budget (root included), ``2 .. N_NODES``.
    max_depth : int
        ``D``, ``1 .. N_NODES - 1``.
    acc_bits : int
        ``A``.

    Raises
    ------
    ValueError
        Naming ``p`` (an entry, its length or its sum), ``n_nodes``,
        ``max_depth`` or ``acc_bits``.
    """
    A = check_acc_bits(acc_bits)
    one = 1 << A
    pv = int_array("p", p, 0, one)
    if not 1 <= pv.size <= R_MAX:
        raise ValueError(f"p has {pv.size} entries: must be 1 .. {R_MAX} ranks")
    if int(pv.sum()) > one:
        raise ValueError(f"p = {pv.tolist()!r}: sums to {int(pv.sum())}, more than {one}")
    M = integer("n_nodes", n_nodes, 2, _tree.MAX_NODES)
    D = integer("max_depth", max_depth, 1, _tree.MAX_NODES - 1)
    B = M - 1
    nz = np.flatnonzero(pv > 0)
    K = min(int(nz[-1]) + 1 if nz.size else 0, B)
    L = min(D, B)
    choice = np.zeros((L + 1, K + 2, B + 1), dtype=np.int32)
    values = np.zeros(M + 1, dtype=np.int64)
    if K == 0:
        return Solution(values, choice, L, K)
    rows = np.arange(B + 1)
    neg = np.full(B, -(1 << 62), dtype=np.int64)  # s > m: never the largest
    T = np.full(B + 1, one, dtype=np.int64)  # T_1[s] = ONE (T[0] unused)
    G = np.zeros(B + 1, dtype=np.int64)
    for lv in range(1, L + 1):
        G = np.zeros(B + 1, dtype=np.int64)  # G[K+1]
        for b in range(K, 0, -1):
            # W[m, s-1] = G[m - s] for s <= m, else "minus infinity"
            f = np.concatenate((neg, G))[::-1]
            W = sliding_window_view(f, B)[B + 1 : 0 : -1]
            X = ((int(pv[b - 1]) * T[1:]) >> A)[None, :] + W
            s = np.argmax(X, axis=1)  # the first largest: the smallest s
            best = X[rows, s]
            take = (rows >= 1) & (best > 0)
            choice[lv, b] = np.where(take, s + 1, 0)
            G = np.where(take, best, 0)
        T = np.empty(B + 1, dtype=np.int64)
        T[0] = 0
        T[1:] = one + G[:-1]
    values[2:] = G[1:]
    return Solution(values, choice, L, K)


def tree_value(parents: Sequence[int], r: Sequence[int], acc_bits: int = 16) -> int:
    """A tree's value under an estimate (§3.11's ``E_raw``): ``v_0 = ONE``,
    ``v_i = (v_parent * r_rank(i)) >> A`` (``r`` 0 beyond its length), summed
    over the draft nodes."""
    par = _tree.validate(parents)
    A = check_acc_bits(acc_bits)
    rv = int_array("r", r, 0, 1 << A).tolist()
    ranks = _tree.sibling_rank(par)
    v = [1 << A] + [0] * (len(par) - 1)
    for i in range(1, len(par)):
        v[i] = (v[par[i]] * (rv[ranks[i]] if ranks[i] < len(rv) else 0)) >> A
    return sum(v[1:])


def check_costs(budgets: Sequence[int], costs: Sequence[int], n_nodes: int) -> tuple[list, list]:
    """The cost table (§3.11): ``1 .. 16`` increasing budgets in ``2 .. n_nodes``
    and as many costs in ``1 .. 2**32 - 1``."""
    bl = int_array("budgets", budgets, 2, n_nodes).tolist()
    if not 1 <= len(bl) <= NB_MAX:
        raise ValueError(f"budgets = {bl!r}: must hold 1 .. {NB_MAX} budgets")
    for j in range(1, len(bl)):
        if bl[j] <= bl[j - 1]:
            raise ValueError(f"budgets = {bl!r}: must be increasing (budgets[{j}] = {bl[j]})")
    cl = int_array("costs", costs, 1, COST_MAX, length=len(bl)).tolist()
    return bl, cl


def choose_budget(
    sol: Solution, budgets: Sequence[int], costs: Sequence[int], acc_bits: int = 16
) -> int | None:
    """The best budget's index in ``budgets`` (§3.11), ``None`` if every tree is
    the root alone: ``(E(m) + ONE) / cost`` by cross-multiplication, an equal
    rate keeping the smaller budget."""
    bl, cl = check_costs(budgets, costs, sol.values.size - 1)
    one = 1 << check_acc_bits(acc_bits)
    best = None
    for j, m in enumerate(bl):
        if len(sol.tree(m)) < 2:
            continue
        if (
            best is None
            or (int(sol.values[m]) + one) * cl[best] > (int(sol.values[bl[best]]) + one) * cl[j]
        ):
            best = j
    return best


def speculate(e_best: int, e_raw: int, cost_best: int, cost_plain: int, acc_bits: int) -> bool:
    """§3.11's test: both ``(E + ONE) * cost_0 > ONE * cost_j`` (raw and smoothed ``E``)."""
    one = 1 << acc_bits
    return (e_raw + one) * cost_plain > one * cost_best and (
        e_best + one
    ) * cost_plain > one * cost_best
