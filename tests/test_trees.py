"""Tests of golden.trees: fixed shapes, the Sequoia DP, acceptance estimation, EAGLE-2."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from golden import tree as T
from golden.draft import DraftTree, StepRecord, TreePolicy, draw_tree
from golden.trees import (
    AdaptiveSequoia,
    Chain,
    Eagle2Tree,
    SequoiaTree,
    StaticTree,
    chain,
    chain_expected_accepted,
    estimate_acceptance,
    expected_accepted,
    full_tree,
    sequoia_tree,
    star,
)

# ----------------------------------------------------------------------------- helpers


def all_trees(n: int) -> list[list[int]]:
    """Every parent list of n nodes (each ordered tree appears at least once)."""
    return [[-1, *rest] for rest in itertools.product(*(range(i) for i in range(1, n)))]


# every tree of up to 7 nodes, with its depth
SMALL_TREES = [(p, max(T.depths(p))) for n in range(1, 8) for p in all_trees(n)]


def brute_best(acc, n_nodes: int, max_depth: int) -> float:
    return max(
        expected_accepted(p, acc) for p, d in SMALL_TREES if len(p) <= n_nodes and d <= max_depth
    )


@st.composite
def acc_vectors(draw, max_len: int = 4):
    k = draw(st.integers(1, max_len))
    w = draw(st.lists(st.floats(0.0, 1.0), min_size=k, max_size=k))
    total = draw(st.floats(0.0, 1.0))
    s = sum(w)
    if s == 0.0:
        return [0.0] * k
    return [x * total / s for x in w]


def record(parents, path) -> StepRecord:
    return StepRecord(
        parents=list(parents),
        tokens=[0] * len(parents),
        last=path[-1] if path else 0,
        path=list(path),
        accepted=len(path) - 1,
        emitted=[0] * len(path),
    )


# ----------------------------------------------------------------------------- shapes


def test_chain_shapes():
    assert chain(0) == [-1]
    assert chain(1) == [-1, 0]
    assert chain(4) == [-1, 0, 1, 2, 3]
    c = Chain(3)
    assert isinstance(c, TreePolicy)
    assert c.parents() == [-1, 0, 1, 2]
    assert c.max_nodes == 4
    assert Chain(0).parents() == [-1] and Chain(0).max_nodes == 1


def test_star_and_full_tree():
    assert star(0) == [-1]
    assert star(3) == [-1, 0, 0, 0]
    assert full_tree(()) == [-1]
    assert full_tree((3,)) == star(3)
    assert full_tree((1, 1, 1)) == chain(3)
    assert full_tree((2, 2, 1)) == [-1, 0, 0, 1, 1, 2, 2, 3, 4, 5, 6]
    p = full_tree((3, 2, 2))
    assert len(p) == 1 + 3 + 6 + 12
    ch = T.children_lists(p)
    dep = T.depths(p)
    for a in range(len(p)):
        assert len(ch[a]) == [3, 2, 2, 0][dep[a]]
        assert ch[a] == list(range(ch[a][0], ch[a][0] + len(ch[a]))) if ch[a] else True
    assert dep == sorted(dep)  # breadth first


def test_static_tree_returns_copies():
    s = StaticTree([-1, 0, 0, 1])
    assert s.max_nodes == 4
    p = s.parents()
    p.append(0)
    assert s.parents() == [-1, 0, 0, 1]


def test_static_policy_builds_with_draw_tree():
    m = ToyModel(TABLE6)
    dt = Chain(3).build(m, [1, 2], "topk", np.random.default_rng(0))
    assert dt.parents == [-1, 0, 1, 2]
    assert int(dt.tokens[0]) == 2


# ----------------------------------------------------------------------------- positional model


def test_chain_expected_accepted():
    assert chain_expected_accepted(0.5, 0) == 0.0
    assert chain_expected_accepted(0.0, 5) == 0.0
    assert chain_expected_accepted(1.0, 7) == 7.0
    assert chain_expected_accepted(0.5, 3) == pytest.approx(0.5 + 0.25 + 0.125)
    assert chain_expected_accepted(1 - 1e-12, 10) == pytest.approx(10.0, rel=1e-9)


@pytest.mark.parametrize(
    ("alpha", "gamma", "tokens", "tol"),
    [(0.926, 5, 4, 0.05), (0.934, 10, 7, 0.05), (0.948, 20, 12, 0.05), (0.962, 40, 20, 0.06)],
)
def test_chain_expected_accepted_published_table(alpha, gamma, tokens, tol):
    # alpha(1-alpha^gamma)/(1-alpha): 3.994, 7.002, 11.965, 19.941 (the table's alphas are
    # rounded to 3 digits, so the last entry is 0.059 off its rounded target)
    assert abs(chain_expected_accepted(alpha, gamma) - tokens) <= tol


def test_expected_accepted_by_hand():
    acc = [0.5, 0.3]
    assert expected_accepted([-1], acc) == 0.0
    assert expected_accepted(star(3), acc) == pytest.approx(0.8)  # rank 3 counts 0
    # root -> (a: 0.5 -> (0.25, 0.15)), (b: 0.3)
    assert expected_accepted([-1, 0, 0, 1, 1], acc) == pytest.approx(0.5 + 0.3 + 0.25 + 0.15)
    assert expected_accepted(chain(3), [0.9]) == pytest.approx(chain_expected_accepted(0.9, 3))


# ----------------------------------------------------------------------------- Sequoia DP


def test_sequoia_small_cases():
    assert sequoia_tree([0.7], 1, 3) == ([-1], 0.0)
    assert sequoia_tree([0.0, 0.0], 10, 3) == ([-1], 0.0)
    p, v = sequoia_tree([0.8, 0.1], 3, 1)
    assert p == [-1, 0, 0] and v == pytest.approx(0.9)
    p, v = sequoia_tree([0.8, 0.1], 3, 2)
    assert p == [-1, 0, 1] and v == pytest.approx(0.8 + 0.64)


@pytest.mark.parametrize("alpha", [0.3, 0.8, 0.95, 1.0])
@pytest.mark.parametrize("depth", [1, 4, 9])
def test_sequoia_chain(alpha, depth):
    p, v = sequoia_tree([alpha], 32, depth)
    assert p == chain(depth)  # at most n_nodes: never deeper than the limit allows
    assert v == pytest.approx(chain_expected_accepted(alpha, depth), rel=1e-12)
    p, v = sequoia_tree([alpha], 4, 9)
    assert p == chain(3)
    assert v == pytest.approx(chain_expected_accepted(alpha, 3), rel=1e-12)


def test_sequoia_budget_is_at_most():
    # a zero-probability rank is never used, a trailing one is never used
    p, _ = sequoia_tree([0.6, 0.0], 20, 2)
    assert p == chain(2)
    # an intermediate zero rank is used only as a placeholder for the next rank
    p, v = sequoia_tree([0.5, 0.0, 0.3], 4, 1)
    assert p == star(3) and v == pytest.approx(0.8)
    p, _ = sequoia_tree([0.5, 0.0, 0.3], 3, 1)
    assert p == star(1)
    # all p_b > 0 and room to spare: every node is used
    for n in (2, 7, 50, 200):
        p, _ = sequoia_tree([0.5, 0.2, 0.1], n, 12)
        assert len(p) == n
    # the depth limit and K cap the size: 1 + 2 + 4 nodes at most
    p, _ = sequoia_tree([0.5, 0.4], 100, 2)
    assert p == full_tree((2, 2))


@settings(max_examples=60, deadline=None)
@given(acc=acc_vectors(), n_nodes=st.integers(1, 7), max_depth=st.integers(1, 6))
def test_sequoia_optimal_vs_brute_force(acc, n_nodes, max_depth):
    p, v = sequoia_tree(acc, n_nodes, max_depth)
    T.validate(p)
    assert len(p) <= n_nodes
    assert max(T.depths(p)) <= max_depth
    assert v == pytest.approx(expected_accepted(p, acc), rel=1e-12, abs=1e-15)
    best = brute_best(acc, n_nodes, max_depth)
    assert v >= best - 1e-12
    assert v == pytest.approx(best, rel=1e-12, abs=1e-15)


@settings(max_examples=30, deadline=None)
@given(acc=acc_vectors(max_len=6), n_nodes=st.integers(1, 120), max_depth=st.integers(1, 10))
def test_sequoia_tree_properties(acc, n_nodes, max_depth):
    p, v = sequoia_tree(acc, n_nodes, max_depth)
    T.validate(p, max_nodes=n_nodes)
    dep = T.depths(p)
    assert max(dep) <= max_depth
    assert dep == sorted(dep)  # breadth first numbering
    for kids in T.children_lists(p):
        assert len(kids) <= len(acc)
        assert kids == list(range(kids[0], kids[0] + len(kids))) if kids else True
    assert v == pytest.approx(expected_accepted(p, acc), rel=1e-9, abs=1e-12)
    # no worse than the best chain and the best star of the budget
    k = min(n_nodes - 1, max_depth)
    assert v >= expected_accepted(chain(k), acc) - 1e-12
    assert v >= expected_accepted(star(min(n_nodes - 1, len(acc))), acc) - 1e-12
    # monotone in the budget
    if n_nodes > 1:
        assert v >= sequoia_tree(acc, n_nodes - 1, max_depth)[1] - 1e-12


def test_sequoia_siblings_ordered_by_acceptance():
    # the rank-1 child carries the largest subtree
    p, _ = sequoia_tree([0.6, 0.2, 0.1], 40, 6)
    sizes = [1] * len(p)
    for i in range(len(p) - 1, 0, -1):
        sizes[p[i]] += sizes[i]
    for kids in T.children_lists(p):
        s = [sizes[c] for c in kids]
        assert s == sorted(s, reverse=True)


def test_sequoia_large_budgets():
    acc = 0.8 * 0.5 ** np.arange(16)
    acc *= 0.95 / acc.sum()
    p, _ = sequoia_tree(acc, 64, 8)
    assert len(p) == 64
    p, v = sequoia_tree(acc, 1024, 16)
    assert len(p) == 1024
    assert v == pytest.approx(expected_accepted(p, acc), rel=1e-9)


def test_sequoia_tree_policy():
    pol = SequoiaTree([0.6, 0.2], 10, 4)
    p, v = sequoia_tree([0.6, 0.2], 10, 4)
    assert pol.parents() == p
    assert pol.expected == v
    assert pol.max_nodes == len(p) <= 10
    assert isinstance(pol, StaticTree)


# ----------------------------------------------------------------------------- estimation


def test_estimate_acceptance_known_answer():
    parents = [-1, 0, 0, 0, 1, 1, 4]
    recs = [record(parents, [0, 2]), record(parents, [0, 1, 4, 6])]
    # trials: root 3 ranks twice, node 1 two ranks, node 4 one rank -> [4, 3, 2, 0]
    # hits:   rank 1 at root, node 1, node 4; rank 2 at root          -> [3, 1, 0, 0]
    est = estimate_acceptance(recs, 4)
    assert est.shape == (4,) and est.dtype == np.float64
    np.testing.assert_allclose(est, [0.75, 1 / 3, 0.0, 0.0])
    # max_children truncates; a generator works
    np.testing.assert_allclose(estimate_acceptance(iter(recs), 1), [0.75])
    np.testing.assert_array_equal(estimate_acceptance([], 3), np.zeros(3))
    # a rejected-everything step: only trials
    np.testing.assert_allclose(estimate_acceptance([record(star(2), [0])], 2), [0.0, 0.0])


def simulate_positional(parents, acc, rng) -> list[int]:
    """Accepted path of one step under the positional model."""
    ch = T.children_lists(parents)
    path = [0]
    while True:
        kids = ch[path[-1]]
        u = rng.random()
        c = 0.0
        for b, node in enumerate(kids[: len(acc)]):
            c += acc[b]
            if u < c:
                path.append(node)
                break
        else:
            return path


def test_estimate_acceptance_recovers_positional_model():
    rng = np.random.default_rng(1)
    acc = [0.55, 0.2, 0.1]
    parents = full_tree((3, 3, 2))
    recs = [record(parents, simulate_positional(parents, acc, rng)) for _ in range(4000)]
    est = estimate_acceptance(recs, 4)
    np.testing.assert_allclose(est[:3], acc, atol=0.03)
    assert est[3] == 0.0
    # the mean accepted count matches the model's expectation
    mean = np.mean([len(r.path) - 1 for r in recs])
    assert mean == pytest.approx(expected_accepted(parents, acc), abs=0.05)


def test_adaptive_sequoia_resolves():
    init = [0.3, 0.3, 0.3]
    pol = AdaptiveSequoia(8, 7, init, update_every=5, max_children=4, prior_weight=2.0)
    assert pol.max_nodes == 8
    assert pol.n_solves == 1
    p0, v0 = sequoia_tree(init, 8, 7)
    assert pol.parents() == p0 and pol.expected == v0
    # a stream of steps where the rank-1 child of a 2-child node is always accepted
    rec = record([-1, 0, 0, 1, 1], [0, 1, 3])
    for i in range(4):
        pol.observe(rec)
        assert pol.n_observed == i + 1
    assert pol.n_solves == 1 and pol.parents() == p0
    pol.observe(rec)
    assert pol.n_solves == 2
    # hits [10, 0, 0, 0], trials [10, 10, 0, 0], prior 2 x [0.3, 0.3, 0.3, 0]
    want = np.array([10.6 / 12, 0.6 / 12, 0.3, 0.0])
    want /= want.sum()  # sums to > 1: scaled to 1
    np.testing.assert_allclose(pol.acc, want)
    p1, v1 = sequoia_tree(want, 8, 7)
    assert pol.parents() == p1 and pol.expected == pytest.approx(v1)
    assert pol.parents() != p0
    assert max(T.depths(pol.parents())) > max(T.depths(p0))  # deeper: rank 1 dominates
    for _ in range(5):
        pol.observe(rec)
    assert pol.n_solves == 3


def test_adaptive_sequoia_learns_the_model():
    rng = np.random.default_rng(2)
    acc = [0.7, 0.15]
    pol = AdaptiveSequoia(16, 8, [0.3, 0.3, 0.3], update_every=50, max_children=3)
    for _ in range(1000):
        pol.observe(record(pol.parents(), simulate_positional(pol.parents(), acc, rng)))
    assert pol.n_solves == 21
    np.testing.assert_allclose(pol.acc[:2], acc, atol=0.06)
    best = sequoia_tree(acc, 16, 8)[1]
    assert expected_accepted(pol.parents(), acc) >= 0.95 * best


def test_adaptive_sequoia_no_prior_unseen_rank():
    pol = AdaptiveSequoia(6, 3, [0.5, 0.2], update_every=1, max_children=2, prior_weight=0.0)
    pol.observe(record(chain(2), [0, 1, 2]))  # rank 2 never offered: trials 0 -> 0
    np.testing.assert_allclose(pol.acc, [1.0, 0.0])
    assert pol.parents() == chain(3)


# ----------------------------------------------------------------------------- EAGLE-2


class ToyModel:
    """Draft model whose distribution depends only on the last token (row V: empty context)."""

    context_window = 1

    def __init__(self, table):
        self.table = np.asarray(table, dtype=np.float64)
        self.vocab_size = self.table.shape[1]
        self.calls: list[list[list[int]]] = []

    def probs(self, contexts):
        self.calls.append([list(c) for c in contexts])
        return np.stack([self.table[c[-1] if c else self.vocab_size] for c in contexts])


TABLE4 = [
    [0.1, 0.5, 0.3, 0.1],  # after token 0 (the root in the hand-worked case)
    [0.6, 0.1, 0.2, 0.1],
    [0.05, 0.05, 0.1, 0.8],
    [0.25, 0.25, 0.25, 0.25],  # ties: lower token id first
    [0.25, 0.25, 0.25, 0.25],  # empty context
]

TABLE6 = np.random.default_rng(3).dirichlet(np.full(6, 0.5), size=7)


def test_eagle2_hand_worked():
    # candidates: A=1 (0.5), B=2 (0.3) | under A: 0 (0.3), 2 (0.1) | under B: 3 (0.24), 2 (0.03)
    m = ToyModel(TABLE4)
    dt = Eagle2Tree(4, 2, 2).build(m, [3, 0], "topk", np.random.default_rng(0))
    assert isinstance(dt, DraftTree)
    assert dt.parents == [-1, 0, 0, 1]
    assert dt.tokens.tolist() == [0, 1, 2, 0]
    assert dt.q_index.tolist() == [0, 1, -1, -1]
    np.testing.assert_array_equal(dt.q, np.array([TABLE4[0], TABLE4[1]]))
    assert [len(c) for c in m.calls] == [1, 2]  # one batched call per round
    assert m.calls[1] == [[0, 1], [0, 2]]

    dt = Eagle2Tree(5, 2, 2).build(m, [3, 0], "topk", np.random.default_rng(0))
    assert dt.parents == [-1, 0, 0, 1, 2]
    assert dt.tokens.tolist() == [0, 1, 2, 0, 3]

    # a third round expands C=(1,0) 0.3 and D=(2,3) 0.24: C gets 1 (0.15), 2 (0.09)
    pol = Eagle2Tree(6, 3, 2)
    dt = pol.build(m, [0], "topk", np.random.default_rng(0))
    assert dt.parents == [-1, 0, 0, 1, 2, 3]
    assert dt.tokens.tolist() == [0, 1, 2, 0, 3, 1]
    np.testing.assert_allclose(pol.last_values, [1.0, 0.5, 0.3, 0.3, 0.24, 0.15])


def test_eagle2_root_only_and_empty_context():
    m = ToyModel(TABLE4)
    dt = Eagle2Tree(1, 3, 2).build(m, [], "topk", np.random.default_rng(0))
    assert dt.parents == [-1] and dt.tokens.tolist() == [-1]
    assert dt.q.shape == (0, 4) and dt.q_index.tolist() == [-1]
    assert m.calls == []
    dt = Eagle2Tree(3, 1, 5).build(m, [], "topk", np.random.default_rng(0))
    assert dt.parents == [-1, 0, 0]
    assert dt.tokens.tolist() == [-1, 0, 1]  # all tie: lower token ids
    assert m.calls == [[[]]]


def test_eagle2_topk_larger_than_vocab():
    m = ToyModel(TABLE4)
    dt = Eagle2Tree(50, 2, 9).build(m, [0], "topk", np.random.default_rng(0))
    assert dt.n == 1 + 4 + 16
    T.validate(dt.parents)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    vocab=st.integers(5, 8),
    n_nodes=st.integers(1, 30),
    depth=st.integers(1, 5),
    topk=st.integers(1, 4),
    ctx=st.lists(st.integers(0, 4), max_size=3),
)
def test_eagle2_properties(seed, vocab, n_nodes, depth, topk, ctx):
    table = np.random.default_rng(seed).dirichlet(np.full(vocab, 0.7), size=vocab + 1)
    m = ToyModel(table)
    pol = Eagle2Tree(n_nodes, depth, topk)
    assert pol.max_nodes == n_nodes
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    dt = pol.build(m, ctx, "topk", rng)
    assert rng.bit_generator.state == state  # rng untouched
    par = T.validate(dt.parents, max_nodes=n_nodes)
    n = len(par)
    dep = T.depths(par)
    assert max(dep) <= depth
    assert dep == sorted(dep)
    assert int(dt.tokens[0]) == (ctx[-1] if ctx else -1)
    rounds = min(depth, n_nodes - 1)
    assert len(m.calls) == rounds
    # size: the budget, unless fewer candidates were created
    k = min(topk, vocab)
    created, new = 0, 0
    for r in range(rounds):
        new = k if r == 0 else min(topk, new) * k  # expanded nodes x children each
        created += new
    assert n == min(n_nodes, 1 + created)
    ch = T.children_lists(par)
    val = pol.last_values
    assert val.shape == (n,) and val[0] == 1.0
    path_tok = [[]]
    for i in range(1, n):
        path_tok.append(path_tok[par[i]] + [int(dt.tokens[i])])
    kept_min = val[1:].min() if n > 1 else 1.0
    for a in range(n):
        if not ch[a]:
            assert dt.q_index[a] == -1
            continue
        qa = dt.q_of(a)
        ctx_a = (ctx[-1:] if ctx else []) + path_tok[a]
        np.testing.assert_array_equal(qa, table[ctx_a[-1] if ctx_a else vocab])
        top = np.argsort(-qa, kind="stable")[:k].tolist()
        toks = [int(dt.tokens[c]) for c in ch[a]]
        assert toks == top[: len(toks)]  # siblings: decreasing q, ties lower id
        for c in ch[a]:
            assert val[c] == val[a] * qa[dt.tokens[c]]
            assert val[c] <= val[a]
        # a dropped candidate is never better than a kept node
        for t in top[len(toks) :]:
            assert val[a] * qa[t] <= kept_min
    # deterministic
    dt2 = pol.build(m, ctx, "topk", np.random.default_rng(5))
    assert dt2.parents == dt.parents
    np.testing.assert_array_equal(dt2.tokens, dt.tokens)
    np.testing.assert_array_equal(dt2.q, dt.q)
    np.testing.assert_array_equal(dt2.q_index, dt.q_index)


def test_eagle2_tree_is_usable_by_draw_tree_shape():
    # the same shape redrawn with topk reproduces the tokens (siblings = top-k in order)
    m = ToyModel(TABLE6)
    dt = Eagle2Tree(12, 4, 3).build(m, [2], "topk", np.random.default_rng(0))
    dt2 = draw_tree(dt.parents, m, [2], "topk", np.random.default_rng(0))
    np.testing.assert_array_equal(dt.tokens, dt2.tokens)


@pytest.mark.parametrize("children", ["iid", "swor", "bogus"])
def test_eagle2_rejects_other_children_rules(children):
    with pytest.raises(ValueError, match="children"):
        Eagle2Tree(4, 2, 2).build(ToyModel(TABLE4), [0], children, np.random.default_rng(0))


def test_eagle2_has_no_static_shape():
    with pytest.raises(NotImplementedError):
        Eagle2Tree(4, 2, 2).parents()


# ----------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: chain(-1), r"k = -1: must be an integer in 0 \.\. 1048575"),
        (lambda: chain(1.5), r"k = 1\.5"),
        (lambda: chain(True), r"k = True"),
        (lambda: Chain(-2), r"k = -2"),
        (lambda: star(-1), r"k = -1"),
        (lambda: full_tree((2, 0)), r"branching\[1\] = 0: must be an integer >= 1"),
        (lambda: full_tree(3), r"branching = 3"),
        (lambda: full_tree((16,) * 8), r"branching = .*more than"),
        (lambda: StaticTree([0]), r"parents\[0\] = 0"),
        (lambda: StaticTree([-1, 1]), r"parents\[1\] = 1"),
        (lambda: StaticTree([]), r"parents is empty"),
        (lambda: chain_expected_accepted(1.5, 3), r"alpha = 1\.5"),
        (lambda: chain_expected_accepted(float("nan"), 3), r"alpha = nan"),
        (lambda: chain_expected_accepted("x", 3), r"alpha = 'x'"),
        (lambda: chain_expected_accepted(0.5, -1), r"gamma = -1"),
        (
            lambda: expected_accepted([-1, 0], [1.2]),
            r"^acc\[0\] = 1\.2: must be a finite number in \[0, 1\]",
        ),
        (lambda: expected_accepted([-1, 2], [0.5]), r"parents\[1\] = 2"),
        (lambda: sequoia_tree([], 4, 2), r"acc = \[\]"),
        (lambda: sequoia_tree([-0.1], 4, 2), r"^acc\[0\] = -0\.1: must be a finite"),
        (lambda: sequoia_tree([0.5, 1.5], 4, 2), r"^acc\[1\] = 1\.5: must be a finite"),
        (lambda: sequoia_tree([0.6, 0.6], 4, 2), r"^acc sums to 1\.2: must be at most 1"),
        (lambda: sequoia_tree([float("nan")], 4, 2), r"^acc\[0\] = nan: must be a finite number"),
        (lambda: sequoia_tree([[0.5]], 4, 2), r"^acc has shape \(1, 1\): expected \(n,\)$"),
        (lambda: sequoia_tree(["a"], 4, 2), r"acc = \['a'\]"),
        (lambda: sequoia_tree([0.5], 0, 2), r"n_nodes = 0: must be an integer in 1 \.\. 1024"),
        (lambda: sequoia_tree([0.5], 4, 0), r"max_depth = 0: must be an integer >= 1"),
        (lambda: sequoia_tree([0.5], 4.0, 2), r"n_nodes = 4\.0"),
        (lambda: SequoiaTree([0.5], 4, -1), r"max_depth = -1"),
        (lambda: estimate_acceptance([], 0), r"max_children = 0"),
        (lambda: estimate_acceptance([record(star(2), [1])], 2), r"record\.path = \[1\]"),
        (lambda: estimate_acceptance([record(star(2), [])], 2), r"record\.path = \[\]"),
        (lambda: estimate_acceptance([record(star(2), [0, 5])], 2), r"node 5 is not in"),
        (
            lambda: estimate_acceptance([record(chain(3), [0, 2])], 2),
            r"node 2 is not a child of node 0",
        ),
        (lambda: AdaptiveSequoia(0, 2, [0.5]), r"n_nodes = 0"),
        (lambda: AdaptiveSequoia(4, 0, [0.5]), r"max_depth = 0"),
        (lambda: AdaptiveSequoia(4, 2, [0.5], update_every=0), r"update_every = 0"),
        (lambda: AdaptiveSequoia(4, 2, [0.5], max_children=0), r"max_children = 0"),
        (lambda: AdaptiveSequoia(4, 2, [0.5], prior_weight=-1.0), r"prior_weight = -1\.0"),
        (lambda: AdaptiveSequoia(4, 2, [0.5], prior_weight=math.inf), r"prior_weight = inf"),
        (lambda: AdaptiveSequoia(4, 2, [0.5], prior_weight="x"), r"prior_weight = 'x'"),
        (
            lambda: AdaptiveSequoia(4, 2, [0.7, 0.7]),
            r"^initial_acc sums to 1\.4: must be at most 1",
        ),
        (
            lambda: AdaptiveSequoia(4, 2, [0.1] * 3, max_children=2),
            r"initial_acc = .*3 entries, more than max_children = 2",
        ),
        (lambda: Eagle2Tree(0, 2, 2), r"n_nodes = 0: must be an integer in 1 \.\. 1024"),
        (lambda: Eagle2Tree(4, 0, 2), r"depth = 0: must be an integer >= 1"),
        (lambda: Eagle2Tree(4, 2, 0), r"topk = 0: must be an integer >= 1"),
        (lambda: Eagle2Tree(4, 2, None), r"topk = None"),
    ],
)
def test_value_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_adaptive_observe_rejects_bad_record():
    pol = AdaptiveSequoia(4, 2, [0.5])
    with pytest.raises(ValueError, match=r"record\.path"):
        pol.observe(record(chain(2), [0, 2]))
