"""Fuzz the golden model's public functions with malformed arguments (issue 19,
item 4): every call gives a correct result or a ``ValueError`` whose message
names the argument; never another exception, never a runaway.

Each case is a function with valid keyword arguments; hypothesis replaces one
argument at a time with a malformed value (NaN, infinities, negative and huge
integers, bools, numpy scalars, strings, ``None``, wrong shapes). The named
regression tests of the cases found by hand are in ``tests/test_hardening.py``.
Derandomised (the same examples every run), so that ``make test`` is repeatable.
"""

from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from golden import accept, rng, sampler, tree, walk

SCALARS = st.one_of(
    st.sampled_from([float("nan"), float("inf"), -float("inf"), True, False, None, "3", b"x"]),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([np.int64(-1), np.float32(0.5), np.bool_(True), np.uint64(2**63)]),
)
VECTORS = st.one_of(
    st.lists(SCALARS, max_size=6),
    st.sampled_from([[], [[1, 2]], np.zeros((2, 2)), np.array([np.nan, 1.0]), "abc", 5]),
)
MALFORMED = st.one_of(SCALARS, VECTORS)

P4 = np.full((4, 4), 0.25)
Q4 = np.array([[0.4, 0.3, 0.2, 0.1]] * 4)
PARENTS = [-1, 0, 0, 1]
TOKENS = np.array([0, 1, 2, 3])
LANES = rng.LaneRNG(5, 4).next()

#: name -> (function, valid keyword arguments)
CASES: dict[str, tuple[Callable, dict]] = {
    "tree.validate": (tree.validate, {"parents": PARENTS, "max_nodes": 8}),
    "tree.depths": (tree.depths, {"parents": PARENTS}),
    "tree.mask_rows": (tree.mask_rows, {"parents": PARENTS}),
    "rng.LaneRNG": (rng.LaneRNG, {"seed": 5, "lanes": 4}),
    "rng.uniforms": (rng.uniforms, {"out": LANES, "rand_bits": 16}),
    "sampler.quantize": (sampler.quantize, {"x": np.array([0.5, 0.25]), "bits": 16}),
    "sampler.quantize_weights": (
        sampler.quantize_weights,
        {"dist": np.array([0.5, 0.5]), "weight_bits": 16},
    ),
    "sampler.sample_weights": (
        sampler.sample_weights,
        {"weights": [1, 2, 3], "u32": 2**31, "weight_bits": 16},
    ),
    "sampler.sample_float": (sampler.sample_float, {"dist": np.array([0.5, 0.5]), "u": 0.5}),
    "accept.precompute": (
        accept.precompute,
        {"p": P4, "q": Q4, "parents": PARENTS, "tokens": TOKENS, "prob_bits": 16},
    ),
    "accept.decide": (
        accept.decide,
        {"parents": PARENTS, "pt": [0, 10, 20, 30], "qt": [0, 40, 30, 20], "u": [0, 1, 2, 3]},
    ),
    "accept.decide_float": (
        accept.decide_float,
        {"parents": PARENTS, "pt": np.ones(4), "qt": np.ones(4), "U": np.zeros(4)},
    ),
    "accept.parallel_step": (
        accept.parallel_step,
        {"p": P4, "q": Q4, "parents": PARENTS, "tokens": TOKENS, "lane_out": LANES},
    ),
    "accept.sequential_step": (
        accept.sequential_step,
        {"p": P4, "q": Q4, "parents": PARENTS, "tokens": TOKENS, "lane_out": LANES},
    ),
    "walk.extra_token": (
        walk.extra_token,
        {"dist": np.array([0.5, 0.5]), "fallback": np.array([0.5, 0.5]), "u32": 5},
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_valid_arguments_work(case: str) -> None:
    fn, kw = CASES[case]
    fn(**kw)


@pytest.mark.parametrize("case", list(CASES))
@settings(
    max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(data=st.data())
def test_malformed_argument_is_named_or_handled(case: str, data) -> None:
    fn, kw = CASES[case]
    name = data.draw(st.sampled_from(sorted(kw)), label="argument")
    bad = data.draw(MALFORMED, label="value")
    try:
        fn(**{**kw, name: bad})
    except ValueError as e:
        # the argument itself, or one it must agree with (a length, a vocabulary): the
        # error may name either side of a mismatch
        related = {"tokens": ("tokens", "p"), "p": ("p", "tokens", "q"), "u": ("u", "pt", "qt")}
        related |= {"dist": ("dist", "fallback"), "fallback": ("fallback", "dist")}
        names = related.get(name, (name,)) + ("parents", "tree has")
        assert str(e).startswith(names) or f"{name} " in str(e), (name, bad, str(e))
