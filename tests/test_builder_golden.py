"""The tree builder's golden twins against their contract (spec §3.6 - §3.11).

Every check vector of the spec, properties on seeded random input (the seed
is printed), the error classes, and the fixed policies decoding (lossless on
a toy table model). The comparisons with the float policies are in
``tests/test_builder_twins.py``.
"""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest

from golden import optimiser as O
from golden import tree as T
from golden.builder import FixedEagle2Tree, FixedStaticTree, FixedTopologyOptimiser, acc_fixed
from golden.decoder import speculative_generate
from golden.draft import StepRecord
from golden.dynamic import build_dynamic
from golden.topk import build_static, child_confidence, root_confidence, topk
from tests.test_lossless import PROMPT, L, N, check, models

SEED = 20261128


def toks(entries) -> list[int]:
    return [e.token for e in entries]


# ----------------------------------------------------------------------------- §3.6 - §3.8


def test_topk_check_vectors() -> None:
    assert toks(topk([3, 0, 7, 7, 1], 3)) == [2, 3, 0]
    assert toks(topk([3, 0, 7, 7, 1], 5)) == [2, 3, 0, 4]
    assert topk([0, 0], 2) == []
    assert [e.q for e in topk([3, 0, 7, 7, 1], 2)] == [7, 7]


def test_topk_against_a_sort() -> None:
    """The numpy selection against a plain sort by (-q, token), q > 0 only."""
    rng = random.Random(SEED)
    print(f"seed {SEED}")
    for _ in range(2000):
        V = rng.choice([1, 2, 3, 5, 17, 100, 1000])
        levels = rng.choice([2, 4, 65536])
        q = [rng.randrange(levels) if rng.random() < 0.7 else 0 for _ in range(V)]
        k = rng.randint(1, 16)
        want = sorted((t for t in range(V) if q[t] > 0), key=lambda t: (-q[t], t))[:k]
        got = topk(q, k)
        assert toks(got) == want and [e.q for e in got] == [q[t] for t in want]


def test_confidence_check_vectors() -> None:
    r = root_confidence()
    assert r == 2**32 - 1
    c = child_confidence(r, 32768)
    assert (c, child_confidence(c, 65535)) == (2147483647, 2147450879)
    assert child_confidence(r, 65535) == 4294901759
    assert child_confidence(r, 1) == 65535
    assert root_confidence(16) == 65535 and child_confidence(65535, 1, conf_bits=16) == 0


def test_static_check_vector() -> None:
    b = build_static([-1, 0, 0, 1, 2], {0: [0, 5, 0, 9], 1: [0, 0, 0, 0], 2: [2, 2, 0, 0]}, 2)
    assert b.parents == [-1, 0, 0, 2] and b.tokens[1:] == [3, 1, 0]
    assert b.source == [0, 1, 2, 4] and b.q == [0, 9, 5, 2]


def test_static_prunes_like_the_float_rule() -> None:
    """A rank with no entry loses its subtree; the rest keep their order and ranks."""
    rng = random.Random(SEED + 1)
    for _ in range(500):
        n = rng.randint(1, 30)
        shape = [-1]
        kids = [0]
        for i in range(1, n):
            a = rng.choice([j for j in range(i) if kids[j] < 4])
            shape.append(a)
            kids[a] += 1
            kids.append(0)
        dists = {a: [rng.choice([0, 0, 1, 5]) for _ in range(6)] for a in range(n)}
        b = build_static(shape, dists, 4)
        T.validate(b.parents)
        rank = T.sibling_rank(shape)
        for i in range(1, len(b.parents)):
            s, ps = b.source[i], b.source[b.parents[i]]
            assert shape[s] == ps  # parents map to parents
            ent = topk(dists[ps], 4)
            assert (b.tokens[i], b.q[i]) == (ent[rank[s]].token, ent[rank[s]].q)
        kept = set(b.source)
        for i in range(1, n):  # pruned: exactly the nodes with a pruned parent or no entry
            alive = shape[i] in kept and rank[i] < len(topk(dists[shape[i]], 4))
            assert (i in kept) == alive


def test_static_errors() -> None:
    with pytest.raises(ValueError, match=r"shape\[3\] = 0: node 3 is child 3 of node 0"):
        build_static([-1, 0, 0, 0], {0: [1, 1, 1]}, 2)
    with pytest.raises(ValueError, match=r"dists\[0\] is missing"):
        build_static([-1, 0], {}, 2)
    with pytest.raises(ValueError, match=r"dists\[1\] has 2 entries"):
        build_static([-1, 0, 1], {0: [0, 1, 1], 1: [1, 1]}, 2)
    with pytest.raises(ValueError, match=r"dists\[0\]\[1\] = 65536"):
        build_static([-1, 0], {0: [0, 65536]}, 2)
    with pytest.raises(ValueError, match="k = 17"):
        topk([1], 17)
    with pytest.raises(ValueError, match="q has 0 entries"):
        topk([], 1)
    with pytest.raises(ValueError, match="conf_bits = 8"):
        child_confidence(1, 1, conf_bits=8)
    with pytest.raises(ValueError, match="c_parent = 65536"):
        child_confidence(65536, 1, conf_bits=16)


# ----------------------------------------------------------------------------- §3.9


SPEC_39 = {
    (): [0, 40000, 20000, 0],
    (1,): [10000, 0, 0, 5000],
    (2,): [0, 0, 60000, 0],
    (2, 2): [30000, 30000, 0, 0],
    (1, 0): [0, 65535, 0, 0],
}


def spec_39_dist(paths: list[list[int]]) -> list[list[int]]:
    return [SPEC_39[tuple(p)] for p in paths]


def test_dynamic_check_vector() -> None:
    b = build_dynamic(spec_39_dist, 6, 3, 2, 2)
    assert b.parents == [-1, 0, 0, 2, 3, 3] and b.tokens[1:] == [1, 2, 2, 0, 1]
    assert b.cand_conf[1:6] == [2621439999, 1310719999, 399999999, 199999999, 1199999999]
    assert b.cand_conf[6:] == [549316405, 549316405, 399993895]
    assert b.expanded == [0, 1, 2, 5, 3]
    b = build_dynamic(spec_39_dist, 8, 3, 2, 2)
    assert b.parents == [-1, 0, 0, 1, 2, 4, 4, 3] and b.tokens[1:] == [1, 2, 0, 2, 0, 1, 1]


def test_dynamic_properties() -> None:
    """Random distributions: a §2 tree, kept = the M - 1 best, siblings a rank prefix."""
    rng = random.Random(SEED + 2)
    for _ in range(300):
        V = rng.randint(1, 12)
        table: dict = {}

        def dist(paths, table=table, V=V):
            return [
                table.setdefault(tuple(p), [rng.choice([0, 1, 9, 300, 65535]) for _ in range(V)])
                for p in paths
            ]

        M, D, K, W = rng.randint(1, 40), rng.randint(1, 6), rng.randint(1, 5), rng.randint(1, 5)
        b = build_dynamic(dist, M, D, K, W)
        T.validate(b.parents)
        assert len(b.parents) <= M
        conf = b.cand_conf
        order = sorted(range(1, len(conf)), key=lambda i: (-conf[i], i))
        assert sorted(b.source[1:]) == sorted(order[: M - 1])
        for i in range(1, len(b.parents)):
            assert b.confidence[i] <= b.confidence[b.parents[i]]
        rank = T.sibling_rank(b.parents)
        for i in range(1, len(b.parents)):  # the node's top-K entry at its rank
            path = []
            j = i
            while j:
                path.append(b.tokens[j])
                j = b.parents[j]
            parent_path = tuple(reversed(path[1:]))
            assert toks(topk(table[parent_path], K))[rank[i]] == b.tokens[i]


def test_dynamic_errors() -> None:
    with pytest.raises(ValueError, match="width = 17"):
        build_dynamic(spec_39_dist, 4, 2, 2, 17)
    with pytest.raises(ValueError, match="n_nodes = 1025"):
        build_dynamic(spec_39_dist, 1025, 2, 2, 2)
    with pytest.raises(ValueError, match=r"q\[0\] = -1"):
        build_dynamic(lambda paths: [[-1, 2]], 4, 2, 2, 2)
    with pytest.raises(ValueError, match="dist returned 2 distributions for 1 nodes"):
        build_dynamic(lambda paths: [[1], [1]], 4, 2, 2, 2)


# ----------------------------------------------------------------------------- §3.10 - §3.11


def test_statistics_check_vector() -> None:
    h, t = O.step_counts([-1, 0, 0, 1], [0, 1, 3], 2)
    assert (h, t) == ([2, 0], [2, 1])
    assert O.smoothed(h, t, [32768, 16384], 2, 16) == [49152, 10922]
    assert O.raw(h, t, 16) == [65536, 0]
    assert O.normalised([40000, 40000], 16) == [32768, 32768]


def test_window_keeps_the_last_steps_with_a_trial() -> None:
    st = O.RankStats(2, 2)
    assert not st.add([0, 0], [0, 0])
    for h, t in (([1, 0], [1, 1]), ([0, 1], [2, 1]), ([1, 1], [1, 1])):
        assert st.add(h, t)
    assert (st.hits, st.trials) == ([1, 2], [3, 2])
    st.clear()
    assert (st.hits, st.trials) == ([0, 0], [0, 0])


def test_dp_check_vector() -> None:
    s = O.solve([32768, 16384], 4, 2)
    assert s.values.tolist() == [0, 0, 32768, 49152, 65536]
    assert [s.tree(m) for m in (1, 2, 3, 4)] == [[-1], [-1, 0], [-1, 0, 0], [-1, 0, 0, 1]]


def test_dp_one_solve_serves_every_budget() -> None:
    """Each budget's tree from the largest solve equals a solve for that budget alone."""
    rng = np.random.default_rng(SEED)
    for _ in range(60):
        k = int(rng.integers(1, 9))
        a = rng.dirichlet(np.ones(k + 1))[:k] * rng.uniform(0.2, 1.0)
        p = O.normalised([int(x) for x in np.floor(a * 65536 + 0.5)], 16)
        M, D = int(rng.integers(2, 80)), int(rng.integers(1, 10))
        big = O.solve(p, M, D)
        for m in range(2, M + 1, 7):
            alone = O.solve(p, m, D)
            assert big.tree(m) == alone.tree(m) and big.values[m] == alone.values[m]
            assert O.tree_value(big.tree(m), p) <= big.values[m]  # truncation only loses


def test_budget_choice_and_fallback() -> None:
    s = O.solve([32768, 16384], 4, 2)
    # rates (E + 1) / cost: budget 2: 1.5/3, 3: 1.75/3.5 (equal: the smaller), 4: 2/5
    assert O.choose_budget(s, [2, 3, 4], [300, 350, 500]) == 0
    assert O.choose_budget(s, [2, 3, 4], [300, 349, 500]) == 1
    assert O.choose_budget(O.solve([0, 0], 4, 2), [2, 4], [1, 1]) is None
    assert O.speculate(32768, 32768, 149, 100, 16)  # 1.5 * 100 > 149
    assert not O.speculate(32768, 0, 149, 100, 16)  # raw: 1 * 100 < 149
    assert not O.speculate(32768, 32768, 150, 100, 16)  # equal rate: plain


def test_optimiser_errors() -> None:
    with pytest.raises(ValueError, match="budgets = \\[4, 4\\]: must be increasing"):
        O.check_costs([4, 4], [1, 1], 8)
    with pytest.raises(ValueError, match=r"costs\[1\] = 0"):
        O.check_costs([2, 4], [1, 0], 8)
    with pytest.raises(ValueError, match=r"budgets\[0\] = 9"):
        O.check_costs([9], [1], 8)
    with pytest.raises(ValueError, match="sums to 65537"):
        O.solve([65536, 1], 4, 2)
    with pytest.raises(ValueError, match="prior = .*sums to"):
        O.check_prior([40000, 40000], 2, 16)
    with pytest.raises(ValueError, match="prior_weight = 256"):
        O.smoothed([0], [0], [0], 256, 16)
    with pytest.raises(ValueError, match="path = \\[0, 2\\]: node 2 is not a child of node 0"):
        O.step_counts([-1, 0, 1], [0, 2], 2)
    with pytest.raises(ValueError, match="initial_acc\\[0\\] = 1.5"):
        acc_fixed([1.5], 2, 16)
    with pytest.raises(ValueError, match="acc_bits = 7"):
        O.solve([1], 4, 2, acc_bits=7)


def record(parents, path) -> StepRecord:
    return StepRecord(list(parents), [0] * len(parents), path[-1], list(path), len(path) - 1, [])


def test_optimiser_falls_back_and_probes() -> None:
    """A draft never accepted: plain after the first re-solve, then a probe
    chain before each re-solve; accepted probes bring speculation back."""
    pol = FixedTopologyOptimiser(
        16, 4, [0.6, 0.2], [150, 200, 300, 400], 100, budgets=[2, 4, 8, 16], update_every=4
    )
    assert pol.mode == "spec" and len(pol.shape()) > 1
    for _ in range(4):
        pol.observe(record(pol.shape(), [0]))  # every child rejected
    assert pol.mode == "plain" and pol.shape() == [-1]
    shapes = []
    for _ in range(3):
        shapes.append(pol.shape())
        pol.observe(record(pol.shape(), [0]))
    assert shapes == [[-1]] * 3 and pol.shape() == [-1, 0]  # the probe
    pol.observe(record([-1, 0], [0, 1]))  # the probe's child accepted
    assert pol.mode == "spec" and len(pol.shape()) > 2
    bad = record([-1, 0], [0, 1])
    bad.path = [0, 2]
    n, stats = pol.n_observed, (list(pol.stats.hits), list(pol.stats.trials))
    with pytest.raises(ValueError, match="path"):
        pol.observe(bad)
    assert pol.n_observed == n and (pol.stats.hits, pol.stats.trials) == stats


# ----------------------------------------------------------------------------- decoding


def fixed_policies():
    yield "static", lambda: FixedStaticTree([-1, 0, 0, 0, 1, 1, 2], 3)
    yield "eagle2", lambda: FixedEagle2Tree(7, 3, 3)
    yield (
        "optimiser",
        lambda: FixedTopologyOptimiser(
            7, 3, [0.5, 0.3], [100, 120], 60, budgets=[3, 7], update_every=1, ranks=3
        ),
    )


#: the optimiser's policy (its chi-square run the longest): make sim-full (decision 0054)
_LOSSLESS = [
    pytest.param(n, m, id=n, marks=pytest.mark.full if n == "optimiser" else ())
    for n, m in fixed_policies()
]


@pytest.mark.parametrize("name,make", _LOSSLESS)
def test_fixed_policies_are_lossless(name: str, make) -> None:
    """Decoding with the fixed trees emits the target's joint distribution
    (the chi-square test of tests/test_lossless.py, N runs of L tokens)."""
    target, draft = models()
    counts = Counter()
    for s in range(N):
        r = speculative_generate(
            target, draft, PROMPT, L, tree=make(), children="topk", arith="fixed", seed=s
        )
        counts[tuple(r.tokens[:L])] += 1
    chi2, crit, tv, etv = check(counts, target.joint(PROMPT, L), N)
    print(f"{name}: chi2 {chi2:.1f} (critical {crit:.1f}), TV {tv:.4f} (H0 ~{etv:.4f})")
    assert chi2 < crit


def test_fixed_policies_need_topk_children() -> None:
    target, draft = models()
    for _, make in fixed_policies():
        with pytest.raises(ValueError, match="children must be 'topk'"):
            speculative_generate(target, draft, PROMPT, 2, tree=make(), children="iid")
