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


CONFIG_CASES = [
    ({"prompt_seed": 2**64}, r"^prompt_seed = 18446744073709551616: must be an integer in 0 \.\. "),
    (
        {"tree": np.array(["chain", "x"])},
        r"^tree = array\(\['chain', 'x'\], dtype='<U5'\): must be one of",
    ),
    (
        {"overlap": np.array(["none", "x"])},
        r"^overlap = array\(.*\): profile specdecode1-7b supports",
    ),
    ({"children": np.array([1, 2])}, r"^children = array\(\[1, 2\]\): must be one of 'iid'"),
    ({"shared_prompt": "no"}, r"^shared_prompt = 'no': must be True or False$"),
    ({"shared_prompt": 0}, r"^shared_prompt = 0: must be True or False$"),
    (
        {"context_offset": 2**70},
        r"^context_offset = 1180591620717411303424: must be an integer in 0 \.\. 16777216$",
    ),
    ({"profile": "tpu"}, r"^profile = 'tpu': unknown profile; known profiles are h100-70b"),
    ({"profile": np.array(["x"])}, r"^profile = array\(\['x'\], dtype='<U1'\): unknown profile"),
]


@pytest.mark.parametrize(("kw", "msg"), CONFIG_CASES, ids=lambda x: str(x)[:30])
def test_chip_config_choices_booleans_and_offset(kw, msg) -> None:
    """``ChipConfig(tree=np.array([...]))`` (and ``mode``, ``backend``,
    ``workload``, ``children``, ``overlap``) raised numpy's "truth value of an
    array is ambiguous"; ``shared_prompt="no"`` was truthy: every sequence
    shared one prompt; ``context_offset=2**70`` was accepted and failed in the
    timing as ``context_len``; ``prompt_seed=2**64`` failed at run time in
    ``code_prompts`` as ``seed``."""
    from sim.chip import ChipConfig

    with pytest.raises(ValueError, match=msg):
        ChipConfig(**kw)


def test_timing_acceptance_model_checks_its_arguments() -> None:
    """``chain_alpha(2.5, 2**70)`` never returned (a sum of 2**70 terms per
    bisection step); ``chain_alpha([0.1], 4)`` and ``accepted_distribution([1], 4)``
    raised TypeError; ``accepted_distribution(0.5, -1)`` IndexError,
    ``(0.5, 1.2e17)`` MemoryError; ``draft_evals_of([-1, 0.7])`` counted node 0
    (``int()`` truncated), ``draft_evals_of("abc")`` raised int()'s error."""
    import time

    from sim.timing import acceptance

    t0 = time.monotonic()
    for fn in (acceptance.chain_alpha, acceptance.predicted_tip_probability):
        with pytest.raises(
            ValueError, match=r"^depth = 1180591620717411303424: must be an integer in 0 \.\. 1023$"
        ):
            fn(2.5, 2**70)
        with pytest.raises(
            ValueError, match=r"^mean_accepted = \[0\.1\]: must be a finite number in \[0, 4\]$"
        ):
            fn([0.1], 4)
    assert time.monotonic() - t0 < 1.0
    for args, msg in [
        (([1], 4), r"^alpha = \[1\]: must be a finite number in \[0, 1\]$"),
        ((0.5, -1), r"^depth = -1: must be an integer in 0 \.\. 1023$"),
        ((0.5, 1.2e17), r"^depth = 1\.2e\+17: must be an integer"),
    ]:
        with pytest.raises(ValueError, match=msg):
            acceptance.accepted_distribution(*args)
    with pytest.raises(ValueError, match=r"^parents\[1\] = 0\.7: must be an integer$"):
        acceptance.draft_evals_of([-1, 0.7])
    with pytest.raises(ValueError, match=r"^parents\[0\] = 'a': must be an integer$"):
        acceptance.draft_evals_of("abc")


def test_profiles_name_the_argument() -> None:
    """``load_profile(np.array(["x"]))`` raised numpy's ambiguous-truth error,
    ``load_profile(p, precision=[1])`` "unhashable type", ``hbm_bw=10**400``
    OverflowError, and an override of the field ``name`` (``target.name`` as a
    keyword) "got multiple values for argument 'name'"; ``check_step(None, ...)``
    raised AttributeError and ``overlap=np.array(...)`` the ambiguous-truth error."""
    from sim.timing import profiles

    for name in (np.array(["x", "y"]), None, "tpu"):
        with pytest.raises(
            ValueError, match=r"^name = .*: unknown profile; known profiles are h100"
        ):
            profiles.load_profile(name)
    for kw, msg in [
        ({"precision": [1]}, r"^precision = \[1\]: must be one of 'fp32', 'bf16'"),
        ({"hbm_bw": 10**400}, r"^hardware\.hbm_bw = 10{400}: must be finite$"),
        ({"name": "x"}, r"^override 'name': ambiguous, use one of target\.name, draft\.name$"),
    ]:
        with pytest.raises(ValueError, match=msg):
            profiles.load_profile("specdecode1-7b", **kw)
    p = profiles.load_profile("specdecode1-7b")
    args = {"tree_nodes": 8, "tree_depth": 3, "accepted": 2, "context_len": 100, "draft_evals": 4}
    with pytest.raises(ValueError, match=r"^p = None: must be a Profile"):
        profiles.check_step(None, **args, overlap="none")
    with pytest.raises(
        ValueError, match=r"^overlap = array\(.*\): profile specdecode1-7b supports"
    ):
        profiles.check_step(p, **args, overlap=np.array(["none", "x"]))
    with pytest.raises(ValueError, match=r"^prefix = 5: must be a string$"):
        profiles.check_step(p, **args, overlap="none", prefix=5)


def test_topology_optimiser_checks_fallback_and_budgets() -> None:
    """``TopologyOptimiser(fallback="no")`` kept the fallback on (``bool("no")``),
    ``fallback=np.array([0, 1])`` raised numpy's ambiguous-truth error,
    ``budgets=nan`` a TypeError; ``budgets=[1.5]`` blamed ``budgets[]``."""
    from sim.topology import TopologyOptimiser

    args = ("specdecode1-7b", 16, 4, [0.6, 0.2])
    for bad in ("no", 0, np.array([0, 1])):
        with pytest.raises(ValueError, match=r"^fallback = .*: must be True or False$"):
            TopologyOptimiser(*args, fallback=bad)
    with pytest.raises(ValueError, match=r"^budgets = nan: must be a sequence of integers$"):
        TopologyOptimiser(*args, budgets=float("nan"))
    with pytest.raises(ValueError, match=r"^budgets\[1\] = 1\.5: must be an integer >= 1$"):
        TopologyOptimiser(*args, budgets=[4, 1.5])
    assert TopologyOptimiser(*args, fallback=np.False_).fallback is False


def test_batch_lane_rng_keep_checks_rows_and_changes_nothing_on_error() -> None:
    """``BatchLaneRNG.keep([5])`` raised IndexError, ``keep([0.5])`` IndexError and
    a mask of the wrong length numpy's IndexError."""
    from golden.batch import BatchLaneRNG

    b, twin = BatchLaneRNG([1, 2, 3], 4), BatchLaneRNG([1, 2, 3], 4)
    for rows, msg in [
        ([5], r"^rows\[0\] = 5: must be an integer in 0 \.\. 2$"),
        ([0.5], r"^rows\[0\] = 0\.5: must be an integer"),
        (np.ones(2, bool), r"^rows has shape \(2,\): expected \(3,\)$"),
    ]:
        with pytest.raises(ValueError, match=msg):
            b.keep(rows)
    assert b.next().tolist() == twin.next().tolist()
    b.keep(np.array([True, False, True]))
    twin.keep([0, 2])
    assert b.next().tolist() == twin.next().tolist()


def test_table_model_random_bounds_the_table_not_only_its_rows() -> None:
    """``TableModel.random(2**17, 1)`` asked numpy for 128 GiB (131,073 rows were
    under the 2**22-row bound, but of 131,072 entries each)."""
    from golden.models import TableModel

    with pytest.raises(ValueError, match=r"^V = 131072, order = 1: a table of .* is too large"):
        TableModel.random(2**17, 1)
    assert TableModel.random(2**10, 1).table.shape == (1025, 1024)


def test_eagle2_tree_names_its_arguments() -> None:
    """``Eagle2Tree(2**20, 8, 4)`` was accepted (its trees are refused everywhere:
    more than N_NODES); ``build(draft=None)`` raised AttributeError,
    ``build(context=5)`` TypeError, ``build(children=np.array(["topk", "x"]))``
    numpy's ambiguous-truth error."""
    from golden.models import SyntheticPair
    from golden.trees import Eagle2Tree

    with pytest.raises(ValueError, match=r"^n_nodes = 1048576: must be an integer in 1 \.\. 1024$"):
        Eagle2Tree(2**20, 8, 4)
    tree, pair, gen = Eagle2Tree(8, 3, 2), SyntheticPair(8, 0.7), np.random.default_rng(1)
    for kw, msg in [
        ({"draft": None}, r"^draft = None: must be a model with probs"),
        ({"context": 5}, r"^context = 5: must be a sequence of tokens$"),
        ({"context": [1, 2.5]}, r"^context\[1\] = 2\.5: must be an integer in 0 \.\. 7$"),
        (
            {"children": np.array(["topk", "x"])},
            r"^children = array\(.*\): Eagle2Tree builds top-k",
        ),
    ]:
        args = {"draft": pair.draft, "context": [1, 2], "children": "topk", **kw}
        with pytest.raises(ValueError, match=msg):
            tree.build(rng=gen, **args)


def test_code_prompts_checks_seed_count_and_length() -> None:
    """``code_prompts(2, 4, seed="x")`` raised TypeError, ``seed=-1`` numpy's
    "expected non-negative integer", ``seed=True`` drew with seed 1;
    ``length=2**70`` raised OverflowError; ``n=10**9`` asked for 10**9 prompts."""
    from golden.models import code_prompts

    files = ["bisect.py"]
    for kw, msg in [
        ({"seed": "x"}, r"^seed = 'x': must be an integer in 0 \.\. "),
        ({"seed": -1}, r"^seed = -1: must be an integer in 0 \.\. "),
        ({"seed": True}, r"^seed = True: must be an integer"),
        ({"length": 2**70}, r"^length = 1180591620717411303424: longer than the held-out text"),
        ({"n": 10**9}, r"^n = 1000000000: must be an integer in 0 \.\. 1048576$"),
    ]:
        with pytest.raises(ValueError, match=msg):
            code_prompts(**{"n": 2, "length": 4, "seed": 1, "files": files, **kw})


def test_timing_overrides_that_divided_by_zero() -> None:
    """``--set article.accept_us=0`` divided by zero in the disagreements; a rate of
    1e-300 (positive) overflowed every time it divided: refused, named."""
    from sim.timing import load_profile
    from sim.timing.summary import profile_summary

    s = profile_summary(load_profile("specdecode1-7b", **{"article.accept_us": 0}))
    assert any(d["topic"] == "accept/commit" for d in s["disagreements"])
    for key in ("hardware.clock_hz", "hardware.hbm_bw", "kv_pool.bw"):
        with pytest.raises(ValueError, match=rf"^{key} = 1e-300: must be in 1e-12"):
            load_profile("specdecode1-7b", **{key: 1e-300})
