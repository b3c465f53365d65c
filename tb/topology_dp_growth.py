"""``make dp-growth``: the topology optimiser's re-solve measured up to 1,024 nodes.

``python -m tb.topology_dp_growth`` builds ``topology_optimiser`` with
``N_MAX = 1024``, ``D_MAX = 8``, ``R = 8`` (the other parameters at their
defaults; the build is cached under ``build/sim`` and shared with
:func:`tb.common.run_block`) and runs :func:`dp_growth` on it: for ``M`` in
64, 128, 256, 512, 1,024 (``DP_GROWTH_MS``, comma-separated, to change) the
configuration beat of ``tb.test_topology_optimiser.cycles_run`` (``D =
D_MAX``, one budget ``M``, a uniform prior over the ``R`` ranks, ``U =
1``), then one step packet (the path ``[0, 1]`` on the shape, as there),
whose re-solve is measured too (``DP_GROWTH_RESOLVE``: the ``M`` that get
the step; default all, empty for none).

The DP of ``M = 1024`` is about 33.5 M cycles, beyond the reach of the
per-cycle engine of :class:`tb.common.TB`; this bench has none. The clock
is cocotb's GPI clock; Python wakes up only for the few cycles of a beat on
``cfg`` / ``step``, once per :data:`TICK` cycles of a solve (progress; the
timeout), at the rising edge of ``shape.valid`` and for the shape's beats
(``shape.ready`` held high). A solve's cycles are counted, as
``tb.test_topology_optimiser`` counts them, from the rising edge that takes
the beat starting it (the configuration beat, the packet's ``last`` beat) to
the one that takes the shape's first beat, from ``cocotb.simtime``'s clock
(2 ns a cycle). Checks per solve: ``dp_cycles(M, D, K) < cycles <=
solve_cycles_bound(M, D, K, R, A, 1, M)`` (``hw.topology.dp``; ``K`` the
golden estimate's highest non-zero rank, capped at ``M - 1``), the shape
and the status (``mode``, ``budget``, ``expected``) equal to
``golden.builder.FixedTopologyOptimiser``'s (:func:`tb.topology_optimiser_stim.golden_for`),
no ``error`` pulse. Report: ``build/reports/dp_growth.json``, one row per
solve (``M``, ``D``, ``K``, measured cycles, the formula, the bound, wall
seconds, simulated cycles per second), rewritten after every solve, then
completed by :func:`main` with the Verilog, build and run times. Not a
``test_*`` module: ``make test`` does not collect it.
"""

import json
import os
import sys
import threading
import time
from pathlib import Path

from golden.draft import StepRecord
from hw.topology.dp import dp_cycles, solve_cycles_bound
from hw.topology_optimiser import cfg_layout, shape_layout, step_layout
from tb.common import REPO, REPORTS, RUNS, pack, params, unpack
from tb.topology_optimiser_stim import P, golden_for, path_beats

BLOCK = "topology_optimiser"
#: the build: N_MAX = 1024, D_MAX 8, R 8, the other parameters at their defaults
HDL = {"N_MAX": 1024, "D_MAX": 8, "R": 8}
#: budgets M measured (``DP_GROWTH_MS`` to change)
MS = (64, 128, 256, 512, 1024)
#: the report, next to the other producers' (``tb.common.REPORTS`` is its ``sim/`` folder)
REPORT = REPORTS.parent / "dp_growth.json"
#: cycles between two progress lines while a solve runs (one Python wake-up each)
TICK = 2_000_000
#: the clock's period (ns), as ``tb.common.TB`` drives it
PERIOD = 2
#: the marker of the progress lines in the simulation's log (:func:`main` echoes them)
MARK = "dp-growth:"


def _ms(name: str, default: tuple[int, ...]) -> list[int]:
    raw = os.environ.get(name)
    if raw is None:
        return list(default)
    return [int(x) for x in raw.replace(",", " ").split()]


def config(mm: int, p: P) -> dict:
    """``cycles_run``'s configuration beat: ``D = D_MAX``, one budget ``M``, ``U = 1``."""
    return {
        "m": mm, "d": p.D, "u": 1, "pw": 2, "fallback": 1, "probe": 1, "nb": 1,
        "budget": [mm] + [0] * (p.NB - 1), "cost": [1] + [0] * (p.NB - 1),
        "cost_plain": 1, "prior": [p.one // p.R] * p.R,
    }  # fmt: skip


class Bench:
    """Clock, reset, the two sources and the shape monitor, without a per-cycle engine."""

    def __init__(self, dut) -> None:
        self.dut = dut
        self.P = P()
        self.log = dut._log
        n = self.P.N
        self.layouts = {
            "cfg": cfg_layout(n, self.P.D, self.P.R, self.P.A, self.P.NB),
            "step": step_layout(n),
        }
        self.shape_layout = shape_layout(n)
        self.errors: list[int] = []
        self.rows: list[dict] = []
        self.mismatches: list[str] = []

    def now(self) -> int:
        """Simulated time in ns."""
        from cocotb.simtime import get_sim_time

        return round(get_sim_time("ns"))

    def info(self, msg: str) -> None:
        self.log.info("%s %s", MARK, msg)

    async def start(self) -> None:
        import cocotb
        from cocotb.clock import Clock
        from cocotb.triggers import FallingEdge

        d = self.dut
        for s in ("cfg", "step"):
            getattr(d, f"{s}__valid").value = 0
        d.shape__ready.value = 1
        Clock(d.clk, PERIOD, unit="ns").start()
        d.rst.value = 1
        for _ in range(2):
            await FallingEdge(d.clk)
        d.rst.value = 0
        cocotb.start_soon(self._errors())

    async def _errors(self) -> None:
        from cocotb.triggers import RisingEdge

        while True:
            await RisingEdge(self.dut.error)
            self.errors.append(self.now())

    async def send(self, name: str, beats: list[dict]) -> int:
        """Present ``beats`` on stream ``name``, each until taken; the time (ns) of
        the rising edge that takes the last one."""
        from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge

        d = self.dut
        valid, ready = getattr(d, f"{name}__valid"), getattr(d, f"{name}__ready")
        payload = getattr(d, f"{name}__payload")
        await FallingEdge(d.clk)
        valid.value = 1
        taken = 0
        for beat in beats:
            payload.value = pack(self.layouts[name], beat)
            while True:
                await ReadOnly()
                ok = ready.value == 1
                await RisingEdge(d.clk)
                if ok:
                    taken = self.now()
                    break
                await FallingEdge(d.clk)
            await FallingEdge(d.clk)
        valid.value = 0
        return taken

    async def first_beat(self, what: str, limit: int) -> int:
        """Wait (one wake-up per :data:`TICK` cycles) for ``shape.valid`` to rise; the
        time (ns) of the rising edge that takes the first beat (``ready`` is held high).
        ``AssertionError`` after ``limit`` cycles."""
        from cocotb.triggers import First, RisingEdge, Timer

        edge = RisingEdge(self.dut.shape__valid)
        start, wall = self.now(), time.perf_counter()
        while True:
            fired = await First(edge, Timer(TICK * PERIOD, "ns"))
            cyc = (self.now() - start) // PERIOD
            if fired is edge:
                return self.now() + PERIOD
            secs = time.perf_counter() - wall
            rate = cyc / secs if secs else 0
            self.info(f"{what}: {cyc / 1e6:.1f} M cycles, {secs:.0f} s ({rate:,.0f} cycles/s)")
            if cyc > limit:
                raise AssertionError(f"{what}: no shape within {cyc:,} cycles")

    async def shape(self) -> tuple[list[int], tuple[int, int, int]]:
        """The shape's beats, from the first (``shape.valid`` just rose) to the end
        beat: the parent list and the status when the end beat is taken."""
        from cocotb.triggers import FallingEdge, ReadOnly

        d = self.dut
        parents = [-1]
        while True:
            await FallingEdge(d.clk)
            await ReadOnly()
            if d.shape__valid.value != 1:
                continue
            v = unpack(self.shape_layout, d.shape__payload.value)
            if v["end"]:
                return parents, (int(d.mode.value), int(d.budget.value), int(d.expected.value))
            parents.append(v["parent"])

    async def solve(self, what: str, mm: int, gold, name: str, beats: list[dict]) -> dict:
        """Send ``beats``, measure the solve they start, check it against ``gold``
        (already fed the same input); the report's row."""
        p = self.P
        sol = gold.history[-1]
        k = min(max((i + 1 for i, x in enumerate(sol.estimate) if x), default=0), mm - 1)
        lo = dp_cycles(mm, p.D, k) if k else 0
        hi = solve_cycles_bound(mm, p.D, k, p.R, p.A, 1, mm)
        self.info(f"M={mm} {what}: DP {lo:,} cycles by dp_cycles, bound {hi:,} ...")
        wall = time.perf_counter()
        taken = await self.send(name, beats)
        first = await self.first_beat(f"M={mm} {what}", 2 * hi + 10_000)
        secs = time.perf_counter() - wall
        cyc = (first - taken) // PERIOD
        shape, status = await self.shape()
        want = gold.shape()
        h = gold.history[-1]
        want_status = (int(gold.mode == "spec"), h.n_nodes, h.expected)
        ok_cycles = lo < cyc <= hi
        ok_shape = shape == want and status == want_status
        if not ok_cycles:
            self.mismatches.append(f"M={mm} {what}: {cyc} cycles, not in {lo} .. {hi}")
        if not ok_shape:
            diff = [i for i, (a, b) in enumerate(zip(shape, want, strict=False)) if a != b]
            self.mismatches.append(
                f"M={mm} {what}: shape of {len(shape)} nodes, status {status}; golden "
                f"{len(want)} nodes, status {want_status}; first difference at node "
                f"{diff[0] if diff else min(len(shape), len(want))}"
            )
        row = {
            "M": mm, "D": p.D, "K": k, "solve": what, "cycles": cyc, "dp_cycles": lo,
            "bound": hi, "wall_s": round(secs, 1), "cycles_per_s": round(cyc / max(secs, 1e-9)),
            "nodes": len(shape), "expected": status[2], "shape_ok": ok_shape,
            "cycles_ok": ok_cycles,
        }  # fmt: skip
        self.info(
            f"M={mm} {what}: {cyc:,} cycles (DP {lo:,}, +{cyc - lo:,}; bound {hi:,}) in "
            f"{secs:.1f} s, {row['cycles_per_s']:,} cycles/s; shape of {len(shape)} nodes "
            f"{'= golden' if ok_shape else '!= golden'}"
        )
        return row

    def write(self, **extra) -> None:
        rec = {
            "block": BLOCK,
            "params": params(),
            "clock_ns": PERIOD,
            "rows": self.rows,
            "errors": len(self.errors),
            "mismatches": self.mismatches,
            **extra,
        }
        REPORT.parent.mkdir(parents=True, exist_ok=True)
        REPORT.write_text(json.dumps(rec, indent=1) + "\n")


async def growth_run(b: Bench) -> None:
    """Per ``M``: the configuration's solve, then a step's re-solve; a row each."""
    p = b.P
    ms = [mm for mm in _ms("DP_GROWTH_MS", MS) if 4 <= mm <= p.N]
    resolve = set(_ms("DP_GROWTH_RESOLVE", MS))
    b.info(f"M in {ms}, re-solve after a step at {sorted(resolve & set(ms))}; params {params()}")
    await b.start()
    t0 = time.perf_counter()
    for mm in ms:
        c = config(mm, p)
        gold = golden_for(c, p)
        b.rows.append(await b.solve("configuration", mm, gold, "cfg", [c]))
        b.write(complete=False)
        if mm in resolve:
            tree, path = gold.shape(), [0, 1]
            gold.observe(StepRecord(tree, [0] * len(tree), path[-1], path, len(path) - 1, []))
            b.rows.append(await b.solve("step", mm, gold, "step", path_beats(tree, path)))
            b.write(complete=False)
    if b.errors:
        b.mismatches.append(f"error pulses at {b.errors} ns")
    b.write(complete=True, sim_seconds=round(time.perf_counter() - t0, 1))


try:
    import cocotb
except ImportError:  # pragma: no cover
    cocotb = None

if cocotb is not None:

    @cocotb.test()
    async def dp_growth(dut) -> None:
        """The re-solves' cycles against ``M`` up to ``N_MAX``, their shapes against golden."""
        b = Bench(dut)
        await growth_run(b)
        assert not b.mismatches, "; ".join(b.mismatches)


# ----------------------------------------------------------------------------- runner
def _follow(log: Path, stop: threading.Event) -> None:
    """Echo the run's progress lines while it runs (cocotb logs to a file)."""
    pos = 0
    while not stop.wait(2):
        if not log.exists():
            continue
        with log.open(errors="replace") as f:
            f.seek(pos)
            for line in f:
                if MARK in line:
                    print("  " + line.split(MARK, 1)[1].strip(), flush=True)
            pos = f.tell()


def _table(rows: list[dict]) -> str:
    head = f"{'M':>5} {'solve':<13} {'K':>2} {'cycles':>12} {'dp_cycles':>12} {'bound':>12}"
    head += f" {'wall s':>8} {'cycles/s':>10}"
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r['M']:>5} {r['solve']:<13} {r['K']:>2} {r['cycles']:>12,} {r['dp_cycles']:>12,} "
            f"{r['bound']:>12,} {r['wall_s']:>8} {r['cycles_per_s']:>10,}"
        )
    return "\n".join(lines)


def main() -> int:
    """Build, run :func:`dp_growth` with its progress echoed, complete and print the report."""
    from flows import toolchain, verilog

    tag = verilog.suffix(HDL)
    print(f"topology optimiser DP growth: {BLOCK} {HDL}", flush=True)
    REPORT.unlink(missing_ok=True)
    t0 = time.monotonic()
    src = verilog.write(BLOCK, HDL, out=REPO / "build" / "verilog" / "tb")
    t_verilog = time.monotonic() - t0
    built: list[str] = []
    bdir = toolchain.build(
        f"{BLOCK}{tag}",
        [src],
        BLOCK,
        public=(),
        progress=lambda msg: (built.append(msg), print(msg, flush=True)),
    )
    t_build = time.monotonic() - t0 - t_verilog
    print(f"Verilog {t_verilog:.1f} s, Verilator {t_build:.1f} s{'' if built else ' (cached)'}")
    run_dir = RUNS / f"{BLOCK}{tag}" / "dp_growth"
    log = run_dir / "sim.log"
    log.unlink(missing_ok=True)
    stop = threading.Event()
    th = threading.Thread(target=_follow, args=(log, stop), daemon=True)
    th.start()
    seed = os.environ.get("SIM_SEED")
    failed = None
    t1 = time.monotonic()
    try:
        toolchain.run(
            bdir,
            BLOCK,
            "tb.topology_dp_growth",
            test_dir=run_dir,
            testcase="dp_growth",
            extra_env={"TB_PARAMS": json.dumps({**verilog.block_params(BLOCK), **HDL})},
            seed=int(seed) if seed else None,
        )
    except AssertionError as exc:
        failed = exc
    finally:
        stop.set()
        th.join()
    t_run = time.monotonic() - t1
    if not REPORT.exists():
        print(f"no report written; {failed}")
        return 1
    rec = json.loads(REPORT.read_text())
    rec.update(
        verilog_seconds=round(t_verilog, 1),
        build_seconds=round(t_build, 1),
        build_cached=not built,
        run_seconds=round(t_run, 1),
    )
    REPORT.write_text(json.dumps(rec, indent=1) + "\n")
    print(_table(rec["rows"]))
    print(
        f"run {t_run:.0f} s (build {t_build:.0f} s{', cached' if not built else ''}); "
        f"error pulses: {rec['errors']}; mismatches: {len(rec['mismatches'])}"
        f"{'' if rec.get('complete') else '; INCOMPLETE'}\nreport: {REPORT.relative_to(REPO)}"
    )
    for m in rec["mismatches"]:
        print("  " + m)
    return 1 if failed or rec["mismatches"] or not rec.get("complete") else 0


if __name__ == "__main__":
    sys.exit(main())
