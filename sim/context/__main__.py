"""``python -m sim.context`` (``make context``): tokens/s against context length with
the real context in the scaled KV pool.

For each profile, pool size and verifier read mode, one history grows from 2K
to 128K tokens in a functional ``golden.kvpool.KVPool`` while the chip
model's trees and acceptance are replayed over it; spills, fills and reads of
HBM-resident KV are charged to HBM in each step's time (:mod:`sim.context.study`).
Prints tokens/s per context and the article's context claims checked from
bytes per token; writes ``context.json`` under ``--out`` and the plot
(``--plot``). Exit status 2 on a bad argument.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from checks import cli_parser, int_arg, out_dir_arg, out_file_arg
from sim.context.config import MAX_CONTEXT, MODES, OVERLAPS, PROFILES, ContextConfig
from sim.context.report import plot_png, run_study, table

#: the default directory of ``context.json``
OUT = Path("build/reports")
#: the default plot
PLOT = Path("build/plots/context.png")


def _int_list(lo: int, hi: int):  # noqa: ANN202 - an argparse type
    """An ``argparse`` type: comma-separated integers in ``lo .. hi``, strictly increasing."""
    one = int_arg(lo, hi)

    def parse(text: str) -> tuple[int, ...]:
        vals = tuple(one(t) for t in text.split(","))
        if any(b <= a for a, b in zip(vals, vals[1:], strict=False)):
            raise argparse.ArgumentTypeError(f"must be strictly increasing, got {text!r}")
        return vals

    parse.__name__ = "integer list"
    return parse


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m sim.context``."""
    ap = cli_parser("python -m sim.context", __doc__.split("\n")[0])
    ap.add_argument(
        "--profile",
        action="append",
        choices=PROFILES,
        help=f"profile (repeatable; default: {' and '.join(PROFILES)})",
    )
    ap.add_argument(
        "--pool-gib",
        type=_int_list(1, 64),
        default=(1, 2, 4),
        help="pool sizes in GiB, comma-separated, increasing (default 1,2,4)",
    )
    ap.add_argument(
        "--contexts",
        type=_int_list(16, MAX_CONTEXT),
        default=None,
        help="context lengths, comma-separated, increasing (default 2048,4096,...,131072)",
    )
    ap.add_argument(
        "--mode", action="append", choices=MODES, help="verifier read mode (default: both)"
    )
    ap.add_argument(
        "--steps",
        type=int_arg(1, 1024),
        default=None,
        help="decode steps per context (default: every step of the chip-model run)",
    )
    ap.add_argument("--overlap", choices=OVERLAPS, default="prefetch", help="timing overlap mode")
    ap.add_argument("--recent", type=int_arg(1, 4096), default=256, help="recent window")
    ap.add_argument(
        "--heavy-every", type=int_arg(16, MAX_CONTEXT), default=1024, help="one heavy hitter per"
    )
    ap.add_argument("--seed", type=int_arg(0, 2**64 - 1), default=1, help="prompt and hitters")
    ap.add_argument("--out", type=out_dir_arg, default=OUT, help="directory of context.json")
    ap.add_argument("--plot", type=out_file_arg, default=PLOT, help="the PNG written")
    ap.add_argument("--dpi", type=int_arg(20, 600), default=110, help="the PNG's resolution")
    ap.add_argument("--no-plots", action="store_true", help="skip the PNG")
    ap.add_argument("--quiet", action="store_true", help="no progress on stderr")
    return ap


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The checked arguments of :func:`main`; nothing written.

    ``config``: the :class:`ContextConfig` of the options (a repeated profile or
    mode is a usage error naming its option).

    Raises
    ------
    SystemExit
        Status 2, with a one-line usage error on stderr, for a bad argument.
    """
    ap = build_parser()
    args = ap.parse_args(argv)
    for opt, name in (("--profile", "profile"), ("--mode", "mode")):
        vals = getattr(args, name)
        if vals is not None and len(set(vals)) != len(vals):
            ap.error(f"argument {opt}: {vals!r}: given twice")
    kw = {
        "profiles": tuple(args.profile or PROFILES),
        "pools_gib": args.pool_gib,
        "modes": tuple(args.mode or MODES),
        "steps": args.steps,
        "overlap": args.overlap,
        "recent": args.recent,
        "heavy_every": args.heavy_every,
        "seed": args.seed,
    }
    if args.contexts is not None:
        kw["contexts"] = args.contexts
    try:
        args.config = ContextConfig(**kw)
    except ValueError as exc:  # pragma: no cover - the option types check every field
        ap.error(f"argument --contexts: {exc}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m sim.context``: run the grid, print the table and the claims, write
    the report and the plot (exit status 2 on a bad argument, :func:`parse_args`)."""
    args = parse_args(argv)

    def progress(text: str) -> None:
        if not args.quiet:
            print(text, file=sys.stderr, flush=True)

    rep = run_study(args.config, progress)
    print(table(rep), end="")
    print(f"total {rep['runtime_s']:.1f} s")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "context.json"
    path.write_text(json.dumps(rep, indent=1) + "\n")
    print(f"wrote {path}")
    if not args.no_plots:
        print(f"wrote {plot_png(rep, Path(args.plot), dpi=args.dpi)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
