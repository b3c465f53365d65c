"""What every model of :mod:`golden.models` shares: the vocabulary bound and the context checks.

A model reads a batch of contexts either as token sequences (``probs``: each
checked by :func:`check_contexts` and :func:`checked_tail`) or as one integer
matrix of their last ``context_window`` tokens (``probs_tails``: checked by
:func:`check_tails`; :func:`tails_matrix` builds it). Bad input raises
``ValueError`` naming the offending entry, e.g.
``contexts[3][5] = 300: token out of range 0..255``.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence

import numpy as np

from checks import integer

__all__ = [
    "MAX_VOCAB",
    "MAX_WINDOW",
    "as_tails",
    "check_contexts",
    "check_tails",
    "check_token",
    "checked_tail",
    "tails_matrix",
]

#: Largest vocabulary a model may have (``TOKEN_BITS = 17``, SPEC §5).
MAX_VOCAB = 1 << 17
#: Largest ``context_window`` (tokens a model reads) of a tails matrix.
MAX_WINDOW = 1 << 12


def check_token(t: object, vocab_size: int, i: int | None, j: int) -> int:
    """Token ``contexts[i][j] = t`` (``prompt[j]`` if ``i`` is None) as an int in range."""
    try:
        if isinstance(t, bool | np.bool_):  # an integer to operator.index, not a token
            raise TypeError
        v = operator.index(t)  # type: ignore[arg-type]
    except TypeError:
        where = f"prompt[{j}]" if i is None else f"contexts[{i}][{j}]"
        raise ValueError(f"{where} = {t!r}: token must be an integer") from None
    if not 0 <= v < vocab_size:
        where = f"prompt[{j}]" if i is None else f"contexts[{i}][{j}]"
        raise ValueError(f"{where} = {v}: token out of range 0..{vocab_size - 1}")
    return v


def checked_tail(i: int, context: object, window: int, vocab_size: int) -> tuple[int, ...]:
    """The last ``window`` tokens of ``contexts[i]``, checked, as a tuple of ints."""
    if not _is_sequence(context):
        raise ValueError(f"contexts[{i}] = {context!r}: must be a sequence of tokens")
    n = len(context)
    lo = max(0, n - window)
    t = tuple(context[lo:]) if window else ()
    # fast path (C-level loops): plain ints in range; anything else is checked token by token
    if t and (set(map(type, t)) != {int} or min(t) < 0 or max(t) >= vocab_size):
        return tuple(check_token(context[j], vocab_size, i, j) for j in range(lo, n))
    return t


def check_contexts(contexts: object) -> None:
    """``ValueError`` unless ``contexts`` is a sequence (not a string) of contexts."""
    if isinstance(contexts, bytes) or not _is_sequence(contexts):
        raise ValueError(f"contexts = {contexts!r}: must be a list of token sequences")


def _is_sequence(x: object) -> bool:
    """A sequence of tokens may be: a ``Sequence`` but a string, or a 1-D or more array."""
    if isinstance(x, np.ndarray):
        return x.ndim >= 1
    return isinstance(x, Sequence) and not isinstance(x, str)


def check_tails(tails: object, window: int, vocab_size: int, *, padding: bool = True) -> np.ndarray:
    """``tails`` (see :meth:`NGramModel.probs_tails`) checked, as an ``int64`` matrix.

    Every entry must be a token ``0 .. vocab_size - 1`` or the padding ``-1``;
    ``padding=True`` also checks that ``-1`` only comes before a row's tokens
    (callers that cache checked rows check that on their misses instead).
    """
    t = as_tails(tails)
    if t.ndim != 2 or t.shape[1] != window:
        raise ValueError(f"tails has shape {t.shape}: expected (m, context_window = {window})")
    if t.dtype.kind not in "iu":
        raise ValueError(f"tails must hold integers, got dtype {t.dtype}")
    t = t.astype(np.int64, copy=False)
    if t.size and (t.min() < -1 or t.max() >= vocab_size):
        i, j = (int(x[0]) for x in np.nonzero((t < -1) | (t >= vocab_size)))
        raise ValueError(
            f"tails[{i}][{j}] = {int(t[i, j])}: token out of range 0..{vocab_size - 1} "
            "(or -1, padding)"
        )
    if padding:
        _check_padding(t)
    return t


def as_tails(tails: object) -> np.ndarray:
    """``np.asarray(tails)``; ``ValueError`` naming ``tails`` if numpy cannot make an
    array of it (ragged rows, a dict)."""
    if isinstance(tails, np.ndarray):
        return tails
    try:
        t = np.asarray(tails)
    except (TypeError, ValueError):
        t = None
    if t is None or t.dtype.kind == "O":
        raise ValueError(f"tails = {tails!r}: must be an integer matrix")
    return t


def _check_padding(t: np.ndarray) -> None:
    """Each row of ``t``: padding ``-1`` only before the tokens (right-aligned tails)."""
    if t.shape[1] > 1:
        bad = (t[:, :-1] >= 0) & (t[:, 1:] < 0)
        if bad.any():
            i, j = (int(x[0]) for x in np.nonzero(bad))
            raise _padding_error(i, j + 1)


def _padding_error(i: int, j: int) -> ValueError:
    return ValueError(
        f"tails[{i}][{j}] = -1 after a token: tails are right-aligned, "
        "-1 only pads the start of a short context"
    )


def tails_matrix(contexts: Sequence[Sequence[int]], window: int) -> np.ndarray:
    """The ``tails`` matrix of ``contexts`` for a model with ``context_window = window``.

    Parameters
    ----------
    contexts : list of list of int
        Token sequences.
    window : int
        ``context_window`` of the model, ``0 .. MAX_WINDOW``.

    Returns
    -------
    np.ndarray
        ``(len(contexts), window)`` ``int64``: row ``i`` holds the last
        ``window`` tokens of ``contexts[i]``, right-aligned, ``-1`` before them
        when the context is shorter. Tokens must be integers ``0 ..
        MAX_VOCAB - 1`` (the model checks them against its own vocabulary).
    """
    window = integer("window", window, 0, MAX_WINDOW)
    check_contexts(contexts)
    out = np.full((len(contexts), window), -1, dtype=np.int64)
    if window:
        for i, c in enumerate(contexts):
            t = checked_tail(i, c, window, MAX_VOCAB)
            if t:
                out[i, window - len(t) :] = t
    return out
