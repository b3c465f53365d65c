"""The decoder's fast path: ``probs_tails``, tree plans, the acceptance walk.

Every fast path must give exactly (bit for bit) what the plain path gives:
``probs_tails`` what ``probs`` gives, the decoder with ``probs_tails`` what it
gives for a model without it, :func:`golden.accept.walk_step` what
:func:`golden.accept.parallel_step` gives.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from golden import accept, trees
from golden import plan as P
from golden.batch import speculative_generate_batch
from golden.decoder import speculative_generate
from golden.draft import draw_tree
from golden.models import (
    NGramModel,
    SyntheticPair,
    TableModel,
    code_prompts,
    default_ngram_pair,
    stdlib_corpus,
    tails_matrix,
)
from tests.strategies import trees as tree_st
from tests.test_accept import random_step


class ListsOnly:
    """A model seen through ``probs`` only (no ``probs_tails``): the decoder's slow path."""

    def __init__(self, model, window: bool = True) -> None:
        self._m = model
        self.vocab_size = model.vocab_size
        if window:
            self.context_window = model.context_window
        self.calls = 0

    def probs(self, contexts):
        self.calls += 1
        return self._m.probs(contexts)


@pytest.fixture(scope="module")
def ngram_pair() -> tuple[NGramModel, NGramModel]:
    return default_ngram_pair()


def random_contexts(rng: np.random.Generator, n: int, window: int, V: int) -> list[list[int]]:
    """Contexts of every length up to past the window; for bytes, mostly real code."""
    text = np.frombuffer(stdlib_corpus(("csv.py",)), dtype=np.uint8)
    out = []
    for _ in range(n):
        length = int(rng.integers(0, window + 3))
        if V == 256 and rng.random() < 0.7:
            s = int(rng.integers(0, text.size - length))
            out.append(text[s : s + length].tolist())
        else:
            out.append(rng.integers(0, V, length).tolist())
    return out


# ----------------------------------------------------------------------------- probs_tails


def test_tails_matrix() -> None:
    got = tails_matrix([[], [5], [1, 2, 3], [7, 8, 9, 10]], 3)
    assert got.dtype == np.int64
    assert got.tolist() == [[-1, -1, -1], [-1, -1, 5], [1, 2, 3], [8, 9, 10]]
    assert tails_matrix([[1, 2], []], 0).shape == (2, 0)
    with pytest.raises(ValueError, match="window = -1"):
        tails_matrix([[1]], -1)
    with pytest.raises(ValueError, match=r"contexts\[1\] = 3"):
        tails_matrix([[1], 3], 2)  # type: ignore[list-item]


@pytest.mark.parametrize("order", [1, 2, 4, 6])
def test_ngram_probs_tails_equals_probs(order: int) -> None:
    """Every miss path (one row, two rows, vectorised) and the cached rows, bit for bit."""
    data = stdlib_corpus(("textwrap.py", "string.py"))
    ref = NGramModel.train(data, order)
    rng = np.random.default_rng(order)
    ctxs = random_contexts(rng, 400, ref.context_window, 256)
    want = ref.probs(ctxs)
    tails = tails_matrix(ctxs, ref.context_window)
    for step in (1, 2, 3, 64, 400):
        m = NGramModel(ref.order, ref.discount, ref._levels)
        for k in range(0, len(ctxs), step):
            got = m.probs_tails(tails[k : k + step])
            assert got.dtype == np.float64
            assert got.tobytes() == want[k : k + step].tobytes()
        assert m.probs_tails(tails).tobytes() == want.tobytes()  # now all cached
    # probs and probs_tails share the cache and agree either way round
    m = NGramModel(ref.order, ref.discount, ref._levels)
    assert m.probs_tails(tails[:50]).tobytes() == want[:50].tobytes()
    assert m.probs(ctxs[:100]).tobytes() == want[:100].tobytes()


def test_ngram_probs_tails_cdf() -> None:
    """``probs_tails_cdf``: the rows and exactly the CDF an inverse-CDF sampler computes."""
    data = stdlib_corpus(("textwrap.py",))
    rng = np.random.default_rng(3)
    for cache_size in (1 << 15, 7):
        m = NGramModel.train(data, 4, cache_size=cache_size)
        ctxs = random_contexts(rng, 200, 3, 256)
        tails = tails_matrix(ctxs, 3)
        want = m.probs(ctxs)
        cdf = np.cumsum(want, axis=1)
        cdf /= cdf[:, -1:]
        for step in (1, 5, 40, 200):
            for k in range(0, len(ctxs), step):
                p, c = m.probs_tails_cdf(tails[k : k + step])
                assert p.tobytes() == want[k : k + step].tobytes()
                assert c.tobytes() == cdf[k : k + step].tobytes()
                c += 1.0  # new arrays: the cache is untouched
        p, c = m.probs_tails_cdf(np.tile(tails[:3], (2, 1)))
        assert c.tobytes() == np.tile(cdf[:3], (2, 1)).tobytes()


def test_ngram_cache_keys_check_tokens() -> None:
    """The cache is keyed by ``bytes(tail)``: other context types are read token by token."""
    m = NGramModel.train(b"abracadabra", 3)
    want = m.probs([[97, 98]])
    for ctx in (np.array([97, 98], dtype=np.int8), np.array([1, 97, 98]), (97, 98)):
        assert m.probs([ctx]).tobytes() == want.tobytes()
    assert m.probs([[np.int64(97), 98]]).tobytes() == want.tobytes()
    with pytest.raises(ValueError, match=r"contexts\[0\]\[1\] = -1: token out of range"):
        m.probs([np.array([97, -1], dtype=np.int8)])
    with pytest.raises(ValueError, match=r"contexts\[0\]\[1\] = 98.0: token must be an integer"):
        m.probs([[97, 98.0]])  # even though [97, 98] is cached


def test_ngram_probs_tails_cache_eviction() -> None:
    data = stdlib_corpus(("textwrap.py",))
    ref = NGramModel.train(data, 4)
    tiny = NGramModel.train(data, 4, cache_size=5)
    ctxs = code_prompts(40, 6, seed=2)
    want = ref.probs(ctxs)
    tails = tails_matrix(ctxs, 3)
    for k in range(0, 40, 3):  # batches smaller, equal and larger than the cache
        assert tiny.probs_tails(tails[k : k + 3]).tobytes() == want[k : k + 3].tobytes()
        assert tiny.probs(ctxs[k : k + 4]).tobytes() == want[k : k + 4].tobytes()
    assert tiny.probs_tails(tails).tobytes() == want.tobytes()
    assert (
        tiny.probs_tails(np.tile(tails[:4], (3, 1))).tobytes()
        == np.tile(want[:4], (3, 1)).tobytes()
    )
    assert tiny._n_rows <= 5


def test_table_and_synthetic_probs_tails_equal_probs() -> None:
    rng = np.random.default_rng(0)
    pair = SyntheticPair(500, 0.7, seed=4)
    models = [TableModel.random(4, 1, order=o) for o in (1, 2, 3)] + [pair.target, pair.draft]
    for m in models:
        ctxs = random_contexts(rng, 300, m.context_window, m.vocab_size)
        got = m.probs_tails(tails_matrix(ctxs, m.context_window))
        assert got.tobytes() == np.asarray(m.probs(ctxs)).tobytes()


@pytest.mark.parametrize(
    "model",
    [
        NGramModel.train(b"abracadabra", 3),
        TableModel.random(5, 1, order=2),
        SyntheticPair(7, 0.5).target,
    ],
    ids=["ngram", "table", "synthetic"],
)
def test_probs_tails_invalid(model) -> None:
    V = model.vocab_size
    model.probs_tails(np.array([[-1, 3]]))  # cached: bad rows must still be caught
    with pytest.raises(ValueError, match=r"tails has shape \(2,\)"):
        model.probs_tails(np.array([1, 2]))
    with pytest.raises(ValueError, match=r"tails has shape \(1, 3\)"):
        model.probs_tails(np.array([[1, 2, 3]]))
    with pytest.raises(ValueError, match="tails must hold integers"):
        model.probs_tails(np.array([[1.0, 2.0]]))
    with pytest.raises(ValueError, match=rf"tails\[1\]\[0\] = {V}: token out of range"):
        model.probs_tails(np.array([[1, 2], [V, 1]]))
    with pytest.raises(ValueError, match=r"tails\[0\]\[1\] = -2: token out of range"):
        model.probs_tails(np.array([[1, -2]]))
    with pytest.raises(ValueError, match=r"tails\[0\]\[1\] = -1 after a token"):
        model.probs_tails(np.array([[3, -1]]))
    with pytest.raises(ValueError, match=r"tails\[2\]\[1\] = -1 after a token"):
        model.probs_tails(np.array([[1, 2], [0, 1], [3, -1]]))
    with pytest.raises(ValueError, match=r"tails\[40\]\[1\] = -1 after a token"):
        model.probs_tails(np.array([[1, 2]] * 40 + [[3, -1]]))  # the vectorised path


# ----------------------------------------------------------------------------- plans


@settings(max_examples=60, deadline=None)
@given(tree_st(max_nodes=40), st.integers(0, 7), st.integers(0, 9), st.integers(0, 2**32))
def test_plan_gathers_are_the_context_tails(parents, window, prompt_len, seed) -> None:
    """``vec[gathers.full]`` is the tails matrix of every node's context (prompt + path)."""
    rng = np.random.default_rng(seed)
    pl = P.plan(parents)
    prompt = rng.integers(0, 50, prompt_len).tolist()
    tok = rng.integers(50, 100, pl.n)
    tail = tails_matrix([prompt], window)[0]
    vec = np.concatenate((tail, tok))
    g = pl.gathers(window)
    contexts = [prompt + tok[list(path)].tolist() for path in pl.structure.paths]
    want = tails_matrix(contexts, window)
    assert vec[g.full].tolist() == want.tolist()
    assert vec[g.order].tolist() == want[pl.order].tolist()
    for lv, idx in zip(pl.levels, g.levels, strict=True):
        assert vec[idx].tolist() == want[lv.nodes].tolist()
    # internal nodes: most children first; rank j's rows are a prefix
    ch = pl.structure.children
    counts = [len(ch[a]) for a in pl.order.tolist()]
    assert counts == sorted(counts, reverse=True)
    for j, grp in enumerate(pl.ranks):
        assert grp.kids.tolist() == [ch[a][j] for a in pl.order[: grp.count].tolist()]
    assert P.plan(list(parents)) is pl


def test_plan_invalid() -> None:
    with pytest.raises(ValueError, match=r"parents\[2\] = 2"):
        P.plan([-1, 0, 2])
    with pytest.raises(ValueError, match=r"parents\[0\] = \[-1\]: must be an integer"):
        P.plan([[-1]])  # type: ignore[list-item]


# ----------------------------------------------------------------------------- walk


@settings(max_examples=250, deadline=None)
@given(
    tree_st(max_nodes=24),
    st.integers(0, 2**32),
    st.integers(2, 12),
    st.sampled_from(["iid", "swor", "topk"]),
    st.sampled_from(["float", "fixed"]),
    st.booleans(),
    st.booleans(),
)
def test_walk_equals_parallel(parents, seed, V, children, arith, sparse, greedy) -> None:
    """The decoder's walk (SPEC §3.1 on a plan) emits what the parallel form emits."""
    p, q, tok, lane_out = random_step(seed, parents, V, children, sparse)
    kw = dict(children=children, arith=arith, greedy=greedy)
    par_tokens, d = accept.parallel_step(p, q, parents, tok, lane_out, **kw)
    tokens, path = accept.walk_step(
        P.plan(parents),
        lambda j: p[j],
        lambda j: q[j],
        tok.tolist(),
        lane_out,
        prob_bits=16,
        rand_bits=16,
        weight_bits=16,
        **kw,
    )
    assert tokens == par_tokens
    assert path == d.path


def test_walk_reads_only_visited_rows() -> None:
    parents = trees.full_tree([3, 3])
    V = 5
    p = np.full((len(parents), V), 1.0 / V)
    visited: list[int] = []

    def p_row(j: int) -> np.ndarray:
        visited.append(j)
        return p[j]

    tok = [0, 1, 2, 3] + [0] * 9
    lane_out = np.zeros(len(parents), dtype=np.uint32)  # U = 0: the first child is accepted
    kw = dict(children="iid", arith="fixed", greedy=False, prob_bits=16, rand_bits=16)
    emitted, path = accept.walk_step(
        P.plan(parents), p_row, lambda j: p[j], tok, lane_out, weight_bits=16, **kw
    )
    assert path == [0, 1, 4] and visited == [0, 1, 4]
    assert emitted[:2] == [1, 0]


# ----------------------------------------------------------------------------- decoder


def same(a, b) -> None:
    assert a.tokens == b.tokens and a.accepted == b.accepted
    assert [(s.parents, s.tokens, s.path, s.emitted) for s in a.steps] == [
        (s.parents, s.tokens, s.path, s.emitted) for s in b.steps
    ]


@pytest.mark.parametrize("mode", ["sample", "greedy"])
@pytest.mark.parametrize("arith", ["float", "fixed"])
@pytest.mark.parametrize("children", ["iid", "swor", "topk"])
def test_decoder_fast_equals_slow_ngram(ngram_pair, children: str, arith: str, mode: str) -> None:
    target, draft = ngram_pair
    seq, _ = trees.sequoia_tree([0.55, 0.2, 0.1, 0.05], 64, 6)
    prompts = code_prompts(2, 30, seed=11) + [[], [10]]
    for tree in (seq, trees.full_tree([3, 4, 4]), trees.chain(3), [-1]):
        for i, prompt in enumerate(prompts):
            kw = dict(tree=tree, children=children, arith=arith, mode=mode, seed=i)
            fast = speculative_generate(target, draft, prompt, 25, **kw)
            slow = speculative_generate(ListsOnly(target), ListsOnly(draft), prompt, 25, **kw)
            same(fast, slow)


def test_decoder_fast_equals_slow_mixed_and_policies(ngram_pair) -> None:
    """Fast target with slow draft and back; no context_window at all; dynamic policies."""
    target, draft = ngram_pair
    prompt = code_prompts(1, 20, seed=5)[0]
    tree = trees.full_tree([2, 3])
    ref = speculative_generate(target, draft, prompt, 40, tree=tree, seed=3)
    for t, d in (
        (ListsOnly(target), draft),
        (target, ListsOnly(draft)),
        (ListsOnly(target, window=False), ListsOnly(draft, window=False)),
    ):
        same(speculative_generate(t, d, prompt, 40, tree=tree, seed=3), ref)
    for policy, children in (
        (lambda: trees.Eagle2Tree(24, 5, 3), "topk"),
        (lambda: trees.AdaptiveSequoia(24, 5, [0.5, 0.2], update_every=2), "iid"),
    ):
        kw = dict(children=children, arith="fixed", seed=1)
        fast = speculative_generate(target, draft, prompt, 40, tree=policy(), **kw)
        slow = speculative_generate(
            ListsOnly(target), ListsOnly(draft), prompt, 40, tree=policy(), **kw
        )
        same(fast, slow)


def test_decoder_fast_equals_slow_pruned_trees() -> None:
    """Drafts with zeros prune swor/topk children: renumbered trees take the same path."""
    rng = np.random.default_rng(0)
    tables = []
    for _ in range(2):
        t = rng.dirichlet(np.full(6, 0.3), size=7)
        t[rng.random(t.shape) < 0.4] = 0.0
        t[np.arange(7), rng.integers(0, 6, 7)] += 0.1
        tables.append(TableModel(t / t.sum(axis=1, keepdims=True)))
    target, draft = tables
    for children in ("swor", "topk"):
        for arith in ("float", "fixed"):
            kw = dict(tree=trees.full_tree([3, 4, 4]), children=children, arith=arith, seed=2)
            fast = speculative_generate(target, draft, [1, 2], 40, **kw)
            slow = speculative_generate(ListsOnly(target), ListsOnly(draft), [1, 2], 40, **kw)
            same(fast, slow)
            assert any(len(s.parents) < 64 for s in fast.steps) or children == "topk"


def test_draw_tree_fast_equals_slow(ngram_pair) -> None:
    _, draft = ngram_pair
    seq, _ = trees.sequoia_tree([0.55, 0.2, 0.1, 0.05], 64, 6)
    for children in ("iid", "swor", "topk"):
        for ctx in ([], [1], code_prompts(1, 9, seed=1)[0]):
            a = draw_tree(seq, draft, ctx, children, np.random.default_rng(4))
            b = draw_tree(seq, ListsOnly(draft), ctx, children, np.random.default_rng(4))
            assert a.parents == b.parents
            assert a.tokens.tolist() == b.tokens.tolist()
            assert a.q.tobytes() == b.q.tobytes()
            assert a.q_index.tolist() == b.q_index.tolist()


def test_synthetic_fast_equals_slow() -> None:
    pair = SyntheticPair(3000, 0.8, seed=1)
    seq, _ = trees.sequoia_tree([0.55, 0.2, 0.1, 0.05], 64, 6)
    for arith in ("float", "fixed"):
        kw = dict(tree=seq, arith=arith, seed=5, max_steps=8)
        fast = speculative_generate(pair.target, pair.draft, [1, 2, 3], 10**6, **kw)
        slow = speculative_generate(
            ListsOnly(pair.target), ListsOnly(pair.draft), [1, 2, 3], 10**6, **kw
        )
        same(fast, slow)


@pytest.mark.parametrize("children", ["iid", "swor", "topk"])
def test_batch_fast_equals_slow(ngram_pair, children: str) -> None:
    target, draft = ngram_pair
    prompts = code_prompts(3, 20, seed=8) + [[]]
    for tree in (trees.full_tree([3, 4, 4]), trees.sequoia_tree([0.5, 0.2, 0.1], 24, 5)[0]):
        for arith in ("float", "fixed"):
            kw = dict(
                tree=tree, children=children, arith=arith, seeds=[4, 5, 6, 7], keep_steps=True
            )
            fast = speculative_generate_batch(target, draft, prompts, 20, **kw)
            slow = speculative_generate_batch(
                ListsOnly(target), ListsOnly(draft), prompts, 20, **kw
            )
            for a, b in zip(fast, slow, strict=True):
                same(a, b)
