"""Fuzz the chip's configuration (issue 19, item 4): every field of
:class:`sim.chip.ChipConfig`, every override of
:func:`sim.timing.load_profile` (the path behind ``python -m sim.timing --set
FIELD=VALUE``) and the constructor of :class:`sim.topology.TopologyOptimiser`.

A malformed value gives a ``ValueError`` naming it (or the field it must agree
with), or a result that holds it, of the right type; the cases and the rules
are :mod:`tests.test_fuzz_api`'s.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from golden import draft as gdraft
from golden import trees
from sim.chip import ChipConfig
from sim.chip.config import INT_BOUNDS, static_parents
from sim.timing import profiles
from sim.topology import TopologyOptimiser
from tests.test_fuzz_api import ACC, BAD, SETTINGS, Case, names_argument, run_case

# --------------------------------------------------------------------------- chip config

CONFIG_BASES = {
    "sequoia": {},
    "static": {"tree": "static", "parents": (-1, 0, 0, 1)},
    "chain": {"tree": "chain", "depth": 4},
    "eagle2": {"tree": "eagle2"},
}
CONFIG_RELATED = {
    "nodes": ("n_nodes",),
    "n_nodes": ("nodes", "depth", "parents", "N_NODES"),
    "depth": ("n_nodes",),
    "batch": ("seqs", "backend"),
    "seqs": ("batch",),
    "layers": ("layer_bits",),
    "layer_bits": ("layers",),
    "overlap": ("profile",),
    "profile": ("overlap",),
    "children": ("tree",),
    "tree": ("children", "parents", "depth"),
    "parents": ("tree",),
    "backend": ("batch",),
}


def check_config(kw: dict, cfg: ChipConfig) -> None:
    """An accepted configuration holds values of the right types, and what is
    derived from them (the tree, the children rule) works."""
    for name, _, _ in INT_BOUNDS + (("nodes", 0, 0),):
        v = getattr(cfg, name)
        assert isinstance(v, int | np.integer) and not isinstance(v, bool | np.bool_), (name, v)
    for name in ("fallback", "shared_prompt"):
        assert isinstance(getattr(cfg, name), bool | np.bool_), (name, getattr(cfg, name))
    for name in ("profile", "overlap", "tree", "mode", "workload", "backend"):
        assert isinstance(getattr(cfg, name), str), (name, getattr(cfg, name))
    assert cfg.context_offset is None or 0 <= cfg.context_offset <= 1 << 24  # timing's bound
    assert 1 <= cfg.max_tree_nodes <= cfg.n_nodes
    assert cfg.children_rule in gdraft.CHILDREN_RULES
    trees._check_acc(cfg.initial_acc)
    if cfg.tree == "static":
        assert trees._tree.validate(static_parents(cfg), max_nodes=cfg.n_nodes)


CONFIG_CASES = {
    base: Case(
        lambda **k: ChipConfig(**k),
        ChipConfig(**kw).as_kwargs(),
        CONFIG_RELATED,
        nested=("parents", "initial_acc"),
        check=check_config,
    )
    for base, kw in CONFIG_BASES.items()
}


#: the values every field is tried with, besides the fuzzed ones
CANONICAL = [True, "no", float("nan"), -1, 2**70, None, np.array([1, 2]), [], 1.5, np.int64(3)]


class _Fixed:
    """A stand-in for hypothesis's ``data`` whose every ``"value"`` is ``value``
    (and never a near-valid one)."""

    def __init__(self, value: object) -> None:
        self.value = value

    def draw(self, strategy: object, label: str = "") -> object:
        return self.value if label == "value" else False


def test_chip_config_bases_are_valid() -> None:
    for case in CONFIG_CASES.values():
        check_config(case.kw, case.fn(**case.kw))


@pytest.mark.parametrize("name", list(ChipConfig().as_kwargs()))
def test_chip_config_field_canonical_values(name: str) -> None:
    """Every field, on every tree policy, with each of :data:`CANONICAL`."""
    for case in CONFIG_CASES.values():
        for bad in CANONICAL:
            run_case(case, _Fixed(bad), name)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", list(ChipConfig().as_kwargs()))
@settings(SETTINGS, max_examples=12)
@given(data=st.data())
def test_chip_config_field_is_checked(name: str, data: st.DataObject) -> None:
    """Every field of :class:`ChipConfig`, malformed, on every tree policy: a
    ``ValueError`` naming it (or the field it must agree with), or a
    configuration that holds values of the right types."""
    base = data.draw(st.sampled_from(sorted(CONFIG_CASES)), label="base")
    run_case(CONFIG_CASES[base], data, name)


# --------------------------------------------------------------------------- profile overrides

#: values an override may be given (beyond BAD): numbers at the edges of every rule
NUMBERS = st.one_of(
    st.sampled_from([0, 1, -1, 0.5, 2, 3.0, 4, 7, 1e30, 10**400, 2**63, 1 << 24, "rtl", "none"]),
    st.integers(-10, 10**4),
    st.sampled_from([[1.0, 2.0], (3, 4), [0, 1], [1, 2, 3]]),
)
SECTIONS = tuple(profiles._SECTIONS)


def override_keys(name: str) -> list[str]:
    """Every way to name a field of profile ``name``, plus keys that name none."""
    prof = profiles.load_profile(name)
    keys = ["weight_bytes", "draft_weight_bytes", "precision", "warp", "target.", "__", "a.b"]
    for sec in SECTIONS:
        obj = getattr(prof, sec)
        if obj is not None:
            keys += [f"{sec}.{f}" for f in vars(obj)] + [f"{sec}__{f}" for f in list(vars(obj))[:1]]
            keys += list(vars(obj))  # unique or ambiguous short names
    return sorted(set(keys))


OVERRIDE_KEYS = {n: override_keys(n) for n in profiles.known_profiles()}
#: an override's error may name the field it must agree with
PROFILE_RELATED = {
    "params": ("bytes_per_param", "hbm_bytes"),
    "hbm_bytes": ("bytes_per_param", "context_len"),
    "bytes_per_param": ("hbm_bytes",),
    "n_heads": ("n_kv_heads",),
    "max_nodes": ("tree_nodes",),
    "tree_nodes": ("tree_depth", "draft_evals", "context_len"),
    "tree_depth": ("accepted", "draft_evals"),
    "layers": ("context_len",),
    "n_kv_heads": ("context_len",),
    "head_dim": ("context_len",),
    "kv_bytes": ("context_len",),
    "bytes": ("context_len",),
}


def resolve(prof: profiles.Profile, key: str) -> tuple[str, str]:
    key = profiles._ALIASES.get(key, key)
    if key == "precision":
        return "target", "bytes_per_param"
    if "." in key or "__" in key:
        sec, _, f = key.replace("__", ".").partition(".")
        return sec, f
    secs = [s for s in SECTIONS if getattr(prof, s) is not None and key in vars(getattr(prof, s))]
    return (secs[0] if secs else ""), key


@SETTINGS
@given(data=st.data())
def test_profile_override_is_applied_or_named(data: st.DataObject) -> None:
    """``load_profile(name, **{key: value})`` (the path behind ``python -m
    sim.timing --set key=value``): the profile holds the value, or a
    ``ValueError`` names the field."""
    name = data.draw(st.sampled_from(profiles.known_profiles()), label="profile")
    key = data.draw(st.sampled_from(OVERRIDE_KEYS[name]), label="key")
    value = data.draw(
        st.one_of(BAD, NUMBERS, st.sampled_from(list(profiles.PRECISIONS))), label="value"
    )
    try:
        prof = profiles.load_profile(name, **{key: value})
    except ValueError as e:
        sec, f = resolve(profiles.load_profile(name), key)
        names = (key, f or key, f"{sec}.{f}", *PROFILE_RELATED.get(f, ()))
        assert names_argument(str(e), names), (key, value, str(e))
        return
    sec, f = resolve(prof, key)
    got = getattr(getattr(prof, sec), f)
    want = profiles.PRECISIONS[value] if key == "precision" else value
    assert type(got) in (int, float, str, tuple), (key, value, got)
    if isinstance(got, float):  # a number field holds the float of the value
        want = float(want)
    assert got == (tuple(want) if isinstance(want, list) else want), (key, value, got)


# --------------------------------------------------------------------------- topology optimiser


def check_optimiser(kw: dict, opt: TopologyOptimiser) -> None:
    assert type(opt.fallback) is bool and opt.fallback == kw["fallback"]
    assert all(type(b) is int for b in opt.budgets) and opt.budgets[-1] <= opt.n_nodes


OPTIMISER = Case(
    TopologyOptimiser,
    {
        "profile": "specdecode1-7b",
        "n_nodes": 16,
        "max_depth": 4,
        "initial_acc": ACC,
        "overlap": "none",
        "update_every": 2,
        "window": 4,
        "prior_weight": 2.0,
        "max_children": 4,
        "context_len": 100,
        "budgets": [1, 4, 16],
        "fallback": True,
        "probe_depth": 1,
    },
    {
        "profile": ("overlap",),
        "n_nodes": ("probe_depth", "budgets"),
        "initial_acc": ("max_children",),
        "max_children": ("initial_acc",),
    },
    nested=("initial_acc", "budgets"),
    check=check_optimiser,
)


def test_topology_optimiser_valid_arguments_work() -> None:
    check_optimiser(OPTIMISER.kw, OPTIMISER.fn(**OPTIMISER.kw))


@SETTINGS
@given(data=st.data())
def test_topology_optimiser_malformed_argument(data: st.DataObject) -> None:
    run_case(OPTIMISER, data)
