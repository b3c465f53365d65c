"""make synth-kvpool (flows.kvpool_synth, flows.kvpool_synth_yosys): the memory rule, the SRAM
model, the RTLIL it writes, one leaf of the scaled pool through the real flow at its small
size, leaves through the executor (in this process and on 2 workers, cached by this process;
a task that raises), the tool runner, the report's schema and renderer."""

import json

import pytest

from flows import kvpool_rtlil
from flows import kvpool_synth as ks
from flows import kvpool_synth_modules as ksm
from flows import kvpool_synth_yosys as ky
from flows.kvpool_report import render


def _mem(w: int, d: int, rd: int, wr: int, clk: int, memid: str) -> dict:
    b = lambda v: format(v, "032b")  # noqa: E731  (Yosys writes parameters in binary)
    return {
        "type": "$mem_v2",
        "parameters": {
            "MEMID": memid,
            "WIDTH": b(w),
            "SIZE": b(d),
            "RD_PORTS": b(rd),
            "WR_PORTS": b(wr),
            "RD_CLK_ENABLE": b(clk),
        },
    }


def test_memory_bits_count_one_macro_copy_per_read_port() -> None:
    fifo, w = _mem(4, 16, 1, 1, 0, "\\fifo"), _mem(8, 2, 0, 1, 0, "w")
    net = {
        "modules": {
            "\\top": {"cells": {"a": _mem(6, 256, 3, 1, 0b111, "\\leaf"), "g": {"type": "$_AND_"}}},
            "\\sub": {
                "cells": {"b": _mem(4, 16, 1, 1, 0, "\\fifo"), "c": _mem(8, 2, 0, 1, 0, "w")}
            },
        }
    }
    mems = ks.memories(net, "top")
    assert [m["name"] for m in mems] == ["leaf", "sub.fifo", "sub.w"]
    leaf, fifo, w = mems
    assert (leaf["bits"], leaf["macro_bits"], leaf["async_rd"]) == (1536, 4608, 0)
    assert (fifo["bits"], fifo["macro_bits"], fifo["async_rd"]) == (64, 64, 1)
    assert (w["bits"], w["macro_bits"]) == (16, 16)  # no read port: still one array


def test_sram_model_against_the_article() -> None:
    two_gib = ks.sram_mm2(2**34)
    assert two_gib["bitcells_mm2"] == pytest.approx(2**34 * 0.021e-6)  # ~361 mm²
    assert two_gib["macro_mm2"] == pytest.approx(two_gib["bitcells_mm2"] / 0.7)
    lo, hi = ks.SRAM["article_mm2"]
    assert lo < two_gib["macro_mm2"] < hi < ks.sram_mm2(2**35)["macro_mm2"]


def test_configurations_are_valid_pool_parameters() -> None:
    from hw.kvpool.pool import ScaledPool

    for name in ks.CONFIGS:
        pool = ScaledPool(**ks.config(name))
        pool._MustUse__silence = True
    with pytest.raises(ValueError, match="config = "):
        ks.config("huge")
    units = ks._units(ks.config("small"))
    assert set(ks.UNIT_LIMITS) <= set(units)
    # the leaves, each a component with its parameters (not the pool's own seg_q logic)
    assert "seg_q" not in units and all(hasattr(type(o), "PARAMS") for o, _ in units.values())
    assert set(ks.MODULES) <= set(ks.CONFIGS) and all(ks.MODULES.values())


def test_a_leaf_through_the_flow(monkeypatch, tmp_path) -> None:
    # a cache of its own: the repository's build/synth/kvpool is a default output that
    # tests/test_fuzz_cli.py checks no bad command line creates, maybe at the same time
    for mod in (ky, ksm):
        monkeypatch.setattr(mod, "CACHE", tmp_path)
    small = ks.config("small")
    text, _, leaf, count = ks.unit_rtlil("alloc", small)
    assert (leaf, count) == ({"PAGES": small["PAGES"]}, 1)
    assert "module \\kvpool_alloc" in text and "$memwr_v2" in text  # RTLIL, not Verilog
    r = ks.measure("kvpool_alloc", text, timeout=300, force=True)
    assert r["status"] == "ok" and r["yosys_s"] > 0 and r["yosys_peak_mib"] > 0
    assert 0 < r["ffs"] < r["cells"] and r["logic_cells"] == r["cells"] - r["ffs"]
    assert [(m["width"], m["depth"], m["rd"]) for m in r["memories"]] == [(4, 16, 1)]
    assert r["macro_bits"] == r["memory_bits"] == 64 and r["async_rd_ports"] == 0
    assert 0 < r["depth"] <= 40 and r["critical_path"]["start"]
    assert r["ff_mm2"] > 0 and r["logic_mm2"] > 0
    inv = ks.inventory("alloc", small, force=True)
    # Amaranth's netlist holds the memories Yosys synthesised (and says which write lanes)
    assert inv["count"] == 1 and inv["macro_bits"] == r["macro_bits"]
    mems = [{k: v for k, v in m.items() if k != "wr_lanes"} for m in inv["memories"]]
    assert mems == r["memories"]
    assert inv["memories"][0]["wr_lanes"] == [1]
    with pytest.raises(ValueError, match="unit = "):
        ks.unit_rtlil("nope", small)


#: the figures of a run that depend on the machine, not on the design
_TIMING = ("yosys_s", "yosys_peak_mib", "rtlil_s")


def _figures(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in _TIMING} for r in rows]


def _some_units(monkeypatch, keep: tuple[str, ...]) -> None:
    """The flow's leaves of the pool restricted to ``keep`` (elaborated here)."""
    units = ks._units
    monkeypatch.setattr(ks, "_units", lambda p: {k: v for k, v in units(p).items() if k in keep})


@pytest.mark.full  # make sim-full (decision 0054): tests/test_cluster.py runs the executor
def test_units_on_the_executor(monkeypatch, tmp_path) -> None:
    """Leaves of the small pool through run_units in this process (the executor's
    distributed runs: tests/test_cluster.py): one file per leaf, measure's own; a second
    run is served from them (nothing sent), a forced one sends every leaf again."""
    from cluster.executor import ENV, Executor

    for mod in (ky, ksm):
        monkeypatch.setattr(mod, "CACHE", tmp_path)
    monkeypatch.delenv(ENV, raising=False)
    keep = ("tags", "alloc", "bt")
    _some_units(monkeypatch, keep)
    small = ks.config("small")
    with Executor(scheduler="serial") as ex:
        serial = ks.run_units(300, False, base=small, executor=ex)
        assert ex.sent == len(keep)
        assert sorted(r["unit"] for r in serial) == sorted(keep)
        assert all(r["status"] == "ok" and r["ffs"] > 0 for r in serial)
        # one file per leaf: the task's file is the one measure itself wrote
        files = sorted(tmp_path.glob("synth-kvpool_*.json"))
        assert len(files) == len(keep)
        assert all(json.loads(f.read_text())["key"][:16] in f.name for f in files)
        again = ks.run_units(300, False, base=small, executor=ex)
        assert (ex.sent, ex.from_cache) == (len(keep), len(keep))
        assert _figures(again) == _figures(serial)
        forced = ks.run_units(300, True, base=small, executor=ex)
        assert ex.sent == 2 * len(keep) and _figures(forced) == _figures(serial)


def test_a_task_that_raises_is_its_rows_error(monkeypatch, tmp_path) -> None:
    """One leaf's task raises: its row's status is "error" (not cached), the other's
    result is its row and cached in measure's file, and the report renders both."""
    for mod in (ky, ksm):
        monkeypatch.setattr(mod, "CACHE", tmp_path)
    _some_units(monkeypatch, ("tags", "alloc"))
    cp = {"start": "a (register)", "end": "b (register input)", "nets": []}
    ok = {
        "status": "ok", "ffs": 10, "logic_cells": 90, "ff_mm2": 0.1, "logic_mm2": 0.2,
        "memory_bits": 64, "macro_bits": 128, "sram": ks.sram_mm2(128), "depth": 12,
        "critical_path": cp, "yosys_s": 3.0, "yosys_peak_mib": 9,
    }  # fmt: skip

    def fake(top: str, text: str, timeout: float, force: bool) -> dict:
        if top == "kvpool_tags":
            raise RuntimeError("no Yosys today")
        return ok

    monkeypatch.setattr(ks, "_measure", fake)
    rows = {r["unit"]: r for r in ks.run_units(300, False, base=ks.config("small"))}
    tags, alloc = rows["tags"], rows["alloc"]
    assert tags["status"] == "error" and "no Yosys today" in tags["error"]
    assert "task" not in tags and "params" not in tags and tags["leaf_params"]
    assert alloc["status"] == "ok" and alloc["depth"] == 12
    assert [f.name.split("-")[1] for f in tmp_path.glob("synth-*.json")] == ["kvpool_alloc"]
    text = "\n".join(render({"units": list(rows.values())}))
    assert "| **error** |" in text and "**12**" in text


def test_equal_operators_are_emitted_once() -> None:
    """A one-hot Cat of comparisons sliced bit by bit: Amaranth 0.5 emits the Cat once
    per slice; the flow's RTLIL once (what Yosys' opt_merge would leave), and the back
    end is restored afterwards."""
    from amaranth.back import rtlil
    from amaranth.hdl import Cat, Module, Signal, _ir

    m = Module()
    cur, ch, s = Signal(8), Signal(8), [Signal(8, name=f"s{g}") for g in range(8)]
    here = Cat(*[ch[g] & (s[g] <= cur) for g in range(8)])
    out = Signal(8)
    m.d.comb += out.eq(Cat(*[here[g] for g in range(8)]))
    ports = [cur, ch, out, *s]
    plain = rtlil.convert(m, ports=ports)
    op, mem = _ir.NetlistEmitter.emit_operator, rtlil.ModuleEmitter.emit_memory
    with kvpool_rtlil._patched(merge=True):
        merged = rtlil.convert(m, ports=ports)
    assert (plain.count("cell $le "), merged.count("cell $le ")) == (64, 8)
    assert (_ir.NetlistEmitter.emit_operator, rtlil.ModuleEmitter.emit_memory) == (op, mem)


def test_run_tool_times_out_and_reports_memory() -> None:
    import sys

    grow = "import time; b = bytearray(64 << 20); b[::4096] = bytes(len(b[::4096])); time.sleep(1)"
    big = bytearray(256 << 20)  # this process' memory is not the child's
    big[::4096] = b"1" * len(big[::4096])
    r = ky.run_tool([sys.executable, "-c", f"print('hi'); {grow}"], ks.REPO, 60)
    assert (r["rc"], r["log"].strip()) == (0, "hi") and 64 <= r["peak_mib"] < 200
    del big
    r = ky.run_tool([sys.executable, "-c", "import time; time.sleep(30)"], ks.REPO, 0.5)
    assert r["rc"] is None and r["s"] < 10


def test_report_renders_every_part() -> None:
    cp = {"start": "a (register)", "end": "b (register input)", "nets": []}
    ok = {
        "status": "ok", "ffs": 10, "logic_cells": 90, "ff_mm2": 0.1, "logic_mm2": 0.2,
        "memory_bits": 64, "macro_bits": 128, "sram": ks.sram_mm2(128), "depth": 12,
        "critical_path": cp, "yosys_s": 3.0,
    }  # fmt: skip
    mem = {"name": "fifo", "width": 4, "depth": 16, "rd": 2, "wr": 1, "bits": 64, "macro_bits": 128}
    kv = [{"gib": g, "bits": g * 2**33, **ks.sram_mm2(g * 2**33)} for g in ks.KV_GIB]
    rep = {
        "date": "2026-01-01 00:00 UTC",
        "pool": [{"config": "small", "overrides": {"PAGES": 16}, **ok},
                 {"config": "full", "overrides": {}, "status": "failed", "yosys_s": 9.0}],
        "units": [{"unit": "tlb", "count": 2, "limit": {"SEGS": 64}, "limited_because": "why",
                   "leaf_params": {"SETS": 1024}, **ok}],
        "inventory": {"status": "ok", "memories": [mem], "macro_bits": 128,
                      "sram": ks.sram_mm2(128), "netlist_s": 1.0, "kv_data": kv},
        "fpga": {"status": "ok", "overrides": {"PAGES": 1024}, "resources": {"LUT4": 5},
                 "fmax_mhz": 55.5, "met": True, "seeds": [{"seed": 1, "fmax_mhz": 55.5}],
                 "synth_s": 1.0, "pnr_s": 2.0, "path_signals": ["x", "y"]},
    }  # fmt: skip
    text = "\n".join(render(rep))
    for want in ("| small |", "**12**", "**failed**", "`tlb` x2", "SEGS=64: why", "| `fifo` |",
                 "KV data array, 4 GiB", "**55.5** (met)", "`x` -> `y`"):  # fmt: skip
        assert want in text, want


def test_cli_arguments() -> None:
    a = ks.parse_args(["--parts", "pool,fpga", "--configs", "small", "--seeds", "1,2"])
    assert (a.parts, a.configs, a.seeds) == (["pool", "fpga"], ["small"], ["1", "2"])
    a = ks.parse_args([])
    assert (a.parts, a.configs) == (list(ks.PARTS), list(ks.CONFIGS))
    assert (a.jobs, a.scheduler) == (1, None)  # one Yosys at a time unless asked
    a = ks.parse_args(["--jobs", "2", "--scheduler", "serial"])
    assert (a.jobs, a.scheduler) == (2, "serial")
    for bad in (["--parts", "pool,pool"], ["--configs", "huge"], ["--timeout", "0"],
                ["--jobs", "0"], ["--scheduler", "localhost:8786"]):  # fmt: skip
        with pytest.raises(SystemExit):
            ks.parse_args(bad)


def _gate(t: str, a: int, y: int) -> dict:
    return {"type": t, "port_directions": {"A": "input", "Y": "output"},
            "connections": {"A": [a], "Y": [y]}}  # fmt: skip


def _ff(d: int, q: int) -> dict:
    return {"type": "$_DFF_P_", "port_directions": {"D": "input", "Q": "output"},
            "connections": {"D": [d], "Q": [q]}}  # fmt: skip


def test_compose_joins_a_leaf_into_its_parent() -> None:
    """A register, 2 gates, a leaf (3 gates from its input to its output, and a
    feed-through), 1 gate, a register: 6 levels only once the leaf is in place."""
    from flows import depth
    from flows.kvpool_synth_modules import compose

    inst = {"type": "leaf", "port_directions": {"i": "input", "o": "output", "f": "output"},
            "connections": {"i": [4], "o": [5], "f": [8]}}  # fmt: skip
    top = {"modules": {"top": {
        "cells": {"r0": _ff(7, 2), "g1": _gate("$_NOT_", 2, 3), "g2": _gate("$_NOT_", 3, 4),
                  "u": inst, "g3": _gate("$_NOT_", 5, 6), "r1": _ff(6, 7),
                  "g4": _gate("$_NOT_", 8, 9), "r2": _ff(9, 10)},
        "netnames": {"q": {"bits": [2]}, "p": {"bits": [7]}, "x": {"bits": [4]},
                     "y": {"bits": [5]}, "d": {"bits": [6]}, "z": {"bits": [10]}}}}}  # fmt: skip
    leaf = {"modules": {"leaf": {
        "ports": {"i": {"direction": "input", "bits": [2]},
                  "o": {"direction": "output", "bits": [5]},
                  "f": {"direction": "output", "bits": [2]}},
        "cells": {"a": _gate("$_NOT_", 2, 3), "b": _gate("$_NOT_", 3, 4),
                  "c": _gate("$_NOT_", 4, 5)},
        "netnames": {"mid": {"bits": [4]}}}}}  # fmt: skip
    assert depth.longest_path(top, "top").levels == 4  # the leaf as one cell
    flat = compose(top, "top", {"leaf": leaf})
    p = depth.longest_path({"modules": {"top": flat}}, "top")
    assert (p.levels, p.start, p.end) == (6, "q (register)", "p (register input)")
    assert "u.mid" in p.nets
    assert len(flat["cells"]) == 7 + 3  # the leaf's cell replaced by its 3 gates
    # the feed-through: the top's bit 8 is the leaf's input (bit 4), so z's D input
    # (bit 9, behind g4) is 3 levels from q
    r2 = flat["cells"]["r2"]["connections"]["D"]
    g4 = flat["cells"]["g4"]["connections"]
    assert g4["A"] == flat["cells"]["g2"]["connections"]["Y"] and g4["Y"] == r2


def test_rtlil_modules_and_stubs() -> None:
    from flows.kvpool_synth_modules import _children, split_rtlil, stub

    text, _, _, _ = ks.unit_rtlil("bt", ks.config("small"))
    mods = split_rtlil(text)
    assert list(mods)[0] == "kvpool_bt" and len(mods) == 3
    assert "".join(mods.values()).count("\nend\n") == text.count("\nend\n")
    kids = _children(mods["kvpool_bt"])
    assert sorted(i for i, _ in kids) == ["leaf_alloc", "mid_alloc"]
    s = stub(mods[kids[0][1]])
    assert s.startswith("attribute \\blackbox 1\nmodule \\kvpool_bt.") and s.endswith("end\n")
    assert " input " in s and " output " in s and "cell " not in s
