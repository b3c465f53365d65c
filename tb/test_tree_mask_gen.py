"""Testbench: tree mask generator (hw/tree_mask_gen.py) against golden.tree (SPEC §2, §6).

Driver: parent beats on ``i`` (idle patterns). Monitor: rows on ``o``
(backpressure patterns) and ``error`` pulses. Model: ``golden.tree.mask_rows``
and ``golden.tree.depths``; invalid trees are those ``golden.tree.validate``
rejects (or larger than ``N_NODES``). Scoreboard: every row of every valid
tree, bit for bit, and for an invalid tree an ``error`` pulse, no row with
``last`` and only rows of its valid prefix.
"""

import random

from golden import tree as gtree
from hw.tree_mask_gen import parent_layout, row_layout
from tb.common import (
    TB,
    ErrorMon,
    StreamSink,
    StreamSource,
    params,
    random_tree,
    report,
    run_block,
    trees_for,
)

TREES = 2000  # random trees in the full-speed run, per parameter set
TREES_PATTERNS = 300  # in each idle/backpressure run


def bad_tree(rng: random.Random, n_max: int) -> list[int]:
    """A parent list the block must reject: a parent >= its node, or too many nodes."""
    if rng.random() < 0.3:
        n = n_max + 1 + rng.randint(0, 3)  # too many nodes (parents still fit the field)
        return [-1] + [rng.randint(0, min(i, n_max) - 1) for i in range(1, n)]
    n = rng.randint(2, n_max)
    par = [-1] + [rng.randint(0, i - 1) for i in range(1, n)]
    k = rng.randint(1, n - 1)
    par[k] = rng.randint(k, n_max - 1)
    return par


def beats(par: list[int]) -> list[dict]:
    return [{"parent": p, "end": 0} for p in par[1:]] + [{"parent": 0, "end": 1}]


class Scoreboard:
    """Checks the row stream tree by tree against golden.tree."""

    def __init__(self, tb: TB, n_nodes: int) -> None:
        self.tb, self.N = tb, n_nodes
        self.expected: list[tuple[list[int], bool]] = []  # (parents, valid)
        self.checked = self.mismatches = self.bad_seen = 0
        self.errors: list[int] = []
        self.latency: list[int] = []

    def add(self, par: list[int]) -> None:
        try:
            gtree.validate(par, max_nodes=self.N)
            ok = True
        except ValueError:
            ok = False
        self.expected.append((par, ok))

    def fail(self, msg: str) -> None:
        self.mismatches += 1
        if self.mismatches <= 5:
            self.tb.log.error("seed %d: %s", self.tb.seed, msg)

    def check(self, rows: list[tuple[int, dict]]) -> None:
        k = 0
        n_err = 0
        for t, (par, ok) in enumerate(self.expected):
            if ok:
                want_rows, want_dep, n = gtree.mask_rows(par), gtree.depths(par), len(par)
                last = [0] * (n - 1) + [1]
                self.checked += 1
            else:  # first invalid node L: rows 0 .. L-2 only, none with `last`
                n_err += 1
                L = self._first_bad(par)
                n = max(0, L - 1)
                want_rows = gtree.mask_rows(par[:n]) if n else []
                want_dep = gtree.depths(par[:n]) if n else []
                last = [0] * n
                self.bad_seen += 1
            got = rows[k : k + n]
            k += n
            for i, (_, r) in enumerate(got):
                want = {"node": i, "depth": want_dep[i], "row": want_rows[i], "last": last[i]}
                if r != want:
                    self.fail(
                        f"tree {t} ({'valid' if ok else 'invalid'}) node {i}: got {r}, want {want}"
                    )
            if len(got) != n:
                self.fail(f"tree {t}: {len(got)} rows, want {n}")
        if k != len(rows):
            self.fail(f"{len(rows) - k} unexpected extra rows")
        if len(self.errors) != n_err:
            self.fail(f"{len(self.errors)} error pulses, want {n_err}")

    def _first_bad(self, par: list[int]) -> int:
        for i in range(1, len(par)):
            if not 0 <= par[i] < i or i >= self.N:
                return i
        raise AssertionError("not an invalid tree")


async def run(dut, idle: str, backpressure: str, n_trees: int, bad_rate: float) -> None:
    N = params()["N_NODES"]
    n_trees = trees_for(n_trees, N)  # 1,024 nodes: 400 + 6 x 60 + 4 x 60 trees
    tb = TB(dut)
    src = StreamSource(tb, "i", parent_layout(N), idle)
    sink = StreamSink(tb, "o", row_layout(N), backpressure)
    sb = Scoreboard(tb, N)

    ErrorMon(tb, sb.errors)
    await tb.start()
    n_beats = 0
    for _ in range(n_trees):
        par = bad_tree(tb.rng, N) if tb.rng.random() < bad_rate else random_tree(tb.rng, N)
        sb.add(par)
        for b in beats(par):
            src.send(b)
            n_beats += 1
    await tb.wait_for(lambda: src.idle, timeout=100_000 + 8 * n_beats, what="all beats taken")
    await tb.cycles(20)
    rows = sink.received
    sb.check(rows)
    # latency (SPEC §6: n cycles + at most 2): last row out vs end beat taken
    lat = []
    if idle == "none" and backpressure == "none" and bad_rate == 0:
        ends = [c for c, b in src.sent if b["end"]]
        lasts = [c for c, r in rows if r["last"]]
        lat = [b - a for a, b in zip(ends, lasts, strict=True)]
        gaps = [rows[i + 1][0] - rows[i][0] for i in range(len(rows) - 1)]
        if lat and max(lat) > 2:
            sb.fail(f"latency {max(lat)} cycles after the end beat, SPEC allows 2")
        if gaps and max(gaps) != 1:
            sb.fail("rows not one per cycle at full speed")
    report(
        "tree_mask_gen",
        f"{idle}/{backpressure}" + ("/errors" if bad_rate else ""),
        checked=sb.checked,
        mismatches=sb.mismatches,
        rejected=sb.bad_seen,
        latency=f"{max(lat) if lat else '-'} (<= 2)" if lat else "",
    )
    assert sb.mismatches == 0, f"seed {tb.seed}: {sb.mismatches} mismatches"


try:
    import cocotb
except ImportError:  # pragma: no cover
    cocotb = None

if cocotb is not None:

    @cocotb.test()
    async def full_speed(dut) -> None:
        """2,000 random trees back to back, no stalls; latency and throughput checked."""
        await run(dut, "none", "none", TREES, 0.0)

    @cocotb.test()
    @cocotb.parametrize(idle=["none", "random", "sparse"], backpressure=["random", "half"])
    async def patterns(dut, idle: str, backpressure: str) -> None:
        await run(dut, idle, backpressure, TREES_PATTERNS, 0.0)

    @cocotb.test()
    @cocotb.parametrize(idle=["none", "random"], backpressure=["none", "random"])
    async def errors(dut, idle: str, backpressure: str) -> None:
        """Invalid trees mixed with valid ones: error, nothing wrong, next tree fine."""
        await run(dut, idle, backpressure, TREES_PATTERNS, 0.3)


# ----------------------------------------------------------------------------- pytest
import pytest  # noqa: E402

from tb.common import FULL_ONLY, N_NODES_SETS  # noqa: E402


@pytest.mark.parametrize("n_nodes", [*N_NODES_SETS, pytest.param(1024, marks=FULL_ONLY)])
def test_tree_mask_gen(n_nodes: int) -> None:
    run_block("tree_mask_gen", {"N_NODES": n_nodes}, "tb.test_tree_mask_gen")
