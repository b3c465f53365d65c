"""Testbench building blocks shared by every block's cocotb testbench.

* :func:`pack` / :func:`unpack` (from :mod:`flows.layouts`): Amaranth
  ``data`` layouts <-> Python values, so a testbench drives a struct payload
  by field name, exactly as the RTL declares it.
* :class:`TB`: clock, reset and a cycle engine. Every cycle the engine awaits
  the falling edge, lets each agent *drive* its inputs, awaits ``ReadOnly``
  and lets each agent *sample*; a valid/ready transfer seen in ``ReadOnly``
  happens at the next rising edge and is stamped with that cycle number.
  One engine for all agents keeps the awaits per cycle (the cost of cocotb
  on Verilator) at two.
* :class:`StreamSource` / :class:`StreamSink`: ``amaranth.lib.stream``
  drivers and monitors with idle / backpressure patterns (:data:`PATTERNS`).
* :func:`report`: a JSON summary per testbench run under
  ``build/reports/sim/``, gathered into the ``make sim`` summary table.
* :func:`run_block`: the pytest side: generate the block's Verilog for a
  parameter set, build it once (shared by xdist workers), run a cocotb module.

* :data:`FULL` / :data:`FULL_ONLY` / :func:`sized`: the two sizes of the suite.
  ``make test`` and ``make sim`` run every block's smallest parameter sets that
  reach every code path, at the quick operation counts; ``make sim-full``
  (``SIM_FULL=1``) adds the parameter sets marked ``full`` (skipped otherwise)
  and runs the full operation counts.

Environment: ``SIM_SEED`` fixes the random seed (printed by every test),
``WAVES=1`` dumps waveforms (VCD) next to each run under ``build/sim_runs/``,
``SIM_FULL=1`` selects the full suite.
"""

import itertools
import json
import os
import random
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from flows import toolchain, verilog
from flows.layouts import pack, unpack

try:  # the regression seed, read at import inside the simulator (SIM_SEED repeats it)
    import cocotb as _cocotb

    _REGRESSION_SEED = getattr(_cocotb, "RANDOM_SEED", None)
except ImportError:  # pragma: no cover
    _REGRESSION_SEED = None

REPO = Path(__file__).resolve().parent.parent
REPORTS = REPO / "build" / "reports" / "sim"
RUNS = REPO / "build" / "sim_runs"

#: ``SIM_FULL=1`` (``make sim-full``): every parameter set, the full operation counts
FULL = os.environ.get("SIM_FULL", "") == "1"
#: skips a test or parameter set outside ``make sim-full``
SKIP_UNLESS_FULL = pytest.mark.skipif(not FULL, reason="make sim-full (SIM_FULL=1) runs it")
#: the marks of a parameter set that only ``make sim-full`` runs:
#: ``pytest.param(..., marks=FULL_ONLY)``
FULL_ONLY = (pytest.mark.full, SKIP_UNLESS_FULL)
#: ``N_NODES`` of a tree block's testbench: the smallest in ``make test``, the larger
#: ones (64: the default, also inside the chip co-simulation) in ``make sim-full``
N_NODES_SETS = [8, pytest.param(16, marks=FULL_ONLY), pytest.param(64, marks=FULL_ONLY)]

__all__ = [
    "PATTERNS",
    "pattern",
    "pack",
    "unpack",
    "TB",
    "StreamSource",
    "StreamSink",
    "ErrorMon",
    "Done",
    "report",
    "params",
    "run_block",
    "random_tree",
    "random_step",
    "random_pq",
    "FULL",
    "FULL_ONLY",
    "N_NODES_SETS",
    "SKIP_UNLESS_FULL",
    "sized",
    "trees_for",
]


# ----------------------------------------------------------------------------- patterns
#: idle (source) / backpressure (sink) patterns: 1 = may transfer this cycle
PATTERNS: dict[str, Callable[[random.Random], Iterator[int]]] = {
    "none": lambda rng: itertools.repeat(1),
    "half": lambda rng: itertools.cycle([1, 0]),
    "sparse": lambda rng: itertools.cycle([1, 1, 0, 1, 0, 0, 1, 0]),
    "random": lambda rng: (int(rng.random() < 0.6) for _ in itertools.count()),
}


def pattern(name: str, rng: random.Random) -> Iterator[int]:
    if name not in PATTERNS:
        raise ValueError(f"pattern = {name!r}: one of {', '.join(PATTERNS)}")
    return PATTERNS[name](rng)


# ----------------------------------------------------------------------------- TB
class TB:
    """Clock, reset and the per-cycle engine that runs every agent."""

    def __init__(self, dut, *, clk: str = "clk", rst: str = "rst") -> None:
        import cocotb

        self.dut = dut
        self.clk = getattr(dut, clk)
        self.rst = getattr(dut, rst)
        self.cycle = 0
        self.agents: list = []
        self.seed = cocotb.RANDOM_SEED  # this test's seed (cocotb derives it per test)
        self.rng = random.Random(self.seed)
        self.log = dut._log
        self.log.info(
            "random seed %d; rerun with SIM_SEED=%s", self.seed, _REGRESSION_SEED or self.seed
        )

    def add(self, agent):
        self.agents.append(agent)
        return agent

    async def start(self, reset_cycles: int = 2) -> None:
        """Start the clock and the engine, hold reset for ``reset_cycles`` cycles."""
        import cocotb
        from cocotb.clock import Clock
        from cocotb.triggers import FallingEdge

        cocotb.start_soon(Clock(self.clk, 2, unit="ns").start())
        self.rst.value = 1
        for _ in range(reset_cycles):
            await FallingEdge(self.clk)
        self.rst.value = 0
        cocotb.start_soon(self._engine())

    async def reset(self, cycles: int = 2) -> None:
        """Synchronous reset in the middle of a run (agents keep their queues)."""
        from cocotb.triggers import FallingEdge

        await FallingEdge(self.clk)
        self.rst.value = 1
        for _ in range(cycles):
            await FallingEdge(self.clk)
        self.rst.value = 0

    async def _engine(self) -> None:
        from cocotb.triggers import FallingEdge, ReadOnly

        while True:
            await FallingEdge(self.clk)
            self.cycle += 1
            for a in self.agents:
                a.drive()
            await ReadOnly()
            for a in self.agents:
                a.sample()

    async def cycles(self, n: int = 1) -> None:
        from cocotb.triggers import ClockCycles

        await ClockCycles(self.clk, n, rising=False)

    async def wait_for(
        self, cond: Callable[[], bool], timeout: int = 100000, what: str = ""
    ) -> None:
        """Wait (in cycles) until ``cond()``; ``AssertionError`` after ``timeout`` cycles."""
        from cocotb.triggers import FallingEdge

        start = self.cycle
        while not cond():
            if self.cycle - start > timeout:
                raise AssertionError(f"seed {self.seed}: timeout waiting for {what or cond}")
            await FallingEdge(self.clk)


class StreamSource:
    """Drives ``<name>__valid`` / ``__payload`` and watches ``__ready``.

    ``send(value)`` queues a beat; once ``valid`` is raised it stays up until
    the beat is taken (stream rules). ``idle`` decides, each cycle with no beat
    on the bus, whether to raise ``valid``. ``sent`` lists ``(cycle, value)``.
    """

    def __init__(self, tb: TB, name: str, shape, idle: str = "none") -> None:
        self.tb = tb
        self.valid = getattr(tb.dut, f"{name}__valid")
        self.payload = getattr(tb.dut, f"{name}__payload")
        self.ready = getattr(tb.dut, f"{name}__ready")
        self.shape = shape
        self.queue: deque = deque()
        self.sent: list[tuple[int, object]] = []
        self.pause = pattern(idle, tb.rng)
        self.current = None
        self._up = False
        self.valid.value = 0
        tb.add(self)

    def send(self, value) -> None:
        self.queue.append(value)

    @property
    def idle(self) -> bool:
        return not self.queue and self.current is None

    def clear(self) -> None:
        self.queue.clear()
        self.current = None

    def drive(self) -> None:
        if self.current is None and self.queue and next(self.pause):
            self.current = self.queue.popleft()
            self.payload.value = pack(self.shape, self.current)
        up = self.current is not None
        if up != self._up:
            self.valid.value = int(up)
            self._up = up

    def sample(self) -> None:
        if self._up and self.ready.value == 1:
            self.sent.append((self.tb.cycle, self.current))
            self.current = None


class StreamSink:
    """Drives ``<name>__ready`` by the ``backpressure`` pattern; collects beats.

    ``received`` lists ``(cycle, value)``; ``on_beat`` (if set) is called with
    each ``(cycle, value)`` as it arrives.
    """

    def __init__(self, tb: TB, name: str, shape, backpressure: str = "none") -> None:
        self.tb = tb
        self.valid = getattr(tb.dut, f"{name}__valid")
        self.payload = getattr(tb.dut, f"{name}__payload")
        self.ready = getattr(tb.dut, f"{name}__ready")
        self.shape = shape
        self.received: list[tuple[int, object]] = []
        self.pause = pattern(backpressure, tb.rng)
        self.on_beat: Callable[[int, object], None] | None = None
        self._r = None
        self.ready.value = 0
        tb.add(self)

    def drive(self) -> None:
        r = next(self.pause)
        if r != self._r:
            self.ready.value = r
            self._r = r

    def sample(self) -> None:
        if self._r and self.valid.value == 1:
            beat = (self.tb.cycle, unpack(self.shape, self.payload.value))
            self.received.append(beat)
            if self.on_beat is not None:
                self.on_beat(*beat)


# ----------------------------------------------------------------------------- stimulus
class ErrorMon:
    """Records every cycle in which ``dut.error`` is high, in ``pulses``.

    Parameters
    ----------
    tb : TB
    pulses : list of int, optional
        Where the cycles go (a scoreboard's list); default a new list.
    """

    def __init__(self, tb: TB, pulses: list[int] | None = None) -> None:
        self.tb = tb
        self.pulses = [] if pulses is None else pulses
        tb.add(self)

    def drive(self) -> None:
        pass

    def sample(self) -> None:
        if self.tb.dut.error.value == 1:
            self.pulses.append(self.tb.cycle)


class Done:
    """Sets ``event`` once ``src`` has sent everything (no per-cycle await)."""

    def __init__(self, tb: TB, src: StreamSource) -> None:
        from cocotb.triggers import Event

        self.src, self.event = src, Event()
        tb.add(self)

    def drive(self) -> None:
        pass

    def sample(self) -> None:
        if self.src.idle:
            self.event.set()


def random_tree(rng: random.Random, n_max: int) -> list[int]:
    """A random parent list of 1 .. n_max nodes; chain, star, full binary, deep and
    single-node shapes come often (the corners every tree testbench needs)."""
    kind = rng.choice(["random", "random", "random", "chain", "star", "full", "deep", "single"])
    if kind == "single":
        return [-1]
    n = rng.choice([1, n_max, rng.randint(1, n_max)]) if kind != "random" else rng.randint(1, n_max)
    if kind == "chain":
        return [-1] + list(range(n - 1))
    if kind == "star":
        return [-1] + [0] * (n - 1)
    if kind == "full":
        return [-1] + [(i - 1) // 2 for i in range(1, n)]
    if kind == "deep":
        return [-1] + [max(0, i - rng.randint(1, 3)) for i in range(1, n)]
    return [-1] + [rng.randint(0, i - 1) for i in range(1, n)]


def random_step(
    rng: random.Random, n_max: int, prob_bits: int, token_bits: int
) -> tuple[list[int], list[int], list[int], list[int]]:
    """A random verification step for the tree manager: ``(parents, tokens, pt, qt)``.

    The tree is :func:`random_tree`; ``pt`` / ``qt`` are all full, all
    rejecting, corner values (0, 1, full) or uniform, per tree."""
    par = random_tree(rng, n_max)
    n = len(par)
    pt, qt = random_pq(rng, n, prob_bits)
    tok = [0] + [rng.randrange(1 << token_bits) for _ in range(1, n)]
    return par, tok, pt, qt


def random_pq(rng: random.Random, n: int, prob_bits: int) -> tuple[list[int], list[int]]:
    """``pt``, ``qt`` of nodes ``0 .. n-1`` (node 0's are 0): all full, all
    rejecting, corner values (0, 1, full) or uniform, per tree."""
    full = (1 << prob_bits) - 1
    mode = rng.choice(["random", "all", "none", "corner"])
    pt, qt = [0], [0]
    for _ in range(1, n):
        if mode == "all":
            pt.append(full), qt.append(full)
        elif mode == "none":
            pt.append(0), qt.append(rng.randint(1, full))
        elif mode == "corner":
            pt.append(rng.choice([0, 1, full])), qt.append(rng.choice([0, 1, full]))
        else:
            pt.append(rng.randint(0, full)), qt.append(rng.randint(0, full))
    return pt, qt


def sized(quick: int, full: int) -> int:
    """An operation count: ``full`` under ``SIM_FULL=1`` (``make sim-full``), else ``quick``."""
    return full if FULL else quick


def trees_for(n_trees: int, n_nodes: int) -> int:
    """Trees of one run of a tree block's testbench: ``n_trees`` up to 64 nodes; for
    larger trees fewer, in proportion to their size, but never under a fifth."""
    return max(n_trees * 64 // max(n_nodes, 64), n_trees // 5)


# ----------------------------------------------------------------------------- reports
def params() -> dict:
    """The HDL parameters of this run (set by :func:`run_block`)."""
    return json.loads(os.environ.get("TB_PARAMS", "{}"))


def report(block: str, test: str, **metrics) -> None:
    """Record one testbench run's summary for the ``make sim`` table."""
    p = params()
    REPORTS.mkdir(parents=True, exist_ok=True)
    tag = "".join(f"__{k}_{v}" for k, v in sorted(p.items()))
    rec = {"block": block, "test": test, "params": p, **metrics}
    safe = "".join(c if c.isalnum() or c in "-_=" else "-" for c in test)
    (REPORTS / f"{block}{tag}__{safe}.json").write_text(json.dumps(rec, indent=1))


# ----------------------------------------------------------------------------- pytest side
def run_block(
    block: str,
    hdl_params: dict,
    test_module: str,
    *,
    testcase: str | None = None,
    extra_env: dict | None = None,
    build_args: tuple[str, ...] = (),
    public: tuple[str, ...] | None = (),
) -> None:
    """Build block ``block`` with ``hdl_params`` (once per parameter set) and run
    the cocotb tests of ``test_module`` (or just ``testcase``) on it.
    ``build_args`` go to Verilator (``("-CFLAGS", "-O0")`` compiles a large
    design's C++ several times faster). ``public``: the internal signals the
    testbench reads besides the ports; every other signal is Verilator's to
    optimise (:func:`flows.toolchain.build`; ``None``: cocotb's default build,
    every signal visible, e.g. to look inside a failing run)."""
    full = {**verilog.block_params(block), **hdl_params}
    tag = verilog.suffix(hdl_params)
    src = verilog.write(block, hdl_params, out=REPO / "build" / "verilog" / "tb")
    waves = os.environ.get("WAVES", "") == "1"
    bdir = toolchain.build(
        f"{block}{tag}", [src], block, waves=waves, build_args=build_args, public=public
    )
    seed = os.environ.get("SIM_SEED")
    env = {"TB_PARAMS": json.dumps(full), **(extra_env or {})}
    run_dir = RUNS / f"{block}{tag}" / (testcase or "all")
    toolchain.run(
        bdir,
        block,
        test_module,
        test_dir=run_dir,
        testcase=testcase,
        extra_env=env,
        seed=int(seed) if seed else None,
        waves=waves,
    )
