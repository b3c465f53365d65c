"""Shared hypothesis strategies for the golden-model tests."""

from __future__ import annotations

from hypothesis import strategies as st


@st.composite
def trees(draw, min_nodes: int = 1, max_nodes: int = 64) -> list[int]:
    """A random valid parent list (parents[i] < i) of min_nodes..max_nodes nodes."""
    n = draw(st.integers(min_nodes, max_nodes))
    return [-1] + [draw(st.integers(0, i - 1)) for i in range(1, n)]
