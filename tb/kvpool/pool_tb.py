"""The scaled pool's cocotb bench: drivers, monitors, scoreboard, quiescent checks, reset.

:class:`PoolTB` is one agent of :class:`tb.common.TB`'s cycle engine. Each
cycle, in ``drive`` (falling edge) it offers a beat on ``q0``, ``q1`` and
``op`` (:class:`InPort`: a beat once raised stays, payload stable, until
``ready``; a new beat only when the port's idle pattern allows); in
``sample`` (``ReadOnly``) it takes the accepted beats in the contract's order
(``q0``, ``q1``, ``op``: the scoreboard steps golden on each) and compares
every ``r0`` / ``r1`` / ``res`` beat (:class:`OutPort`) with the oldest beat
owed on that stream (:class:`tb.kvpool.pool_model.Scoreboard`). Beats come
from :class:`tb.kvpool.pool_stim.Stimulus` or from a directed script per
port (:attr:`PoolTB.script`, first). A share's tokens (its beat's
``tokens``) are queued on :class:`TokPort` when the operation is accepted
and fed on ``tok`` from the next cycle on (``valid`` held until ``ready``,
the operation port's idle pattern); a share's result that arrives before
the pool has taken all its tokens fails the run (as does a token waiting
for ``ready`` too long).

Quiescent points (:meth:`PoolTB.quiesce`): no new beat is offered; once
nothing is owed and nothing is on the bus for :data:`QUIET` cycles, the
TLB counters (``hits0`` ... ``misses1``, 32 bits, wrapping) and the counts
(``free_pages`` ... ``hbm_used``) are compared with golden's. A beat owed
for more than :data:`TIMEOUT` cycles, or an input beat waiting that long
for ``ready``, fails the run (an operation that never completes).
:meth:`PoolTB.reset` drives ``rst`` for a few cycles with the traffic in
flight: golden is recreated and what was owed is forgotten (a beat after
it is unexpected).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from tb.common import TB, pattern
from tb.kvpool.pool_model import COUNT_FIELDS, Expected, Scoreboard
from tb.kvpool.pool_stim import Stimulus

__all__ = ["PoolTB", "InPort", "OutPort", "TokPort", "QUIET", "TIMEOUT"]

QUIET = 3  # idle cycles before the counters are compared
TIMEOUT = 20000  # cycles a beat may be owed, or wait for ready
COUNTERS = ("hits0", "misses0", "hits1", "misses1")


class InPort:
    """A stream input: ``valid`` held with a stable payload until ``ready``."""

    def __init__(
        self,
        dut,
        name: str,
        idle,
        source: Callable[[], dict | None],
        pack: Callable[[dict], int],
        unpack: Callable[[int], dict],
    ) -> None:
        self.name = name
        self.valid = getattr(dut, f"{name}__valid")
        self.payload = getattr(dut, f"{name}__payload")
        self.ready = getattr(dut, f"{name}__ready")
        self.pause, self.source, self.pack, self.unpack = idle, source, pack, unpack
        self.raw: int | None = None
        self.beat: dict | None = None  # the source's dict of the beat on the bus
        self.up = False
        self.waited = 0  # cycles the current beat has been on the bus
        self.accepted: list[int] = []  # accept cycles (directed measurements)
        self.valid.value = 0

    def drive(self, on: bool) -> None:
        if self.raw is None and on and next(self.pause):
            beat = self.source()
            if beat is not None:
                self.raw = self.pack(beat)
                self.beat = beat
                self.payload.value = self.raw
        up = self.raw is not None
        if up != self.up:
            self.valid.value = int(up)
            self.up = up

    def take(self) -> dict | None:
        """In ``ReadOnly``: the beat accepted at the coming edge (unpacked), else ``None``."""
        if not self.up:
            return None
        if not self.ready.value:
            self.waited += 1
            return None
        beat = self.unpack(self.raw)
        if self.beat is not None:  # keys that are no field (a share's tokens)
            beat = self.beat | beat
        self.raw, self.waited, self.beat = None, 0, None
        return beat

    def drop(self) -> None:
        self.raw, self.waited, self.beat = None, 0, None
        if self.up:
            self.valid.value = 0
            self.up = False


class TokPort:
    """The ``tok`` input: the tokens of accepted shares, in order, ``valid`` held until
    ``ready``; ``owed`` counts, per share in order, the tokens it still has to take."""

    def __init__(self, dut, idle) -> None:
        self.name = "tok"
        self.valid, self.payload, self.ready = dut.tok__valid, dut.tok__payload, dut.tok__ready
        self.pause = idle
        self.queue: deque[int] = deque()
        self.owed: deque[list[int]] = deque()  # [share's transaction index, tokens left]
        self.tok: int | None = None
        self.up = False
        self.waited = 0
        self.taken = 0  # tokens taken in all
        self.valid.value = 0

    def push(self, index: int, tokens: list[int]) -> None:
        self.queue.extend(tokens)
        self.owed.append([index, len(tokens)])

    def drive(self) -> None:
        if self.tok is None and self.queue and next(self.pause):
            self.tok = self.queue.popleft()
            self.payload.value = self.tok
        up = self.tok is not None
        if up != self.up:
            self.valid.value = int(up)
            self.up = up

    def take(self) -> bool:
        """In ``ReadOnly``: ``True`` if the token on the bus is taken at the coming edge."""
        if not self.up:
            return False
        if not self.ready.value:
            self.waited += 1
            return False
        self.tok, self.waited = None, 0
        self.taken += 1
        while self.owed and not self.owed[0][1]:
            self.owed.popleft()
        if self.owed:
            self.owed[0][1] -= 1
        return True

    def left(self, index: int) -> int:
        """Tokens share ``index`` has still to take (0: all taken, or no such share)."""
        return next((n for i, n in self.owed if i == index), 0)

    def drop(self) -> None:
        self.queue.clear()
        self.owed.clear()
        self.tok, self.waited = None, 0
        if self.up:
            self.valid.value = 0
            self.up = False


class OutPort:
    """A stream output with no ready: every ``valid`` cycle is a beat."""

    def __init__(self, dut, name: str) -> None:
        self.name = name
        # a stream-shaped port (<name>__valid, <name>__payload) or <name>_valid and <name>
        if hasattr(dut, f"{name}__valid"):
            self.valid = getattr(dut, f"{name}__valid")
            self.payload = getattr(dut, f"{name}__payload")
        else:
            self.valid = getattr(dut, f"{name}_valid")
            self.payload = getattr(dut, name)

    def beat(self) -> int | None:
        return int(self.payload.value) if self.valid.value else None


class PoolTB:
    """The pool's bench (see the module): one agent of ``tb``.

    Parameters
    ----------
    tb : TB
        The cycle engine.
    p : dict
        Every HDL parameter (``tb.common.params()``).
    idle : dict
        Idle pattern names of ``q`` (both lookup ports) and ``op``.
    """

    def __init__(self, tb: TB, p: dict[str, int], idle: dict[str, str] | None = None) -> None:
        idle = {"q": "none", "op": "none"} | dict(idle or {})
        self.tb, self.dut, self.p = tb, tb.dut, p
        # a share takes its n tokens (up to 2**POS_BITS + 16) and compares as many
        self.timeout = max(TIMEOUT, 4 << p["POS_BITS"])
        self.sb = Scoreboard(p)
        self.stim = Stimulus(p, tb.rng, self.sb)
        self.random = False  # True: the stimulus feeds the ports when the script is empty
        self.script: dict[str, deque[dict]] = {"q0": deque(), "q1": deque(), "op": deque()}
        fmt = self.sb.fmt
        qp, qu = fmt.pack_query, fmt.unpack_query
        self.ins = [
            InPort(self.dut, "q0", pattern(idle["q"], tb.rng), self._src("q0", 0), qp, qu),
            InPort(self.dut, "q1", pattern(idle["q"], tb.rng), self._src("q1", 1), qp, qu),
            InPort(
                self.dut,
                "op",
                pattern(idle["op"], tb.rng),
                self._src("op"),
                fmt.pack_op,
                fmt.unpack_op,
            ),
        ]
        self.outs = [OutPort(self.dut, n) for n in ("r0", "r1", "res")]
        self.tok = TokPort(self.dut, pattern(idle["op"], tb.rng))
        self.rst = self.dut.rst
        self.reset_left = 0
        self._rst = 0
        self.errors: list[str] = []
        self.log_limit = 8
        self.quiet = 0  # consecutive cycles with nothing owed and nothing offered
        self.quiet_checks = 0
        self.leaks = 0  # quiescent points whose counts break conservation
        self.resets = 0
        self.last_out = 0  # the cycle of the last beat delivered (timeouts)
        self.record = False  # True: keep (stream, Expected, cycle) of each delivery
        self.done: list[tuple[str, Expected, int]] = []
        tb.add(self)

    def _src(self, name: str, port: int | None = None) -> Callable[[], dict | None]:
        script = self.script[name]

        def source() -> dict | None:
            if script:
                return script.popleft()
            if not self.random:
                return None
            return self.stim.op() if port is None else self.stim.query(port)

        return source

    # ------------------------------------------------------------------ engine
    def fail(self, msg: str) -> None:
        self.errors.append(msg)
        if len(self.errors) <= self.log_limit:
            self.tb.log.error("seed %d, cycle %d: %s", self.tb.seed, self.tb.cycle, msg)

    def drive(self) -> None:
        if self.reset_left:
            self.reset_left -= 1
            if not self._rst:
                self.rst.value = self._rst = 1
            for port in self.ins:
                port.drop()
            self.tok.drop()
            return
        if self._rst:
            self.rst.value = self._rst = 0
        for port in self.ins:
            port.drive(True)
        self.tok.drive()

    def sample(self) -> None:
        cycle = self.tb.cycle
        if int(self.rst.value):
            self.sb.reset()
            self.stim.reset()
            self.quiet = 0
            self.last_out = cycle
            return
        sb = self.sb
        q0, q1, op = self.ins
        for k, port in ((0, q0), (1, q1)):
            beat = port.take()
            if beat is not None:
                sb.accept_query(k, beat, cycle)
                port.accepted.append(cycle)
        self.tok.take()
        beat = op.take()
        if beat is not None:
            e = sb.accept_op(beat, cycle)
            op.accepted.append(cycle)
            if "tokens" in beat:
                self.tok.push(e.index, beat["tokens"])
        for out in self.outs:
            raw = out.beat()
            if raw is None:
                continue
            self.last_out = cycle
            head = sb.owed[out.name][0] if sb.owed[out.name] else None
            if out.name == "res" and head is not None and self.tok.left(head.index):
                self.fail(
                    f"res of share #{head.index} with {self.tok.left(head.index)} of its "
                    "tokens not taken"
                )
            for msg in sb.deliver(out.name, cycle, raw):
                self.fail(msg)
            if self.record and head is not None:
                self.done.append((out.name, head, cycle))
        self._watch(cycle)

    def _watch(self, cycle: int) -> None:
        busy = any(port.up for port in self.ins) or self.tok.up or bool(self.tok.queue)
        if self.sb.pending or busy:
            self.quiet = 0
            if self.sb.pending and cycle - max(self.last_out, self._oldest()) > self.timeout:
                self.fail(f"a beat owed for {self.timeout} cycles: {self._owed_summary()}")
                self.last_out = cycle
            for port in (*self.ins, self.tok):
                if port.waited > self.timeout:
                    self.fail(f"{port.name}: valid for {self.timeout} cycles without ready")
                    port.waited = 0
            return
        self.quiet += 1
        if self.quiet == QUIET:
            self.check_counters()

    def _oldest(self) -> int:
        return min((q[0].cycle for q in self.sb.owed.values() if q), default=0)

    def _owed_summary(self) -> str:
        sb = self.sb
        return "; ".join(
            f"{s}: #{q[0].index} {sb.describe(q[0].tx)} (cycle {q[0].cycle})"
            for s, q in sb.owed.items()
            if q
        )

    def check_counters(self) -> None:
        """Compare the TLB counters and the counts with golden's (at a quiescent point),
        and check the pool's own counts against SPEC §4.8's conservation (a break is a
        leak: counted in ``leaks`` and failed)."""
        self.quiet_checks += 1
        want = self.sb.tlb_counts() | self.sb.counts()
        got = {k: int(getattr(self.dut, k).value) for k in COUNTERS + COUNT_FIELDS}
        for k in COUNTERS + COUNT_FIELDS:
            if got[k] != want[k]:
                self.fail(f"quiescent point {self.quiet_checks}: {k} = {got[k]}, want {want[k]}")
        pages = got["free_pages"] + got["spec_pages"] + got["committed_pages"]
        if pages != self.p["PAGES"] or got["hbm_used"] > self.p["HBM_PAGES"]:
            self.leaks += 1
            self.fail(f"quiescent point {self.quiet_checks}: counts {got} break conservation")

    # ------------------------------------------------------------------ control
    async def quiesce(self, timeout: int | None = None) -> None:
        """Stop offering beats until the pool is quiescent and checked, then resume
        (``timeout``: 4 x the hang timeout, which grows with ``2**POS_BITS``)."""
        timeout = timeout or 4 * self.timeout
        self.stim.quiet = True
        self.quiet = 0  # counted again from here: a pool already quiet is checked again
        before = self.quiet_checks
        try:
            await self.tb.wait_for(lambda: self.quiet_checks > before, timeout, "a quiescent point")
        except AssertionError:
            self.fail(f"no quiescent point in {timeout} cycles: {self.state()}")
            raise
        self.stim.quiet = False

    def state(self) -> str:
        """What is in flight (for a message)."""
        ports = ", ".join(
            f"{p.name} up {int(p.up)} waited {p.waited}" for p in (*self.ins, self.tok)
        )
        ports += f", tok queued {len(self.tok.queue)}"
        return f"{ports}; owed: {self._owed_summary() or 'nothing'}; quiet {self.quiet}"

    async def reset(self, cycles: int = 2) -> None:
        """``rst`` for ``cycles`` cycles, the traffic in flight."""
        self.reset_left = cycles
        self.resets += 1
        await self.tb.cycles(cycles + 1)

    async def run_script(self, beats: dict[str, list[dict]], timeout: int = TIMEOUT) -> None:
        """Offer the directed ``beats`` (per port, in order) and wait until every one is
        accepted and answered."""
        for name, items in beats.items():
            self.script[name].extend(items)
        await self.tb.wait_for(
            lambda: (
                not any(self.script.values())
                and not any(p.up for p in self.ins)
                and not self.tok.up
                and not self.tok.queue
                and not self.sb.pending
            ),
            timeout,
            "the directed beats' answers",
        )
