"""golden.decoder: greedy equivalence, acceptance statistics, policies, errors."""

from __future__ import annotations

import numpy as np
import pytest

from golden import trees
from golden.decoder import autoregressive_generate, speculative_generate
from golden.models import SyntheticPair, TableModel

PUBLISHED = [(5, 0.926, 4), (10, 0.934, 7), (20, 0.948, 12), (40, 0.962, 20)]


def table_pair(V: int = 6):
    return TableModel.random(V, 1, concentration=0.5), TableModel.random(V, 2, concentration=0.5)


@pytest.mark.parametrize("arith", ["float", "fixed"])
@pytest.mark.parametrize("children", ["iid", "swor", "topk"])
@pytest.mark.parametrize(
    "tree",
    [trees.chain(4), trees.full_tree([3, 2, 1]), trees.star(5)],
    ids=["chain", "full", "star"],
)
def test_greedy_equals_autoregressive(tree, children: str, arith: str) -> None:
    target, draft = table_pair()
    for seed in range(3):
        prompt = [seed % 6, 2]
        ar = autoregressive_generate(target, prompt, 60, mode="greedy")
        r = speculative_generate(
            target,
            draft,
            prompt,
            60,
            tree=tree,
            mode="greedy",
            children=children,
            arith=arith,
            seed=seed,
        )
        assert r.tokens[:60] == ar
        assert sum(a + 1 for a in r.accepted) == len(r.tokens)


def test_greedy_equals_autoregressive_dynamic_policies() -> None:
    target, draft = table_pair(8)
    ar = autoregressive_generate(target, [1], 80, mode="greedy")
    for policy in (
        trees.Eagle2Tree(16, 4, 3),
        trees.SequoiaTree([0.6, 0.2, 0.1], 16, 5),
        trees.AdaptiveSequoia(16, 5, [0.5, 0.2], update_every=4),
    ):
        r = speculative_generate(
            target, draft, [1], 80, tree=policy, mode="greedy", children="topk"
        )
        assert r.tokens[:80] == ar, repr(policy)


def test_greedy_synthetic_large_vocab() -> None:
    pair = SyntheticPair(32000, 0.8, seed=3)
    ar = autoregressive_generate(pair.target, [5, 7], 40, mode="greedy")
    r = speculative_generate(
        pair.target, pair.draft, [5, 7], 40, tree=trees.chain(6), mode="greedy", arith="fixed"
    )
    assert r.tokens[:40] == ar


def test_result_shape_and_determinism() -> None:
    target, draft = table_pair()
    kw = dict(tree=trees.full_tree([2, 2]), children="swor", arith="fixed", seed=7)
    a = speculative_generate(target, draft, [0], 50, **kw)
    b = speculative_generate(target, draft, [0], 50, **kw)
    assert a.tokens == b.tokens and a.accepted == b.accepted
    assert len(a.tokens) >= 50 and len(a.tokens) == sum(x + 1 for x in a.accepted)
    assert all(0 <= x <= 2 for x in a.accepted)
    for s in a.steps:
        assert s.emitted[:-1] == [s.tokens[j] for j in s.path[1:]]
        assert s.accepted == len(s.path) - 1
    c = speculative_generate(target, draft, [0], 50, **{**kw, "seed": 8})
    assert c.tokens != a.tokens
    assert speculative_generate(target, draft, [0], 0, **kw).tokens == []


def test_plain_decoding_tree() -> None:
    """A root-only tree is plain decoding: one token per step, no draft token."""
    target, draft = table_pair()
    r = speculative_generate(target, draft, [0], 20, tree=[-1])
    assert r.accepted == [0] * 20


@pytest.mark.parametrize("gamma, alpha, published", PUBLISHED)
def test_chain_acceptance_matches_formula_and_table(gamma, alpha, published) -> None:
    """Chain drafting with i.i.d. acceptance alpha: E[accepted] = alpha(1-alpha^g)/(1-alpha)."""
    formula = trees.chain_expected_accepted(alpha, gamma)
    assert formula == pytest.approx(alpha * (1 - alpha**gamma) / (1 - alpha))
    assert abs(formula - published) < 0.06  # the table's alphas are rounded to 0.1%
    pair = SyntheticPair(64, alpha, seed=gamma)
    steps = 8000 // gamma + 300
    r = speculative_generate(
        pair.target,
        pair.draft,
        [1, 2],
        10**9,
        tree=trees.chain(gamma),
        seed=gamma,
        keep_steps=False,
        max_steps=steps,
    )
    acc = np.array(r.accepted, dtype=float)
    se = acc.std() / np.sqrt(len(acc))
    assert abs(acc.mean() - formula) < 4 * se, (acc.mean(), formula, se)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(mode="beam"), "mode"),
        (dict(children="all"), "children"),
        (dict(arith="double"), "arith"),
        (dict(seed=-1), "seed"),
        (dict(max_new_tokens=-1), "max_new_tokens"),
        (dict(prompt=[0, 9]), r"prompt\[1\] = 9"),
        (dict(tree=[-1, 1]), r"parents\[1\] = 1"),
        (dict(tree=[-1, 0, 0], lanes=2), "lanes"),
        (dict(prob_bits=0), "prob_bits"),
        (dict(rand_bits=40), "rand_bits"),
        (dict(weight_bits=0), "weight_bits"),
        (dict(draft=TableModel.random(4, 0)), "vocab_size"),
    ],
)
def test_invalid(kwargs, match) -> None:
    target, draft = table_pair()
    args = dict(target=target, draft=draft, prompt=[0], max_new_tokens=5, tree=[-1, 0])
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        speculative_generate(**args)


def test_eagle2_needs_topk() -> None:
    target, draft = table_pair()
    with pytest.raises(ValueError, match="children"):
        speculative_generate(target, draft, [0], 5, tree=trees.Eagle2Tree(8, 3, 2), children="iid")


def test_autoregressive_invalid() -> None:
    target, _ = table_pair()
    with pytest.raises(ValueError, match="mode"):
        autoregressive_generate(target, [0], 3, mode="x")
    with pytest.raises(ValueError, match=r"prompt\[0\]"):
        autoregressive_generate(target, [-1], 3)
