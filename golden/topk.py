"""The tree builder's fixed point: top-K, path confidence and the static build.

The golden twin of the tree builder's first stages (spec §3.6 - §3.8), pure
integer arithmetic on the §3.3-quantised draft probabilities:

- :func:`topk` (§3.6): the ``min(K, S)`` largest entries of a node's
  distribution in rank order, ties to the lower token id, ``q = 0`` never.
- :func:`child_confidence` (§3.7): ``(c_parent * q) >> PROB_BITS``, a
  ``CONF_BITS``-bit integer; the root's confidence :func:`root_confidence`
  ``= 2**CONF_BITS - 1``.
- :func:`build_static` (§3.8): a shape's nodes take their rank's top-K entry of
  their parent's distribution; a node whose entry is empty is pruned with its
  subtree, the rest renumbered in order.

The RTL blocks ``hw.topk`` and ``hw.tree_builder`` are checked against these
functions beat for beat.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from checks import bits as check_bits
from checks import int_array, integer
from golden import tree as _tree
from golden.sampler import MAX_TOKENS

__all__ = [
    "K_MAX",
    "CONF_BITS",
    "check_conf_bits",
    "Entry",
    "StaticBuild",
    "topk",
    "root_confidence",
    "child_confidence",
    "build_static",
]

#: largest ``K`` of the top-K unit (spec §3.6)
K_MAX = 16

#: default width of a path confidence (spec §3.7)
CONF_BITS = 32

#: widest path confidence (spec §3.7)
CONF_BITS_MAX = 64


def check_conf_bits(conf_bits: int, prob_bits: int) -> int:
    """``CONF_BITS``, checked: ``PROB_BITS .. 64`` (spec §3.7)."""
    return integer("conf_bits", conf_bits, prob_bits, CONF_BITS_MAX)


@dataclass(frozen=True)
class Entry:
    """One top-K entry: a token and its quantised draft probability."""

    token: int
    q: int


@dataclass(frozen=True)
class StaticBuild:
    """A tree built in static mode (spec §3.8).

    Members
    -------
    parents : list[int]
        The built tree (§2), pruned and renumbered.
    tokens : list[int]
        Draft token of every node; ``tokens[0]`` is the root's (``-1``: none given).
    q : list[int]
        Each node's quantised draft probability (its top-K entry's ``q``;
        the root's is 0).
    confidence : list[int]
        Each node's path confidence (§3.7, ``CONF_BITS`` bits).
    source : list[int]
        For each built node, its index in the shape.
    expanded : list[int]
        The shape nodes whose distributions were read, in node order (the
        order the builder asks for them).
    shape_nodes : int
        The shape's node count (what the builder's pass over it costs).
    """

    parents: list[int]
    tokens: list[int]
    q: list[int]
    confidence: list[int]
    source: list[int]
    expanded: list[int]
    shape_nodes: int = 0


def _check_q(q: object, prob_bits: int, name: str = "q") -> np.ndarray:
    """A quantised distribution: 1 .. 2**17 integers in ``0 .. 2**prob_bits - 1``."""
    a = int_array(name, q, 0, (1 << prob_bits) - 1)
    if not 1 <= a.size <= MAX_TOKENS:
        raise ValueError(
            f"{name} has {a.size} entries: the vocabulary must be 1 .. {MAX_TOKENS} tokens"
        )
    return a


def topk(q: Sequence[int] | np.ndarray, k: int, *, prob_bits: int = 16) -> list[Entry]:
    """The top-K entries of a quantised draft distribution (spec §3.6).

    Parameters
    ----------
    q : sequence of int
        The ``V`` quantised probabilities, token order, each in
        ``0 .. 2**prob_bits - 1``; ``V`` in ``1 .. 2**17``.
    k : int
        ``K``, ``1 .. K_MAX`` (16).
    prob_bits : int
        ``PROB_BITS``, ``1 .. 32``.

    Returns
    -------
    list[Entry]
        ``min(K, S)`` entries in rank order (``S``: tokens with ``q > 0``):
        larger ``q`` first, equal ``q`` the lower token id first.

    Raises
    ------
    ValueError
        Naming ``k``, ``prob_bits`` or ``q`` (an entry out of range, or a
        vocabulary out of ``1 .. 2**17``).
    """
    k = integer("k", k, 1, K_MAX)
    prob_bits = check_bits("prob_bits", prob_bits)
    a = _check_q(q, prob_bits)
    nz = np.flatnonzero(a > 0)
    if nz.size > k:
        # the k-th largest value; every token at or above it is a candidate
        t = np.partition(a[nz], nz.size - k)[nz.size - k]
        nz = nz[a[nz] >= t]
    order = nz[np.lexsort((nz, -a[nz]))][:k]
    return [Entry(int(t), int(a[t])) for t in order]


def root_confidence(conf_bits: int = CONF_BITS) -> int:
    """The root's confidence, ``2**conf_bits - 1`` (spec §3.7).

    Raises
    ------
    ValueError
        ``conf_bits`` not in ``1 .. 64``.
    """
    return (1 << integer("conf_bits", conf_bits, 1, CONF_BITS_MAX)) - 1


def child_confidence(
    c_parent: int, q: int, *, prob_bits: int = 16, conf_bits: int = CONF_BITS
) -> int:
    """A child's confidence, ``(c_parent * q) >> prob_bits`` (spec §3.7).

    Raises
    ------
    ValueError
        ``c_parent`` out of ``0 .. 2**conf_bits - 1``, ``q`` out of
        ``0 .. 2**prob_bits - 1``, or a bad width.
    """
    prob_bits = check_bits("prob_bits", prob_bits)
    conf_bits = check_conf_bits(conf_bits, prob_bits)
    c = integer("c_parent", c_parent, 0, (1 << conf_bits) - 1)
    return (c * integer("q", q, 0, (1 << prob_bits) - 1)) >> prob_bits


def build_static(
    shape: Sequence[int],
    dists: dict[int, Sequence[int]] | Sequence[Sequence[int] | None],
    k: int,
    *,
    prob_bits: int = 16,
    conf_bits: int = CONF_BITS,
    root_token: int = -1,
) -> StaticBuild:
    """Build a tree in static mode (spec §3.8).

    Parameters
    ----------
    shape : sequence of int
        The shape's parent list (§2), ``1 .. N_NODES`` (1,024) nodes.
    dists : mapping or sequence
        ``dists[a]``: the quantised draft distribution (§3.6's ``q``) of every
        shape node ``a`` that has a child and is not pruned. Entries of other
        nodes are not read (a sequence may hold ``None`` there).
    k : int
        ``K``, ``1 .. K_MAX``; no node of the shape may have more than ``K``
        children.
    prob_bits, conf_bits : int
        ``PROB_BITS``, ``CONF_BITS`` (``prob_bits .. 64``).
    root_token : int
        Put in ``tokens[0]``.

    Returns
    -------
    StaticBuild
        The pruned, renumbered tree with each node's token, ``q`` and confidence.

    Raises
    ------
    ValueError
        An invalid shape (naming ``parents``), a node of rank ``K`` or more
        (``shape[<i>]``), a missing or bad distribution (``dists[<a>]``), or a
        bad ``k`` / ``prob_bits``; distributions of different sizes.
    """
    par = _tree.validate(shape)
    k = integer("k", k, 1, K_MAX)
    prob_bits = check_bits("prob_bits", prob_bits)
    conf_bits = check_conf_bits(conf_bits, prob_bits)
    ranks = _tree.sibling_rank(par)
    for i in range(1, len(par)):
        if ranks[i] >= k:
            raise ValueError(
                f"shape[{i}] = {par[i]}: node {i} is child {ranks[i] + 1} of node "
                f"{par[i]}, more than k = {k} children"
            )
    entries: dict[int, list[Entry]] = {}
    vocab: list[int] = []

    def entries_of(a: int) -> list[Entry]:
        if a not in entries:
            try:
                d = dists[a]
            except (KeyError, IndexError):
                d = None
            if d is None:
                raise ValueError(f"dists[{a}] is missing: node {a} of the shape has children")
            arr = _check_q(d, prob_bits, f"dists[{a}]")
            if vocab and arr.size != vocab[0]:
                raise ValueError(
                    f"dists[{a}] has {arr.size} entries: the other distributions have {vocab[0]}"
                )
            vocab.append(arr.size)
            entries[a] = topk(arr, k, prob_bits=prob_bits)
        return entries[a]

    new_id = {0: 0}
    out = StaticBuild([-1], [int(root_token)], [0], [root_confidence(conf_bits)], [0], [], len(par))
    for i in range(1, len(par)):
        a = par[i]
        if a not in new_id or ranks[i] >= len(entries_of(a)):
            continue  # the parent was pruned, or this rank is empty
        e = entries[a][ranks[i]]
        pa = new_id[a]
        new_id[i] = len(out.parents)
        out.parents.append(pa)
        out.tokens.append(e.token)
        out.q.append(e.q)
        out.confidence.append((out.confidence[pa] * e.q) >> prob_bits)
        out.source.append(i)
    out.expanded.extend(sorted(entries))
    return out
