"""Testbench: page states and the GCLOCK spill queue (hw/kvpool/pagestate.py) against
golden.kvpool.pages.Pages (SPEC §4.6 *Committing a page*, *Spill*).

Driver: a command stream with the pool's discipline: the bench keeps its own
free pool (pages freed, and a never-used mark: a page taken from the mark is
``fresh``), allocates speculative pages (SPEC), commits speculative or free
pages (COMMIT, with a random table and position), frees speculative and
committed pages, scores pages (SCORE, often several times so that GCLOCK
passes pages over many times), asks for victims (VICTIM; the victim is then
mostly freed, as a spill does) and sends a few invalid kinds (5 .. 7). A
third of the commands follow up on the previous command's page (SPEC then
COMMIT, COMMIT then SCORE, FREE then SPEC of the same page: the forwarded
word), a freed page is often the next one allocated (freed while queued,
then re-committed: not pushed twice), and phases fill and drain the pool so
that VICTIM meets queues of every length (0, 1, 2, more; entries whose page
is no longer committed). Idle patterns gap ``cmd.valid``.

Model: ``golden.kvpool.pages.Pages`` performing each accepted command in
acceptance order (``make_spec``, ``make_committed``, ``free_spec`` /
``free_committed``, ``score``, ``victim``; a ``victim()`` that runs the
queue empty raises ``IndexError`` after dropping every entry: ``none``).
Timing: the contract of the leaf's docstring: ``done`` the cycle after a
command (its effects, ``level`` and ``busy`` low, the cycle after that), a
VICTIM's ``done`` by its passes (``I(k) = max(I(k - 1) + 1,
A(k))``; the passes' outcomes come from a walk of the golden queue before
``victim()``). Scoreboard, every cycle: ``done``, ``victim``, ``none``,
``busy``, ``cmd.ready``, and ``level`` (outside a VICTIM in progress). A
reset in the middle of a run (pages queued, their stale words then reused
as ``fresh`` ones); coverage of every case above is asserted.
"""

from collections import deque

from golden.kvpool.pages import COMMITTED, Pages
from hw.kvpool.pagestate import PsCmd, cmd_layout, victim_layout
from tb.common import FULL_ONLY, TB, pack, params, pattern, report, sized

CYCLES = 4000  # cycles per run (make test); make sim-full: 40,000
#: command weights: (kind, weight)
WEIGHTS = {
    "fill": {"spec": 4, "commit_spec": 3, "commit_free": 3, "free": 1, "score": 4, "victim": 2},
    "drain": {"spec": 1, "commit_spec": 1, "commit_free": 1, "free": 3, "score": 3, "victim": 4},
}
COVER = (
    "victim",
    "none_empty",
    "none_dropped",
    "q1_multi",
    "q2",
    "wrap",
    "requeue",
    "fresh_stale",
    "fwd",
    "fwd_score",
    "victim_after_cmd",
    "invalid_kind",
    "saturate",
)


def victim_done(a: int, l0: int, outcomes: list[str]) -> int:
    """The cycle of a VICTIM's ``done`` (accepted in cycle ``a``, ``l0`` entries queued),
    by the contract: pass ``k`` issued in ``I(k) = max(I(k - 1) + 1, A(k))``, ``A(k) = a +
    1`` for a queued entry, ``I(j) + 3`` for pass ``j``'s push-back; ``done`` at ``I(v) +
    3`` for a victim, ``I(n - 1) + 4`` when the queue ran empty, ``a + 2`` if it was."""
    avail = [a + 1] * l0
    issue = a
    for o in outcomes:
        issue = max(issue + 1, avail.pop(0))
        if o == "back":
            avail.append(issue + 3)
    if not outcomes:
        return a + 2
    return issue + (3 if outcomes[-1] == "victim" else 4)


class PageStateBench:
    """Drives ``cmd`` by the pool's discipline and checks every output every cycle."""

    def __init__(self, tb, p: dict, idle: str) -> None:
        self.tb, self.dut, self.p = tb, tb.dut, p
        self.n = p["PAGES"]
        self.cmd_l = cmd_layout(p["PAGES"], p["TABLE_BITS"], p["POS_BITS"])
        self.vic_l = victim_layout(p["PAGES"], p["TABLE_BITS"], p["POS_BITS"])
        self.pause = pattern(idle, tb.rng)
        self.script: deque[dict] = deque()  # directed commands, before random ones
        self.cover = dict.fromkeys(COVER, 0)
        self.checked = self.mismatches = 0
        self.stim_on = True
        self.phase = "fill"
        self.cur: dict | None = None  # the command on the bus
        self.victims: list = []  # per VICTIM: the page, or None
        self.stale: set[int] = set()  # pages queued at the last reset
        self.in_reset = False
        self._reset_model()
        self.dut.cmd__valid.value = 0
        tb.add(self)

    def _reset_model(self) -> None:
        self.pg = Pages(self.n, 0)
        self.freed: list[int] = []  # the bench's free pool: freed pages, then the mark
        self.mark = 0
        self.spec: set[int] = set()
        self.committed: set[int] = set()
        self.pending: deque[dict] = deque()  # accepted, done or state not yet shown
        self.level = 0  # the queue's length the RTL shows
        self.last: tuple[int, int] | None = None  # (cycle, page) of the last accepted
        self.follow: dict | None = None  # the next command, decided by the last one

    # ------------------------------------------------------------------ stimulus
    def _take(self) -> tuple[int, int]:
        """A free page and ``fresh``: the last freed, a random freed one, or the mark."""
        rng = self.tb.rng
        if self.freed and (self.mark == self.n or rng.random() < 0.8):
            k = len(self.freed) - 1 if rng.random() < 0.5 else rng.randrange(len(self.freed))
            self.freed[k], self.freed[-1] = self.freed[-1], self.freed[k]
            return self.freed.pop(), 0
        self.mark += 1
        return self.mark - 1, 1

    def _has_free(self) -> bool:
        return bool(self.freed) or self.mark < self.n

    def _cmd(self, kind: str, page: int = 0, fresh: int = 0, s: int = 0) -> dict:
        rng = self.tb.rng
        tab = rng.randrange(1 << self.p["TABLE_BITS"])
        pos = rng.randrange(1 << self.p["POS_BITS"])
        return {"kind": kind, "page": page, "fresh": fresh, "s": s, "tab": tab, "pos": pos}

    def _random(self) -> dict:
        rng, pg = self.tb.rng, self.pg
        committed_n = len(self.committed)
        if self.phase == "fill" and (not self._has_free() or rng.random() < 0.004):
            self.phase = "drain"
        elif self.phase == "drain" and (committed_n + len(self.spec) == 0 or rng.random() < 0.004):
            self.phase = "fill"
        if self.follow is not None and (self.follow.pop("forced", False) or rng.random() < 0.35):
            c = self.follow
            if c["kind"] == "SPEC":  # the page just freed, taken back
                self.freed.remove(c["page"])
            return c
        if rng.random() < 0.01:  # no effect, even on a committed page with fresh set
            page = rng.choice(sorted(self.committed)) if self.committed else 0
            return self._cmd(rng.choice([5, 6, 7]), page, fresh=rng.randrange(2))
        w = dict(WEIGHTS[self.phase])
        if not self._has_free():
            w["spec"] = w["commit_free"] = 0
        if not self.spec:
            w["commit_spec"] = 0
        if not self.spec and not self.committed:
            w["free"] = 0
        if not self.committed:
            w["score"] = 0
            w["victim"] = 2 if pg.queue else 0.05  # only dropped entries: none
        kind = rng.choices(list(w), weights=list(w.values()))[0]
        if kind == "spec":
            return self._cmd("SPEC", *self._take())
        if kind == "commit_free":
            return self._cmd("COMMIT", *self._take())
        if kind == "commit_spec":
            return self._cmd("COMMIT", rng.choice(sorted(self.spec)))
        if kind == "free":
            pool = sorted(self.spec | self.committed)
            return self._cmd("FREE", rng.choice(pool))
        if kind == "score":
            s = rng.choice([0, 1, 1, 2, 3, 7])
            return self._cmd("SCORE", rng.choice(sorted(self.committed)), s=s)
        return self._cmd("VICTIM")

    def _next(self) -> dict | None:
        if self.script:
            c = self.script.popleft()  # None: an idle cycle
            return c if c is None else {**c, "script": True}
        if not next(self.pause):
            return None
        return self._random()

    def drive(self) -> None:
        if self.cur is None and self.stim_on:
            c = self._next()
            if c is not None:
                self.cur = c
                kind = c["kind"] if isinstance(c["kind"], int) else PsCmd[c["kind"]].value
                self.dut.cmd__payload.value = pack(self.cmd_l, {**c, "kind": kind})
        self.dut.cmd__valid.value = int(self.cur is not None)

    # ------------------------------------------------------------------ model
    def _walk(self) -> list[str]:
        """The passes ``victim()`` will make, from the golden state (for the timing)."""
        pg = self.pg
        q, c, out = deque(pg.queue), {}, []
        while q:
            p = q.popleft()
            cp = c.get(p, pg.c[p])
            if pg.state[p] != COMMITTED:
                out.append("drop")
            elif cp:
                c[p] = cp - 1
                q.append(p)
                out.append("back")
            else:
                out.append("victim")
                break
        return out

    def _apply(self, c: dict, a: int) -> dict:
        """Perform accepted command ``c`` (cycle ``a``) on the model; its expectations."""
        pg, kind, p = self.pg, c["kind"], c["page"]
        ent = {"done": a + 1, "at": a + 2, "victim": None, "none": 0, "is_victim": False}
        if self.last is not None and self.last[0] == a - 1:
            if kind != "VICTIM" and self.last[1] == p:
                self.cover["fwd_score" if kind == "SCORE" else "fwd"] += 1
            if kind == "VICTIM":
                self.cover["victim_after_cmd"] += 1
        self.last = (a, p if kind != "VICTIM" else -1)
        self.follow = None
        if c.get("script") and kind in ("SPEC", "COMMIT"):  # the free pool follows
            if c["fresh"]:
                self.mark = max(self.mark, p + 1)
            elif p in self.freed:
                self.freed.remove(p)
        if c["fresh"] and p in self.stale:  # its stale word was queued
            self.cover["fresh_stale"] += 1
        if kind == "SPEC":
            self.spec.add(p)
            pg.make_spec(p)
            self.follow = self._cmd("COMMIT", p)
        elif kind == "COMMIT":
            if pg.queued[p]:
                self.cover["requeue"] += 1
            was_spec = p in self.spec
            self.spec.discard(p)
            self.committed.add(p)
            pg.make_committed(p, c["tab"], c["pos"], was_spec)
            self.follow = self._cmd("SCORE", p, s=self.tb.rng.choice([1, 3, 7]))
        elif kind == "FREE":
            if p in self.spec:
                self.spec.discard(p)
                pg.free_spec(p)
            else:
                self.committed.discard(p)
                pg.free_committed(p)
            self.freed.append(p)
            self.follow = self._cmd("SPEC", p)
        elif kind == "SCORE":
            if pg.c[p] + c["s"] > 7:
                self.cover["saturate"] += 1
            pg.score(p, c["s"])
            self.follow = self._cmd("SCORE", p, s=self.tb.rng.choice([0, 2, 7]))
        elif kind == "VICTIM":
            self._apply_victim(ent, a)
        else:
            self.cover["invalid_kind"] += 1
        return ent

    def _apply_victim(self, ent: dict, a: int) -> None:
        pg, cover = self.pg, self.cover
        l0 = len(pg.queue)
        walk = self._walk()
        ent["done"] = ent["at"] = victim_done(a, l0, walk)
        ent["is_victim"] = True
        if len(walk) > l0 >= 3:  # a push-back popped again, one pass per cycle
            cover["wrap"] += 1
        if l0 == 1 and len(walk) > 1:
            cover["q1_multi"] += 1
        if l0 == 2:
            cover["q2"] += 1
        try:
            v = pg.victim()
        except IndexError:  # every entry dropped, the queue is empty
            v = None
        assert (v is None) == (not walk or walk[-1] != "victim"), "the bench's walk"
        self.victims.append(v)
        if v is None:
            ent["none"] = 1
            cover["none_empty" if not l0 else "none_dropped"] += 1
            return
        cover["victim"] += 1
        ent["victim"] = {"page": v, "tab": pg.wtab[v], "pos": pg.wpos[v]}
        if self.tb.rng.random() < 0.85:  # spilled: the pool frees it
            self.follow = {**self._cmd("FREE", v), "forced": True}

    # ------------------------------------------------------------------ scoreboard
    def _check(self, name: str, got: int, want: int) -> None:
        if got != want:
            self.mismatches += 1
            if self.mismatches <= 5:
                self.tb.log.error(
                    "seed %d, cycle %d: %s = %#x, want %#x",
                    self.tb.seed,
                    self.tb.cycle,
                    name,
                    got,
                    want,
                )

    def sample(self) -> None:
        dut, cyc = self.dut, self.tb.cycle
        want = {"done": 0, "none": 0, "victim": 0}
        # each entry: accepted in "a", done in "done", level (and state) from "at"
        for ent in self.pending:
            if ent["done"] == cyc:
                want["done"], want["none"] = 1, ent["none"]
                if ent["victim"] is not None:
                    want["victim"] = pack(self.vic_l, ent["victim"])
            if ent["at"] <= cyc:
                self.level = ent["level"]
        while self.pending and max(self.pending[0]["done"], self.pending[0]["at"]) <= cyc:
            self.pending.popleft()
        in_victim = any(e["is_victim"] and e["done"] > cyc for e in self.pending)
        want["busy"] = int(any(e["at"] > cyc for e in self.pending))
        want["cmd__ready"] = int(not in_victim)
        if not in_victim:
            want["level"] = self.level
        for k, v in want.items():
            self._check(k, int(getattr(dut, k).value), v)
        self.checked += 1
        if int(dut.rst.value):
            if not self.in_reset and self.n <= 4096:
                self.stale = {p for p in range(self.n) if self.pg.queued[p]}
            self.in_reset = True
            self._reset_model()
            self.cur = None
            return
        self.in_reset = False
        if self.cur is not None and int(dut.cmd__valid.value) and int(dut.cmd__ready.value):
            ent = self._apply(self.cur, cyc)
            ent["level"] = len(self.pg.queue)
            self.pending.append(ent)
            self.cur = None


async def run(
    dut, idle: str, n_cycles: int, *, reset_at: int | None = None, script=()
) -> PageStateBench:
    p = params()
    tb = TB(dut)
    bench = PageStateBench(tb, p, idle)
    bench.script.extend(script)
    await tb.start()
    if reset_at is not None:
        await tb.cycles(reset_at)
        await tb.wait_for(lambda: len(bench.pg.queue) >= 3, 10_000, "pages queued")
        await tb.reset(2)
    await tb.cycles(n_cycles)
    bench.stim_on = False
    await tb.cycles(3)
    await tb.wait_for(lambda: not bench.pending and bench.cur is None, 10_000, "the last done")
    await tb.cycles(2)
    name = ("directed+" if script else "") + idle + ("/reset" if reset_at is not None else "")
    report(
        "kvpool_page_state",
        name,
        checked=bench.checked,
        mismatches=bench.mismatches,
        latency="1 (SPEC/COMMIT/FREE/SCORE, one per cycle)" if idle == "none" else "",
        **bench.cover,
    )
    tb.log.info("coverage %s", bench.cover)
    assert bench.mismatches == 0, f"seed {tb.seed}: {bench.mismatches} mismatches"
    return bench


try:
    import cocotb
except ImportError:  # pragma: no cover
    cocotb = None

if cocotb is not None:

    @cocotb.test()
    @cocotb.parametrize(idle=["none", "random"])
    async def random_mix(dut, idle: str) -> None:
        """Fill and drain phases of the pool's commands, follow-ups on one page, VICTIM
        with queues of every length; at a small ``PAGES`` every case is reached."""
        bench = await run(dut, idle, sized(CYCLES, 40_000))
        if bench.n <= 64:
            # rare in a random run: directed_corners and reset_mid_run reach these
            skip = {"fresh_stale", "q1_multi", "q2", "none_empty", "none_dropped"}
            missing = [k for k, v in bench.cover.items() if not v and k not in skip]
            assert not missing, f"seed {bench.tb.seed}: not reached: {missing}"

    @cocotb.test()
    async def short_run(dut) -> None:
        """A short random run (the test the ``PAGES = 2**20`` build runs alone)."""
        await run(dut, "random", sized(CYCLES // 2, 20_000))

    @cocotb.test()
    async def directed_corners(dut) -> None:
        """By hand: VICTIM on an empty queue; a queue of one page passed over 8 times
        (3 cycles a pass); a page freed while queued, re-committed (not pushed twice)
        and dropped as the other's queue entry; a queue of two; then a random run."""

        def c(kind: str, page: int = 0, fresh: int = 0, s: int = 0, tab: int = 1, pos: int = 2):
            return {"kind": kind, "page": page, "fresh": fresh, "s": s, "tab": tab, "pos": pos}

        script = [c("VICTIM")]  # none, the queue empty
        script += [c("COMMIT", 0, fresh=1), c("SCORE", 0, s=7), c("VICTIM")]  # 8 passes
        script += [c("COMMIT", 0), c("FREE", 0), c("SPEC", 0), c("COMMIT", 0, tab=3)]
        script += [c("SPEC", 1, fresh=1), c("COMMIT", 1, fresh=0, pos=1), c("FREE", 1)]
        script += [c("SPEC", 1), c("FREE", 1), c("VICTIM")]  # 1 dropped, 0 the victim
        script += [c("COMMIT", 2, fresh=1), c("COMMIT", 3, fresh=1), c("SCORE", 3, s=2)]
        script += [None, c("VICTIM"), c("FREE", 2), c("VICTIM"), c("VICTIM")]
        script += [c("COMMIT", 2), c("FREE", 2), c("VICTIM")]  # 2 dropped: none
        bench = await run(dut, "random", sized(CYCLES // 4, 10_000), script=script)
        first = bench.victims[:5]
        assert first == [None, 0, 0, 2, 3], first  # the model's; the RTL matched it
        assert bench.victims[5:7] == [None, None] and bench.cover["none_dropped"], bench.victims
        assert bench.cover["q1_multi"] and bench.cover["none_empty"] and bench.cover["requeue"]

    @cocotb.test()
    async def reset_mid_run(dut) -> None:
        """A reset with pages queued: the queue empty, every page free; the stale words
        of queued pages are reused as ``fresh`` pages (pushed again)."""
        bench = await run(
            dut, "none", sized(CYCLES // 2, 10_000), reset_at=sized(CYCLES // 4, 10_000)
        )
        if bench.n <= 64:
            assert bench.cover["fresh_stale"], f"seed {bench.tb.seed}: no stale page reused"


# ----------------------------------------------------------------------------- pytest
import pytest  # noqa: E402

from tb.kvpool.common import run_leaf  # noqa: E402

#: parameter sets: 64 pages (make test; 16 in make sim-full, decision 0054), 2**20 (make
#: test: build + a short run)
PARAM_SETS = [
    pytest.param({"PAGES": 16, "TABLE_BITS": 2, "POS_BITS": 3}, marks=FULL_ONLY),  # 0054
    {"PAGES": 64, "TABLE_BITS": 8, "POS_BITS": 17},
    pytest.param({"PAGES": 100, "TABLE_BITS": 10, "POS_BITS": 20}, marks=FULL_ONLY),
]


@pytest.mark.parametrize("hdl", PARAM_SETS, ids=lambda d: "-".join(f"{v}" for v in d.values()))
def test_kvpool_page_state(hdl: dict) -> None:
    run_leaf("kvpool_page_state", hdl, "tb.kvpool.test_pagestate")


def test_kvpool_page_state_at_scale() -> None:
    """``PAGES = 2**20`` at the default field widths: Verilog, a Verilator build and a
    short random run."""
    run_leaf(
        "kvpool_page_state",
        {"PAGES": 2**20},
        "tb.kvpool.test_pagestate",
        testcase="short_run",
    )
