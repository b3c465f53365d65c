"""golden.accept: the parallel decision (SPEC §3.2/§3.3) against the sequential loop (§3.1)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from golden import accept, tree
from golden.rng import LaneRNG
from tests.strategies import trees


def walk(parents: list[int], pt, qt, u, rand_bits: int = 16) -> tuple[int, int]:
    """Plain sequential walk over integer pt/qt/u: descend into the first accepted child."""
    ch = tree.children_lists(parents)
    a, mask = 0, 1
    while True:
        for c in ch[a]:
            if int(u[c]) * int(qt[c]) < int(pt[c]) << rand_bits:
                a, mask = c, mask | (1 << c)
                break
        else:
            return a, mask


@st.composite
def fixed_cases(draw, max_nodes: int = 64):
    parents = draw(trees(max_nodes=max_nodes))
    n = len(parents)
    pb = draw(st.sampled_from([8, 16, 24]))
    rb = draw(st.sampled_from([8, 16, 32]))
    corner = st.sampled_from([0, 1, (1 << pb) - 1, 1 << (pb - 1)])
    val = st.one_of(corner, st.integers(0, (1 << pb) - 1))
    pt = [draw(val) for _ in range(n)]
    qt = [draw(val) for _ in range(n)]
    u = [
        draw(st.one_of(st.sampled_from([0, (1 << rb) - 1]), st.integers(0, (1 << rb) - 1)))
        for _ in range(n)
    ]
    return parents, pt, qt, u, pb, rb


@settings(max_examples=150, deadline=None)
@given(fixed_cases())
def test_decide_matches_sequential_walk(case) -> None:
    parents, pt, qt, u, pb, rb = case
    d = accept.decide_detail(parents, pt, qt, u, rand_bits=rb, prob_bits=pb)
    assert (d.last, d.path_mask) == walk(parents, pt, qt, u, rb)
    assert accept.decide(parents, pt, qt, u, rand_bits=rb, prob_bits=pb) == (d.last, d.path_mask)
    rows = tree.mask_rows(parents)
    assert d.path_mask == rows[d.last]
    assert d.on_path.tolist() == [(rows[d.last] >> i) & 1 == 1 for i in range(len(parents))]
    assert d.accepted == tree.depths(parents)[d.last]
    # every chosen node is accepted and the first accepted among its siblings
    for i in np.flatnonzero(d.chosen):
        sib = [j for j in range(1, i) if parents[j] == parents[i]]
        assert d.accept[i] and not any(d.accept[j] for j in sib)


def test_decide_corners() -> None:
    chain = [-1, 0, 1, 2]
    full = (1 << 16) - 1
    # qt = 0 accepts iff pt > 0
    assert accept.decide(chain, [0, 1, 1, 0], [0, 0, 0, 0], [0, full, full, full]) == (2, 0b111)
    # pt at max, qt at max: always accepted, whatever u
    assert accept.decide(chain, [0, full, full, full], [0, full] * 2, [0, full] * 2) == (3, 0b1111)
    # none accepted: pt = 0
    assert accept.decide(chain, [0] * 4, [0, 5, 5, 5], [0] * 4) == (0, 1)
    # boundary: u * qt == pt << 16 is a rejection
    assert accept.decide([-1, 0], [0, 1], [0, 1 << 15], [0, 2]) == (0, 1)
    assert accept.decide([-1, 0], [0, 1], [0, 1 << 15], [0, 1]) == (1, 0b11)
    # star: first accepted sibling wins
    star = [-1, 0, 0, 0, 0]
    assert accept.decide(star, [0, 0, 9, 9, 9], [0, 9, 9, 9, 9], [0, 0, 0, 0, 0]) == (2, 0b101)
    # single node tree
    assert accept.decide([-1], [0], [0], [0]) == (0, 1)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(pt=[0, 1]), r"pt has shape"),
        (dict(qt=[0, 1, 2, 3]), r"qt has shape"),
        (dict(u=[0, 1]), r"u has shape"),
        (dict(pt=[0, 1 << 16, 0]), r"pt\[1\] = 65536"),
        (dict(qt=[0, 0, -1]), r"qt\[2\] = -1"),
        (dict(u=[0, 0, 1 << 16]), r"u\[2\] = 65536"),
        (dict(pt=[0.0, 0.5, 0.5]), r"pt must hold integers"),
        (dict(parents=[-1, 2, 0]), r"parents\[1\] = 2"),
        (dict(rand_bits=0), "rand_bits"),
        (dict(prob_bits=33), "prob_bits"),
    ],
)
def test_decide_invalid(kwargs, match) -> None:
    args = dict(parents=[-1, 0, 0], pt=[0, 1, 1], qt=[0, 1, 1], u=[0, 1, 1])
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        accept.decide(**args)


# ----------------------------------------------------------------------------- full step
def random_step(seed: int, parents: list[int], V: int, children: str, sparse: bool):
    """Random per-node target/draft distributions and tokens valid for the children rule."""
    rng = np.random.default_rng(seed)
    n = len(parents)
    p = rng.dirichlet(np.full(V, 0.5), size=n)
    q = rng.dirichlet(np.full(V, 0.5), size=n)
    if sparse:  # zeros in both, to hit zero residuals and qt = 0
        p[rng.random((n, V)) < 0.3] = 0.0
        q[rng.random((n, V)) < 0.3] = 0.0
        p[:, 0] += 1e-3
        q[:, 1] += 1e-3
        p /= p.sum(1, keepdims=True)
        q /= q.sum(1, keepdims=True)
    if rng.random() < 0.2:
        q = p.copy()  # draft == target: everything with qt > 0 is accepted
    tok = np.zeros(n, dtype=np.int64)
    for a, kids in enumerate(tree.children_lists(parents)):
        if not kids:
            continue
        if children == "iid":
            tok[kids] = rng.choice(V, size=len(kids), p=q[a])
        elif children == "swor":
            k = min(len(kids), int((q[a] > 0).sum()))
            tok[kids[:k]] = rng.choice(V, size=k, replace=False, p=q[a])
            tok[kids[k:]] = rng.integers(0, V, size=len(kids) - k)
        else:
            tok[kids] = np.argsort(-q[a], kind="stable")[: len(kids)] if len(kids) <= V else 0
    lane_out = LaneRNG(seed, n).next()
    return p, q, tok, lane_out


@settings(max_examples=250, deadline=None)
@given(
    trees(max_nodes=24),
    st.integers(0, 2**32),
    st.integers(2, 12),
    st.sampled_from(["iid", "swor", "topk"]),
    st.sampled_from(["float", "fixed"]),
    st.booleans(),
    st.booleans(),
)
def test_parallel_equals_sequential(parents, seed, V, children, arith, sparse, greedy) -> None:
    """SPEC §3.2's parallel form emits exactly the tokens of §3.1's loop, same uniforms."""
    p, q, tok, lane_out = random_step(seed, parents, V, children, sparse)
    kw = dict(children=children, arith=arith, greedy=greedy)
    seq_tokens, seq_path = accept.sequential_step(p, q, parents, tok, lane_out, **kw)
    par_tokens, d = accept.parallel_step(p, q, parents, tok, lane_out, **kw)
    assert par_tokens == seq_tokens
    assert d.path == seq_path


@settings(max_examples=100, deadline=None)
@given(trees(max_nodes=16), st.integers(0, 2**32), st.sampled_from(["iid", "swor", "topk"]))
def test_precompute(parents, seed, children) -> None:
    V = 6
    p, q, tok, _ = random_step(seed, parents, V, children, sparse=False)
    pre = accept.precompute(p, q, parents, tok, children)
    ch = tree.children_lists(parents)
    for a, kids in enumerate(ch):
        if not kids:
            np.testing.assert_array_equal(pre.residual[a], p[a])
            continue
        c = kids[0]  # the first child is tested against p_a, q_a themselves
        assert pre.pt[c] == p[a][tok[c]]
        assert pre.qt[c] == (1.0 if children == "topk" else q[a][tok[c]])
        r = pre.residual[a]
        assert r.min() >= 0 and (abs(r.sum() - 1) < 1e-9 or r.sum() == 0)
        np.testing.assert_allclose(
            r, accept.residual_at(p, q, parents, tok, a, children), rtol=0, atol=1e-15
        )
    assert pre.pt_fixed.max() < 1 << 16 and pre.qt_fixed.max() < 1 << 16
    np.testing.assert_array_equal(pre.residual_fixed.shape, (len(parents), V))


def test_precompute_iid_second_child_uses_residual() -> None:
    p = np.array([[0.5, 0.3, 0.2], [1 / 3] * 3, [1 / 3] * 3])
    q = np.array([[0.2, 0.6, 0.2], [1 / 3] * 3, [1 / 3] * 3])
    pre = accept.precompute(p, q, [-1, 0, 0], [0, 1, 0], "iid")
    # after rejecting token 1: residual = norm(max(0, p - q)) = [1, 0, 0]
    assert pre.pt[2] == pytest.approx(1.0) and pre.qt[2] == pytest.approx(0.2)
    pre = accept.precompute(p, q, [-1, 0, 0], [0, 1, 0], "swor")
    # swor: Q loses token 1 -> [0.5, 0, 0.5]
    assert pre.qt[2] == pytest.approx(0.5)
    pre = accept.precompute(p, q, [-1, 0, 0], [0, 1, 0], "topk")
    # topk: P loses token 1 -> [5/7, 0, 2/7]
    assert pre.pt[2] == pytest.approx(5 / 7) and pre.qt[2] == 1.0


def test_precompute_invalid() -> None:
    p = np.full((2, 3), 1 / 3)
    with pytest.raises(ValueError, match="children"):
        accept.precompute(p, p, [-1, 0], [0, 1], "beam")
    with pytest.raises(ValueError, match=r"tokens\[1\] = 3"):
        accept.precompute(p, p, [-1, 0], [0, 3], "iid")
    with pytest.raises(ValueError, match="p has shape"):
        accept.precompute(p[:1], p, [-1, 0], [0, 1], "iid")
    with pytest.raises(ValueError, match="prob_bits"):
        accept.precompute(p, p, [-1, 0], [0, 1], "iid", prob_bits=0)
    with pytest.raises(ValueError, match="arith"):
        accept.parallel_step(p, p, [-1, 0], [0, 1], np.zeros(2, np.uint32), arith="double")


@settings(max_examples=200, deadline=None)
@given(trees(), st.data())
def test_fast_walk_equals_literal_form(parents, data) -> None:
    """The decoder's root-walk gives the same decision as SPEC §3.2's literal form."""
    n = len(parents)
    acc = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    S = tree.structure(parents)
    a, b = accept._finish(S, acc), accept._finish_walk(S, acc)
    assert (a.last, a.path_mask, a.path) == (b.last, b.path_mask, b.path)
    assert a.chosen.tolist() == b.chosen.tolist() and a.on_path.tolist() == b.on_path.tolist()
    assert a.accept.tolist() == b.accept.tolist()
