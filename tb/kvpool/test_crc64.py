"""Testbench: the dedup tag step (hw/kvpool/crc64.py) against golden.kvpool.crc (SPEC §4.6).

Driver: one block (``prev``, 16 tokens) on ``i`` in every cycle the idle
pattern allows: random tokens, corner tokens (0, all ones, one bit), chains
that feed each golden tag back as the next ``prev`` (a sequence's running
tag), and random ``prev``. Model: ``golden.kvpool.crc.block_tag``.
Scoreboard (:class:`tb.kvpool.common.Lockstep`): every cycle, ``o_valid``
and ``tag`` against the model one cycle after the inputs (latency 1, one
block per cycle; ``tag`` held while ``o_valid`` is low), and after a reset
in the middle of a run, the reset values.
"""

import random

from golden.kvpool.crc import block_tag
from hw.kvpool.crc64 import BLOCK, block_layout
from tb.common import FULL_ONLY, pack, params, pattern, report, sized
from tb.kvpool.common import Lockstep, run_leaf

BLOCKS = 3000  # blocks per run (make test); make sim-full: 20,000


class TagBench(Lockstep):
    """Blocks in by the idle pattern; the golden tag expected the next cycle."""

    INPUTS = ("i_valid", "i")

    def __init__(self, tb, token_bits: int, idle: str) -> None:
        super().__init__(tb)
        self.tbits = token_bits
        self.layout = block_layout(token_bits)
        self.pause = pattern(idle, tb.rng)
        self.tag = 0  # the model's output register
        self.chain = 0  # the running tag of the current chain
        self.sent = 0
        self.expect = self.reset_outputs()

    def _tokens(self, rng: random.Random) -> list[int]:
        top = (1 << self.tbits) - 1
        kind = rng.choice(["random", "random", "random", "zero", "ones", "bit", "mixed"])
        if kind == "zero":
            return [0] * BLOCK
        if kind == "ones":
            return [top] * BLOCK
        if kind == "bit":
            out = [0] * BLOCK
            out[rng.randrange(BLOCK)] = 1 << rng.randrange(self.tbits)
            return out
        if kind == "mixed":
            return [rng.choice([0, top, rng.randint(0, top)]) for _ in range(BLOCK)]
        return [rng.randint(0, top) for _ in range(BLOCK)]

    def stimulus(self) -> dict[str, int]:
        rng = self.tb.rng
        if not next(self.pause):
            return {"i_valid": 0, "i": self.inputs.get("i", 0)}
        r = rng.random()
        prev = self.chain if r < 0.5 else (0 if r < 0.6 else rng.getrandbits(64))
        toks = self._tokens(rng)
        self.sent += 1
        return {"i_valid": 1, "i": pack(self.layout, {"prev": prev, "tokens": toks})}

    def step(self, inputs: dict[str, int]) -> dict[str, int]:
        if inputs["i_valid"]:
            raw = inputs["i"]
            prev = raw & ((1 << 64) - 1)
            m = (1 << self.tbits) - 1
            toks = [(raw >> (64 + k * self.tbits)) & m for k in range(BLOCK)]
            self.tag = block_tag(prev, toks)
            self.chain = self.tag if self.tb.rng.random() < 0.9 else 0  # a new sequence
        return {"o_valid": inputs["i_valid"], "tag": self.tag}

    def reset_outputs(self) -> dict[str, int]:
        self.tag = self.chain = 0
        return {"o_valid": 0, "tag": 0}


async def run(dut, idle: str, n_blocks: int, *, reset_at: int | None = None) -> None:
    from tb.common import TB

    p = params()
    tb = TB(dut)
    bench = TagBench(tb, p["TOKEN_BITS"], idle)
    await tb.start()
    if reset_at is not None:
        await tb.wait_for(lambda: bench.sent >= reset_at, what="blocks before the reset")
        await tb.reset(3)
    await tb.wait_for(lambda: bench.sent >= n_blocks, what=f"{n_blocks} blocks")
    bench.stim_on = False
    await tb.cycles(3)
    report(
        "kvpool_block_tag",
        f"{idle}" + ("/reset" if reset_at is not None else ""),
        checked=bench.checked,
        mismatches=bench.mismatches,
        latency="1 (one block per cycle)" if idle == "none" else "",
    )
    assert bench.checked > n_blocks, "too few cycles checked"
    assert bench.mismatches == 0, f"seed {tb.seed}: {bench.mismatches} mismatches"


try:
    import cocotb
except ImportError:  # pragma: no cover
    cocotb = None

if cocotb is not None:

    @cocotb.test()
    async def full_speed(dut) -> None:
        """A block every cycle: latency 1, throughput 1."""
        await run(dut, "none", sized(BLOCKS, 20_000))

    @cocotb.test()
    @cocotb.parametrize(idle=["half", "sparse", "random"])
    async def idle_patterns(dut, idle: str) -> None:
        """Gaps between blocks: ``tag`` holds, ``o_valid`` follows ``i_valid``."""
        await run(dut, idle, sized(BLOCKS // 3, 5_000))

    @cocotb.test()
    async def reset_mid_run(dut) -> None:
        """A reset between blocks: outputs 0 the cycle after, then blocks as before."""
        await run(dut, "random", sized(BLOCKS // 3, 5_000), reset_at=sized(BLOCKS // 6, 2_500))


# ----------------------------------------------------------------------------- pytest
import pytest  # noqa: E402


@pytest.mark.parametrize(
    "token_bits", [17, pytest.param(1, marks=FULL_ONLY), pytest.param(32, marks=FULL_ONLY)]
)
def test_kvpool_block_tag(token_bits: int) -> None:
    run_leaf("kvpool_block_tag", {"TOKEN_BITS": token_bits}, "tb.kvpool.test_crc64")
