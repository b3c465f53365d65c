"""``python -m flows.synth [--sweep] [--jobs N] [--timeout S] [--force] [--blocks a,b]``."""

import argparse
import time

from checks import cli_parser
from flows import verilog
from flows.synth.cache import REPO, tool_versions
from flows.synth.fmt import fmt_s, now
from flows.synth.plots import plot_sweep
from flows.synth.report import REPORT_MD, REPORTS, load_report, save_report
from flows.synth.runner import run_jobs
from flows.synth.sweep import sweep

__all__ = ["main"]

#: the sweep's Yosys time limit per point when ``--timeout`` is not given (s)
SWEEP_TIMEOUT = 2400.0


def _generic(names: list[str], args: argparse.Namespace) -> dict:
    """The report with its ``generic`` part updated by a run over ``names`` (a
    ``--blocks`` run keeps the other blocks' last results)."""
    print(f"generic synthesis of {len(names)} blocks ({args.jobs} in parallel)", flush=True)
    res = run_jobs(
        [(b, {}) for b in names], parallel=args.jobs, timeout=args.timeout, force=args.force
    )
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


def _sweep(blocks: list[str], args: argparse.Namespace) -> dict:
    """The report with its ``sweep`` part replaced by a new sweep (and its plots)."""
    timeout = SWEEP_TIMEOUT if args.timeout is None else args.timeout
    print(f"synthesis sweep ({args.jobs} in parallel, {fmt_s(timeout)} per point)", flush=True)
    sw = sweep(parallel=args.jobs, timeout=timeout, force=args.force, blocks=blocks or None)
    REPORTS.mkdir(parents=True, exist_ok=True)
    sw["plots"] = plot_sweep(sw, REPORTS)
    rep = load_report()  # now: another target may have written its part meanwhile
    rep["sweep"] = sw
    return rep


def main(argv: list[str] | None = None) -> int:
    """Run the generic synthesis (or ``--sweep``), update the report and print ``synth.md``.

    An unknown block in ``--blocks`` exits with a message naming the blocks.
    """
    ap = cli_parser(
        "python -m flows.synth",
        "Synthesis estimates of every block: ``python -m flows.synth`` (``make synth``).",
    )
    ap.add_argument("--sweep", action="store_true", help="parameter sweep (make synth-sweep)")
    ap.add_argument("--jobs", type=int, default=2, help="Yosys runs in parallel (default 2)")
    ap.add_argument(
        "--timeout",
        type=float,
        default=None,
        help=f"Yosys time limit per run in seconds (default: none; sweep {SWEEP_TIMEOUT:g})",
    )
    ap.add_argument("--force", action="store_true", help="ignore the cache")
    ap.add_argument("--blocks", default="", help="comma-separated subset of blocks")
    args = ap.parse_args(argv)
    blocks = [b for b in args.blocks.split(",") if b]
    for b in blocks:
        if b not in verilog.BLOCKS:
            raise SystemExit(f"--blocks: {b!r} is not a block ({', '.join(verilog.BLOCKS)})")
    t0 = time.monotonic()
    rep = _sweep(blocks, args) if args.sweep else _generic(blocks or list(verilog.BLOCKS), args)
    save_report(rep)
    print(f"\n{REPORT_MD.relative_to(REPO)} ({fmt_s(time.monotonic() - t0)}):\n")
    print(REPORT_MD.read_text())
    return 0
