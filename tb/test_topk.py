"""Testbench: top-K unit (hw/topk.py) against golden.topk (SPEC §3.6).

Driver: each distribution's quantised probabilities on ``i``, ``LANES`` per
beat, the last beat zero-padded, ``k`` on the first beat and junk (any 5-bit
value, bad ones included) on the others (idle patterns). Monitor: results on
``o`` (backpressure patterns) and ``error`` pulses. Model:
``golden.topk.topk(q, k, prob_bits=PROB_BITS)``; a distribution is invalid
when its first beat's ``k`` is 0 or above 16, or when it is longer than
``2**TOKEN_BITS`` tokens (a beat past ``ceil(2**TOKEN_BITS / LANES)``, or a
non-zero ``q`` at a token ``>= 2**TOKEN_BITS``). Scoreboard: the result of
every valid distribution, in order, bit for bit (``n``, tokens and ``q`` of
every rank, zeros past ``n``); for every invalid one exactly one one-cycle
``error`` pulse, the cycle after its offending beat is taken, and no result;
no other pulse. At full speed: every beat taken back to back (``i.ready``
never low) and every result taken exactly 2 cycles after its last beat.
"""

import random

from golden.topk import K_MAX, topk
from hw.topk import beat_layout, result_layout
from tb.common import TB, Done, ErrorMon, StreamSink, StreamSource, params, report, run_block

DISTS = 2000  # random distributions in the full-speed run, per parameter set
DISTS_PATTERNS = 150  # in each idle/backpressure run
DISTS_ERRORS = 250  # in each error run (30 % invalid)
RESULT_LATENCY = 2  # cycles from the last beat taken to the result taken (no stalls)
ERROR_LATENCY = 1  # cycles from the offending beat taken to the error pulse
#: SPEC §3.6's check vectors: (q, K, tokens)
CHECK_VECTORS = [
    ([3, 0, 7, 7, 1], 3, [2, 3, 0]),
    ([3, 0, 7, 7, 1], 5, [2, 3, 0, 4]),
    ([0, 0], 1, []),
    ([0, 0], 16, []),
]
#: cocotb's regression seed, read at import (collection) time; ``SIM_SEED`` repeats it
REGRESSION_SEED: int | None = None


class Cfg:
    """The parameter set of this run."""

    def __init__(self) -> None:
        p = params()
        self.L, self.TB, self.PB = p["LANES"], p["TOKEN_BITS"], p["PROB_BITS"]
        self.vocab = 1 << self.TB
        self.max_beats = -(-self.vocab // self.L)
        self.qmax = (1 << self.PB) - 1


# ----------------------------------------------------------------------------- stimulus
def pick_k(rng: random.Random, q: list[int]) -> int:
    """1, 16, random, or around the support (``S - 1 .. S + 1``)."""
    r = rng.random()
    if r < 0.15:
        return 1
    if r < 0.3:
        return K_MAX
    if r < 0.6:
        s = sum(1 for v in q if v)
        return min(K_MAX, max(1, s + rng.randint(-1, 1)))
    return rng.randint(1, K_MAX)


def random_q(rng: random.Random, cfg: Cfg, v_max: int) -> list[int]:
    """A valid distribution: random, ties (few distinct values), sparse, all zero,
    all equal, tiny (V = 1, 2, < LANES), skewed, or a length near a multiple of LANES."""
    v_max = max(1, min(v_max, cfg.vocab))
    kind = rng.choice(
        ["random"] * 3 + ["ties"] * 3 + ["sparse"] * 2 + ["zero", "equal", "tiny", "skewed"]
    )
    if kind == "tiny":
        n = min(cfg.vocab, rng.choice([1, 2, max(1, cfg.L - 1), rng.randint(1, cfg.L)]))
    elif rng.random() < 0.3:  # lengths around multiples of LANES
        n = cfg.L * rng.randint(1, max(1, v_max // cfg.L)) + rng.randint(-1, 1)
        n = max(1, min(v_max, n))
    else:
        n = rng.randint(1, v_max)
    if kind == "zero":
        return [0] * n
    if kind == "equal":
        v = rng.choice([1, cfg.qmax, rng.randint(1, cfg.qmax)])
        return [v] * n
    if kind == "ties":
        vals = [rng.randint(1, cfg.qmax) for _ in range(rng.randint(1, 4))] + [0]
        return [rng.choice(vals) for _ in range(n)]
    if kind == "sparse":
        return [rng.randint(1, cfg.qmax) if rng.random() < 0.1 else 0 for _ in range(n)]
    if kind == "skewed":  # wide dynamic range
        return [rng.getrandbits(rng.randint(0, cfg.PB)) for _ in range(n)]
    zeros = rng.random() * 0.5
    return [0 if rng.random() < zeros else rng.randint(0, cfg.qmax) for _ in range(n)]


def invalid_dist(rng: random.Random, cfg: Cfg, v_max: int) -> tuple[list[int], int]:
    """A bad ``k`` (0 or 17 .. 31) on a valid ``q``, or (when cheap) one too long."""
    if cfg.vocab <= 256 and rng.random() < 0.5:
        n = rng.randint(cfg.vocab + 1, cfg.max_beats * cfg.L + 2 * cfg.L)
        q = [rng.randint(0, cfg.qmax) for _ in range(n)]
        q[rng.randrange(cfg.vocab, n)] = rng.randint(1, cfg.qmax)  # non-zero past the end
        return q, pick_k(rng, q)
    return random_q(rng, cfg, v_max), rng.choice([0, K_MAX + 1, rng.randint(K_MAX + 1, 31)])


def make_dists(rng: random.Random, cfg: Cfg, n: int, v_max: int, bad_rate: float) -> list:
    out = []
    for _ in range(n):
        if rng.random() < bad_rate:
            out.append(invalid_dist(rng, cfg, v_max))
            continue
        r = rng.random()
        vm = min(cfg.vocab, 1024) if r < 0.05 else v_max if r < 0.3 else min(v_max, 3 * cfg.L + 2)
        q = random_q(rng, cfg, vm)
        out.append((q, pick_k(rng, q)))
    return out


def corner_dists(cfg: Cfg) -> list[tuple[list[int], int]]:
    """SPEC §3.6's check vectors (those that fit the vocabulary), then fixed corners."""
    for q, k, tokens in CHECK_VECTORS:  # the golden model agrees with the spec
        assert [e.token for e in topk(q, k, prob_bits=cfg.PB)] == tokens, (q, k)
    out = [(q, k) for q, k, _ in CHECK_VECTORS if len(q) <= cfg.vocab]
    n = min(cfg.vocab, 2 * cfg.L + 1)
    top = cfg.qmax
    for k in (1, 2, K_MAX):
        out += [
            ([1], k),
            ([top], k),
            ([0], k),
            ([top] * n, k),  # all equal: the lowest tokens
            ([0] * (n - 1) + [top], k),
            (list(range(n)), k),  # increasing: every new entry displaces a held one
            (list(range(n, 0, -1)), k),
            ([top if t % 3 == 0 else 1 for t in range(min(cfg.vocab, 40))], k),
        ]
    return out


# ----------------------------------------------------------------------------- model
def offending_beat(q: list[int], k: int, cfg: Cfg) -> int | None:
    """The beat that makes a distribution invalid (``None`` if it is valid)."""
    if not 1 <= k <= K_MAX:
        return 0
    for b in range(-(-len(q) // cfg.L)):
        if b >= cfg.max_beats or any(q[max(b * cfg.L, cfg.vocab) : (b + 1) * cfg.L]):
            return b
    return None


def expected(q: list[int], k: int, cfg: Cfg) -> dict:
    """The result beat ``golden.topk.topk`` gives, zero-padded to ``K_MAX`` ranks."""
    ent = topk(q, k, prob_bits=cfg.PB)
    pad = [0] * (K_MAX - len(ent))
    return {"n": len(ent), "token": [e.token for e in ent] + pad, "q": [e.q for e in ent] + pad}


def beats(cfg: Cfg, rng: random.Random, d: int, q: list[int], k: int) -> list[dict]:
    """The beats of distribution ``d``: ``k`` on the first, junk ``k`` on the others."""
    L = cfg.L
    n = -(-len(q) // L)
    out = []
    for b in range(n):
        chunk = q[b * L : (b + 1) * L]
        out.append(
            {
                "q": chunk + [0] * (L - len(chunk)),
                "k": k if b == 0 else rng.randrange(32),
                "last": int(b == n - 1),
                "_dist": d,
                "_beat": b,
            }
        )
    return out


class Scoreboard:
    """Expected outcome of every distribution; checks results, error pulses, cycles."""

    def __init__(self, tb: TB, cfg: Cfg) -> None:
        self.tb, self.cfg = tb, cfg
        self.dists: list[tuple[list[int], int, dict | None, int | None]] = []
        self.errors: list[int] = []
        self.checked = self.mismatches = self.rejected = 0
        self.latency: list[int] = []
        self.gaps: list[int] = []

    def add(self, q: list[int], k: int) -> None:
        bad = offending_beat(q, k, self.cfg)
        self.dists.append((q, k, expected(q, k, self.cfg) if bad is None else None, bad))

    def fail(self, msg: str) -> None:
        self.mismatches += 1
        if self.mismatches <= 5:
            self.tb.log.error("seed %d: %s", self.tb.seed, msg)

    def check(self, sent: list, received: list, full_speed: bool) -> None:
        taken = {(b["_dist"], b["_beat"]): c for c, b in sent}
        results = iter(received)
        want_err = []
        for d, (q, k, want, bad) in enumerate(self.dists):
            if bad is not None:
                want_err.append((taken[(d, bad)], d))
                continue
            got = next(results, None)
            short = f"V={len(q)}, K={k}, q={q[:24]}{'...' if len(q) > 24 else ''}"
            if got is None:
                self.fail(f"dist {d}: no result ({short}), want {want}")
                continue
            cycle, beat = got
            if beat != want:
                self.fail(f"dist {d}: got {beat}, want {want} ({short})")
            else:
                self.checked += 1
            if full_speed:
                self.latency.append(cycle - taken[(d, -(-len(q) // self.cfg.L) - 1)])
        extra = list(results)
        if extra:
            self.fail(f"{len(extra)} unexpected results, first {extra[0]}")
        if len(self.errors) != len(want_err):
            self.fail(f"{len(self.errors)} error pulses, want {len(want_err)}")
        for pulse, (beat_cycle, d) in zip(self.errors, want_err, strict=False):
            if pulse - beat_cycle != ERROR_LATENCY:
                self.fail(f"dist {d}: error {pulse - beat_cycle} cycles after its bad beat")
            else:
                self.rejected += 1
                self.checked += 1
        if full_speed:
            stamps = [c for c, _ in sent]
            self.gaps = [b - a for a, b in zip(stamps, stamps[1:], strict=False)]
            if self.gaps and max(self.gaps) != 1:
                self.fail(f"beats not taken back to back: a gap of {max(self.gaps)} cycles")
            if self.latency and set(self.latency) != {RESULT_LATENCY}:
                lat = sorted(set(self.latency))
                self.fail(f"result latency {lat} cycles after the last beat, want {RESULT_LATENCY}")


# ----------------------------------------------------------------------------- agents
async def run(dut, test: str, idle: str, backpressure: str, make) -> None:
    """Send the distributions ``make(rng, cfg)`` returns (``(q, k)`` pairs), check, report."""
    from cocotb.triggers import with_timeout

    cfg = Cfg()
    tb = TB(dut)
    dists = make(random.Random(tb.seed + 1), cfg)
    src = StreamSource(tb, "i", beat_layout(cfg.L, cfg.PB), idle)
    sink = StreamSink(tb, "o", result_layout(cfg.TB, cfg.PB), backpressure)
    sb = Scoreboard(tb, cfg)
    ErrorMon(tb, sb.errors)
    await tb.start()
    junk = random.Random(tb.seed + 2)
    n_beats = 0
    for d, (q, k) in enumerate(dists):
        sb.add(q, k)
        for b in beats(cfg, junk, d, q, k):
            src.send(b)
            n_beats += 1
    done = Done(tb, src)
    timeout = 8 * n_beats + 1000  # cycles
    await with_timeout(done.event.wait(), 2 * timeout, "ns")  # 2 ns clock
    await tb.cycles(30)  # anything extra would show up here
    full_speed = idle == "none" and backpressure == "none"
    sb.check(src.sent, sink.received, full_speed)
    latency = ""
    if full_speed and sb.latency:
        latency = f"result {max(sb.latency)} (<= {RESULT_LATENCY}), beats back to back"
        tb.log.info("latency: %s (%d results, %d beats)", latency, len(sb.latency), n_beats)
    report(
        "topk",
        test,
        checked=sb.checked,
        mismatches=sb.mismatches,
        rejected=sb.rejected,
        latency=latency,
    )
    rerun = f"rerun with SIM_SEED={REGRESSION_SEED}"
    tb.log.info("%s (per-test seed %d): %d distributions", rerun, tb.seed, len(dists))
    assert sb.mismatches == 0, f"seed {tb.seed} ({rerun}): {sb.mismatches} mismatches"
    assert sb.checked > 0, f"seed {tb.seed}: nothing checked"


try:
    import cocotb
except ImportError:  # pragma: no cover
    cocotb = None

if cocotb is not None:
    REGRESSION_SEED = getattr(cocotb, "RANDOM_SEED", None)  # unset under plain pytest

    @cocotb.test()
    async def full_speed(dut) -> None:
        """Check vectors, corners, then 2,000 random distributions back to back: results,
        throughput (a beat every cycle) and the latency of every result."""

        def make(rng: random.Random, cfg: Cfg) -> list:
            return corner_dists(cfg) + make_dists(rng, cfg, DISTS, 4 * cfg.L + 24, 0.0)

        await run(dut, "full_speed", "none", "none", make)

    @cocotb.test()
    @cocotb.parametrize(idle=["none", "random", "sparse"], backpressure=["random", "half"])
    async def patterns(dut, idle: str, backpressure: str) -> None:
        def make(rng: random.Random, cfg: Cfg) -> list:
            return make_dists(rng, cfg, DISTS_PATTERNS, 3 * cfg.L + 8, 0.0)

        await run(dut, f"{idle}/{backpressure}", idle, backpressure, make)

    @cocotb.test()
    @cocotb.parametrize(idle=["none", "random"], backpressure=["none", "random"])
    async def errors(dut, idle: str, backpressure: str) -> None:
        """Bad ``k`` and too-long distributions mixed with valid ones: one pulse, no
        result, the rest dropped, the next distribution fine."""

        def make(rng: random.Random, cfg: Cfg) -> list:
            return make_dists(rng, cfg, DISTS_ERRORS, 3 * cfg.L + 8, 0.3)

        await run(dut, f"{idle}/{backpressure}/errors", idle, backpressure, make)

    @cocotb.test()
    async def vocab_limit(dut) -> None:
        """The longest distribution (all max), one token too many (non-zero), the longest
        with its padding, then every bad ``k``; each followed by a valid one."""

        def make(rng: random.Random, cfg: Cfg) -> list:
            over = [1] * (cfg.vocab + 1)
            out = [([cfg.qmax] * cfg.vocab, K_MAX), ([0, 5, 5], 2), (over, 3), ([7], 1)]
            out += [([1] * (cfg.max_beats * cfg.L + 1), 4), ([3, 0, 7, 7, 1], 3)]
            for k in (0, K_MAX + 1, 31):
                out += [([1, 2, 3], k), ([3, 0, 7, 7, 1], 5)]
            return out

        await run(dut, "vocab_limit", "none", "none", make)


# ----------------------------------------------------------------------------- pytest
import pytest  # noqa: E402

from tb.common import FULL_ONLY  # noqa: E402


@pytest.mark.parametrize(
    "hdl_params",
    [
        pytest.param({"LANES": 1, "TOKEN_BITS": 6, "PROB_BITS": 8}, id="L1_T6_P8"),
        pytest.param({"LANES": 4, "TOKEN_BITS": 7}, id="L4_T7"),
        pytest.param({"LANES": 3, "TOKEN_BITS": 5, "PROB_BITS": 8}, id="L3_T5_P8", marks=FULL_ONLY),
        pytest.param(
            {"LANES": 16, "TOKEN_BITS": 7, "PROB_BITS": 8}, id="L16_T7_P8", marks=FULL_ONLY
        ),
        # a vocabulary smaller than a beat (the tail rule on the first beat), 32-bit q
        pytest.param(
            {"LANES": 5, "TOKEN_BITS": 2, "PROB_BITS": 32}, id="L5_T2_P32", marks=FULL_ONLY
        ),
        # the defaults (TOKEN_BITS = 17: the too-long errors are not sent)
        pytest.param({}, id="defaults", marks=FULL_ONLY),
    ],
)
def test_topk(hdl_params: dict) -> None:
    run_block("topk", hdl_params, "tb.test_topk")
