"""One page per report: what each producer writes, rendered for ``docs/results/``.

Every function here takes a :class:`Context` and returns a
:class:`~flows.report.page.Page`. A report that is absent gives a page that
says so (:func:`~flows.report.page.not_measured`) and nothing else; fields a
report lacks are shown as ``-``. The readers are lenient about extra or
missing keys, since the producers evolve independently of this module.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from flows.report.common import Context, own_markdown, page_for, rel, tools_line
from flows.report.page import Page, copy_pngs, fmt, load_json, table
from flows.report.sim_pages import chip_bench, chip_model, deploy, dse, golden_bench, kvpool_bench

__all__ = ["SOURCES", "Context", "load_testbench_records", "rel"]


def _synth_page(
    ctx: Context, part: str, name: str, title: str, target: str
) -> tuple[Page, Mapping | None]:
    """The page of ``synth.json``'s ``part`` (``None``: that part is absent)."""
    path = ctx.reports / "synth.json"
    rep = load_json(path)
    data = rep.get(part) if isinstance(rep, Mapping) else None
    return page_for(ctx, name, title, path, data, target), data


# ---------------------------------------------------------------------------- synthesis


def kvpool_synth(ctx: Context) -> Page:
    """``kvpool_synth.json`` (``python -m flows.kvpool_synth``): its own Markdown."""
    from flows.kvpool_report import render

    title = "Scaled KV pool: synthesis with memories as SRAM macros"
    return own_markdown(ctx, "kvpool_synth", title, "make synth-kvpool", render)


def synth_tree(ctx: Context) -> Page:
    """``synth_tree.json`` (``python -m flows.synth_tree``): its own Markdown."""
    from flows.synth_tree import render

    title = "Tree blocks up to 1,024 nodes: synthesis with memories as SRAM macros"
    return own_markdown(ctx, "synth_tree", title, "make synth-tree", render)


def synth_generic(ctx: Context) -> Page:
    """The ``generic`` part of ``synth.json`` (``python -m flows.synth``)."""
    page, gen = _synth_page(ctx, "generic", "synth", "Generic synthesis", "make synth")
    if gen is None:
        return page
    rows = []
    for r in gen.get("blocks", []):
        cp = r.get("critical_path") or {}
        ok = r.get("status") == "ok"
        rows.append(
            [f"`{r.get('block')}`", r.get("params"), r.get("status")]
            + [r.get(k) if ok else None for k in ("cells", "ffs", "transistors", "area_mm2")]
            + [r.get("depth") if ok else None]
            + [f"`{cp.get('start')}` -> `{cp.get('end')}`" if cp else "-"]
        )
    page.lines = tools_line(gen) + table(
        ["block", "parameters", "status", "cells", "flip-flops", "transistors"]
        + ["area mm² (5 nm)", "depth (levels)", "critical path"],
        rows,
    )
    page.lines += [
        "Depth: gate levels between registers after `synth -flatten; abc` "
        "(`flows.depth.longest_path`); budget 40. The full report with the area model "
        "and the budgets is `build/reports/synth.md`.",
    ]
    return page


def _seeds(r: Mapping) -> str:
    seeds = r.get("seeds") or []
    if len(seeds) < 2:
        return f"seed {seeds[0].get('seed')}" if seeds else "-"
    ids = " / ".join(str(s.get("seed")) for s in seeds)
    return f"median of seeds {ids}: " + " / ".join(fmt(s.get("fmax_mhz")) for s in seeds)


def synth_fpga(ctx: Context) -> Page:
    """The ``fpga`` part of ``synth.json`` (``python -m flows.synth_fpga``)."""
    page, fp = _synth_page(ctx, "fpga", "synth_fpga", "ECP5 place and route", "make synth-fpga")
    if fp is None:
        page.lines = [
            "The figures measured earlier, with their provenance, are on "
            "[ecp5_measured.md](ecp5_measured.md).",
        ]
        return page
    rows = []
    for r in fp.get("blocks", []):
        res = r.get("resources") or {}
        rows.append(
            [f"`{r.get('block')}`", r.get("params"), r.get("status")]
            + [res.get(k) for k in ("LUT4", "TRELLIS_FF", "MULT18X18D")]
            + [
                r.get("fmax_mhz"),
                r.get("target_mhz"),
                _seeds(r),
                " ".join(r.get("placer_args", [])),
            ]
        )
    page.lines = tools_line(fp) + table(
        ["block", "parameters", "status", "LUT4", "FF", "DSP", "Fmax MHz", "target", "seeds"]
        + ["placer arguments"],
        rows,
    )
    page.lines += [
        "LFE5U-85F speed 6, out of context; Fmax is nextpnr's register-to-register figure."
    ]
    return page


def ecp5_measured(ctx: Context) -> Page:
    """``docs/results/ecp5_measured.json``: ECP5 figures of earlier runs, committed
    with their provenance (the runs take 10-25 minutes per block)."""
    path = ctx.out / "ecp5_measured.json"
    rep = load_json(path)
    page = page_for(
        ctx, "ecp5_measured", "ECP5 figures measured earlier", path, rep, "make synth-fpga"
    )
    if rep is None:
        return page
    page.lines = [rep.get("what", ""), ""] + tools_line(rep)
    header = ["block", "configuration", "LUT4", "Fmax MHz", "target", "seeds", "note"]
    for title, key in (("Current figure per block", "blocks"), ("Other configurations", "other")):
        page.lines += [f"## {title}", ""]
        page.lines += table(
            [*header, "measured", "stated in"],
            [
                [f"`{b.get('block')}`", b.get("config"), b.get("LUT4"), b.get("fmax_mhz")]
                + [b.get("target_mhz"), _seeds(b), b.get("note"), b.get("date")]
                + [f"`{b.get('stated_in')}`"]
                for b in rep.get(key, [])
            ],
        )
    page.lines += [rep.get("provenance", "")]
    return page


def synth_sweep(ctx: Context) -> Page:
    """The ``sweep`` part of ``synth.json`` (``python -m flows.synth --sweep``) and its PNGs."""
    title = "Synthesis parameter sweep"
    page, sw = _synth_page(ctx, "sweep", "synth_sweep", title, "make synth-sweep")
    if sw is None:
        return page
    for block, s in (sw.get("blocks") or {}).items():
        par = "=".join(s.get("params", []))
        rows = [
            [p.get("x")]
            + [
                p.get(k) if p.get("status") == "ok" else None
                for k in ("cells", "area_mm2", "depth")
            ]
            + [p.get("status")]
            for p in s.get("points", [])
        ]
        page.lines += [f"## `{block}` over {par}", ""]
        page.lines += table([par, "cells", "area mm²", "depth", "status"], rows)
        f = s.get("fits") or {}
        if f.get("cells") and f.get("depth"):
            x = par.split("=")[0]
            page.lines += [
                f"Fitted: cells ~ {x}^{f['cells']['b']:.2f}; depth ~ {f['depth']['a']:.1f} + "
                f"{f['depth']['b']:.2f} log2({x}).",
                "",
            ]
    page.images = copy_pngs(ctx.reports, sw.get("plots") or ["synth_sweep_*.png"], ctx.out)
    return page


# ---------------------------------------------------------------------------- KV pool


def kv_soak(ctx: Context) -> Page:
    """``kv_soak.json`` (``python -m tb.kv_pool.soak``)."""
    path = ctx.reports / "kv_soak.json"
    rep = load_json(path)
    page = page_for(ctx, "kv_soak", "KV pool soak", path, rep, "make soak")
    if rep is None:
        return page
    keys = ("operations", "lookups", "seconds", "ops_per_s", "leaks", "lost_committed")
    page.lines = table(
        ["metric", "value"],
        [[k, rep.get(k)] for k in (*keys, "mismatches", "seed", "params", "codes")],
    )
    page.lines += ["Leaks, lost committed entries and mismatches must all be 0."]
    return page


def _sby_status(task_dir: Path) -> str | None:
    """PASS / FAIL / ... of one SymbiYosys task folder, from its ``status`` file or log."""
    st = task_dir / "status"
    if st.exists():
        return st.read_text().split()[0] if st.read_text().split() else None
    log = task_dir / "logfile.txt"
    if log.exists():
        for line in reversed(log.read_text(errors="replace").splitlines()):
            if "DONE (" in line:
                return line.split("DONE (", 1)[1].split(",")[0]
    return None


def formal(ctx: Context) -> Page:
    """``build/reports/formal.json`` (``make formal``); without it, the status files
    SymbiYosys leaves under ``build/formal`` (a run of ``tests/test_formal.py``); and
    the scaled pool's ``formal_kvpool.json`` (``python -m formal.kvpool``) as a section."""
    path = ctx.reports / "formal.json"
    rep = load_json(path)
    if isinstance(rep, dict) and rep.get("results"):
        page = page_for(ctx, "formal", "KV pool formal proofs", path, rep, "make formal")
        page.lines = _formal_rows(rep["results"])
    else:
        page = _formal_status_files(ctx)
    scaled = load_json(ctx.reports / "formal_kvpool.json")
    if isinstance(scaled, dict) and scaled.get("results"):
        page.lines += [
            "",
            "## The scaled pool (`hw.kvpool`, `python -m formal.kvpool`)",
            "",
            f"Source: `{rel(ctx, ctx.reports / 'formal_kvpool.json')}`; parameters "
            f"{fmt((scaled['results'][0] or {}).get('params'))}. Depth: the steps from reset "
            "a BMC checked (a witness: the step it reached), the induction length tried "
            "(closed, when it passes). Checks `tlb:...`, `alloc:...`, `seg:...`, `segd:...`, "
            "`bt:...`, `ts:...` and `ps:...` are leaf proofs (`python -m formal.kvpool_tlb`, "
            "`formal.kvpool_alloc`, `formal.kvpool_seg`, `formal.kvpool_seg_derived`, "
            "`formal.kvpool_bt`, `formal.kvpool_ts`, `formal.kvpool_ps`), at the sizes in "
            "*shows*; `proto:...`, `segproto:...`, `tlbproto:...` and `allocproto:...` the "
            "pool's side of the block table's, the segment table's, the TLB's and the page "
            "allocator's protocols on the whole pool (`formal.kvpool_proto`, "
            "`formal.kvpool_segproto`, `formal.kvpool_tlbproto`, `formal.kvpool_allocproto`), "
            "`counts:...` its page counters against its page table (`formal.kvpool_counts`), "
            "`conserve:...` its conservation of pages and HBM slots (`formal.kvpool_conserve`).",
            "",
            *table(
                ["check", "status", "as required", "depth", "seconds", "shows"],
                [
                    [f"`{r.get('task')}`", r.get("status"), r.get("ok"), r.get("depth")]
                    + [r.get("seconds"), r.get("what")]
                    for r in scaled["results"]
                ],
            ),
        ]
    return page


def _formal_rows(results: list) -> list[str]:
    """The table of a formal report's ``results``."""
    return table(
        ["configuration", "parameters", "task", "depth", "status", "seconds"],
        [
            [f"`{r.get('config')}`", r.get("params"), f"`{r.get('task')}`"]
            + [r.get("depth"), r.get("status"), r.get("seconds")]
            for r in results
        ],
    )


def _formal_status_files(ctx: Context) -> Page:
    root = ctx.reports.parent / "formal"
    rows, files = [], []
    for task in sorted(p for p in root.glob("*/*") if p.is_dir()) if root.exists() else []:
        status = _sby_status(task)
        if status is not None:
            rows.append([f"`{task.parent.name}`", f"`{task.name}`", status])
            files += [p for p in task.iterdir() if p.is_file()]
    anchor = max(files, key=lambda p: p.stat().st_mtime) if files else root
    page = page_for(ctx, "formal", "KV pool formal proofs", anchor, rows or None, "make formal")
    page.source = rel(ctx, root) + "/*/*/status"
    page.lines = [
        "No `build/reports/formal.json` (`make formal` writes it): this page reads the "
        "status SymbiYosys leaves in each task's folder.",
        "",
    ]
    if rows:
        page.lines += table(["configuration", "task", "status"], rows)
    return page


# ---------------------------------------------------------------------------- make test


def make_test(ctx: Context) -> Page:
    """``make_test.json`` (``python -m flows.testtime -- make test``); without one in
    ``build/reports``, the committed ``docs/results/make_test_measured.json``
    (a fresh-clone run, with the figures before the budget work as baselines)."""
    path = ctx.reports / "make_test.json"
    rep = load_json(path)
    if rep is None:
        path = ctx.out / "make_test_measured.json"
        rep = load_json(path)
    page = page_for(ctx, "make_test", "make test: time and CPU", path, rep, "make test-timed")
    if rep is None:
        return page
    runs = [*rep.get("baselines", []), {"commit": page.stamp.commit, **rep}]
    page.lines = [
        "Budget: at most 30 CPU-minutes (user + system of the whole process tree) and "
        "15 minutes wall on 2 cores, from a fresh clone (decision 0012).",
        "",
    ]
    page.lines += table(
        ["run", "commit", "CPU min", "wall min", "load before", "passed", "skipped", "fresh"],
        [
            [r.get("what", "this report"), f"`{r.get('commit')}`", r.get("cpu_min")]
            + [None if r.get("wall_s") is None else round(r["wall_s"] / 60, 1)]
            + [r.get("load_before"), r.get("passed"), r.get("skipped"), r.get("fresh_build")]
            for r in runs
        ],
    )
    return page


# ---------------------------------------------------------------------------- testbenches


def load_testbench_records(reports: Path) -> list[dict]:
    """Every testbench record of ``reports/sim`` (written by ``tb.common.report``),
    each with ``_path`` (its file); sorted by block, then test."""
    recs = []
    for f in sorted((reports / "sim").glob("*.json")):
        r = load_json(f)
        if isinstance(r, dict) and "block" in r:
            recs.append({**r, "_path": f})
    return sorted(recs, key=lambda r: (r["block"], str(r.get("test"))))


def testbenches(ctx: Context) -> Page:
    """``build/reports/sim/*.json``: one record per cocotb test and parameter set."""
    recs = load_testbench_records(ctx.reports)
    newest = max((r["_path"] for r in recs), key=lambda p: p.stat().st_mtime, default=None)
    page = page_for(
        ctx,
        "testbenches",
        "Testbench runs",
        newest or ctx.reports / "sim",
        recs or None,
        "make sim",
    )
    page.source = rel(ctx, ctx.reports / "sim") + "/*.json"
    if not recs:
        return page
    by: dict[str, list[dict]] = {}
    for r in recs:
        by.setdefault(r["block"], []).append(r)
    page.lines = [
        "One record per cocotb test and parameter set, as the testbenches last wrote them "
        "(the date above is the newest record's).",
        "",
    ]
    page.lines += table(
        ["block", "runs", "parameter sets", "checked", "mismatches"],
        [
            [f"`{b}`", len(rs), len({_params_key(r) for r in rs})]
            + [sum(_int(r.get("checked")) for r in rs), sum(_int(r.get("mismatches")) for r in rs)]
            for b, rs in by.items()
        ],
    )
    for b, rs in by.items():
        sets: dict[str, list[dict]] = {}
        for r in rs:
            sets.setdefault(_params_key(r), []).append(r)
        page.lines += [f"## `{b}`", ""]
        page.lines += table(
            ["parameters", "tests", "checked", "mismatches", "latencies measured"],
            [
                [rs_[0].get("params"), len(rs_), sum(_int(r.get("checked")) for r in rs_)]
                + [sum(_int(r.get("mismatches")) for r in rs_)]
                + [
                    "; ".join(
                        dict.fromkeys(
                            f"{r['test']}: {r['latency']}" for r in rs_ if r.get("latency")
                        )
                    )
                    or "-"
                ]
                for rs_ in sets.values()
            ],
        )
    return page


def _params_key(r: Mapping) -> str:
    return repr(sorted((r.get("params") or {}).items()))


def _int(x: object) -> int:
    return x if isinstance(x, int) else 0


#: every page, in the order of the index
SOURCES: tuple[Callable[[Context], Page], ...] = (
    synth_generic,
    synth_fpga,
    ecp5_measured,
    synth_sweep,
    kvpool_synth,
    synth_tree,
    dse,
    deploy,
    testbenches,
    kv_soak,
    formal,
    make_test,
    golden_bench,
    chip_bench,
    kvpool_bench,
    chip_model,
)
