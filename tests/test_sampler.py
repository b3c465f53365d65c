"""golden.sampler (SPEC §3.5) against a plain cumulative-sum search."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from golden.sampler import (
    quantize,
    quantize_weights,
    sample_float,
    sample_weights,
    select_one_pass,
)


def plain(weights: list[int], u: int) -> int:
    total = sum(weights)
    thr = (u * total) >> 32
    acc = 0
    for v, w in enumerate(weights):
        acc += w
        if acc > thr:
            return v
    raise AssertionError("unreachable")


@given(
    st.lists(st.integers(0, 2**16 - 1), min_size=1, max_size=300),
    st.integers(0, 2**32 - 1),
)
def test_matches_cumsum_search(weights: list[int], u: int) -> None:
    assume(sum(weights) > 0)
    v = sample_weights(weights, u, weight_bits=16)
    assert v == plain(weights, u)
    assert weights[v] > 0


@given(st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=50), st.integers(0, 2**32 - 1))
def test_wide_weights(weights: list[int], u: int) -> None:
    assume(sum(weights) > 0)
    assert sample_weights(np.array(weights, dtype=np.int64), u) == plain(weights, u)


def test_corners() -> None:
    assert sample_weights([5], 0) == 0
    assert sample_weights([5], 2**32 - 1) == 0
    assert sample_weights([0, 0, 7, 0], 12345) == 2
    assert sample_weights([1, 1], 0) == 0
    assert sample_weights([1, 1], 2**31 - 1) == 0
    assert sample_weights([1, 1], 2**31) == 1
    assert sample_weights([3, 0, 0, 1], 2**32 - 1) == 3


@pytest.mark.parametrize(
    "weights, u, match",
    [
        ([0, 0, 0], 1, "total == 0"),
        ([], 1, "must be a non-empty sequence"),
        ([1, -2], 1, r"weights\[1\] = -2"),
        ([1, 2**16], 1, r"weights\[1\] = 65536"),
        ([1.5, 2.0], 1, r"weights\[0\] = 1.5: must be an integer"),
        ([1, 2], -1, "u32"),
        ([1, 2], 2**32, "u32"),
    ],
)
def test_invalid(weights, u, match) -> None:
    with pytest.raises(ValueError, match=match):
        sample_weights(weights, u, weight_bits=16)


def test_quantize() -> None:
    assert quantize(np.array([0.0, 1.0, 0.5, 1e-9, -0.1]), 16).tolist() == [0, 65535, 32768, 0, 0]
    assert quantize(0.5 / 65536, 16) == 1  # round half up
    w = quantize_weights(np.array([1.0, 3.0, 0.0]), 16)
    assert w.tolist() == [16384, 49152, 0]
    assert quantize_weights(np.zeros(3)).tolist() == [0, 0, 0]
    with pytest.raises(ValueError, match="bits"):
        quantize(0.5, 0)


@given(st.lists(st.floats(0, 1), min_size=1, max_size=50), st.floats(0, 1, exclude_max=True))
def test_sample_float(dist: list[float], u: float) -> None:
    d = np.array(dist)
    assume(d.sum() > 0)
    v = sample_float(d, u)
    assert d[v] > 0
    cum = np.cumsum(d)
    assert v == len(d) - 1 or cum[v] > u * cum[-1] or d[v + 1 :].sum() == 0


@given(
    st.lists(st.integers(0, 2**16 - 1), min_size=1, max_size=60),
    st.integers(0, 2**32 - 1),
    st.integers(1, 2**22),
)
def test_one_pass_matches_a_scan(weights: list[int], u: int, total: int) -> None:
    """spec §3.12 against a plain scan, with the stored total as given (equal to the
    stream's sum or not): the first prefix above ``(u * total) >> 32``, or invalid."""
    thr, acc = (u * total) >> 32, 0
    want = None
    for v, w in enumerate(weights):
        acc += w
        if acc > thr:
            want = v
            break
    if want is None:
        with pytest.raises(ValueError, match="no token"):
            select_one_pass(weights, u, total)
    else:
        assert select_one_pass(weights, u, total) == want
    if sum(weights):  # with the stream's own sum it is §3.5's token
        assert select_one_pass(weights, u, sum(weights)) == plain(weights, u)


def test_one_pass_stored_total() -> None:
    """The stored total is used as is: spec §3.12's check vectors, and a stream that
    never exceeds the threshold is invalid."""
    assert select_one_pass([1, 2, 3, 4], 1 << 31, 10) == 2
    assert select_one_pass([0, 5, 0, 5], 1 << 31, 10) == 3
    assert select_one_pass([1, 2, 3, 4], 1 << 31, 4) == 1  # threshold 2 of a total of 4
    with pytest.raises(ValueError, match="no token"):
        select_one_pass([1, 1], (1 << 32) - 1, 100)
    for bad, match in (([1], "total"), ([], "weights"), ([2**16], "weights")):
        with pytest.raises(ValueError, match=match):
            select_one_pass(bad, 5, 0 if bad == [1] else 3, weight_bits=16)
