"""The scaled KV pool's RTLIL and Verilog for :mod:`flows.kvpool_synth` (and the tree
blocks' for :mod:`flows.synth_tree`): Amaranth's back end with equal operators merged
and all-zero memories written without contents (:func:`convert`), the texts cached by
the RTL's hash (:func:`cached_text`), the pool's leaves (:func:`unit_rtlil`) and the
memories Amaranth's netlist holds (:func:`inventory`)."""

import json
import time
import warnings
from contextlib import contextmanager

from flows import kvpool_synth_yosys as _ky
from flows.kvpool_synth_yosys import TOP, mem_totals
from flows.synth.cache import cached, hw_sources, sha, store, tool_versions

__all__ = [
    "cached_text",
    "convert",
    "inventory",
    "netlist_memories",
    "pool_rtlil",
    "pool_verilog",
    "unit_rtlil",
]

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
    d = _ky.CACHE / "verilog"
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
    cfile = _ky.CACHE / f"inventory-{TOP}_{unit}-{key[:16]}.json"
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


# ------------------------------------------------------------------------- progress, rows
