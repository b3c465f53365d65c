"""Timing and performance model of SpecDecode-1 and its GPU baselines.

``python -m sim.timing`` (``make perf``): for every profile, the article's
arithmetic beside the roofline in every overlap mode, the disagreements
between them, the projections against plain decoding and the GPU profiles,
the GPU baselines' calibration against published measurements
(:mod:`sim.timing.calibration`), the figures as JSON (``perf.json``,
:mod:`sim.timing.summary`) and PNGs (a timeline of sampled steps per mode and
the accepted tokens per step, per profile; the calibration). Exit
status 2 on a bad profile or override.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from checks import cli_parser, int_arg, out_dir_arg
from sim.timing import plots
from sim.timing.acceptance import accepted_distribution, chain_alpha
from sim.timing.calibration import comparison_table
from sim.timing.extra_token import extra_token_table
from sim.timing.profiles import Profile, known_profiles, load_profile
from sim.timing.schedule import sample_steps
from sim.timing.step import StepTiming
from sim.timing.summary import calibration_summary, write_summary
from sim.timing.text import disagreements_table, projections_table, views_table
from sim.timing.views import article_steps, article_view, roofline_view


def _parse_value(text: str) -> Any:
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


#: the profiles shown when no ``--profile`` is given
DEFAULT_PROFILES = ("specdecode1-7b", "specdecode1-70b")


def _chip_profiles() -> list[str]:
    """The SpecDecode-1 profiles (the GPU baselines have no article arithmetic)."""
    return [n for n in known_profiles() if not load_profile(n).is_gpu]


def _profile_arg(text: str) -> str:
    """``--profile``: a SpecDecode-1 profile name."""
    chips = _chip_profiles()
    if text not in chips:
        what = "a GPU baseline" if text in known_profiles() else "unknown profile"
        raise argparse.ArgumentTypeError(
            f"{text!r}: {what}; SpecDecode-1 profiles are {', '.join(chips)}"
        )
    return text


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m sim.timing``."""
    ap = cli_parser("python -m sim.timing", __doc__.split("\n")[0])
    ap.add_argument(
        "--profile",
        action="append",
        type=_profile_arg,
        help=f"SpecDecode-1 profile (repeatable; None: {' and '.join(DEFAULT_PROFILES)})",
    )
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="override, e.g. --set target.bytes_per_param=0.5 --set context_len=8192",
    )
    ap.add_argument(
        "--out",
        type=out_dir_arg,
        default="build/reports",
        help="directory of perf.json and the PNGs",
    )
    ap.add_argument("--steps", type=int_arg(1, 64), default=4, help="steps per timeline panel")
    ap.add_argument(
        "--seed", type=int_arg(0, 2**64 - 1), default=0, help="seed of the sampled steps"
    )
    ap.add_argument("--no-plots", action="store_true", help="skip the PNGs")
    ap.add_argument("--dpi", type=int_arg(20, 600), default=110, help="resolution of the PNGs")
    return ap


def write_pngs(
    profile: Profile,
    out: Path,
    *,
    steps: int,
    seed: int,
    overrides: Mapping[str, Any] | None = None,
    dpi: int = 110,
) -> tuple[Path, Path]:
    """The timeline (``steps`` steps of the article and of every overlap mode) and the
    accepted-tokens histogram (2,000 sampled steps) of ``profile`` at ``dpi``; the paths
    written.
    ``overrides`` (the ``--set`` fields) are named in both titles, so that a picture of
    a modified profile is never taken for the profile's own."""
    p = profile
    mod = "".join(
        f", {k}={v:g}" if isinstance(v, float) else f", {k}={v}"
        for k, v in (overrides or {}).items()
    )
    panels: dict[str, list[StepTiming]] = {"article": article_steps(p, steps)}
    for m in p.overlap_modes:
        panels[f"roofline, {m}"] = sample_steps(p, steps, overlap=m, seed=seed)
    rv = roofline_view(p)
    expected = {"article": article_view(p).tokens_per_s}
    expected |= {f"roofline, {m}": rv.steps[m].tokens_per_s for m in p.overlap_modes}
    tl = plots.timeline_png(
        panels,
        out / f"timeline_{p.name}.png",
        title=f"{p.name}{mod}: {steps} steps per mode",
        expected=expected,
        dpi=dpi,
    )
    acc = [s.accepted for s in sample_steps(p, 2000, overlap="none", seed=seed)]
    alpha = chain_alpha(p.workload.accepted, p.workload.tree_depth)
    hist = plots.accept_histogram_png(
        acc,
        out / f"accepted_{p.name}.png",
        expected=accepted_distribution(alpha, p.workload.tree_depth),
        title=f"{p.name}{mod}: accepted per step (chain-equivalent alpha {alpha:.3f})",
        dpi=dpi,
    )
    return tl, hist


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The checked arguments of :func:`main`; nothing written.

    ``profile``: the names (default :data:`DEFAULT_PROFILES`), each a SpecDecode-1
    profile; ``overrides``: the ``--set FIELD=VALUE`` pairs (a value parsed as an
    integer, else a number, else kept as text), each field given once;
    ``profiles``: the :class:`Profile` of each name with the overrides (a bad
    override is a usage error naming ``--set``).

    Raises
    ------
    SystemExit
        Status 2, with a one-line usage error on stderr, for a bad argument.
    """
    ap = build_parser()
    args = ap.parse_args(argv)
    args.profile = args.profile or list(DEFAULT_PROFILES)
    args.overrides = {}
    for item in args.set:
        key, eq, value = item.partition("=")
        if not eq or not key:
            ap.error(f"argument --set: {item!r}: expected FIELD=VALUE")
        if key in args.overrides:
            ap.error(f"argument --set: {key}: given twice")
        args.overrides[key] = _parse_value(value)
    try:
        args.profiles = [load_profile(n, **args.overrides) for n in args.profile]
    except ValueError as exc:
        ap.error(f"argument --set: {exc}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m sim.timing``: both views, disagreements, projections, PNGs (exit
    status 2 on a bad argument, :func:`parse_args`)."""
    args = parse_args(argv)
    names, overrides, profiles = args.profile, args.overrides, args.profiles
    for p in profiles:
        print(views_table(p), end="\n\n")
        print(disagreements_table(p), end="\n\n")
        print(extra_token_table(p), end="\n\n")
    if not overrides:
        print("== projections (roofline unless stated; GPU spec decode = same tree on an H100)")
        print(projections_table(names), end="\n\n")
    cal = calibration_summary()
    print(
        f"== GPU baselines calibrated on published measurements ({cal['baseline']}'s "
        "[calibration]; sim/profiles/published/gpu.toml)"
    )
    print(comparison_table(load_profile(cal["baseline"]).calibration), end="\n\n")
    print(f"wrote {write_summary(profiles, Path(args.out) / 'perf.json')}")
    if not args.no_plots:
        png = plots.calibration_png(
            cal["measurements"], Path(args.out) / "calibration.png", dpi=args.dpi
        )
        print(f"wrote {png}")
        for p in profiles:
            tl, hist = write_pngs(
                p,
                Path(args.out),
                steps=args.steps,
                seed=args.seed,
                overrides=overrides,
                dpi=args.dpi,
            )
            print(f"wrote {tl} and {hist}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
