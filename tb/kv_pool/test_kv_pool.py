"""pytest runner: the KV pool testbench (:mod:`tb.kv_pool.tests`) per parameter set."""

import os

import pytest

from tb.common import FULL_ONLY, run_block, sized
from tb.kv_pool.scoreboard import OPS, PUBLIC


def _full(hdl: dict):
    return pytest.param(hdl, marks=FULL_ONLY)


#: parameter sets: ENTRIES / PAGES in {16, 64, 256} x SEQS in {1, 8} (256 / 256 / 8 /
#: 64: the defaults), plus odd sizes
#: (non-power-of-two SEQS and N_NODES make the range errors reachable; ENTRIES !=
#: PAGES makes "no free page" and "table full" distinct). ``make test`` runs the sets
#: that reach every code path: SEQS = 1 (one sequence bit per entry) with more than
#: 32 entries (grouped first-free search) and N_NODES > 256 (two-cycle lookups: the
#: 40-entry set, decision 0054), the odd sizes, and TARGET="fpga" with
#: ENTRIES > PAGES and one group cut short (ENTRIES < PAGES with several groups in
#: ``make sim-full``, decision 0049); the
#: defaults (also in the chip co-simulation, tests/test_chip.py) and the other
#: power-of-two sizes run in ``make sim-full``.
PARAM_SETS = [
    _full({"ENTRIES": 16, "PAGES": 16, "SEQS": 1, "N_NODES": 8}),
    _full({"ENTRIES": 16, "PAGES": 16, "SEQS": 8, "N_NODES": 8}),
    _full({"ENTRIES": 64, "PAGES": 64, "SEQS": 1, "N_NODES": 16}),
    _full({"ENTRIES": 64, "PAGES": 64, "SEQS": 8, "N_NODES": 64}),
    _full({"ENTRIES": 256, "PAGES": 256, "SEQS": 1, "N_NODES": 16}),
    _full({"ENTRIES": 256, "PAGES": 256, "SEQS": 8, "N_NODES": 64}),
    {"ENTRIES": 24, "PAGES": 16, "SEQS": 3, "N_NODES": 6, "LAYER_BITS": 2, "POS_BITS": 4},
    # TARGET="fpga" (replicated decisions, two-cycle lookups): the defaults, and odd
    # sizes with ENTRIES > PAGES and ENTRIES < PAGES, replicas of 16 entries cut short
    _full({"ENTRIES": 256, "PAGES": 256, "SEQS": 8, "N_NODES": 64, "TARGET": "fpga"}),
    {
        "ENTRIES": 24,
        "PAGES": 16,
        "SEQS": 3,
        "N_NODES": 6,
        "LAYER_BITS": 2,
        "POS_BITS": 4,
        "TARGET": "fpga",
    },
    # N_NODES > 256: TARGET="asic" with two-cycle lookups (hw.kv_pool.asic_staged, decision
    # 0052): SEQS = 1, 40 entries (a group cut short) over 36 pages, the owner range
    # reachable; 1,024 nodes at the default size in make sim-full
    {"ENTRIES": 40, "PAGES": 36, "SEQS": 1, "N_NODES": 300, "LAYER_BITS": 2, "POS_BITS": 4},
    _full({"ENTRIES": 256, "PAGES": 256, "SEQS": 8, "N_NODES": 1024}),
    # make sim-full (decision 0049): the odd fpga set above has ENTRIES > PAGES and a cut
    # replica; this one ENTRIES < PAGES and several replicas
    _full({"ENTRIES": 40, "PAGES": 48, "SEQS": 2, "N_NODES": 8, "TARGET": "fpga"}),
]


@pytest.mark.parametrize("hdl", PARAM_SETS, ids=lambda d: "-".join(f"{v}" for v in d.values()))
def test_kv_pool(hdl: dict) -> None:
    # make sim-full: OPS on the six sets, a fifth of them on the odd sizes;
    # make test: a fifth everywhere
    six = hdl["ENTRIES"] in (16, 64, 256) and "TARGET" not in hdl and hdl["N_NODES"] <= 64
    full = OPS if six else OPS // 5
    env = {"KV_OPS": os.environ.get("KV_OPS", str(sized(OPS // 5, full)))}
    run_block("kv_pool", hdl, "tb.kv_pool.tests", extra_env=env, public=PUBLIC)
