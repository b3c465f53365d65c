"""Testbench: topology optimiser (hw/topology_optimiser.py) against
golden.builder.FixedTopologyOptimiser (SPEC §3.10, §3.11).

Closed loop, as the tree manager runs it: a configuration beat on ``cfg``,
then one packet per step on ``step`` (idle patterns), each step built on the
shape the block emitted last (the shape itself, or sometimes the shape with
random subtrees dropped, siblings kept as a prefix, as the static builder
prunes) with a random accepted path (each child tried in rank order with the
phase's acceptance rate, which moves between 0 and 1 so that the optimiser
falls back to plain decoding and recovers). Monitor: the shapes on ``shape``
(backpressure patterns), ``mode``, ``budget`` and ``expected`` when a shape
ends, and ``error`` pulses. Model: ``golden.builder.FixedTopologyOptimiser``
with the same configuration (the prior given as ``prior_b / 2**A``, which it
turns back into the same integers), fed the same ``StepRecord``. Scoreboard:
every shape against ``shape()``, the status against ``mode`` and
``history[-1]``; for every invalid configuration or packet exactly one
``error`` pulse and no shape, and the steps after it still matching the
golden policy that never saw it. Cycles: every re-solve from the beat that
starts it to the shape's first beat, and the DP's growth with ``M``
(``hw.topology.dp.dp_cycles``). The stimulus, the configurations and the
golden policy of a configuration: :mod:`tb.topology_optimiser_stim`.
"""

import random
from collections import Counter

from golden.builder import FixedTopologyOptimiser
from golden.draft import StepRecord
from hw.topology.dp import dp_cycles, solve_cycles_bound
from hw.topology_optimiser import cfg_layout, shape_layout, step_layout
from tb.common import (
    FULL_ONLY,
    TB,
    StreamSink,
    StreamSource,
    report,
    run_block,
    sized,
)
from tb.topology_optimiser_stim import (
    P,
    accepted_path,
    bad_configs,
    base_cfg,
    golden_for,
    path_beats,
    prune,
    random_cfg,
    small_m,
)

#: SPEC target of this block: a full re-solve at M = 64, D = 8, K = 8
TARGET = 1 << 18
#: cycles from a step's ``last`` beat taken to its shape's first beat without a re-solve
#: (at full speed): window, add, count, emission start, issue, FIFO write, FIFO out
STEP_LATENCY = 7
#: cycles from the offending beat taken to the ``error`` pulse
ERROR_DELAY = 1
#: acceptance rates of the phases of a random run
ALPHAS = (0.0, 0.0, 0.03, 0.3, 0.6, 0.9, 1.0)
#: the spec's §3.11 check vector: budget -> (tree, E) with p = [32768, 16384], M = 4, D = 2
CHECK_VECTOR = {2: ([-1, 0], 32768), 3: ([-1, 0, 0], 49152), 4: ([-1, 0, 0, 1], 65536)}


# ----------------------------------------------------------------------------- the loop
class Harness:
    """Drivers, monitor and scoreboard around the golden policy, closed loop."""

    def __init__(self, dut, idle: str = "none", backpressure: str = "none") -> None:
        from cocotb.triggers import Event

        self.P = P()
        self.dut = dut
        self.full_speed = idle == "none" and backpressure == "none"
        self.tb = TB(dut)
        N = self.P.N
        layout = cfg_layout(N, self.P.D, self.P.R, self.P.A, self.P.NB)
        self.cfg_src = StreamSource(self.tb, "cfg", layout, idle)
        self.step_src = StreamSource(self.tb, "step", step_layout(N), idle)
        self.sink = StreamSink(self.tb, "shape", shape_layout(N), backpressure)
        self.sink.on_beat = self._beat
        self.tb.add(self)
        self.shape_ev, self.err_ev = Event(), Event()
        self.cur: list[int] = []
        self.first = 0
        self.in_shape = False
        self.shapes: list[tuple[int, int, list[int], tuple[int, int, int]]] = []
        self.errors: list[int] = []
        self.gold: FixedTopologyOptimiser | None = None
        self.cfg: dict | None = None
        self.checked = self.mismatches = self.n_rejected = 0
        self.solves: list[tuple[int, int, int, int, int]] = []  # (m, d, K, nb, cycles)
        self.step_latency: list[int] = []
        self.modes = Counter()
        self.prev_mode = "spec"

    # -- the error monitor (an agent of the TB's cycle engine)
    def drive(self) -> None:
        pass

    def sample(self) -> None:
        if self.dut.error.value == 1:
            self.errors.append(self.tb.cycle)
            self.err_ev.set()

    def _beat(self, cycle: int, v: dict) -> None:
        if not self.in_shape:
            self.first, self.in_shape = cycle, True
        if v["end"]:
            d = self.dut
            status = (int(d.mode.value), int(d.budget.value), int(d.expected.value))
            self.shapes.append((self.first, cycle, [-1] + self.cur, status))
            self.cur, self.in_shape = [], False
            self.shape_ev.set()
        else:
            self.cur.append(v["parent"])

    def fail(self, msg: str) -> None:
        self.mismatches += 1
        if self.mismatches <= 5:
            self.tb.log.error("seed %d: %s", self.tb.seed, msg)

    async def _shape(self, timeout: int) -> tuple[int, int, list[int], tuple[int, int, int]]:
        from cocotb.triggers import with_timeout

        await with_timeout(self.shape_ev.wait(), 2 * timeout, "ns")  # 2 ns clock
        return self.shapes[-1]

    def _timeout(self) -> int:
        """Cycles a solve of the current configuration may take, generously."""
        c = self.cfg or {"m": self.P.N, "d": self.P.D}
        return 4 * dp_cycles(c["m"], c["d"], self.P.R) + 100 * (self.P.R + self.P.NB) + 50000

    def _compare(self, what: str, got: tuple) -> None:
        g = self.gold
        h = g.history[-1]
        want = g.shape()
        status = (int(g.mode == "spec"), h.n_nodes, h.expected)
        _, _, shape, st = got
        self.modes[g.mode + ("/probe" if g.is_probe_step() else "")] += 1
        if g.mode != self.prev_mode:
            self.modes["fallback" if g.mode == "plain" else "recover"] += 1
            self.prev_mode = g.mode
        if shape != want or st != status:
            self.fail(
                f"{what} (cfg {self.cfg}): shape {shape} status {st}, want {want} status {status}"
            )
        else:
            self.checked += 1

    # -- transactions
    async def start(self) -> None:
        await self.tb.start()

    async def configure(self, c: dict) -> None:
        """A valid configuration: the initial solve's shape and status."""
        self.shape_ev.clear()
        self.cfg = c
        self.cfg_src.send(c)
        gold = golden_for(c, self.P)
        got = await self._shape(self._timeout())
        self.gold = gold
        taken = self.cfg_src.sent[-1][0]
        sol = gold.history[-1]
        k = max((i + 1 for i, x in enumerate(sol.estimate) if x), default=0)
        self.solves.append((c["m"], c["d"], min(k, c["m"] - 1), c["nb"], got[0] - taken))
        self._compare("configuration", got)

    async def step(self, tree: list[int], path: list[int]) -> None:
        """One valid step: its shape and status."""
        g = self.gold
        self.shape_ev.clear()
        for b in path_beats(tree, path):
            self.step_src.send(b)
        g.observe(StepRecord(tree, [0] * len(tree), path[-1], path, len(path) - 1, []))
        got = await self._shape(self._timeout())
        taken = self.step_src.sent[-1][0]
        if g.n_observed % g.update_every == 0:
            sol = g.history[-1]
            k = max((i + 1 for i, x in enumerate(sol.estimate) if x), default=0)
            c = self.cfg
            self.solves.append((c["m"], c["d"], min(k, c["m"] - 1), c["nb"], got[0] - taken))
        else:
            self.step_latency.append(got[0] - taken)
        self._compare(f"step {g.n_observed}", got)

    async def random_step(self, rng: random.Random, alpha: float) -> None:
        shape = self.gold.shape()
        tree = shape if rng.random() < 0.6 else prune(rng, shape)
        await self.step(tree, accepted_path(rng, tree, alpha))

    async def rejected(
        self, *, cfg: dict | None = None, beats: list[dict] | None = None, bad: int = 0
    ) -> None:
        """An invalid configuration or packet (``bad``: the offending beat's index):
        one error pulse, :data:`ERROR_DELAY` cycles after that beat is taken, and
        no shape."""
        self.shape_ev.clear()
        self.err_ev.clear()
        n_err, n_shapes = len(self.errors), len(self.shapes)
        if cfg is not None:
            self.cfg_src.send(cfg)
        for b in beats or []:
            self.step_src.send(b)
        n = len(beats or [])
        from cocotb.triggers import with_timeout

        await with_timeout(self.err_ev.wait(), 2 * 10000, "ns")
        while not (self.cfg_src.idle and self.step_src.idle):
            await self.tb.cycles(1)
        await self.tb.cycles(30)
        taken = self.cfg_src.sent[-1][0] if cfg is not None else self.step_src.sent[bad - n][0]
        delay = self.errors[-1] - taken
        if len(self.errors) != n_err + 1 or len(self.shapes) != n_shapes or delay != ERROR_DELAY:
            self.fail(
                f"invalid {'configuration' if cfg else 'packet'}: "
                f"{len(self.errors) - n_err} error pulses ({delay} cycles after the offending "
                f"beat), {len(self.shapes) - n_shapes} shapes"
            )
        else:
            self.n_rejected += 1
            self.checked += 1

    def finish(self, test: str, **extra) -> None:
        worst = max(self.step_latency, default=0)
        if self.full_speed and worst > STEP_LATENCY:
            self.fail(f"a step's shape {worst} cycles after its last beat, want <= {STEP_LATENCY}")
        for mm, d, k, nb, cyc in self.solves if self.full_speed else []:
            lo = dp_cycles(mm, d, k) if k else 0
            hi = solve_cycles_bound(mm, d, k, self.P.R, self.P.A, nb, mm)
            if not lo < cyc <= hi:
                self.fail(f"re-solve M={mm} D={d} K={k} nb={nb}: {cyc} cycles, not in {lo} .. {hi}")
        c64 = [s[4] for s in self.solves if s[:3] == (64, 8, 8)]
        lat = f"re-solve {max(c64)} (<= {TARGET}) at M=64, D=8, K=8" if c64 else ""
        report(
            "topology_optimiser",
            test,
            checked=self.checked,
            mismatches=self.mismatches,
            rejected=self.n_rejected,
            solves=len(self.solves),
            max_solve=max((s[4] for s in self.solves), default=None),
            max_step=max(self.step_latency, default=None),
            modes=dict(self.modes),
            latency=lat,
            **extra,
        )
        self.tb.log.info(
            "seed %d: %d checked, %d rejected, %d solves (longest %s cycles), modes %s",
            self.tb.seed,
            self.checked,
            self.n_rejected,
            len(self.solves),
            max((s[4] for s in self.solves), default="-"),
            dict(self.modes),
        )
        assert self.mismatches == 0, f"seed {self.tb.seed}: {self.mismatches} mismatches"


# ----------------------------------------------------------------------------- tests
async def random_run(h: Harness, n_steps: int) -> None:
    rng = h.tb.rng
    await h.start()
    await h.configure(random_cfg(rng, h.P, small_m(h.P)))
    alpha, left, cfg_left = rng.choice(ALPHAS), rng.randint(10, 60), rng.randint(40, 250)
    for _ in range(n_steps):
        if cfg_left == 0:
            await h.configure(random_cfg(rng, h.P, small_m(h.P)))
            cfg_left = rng.randint(40, 250)
        if left == 0:
            alpha, left = rng.choice(ALPHAS), rng.randint(10, 60)
        await h.random_step(rng, alpha)
        left, cfg_left = left - 1, cfg_left - 1


async def error_run(h: Harness) -> None:
    rng = h.tb.rng
    await h.start()
    # a packet before any configuration (last beat and mid-packet)
    await h.rejected(beats=[{"rank": 0, "kids": 1, "last": 1}])
    await h.rejected(beats=[{"rank": 0, "kids": 2, "last": 0}, {"rank": 1, "kids": 0, "last": 1}])
    # (the first beat is the offending one: nothing is taken before a configuration)
    base = base_cfg(h.P)
    await h.configure(base)
    for _ in range(5):
        await h.random_step(rng, 0.7)
    for name, c in bad_configs(h.P, base):
        h.tb.log.info("invalid configuration: %s", name)
        await h.rejected(cfg=c)
        for _ in range(rng.randint(1, 3)):  # the old configuration, window and mode stay
            await h.random_step(rng, rng.choice(ALPHAS))
    N, mm = h.P.N, base["m"]
    bad_packets = [  # (beats, the offending beat)
        # rank not below the previous beat's kids: on the last beat, mid-packet
        ([{"rank": 0, "kids": 1, "last": 0}, {"rank": 1, "kids": 0, "last": 1}], 1),
        ([{"rank": 0, "kids": 0, "last": 0}, {"rank": 0, "kids": 0, "last": 1}], 1),
        (
            [{"rank": 0, "kids": 2, "last": 0}, {"rank": 2, "kids": 1, "last": 0}]
            + [{"rank": 0, "kids": 0, "last": 1}],
            1,
        ),
        # more than m beats (a chain of m + 1 nodes), offending beat last or not
        ([{"rank": 0, "kids": 1, "last": int(i == mm)} for i in range(mm + 1)], mm),
        ([{"rank": 0, "kids": 1, "last": int(i == mm + 1)} for i in range(mm + 2)], mm),
    ]
    for beats, bad in bad_packets:
        assert all(b["kids"] < N for b in beats)
        await h.rejected(beats=beats, bad=bad)
        for _ in range(rng.randint(1, 3)):
            await h.random_step(rng, rng.choice(ALPHAS))
    # a good packet of exactly m beats right after the bad ones
    await h.step([-1] + list(range(mm - 1)), list(range(mm)))


async def check_vector_run(h: Harness) -> bool:
    """SPEC §3.11's check vector (A = 16, M = 4, D = 2, p = [32768, 16384]): the
    prior alone at configuration, one budget at a time."""
    P = h.P
    if P.A != 16 or P.R < 2 or P.D < 2:
        return False
    await h.start()
    for mb, (tree, e) in CHECK_VECTOR.items():
        c = {
            "m": 4, "d": 2, "u": 1, "pw": 2, "fallback": 0, "probe": 1, "nb": 1,
            "budget": [mb] + [0] * (P.NB - 1), "cost": [1] + [0] * (P.NB - 1),
            "cost_plain": 1, "prior": [32768, 16384] + [0] * (P.R - 2),
        }  # fmt: skip
        await h.configure(c)
        _, _, shape, st = h.shapes[-1]
        if shape != tree or st != (1, len(tree), e):
            h.fail(f"check vector M={mb}: {shape} {st}, want {tree} E={e}")
        else:
            h.checked += 1
        await h.step(tree, [0, 1])  # and one step (U = 1: a re-solve)
    return True


async def cycles_run(h: Harness) -> dict:
    """The re-solve's cycles against ``M`` (``D = D_MAX``, ``K = min(R, M - 1)``,
    one budget ``M``): the initial solve and a re-solve after one step."""
    P = h.P
    await h.start()
    out = {}
    ms = sorted({x for x in (8, 16, 32, 64, P.N) if 4 <= x <= P.N})
    for mm in ms:
        c = {
            "m": mm, "d": P.D, "u": 1, "pw": 2, "fallback": 1, "probe": 1, "nb": 1,
            "budget": [mm] + [0] * (P.NB - 1), "cost": [1] + [0] * (P.NB - 1),
            "cost_plain": 1, "prior": [P.one // P.R] * P.R,
        }  # fmt: skip
        await h.configure(c)
        if mm <= 64:  # and a re-solve after a step
            await h.step(h.gold.shape(), [0, 1])
        k = min(P.R, mm - 1)
        measured = max(s[4] for s in h.solves if s[0] == mm)
        out[mm] = {"cycles": measured, "dp_formula": dp_cycles(mm, P.D, k), "K": k}
        h.tb.log.info(
            "M=%d D=%d K=%d: re-solve %d cycles (DP %d by dp_cycles)",
            mm, P.D, k, measured, dp_cycles(mm, P.D, k),
        )  # fmt: skip
    return out


try:
    import cocotb
except ImportError:  # pragma: no cover
    cocotb = None

if cocotb is not None:

    @cocotb.test()
    async def random_steps(dut) -> None:
        """Random configurations and steps at full speed, closed loop."""
        h = Harness(dut)
        await random_run(h, sized(2000, 6000))
        h.finish("random")

    @cocotb.test()
    @cocotb.parametrize(idle=["random", "sparse"], backpressure=["random", "half"])
    async def patterns(dut, idle: str, backpressure: str) -> None:
        h = Harness(dut, idle, backpressure)
        await random_run(h, sized(100, 500))
        h.finish(f"{idle}/{backpressure}")

    @cocotb.test()
    @cocotb.parametrize(idle=["none", "random"], backpressure=["none", "random"])
    async def errors(dut, idle: str, backpressure: str) -> None:
        """Every invalid configuration field and packet class; nothing changes."""
        h = Harness(dut, idle, backpressure)
        await error_run(h)
        h.finish(f"errors {idle}/{backpressure}")

    @cocotb.test()
    async def check_vector(dut) -> None:
        h = Harness(dut)
        if await check_vector_run(h):
            h.finish("check vector")

    @cocotb.test()
    async def cycles(dut) -> None:
        """Re-solve cycles against M (reported; the target at M = 64, D = 8, K = 8)."""
        h = Harness(dut)
        growth = await cycles_run(h)
        at = [v["cycles"] for mm, v in growth.items() if mm == 64 and h.P.D == 8 and h.P.R >= 8]
        if at and max(at) > TARGET:
            h.fail(f"re-solve {max(at)} cycles at M=64, D=8, K=8, target {TARGET}")
        h.finish("cycles", growth={str(k): v for k, v in growth.items()})


# ----------------------------------------------------------------------------- pytest
import pytest  # noqa: E402

PARAM_SETS = [
    pytest.param({"N_MAX": 8, "D_MAX": 3, "R": 3, "ACC_BITS": 16, "NB": 4, "WIN": 5}, id="small"),
    pytest.param(  # make sim-full (decision 0054)
        {"N_MAX": 4, "D_MAX": 1, "R": 1, "ACC_BITS": 8, "NB": 1, "WIN": 1},
        id="edge",
        marks=FULL_ONLY,
    ),
    pytest.param({}, id="defaults", marks=FULL_ONLY),
    pytest.param(
        {"N_MAX": 16, "D_MAX": 32, "R": 16, "ACC_BITS": 24, "NB": 16, "WIN": 64},
        id="wide",
        marks=FULL_ONLY,
    ),
    pytest.param({"N_MAX": 256, "ACC_BITS": 12}, id="large", marks=FULL_ONLY),
]


@pytest.mark.parametrize("hdl", PARAM_SETS)
def test_topology_optimiser(hdl: dict) -> None:
    run_block("topology_optimiser", hdl, "tb.test_topology_optimiser")
