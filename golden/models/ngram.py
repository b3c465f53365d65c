"""The byte-level interpolated Kneser-Ney n-gram model (:class:`NGramModel`, 256 tokens).

A realistic code workload when trained on standard-library source
(:mod:`golden.models.corpus`, :func:`golden.models.ngram_pair.default_ngram_pair`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from checks import integer, prob_matrix, real
from golden.models.base import as_tails, check_contexts, check_tails, checked_tail
from golden.models.ngram_levels import check_levels

__all__ = ["NGRAM_FORMAT", "MAX_ORDER", "NGramModel"]

#: Version of the file format of :meth:`NGramModel.save` (part of the cache key).
NGRAM_FORMAT = 1
MAX_ORDER = 7  # an n-gram of `order` bytes must fit a non-negative int64 code
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
        produced by :meth:`train` (checked: :func:`check_levels`).
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

    #: rows are checked once, when computed (:func:`golden.draft.checked_model`)
    checks_own_outputs = True

    vocab_size: int = 256

    def __init__(
        self,
        order: int,
        discount: float,
        levels: list[tuple[np.ndarray, ...]],
        *,
        cache_size: int = 1 << 15,
    ) -> None:
        self.order = integer("order", order, 1, MAX_ORDER)
        self.discount = real("discount", discount, 0, 1, lo_open=True)
        self.cache_size = integer("cache_size", cache_size, 1)
        check_levels(levels, self.order)
        self._levels = [tuple(np.asarray(a) for a in lv) for lv in levels]
        # for inference, every level k = 1 .. order-1 in one set of flat arrays:
        # sorted keys (k << 56 | context code), per context the back-off weight
        # D * N(h) / c(h), its entries' start and count, and per entry the next
        # byte and the discounted count / c(h)
        keys, lams, starts, counts, nxts, adjs = [], [], [], [], [], []
        n_entries = 0
        for k, lv in enumerate(self._levels):
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
        order = integer("order", order, 1, MAX_ORDER)
        discount = real("discount", discount, 0, 1, lo_open=True)
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

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the model to ``path`` (a numpy ``.npz`` archive, no pickle).

        Parameters
        ----------
        path : str or os.PathLike
            Destination file, written as given (no suffix is added).
        """
        arrays: dict[str, np.ndarray] = {
            "format": np.array(NGRAM_FORMAT),
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
            Equal (``==``) to the model saved.

        Raises
        ------
        ValueError
            If the file is not a complete n-gram model of this format version.
        """
        with np.load(path, allow_pickle=False) as z:
            if "format" not in z.files or int(z["format"]) != NGRAM_FORMAT:
                raise ValueError(
                    f"path = {str(path)!r}: not an NGramModel file of format {NGRAM_FORMAT}"
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
        try:  # hot path: lists of ints 0 .. 255 (bytes() checks them, but takes bools)
            keys = [
                bytes(t) if type(c) in _LISTS and bool not in map(type, t := c[-w:]) else None
                for c in contexts
            ]
            if None in keys or not w:
                raise TypeError
        except (TypeError, ValueError):
            check_contexts(contexts)
            keys = [bytes(checked_tail(i, c, w, 256)) for i, c in enumerate(contexts)]
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
        t = as_tails(tails)
        w = self.context_window
        if t.ndim != 2 or t.shape[1] != w or t.dtype.kind not in "iu":
            check_tails(t, w, 256)  # raises
        rows = t.tolist()
        if not w:
            return [b""] * len(rows)
        try:  # bytes() takes only 0 .. 255: the padding is cut off first
            return [bytes(r) if r[0] >= 0 else bytes(r[r.count(-1) :]) for r in rows]
        except ValueError:
            check_tails(t, w, 256)  # raises, naming the entry
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
        prob_matrix("NGramModel row", new, cols=256)  # checks_own_outputs
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
