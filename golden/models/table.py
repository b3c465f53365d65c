"""The toy table model: next-token distributions given by an explicit table.

Small enough to enumerate every continuation exactly (:meth:`TableModel.joint`):
the model of the exact-distribution ("lossless") tests.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain

import numpy as np
import numpy.typing as npt

from checks import as_floats, integer, real
from checks import seed as seed_check
from golden.models.base import (
    MAX_VOCAB,
    MAX_WINDOW,
    check_contexts,
    check_tails,
    check_token,
    checked_tail,
)

__all__ = ["TableModel"]


class TableModel:
    """A toy model given by an explicit table of next-token distributions.

    Parameters
    ----------
    table : array_like
        Shape ``(V**order + 1, V)``. Row ``r < V**order`` is the next-token
        distribution after the last ``order`` tokens ``t_1 .. t_order`` (oldest
        first) with ``r = t_1 * V**(order-1) + ... + t_order``; a non-empty
        context shorter than ``order`` is read as if left-padded with token 0.
        Row ``V**order`` (the last) is the distribution for the empty context.
        For ``order = 1``: row ``t`` follows token ``t``, row ``V`` starts.
        Every row must be non-negative and sum to 1 (within 1e-9).
    order : int, optional
        Number of previous tokens a distribution depends on, ``1 ..
        MAX_WINDOW`` (4096; ``<= 62`` unless ``V = 1``).

    Attributes
    ----------
    vocab_size : int
        ``V``.
    context_window : int
        ``order``.
    table : np.ndarray
        ``float64`` copy of ``table`` (read-only).

    Raises
    ------
    ValueError
        If ``order`` is not a positive integer or ``table`` has the wrong shape,
        a negative or non-finite entry, or a row not summing to 1.
    """

    def __init__(self, table: npt.ArrayLike, *, order: int = 1) -> None:
        self.order = integer("order", order, 1, MAX_WINDOW)
        t = as_floats("table", table).copy()
        if t.ndim != 2 or t.shape[1] < 1:
            raise ValueError(f"table: shape {t.shape} must be (V**order + 1, V) with V >= 1")
        V = int(t.shape[1])
        if V > MAX_VOCAB:
            raise ValueError(f"table: vocabulary size V = {V} exceeds {MAX_VOCAB}")
        if V > 1 and self.order > 62:  # V**order + 1 rows: more than any array holds
            raise ValueError(
                f"order = {self.order}: must be <= 62 for V = {V} (a table has V**order + 1 rows)"
            )
        rows = V**self.order + 1
        if t.shape[0] != rows:
            raise ValueError(
                f"table: shape {t.shape} must be (V**order + 1, V) = ({rows}, {V}) "
                f"for V = {V}, order = {self.order}"
            )
        if not np.isfinite(t).all():
            r = int(np.argwhere(~np.isfinite(t))[0, 0])
            raise ValueError(f"table: row {r} has a non-finite entry")
        if (t < 0).any():
            r = int(np.argwhere(t < 0)[0, 0])
            raise ValueError(f"table: row {r} has a negative entry")
        sums = t.sum(axis=1)
        bad = np.flatnonzero(np.abs(sums - 1.0) > 1e-9)
        if bad.size:
            r = int(bad[0])
            raise ValueError(f"table: row {r} sums to {float(sums[r])!r}, not 1")
        t.setflags(write=False)
        self.table = t
        self.vocab_size = V
        self.context_window = self.order
        self._weights = V ** np.arange(self.order - 1, -1, -1, dtype=np.int64)
        self._index: dict[tuple[int, ...], int] = {}  # context tail -> row

    @classmethod
    def random(cls, V: int, seed: int, *, concentration: float = 1.0, order: int = 1) -> TableModel:
        """A table with every row drawn from a symmetric Dirichlet distribution.

        Parameters
        ----------
        V : int
            Vocabulary size, ``1 .. 131072`` (and the table, ``V**order + 1``
            rows of ``V`` entries, at most 2**22 entries).
        seed : int
            Seed of ``numpy.random.default_rng``, ``0 .. 2**64 - 1``.
        concentration : float, optional
            Dirichlet concentration, ``0 < c <= 1e300``: small values give
            peaked rows, large ones nearly uniform rows.
        order : int, optional
            See :class:`TableModel`.

        Returns
        -------
        TableModel

        Raises
        ------
        ValueError
            If ``V``, ``concentration`` or ``order`` is out of range.
        """
        V = integer("V", V, 1, MAX_VOCAB)
        order = integer("order", order, 1, MAX_WINDOW)
        c = real("concentration", concentration, 0, 1e300, lo_open=True)
        if V > 1 and (order > 22 or (V**order + 1) * V > 1 << 22):
            raise ValueError(
                f"V = {V}, order = {order}: a table of V**order + 1 rows of V entries "
                "is too large (more than 2**22 entries)"
            )
        rng = np.random.default_rng(seed_check("seed", seed))
        t = rng.dirichlet(np.full(V, c), size=V**order + 1)
        t /= t.sum(axis=1, keepdims=True)  # exact to rounding, even for tiny concentrations
        return cls(t, order=order)

    def _row_index(self, contexts: Sequence[Sequence[int]]) -> np.ndarray:
        """Table row of every context (memoised per checked context tail)."""
        k, index = self.order, self._index
        try:  # hot path: every tail seen before (so already checked), of plain ints
            tails = [tuple(c[-k:]) for c in contexts]
            # 1.0 and True equal 1 as dict keys: only plain ints may take a cached row
            if set(map(type, chain.from_iterable(tails))) <= {int}:
                return np.fromiter([index[t] for t in tails], np.intp, len(contexts))
        except (KeyError, TypeError, IndexError):
            pass
        check_contexts(contexts)
        V = self.vocab_size
        idx = np.empty(len(contexts), dtype=np.intp)
        for i, c in enumerate(contexts):
            tail = checked_tail(i, c, k, V)
            r = index.get(tail)
            if r is None:
                r = V**k
                if tail:  # left-padded with token 0
                    r = 0
                    for t in tail:
                        r = r * V + t
                index[tail] = r
            idx[i] = r
        return idx

    def probs(self, contexts: Sequence[Sequence[int]]) -> np.ndarray:
        """Next-token distributions of a batch of contexts.

        Parameters
        ----------
        contexts : list of list of int
            Token sequences; tokens in ``0 .. V-1``. Only the last ``order``
            tokens of each are read.

        Returns
        -------
        np.ndarray
            ``(len(contexts), V)`` ``float64``; row ``i`` is the distribution of
            the token after ``contexts[i]``.

        Raises
        ------
        ValueError
            If a token is not an integer in ``0 .. V-1``.
        """
        return self.table.take(self._row_index(contexts), axis=0)

    def probs_tails(self, tails: npt.ArrayLike) -> np.ndarray:
        """:meth:`probs` of contexts given by their last ``order`` tokens.

        Parameters
        ----------
        tails : array_like of int
            ``(m, order)``: row ``i`` holds the last ``order`` tokens of context
            ``i``, right-aligned, ``-1`` before them when the context is shorter
            (:func:`tails_matrix`).

        Returns
        -------
        np.ndarray
            ``(m, V)`` ``float64``, equal to ``probs`` of the same contexts.

        Raises
        ------
        ValueError
            If ``tails`` has the wrong shape, a token outside ``0 .. V-1`` (other
            than the padding ``-1``) or padding after a token.
        """
        t = check_tails(tails, self.order, self.vocab_size)
        idx = np.maximum(t, 0) @ self._weights
        idx[t[:, -1] < 0] = self.vocab_size**self.order  # empty context
        return self.table.take(idx, axis=0)

    def joint(self, prompt: Sequence[int], length: int) -> dict[tuple[int, ...], float]:
        """Exact probability of every continuation of ``length`` tokens.

        Parameters
        ----------
        prompt : list of int
            The context the continuation follows.
        length : int
            Number of tokens generated, ``0 .. 1024`` (and ``V**length <= 2**20``).

        Returns
        -------
        dict
            Maps each of the ``V**length`` continuations (a tuple of tokens) to
            its probability, the chain-rule product of the model's next-token
            probabilities. The values sum to 1.

        Raises
        ------
        ValueError
            If ``length`` is negative or too large, or ``prompt`` has a bad token.
        """
        length = integer("length", length, 0, 1 << 10)
        V = self.vocab_size
        if V**length > 1 << 20:
            raise ValueError(f"length = {length}: V**length = {V}**{length} exceeds 2**20")
        if isinstance(prompt, str | bytes) or not isinstance(prompt, Sequence | np.ndarray):
            raise ValueError(f"prompt = {prompt!r}: must be a sequence of tokens")
        base = [check_token(t, V, None, j) for j, t in enumerate(prompt)]
        k = self.order
        seqs = np.zeros((1, 0), dtype=np.int64)  # every continuation so far, one per row
        prob = np.ones(1)
        for _ in range(length):
            m = seqs.shape[0]
            hist = np.concatenate([np.tile(np.array(base[-k:], dtype=np.int64), (m, 1)), seqs], 1)
            if hist.shape[1] == 0:
                idx = np.full(m, V**k, dtype=np.int64)
            else:
                tail = hist[:, -k:]
                padded = np.zeros((m, k), dtype=np.int64)
                padded[:, k - tail.shape[1] :] = tail
                idx = padded @ self._weights
            prob = (prob[:, None] * self.table[idx]).reshape(-1)
            seqs = np.concatenate(
                [np.repeat(seqs, V, axis=0), np.tile(np.arange(V), m)[:, None]], axis=1
            )
        return {tuple(int(x) for x in s): float(w) for s, w in zip(seqs, prob, strict=True)}
