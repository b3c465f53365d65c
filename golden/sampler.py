"""Token sampler: streaming inverse-CDF sampling of the extra token (SPEC §3.5).

The RTL streams the non-negative integer weights ``w[v]`` twice, ``LANES`` per
cycle: pass 1 sums them into ``total``, pass 2 returns the smallest ``v`` with
``w[0] + ... + w[v] > (u * total) >> 32``, where ``u`` is lane 0's 32-bit
output. ``total == 0`` is invalid input (the RTL raises ``error``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from checks import integer

__all__ = ["quantize", "quantize_weights", "sample_weights", "sample_float"]


def quantize(x: np.ndarray | float, bits: int) -> np.ndarray:
    """SPEC §3.3 quantisation: ``min(round(x * 2**bits), 2**bits - 1)`` as int64.

    ``round`` is round-half-up (``floor(y + 0.5)``); negative inputs clamp to 0.
    """
    if not 1 <= bits <= 32:
        raise ValueError(f"bits = {bits!r}: must be in 1 .. 32")
    y = np.floor(np.asarray(x, dtype=np.float64) * float(1 << bits) + 0.5)
    return np.clip(y, 0, (1 << bits) - 1).astype(np.int64)


def quantize_weights(dist: np.ndarray, weight_bits: int = 16) -> np.ndarray:
    """Weights of a (possibly unnormalised) distribution for the token sampler.

    The distribution is normalised first (an all-zero input stays all zero),
    then quantised like ``pt``/``qt`` to ``weight_bits``.
    """
    d = np.asarray(dist, dtype=np.float64)
    s = d.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        norm = np.where(s > 0, d / np.where(s > 0, s, 1.0), 0.0)
    return quantize(norm, weight_bits)


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
        Width of one weight (``WEIGHT_BITS``); when given, wider weights are
        rejected. The result does not depend on it.

    Returns
    -------
    int
        The smallest ``v`` with ``w[0] + ... + w[v] > (u32 * total) >> 32``.

    Raises
    ------
    ValueError
        ``weights`` empty, negative, too wide or all zero (``total == 0``), or
        ``u32`` outside ``0 .. 2**32 - 1``.
    """
    w = np.asarray(weights)
    if w.ndim != 1 or w.size == 0:
        raise ValueError(f"weights must be a non-empty 1-D sequence, got shape {w.shape}")
    if not np.issubdtype(w.dtype, np.integer):
        raise ValueError(f"weights must be integers, got dtype {w.dtype}")
    w = w.astype(np.int64)
    if (w < 0).any():
        v = int(np.flatnonzero(w < 0)[0])
        raise ValueError(f"weights[{v}] = {int(w[v])}: weights must be >= 0")
    if weight_bits is not None and (w >= (1 << weight_bits)).any():
        v = int(np.flatnonzero(w >= (1 << weight_bits))[0])
        raise ValueError(f"weights[{v}] = {int(w[v])}: does not fit in {weight_bits} bits")
    integer("u32", u32, 0, (1 << 32) - 1)
    cum = np.cumsum(w)
    total = int(cum[-1])
    if total == 0:
        raise ValueError("weights are all zero (total == 0): nothing to sample")
    threshold = (int(u32) * total) >> 32
    return int(np.searchsorted(cum, threshold, side="right"))


def sample_float(dist: np.ndarray, u: float) -> int:
    """Float inverse CDF: the smallest ``v`` with ``cumsum(dist)[v] > u * sum(dist)``.

    The float-arithmetic reference of the token sampler (``u`` in ``[0, 1)``).
    """
    cum = np.cumsum(np.asarray(dist, dtype=np.float64))
    v = int(np.searchsorted(cum, u * cum[-1], side="right"))
    # guard against rounding at the top end: never return a zero-weight tail token
    last_nz = int(np.flatnonzero(np.asarray(dist) > 0)[-1])
    return min(v, last_nz)
