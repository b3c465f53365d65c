"""Fuzz the public APIs beyond the golden step functions (issue 19, item 4).

The models, the draft helpers, the tree policies, the lane generators, the
timing profiles and the acceptance model (the chip configuration, the profile
overrides and the topology optimiser: :mod:`tests.test_fuzz_config`): every
call gives a correct result or a ``ValueError`` whose message names the
argument (or the one it must agree with); never another exception, never a
runaway. A bad call to a stateful object leaves
its state unchanged. The style is :mod:`tests.test_fuzz`'s: each case is a
callable with valid keyword arguments, hypothesis replaces one argument at a
time with a malformed value; derandomised (the same examples every run).
"""

from __future__ import annotations

import re
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from golden import draft as gdraft
from golden import rng as grng
from golden import trees
from golden.draft import StepRecord
from golden.models import NGramModel, SyntheticPair, TableModel, code_prompts, tails_matrix
from sim.timing import acceptance, profiles
from sim.topology import TopologyOptimiser
from tests.test_fuzz import MALFORMED, SCALARS

SETTINGS = settings(
    max_examples=60, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck)
)
#: malformed values beyond test_fuzz's: truthy strings, containers, objects
EXTRA = st.sampled_from(["no", "", "yes", "sample", {}, {"a": 1}, (), object(), 10**30, 1e300])
BAD = st.one_of(MALFORMED, EXTRA)
#: near-valid entries: small integers, and floats and bools equal to them
NEAR_ENTRY = st.sampled_from([0, 1, 2, -1, True, False, 1.0, 2.0, np.int64(2), np.True_, 0.5])
NEAR_FLAT = st.lists(NEAR_ENTRY, min_size=1, max_size=5)
NEAR = st.lists(st.lists(NEAR_ENTRY, max_size=3), min_size=1, max_size=2)
#: arguments (by name) that are drawn near-valid half of the time
NEAR_ARGS = {"contexts": NEAR, "tails": NEAR} | dict.fromkeys(
    ("context", "prompt", "parents", "path", "acc", "initial_acc", "branching", "budgets"),
    NEAR_FLAT,
)
#: malformed nested sequences (contexts, tails, tables, records' paths)
NESTED = st.one_of(
    BAD,
    st.lists(st.one_of(SCALARS, st.lists(SCALARS, max_size=4)), max_size=3),
    st.lists(st.lists(st.integers(-3, 300), max_size=4), min_size=1, max_size=3),
)


@dataclass
class Case:
    """A callable, its valid keyword arguments, and per argument the names its
    errors may use (the argument, or the one it must agree with)."""

    fn: Callable
    kw: dict
    related: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: arguments drawn from NESTED instead of BAD
    nested: tuple[str, ...] = ()
    #: checks an accepted call's result (arguments, result); raises AssertionError
    check: Callable | None = None


def names_argument(msg: str, names: tuple[str, ...]) -> bool:
    """``msg`` names one of ``names`` as a word (``k`` in ``k = 5`` or ``k[0] = 5``,
    not in ``kind``)."""
    return any(re.search(rf"(?<![\w]){re.escape(n)}(?![\w])", msg) for n in names)


class Runaway(Exception):
    """A call ran longer than :data:`TIME_LIMIT` seconds."""


#: seconds a single call may take (every case's valid call takes milliseconds)
TIME_LIMIT = 5.0


@contextmanager
def time_limit(seconds: float = TIME_LIMIT) -> Iterator[None]:
    """Raise :class:`Runaway` in the block after ``seconds`` (a runaway fails the
    test instead of hanging it)."""

    def expire(signum: int, frame: object) -> None:
        raise Runaway(f"a call ran for more than {seconds} s")

    old = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def run_case(case: Case, data: st.DataObject, name: str | None = None) -> None:
    """Call ``case`` with argument ``name`` (drawn if ``None``) replaced by a
    malformed value: a named ``ValueError`` or a result ``case.check`` accepts,
    within :data:`TIME_LIMIT`."""
    if name is None:
        name = data.draw(st.sampled_from(sorted(case.kw)), label="argument")
    bad = data.draw(NESTED if name in case.nested else BAD, label="value")
    if name in NEAR_ARGS and data.draw(st.booleans(), label="near-valid"):
        bad = data.draw(NEAR_ARGS[name], label="value")
    kw = {**case.kw, name: bad}
    try:
        with time_limit():
            out = case.fn(**kw)
    except ValueError as e:
        names = (name, *case.related.get(name, ()))
        assert names_argument(str(e), names), (name, bad, str(e))
        return
    if case.check is not None:
        case.check(kw, out)


# --------------------------------------------------------------------------- models

PAIR = SyntheticPair(8, 0.7, seed=1)
TABLE = TableModel.random(3, 1, order=2)
NGRAM = NGramModel.train(bytes(range(40)) * 3 + b"the quick brown fox", order=3, cache_size=64)
NGRAM_LEVELS = NGramModel.train(b"abcabd", order=2)._levels


def token_ok(t: object, vocab: int) -> bool:
    return isinstance(t, int | np.integer) and not isinstance(t, bool) and 0 <= t < vocab


def check_rows(model: object) -> Callable:
    """An accepted ``probs(contexts)``: one distribution per context, and every token
    the model reads (the last ``context_window``) an integer in range (never a
    float or a bool taken for one)."""

    def check(kw: dict, out: np.ndarray) -> None:
        contexts = kw["contexts"]
        V, w = model.vocab_size, model.context_window
        assert out.shape == (len(contexts), V)
        np.testing.assert_allclose(out.sum(axis=1), 1.0)
        for c in contexts:
            tail = list(c)[-w:] if w else []
            assert all(token_ok(t, V) for t in tail), (contexts, out)

    return check


def check_tail_rows(model: object) -> Callable:
    def check(kw: dict, out: np.ndarray | tuple) -> None:
        t = np.asarray(kw["tails"])
        out = out[0] if isinstance(out, tuple) else out
        assert t.dtype.kind in "iu" and out.shape == (t.shape[0], model.vocab_size)

    return check


MODEL_CASES: dict[str, Case] = {
    "SyntheticPair": Case(SyntheticPair, {"vocab_size": 8, "alpha": 0.7, "seed": 1, "zipf": 1.1}),
    "SyntheticModel.probs": Case(
        PAIR.target.probs,
        {"contexts": [[1, 2], [3]]},
        nested=("contexts",),
        check=check_rows(PAIR.target),
    ),
    "SyntheticModel.probs_tails": Case(
        PAIR.draft.probs_tails,
        {"tails": [[1, 2], [-1, 3]]},
        nested=("tails",),
        check=check_tail_rows(PAIR.draft),
    ),
    "TableModel": Case(TableModel, {"table": TABLE.table, "order": 2}, {"order": ("table",)}),
    "TableModel.random": Case(
        TableModel.random,
        {"V": 3, "seed": 1, "concentration": 1.0, "order": 2},
        {"order": ("V",), "V": ("order",)},
    ),
    "TableModel.probs": Case(
        TABLE.probs,
        {"contexts": [[1, 2], [0], []]},
        nested=("contexts",),
        check=check_rows(TABLE),
    ),
    "TableModel.probs_tails": Case(
        TABLE.probs_tails,
        {"tails": [[1, 2], [-1, 0]]},
        nested=("tails",),
        check=check_tail_rows(TABLE),
    ),
    "TableModel.joint": Case(TABLE.joint, {"prompt": [1, 2], "length": 2}, nested=("prompt",)),
    "NGramModel.train": Case(
        NGramModel.train, {"data": b"abcabd", "order": 3, "discount": 0.75, "cache_size": 8}
    ),
    "NGramModel": Case(
        NGramModel,
        {"order": 2, "discount": 0.5, "levels": NGRAM_LEVELS, "cache_size": 8},
        {"order": ("levels",), "levels": ("order",)},
        nested=("levels",),
    ),
    "NGramModel.probs": Case(
        NGRAM.probs,
        {"contexts": [[1, 2], [3], []]},
        nested=("contexts",),
        check=check_rows(NGRAM),
    ),
    "NGramModel.probs_tails": Case(
        NGRAM.probs_tails,
        {"tails": [[1, 2], [-1, 3]]},
        nested=("tails",),
        check=check_tail_rows(NGRAM),
    ),
    "NGramModel.probs_tails_cdf": Case(
        NGRAM.probs_tails_cdf,
        {"tails": [[1, 2], [-1, 3]]},
        nested=("tails",),
        check=check_tail_rows(NGRAM),
    ),
    "code_prompts": Case(  # a missing file is a FileNotFoundError (documented): not fuzzed
        lambda n, length, seed: code_prompts(n, length, seed, files=["bisect.py"]),
        {"n": 2, "length": 8, "seed": 1},
    ),
    "tails_matrix": Case(
        tails_matrix, {"contexts": [[1, 2], [3]], "window": 2}, nested=("contexts",)
    ),
}

# --------------------------------------------------------------------------- draft helpers

RNG_SEED = 7


def _draw_tree(**kw: object) -> gdraft.DraftTree:
    return gdraft.draw_tree(rng=np.random.default_rng(RNG_SEED), **kw)


DRAFT_CASES: dict[str, Case] = {
    "check_children_rule": Case(gdraft.check_children_rule, {"children": "iid"}),
    "checked_model": Case(
        gdraft.checked_model,
        {"model": PAIR.target, "role": "target", "check": True},
        {"model": ("target",), "check": ("check_models",)},  # the decoders' name of it
    ),
    "CheckedModel.probs": Case(
        gdraft.CheckedModel(PAIR.target, "target").probs,
        {"contexts": [[1, 2]]},
        nested=("contexts",),
        check=check_rows(PAIR.target),
    ),
    "context_tail": Case(
        gdraft.context_tail, {"model": PAIR.draft, "context": [1, 2, 3]}, nested=("context",)
    ),
    "draw_tree": Case(
        _draw_tree,
        {"parents": [-1, 0, 0, 1], "draft": PAIR.draft, "context": [1, 2], "children": "swor"},
        nested=("parents", "context"),
    ),
    "draw_tree.rng": Case(
        gdraft.draw_tree,
        {
            "parents": [-1, 0],
            "draft": PAIR.draft,
            "context": [1, 2],
            "children": "iid",
            "rng": np.random.default_rng(1),
        },
    ),
}


# --------------------------------------------------------------------------- trees

ACC = [0.6, 0.2, 0.1]


RECORD_RELATED = {"parents": ("record.path",), "path": ("record.path",)}


def record(parents: object = (-1, 0, 0, 1), path: object = (0, 1, 3)) -> StepRecord:
    return StepRecord(
        list(parents) if isinstance(parents, tuple) else parents,
        [],
        0,
        list(path) if isinstance(path, tuple) else path,
        0,
        [],
    )


def check_tree(kw: dict, out: object) -> None:
    """A parent list of Python ints, parents before children."""
    parents = out[0] if isinstance(out, tuple) else out
    assert type(parents) is list and parents[0] == -1
    assert all(type(p) is int and 0 <= p < i for i, p in enumerate(parents[1:], 1))


def _observe(**kw: object) -> None:
    policy = trees.AdaptiveSequoia(8, 4, ACC, update_every=1)
    policy.observe(record(**kw))


def _estimate(
    records: object = None,
    parents: object = (-1, 0, 0, 1),
    path: object = (0, 1, 3),
    max_children: object = 3,
) -> np.ndarray:
    recs = [record(parents, path)] if records is None else records
    return trees.estimate_acceptance(recs, max_children)


TREE_CASES: dict[str, Case] = {
    "chain": Case(trees.chain, {"k": 3}, check=check_tree),
    "star": Case(trees.star, {"k": 3}, check=check_tree),
    "full_tree": Case(
        trees.full_tree, {"branching": [2, 2]}, nested=("branching",), check=check_tree
    ),
    "StaticTree": Case(trees.StaticTree, {"parents": [-1, 0, 0]}, nested=("parents",)),
    "Chain": Case(trees.Chain, {"k": 3}),
    "chain_expected_accepted": Case(trees.chain_expected_accepted, {"alpha": 0.7, "gamma": 4}),
    "expected_accepted": Case(
        trees.expected_accepted, {"parents": [-1, 0, 0, 1], "acc": ACC}, nested=("parents", "acc")
    ),
    "estimate_acceptance": Case(
        _estimate,
        {"parents": (-1, 0, 0, 1), "path": (0, 1, 3), "max_children": 3},
        RECORD_RELATED,
        nested=("parents", "path"),
    ),
    "estimate_acceptance.records": Case(
        _estimate,
        {"records": [record()], "max_children": 3},
        {"records": ("record",)},
        nested=("records",),
    ),
    "sequoia_tree": Case(
        trees.sequoia_tree,
        {"acc": ACC, "n_nodes": 8, "max_depth": 4},
        nested=("acc",),
        check=check_tree,
    ),
    "SequoiaTree": Case(
        trees.SequoiaTree, {"acc": ACC, "n_nodes": 8, "max_depth": 4}, nested=("acc",)
    ),
    "check_prior": Case(
        trees.check_prior,
        {"initial_acc": ACC, "max_children": 4, "prior_weight": 2.0},
        {"max_children": ("initial_acc",), "initial_acc": ("max_children",)},
        nested=("initial_acc",),
    ),
    "AdaptiveSequoia": Case(
        trees.AdaptiveSequoia,
        {
            "n_nodes": 8,
            "max_depth": 4,
            "initial_acc": ACC,
            "update_every": 2,
            "max_children": 4,
            "prior_weight": 2.0,
        },
        {"max_children": ("initial_acc",), "initial_acc": ("max_children",)},
        nested=("initial_acc",),
    ),
    "AdaptiveSequoia.observe": Case(
        _observe,
        {"parents": (-1, 0, 0, 1), "path": (0, 1, 3)},
        RECORD_RELATED,
        nested=("parents", "path"),
    ),
    "Eagle2Tree": Case(trees.Eagle2Tree, {"n_nodes": 8, "depth": 3, "topk": 2}),
    "Eagle2Tree.build": Case(
        lambda **kw: trees.Eagle2Tree(8, 3, 2).build(rng=np.random.default_rng(1), **kw),
        {"draft": PAIR.draft, "context": [1, 2], "children": "topk"},
        nested=("context",),
    ),
}

# --------------------------------------------------------------------------- rng

RNG_CASES: dict[str, Case] = {
    "lane_states": Case(grng.lane_states, {"seed": 3, "lanes": 4}),
    "xoshiro_step": Case(grng.xoshiro_step, {"state": grng.lane_states(1, 2)}, nested=("state",)),
}

# --------------------------------------------------------------------------- timing

PROFILE = profiles.load_profile("specdecode1-7b")

TIMING_CASES: dict[str, Case] = {
    "load_profile": Case(lambda name: profiles.load_profile(name), {"name": "specdecode1-7b"}),
    "check_step": Case(
        profiles.check_step,
        {
            "p": PROFILE,
            "tree_nodes": 8,
            "tree_depth": 3,
            "accepted": 2,
            "context_len": 100,
            "draft_evals": 4,
            "overlap": "none",
            "prefix": "",
        },
        {
            "tree_nodes": ("tree_depth", "draft_evals", "context_len"),
            "tree_depth": ("accepted", "draft_evals"),
            "prefix": ("tree_nodes",),
        },
    ),
    "chain_alpha": Case(
        acceptance.chain_alpha, {"mean_accepted": 2.5, "depth": 4}, {"depth": ("mean_accepted",)}
    ),
    "predicted_tip_probability": Case(
        acceptance.predicted_tip_probability,
        {"mean_accepted": 2.5, "depth": 4},
        {"depth": ("mean_accepted",)},
    ),
    "accepted_distribution": Case(acceptance.accepted_distribution, {"alpha": 0.7, "depth": 4}),
    "draft_evals_of": Case(
        acceptance.draft_evals_of, {"parents": [-1, 0, 0, 1]}, nested=("parents",)
    ),
}

CASES: dict[str, Case] = {
    **MODEL_CASES,
    **DRAFT_CASES,
    **TREE_CASES,
    **RNG_CASES,
    **TIMING_CASES,
}


@pytest.mark.parametrize("case", list(CASES))
def test_valid_arguments_work(case: str) -> None:
    c = CASES[case]
    out = c.fn(**c.kw)
    if c.check is not None:
        c.check(c.kw, out)


@pytest.mark.parametrize("case", list(CASES))
@SETTINGS
@given(data=st.data())
def test_malformed_argument_is_named_or_handled(case: str, data: st.DataObject) -> None:
    run_case(CASES[case], data)


# --------------------------------------------------------------------------- no state changed
# a call that raised ValueError leaves its object as an untouched twin: the same
# observable state now and the same outputs after the same later calls

GOOD_PATHS = [(0, 1, 3), (0, 2), (0,), (0, 1), (0, 1, 3), (0, 2)]


#: paths and parent lists that go wrong late (after valid entries)
NEAR_PATHS = st.lists(st.integers(-1, 5), max_size=4).map(lambda t: [0, *t])
NEAR_PATHS |= st.lists(st.integers(-1, 5), max_size=4).map(lambda t: [-1, 0, 0, *t])


def policy_state(policy: object) -> tuple:
    if isinstance(policy, TopologyOptimiser):
        extra = (policy._hits.tolist(), policy._trials.tolist(), policy.mode, len(policy.history))
    else:
        extra = (policy.hits.tolist(), policy.trials.tolist(), policy.n_solves, policy.expected)
    return (policy.n_observed, policy.parents(), *extra)


def make_policy(kind: str) -> object:
    if kind == "adaptive":
        return trees.AdaptiveSequoia(8, 4, ACC, update_every=2, max_children=4)
    return TopologyOptimiser("specdecode1-7b", 16, 4, ACC, update_every=2, budgets=[1, 4, 16])


@SETTINGS
@given(data=st.data())
def test_bad_observation_changes_no_policy(data: st.DataObject) -> None:
    """``AdaptiveSequoia.observe`` and ``TopologyOptimiser.observe`` (what a
    policy is fed per step) of a malformed record."""
    kind = data.draw(st.sampled_from(["adaptive", "topology"]), label="policy")
    policy, twin = make_policy(kind), make_policy(kind)
    for path in GOOD_PATHS[: data.draw(st.integers(0, 3), label="warm-up")]:
        policy.observe(record(path=path))
        twin.observe(record(path=path))
    field = data.draw(st.sampled_from(["parents", "path", "record"]), label="field")
    bad = data.draw(st.one_of(NESTED, NEAR_PATHS), label="value")
    rec = bad if field == "record" else record(**{field: bad})
    try:
        policy.observe(rec)
    except ValueError:
        pass
    else:
        twin.observe(rec)  # a valid record after all: both see it
    assert policy_state(policy) == policy_state(twin)
    for path in GOOD_PATHS:
        policy.observe(record(path=path))
        twin.observe(record(path=path))
        assert policy_state(policy) == policy_state(twin)


GOOD_CONTEXTS = [[1, 2], [2], [], [2, 2, 1], [0, 1]]  # tokens of both vocabularies
MORE_CONTEXTS = [[1, 0], [2, 1], [0], [1, 2]]


def make_model(kind: str) -> object:
    if kind == "ngram":  # a small cache: the fills and clears are exercised too
        return NGramModel(NGRAM.order, NGRAM.discount, NGRAM._levels, cache_size=4)
    return TableModel(TABLE.table, order=2)


def model_state(model: object) -> tuple:
    rows = (model.probs(MORE_CONTEXTS).tobytes(), model.probs_tails([[1, 2], [-1, 0]]).tobytes())
    if isinstance(model, NGramModel):
        return (
            *rows,
            sorted(model._index),
            model._n_rows,
            model.probs_tails_cdf([[0, 1]])[1].tobytes(),
        )
    return rows


@SETTINGS
@given(data=st.data())
def test_bad_contexts_change_no_model(data: st.DataObject) -> None:
    """``probs`` / ``probs_tails`` / ``probs_tails_cdf`` of malformed contexts on
    the models with caches (:class:`NGramModel`'s rows, folds and cdfs,
    :class:`TableModel`'s row index)."""
    kind = data.draw(st.sampled_from(["ngram", "table"]), label="model")
    model, twin = make_model(kind), make_model(kind)
    warm = GOOD_CONTEXTS[: data.draw(st.integers(0, 5), label="warm-up")]
    model.probs(warm)
    twin.probs(warm)
    methods = ["probs", "probs_tails"] + (["probs_tails_cdf"] if kind == "ngram" else [])
    method = data.draw(st.sampled_from(methods), label="method")
    bad = data.draw(NESTED, label="value")
    try:
        getattr(model, method)(bad)
    except ValueError:
        pass
    else:
        getattr(twin, method)(bad)
    before = model_state(twin)
    assert model_state(model) == before


LANE_STATES: dict[str, Callable[[np.ndarray], object]] = {
    "transposed": lambda s: s.T,
    "three rows": lambda s: s[:3],
    "int64 copy": lambda s: s.astype(np.int64),
    "list": lambda s: s.tolist(),
    "one row": lambda s: s[0],
}


@SETTINGS
@given(data=st.data())
def test_bad_calls_change_no_lane_rng(data: st.DataObject) -> None:
    """:func:`golden.rng.xoshiro_step` of a malformed view of a ``LaneRNG``'s
    state, and :meth:`golden.batch.BatchLaneRNG.keep` of malformed rows."""
    from golden.batch import BatchLaneRNG

    lane, twin = grng.LaneRNG(5, 3), grng.LaneRNG(5, 3)
    batch, btwin = BatchLaneRNG([1, 2, 3], 3), BatchLaneRNG([1, 2, 3], 3)
    for _ in range(data.draw(st.integers(0, 3), label="steps")):
        lane.next(), twin.next(), batch.next(), btwin.next()
    view = data.draw(st.sampled_from(sorted(LANE_STATES)), label="state")
    with pytest.raises(ValueError, match=r"^state = "):
        grng.xoshiro_step(LANE_STATES[view](lane.state))
    rows = data.draw(st.one_of(NESTED, st.sampled_from([np.ones(2, bool), [3], [-1], [0.5]])))
    try:
        batch.keep(rows)
    except ValueError as e:
        assert names_argument(str(e), ("rows",)), str(e)
    else:
        btwin.keep(rows)
    for _ in range(3):
        assert lane.next().tolist() == twin.next().tolist()
        assert batch.next().tolist() == btwin.next().tolist()
