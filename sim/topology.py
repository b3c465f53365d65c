"""The topology optimiser and the speculation fallback of the chip's tree builder.

The architecture article's tree builder re-shapes the draft tree from what it
observes: every ``K`` steps it re-estimates the per-child (positional)
acceptance vector (:mod:`golden.trees`, "Positional acceptance model") from the
recent steps and re-solves the Sequoia dynamic program for the tree shape.
:class:`TopologyOptimiser` does that *hardware-aware*: it solves the DP for
every node budget in ``budgets`` and keeps the tree with the highest projected
tokens per second on the chip's own timing (:func:`sim.timing.step_time` on the
profile), not simply the largest tree. Plain decoding (the root alone) is one
of the candidates: when the measured acceptance makes speculation slower than
plain decoding on this chip, the tree shrinks to the root (**fallback**).

Statistics
    A sliding window of the last ``window`` steps that tested at least one
    child (per sibling rank: trials and hits, as
    :func:`golden.trees.estimate_acceptance` counts them). The DP's acceptance
    vector is the window's estimate smoothed towards ``initial_acc`` with
    ``prior_weight`` pseudo-trials per rank (as :class:`golden.trees.AdaptiveSequoia`
    does), so a rank seen rarely keeps its prior; the fallback decision uses
    the raw estimate (no prior: a prior would keep speculating forever on a
    draft that is never right).
Fallback and recovery
    A candidate's projected rate is ``(E + 1) / T``: ``E`` its expected
    accepted draft tokens (:func:`golden.trees.expected_accepted`), ``T`` its
    step time. The best candidate under the smoothed estimate is kept unless
    its rate under the raw estimate does not beat plain decoding, in which case
    the chip decodes plainly. Entering plain decoding clears the window (its
    steps describe a regime that is gone); while plain, the step before every
    re-solve is a *probe*: a chain of ``probe_depth`` draft tokens (cheap on
    this chip: the verifier streams the same weights for 1 or 2 nodes), whose
    outcome alone (the window then holds only the latest probe) decides at the
    re-solve whether acceptance has recovered; speculation resumes from that
    probe's evidence and the prior, and the tree grows back as steps come in.

The optimiser is a :class:`golden.draft.TreePolicy`: its shapes depend only on
the steps it observes, so ``golden.decoder.speculative_generate(tree=
TopologyOptimiser(...))`` reproduces the chip's tokens exactly.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from checks import boolean, int_array
from checks import integer as _int
from golden import tree as _tree
from golden import trees as _trees
from golden.draft import StepRecord, TreePolicy
from sim import timing

__all__ = ["Decision", "TopologyOptimiser", "DEFAULT_BUDGETS", "cost_table", "tree_step_us"]

#: Node budgets (root included) the optimiser tries, capped at its ``n_nodes``.
DEFAULT_BUDGETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


@dataclass(frozen=True)
class Decision:
    """One re-solve of the optimiser.

    Attributes
    ----------
    step : int
        Steps observed when it was made.
    mode : str
        ``"spec"`` or ``"plain"`` (fallback) after the decision.
    n_nodes, depth : int
        The chosen tree (``1, 0`` when plain).
    expected : float
        Its expected accepted draft tokens under the smoothed estimate.
    rate_spec, rate_plain : float
        Projected tokens/s of the best speculative candidate (under the raw
        estimate) and of plain decoding.
    acc, acc_raw : tuple[float, ...]
        Smoothed and raw per-rank acceptance estimates.
    """

    step: int
    mode: str
    n_nodes: int
    depth: int
    expected: float
    rate_spec: float
    rate_plain: float
    acc: tuple[float, ...]
    acc_raw: tuple[float, ...]


@lru_cache(maxsize=4096)
def _sequoia(acc: tuple[float, ...], budget: int, depth: int) -> tuple[tuple[int, ...], float]:
    """:func:`golden.trees.sequoia_tree`, cached (the initial solve repeats every run)."""
    par, e = _trees.sequoia_tree(acc, budget, depth)
    return tuple(par), e


def _rank_counts(record: StepRecord, kmax: int) -> tuple[np.ndarray, np.ndarray]:
    hits = np.zeros(kmax, dtype=np.int64)
    trials = np.zeros(kmax, dtype=np.int64)
    _trees._count_record(record, hits, trials)
    return hits, trials


class TopologyOptimiser(TreePolicy):
    """Sequoia DP re-solved every ``update_every`` steps, hardware-aware, with fallback.

    Parameters
    ----------
    profile : timing.Profile or str
        The timing profile the candidates are ranked on.
    n_nodes : int
        Largest tree, root included (``>= 1``; the chip's ``N_NODES`` or less).
    max_depth : int
        Largest draft-node depth, ``>= 1``.
    initial_acc : sequence of float
        Acceptance vector before any observation, also the prior.
    overlap : str
        Overlap mode of the timing (one of the profile's).
    update_every : int
        ``K``: steps between re-solves, ``>= 1``.
    window : int
        Steps (that tested a child) in the statistics window, ``>= 1``.
    prior_weight : float
        Pseudo-trials per rank at ``initial_acc``, ``>= 0``.
    max_children : int
        Ranks tracked, ``>= 1``.
    context_len : int or None
        Context of the timing (default: the profile's stated workload).
    budgets : sequence of int or None
        Node budgets tried (default :data:`DEFAULT_BUDGETS` up to ``n_nodes``).
    fallback : bool
        Allow plain decoding (``False``: plain decoding is never chosen).
    probe_depth : int
        Draft tokens of a probe chain while plain, ``>= 1``.

    Attributes
    ----------
    history : list[Decision]
        Every re-solve, the initial solve first.
    mode : str
        ``"spec"`` or ``"plain"``.
    n_observed : int
        Steps observed.
    """

    def __init__(
        self,
        profile: timing.Profile | str,
        n_nodes: int,
        max_depth: int,
        initial_acc: Sequence[float],
        *,
        overlap: str = "none",
        update_every: int = 16,
        window: int = 32,
        prior_weight: float = 2.0,
        max_children: int = 8,
        context_len: int | None = None,
        budgets: Sequence[int] | None = None,
        fallback: bool = True,
        probe_depth: int = 1,
    ) -> None:
        self.profile = timing.load_profile(profile) if isinstance(profile, str) else profile
        if not isinstance(self.profile, timing.Profile):
            raise ValueError(f"profile = {profile!r}: must be a Profile or a profile name")
        if not isinstance(overlap, str) or overlap not in self.profile.overlap_modes:
            raise ValueError(
                f"overlap = {overlap!r}: profile {self.profile.name} supports "
                f"{', '.join(self.profile.overlap_modes)}"
            )
        self.overlap = overlap
        self.n_nodes = _int("n_nodes", n_nodes, 1)
        self.max_depth = _int("max_depth", max_depth, 1)
        self.update_every = _int("update_every", update_every, 1)
        self.window = _int("window", window, 1)
        self.max_children = _int("max_children", max_children, 1)
        self.probe_depth = _int("probe_depth", probe_depth, 1)
        if self.probe_depth + 1 > self.n_nodes and self.n_nodes > 1:
            raise ValueError(
                f"probe_depth = {probe_depth!r}: a probe of {self.probe_depth + 1} nodes "
                f"does not fit n_nodes = {self.n_nodes}"
            )
        self.prior_weight, self.prior = _trees.check_prior(
            initial_acc, self.max_children, prior_weight
        )
        ctx = self.profile.workload.context_len if context_len is None else context_len
        self.context_len = _int("context_len", ctx, 0)
        if budgets is None:
            budgets = [b for b in DEFAULT_BUDGETS if b <= self.n_nodes]
            if self.n_nodes not in budgets:
                budgets.append(self.n_nodes)
        bl = sorted(set(int_array("budgets", budgets, 1).tolist()))
        if not bl or bl[-1] > self.n_nodes:
            raise ValueError(f"budgets = {list(budgets)!r}: must be in 1 .. n_nodes = {n_nodes}")
        self.budgets = tuple(bl)
        self.fallback = boolean("fallback", fallback)  # "no" is truthy
        self.max_nodes = self.n_nodes
        self.n_observed = 0
        self.mode = "spec"
        self.history: list[Decision] = []
        self._win: deque[tuple[np.ndarray, np.ndarray]] = deque()
        self._hits = np.zeros(self.max_children, dtype=np.int64)
        self._trials = np.zeros(self.max_children, dtype=np.int64)
        self._time_cache: dict[tuple[int, int, int, int], float] = {}
        self._parents: list[int] = [-1]
        self._resolve(initial=True)

    def __repr__(self) -> str:
        return (
            f"TopologyOptimiser({self.profile.name!r}, {self.n_nodes}, {self.max_depth}, "
            f"{self.prior.tolist()!r}, overlap={self.overlap!r}, "
            f"update_every={self.update_every})"
        )

    # ------------------------------------------------------------------ estimates
    def raw_estimate(self) -> np.ndarray:
        """Hits / trials per rank over the window (0 where a rank had no trial)."""
        est = np.zeros(self.max_children)
        np.divide(self._hits, self._trials, out=est, where=self._trials > 0)
        return est

    def current_estimate(self) -> np.ndarray:
        """The window's estimate smoothed towards the prior (the DP's vector)."""
        num = self._hits + self.prior_weight * self.prior
        den = self._trials + self.prior_weight
        est = np.zeros(self.max_children)
        np.divide(num, den, out=est, where=den > 0)
        return _normalised(est)

    # ------------------------------------------------------------------ timing
    def step_us(self, parents: Sequence[int], expected: float) -> float:
        """Projected step time (us) of a tree on the profile (cached per shape class)."""
        key = _shape_class(parents, expected)
        t = self._time_cache.get(key)
        if t is None:
            t = self._time_cache[key] = tree_step_us(
                self.profile, parents, expected, self.context_len, self.overlap
            )
        return t

    def _resolve(self, initial: bool = False) -> None:
        est = self.current_estimate()
        raw = _normalised(self.raw_estimate())
        plain_rate = 1e6 / self.step_us([-1], 0.0)
        best: tuple[float, list[int], float] | None = None
        for b in self.budgets:
            if b < 2:
                continue
            par, e = _sequoia(tuple(est.tolist()), b, self.max_depth)
            par = list(par)
            if len(par) < 2:
                continue
            rate = (e + 1.0) * 1e6 / self.step_us(par, e)
            if best is None or rate > best[0]:
                best = (rate, par, e)
        mode, par, e, rate_raw = "plain", [-1], 0.0, 0.0
        if best is not None:
            _, par, e = best
            e_raw = _trees.expected_accepted(par, raw)
            rate_raw = (e_raw + 1.0) * 1e6 / self.step_us(par, e_raw)
            if not self.fallback or initial:
                speculate = True
            elif not self._trials[0]:  # no evidence since the last change: keep the mode
                speculate = self.mode == "spec"
            else:
                speculate = rate_raw > plain_rate and best[0] > plain_rate
            if speculate:
                mode = "spec"
            else:
                par, e = [-1], 0.0
        if mode == "plain" and self.mode != "plain":
            self._win.clear()  # the window describes a regime that is gone
            self._hits[:] = 0
            self._trials[:] = 0
        self.mode = mode
        self._parents = list(par)
        self.history.append(
            Decision(
                self.n_observed,
                mode,
                len(par),
                max(_tree.depths(par)),
                float(e),
                float(rate_raw),
                float(plain_rate),
                tuple(float(x) for x in est),
                tuple(float(x) for x in raw),
            )
        )

    # ------------------------------------------------------------------ TreePolicy
    def is_probe_step(self) -> bool:
        """True if the next step is a probe (plain mode, the step before a re-solve)."""
        return (
            self.mode == "plain"
            and self.n_nodes > 1
            and (self.n_observed + 1) % self.update_every == 0
        )

    def parents(self) -> list[int]:
        if self.is_probe_step():
            return _trees.chain(self.probe_depth)
        return list(self._parents)

    def observe(self, record: StepRecord) -> None:
        hits, trials = _rank_counts(record, self.max_children)
        if self.mode == "plain" and trials.any():  # a probe: only the latest one counts
            self._win.clear()
            self._hits[:] = 0
            self._trials[:] = 0
        if trials.any():
            self._win.append((hits, trials))
            self._hits += hits
            self._trials += trials
            if len(self._win) > self.window:
                h, t = self._win.popleft()
                self._hits -= h
                self._trials -= t
        self.n_observed += 1
        if self.n_observed % self.update_every == 0:
            self._resolve()


def _shape_class(parents: Sequence[int], expected: float) -> tuple[int, int, int, int]:
    """What a tree's step time depends on: nodes, depth, draft evaluations,
    accepted tokens (``round(expected)``, at most the depth)."""
    depth = max(_tree.depths(parents))
    return (
        len(parents),
        depth,
        timing.draft_evals_of(parents),
        min(depth, int(round(expected))),
    )


def tree_step_us(
    profile: timing.Profile,
    parents: Sequence[int],
    expected: float,
    context_len: int,
    overlap: str,
) -> float:
    """Projected step time (us) of a tree on ``profile`` with ``expected``
    accepted draft tokens (:func:`sim.timing.step_time`)."""
    n, depth, evals, acc = _shape_class(parents, expected)
    return timing.step_time(
        profile,
        tree_nodes=n,
        tree_depth=depth,
        accepted=acc,
        context_len=context_len,
        overlap=overlap,
        draft_evals=evals,
    ).total_us


def cost_table(
    profile: timing.Profile,
    n_nodes: int,
    max_depth: int,
    initial_acc: Sequence[float],
    *,
    context_len: int,
    overlap: str,
) -> tuple[list[int], list[int], int]:
    """The fixed topology optimiser's cost table (spec §3.11), as software loads it.

    For every budget of :data:`DEFAULT_BUDGETS` from 2 up to ``n_nodes`` (and
    ``n_nodes``): the step time, in nanoseconds, of that budget's Sequoia
    tree under ``initial_acc``; and the step time of plain decoding.

    Returns
    -------
    budgets, costs : list[int]
        Increasing budgets and their costs (``>= 1`` ns).
    cost_plain : int
        Plain decoding's cost (ns).
    """
    n = _int("n_nodes", n_nodes, 2)
    budgets = [b for b in DEFAULT_BUDGETS if 2 <= b < n] + [n]
    acc = tuple(float(x) for x in initial_acc)

    def ns(par: Sequence[int], e: float) -> int:
        return max(1, int(round(1e3 * tree_step_us(profile, par, e, context_len, overlap))))

    costs = [ns(*_sequoia(acc, b, max_depth)) for b in budgets]
    return budgets, costs, ns([-1], 0.0)


def _normalised(est: np.ndarray) -> np.ndarray:
    est = np.clip(est, 0.0, 1.0)
    s = float(est.sum())
    if s > 1.0:
        est = est / s
    return est
