"""make synth-kvpool (flows.kvpool_synth): the memory rule, the SRAM model, one leaf of the
scaled pool through the real flow at its small size, the report's schema and renderer."""

import pytest

from flows import kvpool_synth as ks
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
    assert set(ks.UNIT_LIMITS) <= set(ks._units(ks.config("small")))


def test_a_leaf_through_the_flow() -> None:
    small = ks.config("small")
    text, _, leaf, count = ks.unit_verilog("alloc", small)
    assert (leaf, count) == ({"PAGES": small["PAGES"]}, 1)
    r = ks.measure("kvpool_alloc", text, timeout=300, force=True)
    assert r["status"] == "ok"
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
        ks.unit_verilog("nope", small)


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
    for bad in (["--parts", "pool,pool"], ["--configs", "huge"], ["--timeout", "0"]):
        with pytest.raises(SystemExit):
            ks.parse_args(bad)
