"""``dse.md``: the design-space grid's report page, rendered from ``dse.json``."""

from __future__ import annotations

from typing import Any

__all__ = ["render"]


def _design(r: dict[str, Any]) -> str:
    lanes = f"select {r['select_lanes']}" if r["select_lanes"] else "two-pass"
    return (f"{r['tree']} {r['nodes']}, {lanes}, {r['pool_gib']} GiB, "
            f"TLB {r['tlb_entries']:,}")  # fmt: skip


def _vs(r: dict[str, Any]) -> str:
    g = r.get("gpu_spec_tokens_per_s")
    return f"{r['tokens_per_s'] / g:.2f}x" if g else "-"


def _front(table: list[dict[str, Any]]) -> list[str]:
    out = ["| context | design | area mm² | tokens/s | tokens/s per mm² | vs GPU spec |",
           "|---:|---|---:|---:|---:|---:|"]  # fmt: skip
    for r in sorted((r for r in table if r["pareto"]), key=lambda r: (r["context"], r["area_mm2"])):
        out.append(
            f"| {r['context']:,} | {_design(r)} | {r['area_mm2']:.1f} | {r['tokens_per_s']:,.0f} "
            f"| {r['tokens_per_s_per_mm2']:.2f} | {_vs(r)} |"
        )
    return out


def _best(table: list[dict[str, Any]]) -> list[str]:
    out = ["| pool | context | best design | tokens/s | pool never full | spills/step |",
           "|---:|---:|---|---:|---:|---:|"]  # fmt: skip
    for gib in sorted({r["pool_gib"] for r in table}):
        for ctx in sorted({r["context"] for r in table}):
            cand = [r for r in table if r["pool_gib"] == gib and r["context"] == ctx]
            b = max(cand, key=lambda r: r["tokens_per_s"])
            out.append(
                f"| {gib} GiB | {ctx:,} | {_design(b)} | {b['tokens_per_s']:,.0f} "
                f"| {b['unbounded_tokens_per_s']:,.0f} | {b['spills_per_step']:.1f} |"
            )
    return out


#: the architecture article's energy claim (seeds/002: "At 700W TDP (comparable to H100) and
#: 7,100 tokens/sec for 7B: ~10 tokens/sec/watt -- roughly 5-8x better than H100")
ARTICLE_TOKENS_PER_S_PER_W = 10.0
ARTICLE_VS_H100 = (5.0, 8.0)


def _energy(table: list[dict[str, Any]]) -> list[str]:
    key = "gpu_spec_tokens_per_s_per_w"
    rows = [r for r in table if r.get("tokens_per_s_per_w") and r.get(key)]
    if not rows:
        return []
    lo, hi = ARTICLE_VS_H100
    out = ["## Energy, one sequence: tokens/s per watt against the article's claim", "",
           f"The article: ~{ARTICLE_TOKENS_PER_S_PER_W:g} tokens/s/W for 7B at 700 W, "
           f"{lo:g}-{hi:g}x an H100. Here: each profile's `[power]` (both 700 W, cited there), "
           "the best design of the grid at each context, against the calibrated GPU's spec "
           "decode of the same trees at the same context.", "",
           "| context | best design | tokens/s/W | GPU tokens/s/W | ratio |",
           "|---:|---|---:|---:|---:|"]  # fmt: skip
    for ctx in sorted({r["context"] for r in rows}):
        b = max((r for r in rows if r["context"] == ctx), key=lambda r: r["tokens_per_s_per_w"])
        g = b["gpu_spec_tokens_per_s_per_w"]
        out.append(f"| {ctx:,} | {_design(b)} | {b['tokens_per_s_per_w']:.2f} | {g:.2f} "
                   f"| {b['tokens_per_s_per_w'] / g:.1f}x |")  # fmt: skip
    return [*out, ""]


def _accepted(table: list[dict[str, Any]]) -> list[str]:
    out = ["| tree | nodes | accepted per step | tokens per step |", "|---|---:|---:|---:|"]
    seen = set()
    for r in sorted(table, key=lambda r: (r["tree"], r["nodes"])):
        if (r["tree"], r["nodes"]) in seen:
            continue
        seen.add((r["tree"], r["nodes"]))
        out.append(f"| {r['tree']} | {r['nodes']} | {r['accepted_per_step']:.2f} "
                   f"| {r['tokens_per_step']:.2f} |")  # fmt: skip
    return out


def _speedup(rows: list[dict[str, Any]]) -> list[str]:
    if not rows:
        return []
    out = ["## The grid on 1 and more local workers (nothing from the cache)", "",
           "| workers | wall s | speed-up |", "|---:|---:|---:|"]  # fmt: skip
    out += [f"| {r['workers']} | {r['wall_s']:.1f} | {r['speedup']:.2f}x |" for r in rows]
    return [*out, ""]


def render(rep: dict[str, Any]) -> list[str]:
    """The page's lines (its first line the title, then a blank line)."""
    g, table = rep["grid"], rep.get("table", [])
    axes = "; ".join(f"{k}: {', '.join(map(str, v))}" for k, v in g["axes"].items())
    lines = [
        "# Design space: the chip model over a grid, joined with the measured area",
        "",
        f"`make dse`, {rep.get('date', '')}: grid `{g['source']}` ({axes}; contexts "
        f"{', '.join(f'{c:,}' for c in g['contexts'])}, {g['mode']} reads), {rep['runs']} "
        f"runs on {rep['executor']} ({rep['runs'] - rep['cached']} computed in "
        f"{rep['wall_s']:.0f} s, {rep['cached']} from the cache, {rep['failed']} failed). "
        "Each run is a chip-model run (python backend) replayed by "
        "the long-context study in a scaled pool of its size and TLB (`sim/dse/point.py`). "
        "Area: the tree manager as measured by `make synth-tree` at the smallest node count "
        "holding the run's largest tree, plus the pool's and the TLB's N5 SRAM. One sequence "
        "(batch 1); batches and deployments beside GPUs are on [deploy.md](deploy.md).",
        "",
        *_speedup(rep.get("speedup") or []),
        "## Pareto front of tokens/s against area, per context",
        "",
        *_front(table),
        "",
        "## The best design of each pool size at each context",
        "",
        *_best(table),
        "",
        *_energy(table),
        "## Acceptance per tree policy and budget",
        "",
        *_accepted(table),
        "",
    ]
    return lines
