"""The synthesis report: ``build/reports/synth.json`` and its Markdown, ``synth.md``.

The JSON holds up to three parts, each written by its own run and kept by the
others: ``generic`` (``make synth``), ``sweep`` (``make synth-sweep``) and
``fpga`` (``make synth-fpga``). :func:`save_report` adds the area model, the
budgets and the depth budget and renders every part present
(:func:`render`).
"""

import json

from flows import depth
from flows.synth.area import AREA, BUDGET_MEMBERS, BUDGETS
from flows.synth.cache import REPO
from flows.synth.ecp5 import render_section
from flows.synth.fmt import fmt_s, label, mm2

__all__ = ["BEFORE", "REPORTS", "REPORT_JSON", "REPORT_MD", "load_report", "render", "save_report"]

REPORTS = REPO / "build" / "reports"
REPORT_JSON = REPORTS / "synth.json"
REPORT_MD = REPORTS / "synth.md"

#: logic depth before the restructuring (straightforward designs), for the report
BEFORE = [
    ("accept_sampler", "single-cycle 64-node acceptance decision", 97, "TOOLCHAIN.md"),
    ("accept_sampler", "the same split in 3 stages", 63, "TOOLCHAIN.md"),
    ("kv_pool", "single-cycle 256-entry CAM lookup", 34, "TOOLCHAIN.md"),
    ("kv_pool", "entry-by-entry pool, free-page prefix OR folded to a chain", 51, "README"),
    ("rng_lanes", "adders and multiplier without keep (ABC folds to ripple)", 108, "README"),
]


def load_report() -> dict:
    """The report's JSON as last written (``{}`` if missing or unreadable)."""
    if REPORT_JSON.exists():
        try:
            return json.loads(REPORT_JSON.read_text())
        except json.JSONDecodeError:
            pass
    return {}


def save_report(rep: dict) -> None:
    """Write ``rep`` (with the area model and budgets added) as JSON and Markdown."""
    REPORTS.mkdir(parents=True, exist_ok=True)
    rep["area_model"] = AREA
    rep["budgets"] = {k: {"mm2": list(v["mm2"]), "what": v["what"]} for k, v in BUDGETS.items()}
    rep["depth_budget"] = depth.BUDGET
    REPORT_JSON.write_text(json.dumps(rep, indent=1))
    REPORT_MD.write_text(render(rep))


def render(rep: dict) -> str:
    """``synth.md`` from the combined report (generic, sweep and FPGA parts)."""
    L: list[str] = ["# Synthesis estimates", ""]
    gen = rep.get("generic")
    if gen:
        L += _generic_section(gen)
        ok = _ok_by_block(gen["blocks"])
        L += _budget_section(ok)
        L += _before_after(ok)
    if rep.get("sweep"):
        L += _sweep_section(rep["sweep"])
    if rep.get("fpga"):
        L += render_section(rep["fpga"])
    if gen:
        L += _per_block(gen["blocks"])
    return "\n".join(L) + "\n"


def _ok_by_block(blocks: list[dict]) -> dict[str, dict]:
    return {r["block"]: r for r in blocks if r["status"] == "ok"}


def _table(title: str, header: str, rule: str) -> list[str]:
    """A ``##`` heading and a table's first two lines."""
    return [f"## {title}", "", header, rule]


def _generic_section(gen: dict) -> list[str]:
    L = [
        f"Generic Yosys synthesis (`make synth`), {gen['date']}, "
        f"tools {', '.join(f'{k} {v}' for k, v in gen['tools'].items())}. "
        f"Last run: {gen.get('measured', '?')} blocks measured (Yosys time "
        f"{fmt_s(gen['yosys_s'])}), {gen['cached']} from the cache; the Yosys column is "
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
                f"{fmt_s(r['yosys_s'])} | | | | | | | |"
            )
            continue
        d = f"**{r['depth']}**" if r["depth_ok"] else f"**{r['depth']} OVER**"
        cp = r["critical_path"]
        L.append(
            f"| `{r['block']}` | {label(r['params'])} | {r['cells']:,} | {r['ffs']:,} | "
            f"{r['memory_bits']:,} | {r['transistors']:,} | {mm2(r['area_mm2'])} | {d} | "
            f"`{cp['start']}` -> `{cp['end']}` | {fmt_s(r['yosys_s'])} |"
        )
    return L + [
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


def _per_block(blocks: list[dict]) -> list[str]:
    L = ["## Per block", ""]
    for r in blocks:
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
            f"| area (5 nm) | {mm2(r['area_mm2'])} mm² |",
            f"| logic depth | {r['depth']} levels (budget {depth.BUDGET}) |",
            f"| critical path | `{cp['start']}` -> `{cp['end']}` |",
            f"| named nets on it | {', '.join(f'`{n}`' for n in cp['nets']) or '-'} |",
            f"| Yosys time | {fmt_s(r['yosys_s'])} |",
            "",
        ]
    return L


def _share(area: float, lo: float, hi: float) -> str:
    """``area`` as a share of a budget of ``lo``-``hi`` mm² (a percentage range)."""
    return f"{100 * area / hi:.2g}-{100 * area / lo:.2g} %"


def _budget_section(by: dict[str, dict]) -> list[str]:
    """The budgets' table; ``by``: the blocks measured, by name."""
    L = _table(
        "Against the article's area budgets",
        "| budget | article | blocks | estimate mm² | share of the budget |",
        "|---|---:|---|---:|---:|",
    )
    for k, b in BUDGETS.items():
        members = [m for m in BUDGET_MEMBERS[k] if m in by]
        if not members:
            continue
        area = sum(by[m]["area_mm2"] for m in members)
        lo, hi = b["mm2"]
        L.append(
            f"| {k} | {lo:g}-{hi:g} mm² | {', '.join(f'`{m}`' for m in members)} | "
            f"{mm2(area)} | {_share(area, lo, hi)} |"
        )
    if "specdecode_top" in by:
        area = by["specdecode_top"]["area_mm2"]
        lo = sum(b["mm2"][0] for b in BUDGETS.values())
        hi = sum(b["mm2"][1] for b in BUDGETS.values())
        L.append(
            f"| both | {lo:g}-{hi:g} mm² | `specdecode_top` | {mm2(area)} | "
            f"{_share(area, lo, hi)} |"
        )
    L += [""]
    for k, b in BUDGETS.items():
        L.append(f"- {k}: {b['what']}.")
    L += [
        "- The `tree_manager` composition holds the tree builder (one top-K unit), the "
        "topology optimiser, two mask generators (pre-verify rows and the verify path), the "
        "RNG lanes, the acceptance sampler and one token sampler at `N_NODES = 64`; the "
        "article's figure also covers SRAM, clocking and I/O, which are not modelled here.",
        "- The KV pool estimate is the block-table logic only (CAM, commit/rollback, "
        "allocator) at 256 entries; the article's own TLB has 4K entries (see the sweep "
        "for the growth).",
        "",
    ]
    return L


def _before_after(by: dict[str, dict]) -> list[str]:
    """Logic depth against :data:`BEFORE`; ``by``: the blocks measured, by name."""
    L = _table(
        "Logic depth before and after the restructuring",
        "| block | before: design | levels | source | after (this run) |",
        "|---|---|---:|---|---:|",
    )
    for b, what, lv, src in BEFORE:
        now = by[b]["depth"] if b in by else "-"
        L.append(f"| `{b}` | {what} | {lv} | {src} | {now} |")
    L.append("")
    return L


def _sweep_section(sw: dict) -> list[str]:
    L = [
        "## Parameter sweep (`make synth-sweep`)",
        "",
        f"{sw['date']}; per-point Yosys limit {fmt_s(sw['timeout_s'])}. Plots: "
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
                    f"{mm2(p['area_mm2'])} | {p['depth']} | {fmt_s(p['yosys_s'])} |"
                )
            else:
                L.append(
                    f"| {p['x']} | skipped: {p['status']} after {fmt_s(p['yosys_s'])} | | | | | |"
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
