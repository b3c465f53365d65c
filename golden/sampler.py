"""Token sampler: streaming inverse-CDF sampling of the extra token (SPEC §3.5).

The RTL streams the non-negative integer weights ``w[v]`` twice, ``LANES`` per
cycle: pass 1 sums them into ``total``, pass 2 returns the smallest ``v`` with
``w[0] + ... + w[v] > (u * total) >> 32``, where ``u`` is lane 0's 32-bit
output. ``total == 0`` is invalid input (the RTL raises ``error``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from checks import as_floats, finite_entries, int_array, integer, prob_vector, real
from checks import bits as check_bits

__all__ = [
    "MAX_TOKENS",
    "quantize",
    "quantize_weights",
    "sample_float",
    "sample_weights",
    "select_one_pass",
]

#: the largest vocabulary the token sampler streams (``TOKEN_BITS <= 17``, SPEC §5)
MAX_TOKENS = 1 << 17


def quantize(x: np.ndarray | float, bits: int) -> np.ndarray:
    """SPEC §3.3 quantisation: ``min(round(x * 2**bits), 2**bits - 1)`` as int64.

    ``round`` is round-half-up (``floor(y + 0.5)``); negative inputs clamp to 0.

    Raises
    ------
    ValueError
        ``bits`` not an integer in ``1 .. 32``; an entry of ``x`` NaN or
        infinite (``"x[<i>] = nan: must be a finite number"``).
    """
    bits = check_bits("bits", bits)
    a = finite_entries("x", as_floats("x", x))
    y = np.floor(a * float(1 << bits) + 0.5)
    return np.clip(y, 0, (1 << bits) - 1).astype(np.int64)


def quantize_weights(dist: np.ndarray, weight_bits: int = 16) -> np.ndarray:
    """Weights of a (possibly unnormalised) distribution for the token sampler.

    The distribution is normalised first (an all-zero input stays all zero),
    then quantised like ``pt``/``qt`` to ``weight_bits``.

    Raises
    ------
    ValueError
        An entry NaN, infinite or negative (``"dist[<i>] = ...: must be a
        finite number >= 0"``), or ``weight_bits`` not in ``1 .. 32``.
    """
    weight_bits = check_bits("weight_bits", weight_bits)
    d = finite_entries("dist", as_floats("dist", dist), non_negative=True)
    s = d.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        norm = np.where(s > 0, d / np.where(s > 0, s, 1.0), 0.0)
    return quantize(norm, weight_bits)


def _cumsum(weights: Sequence[int] | np.ndarray, u32: int, weight_bits: int | None) -> np.ndarray:
    """The checked weights' prefix sums (the samplers' arguments: see :func:`sample_weights`)."""
    wb = 32 if weight_bits is None else check_bits("weight_bits", weight_bits)
    if isinstance(weights, str | bytes) or not hasattr(weights, "__len__") or len(weights) == 0:
        raise ValueError(f"weights = {weights!r}: must be a non-empty sequence of integers")
    # each weight below 2**32 and at most 2**17 of them (SPEC §5): the total fits int64
    w = int_array("weights", weights, 0, (1 << wb) - 1)
    if w.size > MAX_TOKENS:
        raise ValueError(f"weights has {w.size} entries: at most {MAX_TOKENS} (TOKEN_BITS <= 17)")
    integer("u32", u32, 0, (1 << 32) - 1)
    return np.cumsum(w)


def sample_weights(
    weights: Sequence[int] | np.ndarray, u32: int, *, weight_bits: int | None = None
) -> int:
    """The token sampler of SPEC §3.5, bit-exact.

    Parameters
    ----------
    weights : sequence of int
        Non-negative integer weights, each below ``2**weight_bits``.
    u32 : int
        Lane 0's 32-bit output.
    weight_bits : int, optional
        Width of one weight (``WEIGHT_BITS``, ``1 .. 32``); when given, wider
        weights are rejected (without it, weights of up to 32 bits). The result
        does not depend on it.

    Returns
    -------
    int
        The smallest ``v`` with ``w[0] + ... + w[v] > (u32 * total) >> 32``.

    Raises
    ------
    ValueError
        ``weights`` empty, longer than :data:`MAX_TOKENS`, an entry not an
        integer in ``0 .. 2**weight_bits - 1`` (``2**32 - 1`` without
        ``weight_bits``), all zero (``total == 0``), or ``u32`` outside
        ``0 .. 2**32 - 1``.
    """
    cum = _cumsum(weights, u32, weight_bits)
    total = int(cum[-1])
    if total == 0:
        raise ValueError("weights are all zero (total == 0): nothing to sample")
    threshold = (int(u32) * total) >> 32
    return int(np.searchsorted(cum, threshold, side="right"))


def select_one_pass(
    weights: Sequence[int] | np.ndarray, u32: int, total: int, *, weight_bits: int | None = None
) -> int:
    """The one-pass token sampler's selection (spec §3.12), bit-exact.

    ``total`` was summed before the decision (the totals pass); the selection streams
    ``weights`` once and returns the smallest ``v`` with ``w[0] + ... + w[v] > (u32 *
    total) >> 32``. With ``total == sum(weights)`` this is :func:`sample_weights`.

    Raises
    ------
    ValueError
        As :func:`sample_weights` for ``weights`` and ``u32``; ``total`` not an
        integer in ``1 .. 2**49 - 1``; no prefix sum above the threshold (the
        selection's weights sum to at most it: they differ from the totals pass).
    """
    cum = _cumsum(weights, u32, weight_bits)
    integer("total", total, 1, (1 << 49) - 1)
    threshold = (int(u32) * int(total)) >> 32
    if int(cum[-1]) <= threshold:
        raise ValueError(
            f"weights sum to {int(cum[-1])}, at most the threshold {threshold} of total "
            f"{total}: no token (the selection differs from the totals pass)"
        )
    return int(np.searchsorted(cum, threshold, side="right"))


def sample_float(dist: np.ndarray, u: float) -> int:
    """Float inverse CDF: the smallest ``v`` with ``cumsum(dist)[v] > u * sum(dist)``.

    The float-arithmetic reference of the token sampler.

    Raises
    ------
    ValueError
        ``dist`` not a 1-D vector of finite non-negative numbers with a positive
        sum, or ``u`` not in ``[0, 1)``.
    """
    d = prob_vector("dist", dist, normalised=False)
    u = real("u", u, 0, 1, hi_open=True)
    cum = np.cumsum(d)
    v = int(np.searchsorted(cum, u * cum[-1], side="right"))
    # guard against rounding at the top end: never return a zero-weight tail token
    last_nz = int(np.flatnonzero(d > 0)[-1])
    return min(v, last_nz)
