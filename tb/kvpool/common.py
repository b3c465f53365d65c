"""What the KV pool leaves' testbenches share: their names, Verilog, builds and depth.

The leaves of :mod:`hw.kvpool` are not blocks of :data:`flows.verilog.BLOCKS`
(one block per ``hw.<block>`` module, with its own page and status row: the
scaled pool will be that block once it is composed), so this module does
for them what :func:`tb.common.run_block` and :func:`flows.depth.logic_depth`
do for a block: :data:`LEAVES` names each leaf's Verilog module,
:func:`leaf_verilog` writes it, :func:`run_leaf` builds and runs a cocotb
module on it, :func:`leaf_depth` measures its logic depth.

Verilog: Amaranth 0.5 writes every memory's initial contents, zeros included,
as one ``initial`` assignment per word (at ``PAGES = 2**20`` the allocator's
Verilog takes ~4 minutes and is 30 MB). The leaves' memories need no
initial contents (reset does not read them), so :func:`leaf_verilog` leaves
an all-zero initial value out (:func:`no_zero_meminit`); a simulator's
memory then starts at its own default (Verilator: 0).
"""

import contextlib
import importlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

from amaranth.back import rtlil, verilog

from flows import toolchain
from flows.depth import depth_script, longest_path, yosys
from tb.common import REPO, RUNS

__all__ = [
    "LEAVES",
    "leaf_class",
    "leaf_params",
    "no_zero_meminit",
    "leaf_verilog",
    "run_leaf",
    "leaf_depth",
]

#: leaf (= Verilog module name) -> "module:Class"
LEAVES: dict[str, str] = {
    "kvpool_block_tag": "hw.kvpool.crc64:BlockTag",
    "kvpool_page_allocator": "hw.kvpool.allocator:PageAllocator",
    "kvpool_tlb": "hw.kvpool.tlb:TLB",
    "kvpool_block_table": "hw.kvpool.blocktable:BlockTable",
    "kvpool_tree_slots": "hw.kvpool.treeslots:TreeSlots",
    "kvpool_page_state": "hw.kvpool.pagestate:PageState",
    "kvpool": "hw.kvpool.pool:ScaledPool",
    "kvpool_tag_table": "hw.kvpool.tagtable:TagTable",
}
OUT = REPO / "build" / "verilog" / "tb"


def leaf_class(name: str) -> type:
    """The component class of leaf ``name``."""
    if name not in LEAVES:
        raise ValueError(f"leaf = {name!r}: unknown; leaves are {', '.join(LEAVES)}")
    mod, cls = LEAVES[name].split(":")
    return getattr(importlib.import_module(mod), cls)


def leaf_params(name: str, given: dict | None = None) -> dict[str, int]:
    """Every parameter of leaf ``name``: the declared defaults, then ``given``."""
    return {k: p.default for k, p in leaf_class(name).PARAMS.items()} | dict(given or {})


@contextlib.contextmanager
def no_zero_meminit() -> Iterator[None]:
    """Within the block, Amaranth's RTLIL back end writes no initial contents for a
    memory whose initial contents are all zero (the Verilog then declares it
    without an ``initial`` block)."""
    orig = rtlil.ModuleEmitter.emit_memory

    def emit_memory(self, cell_idx, cell) -> None:
        if any(cell.init):
            orig(self, cell_idx, cell)

    rtlil.ModuleEmitter.emit_memory = emit_memory
    try:
        yield
    finally:
        rtlil.ModuleEmitter.emit_memory = orig


def leaf_verilog(name: str, params: dict | None = None, out: Path = OUT) -> Path:
    """Write ``<out>/<name><suffix>.v`` (only if its text changed); return the path."""
    params = dict(params or {})
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}{''.join(f'__{k}_{v}' for k, v in sorted(params.items()))}.v"
    with no_zero_meminit():
        text = verilog.convert(leaf_class(name)(**params), name=name, emit_src=False)
    if not path.exists() or path.read_text() != text:
        tmp = path.with_suffix(f".v.{os.getpid()}.tmp")
        tmp.write_text(text)
        tmp.replace(path)
    return path


def run_leaf(
    name: str,
    hdl_params: dict,
    test_module: str,
    *,
    testcase: str | None = None,
    extra_env: dict | None = None,
    public: tuple[str, ...] | None = (),
) -> None:
    """Build leaf ``name`` with ``hdl_params`` (once per set) and run the cocotb tests
    of ``test_module`` on it (:func:`tb.common.run_block`'s steps: ``TB_PARAMS``
    holds every parameter, ``SIM_SEED`` and ``WAVES`` are honoured)."""
    src = leaf_verilog(name, hdl_params)
    waves = os.environ.get("WAVES", "") == "1"
    tag = src.stem
    bdir = toolchain.build(tag, [src], name, waves=waves, public=public)
    seed = os.environ.get("SIM_SEED")
    env = {"TB_PARAMS": json.dumps(leaf_params(name, hdl_params)), **(extra_env or {})}
    toolchain.run(
        bdir,
        name,
        test_module,
        test_dir=RUNS / tag / (testcase or "all"),
        testcase=testcase,
        extra_env=env,
        seed=int(seed) if seed else None,
        waves=waves,
    )


def leaf_depth(name: str, params: dict | None = None, *, macro: bool = False) -> tuple[int, str]:
    """``(levels, summary)``: the longest register-to-register path of leaf ``name``
    (:func:`flows.depth.longest_path` on Yosys' netlist). ``macro=False``: the
    script of ``python -m flows.depth`` (memories mapped to flip-flops and
    multiplexers); ``macro=True``: memories kept as cells (an SRAM macro whose
    ports end and start paths)."""
    src = leaf_verilog(name, params, out=OUT.parent / "depth")
    script = depth_script(name, macros=macro)
    out = yosys(script, {"design.v": src.read_text()}, ["depth.json"])
    p = longest_path(json.loads(out["depth.json"]), name)
    return p.levels, f"{p.levels} levels: {p.start} -> {p.end}"


# ----------------------------------------------------------------------------- lockstep
class Lockstep:
    """An agent of :class:`tb.common.TB` that drives a leaf's inputs every cycle and
    checks its outputs cycle by cycle against a golden model stepped on the same
    inputs.

    Each cycle: :meth:`drive` writes :meth:`stimulus`'s input values; in
    ``ReadOnly``, :meth:`sample` compares the outputs with the values the
    previous cycle predicted (:meth:`read` against ``expect``), then predicts
    the next cycle's: :meth:`reset_outputs` if ``rst`` is high at this clock
    edge, else :meth:`step` (the model performs this cycle's inputs). So every
    output is checked in exactly the cycle the contract puts it in.
    Subclasses define :data:`INPUTS` and the methods; a subclass sets
    ``expect = self.reset_outputs()`` once its model exists (the outputs of
    the first cycle after the initial reset); ``log_limit`` mismatches are
    logged. ``stim_on = False`` drives every input 0.
    """

    #: the leaf's input ports (every one driven every cycle)
    INPUTS: tuple[str, ...] = ()
    log_limit = 5

    def __init__(self, tb) -> None:
        self.tb = tb
        self.dut = tb.dut
        self.inputs: dict[str, int] = {}
        self.stepped: dict[str, int] = {}  # the inputs the expected outputs follow from
        self.expect: dict[str, int] | None = None
        self.checked = 0
        self.mismatches = 0
        self.stim_on = True
        tb.add(self)

    # subclasses -------------------------------------------------------------
    def stimulus(self) -> dict[str, int]:
        """This cycle's input values, by port name (every input every cycle)."""
        raise NotImplementedError

    def step(self, inputs: dict[str, int]) -> dict[str, int]:
        """The model performs ``inputs``; returns the outputs of the next cycle."""
        raise NotImplementedError

    def reset_outputs(self) -> dict[str, int]:
        """The model is reset; returns the outputs of the cycle after a reset."""
        raise NotImplementedError

    def read(self) -> dict[str, int]:
        """This cycle's outputs (the keys ``expect`` holds)."""
        return {k: int(getattr(self.dut, k).value) for k in (self.expect or {})}

    # engine -----------------------------------------------------------------
    def idle_inputs(self) -> dict[str, int]:
        """Every input 0 (what :meth:`drive` writes while ``stim_on`` is off)."""
        return dict.fromkeys(self.INPUTS, 0)

    def drive(self) -> None:
        vals = self.stimulus() if self.stim_on else self.idle_inputs()
        for k, v in vals.items():
            if self.inputs.get(k) != v:
                getattr(self.dut, k).value = v
        self.inputs = vals

    def fail(self, msg: str) -> None:
        self.mismatches += 1
        if self.mismatches <= self.log_limit:
            self.tb.log.error("seed %d, cycle %d: %s", self.tb.seed, self.tb.cycle, msg)

    def sample(self) -> None:
        if self.expect is not None:
            got = self.read()
            self.checked += 1
            for k, want in self.expect.items():
                if got[k] != want:
                    self.fail(f"{k} = {got[k]:#x}, want {want:#x} (after inputs {self.stepped})")
        if int(self.dut.rst.value):
            self.expect = self.reset_outputs()
            self.stepped = {"rst": 1}
        else:
            self.expect = self.step(self.inputs)
            self.stepped = self.inputs
