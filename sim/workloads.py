"""Workloads of the chip model: the code workload and a phased one for the optimiser demo.

``code`` (the default)
    The golden model's byte-level n-gram pair on standard-library code
    (:func:`golden.models.default_ngram_pair`: target order 6, draft order 4)
    with prompts cut from held-out stdlib files (:func:`golden.models.code_prompts`).
``phased``
    :class:`PhasedPair`, a (target, draft) pair whose acceptance changes
    midway through a decode, deterministically: the target counts
    ``t -> t + 1 (mod V)``; in the first half of the vocabulary (phase A) the
    draft knows it (``q = a * onehot(t + 1) + (1 - a) * uniform``, a drawn
    draft token is accepted with probability ``a + (1 - a) / V``), in the
    second half (phase B) it predicts ``t + 2`` (acceptance exactly 0). From
    token 0 a decode runs ``V / 2`` tokens of phase A, ``V / 2`` of phase B,
    then phase A again: the speculation fallback and its recovery
    (:mod:`sim.topology`) show on it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from golden.models import code_prompts, default_ngram_pair

__all__ = ["PhasedModel", "PhasedPair", "WORKLOADS", "load_workload"]

WORKLOADS = ("code", "phased")


class PhasedModel:
    """One side of a :class:`PhasedPair` (``context_window = 1``)."""

    context_window = 1

    def __init__(self, pair: PhasedPair, side: int) -> None:
        self._pair = pair
        self._side = side
        self.vocab_size = pair.vocab_size

    def probs(self, contexts: Sequence[Sequence[int]]) -> np.ndarray:
        """Next-token distributions; only the last token of each context is read."""
        last = []
        for i, c in enumerate(contexts):
            t = int(c[-1]) if len(c) else -1
            if len(c) and not 0 <= t < self.vocab_size:
                raise ValueError(
                    f"contexts[{i}][-1] = {t}: token out of range 0..{self.vocab_size - 1}"
                )
            last.append(t)
        return self._pair._rows(np.asarray(last, dtype=np.int64), self._side)

    def probs_tails(self, tails: npt.ArrayLike) -> np.ndarray:
        """:meth:`probs` of contexts given by their last token (``-1``: empty context)."""
        t = np.asarray(tails, dtype=np.int64)
        if t.ndim != 2 or t.shape[1] != 1:
            raise ValueError(f"tails has shape {t.shape}: expected (m, context_window = 1)")
        if ((t < -1) | (t >= self.vocab_size)).any():
            raise ValueError(f"tails: token out of range -1..{self.vocab_size - 1}")
        return self._pair._rows(t[:, 0], self._side)


class PhasedPair:
    """A (target, draft) pair whose acceptance changes with the phase (module docstring).

    Parameters
    ----------
    vocab_size : int
        ``V``, even, ``4 .. 131072``.
    a : float
        Draft's weight on the right token in phase A, in ``[0, 1]``.

    Attributes
    ----------
    target, draft : PhasedModel
    """

    def __init__(self, vocab_size: int = 256, a: float = 0.9) -> None:
        if (
            isinstance(vocab_size, bool)
            or not isinstance(vocab_size, int)
            or not (4 <= vocab_size <= 131072 and vocab_size % 2 == 0)
        ):
            raise ValueError(f"vocab_size = {vocab_size!r}: must be an even integer in 4 .. 131072")
        if not 0.0 <= float(a) <= 1.0:
            raise ValueError(f"a = {a!r}: must be in [0, 1]")
        self.vocab_size = vocab_size
        self.a = float(a)
        self.target = PhasedModel(self, 0)
        self.draft = PhasedModel(self, 1)

    def phase(self, token: int) -> str:
        """``"A"`` (the draft knows the next token) or ``"B"`` (it never does)."""
        return "A" if 0 <= token < self.vocab_size // 2 else "B"

    def _rows(self, last: np.ndarray, side: int) -> np.ndarray:
        V = self.vocab_size
        n = last.size
        nxt = (last + 1) % V  # empty context (-1): 0
        out = np.zeros((n, V))
        if side == 0:
            out[np.arange(n), nxt] = 1.0
            return out
        a_rows = (last >= 0) & (last < V // 2) | (last < 0)
        out[a_rows] = (1.0 - self.a) / V
        out[np.flatnonzero(a_rows), nxt[a_rows]] += self.a
        b = np.flatnonzero(~a_rows)
        out[b, (last[b] + 2) % V] = 1.0
        return out


def load_workload(name: str, n_prompts: int, prompt_len: int, seed: int):
    """``(target, draft, prompts)`` of a named workload.

    Parameters
    ----------
    name : {"code", "phased"}
    n_prompts : int
        Prompts (one per sequence).
    prompt_len : int
        Tokens per prompt (``code``: bytes of held-out stdlib source; ``phased``:
        the counter run that ends with token 0, so decoding starts in phase A).
    seed : int
        Selects the prompts (``code``).

    Raises
    ------
    ValueError
        An unknown workload name or a bad count.
    """
    if name == "code":
        target, draft = default_ngram_pair()
        return target, draft, code_prompts(n_prompts, prompt_len, seed)
    if name == "phased":
        pair = PhasedPair()
        V = pair.vocab_size
        one = [(t - prompt_len) % V for t in range(1, prompt_len + 1)]  # ends with token 0
        prompts = [list(one) for _ in range(n_prompts)]
        return pair.target, pair.draft, prompts
    raise ValueError(f"workload = {name!r}: must be one of {', '.join(WORKLOADS)}")
