"""Testbench: RNG lanes (hw/rng_lanes.py) against golden.rng.LaneRNG (SPEC §3.4).

Drivers: seed beats on ``seed`` (``StreamSource``) and an ``advance`` strobe
played from a per-cycle plan (back to back, or with the gaps of the
``tb.common`` idle patterns). Monitor and model (:class:`Checker`, every
cycle): ``busy`` and ``error`` against a cycle-exact model of the documented
contract, and ``out`` against ``golden.rng.LaneRNG`` in the cycle after every
accepted advance (every lane, bit for bit), plus spot checks that ``out`` is
still the old value in the advance cycle itself (latency exactly 1) and stays
unchanged between advances. Seeding time is measured from ``busy`` and must be
the documented ``32 * N_NODES`` cycles. Scenarios: corner and random seeds,
reseeding in the middle of a sequence (with and without an advance in the
same cycle), advances while busy, before the first seed and across the end
of seeding, and a reset in the middle of seeding and of a sequence.
"""

import random

import numpy as np

from golden.rng import LaneRNG
from tb.common import TB, StreamSource, params, pattern, report, run_block

CORNER_SEEDS = [0, 1, 2**64 - 1, 0x9E3779B97F4A7C15]
RANDOM_SEEDS = 6  # random seeds after the corners in `sequences`
GAPS = ["none", "half", "sparse", "random"]  # advance gap patterns (tb.common.PATTERNS)


def seeding_cycles(n_nodes: int) -> int:
    """The documented seeding time (``RngLanes`` docstring): ``busy`` cycles per seed."""
    return 32 * n_nodes


class Strobe:
    """Drives ``advance`` from ``plan`` (one 0/1 entry per cycle, 0 when empty)."""

    def __init__(self, tb: TB) -> None:
        self.sig = tb.dut.advance
        self.plan: list[int] = []
        self.now = 0
        self._pos = 0
        self.sig.value = 0
        tb.add(self)

    def extend(self, bits) -> None:
        self.plan.extend(bits)

    def stop(self) -> None:
        """Drop the pulses not yet driven."""
        del self.plan[self._pos :]

    @property
    def idle(self) -> bool:
        return self._pos >= len(self.plan)

    def drive(self) -> None:
        v = 0
        if self._pos < len(self.plan):
            v = self.plan[self._pos]
            self._pos += 1
        if v != self.now:
            self.sig.value = v
        self.now = v

    def sample(self) -> None:
        pass


class Checker:
    """Cycle-exact model of the contract, with golden.rng.LaneRNG for ``out``."""

    def __init__(self, tb: TB, src: StreamSource, strobe: Strobe, n_nodes: int) -> None:
        self.tb, self.dut, self.src, self.strobe, self.N = tb, tb.dut, src, strobe, n_nodes
        self.T = seeding_cycles(n_nodes)
        self.enabled = True
        self.checked = self.mismatches = 0
        self.accepted = self.rejected = self.seeds = 0
        self.same_cycle = 0  # advances accepted in the cycle a reseed was taken
        self.busy_runs: list[int] = []  # measured busy lengths
        self.latency_ok = 0  # spot checks: out still old in the advance cycle
        self.on_reset()
        tb.add(self)

    def on_reset(self) -> None:
        self.rng: LaneRNG | None = None  # golden of the last seed taken since reset
        self.seed_cycle: int | None = None  # cycle it was taken
        self.out_exp = np.zeros(self.N, dtype=np.uint32)
        self.expect_err = 0  # error expected this cycle (advance refused last cycle)
        self.check_next = False  # accepted advance last cycle: check out now
        self.busy_prev = 0
        self.busy_rise: int | None = None

    def fail(self, msg: str) -> None:
        self.mismatches += 1
        if self.mismatches <= 5:
            self.tb.log.error("seed %d, cycle %d: %s", self.tb.seed, self.tb.cycle, msg)

    def model_busy(self, c: int) -> bool:
        return self.seed_cycle is not None and self.seed_cycle < c <= self.seed_cycle + self.T

    def read_out(self) -> np.ndarray:
        raw = self.dut.out.value.to_unsigned()
        return np.frombuffer(raw.to_bytes(4 * self.N, "little"), dtype="<u4")

    def compare_out(self, what: str) -> bool:
        got = self.read_out()
        bad = np.flatnonzero(got != self.out_exp)
        if bad.size:
            lane = int(bad[0])
            self.fail(
                f"{what}: {bad.size} lanes differ, lane {lane} got {int(got[lane]):#010x} "
                f"want {int(self.out_exp[lane]):#010x}"
            )
        return not bad.size

    def drive(self) -> None:
        pass

    def sample(self) -> None:
        if not self.enabled:
            return
        c = self.tb.cycle
        err = int(self.dut.error.value)
        busy = int(self.dut.busy.value)
        adv = self.strobe.now

        # outcome of last cycle's advance: new outputs now (latency 1), or error
        if err != self.expect_err:
            self.fail(f"error = {err}, want {self.expect_err}")
        if self.check_next:
            self.compare_out("out after advance")
            self.checked += self.N
        elif self.expect_err:
            self.compare_out("out after a refused advance (must not change)")
        elif adv and self.tb.rng.random() < 0.3:
            # advance cycle itself: out must still show the previous outputs
            self.latency_ok += self.compare_out(
                "out in the advance cycle (must still show the previous outputs)"
            )
        elif self.tb.rng.random() < 0.01:
            self.compare_out("out between advances")

        # busy against the model; measured busy lengths
        want_busy = self.model_busy(c)
        if busy != want_busy:
            self.fail(f"busy = {busy}, want {int(want_busy)} (seed taken in {self.seed_cycle})")
        if busy and not self.busy_prev:
            self.busy_rise = c
        if self.busy_prev and not busy and self.busy_rise is not None:
            self.busy_runs.append(c - self.busy_rise)
        self.busy_prev = busy

        # this cycle's inputs: the advance acts on the old streams, then a seed
        seeded = self.rng is not None and not want_busy
        self.expect_err = int(bool(adv) and not seeded)
        self.check_next = bool(adv) and seeded
        if self.check_next:
            self.out_exp = self.rng.next()
            self.accepted += 1
        elif adv:
            self.rejected += 1
        taken = bool(self.src.sent) and self.src.sent[-1][0] == c
        if taken:
            if want_busy:
                self.fail("seed beat taken while busy")
            self.same_cycle += self.check_next
            self.rng = LaneRNG(self.src.sent[-1][1], self.N)
            self.seed_cycle = c
            self.seeds += 1
        elif self.src.current is not None and not want_busy:
            self.fail("seed beat offered while not busy but not taken (seed.ready low)")


class Bench:
    """TB, agents and the small sequences the tests are written in."""

    def __init__(self, dut) -> None:
        self.N = params()["N_NODES"]
        self.tb = TB(dut)
        self.src = StreamSource(self.tb, "seed", 64)
        self.strobe = Strobe(self.tb)
        self.chk = Checker(self.tb, self.src, self.strobe, self.N)
        self.rng: random.Random = self.tb.rng

    async def start(self) -> None:
        await self.tb.start()

    async def quiet(self, extra: int = 2) -> None:
        """Wait until every planned pulse and queued seed is out, plus ``extra`` cycles."""
        await self.tb.wait_for(
            lambda: self.strobe.idle and self.src.idle, timeout=4 * self.chk.T + 10000
        )
        await self.tb.cycles(extra)

    async def seed(self, value: int, *, wait: bool = True) -> None:
        """Send a seed beat; with ``wait``, return once seeding is over."""
        n = len(self.src.sent)
        self.src.send(value)
        await self.tb.wait_for(lambda: len(self.src.sent) > n, timeout=4 * self.chk.T + 100)
        if wait:
            await self.seeded()

    async def seeded(self) -> None:
        """Wait until the seeding in progress (if any) is over."""
        end = self.chk.seed_cycle + self.chk.T if self.chk.seed_cycle is not None else 0
        await self.tb.wait_for(lambda: self.tb.cycle > end, timeout=self.chk.T + 100)

    def advances(self, k: int, gaps: str) -> None:
        """Plan ``k`` advance pulses spaced by the idle pattern ``gaps``."""
        it = pattern(gaps, self.rng)
        bits: list[int] = []
        while sum(bits) < k:
            bits.append(next(it))
        self.strobe.extend(bits)

    def random_seed(self) -> int:
        return self.rng.getrandbits(64)

    def finish(self, test: str) -> None:
        chk = self.chk
        runs = sorted(set(chk.busy_runs))
        if any(r != chk.T for r in runs):
            chk.fail(f"seeding took {runs} cycles, documented {chk.T} (32 * N_NODES)")
        if chk.accepted and chk.checked != chk.accepted * self.N:
            chk.fail("not every accepted advance was checked")
        t_meas = "/".join(str(r) for r in runs) or "-"
        lat = "1" if chk.mismatches == 0 and chk.latency_ok else "?"
        self.tb.log.info(
            "%s: %d seeds, %d advances checked (%d lane outputs), %d refused, "
            "seeding %s cycles, %d mismatches",
            test,
            chk.seeds,
            chk.accepted,
            chk.checked,
            chk.rejected,
            t_meas,
            chk.mismatches,
        )
        report(
            "rng_lanes",
            test,
            checked=chk.checked,
            mismatches=chk.mismatches,
            advances=chk.accepted,
            refused=chk.rejected,
            seeds=chk.seeds,
            latency=f"seed {t_meas} cyc, advance {lat} cyc",
        )
        assert chk.mismatches == 0, f"seed {self.tb.seed}: {chk.mismatches} mismatches"


# ----------------------------------------------------------------------------- cocotb
try:
    import cocotb
except ImportError:  # pragma: no cover
    cocotb = None

if cocotb is not None:

    @cocotb.test()
    async def sequences(dut) -> None:
        """Corner and random seeds, 3..20 advances each with random gaps, reseeding
        in the middle of a sequence, one long back-to-back run."""
        b = Bench(dut)
        await b.start()
        b.advances(3, "none")  # before any seed: refused with error
        await b.quiet()
        seeds = CORNER_SEEDS + [b.random_seed() for _ in range(RANDOM_SEEDS)]
        for i, s in enumerate(seeds):
            await b.seed(s)
            b.advances(b.rng.randint(3, 20), b.rng.choice(GAPS))
            if i % 3 == 2:  # reseed while the sequence runs: the rest is refused
                await b.tb.cycles(b.rng.randint(1, 8))
                await b.seed(b.random_seed())
                b.advances(b.rng.randint(3, 8), b.rng.choice(GAPS))
            await b.quiet()
        # an advance in the very cycle a reseed is taken acts on the old streams
        for _ in range(2):
            b.strobe.extend([1])
            b.src.send(b.random_seed())
            await b.quiet()
            await b.seeded()
            b.advances(5, b.rng.choice(GAPS))
            await b.quiet()
        if b.chk.same_cycle < 2:
            b.chk.fail(f"{b.chk.same_cycle} advances in a reseed cycle, want at least 2")
        # a long run, back to back
        await b.seed(b.random_seed())
        b.advances(200 if b.N <= 16 else 60, "none")
        await b.quiet()
        b.finish("sequences")

    @cocotb.test()
    async def busy_errors(dut) -> None:
        """Advances while busy (random moments and across the end of seeding) are
        refused with error and change nothing; the next valid advance matches."""
        b = Bench(dut)
        await b.start()
        for _ in range(4):
            await b.seed(b.random_seed(), wait=False)
            T, s = b.chk.T, b.chk.seed_cycle
            # random pulses while busy
            for t in sorted(b.rng.randint(s + 1, s + T - 12) for _ in range(4)):
                await b.tb.wait_for(lambda t=t: b.tb.cycle >= t, timeout=T)
                b.advances(b.rng.randint(1, 3), "none")
            # a burst across the last busy cycles and the first seeded ones
            await b.tb.wait_for(lambda s=s, T=T: b.tb.cycle >= s + T - 3, timeout=T)
            b.strobe.extend([1] * 8)
            await b.quiet()
            b.advances(b.rng.randint(3, 10), b.rng.choice(GAPS))
            await b.quiet()
        if b.chk.rejected < 4 * 5:
            b.chk.fail(f"only {b.chk.rejected} advances refused: the bursts missed busy")
        b.finish("busy_errors")

    @cocotb.test()
    async def reset_mid_run(dut) -> None:
        """A reset during seeding and during a sequence leaves the lanes unseeded
        (advance -> error, out = 0); seeding again gives the golden streams."""
        b = Bench(dut)
        await b.start()

        async def reset() -> None:
            await b.tb.cycles(2)  # let the checks of the last advance happen
            b.chk.enabled = False
            await b.tb.reset(b.rng.randint(1, 3))
            b.chk.on_reset()
            b.chk.enabled = True
            b.chk.compare_out("out after reset (0)")
            b.advances(2, "none")  # unseeded again: refused
            await b.quiet()

        for _ in range(3):
            await b.seed(b.random_seed())
            b.advances(b.rng.randint(3, 12), b.rng.choice(GAPS))
            await b.quiet()
            # reset in the middle of seeding
            await b.seed(b.random_seed(), wait=False)
            await b.tb.cycles(b.rng.randint(1, b.chk.T - 2))
            await reset()
            # seed, a few advances, reset in the middle of the sequence
            await b.seed(b.random_seed())
            b.advances(20, "random")
            await b.tb.cycles(b.rng.randint(2, 10))
            b.strobe.stop()
            await reset()
        await b.seed(b.random_seed())
        b.advances(5, "none")
        await b.quiet()
        b.finish("reset_mid_run")


# ----------------------------------------------------------------------------- pytest
import pytest  # noqa: E402

from tb.common import FULL_ONLY, N_NODES_SETS  # noqa: E402


@pytest.mark.parametrize("n_nodes", [*N_NODES_SETS, pytest.param(1024, marks=FULL_ONLY)])
def test_rng_lanes(n_nodes: int) -> None:
    run_block("rng_lanes", {"N_NODES": n_nodes}, "tb.test_rng_lanes")
