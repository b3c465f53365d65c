"""Tests of golden.models: toy table, byte n-gram and synthetic-acceptance models."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from golden import models as M
from golden.draft import Model
from golden.models import (
    STDLIB_HELDOUT_FILES,
    STDLIB_TRAIN_FILES,
    NGramModel,
    SyntheticPair,
    TableModel,
    code_prompts,
    default_ngram_pair,
    ngram_pair,
    stdlib_corpus,
)

REPO = Path(__file__).resolve().parents[1]


def check_rows(p: np.ndarray, n: int, V: int) -> None:
    assert p.shape == (n, V)
    assert p.dtype == np.float64
    assert (p >= 0).all()
    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=0, atol=1e-9)


def acceptance(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    return np.minimum(p, q).sum(axis=1)


# --------------------------------------------------------------------------- shared models


@pytest.fixture(scope="module")
def small_corpus() -> bytes:
    return stdlib_corpus(("textwrap.py", "string.py", "json/decoder.py"))


@pytest.fixture(scope="module")
def small_ngram(small_corpus: bytes) -> NGramModel:
    return NGramModel.train(small_corpus, 4)


@pytest.fixture(scope="module")
def default_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, float, tuple]:
    cache = tmp_path_factory.mktemp("ngram_cache")
    t = time.perf_counter()
    pair = default_ngram_pair(cache_dir=cache)
    return cache, time.perf_counter() - t, pair


# --------------------------------------------------------------------------- TableModel


@pytest.mark.parametrize("order", [1, 2])
def test_table_rows_and_lookup(order: int) -> None:
    V = 4
    m = TableModel.random(V, seed=3, order=order, concentration=0.5)
    assert isinstance(m, Model)
    assert m.vocab_size == V and m.context_window == order
    ctxs = [[], [1], [2, 3], [0, 0, 3], [3, 1, 2, 0]]
    p = m.probs(ctxs)
    check_rows(p, len(ctxs), V)
    np.testing.assert_array_equal(p[0], m.table[-1])  # empty context: last row
    if order == 1:
        np.testing.assert_array_equal(p[2], m.table[3])
        np.testing.assert_array_equal(p[4], m.table[0])
    else:
        np.testing.assert_array_equal(p[1], m.table[1])  # [1] read as [0, 1]
        np.testing.assert_array_equal(p[2], m.table[2 * V + 3])
        np.testing.assert_array_equal(p[4], m.table[2 * V + 0])
    # numpy token arrays work too; deterministic
    np.testing.assert_array_equal(m.probs([np.array(c, dtype=np.int64) for c in ctxs]), p)
    m2 = TableModel.random(V, seed=3, order=order, concentration=0.5)
    np.testing.assert_array_equal(m2.table, m.table)
    assert m.probs([]).shape == (0, V)


def test_table_explicit() -> None:
    t = np.array([[0.5, 0.5], [1.0, 0.0], [0.25, 0.75]])
    m = TableModel(t)
    np.testing.assert_array_equal(m.probs([[0], [1], []]), t)
    with pytest.raises(ValueError):
        m.table[0, 0] = 1.0  # read-only copy


@pytest.mark.parametrize("order", [1, 2])
@pytest.mark.parametrize("prompt", [[], [2], [0, 1]])
def test_table_joint_chain_rule(order: int, prompt: list[int]) -> None:
    V, length = 3, 4
    m = TableModel.random(V, seed=7, order=order)
    j = m.joint(prompt, length)
    assert len(j) == V**length
    assert abs(sum(j.values()) - 1.0) < 1e-12
    rng = np.random.default_rng(0)
    for _ in range(10):
        seq = tuple(int(x) for x in rng.integers(0, V, length))
        ctx, want = list(prompt), 1.0
        for t in seq:
            want *= m.probs([ctx])[0, t]
            ctx.append(t)
        assert j[seq] == pytest.approx(want, rel=1e-12, abs=0)
    assert m.joint(prompt, 0) == {(): 1.0}
    one = m.joint(prompt, 1)
    np.testing.assert_allclose([one[(x,)] for x in range(V)], m.probs([prompt])[0], rtol=1e-15)


def test_table_errors() -> None:
    good = np.full((4, 3), 1 / 3)
    with pytest.raises(ValueError, match=r"table: shape \(3,\) must be"):
        TableModel(np.ones(3))
    with pytest.raises(ValueError, match=r"table: shape \(3, 3\) must be .*\(4, 3\)"):
        TableModel(good[:3])
    with pytest.raises(ValueError, match=r"table: shape \(4, 3\) must be .*\(10, 3\)"):
        TableModel(good, order=2)
    bad = good.copy()
    bad[2] = [1.5, -0.5, 0.0]
    with pytest.raises(ValueError, match="table: row 2 has a negative entry"):
        TableModel(bad)
    bad = good.copy()
    bad[1, 0] = np.nan
    with pytest.raises(ValueError, match="table: row 1 has a non-finite entry"):
        TableModel(bad)
    bad = good.copy()
    bad[3] = [0.5, 0.5, 0.5]
    with pytest.raises(ValueError, match="table: row 3 sums to 1.5"):
        TableModel(bad)
    for order in (0, 1.0, "1"):
        with pytest.raises(ValueError, match="order = "):
            TableModel(good, order=order)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="V = 0: must be an integer in 1 .. 131072"):
        TableModel.random(0, seed=1)
    with pytest.raises(ValueError, match=r"concentration = 0\.0: must be a finite number in \(0, "):
        TableModel.random(3, seed=1, concentration=0.0)
    with pytest.raises(ValueError, match="is too large"):
        TableModel.random(100, seed=1, order=4)
    m = TableModel(good)
    with pytest.raises(ValueError, match=r"contexts\[1\]\[2\] = 3: token out of range 0..2"):
        m.probs([[0], [0, 1, 3]])  # only the tail is read, but it is checked
    with pytest.raises(ValueError, match=r"contexts\[0\]\[0\] = -1: token out of range"):
        m.probs([[-1]])
    with pytest.raises(ValueError, match=r"contexts\[0\]\[0\] = 1.0: token must be an integer"):
        m.probs([[1.0]])
    with pytest.raises(ValueError, match=r"contexts\[0\] = 5: must be a sequence"):
        m.probs([5])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="contexts = 'ab': must be a list"):
        m.probs("ab")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"prompt\[1\] = 7: token out of range 0..2"):
        m.joint([0, 7], 2)
    with pytest.raises(ValueError, match="length = -1: must be an integer in 0 .. 1024"):
        m.joint([0], -1)
    with pytest.raises(ValueError, match="length = 13: V\\*\\*length"):
        m.joint([0], 13)
    with pytest.raises(ValueError, match="prompt = 'x'"):
        m.joint("x", 1)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- NGramModel


def reference_kn(data: bytes, order: int, D: float, tail: bytes) -> np.ndarray:
    """Interpolated Kneser-Ney written out the slow, obvious way."""
    grams = {m: Counter(data[i : i + m] for i in range(len(data) - m + 1)) for m in range(1, 9)}

    def level(k: int) -> dict[bytes, Counter]:
        out: dict[bytes, Counter] = {}
        if k == order - 1:
            for g, c in grams[k + 1].items():
                out.setdefault(g[:-1], Counter())[g[-1]] += c
        else:  # continuation counts: number of distinct bytes before h w
            for g in grams[k + 2]:
                out.setdefault(g[1:-1], Counter())[g[-1]] += 1
        return out

    p = np.full(256, 1 / 256)
    for k in range(len(tail) + 1):
        h = tail[len(tail) - k :]
        counts = level(k).get(h)
        if not counts:
            continue
        tot = sum(counts.values())
        new = p * D * len(counts) / tot
        for w, c in counts.items():
            new[w] += max(c - D, 0) / tot
        p = new
    return p / p.sum()


@pytest.mark.parametrize("order", [1, 2, 3, 4])
@pytest.mark.parametrize("D", [0.75, 1.0])
def test_ngram_matches_reference(order: int, D: float) -> None:
    data = b"abracadabra, cadabra; abra! barbara\nabc"
    m = NGramModel.train(data, order, discount=D)
    assert isinstance(m, Model)
    assert m.vocab_size == 256 and m.context_window == order - 1
    tails = [b"", b"a", b"ab", b"br", b"zz", b"rab", b"xab", b"a\nq"]
    got = m.probs([list(t) for t in tails])
    check_rows(got, len(tails), 256)
    for t, row in zip(tails, got, strict=True):
        want = reference_kn(data, order, D, t[-(order - 1) :] if order > 1 else b"")
        np.testing.assert_allclose(row, want, rtol=1e-12, atol=1e-15)


def test_ngram_full_support_and_rows(small_ngram: NGramModel) -> None:
    rng = np.random.default_rng(1)
    ctxs = [list(rng.integers(0, 256, int(n))) for n in rng.integers(0, 8, 50)]
    ctxs += code_prompts(30, 12, seed=5) + [[], [10], [0, 0, 0, 0, 0]]
    p = small_ngram.probs(ctxs)
    check_rows(p, len(ctxs), 256)
    assert (p > 0).all()
    # determinism: cached path, fresh model, and one context at a time all agree
    np.testing.assert_array_equal(small_ngram.probs(ctxs), p)
    fresh = NGramModel.train(stdlib_corpus(("textwrap.py", "string.py", "json/decoder.py")), 4)
    np.testing.assert_array_equal(fresh.probs(ctxs[::-1]), p[::-1])
    for i in (0, 7, 60):
        np.testing.assert_array_equal(fresh.probs([ctxs[i]])[0], p[i])
    # only the last order-1 tokens matter
    np.testing.assert_array_equal(small_ngram.probs([[1, 2, 3] + ctxs[55]])[0], p[55])


def test_ngram_cache_eviction(small_corpus: bytes) -> None:
    ref = NGramModel.train(small_corpus, 3)
    tiny = NGramModel.train(small_corpus, 3, cache_size=5)
    prompts = code_prompts(40, 6, seed=2)
    want = ref.probs(prompts)
    for k in range(0, 40, 3):  # batches smaller, equal and larger than the cache
        np.testing.assert_array_equal(tiny.probs(prompts[k : k + 3]), want[k : k + 3])
    np.testing.assert_array_equal(tiny.probs(prompts), want)
    np.testing.assert_array_equal(tiny.probs(prompts[:4] * 3), np.tile(want[:4], (3, 1)))
    assert len(tiny._index) <= 5


def test_ngram_order1_and_short_data() -> None:
    m = NGramModel.train(b"aab", 1)
    p = m.probs([[], [5, 6], [97]])
    assert np.all(p == p[0])
    m = NGramModel.train(b"x", 5)  # shorter than the order: lower levels only
    p = m.probs([[120, 120, 120, 120], []])
    check_rows(p, 2, 256)
    assert (p > 0).all()


def test_ngram_save_load(tmp_path: Path, small_ngram: NGramModel) -> None:
    path = tmp_path / "m.bin"
    small_ngram.save(path)
    assert path.is_file()  # no suffix added
    back = NGramModel.load(path)
    assert back == small_ngram
    assert back != NGramModel.train(b"other text", 4)
    ctxs = code_prompts(20, 10, seed=9)
    np.testing.assert_array_equal(back.probs(ctxs), small_ngram.probs(ctxs))
    assert "order=4" in repr(back)
    # a file of another kind
    np.savez(tmp_path / "x.npz", a=np.zeros(3))
    with pytest.raises(ValueError, match="not an NGramModel file"):
        NGramModel.load(tmp_path / "x.npz")
    np.savez(tmp_path / "y.npz", format=np.array(1), order=np.array(2))
    with pytest.raises(ValueError, match="incomplete NGramModel file"):
        NGramModel.load(tmp_path / "y.npz")


def test_ngram_errors(small_ngram: NGramModel) -> None:
    for order in (0, 8, 2.0):
        with pytest.raises(ValueError, match="order = "):
            NGramModel.train(b"abc", order)  # type: ignore[arg-type]
    for d in (0.0, -1, 1.5, float("nan"), "x"):
        with pytest.raises(ValueError, match="discount = "):
            NGramModel.train(b"abc", 2, discount=d)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="data: empty"):
        NGramModel.train(b"", 2)
    with pytest.raises(ValueError, match="data: must be bytes"):
        NGramModel.train("abc", 2)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="cache_size = 0"):
        NGramModel.train(b"abc", 2, cache_size=0)
    m = small_ngram
    m.probs([[1, 2, 3]])  # cached: a bad token must still be caught on the hot path
    ctxs = [[0], [1], [2], [1, 2, 3, 4, 300, 5]]
    with pytest.raises(ValueError, match=r"^contexts\[3\]\[4\] = 300: token out of range 0..255$"):
        m.probs(ctxs)
    with pytest.raises(ValueError, match=r"contexts\[0\]\[2\] = -1: token out of range 0..255"):
        m.probs([[1, 2, -1]])
    with pytest.raises(ValueError, match=r"contexts\[1\]\[0\] = 1.5: token must be an integer"):
        m.probs([[1], [1.5]])
    with pytest.raises(ValueError, match=r"contexts\[0\] = 'abc': must be a sequence"):
        m.probs(["abc"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match=r"contexts\[1\] = None"):
        m.probs([[1], None])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="contexts = 3: must be a list"):
        m.probs(3)  # type: ignore[arg-type]


def test_ngram_cached_rows_are_stable(small_ngram: NGramModel) -> None:
    """The row cache (the hot path; timed in ``make bench``) returns what was computed."""
    ctxs = code_prompts(64, 30, seed=4)
    want = small_ngram.probs(ctxs)
    for _ in range(3):
        np.testing.assert_array_equal(small_ngram.probs(ctxs), want)


# --------------------------------------------------------------------------- corpus


def test_corpus_files() -> None:
    assert not set(STDLIB_TRAIN_FILES) & set(STDLIB_HELDOUT_FILES)
    train = stdlib_corpus()
    held = stdlib_corpus(STDLIB_HELDOUT_FILES)
    assert 1_000_000 < len(train) < 3_000_000
    assert len(held) > 100_000
    assert b"def " in train and b"def " in held
    assert stdlib_corpus(("string.py",)) == (M.stdlib_dir() / "string.py").read_bytes()


def test_corpus_errors() -> None:
    with pytest.raises(FileNotFoundError, match=r"files\[1\] = 'no_such_module.py': not found"):
        stdlib_corpus(("string.py", "no_such_module.py"))
    with pytest.raises(ValueError, match="must name at least one file"):
        stdlib_corpus(())
    with pytest.raises(ValueError, match=r"files\[0\] = '/etc/passwd': must be a path relative"):
        stdlib_corpus(("/etc/passwd",))
    with pytest.raises(ValueError, match=r"files\[0\] = '../x.py'"):
        stdlib_corpus(("../x.py",))
    with pytest.raises(ValueError, match="files = 'string.py': must be a sequence"):
        stdlib_corpus("string.py")  # type: ignore[arg-type]


def test_code_prompts() -> None:
    held = stdlib_corpus(STDLIB_HELDOUT_FILES)
    ps = code_prompts(25, 32, seed=11)
    assert ps == code_prompts(25, 32, seed=11)
    assert ps != code_prompts(25, 32, seed=12)
    assert len(ps) == 25 and all(len(p) == 32 for p in ps)
    assert len({tuple(p) for p in ps}) > 20
    for p in ps:
        b = bytes(p)
        assert b[0] != ord("\n")
        assert held.startswith(b) or b"\n" + b in held  # starts at a line start
    assert code_prompts(0, 5, seed=1) == []
    with pytest.raises(ValueError, match="n = -1: must be an integer in 0 .. 1048576"):
        code_prompts(-1, 5, seed=1)
    with pytest.raises(ValueError, match="length = 0: must be an integer >= 1"):
        code_prompts(3, 0, seed=1)
    with pytest.raises(ValueError, match="length = 10000000: longer than"):
        code_prompts(3, 10_000_000, seed=1)


# --------------------------------------------------------------------------- default pair


def test_default_pair_quality(default_pair: tuple) -> None:
    _, _, (target, draft) = default_pair
    assert target.order == 6 and draft.order == 4
    held = np.frombuffer(stdlib_corpus(STDLIB_HELDOUT_FILES), dtype=np.uint8)
    pos = np.random.default_rng(0).choice(np.arange(8, held.size), 1500, replace=False)
    ctxs = [held[i - 7 : i].tolist() for i in pos]
    p, q = target.probs(ctxs), draft.probs(ctxs)
    check_rows(p, len(ctxs), 256)
    assert (p > 0).all() and (q > 0).all()
    ll_p = np.log(p[np.arange(pos.size), held[pos]]).mean()
    ll_q = np.log(q[np.arange(pos.size), held[pos]]).mean()
    assert ll_p > ll_q + 0.05  # nats/byte: the higher order fits code better
    alpha = acceptance(p, q).mean()
    assert 0.7 < alpha < 0.88  # documented: 0.79


def test_default_pair_cache(default_pair: tuple, monkeypatch: pytest.MonkeyPatch) -> None:
    cache, _, (target, draft) = default_pair
    files = sorted(cache.glob("ngram_*.npz"))
    assert len(files) == 2
    mtimes = [f.stat().st_mtime_ns for f in files]

    def no_training(*args: object, **kwargs: object) -> NGramModel:
        raise AssertionError("retrained although cached")

    monkeypatch.setattr(NGramModel, "train", no_training)
    t2, d2 = default_ngram_pair(cache_dir=cache)
    assert t2 == target and d2 == draft
    assert [f.stat().st_mtime_ns for f in sorted(cache.glob("ngram_*.npz"))] == mtimes
    assert not list(cache.glob("*.tmp"))


def test_default_pair_fresh_process(default_pair: tuple) -> None:
    cache = default_pair[0]
    code = (
        "import time; t = time.perf_counter()\n"
        "from golden.models import default_ngram_pair, NGramModel\n"
        "NGramModel.train = None  # loading must not train\n"
        "t0 = time.perf_counter(); default_ngram_pair(); print(time.perf_counter() - t0)\n"
    )
    env = dict(os.environ, SPECDECODE_CACHE=str(cache))
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True, check=True
    )
    float(out.stdout)  # it ran to the end without training (load time: see make bench)


def test_cache_key_and_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    files, corpus = ("a.py",), b"abc"
    k = ngram_pair._cache_key(files, corpus, 6, 0.75)
    assert k == ngram_pair._cache_key(files, corpus, 6, 0.75)
    others = {
        ngram_pair._cache_key(("b.py",), corpus, 6, 0.75),
        ngram_pair._cache_key(files, b"abd", 6, 0.75),
        ngram_pair._cache_key(files, corpus, 5, 0.75),
        ngram_pair._cache_key(files, corpus, 6, 0.7),
    }
    assert k not in others and len(others) == 4
    monkeypatch.setenv("SPECDECODE_CACHE", "/some/where")
    assert M.default_cache_dir() == Path("/some/where")
    monkeypatch.delenv("SPECDECODE_CACHE")
    assert M.default_cache_dir() == REPO / "build" / "cache"


def test_default_pair_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="draft_order = 6: must be lower than target_order = 6"):
        default_ngram_pair(target_order=6, draft_order=6, cache_dir=tmp_path)
    with pytest.raises(ValueError, match="target_order = 8: must be an integer in 2 .. 7"):
        default_ngram_pair(target_order=8, cache_dir=tmp_path)
    with pytest.raises(ValueError, match="draft_order = 0: must be an integer in 1 .. 7"):
        default_ngram_pair(draft_order=0, cache_dir=tmp_path)
    with pytest.raises(ValueError, match="discount = 2"):
        default_ngram_pair(discount=2, cache_dir=tmp_path)
    assert not list(tmp_path.iterdir())


def test_corrupt_cache_file_is_retrained(tmp_path: Path) -> None:
    corpus = stdlib_corpus(("string.py",))
    path_model = ngram_pair._cached_ngram(("string.py",), corpus, 2, 0.75, tmp_path)
    (f,) = tmp_path.glob("*.npz")
    f.write_bytes(b"garbage")
    again = ngram_pair._cached_ngram(("string.py",), corpus, 2, 0.75, tmp_path)
    assert again == path_model
    assert NGramModel.load(f) == path_model


# --------------------------------------------------------------------------- SyntheticPair


@pytest.mark.parametrize("V", [2, 3, 257, 32000])
@pytest.mark.parametrize("alpha", [0.0, 0.3, 0.9, 1.0])
def test_synthetic_acceptance_exact(V: int, alpha: float) -> None:
    pair = SyntheticPair(V, alpha, seed=V)
    assert pair.alpha == alpha and pair.vocab_size == V
    rng = np.random.default_rng(V)
    n = 64 if V < 32000 else 16
    ctxs = [rng.integers(0, V, int(k)).tolist() for k in rng.integers(0, 6, n)]
    p, q = pair.target.probs(ctxs), pair.draft.probs(ctxs)
    check_rows(p, n, V)
    check_rows(q, n, V)
    np.testing.assert_allclose(acceptance(p, q), alpha, rtol=0, atol=1e-12)
    d = p - q  # (1 - alpha) * (onehot(a) - onehot(b)), a != b
    np.testing.assert_allclose(d.max(axis=1), 1 - alpha, rtol=0, atol=1e-15)
    np.testing.assert_allclose(d.min(axis=1), alpha - 1, rtol=0, atol=1e-15)
    if alpha < 1:
        assert (d.argmax(axis=1) != d.argmin(axis=1)).all()
    else:
        np.testing.assert_array_equal(p, q)


def test_synthetic_largest_vocab() -> None:
    V = 131072
    pair = SyntheticPair(V, 0.3, seed=5)
    ctxs = [[], [V - 1], [0, V - 1, 17], [5, 5]]
    p, q = pair.target.probs(ctxs), pair.draft.probs(ctxs)
    check_rows(p, 4, V)
    assert (q > 0).all()  # full support whenever alpha > 0
    np.testing.assert_allclose(acceptance(p, q), 0.3, rtol=0, atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(
    V=st.integers(2, 3000),
    alpha=st.floats(0.0, 1.0),
    seed=st.integers(-(2**63), 2**64 - 1),
    zipf=st.floats(0.0, 3.0),
    data=st.data(),
)
def test_synthetic_acceptance_property(
    V: int, alpha: float, seed: int, zipf: float, data: st.DataObject
) -> None:
    ctxs = data.draw(st.lists(st.lists(st.integers(0, V - 1), max_size=5), min_size=1, max_size=8))
    pair = SyntheticPair(V, alpha, seed=seed, zipf=zipf)
    p, q = pair.target.probs(ctxs), pair.draft.probs(ctxs)
    check_rows(p, len(ctxs), V)
    check_rows(q, len(ctxs), V)
    np.testing.assert_allclose(acceptance(p, q), alpha, rtol=0, atol=1e-12)


def test_synthetic_context_dependence() -> None:
    V = 1000
    pair = SyntheticPair(V, 0.5, seed=1)
    assert isinstance(pair.target, Model) and isinstance(pair.draft, Model)
    assert pair.target.context_window == 2 and pair.draft.context_window == 2
    ctxs = [[i, j] for i in range(8) for j in range(8)]
    p = pair.target.probs(ctxs)
    assert len({int(a) for a in p.argmax(axis=1)}) > 50  # peaks vary with the context
    assert len({tuple(np.flatnonzero(r == r.max())) for r in p}) > 50
    # deterministic; only the last two tokens are read
    np.testing.assert_array_equal(pair.target.probs(ctxs), p)
    np.testing.assert_array_equal(SyntheticPair(V, 0.5, seed=1).target.probs(ctxs), p)
    np.testing.assert_array_equal(pair.target.probs([[9, 9] + c for c in ctxs]), p)
    assert not np.array_equal(SyntheticPair(V, 0.5, seed=2).target.probs(ctxs), p)
    # short contexts differ from each other and from longer ones
    short = pair.target.probs([[], [0], [0, 0]])
    assert not np.array_equal(short[0], short[1]) and not np.array_equal(short[1], short[2])
    # p - 0.5 * onehot(peak) is 0.5 * (rotated Zipf): its sorted values do not depend on it
    s0 = np.arange(1, V + 1) ** -1.1
    s0 /= s0.sum()
    for row in pair.target.probs([[3, 4], [], [999, 0]]):
        s = row.copy()
        s[row.argmax()] -= 0.5
        np.testing.assert_allclose(np.sort(s)[::-1], 0.5 * s0, rtol=1e-9, atol=1e-15)


def test_synthetic_errors() -> None:
    for V in (1, 131073, 2.0, True, "8"):
        with pytest.raises(ValueError, match="vocab_size = "):
            SyntheticPair(V, 0.5)  # type: ignore[arg-type]
    for a in (-0.1, 1.1, float("nan"), "x", None):
        with pytest.raises(ValueError, match="alpha = "):
            SyntheticPair(16, a)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="vocab_size = 1: must be an integer in 2 .. 131072"):
        SyntheticPair(1, 0.5)
    with pytest.raises(ValueError, match=r"alpha = 1.5: must be a finite number in \[0, 1\]"):
        SyntheticPair(4, 1.5)
    for z in (-1.0, float("inf"), "z"):
        with pytest.raises(ValueError, match="zipf = "):
            SyntheticPair(16, 0.5, zipf=z)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="seed = "):
        SyntheticPair(16, 0.5, seed=2**64)
    pair = SyntheticPair(16, 0.5)
    with pytest.raises(ValueError, match=r"^contexts\[1\]\[3\] = 16: token out of range 0..15$"):
        pair.draft.probs([[1], [0, 0, 1, 16]])
    with pytest.raises(ValueError, match=r"contexts\[0\]\[0\] = -1: token out of range"):
        pair.target.probs([[-1]])
    with pytest.raises(ValueError, match=r"contexts\[0\]\[1\] = 0.5: token must be an integer"):
        pair.target.probs([[1, 0.5]])
    with pytest.raises(ValueError, match="contexts = None"):
        pair.target.probs(None)  # type: ignore[arg-type]
    assert pair.target.probs([]).shape == (0, 16)
    assert pair.target.probs([[0, 0, 0, 0, 99]][:0]).shape == (0, 16)
    # out-of-range tokens before the last two are not read
    pair.target.probs([[99, 0, 1]])
