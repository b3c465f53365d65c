"""The hardware tree builder's and optimiser's cycles in the chip's timing (sim.build_cycles)."""

from __future__ import annotations

import math

import pytest

from golden.builder import FixedEagle2Tree, FixedStaticTree, FixedTopologyOptimiser
from golden.draft import StepRecord
from golden.models import code_prompts, default_ngram_pair
from sim import build_cycles as B
from sim.chip import Chip, ChipConfig
from sim.cycles import accept_cycles


def test_formulas() -> None:
    assert B.stream_cycles(32000, 4, 3) == 3 * 8000
    assert B.stream_cycles(10, 4, 2) == 6
    assert B.static_build_cycles(20) == 20 + B.STATIC_TAIL
    assert B.dynamic_build_cycles(40, 16) == 40 + 16 + B.DYNAMIC_TAIL
    assert B.solve_cycles(64, 8, 8, 8, 16, 8, 64) <= 1 << 18  # the target at M = 64, D = K = 8
    assert B.dp_cycles(128, 8, 8) > 3 * B.dp_cycles(64, 8, 8)  # quadratic in the budget
    # the engine's schedule, by hand: L * K passes of 1 + B (B + 1) / 2 slots + 5, plus 2
    assert B.dp_cycles(64, 8, 8) == 8 * 8 * (1 + 63 * 64 // 2 + 5) + 2
    assert B.dp_cycles(8, 3, 16) == 3 * 7 * (1 + 7 * 8 // 2 + 5) + 2  # K capped at M - 1
    with pytest.raises(ValueError, match="lanes = 17"):
        B.stream_cycles(10, 17, 1)
    with pytest.raises(ValueError, match="budget = 1"):
        B.dp_cycles(1, 2, 2)


def test_policies_cycles() -> None:
    _, draft = default_ngram_pair()
    ctx = code_prompts(1, 40, 2)[0]
    st = FixedStaticTree([-1, 0, 0, 1, 1, 2], 2)
    assert B.draft_cycles(st, 32000, 4) == B.BuildCycles()  # nothing built yet
    st.build(draft, ctx, "topk", None)
    c = B.draft_cycles(st, 32000, 4)
    assert c.stream == len(st.last.expanded) * 8000 and st.last.expanded[0] == 0
    assert c.build == 6 + B.STATIC_TAIL  # the shape's nodes, pruned ones too
    dy = FixedEagle2Tree(16, 4, 3)
    dy.build(draft, ctx, "topk", None)
    c = B.draft_cycles(dy, 32000, 4)
    assert c.stream == len(dy.last.expanded) * 8000
    assert c.build == len(dy.last.cand_parents) - 1 + 16 + B.DYNAMIC_TAIL
    assert B.draft_cycles(object(), 32000, 4) == B.BuildCycles()


def test_resolve_cycles_only_on_a_resolve() -> None:
    opt = FixedTopologyOptimiser(16, 4, [0.6, 0.2], [100, 150, 200], 60, budgets=[4, 8, 16],
                                 update_every=2)  # fmt: skip
    rec = StepRecord([-1, 0], [0, 1], 1, [0, 1], 1, [])
    n = len(opt.history)
    opt.observe(rec)
    assert B.resolve_cycles(opt, n) == 0
    opt.observe(rec)
    size = opt.history[-1].n_nodes
    assert B.resolve_cycles(opt, n) == B.solve_cycles(16, 4, 2, 8, 16, 3, size)


def test_chip_charges_the_builder() -> None:
    """With the hardware builder the step's pre-verify cycles are the builder's tail
    plus the mask generator's latency, and a re-solve lands after the decision."""
    cfg = ChipConfig(tree="sequoia", nodes=16, depth=4, builder="hardware", update_every=2,
                     tokens=24)  # fmt: skip
    res = Chip(cfg).run()
    prof = cfg.timing_profile()
    for step in res.steps:
        (r,) = step.seqs
        cyc = step.timing.cycles
        assert cyc.build == r.tm_cycles["build"] and cyc.optimise == r.tm_cycles["optimise"]
        model = accept_cycles(r.n_nodes, prof.target.vocab, prof.tree_manager.lanes)
        assert cyc.pre_verify == r.tm_cycles["build"] + (model.mask - r.n_nodes)
        us = 1e6 / prof.hardware.clock_hz
        exposed = max(0.0, r.tm_cycles["build_stream"] * us - step.timing.draft_us)
        assert math.isclose(step.timing.tree_us, cyc.pre_verify * us + exposed)
    assert sum(s.seqs[0].tm_cycles["optimise"] > 0 for s in res.steps) == len(res.steps) // 2
