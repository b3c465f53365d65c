"""The report pages of the models' runs: the benches (golden model, chip model, the
scaled pool's golden model), the chip model's figures and the design-space grid."""

from __future__ import annotations

from collections.abc import Mapping

from flows.report.common import Context, own_markdown, page_for, rel
from flows.report.page import Page, bar_png, copy_pngs, fmt, load_json, not_measured, table

__all__ = ["chip_bench", "chip_model", "deploy", "dse", "golden_bench", "kvpool_bench"]


def _bench(
    ctx: Context, name: str, title: str, cols: Mapping[str, str], label: tuple[str, ...], unit: str
) -> tuple[Page, Mapping | None]:
    """The page of ``<name>.json``: its ``results`` as a table (``cols``: key -> header)
    and a bar chart of their ``steps_per_s`` (bars named by the ``label`` keys)."""
    path = ctx.reports / f"{name}.json"
    rep = load_json(path)
    page = page_for(ctx, name, title, path, rep, "make bench")
    if not isinstance(rep, Mapping):
        return page, None
    rows = rep.get("results", [])
    page.lines = table(list(cols.values()), [[r.get(k) for k in cols] for r in rows])
    if rows:
        labels = [" ".join(str(r.get(k)) for k in label) for r in rows]
        vals = [float(r.get("steps_per_s") or 0) for r in rows]
        page.images = [bar_png(labels, vals, unit, ctx.out / f"{name}.png")]
    return page, rep


def golden_bench(ctx: Context) -> Page:
    """``golden_bench.json`` (``python -m golden.bench``)."""
    cols = {"workload": "workload", "tree": "tree", "arith": "arith", "checks": "model checks"}
    cols |= {"steps_per_s": "steps/s", "steps_per_cpu_s": "steps per CPU-s"}
    cols |= {"tokens_per_s": "tokens/s", "tokens_per_step": "tokens/step"}
    cols |= {"cold_steps_per_s": "first pass steps/s", "seconds": "measured s"}
    label = ("workload", "tree", "arith", "checks")
    page, rep = _bench(ctx, "golden_bench", "Golden-model throughput", cols, label, "steps/s")
    if rep is None:
        return page
    page.lines += [
        f"Target: {fmt(rep.get('target_steps_per_s_at_V256'))} steps/s at V = 256 "
        "(the warm pass, `steps/s`).",
        "",
    ]
    fvf = rep.get("fixed_vs_float")
    if fvf:
        page.lines += [
            f"Float vs fixed arithmetic: {fmt(fvf.get('differ'))} of {fmt(fvf.get('runs'))} "
            f"runs of {fmt(fvf.get('length'))} tokens differ (total-variation bound "
            f"{fmt(fvf.get('tv_upper_bound'))}).",
        ]
    return page


def chip_bench(ctx: Context) -> Page:
    """``chip_bench.json`` (``python -m sim.bench``)."""
    cols = {"backend": "backend", "tree": "tree", "runs": "runs", "steps": "steps"}
    cols |= {"steps_per_s": "steps/s", "steps_per_cpu_s": "steps per CPU-s"}
    cols |= {"tokens_per_s": "tokens/s"}
    label = ("backend", "tree")
    page, rep = _bench(ctx, "chip_bench", "Chip-model throughput", cols, label, "steps/s (wall)")
    if rep is None:
        return page
    page.lines += [
        f"Configuration: {fmt(rep.get('config'))}. Target: "
        f"{fmt(rep.get('target_steps_per_s'))} steps/s (python backend); load average "
        f"during the run {fmt(rep.get('load_average'))}.",
    ]
    return page


def kvpool_bench(ctx: Context) -> Page:
    """``kvpool_bench.json`` (``python -m golden.kvpool.bench``)."""
    path = ctx.reports / "kvpool_bench.json"
    rep = load_json(path)
    page = page_for(
        ctx, "kvpool_bench", "KV pool at scale: golden-model speed", path, rep, "make bench"
    )
    if not isinstance(rep, Mapping):
        return page
    rows = []
    for part in ("prefill", "mixed"):
        r = rep.get(part) or {}
        rows.append(
            [part, r.get("ops"), r.get("ops_per_s"), r.get("ops_per_cpu_s"), r.get("errors")]
        )
    page.lines = [
        f"`golden.kvpool` at {fmt(rep.get('pages'))} pages (seed {fmt(rep.get('seed'))}); "
        f"target {fmt(rep.get('target_ops_per_s'))} mixed operations per second.",
        "",
        *table(["phase", "operations", "ops/s (wall)", "ops per CPU-s", "errors"], rows),
        "",
        f"Mix: {fmt(rep.get('mix'))}.",
    ]
    return page


def chip_model(ctx: Context) -> Page:
    """The PNGs of ``python -m sim`` (``make chip``) and of the timing model (``make perf``)."""
    chip = sorted(ctx.reports.glob("chip_*.png"))
    perf = sorted(ctx.reports.glob("timeline_*.png")) + sorted(ctx.reports.glob("accepted_*.png"))
    found = chip + perf
    anchor = max(found, key=lambda p: p.stat().st_mtime) if found else ctx.reports
    page = page_for(ctx, "chip_model", "Chip model figures", anchor, found or None, "make chip")
    page.source = rel(ctx, ctx.reports) + "/{chip,timeline,accepted}_*.png"
    page.lines = [
        "The PNGs of the chip demo (`python -m sim`) and of the timing model (`make perf`). "
        "Their numbers (`chip.json`, `perf.json`) are quoted in the docs by `make figures` "
        "(`flows/report/figures.py`), which `tests/test_figures.py` checks.",
        "",
    ]
    if found and not perf:
        page.lines += [f"Timing-model figures: {not_measured('make perf')}.", ""]
    if found and not chip:
        page.lines += [f"Chip-demo figures: {not_measured('make chip')}.", ""]
    page.images = copy_pngs(ctx.reports, [p.name for p in found], ctx.out)
    return page


def dse(ctx: Context) -> Page:
    """``dse.json`` (``python -m sim.dse``): its own Markdown and its three figures."""
    title = "Design space: the chip model over a grid, joined with the measured area"
    page = own_markdown(ctx, "dse", title, "make dse")  # dse.md: sim.dse renders it
    if not page.missing:
        page.images = copy_pngs(ctx.reports, ["dse_*.png"], ctx.out)
    return page


def deploy(ctx: Context) -> Page:
    """``deploy.json`` (``python -m sim.dse.deploy``): its own Markdown and its figure."""
    title = "Deployments: throughput per kW against interactivity"
    page = own_markdown(ctx, "deploy", title, "make dse")  # deploy.md: sim.dse.deploy renders it
    if not page.missing:
        page.images = copy_pngs(ctx.reports, ["deploy.png"], ctx.out)
    return page
