"""The ECP5 flow's definition and the reading of its results (run by :mod:`flows.synth_fpga`).

Definition: the device and nextpnr arguments (:data:`NEXTPNR_ARGS`, per block
:data:`PLACER_ARGS`), the Fmax targets (:data:`TARGET_MHZ`), the Yosys script
(:func:`script`: ``synth_ecp5`` as it is, or its steps with classic ``abc -lut
4`` for large designs, a wide-multiplexer cover, kept register replicas).
Reading: nextpnr's JSON report (:func:`parse_report`) and log
(:func:`critical_path_log`, :func:`path_signals`), and the ECP5 section of
``synth.md`` (:func:`render_section`).
"""

import re

from flows.synth.cache import REPO
from flows.synth.fmt import fmt_s

__all__ = [
    "ABC9_MAX_BYTES",
    "DEFAULT_MHZ",
    "KEEP_REPLICAS",
    "NEXTPNR_ARGS",
    "PLACER_ARGS",
    "RESOURCES",
    "ROUTERS",
    "TARGET_MHZ",
    "WIDE_MUX_BLOCKS",
    "WIDE_MUX_COVER",
    "WIDE_MUX_MAP",
    "critical_path_log",
    "has_replicas",
    "lut_mapper",
    "nextpnr_args",
    "parse_report",
    "path_signals",
    "render_section",
    "script",
]

#: Fmax targets of the synthesis issue (MHz); other blocks are constrained at DEFAULT_MHZ
TARGET_MHZ = {
    "tree_mask_gen": 100,
    "token_sampler": 100,
    "accept_sampler": 50,
    "kv_pool": 50,
    "topk": 50,
    "topology_optimiser": 50,
    "tree_builder": 50,
    "token_select": 50,
}
DEFAULT_MHZ = 100

#: LFE5U-85F, speed grade 6, out of context; ``router2``: the default router is too
#: slow on the larger blocks
NEXTPNR_ARGS = [
    "--85k",
    "--package",
    "CABGA381",
    "--speed",
    "6",
    "--out-of-context",
    "--router",
    "router2",
    "--timing-allow-fail",
]
#: extra nextpnr arguments per block. The KV pool's ``TARGET="fpga"`` build fills
#: most of the device's LUTs, and its critical paths are single crossings of the
#: die, mostly routing: the heap placer's timing weight raised from 10 to 25 and
#: its criticality exponent from 2 to 3, and the router's timing-driven rip-up
PLACER_ARGS: dict[str, list[str]] = {
    "kv_pool": [
        "--placer-heap-timingweight",
        "25",
        "--placer-heap-critexp",
        "3",
        "--tmg-ripup",
    ],
}

#: blocks routed by ``router1`` instead of :data:`NEXTPNR_ARGS`' ``router2``: the tree
#: builder's ``TARGET="fpga"`` build, on which ``router2`` keeps about 100 wires
#: overused after 250 iterations and does not finish in 30 minutes (decision 0042)
ROUTERS: dict[str, str] = {"tree_builder": "router1"}

#: synth_ecp5 cell types reported, in order, with their column names
RESOURCES = {
    "LUT4": "LUT4",
    "TRELLIS_FF": "FF",
    "CCU2C": "carry (CCU2C)",
    "MULT18X18D": "DSP (MULT18X18D)",
    "DP16KD": "BRAM (DP16KD)",
    "TRELLIS_DPR16X4": "LUTRAM (DPR16X4)",
    "PFUMX": "PFUMX",
    "L6MUX21": "L6MUX21",
}

#: Verilog larger than this is LUT-mapped by classic ``abc -lut 4`` instead of
#: ``synth_ecp5``'s ``abc9``: on the largest designs the WASM build's ABC9 fails
#: without a message or does not finish in the time limit; classic ABC is not
#: timing-driven, so Fmax there is a little pessimistic
ABC9_MAX_BYTES = 300_000

#: techmap of the wide multiplexers (``$_MUX4_``, ``$_MUX8_``) to ECP5 slices
WIDE_MUX_MAP = REPO / "flows" / "ecp5_wide_mux.v"

#: blocks whose multiplexer trees are covered by ECP5 wide multiplexers
#: (:data:`WIDE_MUX_MAP`) before LUT mapping: those where wide multiplexers
#: dominate (the KV pool's three ``N_NODES``-to-1 selects per entry, the mask
#: generator's row read). Elsewhere ABC's own mapping merges the multiplexers
#: with the logic around them, which places and routes faster
WIDE_MUX_BLOCKS = frozenset({"kv_pool", "tree_mask_gen"})

#: the Yosys commands of the wide-multiplexer cover (before LUT mapping)
WIDE_MUX_COVER = f"muxcover -mux4 -mux8 -nopartial\ntechmap -map {WIDE_MUX_MAP.name}\n"

#: registers a block replicates on purpose (``hw.kv_pool``, ``TARGET="fpga"``: a
#: decision's inputs once per 16 entries, so that no net reaches every entry):
#: marked ``keep`` before synthesis, since ``opt_merge`` merges identical
#: flip-flops unless both carry it
KEEP_REPLICAS = "setattr -set keep 1 w:*_rep_g* %ci1 t:$dff %i\n"


def has_replicas(text: str) -> bool:
    """The Verilog has registers replicated on purpose (named ``*_rep_g<n>``)."""
    return "_rep_g" in text


def lut_mapper(text: str) -> str:
    """``"abc9"`` (``synth_ecp5``'s own) or ``"abc"`` (classic, for large designs)."""
    return "abc9" if len(text) <= ABC9_MAX_BYTES else "abc"


def script(top: str, mapper: str = "abc9", wide_mux: bool = False, replicas: bool = False) -> str:
    """The Yosys script (reads ``design.v`` and, with ``wide_mux``, :data:`WIDE_MUX_MAP`'s
    file name; writes ``design.json`` and ``stat.json``).

    ``synth_ecp5`` as it is (``abc9`` mapper, no ``wide_mux``), or its steps
    with LUT mapping by classic ``abc -lut 4`` (``mapper="abc"``) and/or, with
    ``wide_mux``, the mux trees covered first by 4- and 8-to-1 multiplexers
    built from LUT4 + PFUMX (+ L6MUX21) (``-nopartial``: a partial cover, where
    a shared subtree feeds two inputs, can leave the first-level select
    undefined where other inputs need it). ``replicas``: the flip-flops of
    :data:`KEEP_REPLICAS` are marked ``keep`` first.
    """
    if mapper == "abc9" and not wide_mux:
        synth = f"synth_ecp5 -top {top} -json design.json\n"
    else:  # synth_lattice's script, map_luts' abc9 kept or replaced by classic abc
        cover = WIDE_MUX_COVER if wide_mux else ""
        synth = (
            f"synth_ecp5 -top {top} -run :map_luts\n"
            f"{cover}"
            "check -latchonly -assert\n"
            "techmap -map +/lattice/latches_map.v\n"
            f"{'abc9 -W 300' if mapper == 'abc9' else 'abc -lut 4'}\n"
            "clean\n"
            f"synth_ecp5 -top {top} -run map_cells:json\n"
            "write_json design.json\n"
        )
    keep = f"hierarchy -top {top}\nproc\n{KEEP_REPLICAS}" if replicas else ""
    return "read_verilog design.v\n" + keep + synth + "tee -q -o stat.json stat -json\n"


def nextpnr_args(name: str) -> list[str]:
    """The nextpnr arguments of block ``name``: :data:`NEXTPNR_ARGS` (with its
    :data:`ROUTERS` entry, if any, as the router) and its :data:`PLACER_ARGS`."""
    base = list(NEXTPNR_ARGS)
    if name in ROUTERS:
        base[base.index("--router") + 1] = ROUTERS[name]
    return [*base, *PLACER_ARGS.get(name, [])]


def _pin(p: dict) -> str:
    return f"{p.get('cell', '?')}.{p['port']}" if p.get("port") else p.get("cell", "?")


def parse_report(rep: dict) -> dict:
    """nextpnr's ``--report`` JSON: ``fmax`` per clock (achieved, constraint), the
    resources used, and the first two critical paths (start and end pins, delay,
    the routing part of it, steps)."""
    fmax = {}
    for clk, f in rep.get("fmax", {}).items():
        fmax[clk] = {"achieved": f.get("achieved"), "constraint": f.get("constraint")}
    util = {k: v for k, v in rep.get("utilization", {}).items() if v.get("used")}
    crit = []
    for p in rep.get("critical_paths", [])[:2]:
        steps = p.get("path", [])
        if not steps:
            continue
        first, last = steps[0], steps[-1]
        delay = sum(s.get("delay", 0.0) for s in steps)
        wire = sum(s.get("delay", 0.0) for s in steps if s.get("type") == "routing")
        crit.append(
            {
                "from": p.get("from"),
                "to": p.get("to"),
                "start": _pin(first.get("from", {})),
                "end": _pin(last.get("to", {})),
                "delay_ns": round(delay, 2),
                "routing_ns": round(wire, 2),
                "steps": len(steps),
            }
        )
    return {"fmax": fmax, "utilization": util, "critical_paths": crit}


def critical_path_log(text: str) -> list[str]:
    """nextpnr's last critical path report (source, sink and Verilog line of each step)."""
    lines = text.splitlines()
    starts = [i for i, x in enumerate(lines) if "Critical path report for clock" in x]
    if not starts:
        return []
    out = []
    for x in lines[starts[-1] :]:
        x = x.removeprefix("Info:").rstrip()
        if re.search(r"(Source|Sink) |design\.v:|ns logic", x):
            out.append(re.sub(r"\s+", " ", x).strip()[:160])
        if "ns logic" in x:
            break
    return out[:80]


_PRIM = re.compile(r"(_|\$)(TRELLIS_|LUT4|PFUMX|L6MUX21|CCU2|DP16KD|MULT18X18D|DPR16X4).*$")


def path_signals(log: list[str]) -> tuple[list[str], list[int]]:
    """RTL signals along nextpnr's critical path, and the Verilog lines it cites.

    nextpnr names a packed cell after the net it drives plus the primitive
    chain (``acc_c_TRELLIS_FF_Q_13_DI_LUT4_Z...``); the part before the first
    primitive name is the Amaranth signal.
    """
    sigs: list[str] = []
    lines: list[int] = []
    for x in log:
        m = re.match(r"(?:\S+ [\d.]+ [\d.]+ )?(Source|Sink) (\S+)", x)
        if m:
            cell = m.group(2).rsplit(".", 1)[0]
            sig = _PRIM.sub("", cell) or cell
            if not sigs or sigs[-1] != sig:
                sigs.append(sig)
        for ln in re.findall(r"design\.v:(\d+)", x):
            if int(ln) not in lines:
                lines.append(int(ln))
    return sigs, lines


def _row(r: dict) -> str:
    """One block's row of :func:`render_section`'s table."""
    tgt = r.get("target_mhz")
    name = r["block"] + "".join(f" ({k}={v})" for k, v in r.get("params", {}).items())
    if r.get("lut_mapper") == "abc":
        name += " (classic abc)"
    if r.get("wide_mux"):
        name += " (wide muxes)"
    if r.get("placer_args"):
        name += f" ({' '.join(r['placer_args'])})"
    res = r.get("resources", {})
    cols = [
        f"{res.get(k, 0):,}" if res else ""
        for k in ("LUT4", "TRELLIS_FF", "CCU2C", "MULT18X18D", "DP16KD")
    ]
    syn = fmt_s(r["synth_s"]) if r.get("synth_s") else ""
    if r["status"] != "ok":
        return (
            f"| `{name}` | {' | '.join(cols)} | **{r['status']}** | "
            f"{tgt or '-'} | | {syn} | {fmt_s(r.get('pnr_s') or 0)} |"
        )
    f = r["fmax_mhz"]
    ok = "" if tgt is None else (" (met)" if f >= tgt else " **MISSED**")
    runs = r.get("seeds", [])
    if len(runs) > 1:
        ids = " / ".join(str(x["seed"]) for x in runs)
        mhz = " / ".join(f"{x['fmax_mhz']:.1f}" for x in runs)
        ok += f" (median; seeds {ids}: {mhz})"
    cp = r["critical_paths"][0] if r.get("critical_paths") else None
    sigs, _ = path_signals(r.get("critical_path_log", []))
    cps = ""
    if cp:
        via = " -> ".join(f"`{x}`" for x in sigs) or f"`{cp['start']}` -> `{cp['end']}`"
        cps = f"{via} ({cp['delay_ns']:.1f} ns, {cp['routing_ns']:.1f} of it routing)"
    return (
        f"| `{name}` | {' | '.join(cols)} | **{f:.1f}**{ok} | {tgt or '-'} | "
        f"{cps} | {syn} | {fmt_s(r['pnr_s'])} |"
    )


def render_section(fp: dict) -> list[str]:
    """The ECP5 part of ``synth.md`` (lines) from the report's ``fpga`` part."""
    return [
        "## ECP5 place and route (`make synth-fpga`)",
        "",
        f"{fp['date']}, LFE5U-85F speed 6, out of context, `nextpnr-ecp5 "
        f"{' '.join([*NEXTPNR_ARGS, '--seed', 'N'])}` (plus the placer arguments a block "
        f"lists), constrained at the block's target "
        f"({DEFAULT_MHZ} MHz where the issue sets none); seed 1 unless the Fmax column lists "
        f"seeds (`--seeds`: the median seed's Fmax and critical path, every seed's Fmax in "
        f"brackets). Limits: synth_ecp5 {fmt_s(fp['synth_timeout_s'])}, "
        f"place and route {fmt_s(fp['pnr_timeout_s'])} per block. LUT mapping by "
        f"`synth_ecp5`'s ABC9, or by classic `abc -lut 4` for Verilog over "
        f"{ABC9_MAX_BYTES // 1000} kB (marked), where the WASM ABC9 fails or takes too long; "
        f"blocks marked *wide muxes* have their multiplexer trees built from LUT4 + PFUMX "
        f"(+ L6MUX21) first (`muxcover`, `{WIDE_MUX_MAP.relative_to(REPO)}`).",
        "",
        "| block | LUT4 | FF | carry | DSP | BRAM | Fmax MHz | target | critical path "
        "(logic + routing ns) | synth | P&R |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|",
        *(_row(r) for r in fp["blocks"]),
        "",
    ]
