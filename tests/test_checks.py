"""The shared argument checks (``checks``): one message family, nothing
truncated, rounded or wrapped; every malformed value refused with the
argument (and the entry) named."""

from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from checks import (
    bits,
    boolean,
    choice,
    int_array,
    integer,
    prob_matrix,
    prob_vector,
    real,
    seed,
)

NOT_INTEGERS = [0.7, 2.0, float("nan"), float("inf"), True, np.bool_(False), "3", b"3"]
NOT_INTEGERS += [Decimal(2), Fraction(1, 2), None, [1], np.float64(1.0)]


@pytest.mark.parametrize("bad", NOT_INTEGERS, ids=repr)
def test_integer_refuses_what_is_not_an_integer(bad: object) -> None:
    with pytest.raises(ValueError, match=r"^n = .*: must be an integer in 0 \.\. 9$"):
        integer("n", bad, 0, 9)


def test_integer_accepts_python_and_numpy_integers_in_range() -> None:
    assert integer("n", 5, 0, 9) == 5
    assert integer("n", np.int8(-3), -3) == -3 and type(integer("n", np.uint64(7))) is int
    for v, rule in ((10, "in 0 .. 9"), (-1, ">= 0")):
        with pytest.raises(ValueError, match=f"^n = {v}: must be an integer {rule}$"):
            integer("n", v, 0, 9 if rule.startswith("in") else None)
    with pytest.raises(ValueError, match=r"^n = 10: must be an integer <= 9$"):
        integer("n", 10, None, 9)


def test_bits_and_seed_ranges() -> None:
    assert bits("rand_bits", 32) == 32 and seed("seed", 2**64 - 1) == 2**64 - 1
    for bad in (0, 33, -1):
        with pytest.raises(ValueError, match=r"^rand_bits = .*: must be an integer in 1 \.\. 32"):
            bits("rand_bits", bad)
    for bad in (-1, 2**64):
        with pytest.raises(ValueError, match=r"^seed = .*in 0 \.\. 18446744073709551615$"):
            seed("seed", bad)


@pytest.mark.parametrize(
    ("value", "kw", "rule"),
    [
        (1.5, {"lo": 0, "hi": 1, "hi_open": True}, r"in \[0, 1\)"),
        (0.0, {"lo": 0, "lo_open": True}, "> 0"),
        (float("nan"), {}, ""),
        (float("-inf"), {"hi": 3}, "<= 3"),
        ("0.5", {"lo": 0, "hi": 1}, r"in \[0, 1\]"),
        (True, {}, ""),
    ],
)
def test_real_refuses_out_of_interval_and_non_finite(value: object, kw: dict, rule: str) -> None:
    msg = f"^u = .*: must be a finite number{' ' if rule else ''}{rule}$"
    with pytest.raises(ValueError, match=msg):
        real("u", value, **kw)


def test_real_choice_boolean_accept() -> None:
    assert real("u", 1, 0, 1) == 1.0 and real("u", np.float32(0.25), 0, 1) == 0.25
    assert choice("arith", "fixed", ("fixed", "float")) == "fixed"
    with pytest.raises(ValueError, match="^arith = 'bogus': must be one of 'fixed', 'float'$"):
        choice("arith", "bogus", ("fixed", "float"))
    with pytest.raises(ValueError, match="must be one of 1, 2"):
        choice("k", True, (1, 2))  # True == 1, but a bool is not the integer 1
    assert boolean("fallback", np.bool_(True)) is True
    for bad in ("no", 0, 1, None):
        with pytest.raises(ValueError, match=f"^fallback = {bad!r}: must be True or False$"):
            boolean("fallback", bad)


def test_int_array_names_the_first_bad_entry() -> None:
    assert int_array("parents", [-1, 0, np.int64(1)], -1).tolist() == [-1, 0, 1]
    assert int_array("t", np.arange(4, dtype=np.uint8), 0, 3).dtype == np.int64
    cases = [
        ([-1, 0.7], r"parents\[1\] = 0\.7: must be an integer >= -1"),
        (np.array([-1, 0.5]), r"parents\[0\] = -1\.0: must be an integer in -1 \.\. 3"),
        ([-1, Decimal(0)], r"parents\[1\] = Decimal\('0'\)"),
        ([-1, True], r"parents\[1\] = True"),
        (np.array([-1, 5]), r"parents\[1\] = 5: must be an integer in -1 \.\. 3"),
        ("abc", r"parents = 'abc': must be a sequence of integers"),
        (5, r"parents = 5: must be a sequence of integers"),
        (np.zeros((2, 2), int), r"parents has shape \(2, 2\): expected a 1-D sequence"),
        ([2**70], r"parents\[0\] = 1180591620717411303424: must be a(n integer| 64-bit)"),
    ]
    for values, msg in cases:
        with pytest.raises(ValueError, match=msg):
            int_array("parents", values, -1, 3 if isinstance(values, np.ndarray) else None)
    with pytest.raises(ValueError, match=r"tokens has shape \(2,\): expected \(3,\)"):
        int_array("tokens", [1, 2], 0, 9, length=3)


def test_prob_vector_and_matrix() -> None:
    assert prob_vector("p", [0.25, 0.75]).tolist() == [0.25, 0.75]
    assert prob_vector("w", [3, 0], normalised=False).tolist() == [3.0, 0.0]
    cases = [
        ([0.5, np.nan], r"^p\[1\] = nan: must be a finite number >= 0$"),
        ([1.5, -0.5], r"^p\[1\] = -0\.5: must be a finite number >= 0$"),
        ([np.inf, 0], r"^p\[0\] = inf"),
        ([0.5, 0.4], r"^p sums to 0\.9: must sum to 1 \(within 1e-06\)$"),
        ([[0.5, 0.5]], r"^p has shape \(1, 2\): expected \(V,\)$"),
        ("ab", r"^p = 'ab': must be a number or an array of numbers$"),
        (np.array([True, False]), r"^p has dtype bool"),
    ]
    for values, msg in cases:
        with pytest.raises(ValueError, match=msg):
            prob_vector("p", values)
    with pytest.raises(ValueError, match=r"^w sums to 0\.0: must have a positive sum$"):
        prob_vector("w", [0, 0], normalised=False)
    m = prob_matrix("q", [[0.5, 0.5], [1, 0]], rows=2, cols=2)
    assert m.shape == (2, 2)
    for values, kw, msg in [
        ([[0.5, 0.5], [1, -0.1]], {}, r"^q\[1, 1\] = -0\.1: must be a finite number >= 0$"),
        ([[0.5, 0.5], [0.2, 0.2]], {}, r"^q\[1\] sums to 0\.4: must sum to 1"),
        ([[0.5, 0.5]], {"rows": 2}, r"^q has shape \(1, 2\): expected \(2, V\)$"),
        ([[0.5, 0.5]], {"cols": 3}, r"^q has shape \(1, 2\): expected \(n, 3\)$"),
        ([0.5, 0.5], {}, r"^q has shape \(2,\): expected \(n, V\)$"),
    ]:
        with pytest.raises(ValueError, match=msg):
            prob_matrix("q", values, **kw)


@given(st.one_of(st.integers(), st.floats(allow_nan=True), st.booleans(), st.text(), st.none()))
def test_integer_is_exact_or_refuses(value: object) -> None:
    """Any value: the same integer back, or a ValueError naming the argument."""
    try:
        out = integer("x", value, -(2**40), 2**40)
    except ValueError as e:
        assert str(e).startswith(f"x = {value!r}: must be an integer")
    else:
        assert type(value) is int and out == value


@given(st.lists(st.floats(allow_nan=True, allow_infinity=True, width=64), min_size=1, max_size=8))
def test_prob_vector_returns_a_valid_vector_or_refuses(values: list[float]) -> None:
    try:
        p = prob_vector("p", values)
    except ValueError as e:
        assert str(e).startswith(("p[", "p sums to"))
    else:
        assert np.isfinite(p).all() and (p >= 0).all() and abs(p.sum() - 1) <= 1e-6


def test_cli_argument_types(tmp_path) -> None:
    import argparse

    from checks import int_arg, out_dir_arg, real_arg

    assert int_arg(1)("0x10") == 16 and real_arg(0, 1)("0.5") == 0.5
    for parse, text, msg in [
        (int_arg(1, 8), "9", "must be an integer in 1 .. 8, got '9'"),
        (int_arg(1), "1.5", "must be an integer >= 1, got '1.5'"),
        (real_arg(0, 1, hi_open=True), "1", r"must be a finite number in [0, 1), got '1'"),
        (real_arg(0), "nan", "must be a finite number >= 0, got 'nan'"),
    ]:
        with pytest.raises(argparse.ArgumentTypeError) as e:
            parse(text)
        assert str(e.value) == msg
    f = tmp_path / "f"
    f.write_text("")
    assert out_dir_arg(str(tmp_path / "new")) == tmp_path / "new"
    with pytest.raises(argparse.ArgumentTypeError, match="is a file, not a directory"):
        out_dir_arg(str(f))
