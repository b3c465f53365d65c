"""Synthetic (target, draft) pairs whose per-token acceptance is exactly ``alpha``.

Any vocabulary ``2 .. 131072``: the model of the analytic checks (SPEC §7).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from checks import integer, real
from golden.models.base import MAX_VOCAB, check_contexts, check_tails, checked_tail

__all__ = ["SyntheticModel", "SyntheticPair"]

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser, element-wise on a ``uint64`` array (wrapping)."""
    x = x ^ (x >> np.uint64(30))
    x = x * _M1
    x = x ^ (x >> np.uint64(27))
    x = x * _M2
    return x ^ (x >> np.uint64(31))


class SyntheticModel:
    """One side (target or draft) of a :class:`SyntheticPair`.

    ``probs`` row = ``alpha * s + (1 - alpha) * onehot(peak)`` where ``s`` is
    the pair's Zipf-like base distribution rotated by a context-dependent
    offset and ``peak`` is this side's context-dependent token.

    Attributes
    ----------
    vocab_size : int
    context_window : int
        2 (a row depends on the last two tokens only).
    alpha : float
    """

    context_window: int = 2

    def __init__(self, pair: SyntheticPair, side: int) -> None:
        self._pair = pair
        self._side = side
        self.vocab_size = pair.vocab_size
        self.alpha = pair.alpha

    def probs(self, contexts: Sequence[Sequence[int]]) -> np.ndarray:
        """Next-token distributions of a batch of contexts.

        Parameters
        ----------
        contexts : list of list of int
            Token sequences, tokens ``0 .. vocab_size - 1``; only the last two
            are read.

        Returns
        -------
        np.ndarray
            ``(len(contexts), vocab_size)`` ``float64``.

        Raises
        ------
        ValueError
            If a token is not an integer in ``0 .. vocab_size - 1``.
        """
        return self._pair._probs(contexts, self._side)

    def probs_tails(self, tails: npt.ArrayLike) -> np.ndarray:
        """:meth:`probs` of contexts given by their last two tokens (the fast path).

        Parameters
        ----------
        tails : array_like of int
            ``(m, 2)``: row ``i`` holds the last two tokens of context ``i``,
            right-aligned, ``-1`` before them when the context is shorter
            (:func:`tails_matrix`).

        Returns
        -------
        np.ndarray
            ``(m, vocab_size)`` ``float64``, equal to :meth:`probs` of the same
            contexts.

        Raises
        ------
        ValueError
            If ``tails`` has the wrong shape, a token outside
            ``0 .. vocab_size - 1`` (other than the padding ``-1``) or padding
            after a token.
        """
        t = check_tails(tails, 2, self.vocab_size)
        return self._pair._rows(*self._pair._hash_last(t), self._side)

    def __repr__(self) -> str:
        side = ("target", "draft")[self._side]
        return f"SyntheticPair(...).{side} (V={self.vocab_size}, alpha={self.alpha})"


class SyntheticPair:
    """A (target, draft) pair with per-token acceptance exactly ``alpha``.

    In every context, ``p = alpha * s + (1 - alpha) * onehot(a)`` (target) and
    ``q = alpha * s + (1 - alpha) * onehot(b)`` (draft), with ``a != b``.
    ``s`` is the full-support Zipf-like distribution ``s0[r] ~ (r + 1)**-zipf``
    rotated by a context-dependent offset (``s[v] = s0[(v - off) % V]``). Since
    ``min(p, q) = alpha * s`` element-wise, ``sum_x min(p(x), q(x)) = alpha``
    exactly (to rounding) after every context: a draft token drawn from ``q`` is
    accepted with probability ``alpha``, independently of the past (the i.i.d.
    model of SPEC §7). ``off``, ``a`` and ``b`` are a splitmix64 hash of the
    last two tokens and ``seed``: deterministic, vectorised over contexts.

    Parameters
    ----------
    vocab_size : int
        ``2 .. 131072``.
    alpha : float
        Acceptance rate, ``0 <= alpha <= 1``.
    seed : int, optional
        Selects the pair (any integer).
    zipf : float, optional
        Exponent of the base distribution (``>= 0``; 0 is uniform).

    Attributes
    ----------
    vocab_size : int
    alpha : float
    target : SyntheticModel
    draft : SyntheticModel

    Raises
    ------
    ValueError
        If ``vocab_size``, ``alpha``, ``seed`` or ``zipf`` is out of range.
    """

    def __init__(self, vocab_size: int, alpha: float, *, seed: int = 0, zipf: float = 1.1) -> None:
        self.vocab_size = V = integer("vocab_size", vocab_size, 2, MAX_VOCAB)
        self.alpha = a = real("alpha", alpha, 0, 1)
        self.seed = integer("seed", seed, -(1 << 63), (1 << 64) - 1)
        self.zipf = z = real("zipf", zipf, 0)
        s0 = (np.arange(1, V + 1, dtype=np.float64)) ** -z
        s0 /= s0.sum()
        # alpha * s0, twice: row with offset `off` is the slice [V - off, 2V - off)
        self._base2 = np.tile(a * s0, 2)
        self._key = np.uint64(self.seed % (1 << 64))
        self.target = SyntheticModel(self, 0)
        self.draft = SyntheticModel(self, 1)

    def __repr__(self) -> str:
        return (
            f"SyntheticPair(vocab_size={self.vocab_size}, alpha={self.alpha}, "
            f"seed={self.seed}, zipf={self.zipf})"
        )

    def _hash(self, contexts: Sequence[Sequence[int]]) -> tuple[np.ndarray, ...]:
        """Offsets and the two peak tokens, one each per context."""
        check_contexts(contexts)
        V = self.vocab_size
        last = np.full((len(contexts), 2), -1, dtype=np.int64)  # -1: no token (short context)
        for i, c in enumerate(contexts):
            t = checked_tail(i, c, 2, V)
            if t:
                last[i, 2 - len(t) :] = t
        return self._hash_last(last)

    def _hash_last(self, last: np.ndarray) -> tuple[np.ndarray, ...]:
        """:meth:`_hash` of the last two tokens of every context (``-1``: none)."""
        V = self.vocab_size
        u = (last + 1).astype(np.uint64)
        x = _mix(self._key ^ _mix(u[:, 0] * _GOLDEN + u[:, 1]))
        Vu = np.uint64(V)
        off = (x % Vu).astype(np.int64)
        y = _mix(x ^ _GOLDEN)
        a = (y % Vu).astype(np.int64)
        zz = _mix(y ^ _GOLDEN)
        b = (a + 1 + (zz % np.uint64(V - 1)).astype(np.int64)) % V
        return off, a, b

    def _probs(self, contexts: Sequence[Sequence[int]], side: int) -> np.ndarray:
        return self._rows(*self._hash(contexts), side)

    def _rows(self, off: np.ndarray, a: np.ndarray, b: np.ndarray, side: int) -> np.ndarray:
        V = self.vocab_size
        n = off.size
        out = np.empty((n, V), dtype=np.float64)
        base2 = self._base2
        for i, o in enumerate((V - off).tolist()):
            out[i] = base2[o : o + V]
        peak = a if side == 0 else b
        out[np.arange(n), peak] += 1.0 - self.alpha
        return out
