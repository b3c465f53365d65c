"""Issue 19, item 4: the cases :mod:`tests.test_fuzz_api` found beyond the
golden step functions (the random numbers, the chip configuration, the timing
model), one named regression test each (the models' and the trees' are at the
end of :mod:`tests.test_hardening`)."""

import numpy as np
import pytest

from golden import rng


def test_xoshiro_step_refuses_what_it_cannot_update() -> None:
    """``xoshiro_step(5)`` raised TypeError, ``xoshiro_step([])`` "not enough
    values to unpack", a float64 state a TypeError from ``<<``; a list would be
    stepped as a copy, never updated."""
    for bad in (5, [], np.zeros((4, 2)), rng.lane_states(1, 2)[:3], rng.lane_states(1, 2).tolist()):
        with pytest.raises(
            ValueError, match=r"(?s)^state = .*: must be a uint32 array of shape \(4, \.\.\.\)$"
        ):
            rng.xoshiro_step(bad)
    st = rng.lane_states(1, 2)
    twin = rng.LaneRNG(1, 2)
    assert rng.xoshiro_step(st).tolist() == twin.next().tolist()


def test_batch_seeds_are_not_truncated() -> None:
    """``speculative_generate_batch(seeds=[1.7])`` and ``BatchLaneRNG([1.7], 4)``
    decoded with seed 1 (``int()``); ``[True]`` with seed 1."""
    from golden.batch import BatchLaneRNG, speculative_generate_batch
    from golden.models import SyntheticPair

    pair = SyntheticPair(8, 0.7)
    for bad, msg in [
        ([1.7], r"^seeds\[0\] = 1\.7: must be an integer in 0 \.\. "),
        ([True], r"^seeds\[0\] = True: must be an integer"),
        ("ab", r"^seeds = 'ab': must be a sequence of integers$"),
    ]:
        with pytest.raises(ValueError, match=msg):
            BatchLaneRNG(bad, 4)
        with pytest.raises(ValueError, match=msg):
            speculative_generate_batch(
                pair.target, pair.draft, [[1, 2]], 4, tree=[-1, 0], seeds=bad
            )
