"""golden.tree: mask rows, depths and validation (SPEC §2)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from golden import tree
from tests.strategies import trees


def ancestors_or_self(parents: list[int], i: int) -> set[int]:
    out = set()
    while i != -1:
        out.add(i)
        i = parents[i]
    return out


@given(trees())
def test_mask_rows_are_ancestor_sets(parents: list[int]) -> None:
    rows = tree.mask_rows(parents)
    assert rows[0] == 1
    for i, r in enumerate(rows):
        assert {j for j in range(len(parents)) if (r >> j) & 1} == ancestors_or_self(parents, i)


@given(trees())
def test_depths(parents: list[int]) -> None:
    d = tree.depths(parents)
    assert d[0] == 0
    for i in range(1, len(parents)):
        assert d[i] == d[parents[i]] + 1
        assert d[i] == len(ancestors_or_self(parents, i)) - 1
    assert d == [bin(r).count("1") - 1 for r in tree.mask_rows(parents)]


@given(trees())
def test_children_paths_rank_matrix(parents: list[int]) -> None:
    ch = tree.children_lists(parents)
    assert sorted(c for cs in ch for c in cs) == list(range(1, len(parents)))
    rank = tree.sibling_rank(parents)
    for _a, cs in enumerate(ch):
        assert cs == sorted(cs)
        assert [rank[c] for c in cs] == list(range(len(cs)))
    rows = tree.mask_rows(parents)
    m = tree.mask_matrix(parents)
    for i, path in enumerate(tree.paths(parents)):
        assert set(path) | {0} == ancestors_or_self(parents, i)
        assert sum(1 << j for j in range(len(parents)) if m[i, j]) == rows[i]


def test_examples() -> None:
    assert tree.mask_rows([-1]) == [1]
    assert tree.mask_rows([-1, 0, 1, 2]) == [0b1, 0b11, 0b111, 0b1111]
    assert tree.mask_rows([-1, 0, 0, 0]) == [0b1, 0b11, 0b101, 0b1001]
    assert tree.depths([-1, 0, 0, 1, 3]) == [0, 1, 1, 2, 3]


@pytest.mark.parametrize(
    "parents, match",
    [
        ([], "empty"),
        ([0], r"parents\[0\] = 0"),
        ([-1, 1], r"parents\[1\] = 1"),
        ([-1, 0, 3, 1], r"parents\[2\] = 3"),
        ([-1, 0, -1], r"parents\[2\] = -1"),
        ([-1, "x"], r"parents\[1\] = .x.: must be an integer"),
    ],
)
def test_invalid_trees(parents, match) -> None:
    for fn in (tree.mask_rows, tree.depths, tree.children_lists, tree.paths):
        with pytest.raises(ValueError, match=match):
            fn(parents)


@given(st.integers(2, 20))
def test_too_many_nodes(n: int) -> None:
    with pytest.raises(ValueError, match="N_NODES"):
        tree.validate([-1] + [0] * n, max_nodes=n)
