"""The ``rtl`` backend's hardware-builder policy without a simulator
(:mod:`sim.rtl.builder`): the configuration beats it sends for a golden twin."""

import json
import random

import pytest

from golden.builder import FixedEagle2Tree, FixedStaticTree
from sim.rtl.builder import bcfg_of, ocfg_beat
from tb import topology_optimiser_stim as stim


@pytest.fixture
def P(monkeypatch):
    """The optimiser testbench's parameter set at the RTL's defaults."""
    p = {"N_MAX": 64, "D_MAX": 8, "R": 8, "ACC_BITS": 16, "NB": 8, "WIN": 32}
    monkeypatch.setenv("TB_PARAMS", json.dumps(p))
    return stim.P()


def test_ocfg_beat_round_trips_random_configurations(P):
    """A configuration beat made into the golden twin and back is the same beat:
    every field the optimiser's testbench drives comes from the twin's own."""
    seed = 2026
    print(f"seed {seed}")
    rng = random.Random(seed)
    for _ in range(300):
        c = stim.random_cfg(rng, P)
        assert ocfg_beat(stim.golden_for(c, P), P.NB) == c


def test_ocfg_beat_refuses_more_budgets_than_the_rtl_holds(P):
    rng = random.Random(1)
    c = stim.random_cfg(rng, P)
    while c["nb"] < 2:
        c = stim.random_cfg(rng, P)
    with pytest.raises(ValueError, match="NB = 1"):
        ocfg_beat(stim.golden_for(c, P), 1)


def test_bcfg_of_each_policy():
    shape = [-1, 0, 0, 1]
    assert bcfg_of(FixedStaticTree(shape, 2)) == (
        {"mode": 0, "k": 2, "m": 0, "d": 0, "w": 0, "opt": 0},
        shape,
    )
    cfg, none = bcfg_of(FixedEagle2Tree(16, 4, 3, 2))
    assert none is None and cfg == {"mode": 1, "k": 3, "m": 16, "d": 4, "w": 2, "opt": 0}
    with pytest.raises(ValueError, match="policy"):
        bcfg_of(object())
