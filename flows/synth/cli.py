"""``python -m flows.synth [--sweep] [--jobs N] [--scheduler ADDRESS] [--timeout S] [--force]
[--blocks a,b]``."""

import argparse
import time
from collections.abc import Sequence

from checks import cli_parser, real_arg
from cluster import cli as cluster_cli
from cluster.executor import Executor
from flows import verilog
from flows.synth.cache import REPO, tool_versions
from flows.synth.fmt import fmt_s, now
from flows.synth.plots import plot_sweep
from flows.synth.report import REPORT_MD, REPORTS, load_report, save_report
from flows.synth.runner import run_jobs
from flows.synth.sweep import sweep, sweep_plan

__all__ = ["MAX_TIMEOUT", "build_parser", "parse_args", "main"]

#: the sweep's Yosys time limit per point when ``--timeout`` is not given (s)
SWEEP_TIMEOUT = 2400.0
#: the largest ``--timeout`` (s): a week (``subprocess`` refuses a limit beyond
#: about 9e9 s with an ``OverflowError``, after the run has started)
MAX_TIMEOUT = 7 * 24 * 3600.0


def _generic(names: list[str], args: argparse.Namespace, ex: Executor) -> dict:
    """The report with its ``generic`` part updated by a run over ``names`` (a
    ``--blocks`` run keeps the other blocks' last results; a block whose task failed
    keeps its last result too)."""
    print(f"generic synthesis of {len(names)} blocks", flush=True)
    res = run_jobs([(b, {}) for b in names], timeout=args.timeout, force=args.force, executor=ex)
    res = [r for r in res if r["status"] != "error"]
    rep = load_report()  # now: another target may have written its part meanwhile
    merged = {r["block"]: r for r in rep.get("generic", {}).get("blocks", [])}
    merged.update({r["block"]: {k: v for k, v in r.items() if k != "cached"} for r in res})
    rep["generic"] = {
        "date": now(),
        "tools": tool_versions(),
        "yosys_s": sum(r["yosys_s"] for r in res if not r["cached"]),
        "cached": sum(r["cached"] for r in res),
        "measured": sum(not r["cached"] for r in res),
        "blocks": [merged[b] for b in verilog.BLOCKS if b in merged],
    }
    return rep


def _sweep(blocks: list[str], args: argparse.Namespace, ex: Executor) -> dict:
    """The report with its ``sweep`` part replaced by a new sweep (and its plots)."""
    timeout = SWEEP_TIMEOUT if args.timeout is None else args.timeout
    print(f"synthesis sweep ({fmt_s(timeout)} per point)", flush=True)
    sw = sweep(parallel=1, timeout=timeout, force=args.force, blocks=blocks or None, executor=ex)
    REPORTS.mkdir(parents=True, exist_ok=True)
    sw["plots"] = plot_sweep(sw, REPORTS)
    rep = load_report()  # now: another target may have written its part meanwhile
    rep["sweep"] = sw
    return rep


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m flows.synth``."""
    ap = cli_parser(
        "python -m flows.synth",
        "Synthesis estimates of every block: ``python -m flows.synth`` (``make synth``).",
    )
    ap.add_argument("--sweep", action="store_true", help="parameter sweep (make synth-sweep)")
    cluster_cli.add_args(ap)
    ap.add_argument(
        "--timeout",
        type=real_arg(0, MAX_TIMEOUT, lo_open=True),
        default=None,
        help=f"Yosys time limit per run in seconds, at most {MAX_TIMEOUT:g} (None: no limit; "
        f"the sweep's is {SWEEP_TIMEOUT:g})",
    )
    ap.add_argument("--force", action="store_true", help="ignore the cache")
    ap.add_argument(
        "--blocks",
        type=verilog.blocks_arg,
        default="",
        help="comma-separated subset of blocks (empty: every block)",
    )
    return ap


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The checked arguments of :func:`main`; no work done. ``--blocks`` is a list
    of distinct block names (an unknown one is a usage error), ``--jobs`` >= 1 and
    ``--scheduler`` (:func:`cluster.cli.add_args`), ``--timeout`` in (0,
    :data:`MAX_TIMEOUT`] seconds; with ``--sweep``, every block of ``--blocks``
    has a sweep (:func:`flows.synth.sweep.sweep_plan`).

    Raises
    ------
    SystemExit
        Status 2, with a one-line usage error on stderr, for a bad argument.
    """
    ap = build_parser()
    args = ap.parse_args(argv)
    if args.sweep:
        swept = sweep_plan()
        no_sweep = [b for b in args.blocks if b not in swept]
        if no_sweep:
            ap.error(
                f"argument --blocks: {', '.join(no_sweep)}: no sweep (blocks with one: "
                f"{', '.join(swept)})"
            )
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the generic synthesis (or ``--sweep``), update the report and print
    ``synth.md``; 2 on a bad argument (:func:`parse_args`)."""
    args = parse_args(argv)
    blocks = args.blocks
    t0 = time.monotonic()
    with cluster_cli.executor(args) as ex:
        rep = (
            _sweep(blocks, args, ex)
            if args.sweep
            else _generic(blocks or list(verilog.BLOCKS), args, ex)
        )
    save_report(rep)
    print(f"\n{REPORT_MD.relative_to(REPO)} ({fmt_s(time.monotonic() - t0)}):\n")
    print(REPORT_MD.read_text())
    return 0
