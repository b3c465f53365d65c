"""Testbench: the block tables (hw/kvpool/blocktable.py) against a dict of PTE lists.

Model: ``tables[t]`` is the list of table ``t``'s PTEs (independent of the
radix trees: it knows only that a table of length ``n`` holds
``ceil(n / 64)`` leaf and ``ceil(n / 4096)`` mid nodes, narrower below
``INDEX_BITS = 12``, to predict the free counts). Every output is checked
in every cycle against the contract's timing (all outputs are registers, so
the model predicts each cycle's outputs from the cycles before):
``cmd.ready``, ``busy``, ``out.valid`` and each beat's ``{i, pte}``
(a CUT's beats from its fourth cycle, one per cycle ``out.ready`` allows),
every lookup response (``valid`` exactly 3 cycles after the read; the PTE
of a read of a stable index, one no command in progress or accepted in
that cycle changes), ``error``, and ``leaves_free`` / ``mids_free`` in
every cycle no CUT is in progress.

Driver: a growth phase of back-to-back APPENDs (one table grows to 4,200
indices, past 4,096 + 64, others cross 64), then a random mix: APPENDs to random tables
(nodes permitting), WRITEs of random indices, CUTs to ``c`` in ``{0, n,
k * 64, k * 64 + 1, k * 4096, n - small, random}``, the command stream idle
by a pattern, ``out.ready`` by a pattern, reads on every port (every cycle,
or by a pattern) of random stable indices; a reset in the middle; a run
that exhausts the nodes (``error``). Seeded (printed; ``SIM_SEED``).
"""

from collections import deque

from hw.kvpool.blocktable import BtCmd, cmd_layout, out_layout, pte_layout, read_layout
from tb.common import FULL_ONLY, TB, pack, params, pattern, report, sized, unpack
from tb.kvpool.common import Lockstep, run_leaf

CYCLES = 6000  # random-mix cycles per run (make test); make sim-full: 60,000
#: command weights in the random mix
WEIGHTS = {"append": 0.7, "write": 0.12, "cut": 0.18}
COVER = (
    "append",
    "b2b_same",
    "new_leaf",
    "new_mid",
    "mid_4096",
    "write",
    "write_after_append",
    "cut",
    "cut_0",
    "cut_n",
    "cut_64k",
    "cut_64k1",
    "cut_mid",
    "stall",
    "reads",
)


def _cut_long(c_of) -> object:
    """A directed CUT of the long table, to ``c_of(n)``."""

    def cmd(b: "BTBench") -> tuple:
        n = len(b.tables.get(b.long_t, []))
        return ("cut", b.long_t, min(n, c_of(n)), n, 0)

    return cmd


def _cut_first(b: "BTBench") -> tuple:
    """A directed CUT of table 0 (not the long table) to 0."""
    return ("cut", 0, 0, len(b.tables.get(0, [])), 0)


def _write_long(b: "BTBench") -> tuple:
    """A directed WRITE of a random index of the long table."""
    n = len(b.tables.get(b.long_t, []))
    return ("write", b.long_t, b.tb.rng.randrange(n), 0, b._pte())


def _append_long(b: "BTBench") -> tuple | None:
    if not b._can_append(b.long_t):
        return None
    return ("append", b.long_t, len(b.tables.get(b.long_t, [])), 0, b._pte())


#: after the growth phase: CUTs of the long table (past 4,160) to a multiple of 64,
#: keeping its mid node, then freeing it and keeping a leaf; APPENDs across 4,096 again
GROWN = (
    [
        _cut_long(lambda n: (n - 1) // 64 * 64),
        _cut_long(lambda n: 4097),
        _cut_long(lambda n: 4096 - 63),
    ]
    + [_append_long] * 80
    + [_cut_long(lambda n: n), _cut_first, _write_long]
)  # a cut of nothing (cut_n), table 0 emptied (cut_0), a WRITE


class BTBench(Lockstep):
    """Commands and reads; the list model predicts every output of every cycle."""

    INPUTS = ("cmd__valid", "cmd__payload", "out__ready")

    def __init__(self, tb, p: dict, idle: str, out_idle: str, rd_idle: str) -> None:
        super().__init__(tb)
        self.p = p
        self.ports = p["PORTS"]
        self.INPUTS = BTBench.INPUTS + tuple(
            f"rd{k}__{f}" for k in range(self.ports) for f in ("valid", "payload")
        )
        ib = p["INDEX_BITS"]
        self.leaf_span = 1 << min(6, ib)
        self.mid_span = 1 << min(12, ib)
        self.max_len = 1 << ib
        self.cmd_l = cmd_layout(p["TABLES"], ib, p["ADDR_BITS"], p["TOKEN_BITS"])
        self.rd_l = read_layout(p["TABLES"], ib)
        self.out_l = out_layout(ib, p["ADDR_BITS"], p["TOKEN_BITS"])
        self.pte_l = pte_layout(p["ADDR_BITS"], p["TOKEN_BITS"])
        self.cmd_pause = pattern(idle, tb.rng)
        self.out_pause = pattern(out_idle, tb.rng)
        self.rd_pause = [pattern(rd_idle, tb.rng) for _ in range(self.ports)]
        #: directed commands, before random ones: each a function of the bench
        self.script: deque = deque()
        self.mode = "mix"
        self.long_t = p["TABLES"] - 1  # the table grown past 4,096 (the highest number)
        self.cover = dict.fromkeys(COVER, 0)
        self.pending: tuple | None = None  # the command offered on cmd (held until taken)
        self.expect = self.reset_outputs()

    # ------------------------------------------------------------------ model
    def reset_outputs(self) -> dict:
        self.tables: dict[int, list[int]] = {}
        self.pending = None
        self.a_busy = False  # an APPEND accepted in the cycle before
        self.last_append: tuple | None = None  # (t, i) of that APPEND
        self.run: dict | None = None  # the WRITE or CUT in progress
        self.rsp = [deque([None] * 3) for _ in range(self.ports)]  # per port, r + 1 .. r + 3
        self.errored = False
        return self.outputs()

    def nodes(self) -> tuple[int, int]:
        ls = sum(-(-len(v) // self.leaf_span) for v in self.tables.values())
        ms = sum(-(-len(v) // self.mid_span) for v in self.tables.values())
        return ls, ms

    def outputs(self) -> dict:
        """The outputs of the coming cycle (None: not checked)."""
        run = self.run
        cut = run is not None and run["kind"] == "cut"
        beat = cut and run["age"] >= 4 and bool(run["beats"])
        out = {
            "cmd__ready": int(run is None),
            "busy": int(self.a_busy or run is not None),
            "out__valid": int(beat),
            "out__payload": self._out(run["beats"][0]) if beat and not self.errored else None,
            "error": int(self.errored),
        }
        if not cut and not self.errored:
            ls, ms = self.nodes()
            out["leaves_free"] = self.p["LEAVES"] - ls
            out["mids_free"] = self.p["MIDS"] - ms
        for k in range(self.ports):
            r = self.rsp[k][0]
            out[f"rd{k}_rsp__valid"] = int(r is not None)
            out[f"rd{k}_rsp__payload"] = None if r is None or self.errored else r
        return out

    def _out(self, beat: tuple[int, int]) -> int:
        return beat[0] | beat[1] << self.p["INDEX_BITS"]

    def step(self, inputs: dict) -> dict:
        """This cycle's inputs performed; the next cycle's outputs."""
        exp = self.expect
        run = self.run
        # the run in progress
        if run is not None:
            if run["kind"] == "write":
                run["left"] -= 1
                if run["left"] == 0:
                    self.run = None
            else:
                if exp["out__valid"] and inputs["out__ready"]:
                    run["beats"].popleft()
                    if not run["beats"]:
                        run["tail"] = True
                elif exp["out__valid"]:
                    self.cover["stall"] += 1
                elif run["tail"] and not run["beats"]:
                    self.run = None
                run["age"] += 1
        # reads: the PTE now, 3 cycles later
        for k in range(self.ports):
            self.rsp[k].popleft()
            self.rsp[k].append(self.reads[k])
        # the command accepted this cycle
        self.a_busy = False
        last, self.last_append = self.last_append, None
        if inputs["cmd__valid"] and exp["cmd__ready"]:
            self._accept(self.pending, last)
            self.pending = None
        return self.outputs()

    def _accept(self, cmd: tuple, last: tuple | None) -> None:
        kind, t, i, n, pte = cmd
        table = self.tables.setdefault(t, [])
        if kind == "append":
            assert i == len(table)
            ls, ms = self.nodes()
            need_leaf = i % self.leaf_span == 0
            need_mid = i % self.mid_span == 0
            if (need_leaf and ls == self.p["LEAVES"]) or (need_mid and ms == self.p["MIDS"]):
                self.errored = True
            table.append(pte)
            self.a_busy = True
            self.last_append = (t, i)
            self.cover["append"] += 1
            self.cover["new_leaf"] += need_leaf
            self.cover["new_mid"] += need_mid
            self.cover["mid_4096"] += need_mid and i > 0
            self.cover["b2b_same"] += last is not None and last[0] == t
        elif kind == "write":
            table[i] = pte
            self.run = {"kind": "write", "left": 4, "t": t, "lo": i, "hi": i + 1}
            self.cover["write"] += 1
            self.cover["write_after_append"] += last is not None and last == (t, i)
        else:
            c = i
            assert n == len(table)
            beats = deque((j, table[j]) for j in range(c, n))
            del table[c:]
            self.run = {"kind": "cut", "age": 1, "beats": beats, "tail": not beats}
            self.run |= {"t": t, "lo": c, "hi": n}
            self.cover["cut"] += 1
            self.cover["cut_0"] += c == 0
            self.cover["cut_n"] += c == n
            self.cover["cut_64k"] += 0 < c < n and c % 64 == 0
            self.cover["cut_64k1"] += c < n and c % 64 == 1
            self.cover["cut_mid"] += 0 < c < n and c // 4096 < (n - 1) // 4096

    # ------------------------------------------------------------------ stimulus
    def _pte(self) -> int:
        rng, p = self.tb.rng, self.p
        return pack(
            self.pte_l,
            {
                "loc": rng.randrange(2),
                "addr": rng.randrange(1 << p["ADDR_BITS"]),
                "token": rng.randrange(1 << p["TOKEN_BITS"]),
            },
        )

    def _can_append(self, t: int) -> bool:
        n = len(self.tables.get(t, []))
        if n == self.max_len:
            return False
        ls, ms = self.nodes()
        if n % self.leaf_span == 0 and ls >= self.p["LEAVES"]:
            return False
        return not (n % self.mid_span == 0 and ms >= self.p["MIDS"])

    def _command(self) -> tuple | None:
        """A new command (kind, t, i, n, pte), or None."""
        rng, p = self.tb.rng, self.p
        if self.script:
            return self.script.popleft()(self)
        if self.mode == "exhaust":  # APPENDs until a node is missing, then nothing
            if self.errored:
                return None
            t = self.exhaust_t(self)
            return ("append", t, len(self.tables.get(t, [])), 0, self._pte())
        if self.mode == "grow":
            t = self.long_t if rng.random() < 0.9 else rng.randrange(p["TABLES"])
            if self._can_append(t):
                return ("append", t, len(self.tables.get(t, [])), 0, self._pte())
            return None
        if self.last_append is not None and rng.random() < 0.05:
            t, i = self.last_append  # the index appended in the cycle before
            return ("write", t, i, 0, self._pte())
        r = rng.random()
        t = self.long_t if rng.random() < 0.25 else rng.randrange(p["TABLES"])
        n = len(self.tables.get(t, []))
        if r < WEIGHTS["append"]:
            if self._can_append(t):
                return ("append", t, n, 0, self._pte())
            t = max(self.tables, key=lambda k: len(self.tables[k]))  # out of nodes: cut
            n = len(self.tables[t])
            r = 1.0
        if r < WEIGHTS["append"] + WEIGHTS["write"]:
            return ("write", t, rng.randrange(n), 0, self._pte()) if n else None
        if n > self.mid_span:  # a long table: a short stream, across its last mid node
            m = n // self.mid_span * self.mid_span
            c = rng.choice([n, n - 1, m, m + 1, m - 64, m - 63, max(m, n - rng.randrange(300))])
            return ("cut", t, c, n, 0)
        base = max(0, n - 256) // 64 * 64  # a long table: the last 256 - 320 indices
        if rng.random() < 0.03:
            base = 0
        return ("cut", t, base + self._cut_point(n - base), n, 0)

    def _cut_point(self, n: int) -> int:
        rng = self.tb.rng
        k = rng.random()
        if k < 0.1 or n == 0:
            return 0
        if k < 0.2:
            return n
        if k < 0.4:
            return rng.randrange(n // 64 + 1) * 64
        if k < 0.55:
            return min(n, rng.randrange(n // 64 + 1) * 64 + 1)
        if k < 0.6:
            return rng.randrange(n // 4096 + 1) * 4096
        if k < 0.8:
            return max(0, n - rng.randrange(1, 80))
        return rng.randrange(n + 1)

    def _unsafe(self) -> list[tuple[int, int, int]]:
        """(t, lo, hi): indices a read must not ask for this cycle."""
        out = []
        if self.run is not None:
            out.append((self.run["t"], self.run["lo"], self.run["hi"]))
        if self.last_append is not None:
            t, i = self.last_append
            out.append((t, i, i + 1))
        if self.pending is not None:
            kind, t, i, n, _ = self.pending
            out.append((t, i, n if kind == "cut" else i + 1))
        return out

    def _read(self) -> tuple[int, int] | None:
        rng = self.tb.rng
        live = [t for t, v in self.tables.items() if v]
        if not live:
            return None
        unsafe = self._unsafe()
        for _ in range(4):
            t = rng.choice(live)
            i = rng.randrange(len(self.tables[t]))
            if not any(t == u and lo <= i < hi for u, lo, hi in unsafe):
                return t, i
        return None

    def _expressible(self, cmd: tuple | None) -> tuple | None:
        """A CUT of a full table to its length (``2**INDEX_BITS``) does not fit the
        ``i`` field: it cuts one index instead."""
        if cmd is not None and cmd[0] == "cut" and cmd[2] == self.max_len:
            return (cmd[0], cmd[1], self.max_len - 1, *cmd[3:])
        return cmd

    def stimulus(self) -> dict:
        if self.pending is None and (self.mode == "grow" or next(self.cmd_pause)):
            self.pending = self._expressible(self._command())
        out = dict.fromkeys(self.INPUTS, 0)
        if self.pending is not None:
            out["cmd__valid"], out["cmd__payload"] = 1, self._encode(self.pending)
        out["out__ready"] = next(self.out_pause)
        self.reads = []
        for k in range(self.ports):
            rd = self._read() if next(self.rd_pause[k]) and not self.errored else None
            if rd is not None:
                out[f"rd{k}__valid"] = 1
                out[f"rd{k}__payload"] = pack(self.rd_l, {"t": rd[0], "i": rd[1]})
                self.cover["reads"] += 1
                self.reads.append(self.tables[rd[0]][rd[1]])
            else:
                self.reads.append(None)
        return out

    def idle_inputs(self) -> dict:
        """No new command or read; a command offered stays offered (stream rules),
        ``out.ready`` high."""
        self.reads = [None] * self.ports
        out = dict.fromkeys(self.INPUTS, 0)
        out["out__ready"] = 1
        if self.pending is not None:
            out["cmd__valid"], out["cmd__payload"] = 1, self._encode(self.pending)
        return out

    def _encode(self, cmd: tuple) -> int:
        kind, t, i, n, pte = cmd
        fields = {"kind": BtCmd[kind.upper()].value, "t": t, "i": i, "n": n}
        return pack(self.cmd_l, fields | {"pte": unpack(self.pte_l, pte)})

    # ------------------------------------------------------------------ engine
    def read(self) -> dict:
        return {k: int(getattr(self.dut, k).value) for k in self.expect}

    def sample(self) -> None:
        if self.expect is not None:
            got = self.read()
            self.checked += 1
            for k, want in self.expect.items():
                if want is not None and got[k] != want:
                    self.fail(f"{k} = {got[k]:#x}, want {want:#x}")
        if int(self.dut.rst.value):
            self.expect = self.reset_outputs()
        else:
            self.expect = self.step(self.inputs)


async def run(
    dut,
    idle: str,
    out_idle: str,
    rd_idle: str,
    n_cycles: int,
    *,
    grow: int = 0,
    reset_at: int | None = None,
) -> BTBench:
    p = params()
    tb = TB(dut)
    bench = BTBench(tb, p, idle, out_idle, rd_idle)
    await tb.start()
    if grow:  # APPENDs (9 in 10 to the long table) until it holds `grow` indices
        bench.mode = "grow"

        def grown() -> bool:
            n = len(bench.tables.get(bench.long_t, []))
            return n >= grow or not bench._can_append(bench.long_t)

        await tb.wait_for(
            grown,
            timeout=4 * grow,
            what="the long table's growth",
        )
        bench.mode = "mix"
        bench.script.extend(GROWN)
    if reset_at is not None:
        await tb.cycles(reset_at)
        await tb.reset(2)
    await tb.cycles(n_cycles)
    bench.stim_on = False
    await tb.wait_for(lambda: bench.pending is None and bench.run is None, what="idle")
    await tb.cycles(4)
    name = f"{idle}/{out_idle}/{rd_idle}" + ("/reset" if reset_at is not None else "")
    report(
        "kvpool_block_table",
        name,
        checked=bench.checked,
        mismatches=bench.mismatches,
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
    async def grow_and_mix(dut) -> None:
        """Back-to-back APPENDs past 4,096 indices of one table, then the random mix
        with idle commands, backpressure and reads by random patterns."""
        p = params()
        grow = min(4200, 1 << p["INDEX_BITS"])  # past 4,160: a CUT to 64 k keeps mid 1
        bench = await run(dut, "random", "random", "random", sized(CYCLES, 60_000), grow=grow)
        skip = {"mid_4096", "cut_mid"} if p["INDEX_BITS"] <= 12 else set()
        skip.add("write_after_append")  # busy_mix asserts it (a command every cycle)
        missing = [k for k, v in bench.cover.items() if not v and k not in skip]
        assert not missing, f"seed {bench.tb.seed}: not reached: {missing}"

    @cocotb.test()
    async def exhaust(dut) -> None:
        """APPENDs until an allocation finds no node: ``error`` from the next cycle on,
        sticky; then a reset and the mix again (everything free, ``error`` 0)."""
        p = params()
        tb = TB(dut)
        bench = BTBench(tb, p, "none", "none", "none")
        if p["MIDS"] < p["TABLES"]:  # index 0 of MIDS + 1 tables: the mids run out
            bench.exhaust_t = lambda b: len(b.tables)
            cost = p["MIDS"] + 1
        else:  # the leaves, filled round robin
            bench.exhaust_t = lambda b: b.cover["append"] % p["TABLES"]
            cost = p["LEAVES"] * bench.leaf_span + 1
        if cost > sized(12_000, 200_000):
            tb.log.info("exhaust: %d APPENDs: too many, skipped", cost)
            return
        bench.mode = "exhaust"
        await tb.start()
        await tb.wait_for(lambda: bench.errored, timeout=cost + 10, what="error")
        await tb.cycles(20)
        assert int(dut.error.value) == 1
        bench.mode = "mix"
        await tb.reset(2)
        await tb.cycles(sized(CYCLES // 4, 10_000))
        bench.stim_on = False
        await tb.wait_for(lambda: bench.pending is None and bench.run is None, what="idle")
        await tb.cycles(4)
        report("kvpool_block_table", "exhaust", checked=bench.checked, mismatches=bench.mismatches)
        assert bench.mismatches == 0, f"seed {tb.seed}: {bench.mismatches} mismatches"

    @cocotb.test()
    async def busy_mix(dut) -> None:
        """The random mix with a command, a read on every port and out.ready every cycle."""
        bench = await run(dut, "none", "none", "none", sized(CYCLES // 2, 20_000))
        seed = bench.tb.seed
        assert bench.cover["write_after_append"], f"seed {seed}: no WRITE right after its APPEND"

    @cocotb.test()
    async def reset_mid_run(dut) -> None:
        """A reset with tables and a CUT in progress: every table empty, every node free."""
        await run(
            dut,
            "random",
            "half",
            "none",
            sized(CYCLES // 4, 10_000),
            reset_at=sized(CYCLES // 4, 10_000),
        )


# ----------------------------------------------------------------------------- pytest
import pytest  # noqa: E402

NAMES = ("TABLES", "INDEX_BITS", "ADDR_BITS", "TOKEN_BITS", "LEAVES", "MIDS", "PORTS")


def _set(*values: int, marks=()) -> object:
    return pytest.param(dict(zip(NAMES, values, strict=True)), marks=marks)


#: parameter sets (make test): 4 tables of every level (roots of 4 entries), the
#: defaults' widths and tables with fewer nodes, narrow trees (one root entry, mids of
#: 4 pointers) whose mids run out, one port; (make sim-full): the default node counts,
#: leaves of 16 PTEs (INDEX_BITS 4: mids of one pointer)
PARAM_SETS = [
    _set(4, 14, 4, 3, 160, 16, 2, marks=FULL_ONLY),  # decision 0054
    _set(256, 17, 21, 17, 640, 320, 2),
    _set(32, 8, 3, 2, 16, 16, 1),
    _set(256, 17, 21, 17, 49664, 1280, 2, marks=FULL_ONLY),
    _set(2, 4, 2, 2, 16, 16, 1, marks=FULL_ONLY),
]


@pytest.mark.parametrize("hdl", PARAM_SETS, ids=lambda d: "-".join(f"{v}" for v in d.values()))
def test_kvpool_block_table(hdl: dict) -> None:
    run_leaf("kvpool_block_table", hdl, "tb.kvpool.test_blocktable")
