"""Language models for the golden model, the tests and the behavioural chip model.

Every model here follows the ``Model`` protocol of :mod:`golden.draft`: it has
``vocab_size: int`` and ``probs(contexts) -> np.ndarray`` of shape
``(len(contexts), vocab_size)``, ``float64``, every row non-negative and summing
to 1 (within 1e-9). Each also defines ``context_window``: it reads only the last
``context_window`` tokens of a context, so callers may pass just those, and
the fast path ``probs_tails(tails)``: the same rows for contexts given as one
integer matrix of their last ``context_window`` tokens (:func:`tails_matrix`),
which the decoder builds with one gather per tree level. All models are
deterministic: the same context always gives the same row.

Three families:

:class:`TableModel`
    A toy model given by an explicit table of next-token distributions, small
    enough to enumerate every continuation exactly (:meth:`TableModel.joint`):
    the model of the exact-distribution ("lossless") tests.
:class:`NGramModel`
    A byte-level (``vocab_size = 256``) interpolated Kneser-Ney n-gram model,
    trained on Python standard-library source (:func:`stdlib_corpus`). A
    realistic code workload: :func:`default_ngram_pair` gives a (target,
    draft) pair with a per-token acceptance rate typical of code drafting.
:class:`SyntheticPair`
    A (target, draft) pair over any vocabulary ``2 .. 131072`` whose per-token
    acceptance ``sum_x min(p(x), q(x))`` is *exactly* ``alpha`` in every
    context: the model of the analytic checks (SPEC §7).

Bad input raises ``ValueError`` naming the offending field, e.g.
``contexts[3][5] = 300: token out of range 0..255``.
"""

from __future__ import annotations

import hashlib
import json
import operator
import os
import sysconfig
import zipfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

__all__ = [
    "MAX_VOCAB",
    "STDLIB_HELDOUT_FILES",
    "STDLIB_TRAIN_FILES",
    "NGramModel",
    "SyntheticModel",
    "SyntheticPair",
    "TableModel",
    "code_prompts",
    "default_cache_dir",
    "default_ngram_pair",
    "stdlib_corpus",
    "stdlib_dir",
    "tails_matrix",
]

#: Largest vocabulary a model may have (``TOKEN_BITS = 17``, SPEC §5).
MAX_VOCAB = 1 << 17


# --------------------------------------------------------------------------- helpers


def _check_int(name: str, value: object, lo: int, hi: int | None = None) -> int:
    """``value`` as an ``int`` in ``lo..hi`` (``hi = None``: no upper bound)."""
    if isinstance(value, bool | float) or not hasattr(value, "__index__"):
        raise ValueError(f"{name} = {value!r}: must be an integer")
    v = operator.index(value)  # type: ignore[arg-type]
    if v < lo or (hi is not None and v > hi):
        rng = f"{lo}..{hi}" if hi is not None else f">= {lo}"
        raise ValueError(f"{name} = {v!r}: must be in {rng}")
    return v


def _check_token(t: object, vocab_size: int, i: int | None, j: int) -> int:
    """Token ``contexts[i][j] = t`` (``prompt[j]`` if ``i`` is None) as an int in range."""
    try:
        v = operator.index(t)  # type: ignore[arg-type]
    except TypeError:
        where = f"prompt[{j}]" if i is None else f"contexts[{i}][{j}]"
        raise ValueError(f"{where} = {t!r}: token must be an integer") from None
    if not 0 <= v < vocab_size:
        where = f"prompt[{j}]" if i is None else f"contexts[{i}][{j}]"
        raise ValueError(f"{where} = {v}: token out of range 0..{vocab_size - 1}")
    return v


def _tail(i: int, context: object, window: int, vocab_size: int) -> tuple[int, ...]:
    """The last ``window`` tokens of ``contexts[i]``, checked, as a tuple of ints."""
    if isinstance(context, str) or not isinstance(context, Sequence | np.ndarray):
        raise ValueError(f"contexts[{i}] = {context!r}: must be a sequence of tokens")
    n = len(context)
    lo = max(0, n - window)
    t = tuple(context[lo:]) if window else ()
    # fast path (C-level loops): plain ints in range; anything else is checked token by token
    if t and (set(map(type, t)) != {int} or min(t) < 0 or max(t) >= vocab_size):
        return tuple(_check_token(context[j], vocab_size, i, j) for j in range(lo, n))
    return t


def _check_contexts(contexts: object) -> None:
    if isinstance(contexts, str | bytes) or not isinstance(contexts, Sequence | np.ndarray):
        raise ValueError(f"contexts = {contexts!r}: must be a list of token sequences")


def _check_tails(
    tails: object, window: int, vocab_size: int, *, padding: bool = True
) -> np.ndarray:
    """``tails`` (see :meth:`NGramModel.probs_tails`) checked, as an ``int64`` matrix.

    Every entry must be a token ``0 .. vocab_size - 1`` or the padding ``-1``;
    ``padding=True`` also checks that ``-1`` only comes before a row's tokens
    (callers that cache checked rows check that on their misses instead).
    """
    t = np.asarray(tails)
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
        ``context_window`` of the model (``>= 0``).

    Returns
    -------
    np.ndarray
        ``(len(contexts), window)`` ``int64``: row ``i`` holds the last
        ``window`` tokens of ``contexts[i]``, right-aligned, ``-1`` before them
        when the context is shorter. Tokens are not range-checked here.
    """
    window = _check_int("window", window, 0)
    _check_contexts(contexts)
    out = np.full((len(contexts), window), -1, dtype=np.int64)
    if window:
        for i, c in enumerate(contexts):
            if isinstance(c, str) or not isinstance(c, Sequence | np.ndarray):
                raise ValueError(f"contexts[{i}] = {c!r}: must be a sequence of tokens")
            t = list(c[-window:])
            if t:
                out[i, window - len(t) :] = t
    return out


# --------------------------------------------------------------------------- TableModel


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
        Number of previous tokens a distribution depends on (``>= 1``).

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
        self.order = _check_int("order", order, 1)
        t = np.array(table, dtype=np.float64)
        if t.ndim != 2 or t.shape[1] < 1:
            raise ValueError(f"table: shape {t.shape} must be (V**order + 1, V) with V >= 1")
        V = int(t.shape[1])
        if V > MAX_VOCAB:
            raise ValueError(f"table: vocabulary size V = {V} exceeds {MAX_VOCAB}")
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
            Vocabulary size, ``1 .. 131072`` (and ``V**order + 1`` rows must
            stay below 2**22).
        seed : int
            Seed of ``numpy.random.default_rng``.
        concentration : float, optional
            Dirichlet concentration (``> 0``): small values give peaked rows.
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
        V = _check_int("V", V, 1, MAX_VOCAB)
        order = _check_int("order", order, 1)
        c = float(concentration)
        if not (np.isfinite(c) and c > 0):
            raise ValueError(f"concentration = {concentration!r}: must be > 0")
        if V**order + 1 > 1 << 22:
            raise ValueError(f"V = {V}, order = {order}: table of V**order + 1 rows too large")
        rng = np.random.default_rng(seed)
        t = rng.dirichlet(np.full(V, c), size=V**order + 1)
        t /= t.sum(axis=1, keepdims=True)  # exact to rounding, even for tiny concentrations
        return cls(t, order=order)

    def _row_index(self, contexts: Sequence[Sequence[int]]) -> np.ndarray:
        """Table row of every context (memoised per checked context tail)."""
        k, index = self.order, self._index
        try:  # hot path: every tail seen before (so already checked)
            return np.fromiter([index[tuple(c[-k:])] for c in contexts], np.intp, len(contexts))
        except (KeyError, TypeError, IndexError):
            pass
        _check_contexts(contexts)
        V = self.vocab_size
        idx = np.empty(len(contexts), dtype=np.intp)
        for i, c in enumerate(contexts):
            tail = _tail(i, c, k, V)
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
        t = _check_tails(tails, self.order, self.vocab_size)
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
            Number of tokens generated (``>= 0``; ``V**length <= 2**20``).

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
        length = _check_int("length", length, 0)
        V = self.vocab_size
        if V**length > 1 << 20:
            raise ValueError(f"length = {length}: V**length = {V}**{length} exceeds 2**20")
        if isinstance(prompt, str | bytes) or not isinstance(prompt, Sequence | np.ndarray):
            raise ValueError(f"prompt = {prompt!r}: must be a sequence of tokens")
        base = [_check_token(t, V, None, j) for j, t in enumerate(prompt)]
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


# --------------------------------------------------------------------------- corpus

#: Training corpus of :func:`default_ngram_pair`: pure-Python modules of the
#: CPython 3.11 standard library, relative to ``sysconfig.get_paths()["stdlib"]``
#: (about 1.9 MB of source: general library code, classes, docstrings, tests of
#: arguments, string handling). Fixed: changing it changes the cache key.
STDLIB_TRAIN_FILES: tuple[str, ...] = (
    "abc.py",
    "argparse.py",
    "ast.py",
    "asyncio/base_events.py",
    "bisect.py",
    "collections/__init__.py",
    "contextlib.py",
    "copy.py",
    "dataclasses.py",
    "email/message.py",
    "enum.py",
    "fractions.py",
    "functools.py",
    "glob.py",
    "heapq.py",
    "http/client.py",
    "inspect.py",
    "json/decoder.py",
    "json/encoder.py",
    "logging/__init__.py",
    "operator.py",
    "optparse.py",
    "pathlib.py",
    "pickle.py",
    "queue.py",
    "random.py",
    "selectors.py",
    "shutil.py",
    "socket.py",
    "statistics.py",
    "string.py",
    "subprocess.py",
    "tarfile.py",
    "textwrap.py",
    "threading.py",
    "typing.py",
    "unittest/case.py",
    "urllib/parse.py",
    "weakref.py",
    "zipfile.py",
)

#: Held-out files (disjoint from :data:`STDLIB_TRAIN_FILES`, about 250 kB):
#: the source of prompts (:func:`code_prompts`) and of evaluation contexts.
STDLIB_HELDOUT_FILES: tuple[str, ...] = (
    "calendar.py",
    "configparser.py",
    "csv.py",
    "difflib.py",
    "fnmatch.py",
    "getopt.py",
    "pprint.py",
    "sched.py",
    "shlex.py",
    "tokenize.py",
)


def stdlib_dir() -> Path:
    """The running interpreter's standard-library directory.

    Returns
    -------
    pathlib.Path
        ``sysconfig.get_paths()["stdlib"]``.
    """
    return Path(sysconfig.get_paths()["stdlib"])


def _stdlib_paths(files: Sequence[str]) -> list[Path]:
    if isinstance(files, str | bytes) or not isinstance(files, Sequence):
        raise ValueError(f"files = {files!r}: must be a sequence of relative paths")
    if not files:
        raise ValueError("files = (): must name at least one file")
    root = stdlib_dir()
    out = []
    for i, f in enumerate(files):
        if not isinstance(f, str) or not f or os.path.isabs(f) or ".." in Path(f).parts:
            raise ValueError(f"files[{i}] = {f!r}: must be a path relative to the stdlib directory")
        p = root / f
        if not p.is_file():
            raise FileNotFoundError(
                f"files[{i}] = {f!r}: not found in the Python standard library at {root}"
            )
        out.append(p)
    return out


def stdlib_corpus(files: Sequence[str] = STDLIB_TRAIN_FILES) -> bytes:
    """The concatenated source of standard-library modules.

    Parameters
    ----------
    files : sequence of str, optional
        Paths relative to the stdlib directory (:func:`stdlib_dir`), read in
        order and concatenated (each file ends with a newline).

    Returns
    -------
    bytes

    Raises
    ------
    ValueError
        If ``files`` is empty or holds a path that is absolute or leaves the
        stdlib directory.
    FileNotFoundError
        If a file is missing from the running interpreter's stdlib (the message
        names it).
    """
    parts = []
    for p in _stdlib_paths(files):
        b = p.read_bytes()
        parts.append(b if b.endswith(b"\n") else b + b"\n")
    return b"".join(parts)


def code_prompts(
    n: int, length: int, seed: int, *, files: Sequence[str] = STDLIB_HELDOUT_FILES
) -> list[list[int]]:
    """Byte prompts cut from held-out standard-library source.

    Parameters
    ----------
    n : int
        Number of prompts (``>= 0``).
    length : int
        Bytes per prompt (``>= 1``).
    seed : int
        Seed of ``numpy.random.default_rng``; same seed, same prompts.
    files : sequence of str, optional
        Source files (default :data:`STDLIB_HELDOUT_FILES`, never trained on).

    Returns
    -------
    list of list of int
        ``n`` prompts of exactly ``length`` bytes (tokens ``0 .. 255``), each
        starting at the start of a non-blank line, starts drawn uniformly
        (without replacement while enough line starts exist).

    Raises
    ------
    ValueError
        If ``n`` or ``length`` is out of range (``length`` longer than any
        prompt the files can give).
    """
    n = _check_int("n", n, 0)
    length = _check_int("length", length, 1)
    buf = np.frombuffer(stdlib_corpus(files), dtype=np.uint8)
    nl = np.flatnonzero(buf[:-1] == ord("\n")) + 1
    starts = np.concatenate([[0], nl])
    starts = starts[(starts + length <= buf.size)]
    starts = starts[buf[np.minimum(starts, buf.size - 1)] != ord("\n")]
    if starts.size == 0:
        raise ValueError(f"length = {length}: longer than the held-out text allows")
    rng = np.random.default_rng(seed)
    pick = rng.choice(starts, size=n, replace=n > starts.size)
    return [buf[s : s + length].tolist() for s in pick]


# --------------------------------------------------------------------------- NGramModel

_NGRAM_FORMAT = 1
_MAX_ORDER = 7  # an n-gram of `order` bytes must fit a non-negative int64 code
_LISTS = (list, tuple)  # context types whose bytes() is their tokens
_CACHE_RESERVE = 1 << 15  # rows the caches reserve when they first grow
_LEVEL_SHIFT = 56  # inference keys: level k << 56 | the context's (at most 6-byte) code


class NGramModel:
    """Byte-level interpolated Kneser-Ney n-gram language model.

    ``vocab_size = 256`` (tokens are bytes), ``context_window = order - 1``.
    Build one with :meth:`train` or :meth:`load`, not with the constructor.

    The distribution after a context ``h`` (its last ``order - 1`` bytes, fewer
    if the context is shorter) is interpolated Kneser-Ney with one absolute
    discount ``D``::

        P(w | h) = max(c(h w) - D, 0) / c(h) + D * N(h) / c(h) * P(w | h')

    where ``h'`` drops the oldest byte of ``h``, ``N(h)`` is the number of
    distinct bytes seen after ``h``, and ``c`` is the raw count for the highest
    order (``len(h) = order - 1``) and the Kneser-Ney continuation count
    (number of distinct bytes seen before ``h w``) for the lower orders. A
    context ``h`` never seen uses ``P(w | h')``. The recursion ends in the
    uniform distribution over 256 bytes, which the unigram level interpolates
    with weight ``D * N / c > 0``: every byte has strictly positive probability
    after every context (full support). A context shorter than ``order - 1``
    (the start of a text) uses the lower-order (continuation) tables as is.

    Counts are stored sparsely, per context length ``k = 0 .. order - 1``:
    sorted ``int64`` context codes (the ``k`` bytes read as a big-endian
    integer), offsets into flat arrays of next bytes and counts. Computed
    distributions are cached per context tail (up to ``cache_size`` of them;
    the cache is cleared when full), keyed by ``bytes(tail)`` (which only
    integers ``0 .. 255`` can build, so every lookup checks its tokens):
    repeated contexts cost one dict lookup. A few misses are computed one row
    at a time, each from the cached partial sum of its longest suffix seen
    before; more are computed together, vectorised over the contexts.

    Parameters
    ----------
    order : int
        n-gram order ``1 .. 7`` (a distribution reads ``order - 1`` bytes).
    discount : float
        Absolute discount ``D``, ``0 < D <= 1``.
    levels : list of tuple of np.ndarray
        Per context length ``k``: ``(ctx, start, nxt, cnt, total)`` as
        produced by :meth:`train`.
    cache_size : int, optional
        Largest number of cached distributions (2 kB each).

    Attributes
    ----------
    vocab_size : int
        256.
    order : int
    discount : float
    context_window : int
        ``order - 1``.
    """

    vocab_size: int = 256

    def __init__(
        self,
        order: int,
        discount: float,
        levels: list[tuple[np.ndarray, ...]],
        *,
        cache_size: int = 1 << 15,
    ) -> None:
        self.order = _check_int("order", order, 1, _MAX_ORDER)
        self.discount = _check_discount(discount)
        self.cache_size = _check_int("cache_size", cache_size, 1)
        if len(levels) != self.order:
            raise ValueError(
                f"levels: {len(levels)} levels given, order = {self.order} needs {self.order}"
            )
        self._levels = [tuple(np.asarray(a) for a in lv) for lv in levels]
        # for inference, every level k = 1 .. order-1 in one set of flat arrays:
        # sorted keys (k << 56 | context code), per context the back-off weight
        # D * N(h) / c(h), its entries' start and count, and per entry the next
        # byte and the discounted count / c(h)
        keys, lams, starts, counts, nxts, adjs = [], [], [], [], [], []
        n_entries = 0
        for k, lv in enumerate(self._levels):
            if len(lv) != 5:
                raise ValueError(f"levels[{k}]: must be (ctx, start, nxt, cnt, total)")
            ctx, start, nxt, cnt, total = lv
            n = np.diff(start)
            tot = np.maximum(total, 1).astype(np.float64)
            adj = np.maximum(cnt - self.discount, 0.0) / np.repeat(tot, n)
            lam = self.discount * n / tot
            if k == 0:  # context length 0: the unigram level over the uniform distribution
                self._unigram = np.full(256, 1.0 / 256)
                if ctx.size:
                    self._unigram *= lam[0]
                    self._unigram[nxt[start[0] : start[1]].astype(np.intp)] += adj[
                        start[0] : start[1]
                    ]
                continue
            keys.append(ctx.astype(np.int64) | (k << _LEVEL_SHIFT))
            lams.append(lam)
            starts.append(start[:-1].astype(np.int64) + n_entries)
            counts.append(n.astype(np.int64))
            nxts.append(nxt.astype(np.intp))
            adjs.append(adj)
            n_entries += nxt.size

        def cat(parts: list[np.ndarray], dtype: type) -> np.ndarray:
            return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype)

        self._key = cat(keys, np.int64)
        # with a sentinel above every key, a search never runs off the end
        self._key_ext = np.append(self._key, np.iinfo(np.int64).max)
        self._lam = cat(lams, np.float64)
        self._start = cat(starts, np.int64)
        self._count = cat(counts, np.int64)
        self._nxt = cat(nxts, np.intp)
        self._adj = cat(adjs, np.float64)
        self.context_window = w = self.order - 1
        self._shift8 = 8 * np.arange(w, dtype=np.int64)  # byte j from the end: << 8j
        self._level_tag = np.arange(1, w + 1, dtype=np.int64) << _LEVEL_SHIFT
        self._levels_k = np.arange(1, w + 1, dtype=np.int64)
        # the row cache: rows 0 .. _n_rows-1 of _rows, by bytes(context tail)
        self._index: dict[bytes, int] = {}
        self._n_rows = 0
        # unnormalised distributions after levels 1 .. k (k < order - 1) of the last
        # k bytes, by (k, those bytes): a new tail folds only the levels above the
        # longest suffix seen before
        self._fold_index: dict[tuple[int, int], int] = {}
        # normalised cumulative sums of cached rows (probs_tails_cdf), by slot
        self._cdf = np.empty((0, 256), dtype=np.float64)
        self._cdf_done: set[int] = set()
        self._folds = np.empty((16, 256), dtype=np.float64)
        self._rows = np.empty((64, 256), dtype=np.float64)

    # ---------------------------------------------------------------- training

    @classmethod
    def train(
        cls, data: bytes, order: int, *, discount: float = 0.75, cache_size: int = 1 << 15
    ) -> NGramModel:
        """Count the n-grams of ``data``.

        Parameters
        ----------
        data : bytes
            Training text (non-empty ``bytes``, ``bytearray`` or ``memoryview``).
        order : int
            n-gram order, ``1 .. 7``.
        discount : float, optional
            Absolute discount ``D``, ``0 < D <= 1``.
        cache_size : int, optional
            See :class:`NGramModel`.

        Returns
        -------
        NGramModel

        Raises
        ------
        ValueError
            If ``data`` is empty or not bytes, or ``order``/``discount`` is out
            of range.
        """
        order = _check_int("order", order, 1, _MAX_ORDER)
        discount = _check_discount(discount)
        if not isinstance(data, bytes | bytearray | memoryview):
            raise ValueError(f"data: must be bytes, not {type(data).__name__}")
        buf = np.frombuffer(bytes(data), dtype=np.uint8)
        if buf.size == 0:
            raise ValueError("data: empty training text")
        # codes[m]: every m-gram of the text as a big-endian int64
        codes = [np.zeros(0, dtype=np.int64), buf.astype(np.int64)]
        for m in range(2, order + 1):
            prev = codes[m - 1]
            codes.append((prev[:-1] << 8) | buf[m - 1 :])
        levels = []
        for k in range(order):
            if k == order - 1:  # highest order: raw counts of (k+1)-grams
                grams, cnt = np.unique(codes[k + 1], return_counts=True)
            else:  # continuation counts: distinct bytes before each (k+1)-gram
                longer = np.unique(codes[k + 2])
                grams, cnt = np.unique(longer & ((1 << (8 * (k + 1))) - 1), return_counts=True)
            ctx = grams >> 8
            nxt = (grams & 0xFF).astype(np.uint8)
            uctx, first = np.unique(ctx, return_index=True)
            start = np.append(first, grams.size).astype(np.int64)
            cnt = cnt.astype(np.uint32)
            total = np.zeros(0, dtype=np.int64)
            if first.size:
                total = np.add.reduceat(cnt.astype(np.int64), first)
            levels.append((uctx.astype(np.int64), start, nxt, cnt, total.astype(np.int64)))
        return cls(order, discount, levels, cache_size=cache_size)

    # ---------------------------------------------------------------- persistence

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the model to ``path`` (a numpy ``.npz`` archive, no pickle).

        Parameters
        ----------
        path : str or os.PathLike
            Destination file, written as given (no suffix is added).
        """
        arrays: dict[str, np.ndarray] = {
            "format": np.array(_NGRAM_FORMAT),
            "order": np.array(self.order),
            "discount": np.array(self.discount),
        }
        for k, lv in enumerate(self._levels):
            for name, a in zip(("ctx", "start", "nxt", "cnt", "total"), lv, strict=True):
                arrays[f"{name}{k}"] = a
        with open(path, "wb") as f:
            np.savez(f, **arrays)

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, cache_size: int = 1 << 15) -> NGramModel:
        """Read a model written by :meth:`save`.

        Parameters
        ----------
        path : str or os.PathLike
            File written by :meth:`save`.
        cache_size : int, optional
            See :class:`NGramModel`.

        Returns
        -------
        NGramModel

        Raises
        ------
        ValueError
            If the file is not an n-gram model of this format version.
        """
        with np.load(path, allow_pickle=False) as z:
            if "format" not in z.files or int(z["format"]) != _NGRAM_FORMAT:
                raise ValueError(
                    f"path = {str(path)!r}: not an NGramModel file of format {_NGRAM_FORMAT}"
                )
            try:
                order = int(z["order"])
                levels = [
                    tuple(z[f"{name}{k}"] for name in ("ctx", "start", "nxt", "cnt", "total"))
                    for k in range(order)
                ]
                discount = float(z["discount"])
            except KeyError as e:
                raise ValueError(
                    f"path = {str(path)!r}: incomplete NGramModel file ({e})"
                ) from None
        return cls(order, discount, levels, cache_size=cache_size)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, NGramModel):
            return NotImplemented
        return (
            self.order == other.order
            and self.discount == other.discount
            and all(
                np.array_equal(a, b)
                for la, lb in zip(self._levels, other._levels, strict=True)
                for a, b in zip(la, lb, strict=True)
            )
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        n = int(self._levels[-1][2].size)
        return f"NGramModel(order={self.order}, discount={self.discount}, {n} {self.order}-grams)"

    # ---------------------------------------------------------------- inference

    def _compute(self, tails: list[tuple[int, ...]]) -> np.ndarray:
        """Distributions after (checked) context tails of at most ``order - 1`` bytes."""
        m, w = len(tails), self.context_window
        lens = np.fromiter((len(t) for t in tails), dtype=np.int64, count=m)
        right = np.zeros((m, w), dtype=np.int64)  # tails right-aligned
        if w:
            for r, t in enumerate(tails):
                if t:
                    right[r, w - len(t) :] = t
        return self._compute_right(right, lens)

    def _compute_right(self, right: np.ndarray, lens: np.ndarray) -> np.ndarray:
        """Distributions after ``m`` context tails, vectorised over the tails.

        ``right`` is ``(m, order - 1)``: the tails right-aligned (zeros before a
        short one), ``lens`` their lengths. Row ``r`` starts as the unigram
        level; then, for ``k = 1 .. order - 1`` in turn, if the last ``k`` bytes
        are a context seen at level ``k``, it is multiplied by that context's
        back-off weight and its discounted counts are added. One search finds
        every (tail, level) context at once.
        """
        m, w = right.shape[0], self.context_window
        p = np.empty((m, 256), dtype=np.float64)
        p[:] = self._unigram
        key = self._key
        if w and m and key.size:
            # codes[r, k-1]: (k << 56) | the last k bytes of tail r as a big-endian integer
            codes = np.cumsum(right[:, ::-1] << self._shift8, axis=1)
            codes |= self._level_tag
            i = np.searchsorted(key, codes)
            np.minimum(i, key.size - 1, out=i)
            found = (key[i] == codes) & (lens[:, None] >= self._levels_k)
            lam = np.where(found, self._lam[i], 1.0)  # unseen context: keep the lower order
            found_t = found.T  # (tail, level) pairs level by level
            ctx = i.T[found_t]
            bounds = [0] * (w + 1)
            if ctx.size:
                rows = np.nonzero(found_t)[1]
                s, n = self._start[ctx], self._count[ctx]
                ends = np.cumsum(n)
                flat = np.arange(ends[-1]) + np.repeat(s - (ends - n), n)  # entries of every pair
                target = np.repeat(rows << 8, n) + self._nxt[flat]  # distinct (row, byte) per level
                add = self._adj[flat]
                ends_l = ends.tolist()
                pairs = found_t.sum(axis=1).cumsum().tolist()  # pairs up to each level
                bounds[1:] = [ends_l[c - 1] if c else 0 for c in pairs]
            flat_p = p.reshape(-1)
            for k in range(w):
                p *= lam[:, k, None]
                a, b = bounds[k], bounds[k + 1]
                if a < b:
                    flat_p[target[a:b]] += add[a:b]
        p /= p.sum(axis=1, keepdims=True)
        return p

    def _clear_cache(self) -> None:
        self._index.clear()
        self._n_rows = 0
        self._fold_index.clear()
        self._cdf_done.clear()

    def _append_rows(self, rows: np.ndarray) -> int:
        """Store ``rows`` in the cache (room checked by the caller); returns the first slot."""
        r0 = self._n_rows
        need = r0 + rows.shape[0]
        if need > self._rows.shape[0]:
            # reserve the whole cache at once (np.empty takes pages only as rows are written)
            cap = max(need, min(2 * self._rows.shape[0], self.cache_size), _CACHE_RESERVE)
            cap = min(max(cap, need), max(self.cache_size, need))
            grown = np.empty((cap, 256), dtype=np.float64)
            grown[:r0] = self._rows[:r0]
            self._rows = grown
        self._rows[r0:need] = rows
        self._n_rows = need
        return r0

    def probs(self, contexts: Sequence[Sequence[int]]) -> np.ndarray:
        """Next-byte distributions of a batch of contexts.

        Parameters
        ----------
        contexts : list of list of int
            Byte sequences (tokens ``0 .. 255``). Only the last ``order - 1``
            bytes of each are read.

        Returns
        -------
        np.ndarray
            ``(len(contexts), 256)`` ``float64``, every entry ``> 0``, every row
            summing to 1.

        Raises
        ------
        ValueError
            If a token is not an integer in ``0 .. 255``.
        """
        w = self.context_window
        try:  # hot path: lists of ints 0 .. 255 (bytes() checks them)
            if w:
                keys = [bytes(c[-w:]) if type(c) in _LISTS else None for c in contexts]
                if None in keys:
                    raise TypeError
            else:
                keys = [b""] * len(contexts)
        except (TypeError, ValueError):
            _check_contexts(contexts)
            keys = [bytes(_tail(i, c, w, 256)) for i, c in enumerate(contexts)]
        ids = self._slots(keys)
        if isinstance(ids, np.ndarray):  # too many rows to cache
            return ids
        return self._rows.take(ids, axis=0)

    def probs_tails(self, tails: npt.ArrayLike) -> np.ndarray:
        """:meth:`probs` of contexts given by their last ``order - 1`` bytes (the fast path).

        Parameters
        ----------
        tails : array_like of int
            ``(m, order - 1)``: row ``i`` holds the last ``order - 1`` bytes of
            context ``i``, right-aligned, ``-1`` before them when the context is
            shorter (:func:`tails_matrix`).

        Returns
        -------
        np.ndarray
            ``(m, 256)`` ``float64``, bit for bit what :meth:`probs` returns for
            the same contexts.

        Raises
        ------
        ValueError
            If ``tails`` has the wrong shape, a byte outside ``0 .. 255`` (other
            than the padding ``-1``) or padding after a byte.

        Each row's cache key is the ``bytes`` of its tokens (the padding cut
        off): one dict lookup finds a cached row; rows not cached are computed
        (up to four one at a time, more vectorised over the rows) and cached.
        """
        ids = self._slots(self._tail_keys(tails))
        if isinstance(ids, np.ndarray):  # too many rows to cache
            return ids
        if len(ids) == 1:
            r = ids[0]
            return self._rows[r : r + 1].copy()
        return self._rows.take(ids, axis=0)

    def probs_tails_cdf(self, tails: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`probs_tails` and the normalised cumulative sums of its rows.

        Parameters
        ----------
        tails : array_like of int
            As for :meth:`probs_tails`.

        Returns
        -------
        tuple of np.ndarray
            ``(p, cdf)``, both ``(m, 256)`` ``float64`` (new arrays): ``p`` is
            ``probs_tails(tails)`` and ``cdf = np.cumsum(p, axis=1) /
            np.cumsum(p, axis=1)[:, -1:]``, bit for bit (what an inverse-CDF
            sampler computes; cached with the rows).

        Raises
        ------
        ValueError
            As :meth:`probs_tails`.
        """
        ids = self._slots(self._tail_keys(tails))
        if isinstance(ids, np.ndarray):  # too many rows to cache
            cdf = np.cumsum(ids, axis=1)
            cdf /= cdf[:, -1:]
            return ids, cdf
        done = self._cdf_done
        todo = [r for r in ids if r not in done]
        if todo:
            if self._cdf.shape[0] < self._rows.shape[0]:
                grown = np.empty_like(self._rows)
                grown[: self._cdf.shape[0]] = self._cdf
                self._cdf = grown
            todo = list(dict.fromkeys(todo))
            c = np.cumsum(self._rows[todo], axis=1)
            c /= c[:, -1:]
            self._cdf[todo] = c
            done.update(todo)
        return self._rows.take(ids, axis=0), self._cdf.take(ids, axis=0)

    def _tail_keys(self, tails: npt.ArrayLike) -> list[bytes]:
        """Cache keys of ``tails`` (checked: ``ValueError`` as :meth:`probs_tails`)."""
        t = np.asarray(tails)
        w = self.context_window
        if t.ndim != 2 or t.shape[1] != w or t.dtype.kind not in "iu":
            _check_tails(t, w, 256)  # raises
        rows = t.tolist()
        if not w:
            return [b""] * len(rows)
        try:  # bytes() takes only 0 .. 255: the padding is cut off first
            return [bytes(r) if r[0] >= 0 else bytes(r[r.count(-1) :]) for r in rows]
        except ValueError:
            _check_tails(t, w, 256)  # raises, naming the entry
            raise

    def _slots(self, keys: list[bytes]) -> list[int] | np.ndarray:
        """Cache slots of the rows of the (checked) tails ``keys``, computing missing rows.

        Returns the rows themselves instead when there are too many to cache.
        """
        index = self._index
        get = index.get
        ids = [get(k, -1) for k in keys]
        if -1 not in ids:
            return ids
        missing = list(dict.fromkeys(k for k in keys if k not in index))
        if self._n_rows + len(missing) > self.cache_size:
            self._clear_cache()
            missing = list(dict.fromkeys(keys))
        if len(missing) == 1:
            new = self._compute_one(list(missing[0]))[None, :]
        elif len(missing) <= 4:  # fewer numpy calls one row at a time
            new = np.stack([self._compute_one(list(k)) for k in missing])
        else:
            new = self._compute([tuple(k) for k in missing])
        if len(missing) > self.cache_size:  # too many to cache: return them directly
            pos = {k: r for r, k in enumerate(missing)}
            return new[[pos[k] for k in keys]]
        r0 = self._append_rows(new)
        index.update(zip(missing, range(r0, r0 + len(missing)), strict=True))
        return [index[k] for k in keys]

    def _fold_one(self, toks: list[int], levels: int) -> np.ndarray:
        """Unnormalised distribution after levels ``1 .. levels`` for the bytes ``toks``."""
        p = self._unigram.copy()
        key = self._key_ext
        L = min(len(toks), levels)
        if L and key.size > 1:
            codes, c = [], 0
            for k in range(1, L + 1):  # the last k bytes, level k
                c |= toks[-k] << (8 * (k - 1))
                codes.append(c | (k << _LEVEL_SHIFT))
            i = np.searchsorted(key, codes)
            for g, kg, code in zip(i.tolist(), key[i].tolist(), codes, strict=True):
                if kg == code:
                    p *= self._lam[g]
                    a = self._start[g]
                    b = a + self._count[g]
                    p[self._nxt[a:b]] += self._adj[a:b]
        return p

    def _compute_one(self, tail: list[int]) -> np.ndarray:
        """:meth:`_compute_right` of one tail (a list, ``-1`` padding first).

        The same float operations in the same order, so the same row bit for
        bit. A full-length tail starts from the cached fold of its longest
        suffix seen before and folds (and caches) only the levels above it.
        """
        w = self.context_window
        toks = [b for b in tail if b >= 0]
        if len(toks) < w or w < 2 or self._key.size == 0:
            p = self._fold_one(toks, w)
            p /= p.sum()
            return p
        # suffix codes: sc[k] = the last k bytes as a big-endian integer
        sc = [0] * w
        c = 0
        for k in range(1, w):
            c |= toks[-k] << (8 * (k - 1))
            sc[k] = c
        folds = self._fold_index
        k0 = 0
        for k in range(w - 1, 0, -1):
            r = folds.get((k, sc[k]))
            if r is not None:
                k0 = k
                p = self._folds[r].copy()
                break
        else:
            p = self._unigram.copy()
        top = sc[w - 1] | (toks[0] << (8 * (w - 1)))
        codes = [(sc[k] if k < w else top) | (k << _LEVEL_SHIFT) for k in range(k0 + 1, w + 1)]
        key = self._key_ext
        i = np.searchsorted(key, codes)
        for k, g, kg, code in zip(
            range(k0 + 1, w + 1), i.tolist(), key[i].tolist(), codes, strict=True
        ):
            if kg == code:
                p *= self._lam[g]
                a = self._start[g]
                b = a + self._count[g]
                p[self._nxt[a:b]] += self._adj[a:b]
            if k < w:  # keep the fold of the last k bytes
                r = len(folds)
                if r == self._folds.shape[0]:
                    if r >= self.cache_size:
                        folds.clear()
                        r = 0
                    else:
                        cap = min(max(2 * r, _CACHE_RESERVE), self.cache_size)
                        grown = np.empty((cap, 256), dtype=np.float64)
                        grown[:r] = self._folds[:r]
                        self._folds = grown
                self._folds[r] = p
                folds[(k, sc[k])] = r
        p /= p.sum()
        return p


def _check_discount(discount: object) -> float:
    try:
        d = float(discount)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"discount = {discount!r}: must be a number in (0, 1]") from None
    if not 0.0 < d <= 1.0:
        raise ValueError(f"discount = {discount!r}: must be in (0, 1]")
    return d


# --------------------------------------------------------------------------- default pair


def default_cache_dir() -> Path:
    """Directory of the trained-model cache.

    Returns
    -------
    pathlib.Path
        ``$SPECDECODE_CACHE`` if set, else ``<repo>/build/cache`` where
        ``<repo>`` is the parent of the ``golden`` package directory.
    """
    env = os.environ.get("SPECDECODE_CACHE")
    if env:
        return Path(env)
    return Path(__file__).resolve().parent.parent / "build" / "cache"


def _cache_key(files: Sequence[str], corpus: bytes, order: int, discount: float) -> str:
    meta = {
        "format": _NGRAM_FORMAT,
        "files": list(files),
        "size": len(corpus),
        "sha256": hashlib.sha256(corpus).hexdigest(),
        "order": order,
        "discount": discount,
    }
    return hashlib.sha256(json.dumps(meta, sort_keys=True).encode()).hexdigest()[:16]


def _cached_ngram(
    files: Sequence[str], corpus: bytes, order: int, discount: float, cache_dir: Path
) -> NGramModel:
    key = _cache_key(files, corpus, order, discount)
    path = cache_dir / f"ngram_o{order}_d{discount:g}_{key}.npz"
    if path.is_file():
        try:
            return NGramModel.load(path)
        except (OSError, ValueError, EOFError, zipfile.BadZipFile):
            pass  # unreadable (e.g. truncated): retrain and overwrite
    model = NGramModel.train(corpus, order, discount=discount)
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    model.save(tmp)
    os.replace(tmp, path)  # atomic: concurrent callers never see half a file
    return model


def default_ngram_pair(
    *,
    target_order: int = 6,
    draft_order: int = 4,
    discount: float = 0.75,
    cache_dir: str | os.PathLike[str] | None = None,
) -> tuple[NGramModel, NGramModel]:
    """The (target, draft) n-gram pair of the code workload.

    Both are trained on :func:`stdlib_corpus` (:data:`STDLIB_TRAIN_FILES`). The
    target reads 5 bytes of context, the draft 3. On held-out code
    (:data:`STDLIB_HELDOUT_FILES`, 4000 random positions) the per-token
    acceptance ``sum_x min(p(x), q(x))`` of the default pair (orders 6/4)
    averages 0.79 (measured with CPython 3.11.7's stdlib); the target's
    cross-entropy is 2.09 bits/byte. Other pairs measured the same way:
    orders 6/3 give 0.63 (draft 2.75 bits/byte), 6/5 0.90, 5/3 0.65, 4/3 0.71,
    7/3 0.61.

    Trained models are cached on disk, one ``.npz`` per model, named by a hash
    of the file list, the corpus contents, the order, the discount and the
    file format version: any change retrains. Cold training of the default
    pair takes about 3 s, a cached load about 0.1 s.

    Parameters
    ----------
    target_order : int, optional
        Order of the target, ``2 .. 7``.
    draft_order : int, optional
        Order of the draft, ``1 .. target_order - 1``.
    discount : float, optional
        Kneser-Ney discount of both models, ``0 < D <= 1``.
    cache_dir : str or os.PathLike, optional
        Cache directory (default :func:`default_cache_dir`).

    Returns
    -------
    tuple of NGramModel
        ``(target, draft)``.

    Raises
    ------
    ValueError
        If an order or the discount is out of range, or
        ``draft_order >= target_order``.
    FileNotFoundError
        If a training file is missing from the interpreter's stdlib.
    """
    target_order = _check_int("target_order", target_order, 2, _MAX_ORDER)
    draft_order = _check_int("draft_order", draft_order, 1, _MAX_ORDER)
    if draft_order >= target_order:
        raise ValueError(
            f"draft_order = {draft_order}: must be lower than target_order = {target_order}"
        )
    discount = _check_discount(discount)
    cdir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    files = STDLIB_TRAIN_FILES
    corpus = stdlib_corpus(files)
    target = _cached_ngram(files, corpus, target_order, discount, cdir)
    draft = _cached_ngram(files, corpus, draft_order, discount, cdir)
    return target, draft


# --------------------------------------------------------------------------- SyntheticPair

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
        t = _check_tails(tails, 2, self.vocab_size)
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
        self.vocab_size = V = _check_int("vocab_size", vocab_size, 2, MAX_VOCAB)
        try:
            a = float(alpha)
        except (TypeError, ValueError):
            raise ValueError(f"alpha = {alpha!r}: must be a number in [0, 1]") from None
        if not 0.0 <= a <= 1.0:
            raise ValueError(f"alpha = {alpha!r}: must be in [0, 1]")
        self.alpha = a
        self.seed = _check_int("seed", seed, -(1 << 63), (1 << 64) - 1)
        try:
            z = float(zipf)
        except (TypeError, ValueError):
            raise ValueError(f"zipf = {zipf!r}: must be a number >= 0") from None
        if not (np.isfinite(z) and z >= 0):
            raise ValueError(f"zipf = {zipf!r}: must be a finite number >= 0")
        self.zipf = z
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
        _check_contexts(contexts)
        V = self.vocab_size
        last = np.full((len(contexts), 2), -1, dtype=np.int64)  # -1: no token (short context)
        for i, c in enumerate(contexts):
            t = _tail(i, c, 2, V)
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
