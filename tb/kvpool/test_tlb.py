"""Testbench: one port's TLB (hw/kvpool/tlb.py) against golden.kvpool.tlb.PortTLB (SPEC §4.6 *TLB*).

Driver: every cycle a lookup (by the idle pattern), a fill, an invalidation
of a set and a kill of one segment (``kill_valid``, ``kill_seg``), each by
its rate, and now and then a burst of kills of one segment until its
generation wraps (a flush; with a lookup of a live entry in the flush's
cycle, and at least two bursts per run): keys come mostly from a
small hot set that drifts (so sets fill, ways are evicted and lookups hit),
the fills mostly complete the misses after a walk of 0 - 4 cycles (as the
pool's walker will), some are random keys (a key filled twice occupies two
ways, the golden model alike), and an invalidation changes its key's PTE
(a spill or fill moves the page). Model: ``golden.kvpool.tlb.PortTLB``,
performing each cycle's operations in the block's order: ``fill``,
``invalidate_set``, ``invalidate_segment(kill_seg)`` when ``kill_valid``,
then ``lookup``. Scoreboard (:class:`tb.kvpool.common.Lockstep`): every cycle,
the reply (``rsp_valid``, ``hit``, ``loc``, ``addr``: the lookup of the
cycle before) and the ``hits`` / ``misses`` counters; in the fill's own
cycle, the way it writes (``fill_way``, an internal net the build makes
visible) against the golden fill's. Coverage of the same-cycle cases
(a fill and a lookup of one key, a fill into the set a lookup just hit,
a fill invalidated or killed in its cycle, a kill of the segment a lookup
of its cycle looks up (and of one that entry holds, so the kill turns a hit
into a miss), a kill in the cycle of a set invalidation, a kill of an id
``>= SEGS``, an eviction) and of the generations (a flush, with a fill and
with a lookup of a live entry in its cycle; a set invalidation clearing a
way of another segment; a fill passing over an entry of an old generation,
and evicting one) is asserted. The directed test walks the same cases one
by one, and an entry that a flush keeps from coming back to life.
"""

from collections import deque

from golden.kvpool.tlb import PortTLB as GoldenTLB
from hw.kvpool.tlb import fill_layout, key_layout, reply_layout
from tb.common import FULL_ONLY, TB, pack, params, pattern, report, sized, unpack
from tb.kvpool.common import Lockstep, run_leaf

CYCLES = 4000  # cycles per run (make test); make sim-full: 40,000
#: internal nets the testbench reads
PUBLIC = ("fill_way",)
#: rates per cycle: fill of a random key, invalidation of a set, a kill of a segment,
#: the start of a burst of kills of one segment up to its generation's wrap
RATES = {"fill_random": 0.08, "inv": 0.06, "kill": 0.05, "burst": 0.002}
#: the cycle by which a run has started its first burst, twice that: its second
#: (``GEN_BITS <= 8``)
BURST_BY = 1000
COVER = (
    "hit",
    "miss",
    "same_key",
    "forward",
    "fill_inv",
    "fill_kill",
    "lk_kill",
    "lk_kill_hit",
    "inv_kill",
    "kill_high",
    "evict",
    "dup",
    "flush",
    "fill_flush",
    "lk_flush_hit",
    "inv_other",
    "fill_skip_dead",
    "evict_dead",
)


class TLBBench(Lockstep):
    """Lookups, fills and invalidations; the golden TLB predicts every reply and way."""

    INPUTS = ("lk_valid", "lk", "fill_valid", "fill", "inv_valid", "inv", "kill_valid", "kill_seg")

    def __init__(self, tb, p: dict, idle: str) -> None:
        super().__init__(tb)
        self.p = p
        self.seg_ids = 1 << max(1, (p["SEGS"] - 1).bit_length())  # ids the field holds
        self.key_l = key_layout(p["SEGS"], p["POS_BITS"])
        self.fill_l = fill_layout(p["SEGS"], p["POS_BITS"], p["ADDR_BITS"])
        self.rsp_l = reply_layout(p["ADDR_BITS"])
        self.pause = pattern(idle, tb.rng)
        self.script: deque[dict] = deque()  # directed operations, before random ones
        self.cover = dict.fromkeys(COVER, 0)
        self.pte: dict[tuple[int, int], tuple[int, int]] = {}
        self.walks: deque[tuple[int, tuple[int, int]]] = deque()  # (due cycle, key)
        self.hot = self._hot()
        self.fill_way_want: int | None = None
        self.prev_hit_set: int | None = None
        self.replies: list = []  # the model's replies, in order (None: a miss)
        self.fill_ways: list[int] = []  # the model's fill ways, in order
        self.burst: list[int] = []  # [segment, kills left] of a burst under way
        self.bursts = 0
        self.expect = self.reset_outputs()

    # ------------------------------------------------------------------ stimulus
    def _hot(self) -> list[tuple[int, int]]:
        p = self.p
        return [self._random_key() for _ in range(max(2, p["SETS"] * p["WAYS"] * 3 // 2))]

    def _random_key(self) -> tuple[int, int]:
        rng = self.tb.rng
        return rng.randrange(self.seg_ids), rng.randrange(1 << self.p["POS_BITS"])

    def _key(self) -> tuple[int, int]:
        rng = self.tb.rng
        return rng.choice(self.hot) if rng.random() < 0.85 else self._random_key()

    def _entry(self, key: tuple[int, int]) -> tuple[int, int]:
        if key not in self.pte:
            rng = self.tb.rng
            self.pte[key] = (rng.randrange(2), rng.randrange(1 << self.p["ADDR_BITS"]))
        return self.pte[key]

    def stimulus(self) -> dict[str, int]:
        if self.script:
            return self._encode(self.script.popleft())
        rng = self.tb.rng
        if rng.random() < 0.002:
            self.hot = self._hot()
        ops: dict = {}
        if next(self.pause):
            ops["lk"] = self._key()
        if self.walks and self.walks[0][0] <= self.tb.cycle:
            ops["fill"] = self.walks.popleft()[1]
        elif rng.random() < RATES["fill_random"]:
            ops["fill"] = self._key()
        if rng.random() < RATES["inv"]:
            key = ops["fill"] if "fill" in ops and rng.random() < 0.3 else self._key()
            ops["inv"] = key
            self.pte.pop(key, None)  # the page moved: a later fill walks a new PTE
        self._burst(ops)
        if "kill" not in ops and rng.random() < RATES["kill"]:
            # the segment of this cycle's fill or lookup, of a hot key, or any id
            near = [ops[k][0] for k in ("fill", "lk") if k in ops]
            pick = rng.random()
            if near and pick < 0.4:
                ops["kill"] = rng.choice(near)
            elif pick < 0.8:
                ops["kill"] = rng.choice(self.hot)[0]
            else:
                ops["kill"] = rng.randrange(self.seg_ids)
        return self._encode(ops)

    def _burst(self, ops: dict) -> None:
        """A burst's kill in ``ops``: the one before the last with a fill of another
        segment, the last (the flush) with a lookup of a live entry and a fill in
        every second burst, no fill in the others; neither with a set invalidation.
        Starts a burst by its rate, or the first two by ``BURST_BY``, ``2 * BURST_BY``."""
        rng, gt = self.tb.rng, self.gt
        if not self.burst and gt.gen_bits <= 8:
            due = self.bursts < 2 and self.tb.cycle >= BURST_BY * (self.bursts + 1)
            if due or rng.random() < RATES["burst"]:
                g = rng.choice(self.hot)[0]
                self.burst = [g, (1 << gt.gen_bits) - gt.gen(g)]
                self.bursts += 1
        if not self.burst:
            return
        g = ops["kill"] = self.burst[0]
        self.burst[1] -= 1
        if self.burst[1] <= 1:
            ops.pop("inv", None)
        if self.burst[1] == 1:  # an entry that is live in the flush's cycle
            seg, pos = self._key()
            ops["fill"] = ((seg + 1) % self.seg_ids if seg == g else seg), pos
        if self.burst[1] == 0:
            self.burst = []  # the flush's cycle
            if self.bursts % 2:
                ops.setdefault("fill", self._key())
            else:  # none: it could evict the entry looked up
                ops.pop("fill", None)
            live = gt.entries()
            if live:
                ops["lk"] = tuple(rng.choice(live)[2:4])

    def _encode(self, ops: dict) -> dict[str, int]:
        out = dict.fromkeys(self.INPUTS, 0)
        if "lk" in ops:
            out["lk_valid"] = 1
            out["lk"] = pack(self.key_l, dict(zip(("seg", "pos"), ops["lk"], strict=True)))
        if "fill" in ops:
            seg, pos = ops["fill"]
            loc, addr = ops.get("entry") or self._entry((seg, pos))
            out["fill_valid"] = 1
            out["fill"] = pack(self.fill_l, {"seg": seg, "pos": pos, "loc": loc, "addr": addr})
        if "inv" in ops:
            out["inv_valid"] = 1
            out["inv"] = pack(self.key_l, dict(zip(("seg", "pos"), ops["inv"], strict=True)))
        if "kill" in ops:
            out["kill_valid"] = 1
            out["kill_seg"] = ops["kill"]
        elif self.tb.rng.random() < 0.5:  # kill_seg without kill_valid: ignored
            out["kill_seg"] = self.tb.rng.randrange(self.seg_ids)
        return out

    # ------------------------------------------------------------------ model
    def reset_outputs(self) -> dict[str, int]:
        self.gt = GoldenTLB(self.p["SETS"], self.p["WAYS"], self.p["GEN_BITS"])
        self.walks.clear()
        self.burst = []
        self.prev_hit_set = None
        self.fill_way_want = None
        return {"rsp_valid": 0, "rsp": 0, "hits": 0, "misses": 0}

    def _key_of(self, raw: int) -> tuple[int, int]:
        k = unpack(self.key_l, raw & ((1 << self.key_l.size) - 1))
        return k["seg"], k["pos"]

    def _dead(self, si: int) -> int:
        """Set ``si``'s ways that are valid but of an old generation (a bit per way)."""
        live = sum(1 << e[1] for e in self.gt.entries() if e[0] == si)
        return self.gt.valid_bits(si) & ~live

    def _fill_cover(self, way: int, valid: int, dead: int) -> None:
        """Coverage of a fill the model wrote to ``way`` of a set whose ``valid`` and
        old-generation (``dead``) ways were those before it."""
        if dead & ((1 << way) - 1) and not valid >> way & 1:
            self.cover["fill_skip_dead"] += 1
        if dead >> way & 1 and valid == (1 << self.p["WAYS"]) - 1:
            self.cover["evict_dead"] += 1

    def step(self, inputs: dict[str, int]) -> dict[str, int]:
        gt, p = self.gt, self.p
        key = self._key_of
        self.fill_way_want = None
        fkey = None
        if inputs["fill_valid"]:
            f = unpack(self.fill_l, inputs["fill"])
            fkey = f["seg"], f["pos"]
            si = gt.index(*fkey)
            valid, dead = gt.valid_bits(si), self._dead(si)
            if any(e[2:4] == fkey for e in gt.entries()):
                self.cover["dup"] += 1
            if valid == (1 << p["WAYS"]) - 1:
                self.cover["evict"] += 1
                if si == self.prev_hit_set:
                    self.cover["forward"] += 1
            self.fill_way_want = gt.fill(*fkey, f["loc"], f["addr"])
            self.fill_ways.append(self.fill_way_want)
            self._fill_cover(self.fill_way_want, valid, dead)
        held = {e[2] for e in gt.entries()}  # segments held after the fill
        if inputs["inv_valid"]:
            ikey = key(inputs["inv"])
            isi = gt.index(*ikey)
            if fkey is not None and isi == gt.index(*fkey):
                self.cover["fill_inv"] += 1
            if any(e[0] == isi and e[2] != ikey[0] for e in gt.entries()):
                self.cover["inv_other"] += 1
            gt.invalidate_set(*ikey)
        kseg = inputs["kill_seg"] if inputs["kill_valid"] else None
        lkey = key(inputs["lk"]) if inputs["lk_valid"] else None
        if kseg is not None:
            self.cover["fill_kill"] += fkey is not None and fkey[0] == kseg
            self.cover["inv_kill"] += bool(inputs["inv_valid"]) and kseg in held
            self.cover["kill_high"] += kseg >= p["SEGS"] and kseg in held
            lk_live = lkey is not None and any(e[2:4] == lkey for e in gt.entries())
            if lkey is not None and lkey[0] == kseg:
                self.cover["lk_kill"] += 1
                self.cover["lk_kill_hit"] += lk_live
            flushes = gt.flushes
            gt.invalidate_segment(kseg)
            if gt.flushes != flushes:
                self.cover["flush"] += 1
                self.cover["fill_flush"] += fkey is not None
                self.cover["lk_flush_hit"] += lk_live
        counts = {"hits": gt.hits, "misses": gt.misses}
        self.prev_hit_set = None
        if lkey is None:
            return {"rsp_valid": 0, "rsp": 0, **counts}
        if lkey == fkey:
            self.cover["same_key"] += 1
        r = gt.lookup(*lkey)
        self.replies.append(r)
        if r is None:
            self.cover["miss"] += 1
            self.walks.append((self.tb.cycle + 1 + self.tb.rng.randint(0, 4), lkey))
            return {"rsp_valid": 1, "rsp": 0, **counts}
        self.cover["hit"] += 1
        self.prev_hit_set = gt.index(*lkey)
        rsp = pack(self.rsp_l, {"hit": 1, "loc": r[0], "addr": r[1]})
        return {"rsp_valid": 1, "rsp": rsp, **counts}

    def sample(self) -> None:
        super().sample()  # checks this cycle's outputs, then steps the model
        if self.fill_way_want is not None and not int(self.dut.rst.value):
            got = int(self.dut.fill_way.value)
            if got != self.fill_way_want:
                self.fail(f"fill_way = {got}, want {self.fill_way_want}")


async def run(dut, idle: str, n_cycles: int, *, reset_at: int | None = None, script=()) -> TLBBench:
    p = params()
    tb = TB(dut)
    bench = TLBBench(tb, p, idle)
    bench.script.extend(script)
    await tb.start()
    if reset_at is not None:
        await tb.cycles(reset_at)
        await tb.reset(2)
    await tb.cycles(n_cycles)
    bench.stim_on = False
    await tb.cycles(3)
    name = ("directed+" if script else "") + idle + ("/reset" if reset_at is not None else "")
    report(
        "kvpool_tlb",
        name,
        checked=bench.checked,
        mismatches=bench.mismatches,
        latency="1 (a lookup per cycle)" if idle == "none" else "",
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
        """Lookups (every cycle, or by a random pattern), walks' fills, random fills,
        invalidations and kills; every same-cycle case is reached."""
        bench = await run(dut, idle, sized(CYCLES, 40_000))
        missing = [k for k, v in bench.cover.items() if not v]
        if bench.p["WAYS"] == 1:  # one way: no PLRU, a victim is always way 0
            missing = [k for k in missing if k not in ("forward", "fill_skip_dead")]
        if bench.p["SEGS"] == bench.seg_ids:  # every id < SEGS
            missing = [k for k in missing if k != "kill_high"]
        assert not missing, f"seed {bench.tb.seed}: not reached: {missing}"

    @cocotb.test()
    async def same_cycle_order(dut) -> None:
        """The order fill, set invalidation, kill, lookup, and the generations, by
        hand (segments A = 1 and B = 0, keys ``a*`` and ``b*`` of set 0): a fill
        reaches a lookup of its own cycle; a set invalidation clears every way of
        the set, of any segment, the fill of its cycle too; a fill of the segment
        killed in its cycle is dead, and stays valid: the next fill passes over
        it; a segment's ``2**GEN_BITS``-th kill brings an entry's generation back
        and flushes, so the entry stays dead and other segments' entries go; a
        fill chooses its victim with the PLRU the previous cycle's lookup left."""
        p = params()
        ways, n_gen = p["WAYS"], 1 << p["GEN_BITS"]
        gt = GoldenTLB(p["SETS"], ways)
        ids = 1 << max(1, (p["SEGS"] - 1).bit_length())
        positions = range(1 << p["POS_BITS"])
        set0 = {g: [(g, q) for q in positions if gt.index(g, q) == 0] for g in range(ids)}
        a, b = set0[1], set0[0]
        keys = [k for g in [1, *(g for g in range(ids) if g != 1)] for k in set0[g]]
        script: list[dict] = []
        want: list[bool] = []  # per lookup of the script: whether it hits
        fills: list[int] = []  # the script's fills, numbered

        def op(hit: bool | None = None, **ops) -> int:
            script.append({**ops, "entry": (1, 1)})
            if hit is not None:
                want.append(hit)
            if "fill" in ops:
                fills.append(len(script))
            return len(fills) - 1

        op(True, fill=a[0], lk=a[0])  # a fill reaches the lookup of its cycle
        op(False, fill=a[1], inv=b[0], lk=a[1])  # B's key clears the set, the fill too
        op(False, lk=a[0])  # and A's older entry
        op(fill=b[1])
        op(False, inv=a[2], lk=b[1])  # A's key clears B's entry
        op(False, fill=a[0], kill=1, lk=a[0])  # the fill stored the generation before
        op(False, lk=a[0])  # dead, valid: way 0 occupied
        skip = op(fill=b[0])  # way 1 (with one way: the dead entry evicted)
        op(True, lk=b[0])
        op(fill=a[1])
        op(False, kill=1, lk=a[1])  # killed in the lookup's cycle
        kills = 2
        # the wrap: A's generation back to 0 (a flush if not there), a2 and b1
        # written, A killed 2**GEN_BITS times: a2's generation again, but flushed
        op(inv=a[0])
        for _ in range(-kills % n_gen):
            op(kill=1)
        op(fill=a[2])
        if ways > 1:
            op(fill=b[1])
        op(True, lk=a[2])
        if ways > 1:
            op(True, lk=b[1])
        op(False, kill=1, lk=a[2])
        for _ in range(n_gen - 2):
            op(kill=1)
        if ways > 1:
            op(True, lk=b[1])  # no flush yet
        op(False, kill=1, lk=a[2])  # the wrap: a2's generation, flushed in this cycle
        if ways > 1:
            op(False, lk=b[1])  # every segment's entries flushed
        op(False, lk=a[2])
        # the PLRU: the set full, a hit on way 0, then a fill: not way 0
        op(inv=a[0])
        for k in keys[:ways]:
            op(fill=k)
        op(True, lk=keys[0])
        evict = op(fill=keys[ways])
        op(ways > 1, lk=keys[0])
        op(ways > 1, lk=keys[0])
        bench = await run(dut, "random", sized(CYCLES // 4, 10_000), script=script)
        got = [r is not None for r in bench.replies[: len(want)]]
        assert got == want, f"seed {bench.tb.seed}: hits {got}, want {want}"
        if ways > 1:
            assert bench.fill_ways[skip] == 1, "the fill passes over the dead, valid way 0"
            assert bench.fill_ways[evict] != 0, "way 0 was touched, not evicted"

    @cocotb.test()
    async def reset_mid_run(dut) -> None:
        """A reset with the TLB full: every entry invalid, counters and PLRU 0."""
        await run(dut, "none", sized(CYCLES // 4, 10_000), reset_at=sized(CYCLES // 4, 10_000))


# ----------------------------------------------------------------------------- pytest
import pytest  # noqa: E402

#: parameter sets: 4 x 4 with 6 segments (ids 6, 7 never killed), 8 ways, the 1 x 1
#: degenerate TLB, each with 8-bit generations; 1- and 2-bit generations, which
#: wrap at every second / fourth kill of a segment (make test); 4 x 4 and 2 x 8 ways,
#: wider fields and 1,024 segments (make sim-full, decision 0054)
PARAM_SETS = [
    pytest.param({"SETS": 4, "WAYS": 4, "SEGS": 6, "POS_BITS": 5, "ADDR_BITS": 4}, marks=FULL_ONLY),
    pytest.param({"SETS": 2, "WAYS": 8, "SEGS": 8, "POS_BITS": 4, "ADDR_BITS": 3}, marks=FULL_ONLY),
    {"SETS": 1, "WAYS": 1, "SEGS": 2, "POS_BITS": 3, "ADDR_BITS": 2},
    {"SETS": 4, "WAYS": 2, "SEGS": 3, "POS_BITS": 5, "ADDR_BITS": 4, "GEN_BITS": 1},
    {"SETS": 2, "WAYS": 4, "SEGS": 4, "POS_BITS": 4, "ADDR_BITS": 3, "GEN_BITS": 2},
    pytest.param(
        {"SETS": 16, "WAYS": 2, "SEGS": 1024, "POS_BITS": 17, "ADDR_BITS": 21}, marks=FULL_ONLY
    ),
]


@pytest.mark.parametrize("hdl", PARAM_SETS, ids=lambda d: "-".join(f"{v}" for v in d.values()))
def test_kvpool_tlb(hdl: dict) -> None:
    run_leaf("kvpool_tlb", hdl, "tb.kvpool.test_tlb", public=PUBLIC)
