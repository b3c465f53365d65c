"""Per-lane random numbers: xoshiro128++ lanes seeded by splitmix64 (SPEC §3.4).

One splitmix64 stream, its state started at the 64-bit ``seed``, seeds the
lanes in order: lane ``l`` takes splitmix64 outputs ``2l`` and ``2l + 1`` and
splits each into its low then high 32-bit word, giving the xoshiro128++ state
words ``s0, s1, s2, s3``. Every lane advances exactly once per
:meth:`LaneRNG.next` (one verification step), used or not.

Node ``i >= 1`` of a tree uses lane ``i``: ``u_i = out[i] >> (32 - RAND_BITS)``.
Lane 0 drives the token sampler with its full 32-bit output.

The lane streams do not depend on the number of lanes: lane ``l`` of a
16-lane generator is lane ``l`` of a 1024-lane one.
"""

from __future__ import annotations

import numpy as np

from checks import bits, int_array, integer
from checks import seed as seed_check

__all__ = ["MAX_LANES", "splitmix64", "lane_states", "LaneRNG", "xoshiro_step", "uniforms"]

_M64 = (1 << 64) - 1
_M32 = (1 << 32) - 1
#: the most lanes: one per tree node (SPEC §5: ``N_NODES`` up to 1,024)
MAX_LANES = 1024
_GOLDEN = 0x9E3779B97F4A7C15


def splitmix64(state: int) -> tuple[int, int]:
    """One splitmix64 step: returns ``(new_state, output)`` (Python ints, 64-bit)."""
    state = (state + _GOLDEN) & _M64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return state, z ^ (z >> 31)


def lane_states(seed: int, lanes: int) -> np.ndarray:
    """Initial xoshiro128++ states, shape ``(4, lanes)`` uint32 (rows ``s0..s3``)."""
    seed_check("seed", seed)
    integer("lanes", lanes, 1, MAX_LANES)
    st = np.zeros((4, int(lanes)), dtype=np.uint32)
    state = int(seed)
    for lane in range(int(lanes)):
        for half in range(2):
            state, out = splitmix64(state)
            st[2 * half, lane] = out & 0xFFFFFFFF
            st[2 * half + 1, lane] = out >> 32
    return st


class LaneRNG:
    """``lanes`` xoshiro128++ generators advanced together (SPEC §3.4).

    Parameters
    ----------
    seed : int
        64-bit seed of the splitmix64 stream that seeds the lanes.
    lanes : int
        Number of lanes (``N_NODES`` on the chip), ``1 .. MAX_LANES`` (1,024).

    Members
    -------
    state : np.ndarray
        ``(4, lanes)`` uint32, the current state words ``s0..s3`` of every lane.
    """

    def __init__(self, seed: int, lanes: int) -> None:
        self.seed = int(seed) if isinstance(seed, (int, np.integer)) else seed
        self.lanes = lanes
        self.state = lane_states(seed, lanes)

    def next(self) -> np.ndarray:
        """Advance every lane once; return the 32-bit outputs (uint32, one per lane)."""
        return xoshiro_step(self.state)


_U7, _U9, _U11, _U21, _U25 = (np.uint32(k) for k in (7, 9, 11, 21, 25))


def xoshiro_step(state: np.ndarray) -> np.ndarray:
    """One xoshiro128++ step of every generator in ``state`` (``(4, ...)`` uint32,
    updated in place); returns the outputs (shape ``state.shape[1:]``).

    Raises
    ------
    ValueError
        ``state`` is not a ``uint32`` array of shape ``(4, ...)`` (nothing is
        converted: a copy would not be updated).
    """
    if not (isinstance(state, np.ndarray) and state.dtype == np.uint32 and state.shape[:1] == (4,)):
        raise ValueError(f"state = {state!r}: must be a uint32 array of shape (4, ...)")
    s0, s1, s2, s3 = state  # views: updated in place
    x = s0 + s3
    result = x << _U7  # rotl(s0 + s3, 7) + s0
    x >>= _U25
    result |= x
    result += s0
    t = s1 << _U9
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= t
    x = s3 >> _U21  # s3 = rotl(s3, 11)
    s3 <<= _U11
    s3 |= x
    return result


def uniforms(out: np.ndarray, rand_bits: int = 16) -> np.ndarray:
    """Fixed-point uniforms ``out >> (32 - rand_bits)`` (SPEC §3.4), as int64.

    Raises
    ------
    ValueError
        ``rand_bits`` not in ``1 .. 32``, or an entry of ``out`` not an integer
        in ``0 .. 2**32 - 1`` (a lane output: nothing wraps).
    """
    rand_bits = bits("rand_bits", rand_bits)
    if not (isinstance(out, np.ndarray) and out.dtype == np.uint32):
        out = int_array("out", out, 0, _M32)
    return (np.asarray(out, dtype=np.uint32) >> np.uint32(32 - rand_bits)).astype(np.int64)
