"""The tree builder's fixed-point twins against the float policies they approximate.

- The fixed DP (spec §3.11): its tree's float expected accepted tokens are
  within 0.5% of :func:`golden.trees.sequoia_tree`'s optimum on at least 99%
  of random acceptance vectors (budgets 4..256, depths 2..12).
- The fixed EAGLE-2 builder (spec §3.9) on real n-gram draft distributions:
  on at least 99% of contexts it builds the tree EAGLE-2 builds on the
  quantised distributions with exact products, so any difference from
  :class:`golden.eagle.Eagle2Tree`'s float tree comes from two choices within
  quantisation's one LSB of ``q`` (decision 0039). How often the float tree
  itself is built is printed.
- The static builder (spec §3.8) against the float ``topk`` children rule.
- The estimates (spec §3.10) against :class:`golden.trees.AdaptiveSequoia`'s.

Trees are compared as sets of token paths (numbering differs by design).
Seeds are printed; ``-s`` shows the measured fractions.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from golden import optimiser as O
from golden.builder import FixedStaticTree
from golden.draft import context_tail, draw_tree
from golden.dynamic import build_dynamic, check_dynamic, expand_and_rerank
from golden.eagle import Eagle2Tree
from golden.models import code_prompts, default_ngram_pair
from golden.sampler import quantize
from golden.topk import topk
from golden.trees import AdaptiveSequoia, expected_accepted, sequoia_tree

SEED = 20261128
PROMPTS = 150


def paths(parents, tokens) -> frozenset:
    p: list[tuple] = [()] * len(parents)
    for i in range(1, len(parents)):
        p[i] = p[parents[i]] + (int(tokens[i]),)
    return frozenset(p[1:])


@pytest.fixture(scope="module")
def ngram():
    target, draft = default_ngram_pair()
    return draft, code_prompts(PROMPTS, 64, SEED % 1000)


def test_dp_within_half_a_percent_of_the_float_optimum() -> None:
    rng = np.random.default_rng(SEED)
    print(f"seed {SEED}")
    n, bad, worst = 400, 0, 0.0
    for _ in range(n):
        k = int(rng.integers(1, 9))
        acc = rng.dirichlet(np.ones(k + 1))[:k] * rng.uniform(0.2, 1.0)
        M, D = int(rng.integers(4, 257)), int(rng.integers(2, 13))
        p = O.normalised([int(x) for x in np.floor(acc * 65536 + 0.5)], 16)
        tree = O.solve(p, M, D).tree(M)
        got = expected_accepted(tree, acc)
        _, best = sequoia_tree(acc, M, D)
        rel = (best - got) / best
        worst = max(worst, rel)
        bad += rel > 0.005
    print(f"fixed DP: {n - bad}/{n} within 0.5% of the float optimum, worst {worst:.2e}")
    assert bad <= n // 100


@pytest.mark.parametrize("M,D,K,W", [(16, 4, 4, 4), (64, 6, 4, 4), (64, 8, 8, 8), (256, 10, 8, 8)])
def test_eagle2_twin_on_ngram_distributions(ngram, M, D, K, W) -> None:
    draft, prompts = ngram
    exact = same_float = 0
    for pr in prompts:
        tail = context_tail(draft, pr)

        def dist(ps, tail=tail):
            return [quantize(r, 16) for r in draft.probs([tail + p for p in ps])]

        fixed = build_dynamic(dist, M, D, K, W)
        ref = expand_and_rerank(
            dist,
            check_dynamic(M, D, K, W),
            prob_bits=16,
            root=Fraction(1),
            child=lambda c, q: c * Fraction(q, 1 << 16),
        )
        fl = Eagle2Tree(M, D, K).build(draft, list(pr), "topk", None)
        got = paths(fixed.parents, fixed.tokens)
        exact += got == paths(ref.parents, ref.tokens)
        same_float += got == paths(fl.parents, fl.tokens)
    n = len(prompts)
    print(f"M={M} D={D} K={K}: exact-quantised {exact}/{n}, float tree {same_float}/{n}")
    assert exact >= 0.99 * n


def first_divergence_is_a_tie(draft, prompt, shape, fixed, fl, k) -> bool:
    """At the first shape node whose token differs (in node order), the two
    parents' top-K lists have the same quantised ``q`` values in order (zeros
    dropped): the choice was between tokens quantisation makes equal."""
    fixed_tok = dict(zip(fixed.source, fixed.tokens, strict=True))
    for i in range(1, len(shape)):
        if fixed_tok.get(i) == int(fl.tokens[i]):
            continue
        path, a = [], shape[i]
        while a:
            path.append(int(fl.tokens[a]))
            a = shape[a]
        q = draft.probs([context_tail(draft, prompt) + path[::-1]])[0]
        qz = quantize(q, 16)
        top_fl = [int(qz[t]) for t in np.argsort(-q, kind="stable")[:k]]
        top_fx = [e.q for e in topk(qz, k)]
        return [v for v in top_fl if v] == top_fx
    return True


def test_static_twin_against_the_float_topk_rule(ngram) -> None:
    draft, prompts = ngram
    shape = [-1, 0, 0, 0, 1, 1, 2, 4, 4, 7]
    same = tie = 0
    for i, pr in enumerate(prompts):
        pol = FixedStaticTree(shape, 3)
        fixed = pol.build(draft, list(pr), "topk", None)
        fl = draw_tree(shape, draft, list(pr), "topk", np.random.default_rng(i))
        if paths(fixed.parents, fixed.tokens) == paths(fl.parents, fl.tokens):
            same += 1
        else:
            tie += first_divergence_is_a_tie(draft, list(pr), shape, pol.last, fl, 3)
    n = len(prompts)
    print(f"static: float tree {same}/{n}, a quantisation tie at the divergence {tie}/{n}")
    assert same + tie >= 0.99 * n


def test_estimates_track_adaptive_sequoia() -> None:
    """Within 2 LSB of AdaptiveSequoia's float estimate (floor, then scaling)."""
    rng = np.random.default_rng(SEED + 1)
    for _ in range(500):
        R = int(rng.integers(1, 9))
        trials = rng.integers(0, 200, R)
        hits = np.minimum(trials, rng.integers(0, 200, R))
        prior = rng.dirichlet(np.ones(R + 1))[:R]
        pol = AdaptiveSequoia(8, 3, prior.tolist(), max_children=R, prior_weight=2.0)
        pol.hits[:], pol.trials[:] = hits, trials
        fl = pol.current_estimate()
        pq = O.normalised([int(x) for x in np.floor(prior * 65536 + 0.5)], 16)
        fx = np.array(O.smoothed(hits.tolist(), trials.tolist(), pq, 2, 16)) / 65536
        assert np.abs(fx - fl).max() <= 2 / 65536
